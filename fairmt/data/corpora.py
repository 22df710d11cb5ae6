"""Where the training corpora of the papers come from, and a fetch that checksums what it got.

The benchmarks (WinoMT, MT-GenEval, FLORES-200) have pinned checksums in ``resources/data_manifest.json``. The
training corpora below are large and were not downloadable where fairmt was built, so their checksums are not
pinned in the package: :func:`fetch` computes each file's sha256, writes ``SHA256SUMS`` beside the files and prints
it; pass the digests of a first download back (``--sha256 FILE=DIGEST``) to verify later downloads, as for FLORES-200.

==================  ============================================================  =================================
corpus              what                                                          used by
==================  ============================================================  =================================
wmt18-ende          WMT18 en–de parallel data as Edunov et al. (2018) prepare it   GACL (Lee et al., 2023): the
                    (europarl-v7, commoncrawl, news-commentary-v13, rapid2016;     Balanced baseline and GACL's own
                    tokenise/BPE with fairseq's examples/backtranslation/          gender-balanced en→de data
                    prepare-wmt18en2de.sh)
ted2020-ende        TED2020 en–de (OPUS, Reimers & Gurevych 2020)                  GACL: the en2de TED experiments
ted2020-entr        TED2020 en–tr (OPUS)                                           GACL: the en2tr experiments (Fig. 4)
news-commentary-v15 News-Commentary v15 English monolingual (statmt.org; OPUS)     CCD: source texts of the LLM-made
                                                                                   tuples (43k pairs, last 1000 dev)
celeba              CelebA, 202,599 aligned face images + 40 attributes (CUHK)     fairness-driven sampling (Martin &
                                                                                   Ogbuokiri): SimCLR + probes
chexpert            CheXpert-v1.0-small, 223,648 chest radiographs (Stanford AIMI) fairness-driven sampling: SimCLR +
                                                                                   probes on five findings
==================  ============================================================  =================================

The two image sets are not fetched by fairmt: CelebA is distributed from its project page (Google Drive / Baidu; also
the Hub copy ``flwrlabs/celeba`` under the same agreement) and CheXpert only after registration. ``fairmt data
corpora`` says where to get them; the ``method: sampling`` recipes read the local folders (``data.root``).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from fairmt.errors import FairmtError


@dataclass(frozen=True)
class Corpus:
    name: str
    what: str
    used_by: str
    urls: tuple[str, ...]
    licence: str
    prepare: str = ""
    homepage: str = ""


CORPORA: dict[str, Corpus] = {c.name: c for c in (
    Corpus(
        "wmt18-ende",
        "WMT18 en–de parallel data as processed by Edunov et al. (2018): europarl-v7, commoncrawl, "
        "news-commentary-v13 and rapid2016",
        "GACL (Lee et al., 2023), Sec. 4: the Balanced baseline and the gender-balanced en→de fine-tuning data",
        ("http://statmt.org/wmt13/training-parallel-europarl-v7.tgz",
         "http://statmt.org/wmt13/training-parallel-commoncrawl.tgz",
         "http://data.statmt.org/wmt18/translation-task/training-parallel-nc-v13.tgz",
         "http://data.statmt.org/wmt18/translation-task/rapid2016.tgz"),
        "WMT18 terms (research use; see statmt.org/wmt18/translation-task.html)",
        "extract and clean the de-en parts as fairseq's examples/backtranslation/prepare-wmt18en2de.sh does; then "
        "`fairmt train gacl/small100_en-de_balanced data.train=PAIRS.tsv`",
    ),
    Corpus(
        "ted2020-ende", "TED2020 English–German (OPUS, v1)",
        "GACL (Lee et al., 2023), Sec. 5: the en2de fine-tuning data of the TED experiments",
        ("https://object.pouta.csc.fi/OPUS-TED2020/v1/moses/de-en.txt.zip",),
        "CC BY-NC-ND 4.0 (TED talks); see opus.nlpl.eu/TED2020.php",
    ),
    Corpus(
        "ted2020-entr", "TED2020 English–Turkish (OPUS, v1)",
        "GACL (Lee et al., 2023), Figure 4: the en2tr fine-tuning data",
        ("https://object.pouta.csc.fi/OPUS-TED2020/v1/moses/en-tr.txt.zip",),
        "CC BY-NC-ND 4.0 (TED talks); see opus.nlpl.eu/TED2020.php",
    ),
    Corpus(
        "news-commentary-v15", "News-Commentary v15, English monolingual",
        "CCD, Sec. 5 / App. A.3: the source texts of the LLM-generated neutral/male/female tuples",
        ("https://data.statmt.org/news-commentary/v15/training-monolingual/news-commentary-v15.en.gz",),
        "News Commentary terms (research use; see data.statmt.org/news-commentary)",
        "`fairmt augment cda --input news-commentary-v15.en --output tuples.jsonl` (or `augment llm`), then "
        "`fairmt train ccd/minilm_cda data.tuples=tuples.jsonl`",
    ),
    Corpus(
        "celeba", "CelebA (Liu et al., ICCV 2015): 202,599 aligned and cropped face images with 40 binary attributes "
        "and the official train/valid/test partition",
        "fairness-driven sampling (Martin & Ogbuokiri): SimCLR pre-training, latent subgroups and linear probes "
        "(Attractive, Wavy_Hair; Male, Young for evaluation)",
        (),
        "CelebA Dataset Release Agreement: non-commercial research and educational use only, no redistribution",
        "download img_align_celeba.zip, list_attr_celeba.txt and list_eval_partition.txt from the project page (or "
        "use the Hub copy flwrlabs/celeba with data.source=hub), unzip, then `fairmt train sampling/celeba_resnet50 "
        "data.root=FOLDER`",
        homepage="https://mmlab.ie.cuhk.edu.hk/projects/CelebA.html",
    ),
    Corpus(
        "chexpert", "CheXpert-v1.0-small (Irvin et al., AAAI 2019): 223,414 training + 234 validation chest "
        "radiographs (downsampled) with 14 findings labelled positive / negative / uncertain",
        "fairness-driven sampling (Martin & Ogbuokiri): SimCLR pre-training, latent subgroups and linear probes on "
        "Cardiomegaly, Edema, Consolidation, Atelectasis, Pleural Effusion (Sex, Age for evaluation)",
        (),
        "Stanford University School of Medicine CheXpert Dataset Research Use Agreement (registration required; "
        "non-commercial research use, no redistribution)",
        "register and download CheXpert-v1.0-small, unzip, then `fairmt train sampling/chexpert_resnet50 "
        "data.root=FOLDER` (the folder holding CheXpert-v1.0-small/)",
        homepage="https://stanfordmlgroup.github.io/competitions/chexpert/",
    ),
)}


def describe() -> str:
    """A readable list of the corpora: name, what, who uses it, URLs, licence and how to prepare it."""
    out = []
    for c in CORPORA.values():
        out.append(f"{c.name}\n  {c.what}\n  used by: {c.used_by}\n  licence: {c.licence}")
        if c.homepage:
            out.append(f"  get it from: {c.homepage} (not fetched by fairmt)")
        out += [f"  {u}" for u in c.urls]
        if c.prepare:
            out.append(f"  then: {c.prepare}")
    return "\n".join(out)


def fetch(name: str, dest: str | Path, *, base_url: str | None = None, sha256: dict[str, str] | None = None,
          progress: bool = True) -> dict[str, str]:
    """Download corpus ``name``'s files into ``dest/name`` and return ``{file name: sha256}`` (also written to
    ``dest/name/SHA256SUMS``). ``base_url`` replaces each URL's folder by a mirror; ``sha256`` pins digests (a
    mismatch leaves nothing behind)."""
    from fairmt.data.download import _fetch, sha256_file

    corpus = CORPORA.get(name)
    if corpus is None:
        raise FairmtError(f"unknown corpus {name!r}; `fairmt data corpora` lists {', '.join(CORPORA)}")
    if not corpus.urls:
        raise FairmtError(f"{name} cannot be fetched by fairmt ({corpus.licence}); get it from {corpus.homepage}: "
                          f"{corpus.prepare}")
    pins = dict(sha256 or {})
    unknown = [k for k in pins if k not in {u.rsplit('/', 1)[1] for u in corpus.urls}]
    if unknown:
        raise FairmtError(f"--sha256 names {unknown}, which are not files of {name} "
                          f"({', '.join(u.rsplit('/', 1)[1] for u in corpus.urls)})")
    target = Path(dest) / name
    target.mkdir(parents=True, exist_ok=True)
    digests: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix=".fairmt-corpus-", dir=target) as tmp:
        for url in corpus.urls:
            fname = url.rsplit("/", 1)[1]
            src = f"{base_url.rstrip('/')}/{fname}" if base_url else url
            part = Path(tmp) / fname
            _fetch(src, part, progress=progress, desc=fname)
            digest = sha256_file(part)
            if fname in pins and pins[fname] != digest:
                raise FairmtError(f"checksum mismatch for {fname} from {src}: expected sha256 {pins[fname]}, got "
                                  f"{digest}; nothing was kept")
            digests[fname] = digest
        for fname in digests:
            (Path(tmp) / fname).replace(target / fname)
    (target / "SHA256SUMS").write_text("".join(f"{d}  {f}\n" for f, d in digests.items()), encoding="utf-8")
    return digests


__all__ = ["CORPORA", "Corpus", "describe", "fetch"]
