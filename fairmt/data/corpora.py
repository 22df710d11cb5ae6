"""Where the training corpora and datasets of the papers come from, and a fetch that checksums what it got.

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
bios-ravfogel       Bias-in-Bios, Ravfogel et al. 2020's split (255,710 / 39,369 /  CSCL (Chi et al. 2022), Table 2
                    98,344) as pickles
bios-hub            Bias-in-Bios on the Hub (LabHC/bias_in_bios, 257,478 /         Shen et al. 2022 (257K/40K/99K)
                    39,642 / 99,069), loaded through datasets
civilcomments-wilds Jigsaw / Civil Comments, WILDS v1.0 (its split)                CSCL (race subset, Table 1)
moji                Moji: DeepMoji encodings of TwitterAAE tweets (fairlib's      FCL (Shen et al. 2022), Table 1
                    download)
hatespeech-huang2020 Huang et al. 2020 multilingual hate speech (token ids);       FCL (English, age); fairness-
                    English train split not public                                 driven sampling
==================  ============================================================  =================================

The two image sets are not fetched by fairmt: CelebA is distributed from its project page (Google Drive / Baidu; also
the Hub copy ``flwrlabs/celeba`` under the same agreement) and CheXpert only after registration. ``fairmt data
corpora`` says where to get them; the ``method: sampling`` recipes read the local folders (``data.root``).
The classification datasets are read by :mod:`fairmt.data.fair_datasets` (and
:func:`fairmt.data.classification.read_hatespeech`) from the folder each entry names under the data root.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from fairmt.errors import FairmtError


@dataclass(frozen=True)
class Corpus:
    """One listed corpus. ``folder`` (default ``name``) is where ``fetch`` puts its files under the destination,
    ``targets`` their paths inside it (default: each URL's file name); ``split`` states the published split."""

    name: str
    what: str
    used_by: str
    urls: tuple[str, ...]
    licence: str
    prepare: str = ""
    homepage: str = ""
    folder: str = ""
    targets: tuple[str, ...] = ()
    split: str = ""

    def files(self) -> list[tuple[str, str]]:
        """``(url, relative target path)`` of every file."""
        targets = self.targets or tuple(u.rstrip("/").rsplit("/", 1)[1] for u in self.urls)
        return list(zip(self.urls, targets))


CORPORA: dict[str, Corpus] = {
    c.name: c
    for c in (
        Corpus(
            "wmt18-ende",
            "WMT18 en–de parallel data as processed by Edunov et al. (2018): europarl-v7, commoncrawl, "
            "news-commentary-v13 and rapid2016",
            "GACL (Lee et al., 2023), Sec. 4: the Balanced baseline and the gender-balanced en→de fine-tuning data",
            (
                "http://statmt.org/wmt13/training-parallel-europarl-v7.tgz",
                "http://statmt.org/wmt13/training-parallel-commoncrawl.tgz",
                "http://data.statmt.org/wmt18/translation-task/training-parallel-nc-v13.tgz",
                "http://data.statmt.org/wmt18/translation-task/rapid2016.tgz",
            ),
            "WMT18 terms (research use; see statmt.org/wmt18/translation-task.html)",
            "extract and clean the de-en parts as fairseq's examples/backtranslation/prepare-wmt18en2de.sh does; then "
            "`fairmt train gacl/small100_en-de_balanced data.train=PAIRS.tsv`",
        ),
        Corpus(
            "ted2020-ende",
            "TED2020 English–German (OPUS, v1)",
            "GACL (Lee et al., 2023), Sec. 5: the en2de fine-tuning data of the TED experiments",
            ("https://object.pouta.csc.fi/OPUS-TED2020/v1/moses/de-en.txt.zip",),
            "CC BY-NC-ND 4.0 (TED talks); see opus.nlpl.eu/TED2020.php",
        ),
        Corpus(
            "ted2020-entr",
            "TED2020 English–Turkish (OPUS, v1)",
            "GACL (Lee et al., 2023), Figure 4: the en2tr fine-tuning data",
            ("https://object.pouta.csc.fi/OPUS-TED2020/v1/moses/en-tr.txt.zip",),
            "CC BY-NC-ND 4.0 (TED talks); see opus.nlpl.eu/TED2020.php",
        ),
        Corpus(
            "news-commentary-v15",
            "News-Commentary v15, English monolingual",
            "CCD, Sec. 5 / App. A.3: the source texts of the LLM-generated neutral/male/female tuples",
            ("https://data.statmt.org/news-commentary/v15/training-monolingual/news-commentary-v15.en.gz",),
            "News Commentary terms (research use; see data.statmt.org/news-commentary)",
            "`fairmt augment cda --input news-commentary-v15.en --output tuples.jsonl` (or `augment llm`), then "
            "`fairmt train ccd/minilm_cda data.tuples=tuples.jsonl data.cda_source=null`",
        ),
        Corpus(
            "celeba",
            "CelebA (Liu et al., ICCV 2015): 202,599 aligned and cropped face images with 40 binary attributes "
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
            "chexpert",
            "CheXpert-v1.0-small (Irvin et al., AAAI 2019): 223,414 training + 234 validation chest "
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
        Corpus(
            "bios-ravfogel",
            "Bias-in-Bios (De-Arteaga et al. 2019), 28 professions x binary gender, in the split of "
            "Ravfogel et al. (2020): train/dev/test.pickle, lists of {hard_text, p, g}",
            "CSCL (Chi et al., 2022), App. B.1 / Table 2; read by fairmt.data.fair_datasets.read_bios_split",
            tuple(
                f"https://storage.googleapis.com/ai2i/nullspace/biasbios/{s}.pickle" for s in ("train", "dev", "test")
            ),
            "MIT (De-Arteaga et al.'s Bias in Bios, microsoft/biosbias; split files by Ravfogel et al.)",
            "`fairmt train classification/cscl_bios_bert` (data.dataset: bios_split). The CSCL release's "
            "biasbios_{train,val,test}.pq or train/dev/test.jsonl in the same folder work too",
            folder="bias_in_bios",
            split="255,710 / 39,369 / 98,344 (CSCL Table 2)",
        ),
        Corpus(
            "bios-hub",
            "Bias-in-Bios on the Hugging Face Hub, LabHC/bias_in_bios (Ravfogel et al.'s version as "
            "re-released there; fields hard_text, profession 0-27, gender 0 = male / 1 = female)",
            "Shen et al. (2022) report 257K / 40K / 99K, these counts; data.source: hub in the recipes",
            (),
            "MIT (dataset card)",
            "no fetch: `datasets.load_dataset('LabHC/bias_in_bios')` caches it on first use (network needed once)",
            split="257,478 / 39,642 / 99,069 (the Hub card) - not CSCL's 255,710 / 39,369 / 98,344",
        ),
        Corpus(
            "civilcomments-wilds",
            "Jigsaw toxicity / Civil Comments as WILDS v1.0 packages it "
            "(all_data_with_identities.csv in a tar.gz: comment_text, toxicity, identity columns, split)",
            "CSCL (Chi et al., 2022), App. B.1 / Table 1: the comments mentioning a race or ethnicity, black vs "
            "non-black, toxicity >= 0.5; read by fairmt.data.fair_datasets.read_jigsaw",
            ("https://worksheets.codalab.org/rest/bundles/0x8cd3de0634154aeaad2ee6eb96723c6e/contents/blob/",),
            "CC0 1.0 (Civil Comments, Jigsaw); WILDS packaging MIT",
            "`fairmt train classification/cscl_jigsaw_bert`. The CSCL release's jigsaw_race_{train,val,test}.pq in "
            "the same folder are read instead when present",
            folder="civilcomments",
            targets=("civilcomments_v1.0.tar.gz",),
            split="25,954 / 4,390 / 12,562 race-annotated comments (CSCL Table 1); WILDS: 269,038 / 45,180 / 133,782",
        ),
        Corpus(
            "moji",
            "Moji: tweets of Blodgett et al. (2016) with sentiment (happy/sad) and dialect (AAE/SAE), as 2304-d "
            "DeepMoji encodings (pos_pos, pos_neg, neg_pos, neg_neg.npy) released with INLP (Ravfogel et al. 2020)",
            "FCL (Shen et al., 2022), Table 1 and Fig. 3; read by fairmt.data.fair_datasets.read_moji (fairlib's split)",
            tuple(
                f"https://storage.googleapis.com/ai2i/nullspace/deepmoji/{f}.npy"
                for f in ("pos_pos", "pos_neg", "neg_pos", "neg_neg")
            ),
            "research use; no licence is stated with the encodings (TwitterAAE corpus of Blodgett et al. 2016)",
            "`fairmt train classification/fcl_moji`",
            folder="moji",
            split="100,000 / 8,000 / 8,000 (train 40/10/10/40 % happy-AAE/happy-SAE/sad-AAE/sad-SAE; dev/test balanced)",
        ),
        Corpus(
            "hatespeech-huang2020",
            "Huang et al. (2020) multilingual hate speech with author demographics (token ids; "
            "the authors removed the raw text). English: valid.tsv and test.tsv only — the English training split is "
            "not in the public repository; the authors share it on request (xiaolei.huang@colorado.edu, see their "
            "README); put it beside them as English/train.tsv",
            "FCL (Shen et al., 2022), Table 1 (English, age); fairness-driven sampling (Spanish, gender)",
            tuple(
                f"https://raw.githubusercontent.com/xiaoleihuang/Multilingual_Fairness_LREC/master/data/indices/{lang}/"
                f"{s}.tsv"
                for lang, s in [("English", "valid"), ("English", "test")]
                + [
                    (lang, s)
                    for lang in ("Italian", "Polish", "Portuguese", "Spanish")
                    for s in ("train", "valid", "test")
                ]
            ),
            "Apache-2.0 (xiaoleihuang/Multilingual_Fairness_LREC)",
            "`fairmt train classification/fcl_hatespeech` (English, age) once English/train.tsv is in place",
            folder="hatespeech_huang2020",
            targets=("English/valid.tsv", "English/test.tsv")
            + tuple(
                f"{lang}/{s}.tsv"
                for lang in ("Italian", "Polish", "Portuguese", "Spanish")
                for s in ("train", "valid", "test")
            ),
            split="English ~31K / 7K / 7K with a known age (Shen et al.); public English valid/test: 12,681 / 12,682 rows",
        ),
    )
}


def describe() -> str:
    """A readable list of the corpora: name, what, who uses it, URLs, licence and how to prepare it."""
    out = []
    for c in CORPORA.values():
        out.append(f"{c.name}\n  {c.what}\n  used by: {c.used_by}\n  licence: {c.licence}")
        if c.homepage:
            out.append(f"  get it from: {c.homepage} (not fetched by fairmt)")
        if c.split:
            out.append(f"  split: {c.split}")
        out += [f"  {u}" for u in c.urls]
        if c.urls:
            out.append(f"  into: <dest>/{c.folder or c.name}/")
        if c.prepare:
            out.append(f"  then: {c.prepare}")
    return "\n".join(out)


def fetch(
    name: str,
    dest: str | Path,
    *,
    base_url: str | None = None,
    sha256: dict[str, str] | None = None,
    progress: bool = True,
) -> dict[str, str]:
    """Download corpus ``name``'s files into ``dest/name`` and return ``{file name: sha256}`` (also written to
    ``dest/name/SHA256SUMS``). ``base_url`` replaces each URL's folder by a mirror; ``sha256`` pins digests (a
    mismatch leaves nothing behind)."""
    from fairmt.data.download import _fetch, mirror_url, sha256_file

    corpus = CORPORA.get(name)
    if corpus is None:
        raise FairmtError(f"unknown corpus {name!r}; `fairmt data corpora` lists {', '.join(CORPORA)}")
    if not corpus.urls:
        if corpus.homepage:
            raise FairmtError(
                f"{name} cannot be fetched by fairmt ({corpus.licence}); get it from {corpus.homepage}: "
                f"{corpus.prepare}"
            )
        raise FairmtError(f"{name} has nothing to fetch: {corpus.prepare}")
    files = corpus.files()
    pins = dict(sha256 or {})
    unknown = [k for k in pins if k not in {t for _, t in files}]
    if unknown:
        raise FairmtError(f"--sha256 names {unknown}, which are not files of {name} ({', '.join(t for _, t in files)})")
    target = Path(dest) / (corpus.folder or name)
    target.mkdir(parents=True, exist_ok=True)
    digests: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix=".fairmt-corpus-", dir=target) as tmp:
        for url, fname in files:
            src = f"{mirror_url(base_url).rstrip('/')}/{fname}" if base_url else url
            part = Path(tmp) / fname
            part.parent.mkdir(parents=True, exist_ok=True)
            _fetch(src, part, progress=progress, desc=fname)
            digest = sha256_file(part)
            if fname in pins and pins[fname] != digest:
                raise FairmtError(
                    f"checksum mismatch for {fname} from {src}: expected sha256 {pins[fname]}, got "
                    f"{digest}; nothing was kept"
                )
            digests[fname] = digest
        for fname in digests:
            (target / fname).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / fname).replace(target / fname)
    from fairmt.outputs import write_file

    write_file(target / "SHA256SUMS", "".join(f"{d}  {f}\n" for f, d in digests.items()), what="the checksums")
    return digests


__all__ = ["CORPORA", "Corpus", "describe", "fetch"]
