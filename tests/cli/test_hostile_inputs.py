"""Every `fairmt` sub-command × every file-taking option × hostile file contents: a one-line error naming the file
and exit code 2 (or, where the content is fine — CRLF line ends — the same result as the clean file). Never a
traceback: the CLI runs in-process, so an uncaught exception fails the case.

Hostile contents: missing, a directory, empty, binary garbage, UTF-16 with BOM, CRLF, a wrong line count, a torn
last line (cut mid-write, no final newline) and a line of over a million characters. Each option declares which of
them it must refuse (a torn line of plain text cannot be told from a short sentence, for instance): for the others
the case asserts only exit 0 or 2 without a traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fairmt.cli import main

CASES = ("missing", "directory", "empty", "binary", "utf16", "crlf", "wrong_count", "torn", "huge")
ALWAYS_REFUSED = {"missing", "directory", "empty", "binary", "utf16"}

# ---------------------------------------------------------------------------------------------- valid contents

GOLD = [
    "male\t1\tThe developer argued with the designer because he did not like the design.\tdeveloper",
    "female\t1\tThe nurse helped the patient because she was kind.\tnurse",
    "male\t4\tThe secretary called the mechanic because he was late.\tmechanic",
]
DE = [
    "Der Entwickler stritt mit dem Designer, weil er das Design nicht mochte.",
    "Die Krankenschwester half dem Patienten, weil sie freundlich war.",
    "Die Sekretärin rief den Mechaniker an, weil er zu spät war.",
]
GENEVAL_SRC = {
    "masculine": ["He is a doctor.", "My brother is a nurse.", "The man teaches."],
    "feminine": ["She is a doctor.", "My sister is a nurse.", "The woman teaches."],
}
GENEVAL_REF = {
    "masculine": ["Er ist Arzt.", "Mein Bruder ist Krankenpfleger.", "Der Mann unterrichtet."],
    "feminine": ["Sie ist Ärztin.", "Meine Schwester ist Krankenschwester.", "Die Frau unterrichtet."],
}
FLORES_REF = [
    "Der Arzt sprach lange mit der Patientin.",
    "Die Lehrerin erklärt die Aufgabe.",
    "Morgen fahren wir nach Berlin.",
    "Das Wetter war schön.",
]
WORDS = "he she man woman doctor nurse is a the his her works at bank cooks dinner this that john amy".split()


def _lines(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8")


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def _predictions(n: int = 12) -> bytes:
    return _jsonl(
        [
            {"label": i % 2, "pred": (i // 2) % 2, "group": (i // 3) % 2, "hidden": [i % 3, i % 5 + 0.5]}
            for i in range(n)
        ]
    )


def _parallel() -> bytes:
    return _jsonl(
        [
            {"translation": {"en": "He is a doctor.", "de": "Er ist Arzt."}},
            {"translation": {"en": "She is a nurse.", "de": "Sie ist Krankenschwester."}},
        ]
    )


def _stereoset_gold() -> bytes:
    rows = [
        {
            "type": "intrasentence",
            "target": "nurse",
            "bias_type": "gender",
            "context": "The nurse is BLANK.",
            "stereotype": "The nurse is she.",
            "anti-stereotype": "The nurse is he.",
            "unrelated": "The nurse is dinner.",
        },
        {
            "type": "intrasentence",
            "target": "doctor",
            "bias_type": "profession",
            "context": "The doctor is BLANK.",
            "stereotype": "The doctor is he.",
            "anti-stereotype": "The doctor is she.",
            "unrelated": "The doctor is bank.",
        },
    ]
    return _jsonl(rows)


def _stereoset_predictions() -> bytes:
    ids = [f"gold:{n}:{lab}" for n in (1, 2) for lab in ("stereotype", "anti-stereotype", "unrelated")]
    scores = [0.5, 0.3, 0.1, 0.2, 0.4, 0.05]
    return json.dumps({"intrasentence": [{"id": i, "score": s} for i, s in zip(ids, scores)]}, indent=1).encode()


def _seat() -> bytes:
    sets = {
        "targ1": ["This is John.", "That is John."],
        "targ2": ["This is Amy.", "That is Amy."],
        "attr1": ["He works at the bank.", "His work."],
        "attr2": ["She cooks dinner.", "Her home."],
    }
    return json.dumps({k: {"category": k, "examples": v} for k, v in sets.items()}, indent=2).encode()


def _bias_ir_queries() -> bytes:
    return _lines(["q_id,category,query", "q1,profession,who is a doctor", "q2,profession,who is a nurse"])


def _bias_ir_docs() -> bytes:
    rows = ["q_id,d_id,relevant,content_gender,doc_title,document"]
    for q in ("q1", "q2"):
        rows += [f"{q},{q}m,1,M,t,he is a doctor", f"{q},{q}f,1,F,t,she is a doctor", f"{q},{q}n,0,N,t,the bank"]
    return _lines(rows)


def _crows() -> bytes:
    return _lines(
        [
            "sent_more,sent_less,stereo_antistereo,bias_type",
            "she cooks dinner,he cooks dinner,stereo,gender",
            "he works at the bank,she works at the bank,antistereo,gender",
        ]
    )


def _tuples() -> bytes:
    return _jsonl(
        [
            {"neutral": "the doctor works", "male": "he works", "female": "she works"},
            {"neutral": "the nurse cooks", "male": "the man cooks", "female": "the woman cooks"},
        ]
    )


RECIPE = Path(__file__).resolve().parents[2] / "fairmt" / "recipes" / "classification" / "fcl.yaml"

# ---------------------------------------------------------------------------------------------- the options


@dataclass
class Option:
    """One file-taking option of one sub-command."""

    name: str
    kind: str  # lines | jsonl | json | csv | yaml | binary
    valid: Callable[[], bytes]
    argv: Callable[[Path, Path], list[str]]  # (work folder, the file under test) -> argv
    filename: str = "input.txt"
    refuses: set[str] = field(default_factory=set)  # besides ALWAYS_REFUSED
    runs: bool = True  # the clean file runs to completion (exit 0) here, so CRLF must give the same result
    in_dir: str | None = None  # the option takes a folder; the file under test is this file inside it


def _geneval_argv(gender: str) -> Callable[[Path, Path], list[str]]:
    def argv(work: Path, f: Path) -> list[str]:
        other = "feminine" if gender == "masculine" else "masculine"
        return [
            "eval",
            "geneval",
            "--lang",
            "de",
            f"--{gender}",
            str(f),
            f"--{other}",
            str(work / f"{other}.de"),
            "--json",
            "-",
        ]

    return argv


def _emb(suite: str, opt: str) -> Callable[[Path, Path], list[str]]:
    def argv(work: Path, f: Path) -> list[str]:
        target = f.parent if opt in ("--seat-dir", "--bias-ir-dir") else f
        extra = ["--seat-tests", "6"] if suite == "seat" else []
        return (
            [
                "eval",
                "embeddings",
                "--model",
                str(work / "mlm"),
                "--suite",
                suite,
                opt,
                str(target),
                *extra,
                "--no-progress",
                "--n-samples",
                "50",
            ]
            if suite == "seat"
            else [
                "eval",
                "embeddings",
                "--model",
                str(work / "mlm"),
                "--suite",
                suite,
                opt,
                str(target),
                "--no-progress",
            ]
        )

    return argv


LINES_REFUSED = {"huge"}
OPTIONS = [
    Option(
        "eval winomt --translations",
        "lines",
        lambda: _lines([f"{g.split(chr(9))[2]} ||| {d}" for g, d in zip(GOLD, DE)]),
        lambda w, f: [
            "eval",
            "winomt",
            "--lang",
            "de",
            "--translations",
            str(f),
            "--gold",
            str(w / "gold.txt"),
            "--json",
            "-",
        ],
        refuses=LINES_REFUSED | {"wrong_count"},
    ),
    Option(
        "eval winomt --gold",
        "lines",
        lambda: _lines(GOLD),
        lambda w, f: [
            "eval",
            "winomt",
            "--lang",
            "de",
            "--translations",
            str(w / "translations.txt"),
            "--gold",
            str(f),
            "--json",
            "-",
        ],
        refuses=LINES_REFUSED | {"wrong_count", "torn"},
    ),
    Option(
        "eval geneval --masculine",
        "lines",
        lambda: _lines(GENEVAL_REF["masculine"]),
        _geneval_argv("masculine"),
        refuses=LINES_REFUSED | {"wrong_count"},
    ),
    Option(
        "eval geneval --feminine",
        "lines",
        lambda: _lines(GENEVAL_REF["feminine"]),
        _geneval_argv("feminine"),
        refuses=LINES_REFUSED | {"wrong_count"},
    ),
    Option(
        "eval flores --hypotheses",
        "lines",
        lambda: _lines(FLORES_REF),
        lambda w, f: [
            "eval",
            "flores",
            "--lang-pair",
            "eng_Latn-deu_Latn",
            "--hypotheses",
            str(f),
            "--spm-model",
            str(w / "spm.model"),
            "--json",
            "-",
        ],
        refuses=LINES_REFUSED | {"wrong_count"},
    ),
    Option(
        "eval flores --spm-model",
        "binary",
        lambda: b"",
        lambda w, f: [
            "eval",
            "flores",
            "--lang-pair",
            "eng_Latn-deu_Latn",
            "--hypotheses",
            str(w / "hyp.de"),
            "--spm-model",
            str(f),
        ],
        runs=False,
    ),
    Option(
        "eval classification --predictions",
        "jsonl",
        _predictions,
        lambda w, f: ["eval", "classification", "--predictions", str(f), "--json", str(w / "out.json"), "--overwrite"],
        filename="p.jsonl",
        refuses=LINES_REFUSED | {"torn"},
    ),
    Option(
        "eval classification --train-predictions",
        "jsonl",
        _predictions,
        lambda w, f: [
            "eval",
            "classification",
            "--predictions",
            str(w / "preds.jsonl"),
            "--train-predictions",
            str(f),
            "--json",
            str(w / "out.json"),
            "--overwrite",
        ],
        filename="tp.jsonl",
        refuses=LINES_REFUSED | {"torn"},
    ),
    Option(
        "eval stereoset --predictions",
        "json",
        _stereoset_predictions,
        lambda w, f: ["eval", "stereoset", "--predictions", str(f), "--gold", str(w / "gold.jsonl")],
        filename="pred.json",
        refuses={"torn"},
    ),
    Option(
        "eval stereoset --gold",
        "jsonl",
        _stereoset_gold,
        lambda w, f: ["eval", "stereoset", "--predictions", str(w / "pred.json"), "--gold", str(f)],
        filename="gold.jsonl",
        refuses={"torn"},
    ),
    Option(
        "eval embeddings --cced-tuples",
        "jsonl",
        _tuples,
        _emb("cced", "--cced-tuples"),
        filename="t.jsonl",
        refuses=LINES_REFUSED | {"torn"},
    ),
    Option(
        "eval embeddings --crows-file",
        "csv",
        _crows,
        _emb("crows", "--crows-file"),
        filename="crows.csv",
        refuses=LINES_REFUSED | {"torn"},
    ),
    Option(
        "eval embeddings --stereoset-gold",
        "jsonl",
        _stereoset_gold,
        _emb("stereoset", "--stereoset-gold"),
        filename="gold.jsonl",
        refuses={"torn"},
    ),
    Option(
        "eval embeddings --seat-dir",
        "json",
        _seat,
        _emb("seat", "--seat-dir"),
        filename="sent-weat6.jsonl",
        in_dir="seat",
        refuses={"torn"},
    ),
    Option(
        "eval embeddings --bias-ir-dir",
        "csv",
        _bias_ir_queries,
        _emb("bias-ir", "--bias-ir-dir"),
        filename="queries.csv",
        in_dir="bias_ir",
        refuses=LINES_REFUSED,
    ),
    Option(
        "train RECIPE",
        "yaml",
        lambda: RECIPE.read_bytes(),
        lambda w, f: ["train", str(f), f"data.files=[{w / 'gold.txt'}]", "--dry-run"],  # a data file that exists
        filename="recipe.yaml",
        refuses=LINES_REFUSED,
    ),
    Option(
        "augment cda --input",
        "lines",
        lambda: _lines(["He is a doctor .", "She works at the bank ."]),
        lambda w, f: ["augment", "cda", "--input", str(f), "--output", str(w / "out.jsonl"), "--overwrite"],
        refuses=LINES_REFUSED,
    ),
    Option(
        "augment llm --input",
        "lines",
        lambda: _lines(["He is a doctor ."]),
        lambda w, f: [
            "augment",
            "llm",
            "--input",
            str(f),
            "--output",
            str(w / "out.jsonl"),
            "--overwrite",
            "--url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--retries",
            "0",
        ],
        runs=False,
        refuses=LINES_REFUSED,
    ),
    Option(
        "augment llm --examples",
        "jsonl",
        lambda: _jsonl([{"passage": "He is here.", "versions": {"male": "He is here.", "female": "She is here."}}]),
        lambda w, f: [
            "augment",
            "llm",
            "--input",
            str(w / "texts.txt"),
            "--examples",
            str(f),
            "--output",
            str(w / "out.jsonl"),
            "--overwrite",
            "--url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--retries",
            "0",
        ],
        filename="ex.jsonl",
        runs=False,
        refuses=LINES_REFUSED | {"torn"},
    ),
    Option(
        "data fairseq-prep --input",
        "jsonl",
        lambda: _parallel(),
        lambda w, f: ["data", "fairseq-prep", "--input", str(f), "--output-dir", str(w / "prep-out")],
        filename="pairs.jsonl",
        runs=False,
        refuses=LINES_REFUSED | {"torn"},
    ),
    Option(
        "data fairseq-prep --valid-input",
        "jsonl",
        lambda: _parallel(),
        lambda w, f: [
            "data",
            "fairseq-prep",
            "--input",
            str(w / "pairs.jsonl"),
            "--valid-input",
            str(f),
            "--output-dir",
            str(w / "prep-out"),
        ],
        filename="valid.jsonl",
        runs=False,
        refuses=LINES_REFUSED | {"torn"},
    ),
    Option(
        "data fairseq-prep --srcdict",
        "lines",
        lambda: _lines(["he 5", "she 5", "is 3"]),
        lambda w, f: [
            "data",
            "fairseq-prep",
            "--input",
            str(w / "pairs.jsonl"),
            "--srcdict",
            str(f),
            "--output-dir",
            str(w / "prep-out"),
        ],
        filename="dict.en.txt",
        runs=False,
        refuses=LINES_REFUSED,
    ),
    Option(
        "data fairseq-prep --tgtdict",
        "lines",
        lambda: _lines(["er 5", "sie 5", "ist 3"]),
        lambda w, f: [
            "data",
            "fairseq-prep",
            "--input",
            str(w / "pairs.jsonl"),
            "--tgtdict",
            str(f),
            "--output-dir",
            str(w / "prep-out"),
        ],
        filename="dict.de.txt",
        runs=False,
        refuses=LINES_REFUSED,
    ),
    Option(
        "data fairseq-prep --sentencepiece-model",
        "binary",
        lambda: b"",
        lambda w, f: [
            "data",
            "fairseq-prep",
            "--input",
            str(w / "pairs.jsonl"),
            "--sentencepiece-model",
            str(f),
            "--output-dir",
            str(w / "prep-out"),
        ],
        runs=False,
    ),
    Option(
        "eval mt-bias --gold",
        "lines",
        lambda: _lines(GOLD),
        lambda w, f: [
            "eval",
            "mt-bias",
            "--translations-dir",
            str(w / "mtb"),
            "--gold",
            str(f),
            "--benchmarks",
            "winomt",
            "--lang",
            "de",
            "--json",
            "-",
        ],
        refuses=LINES_REFUSED | {"wrong_count", "torn"},
    ),
    Option(
        "eval mt-bias --translations-dir",
        "lines",
        lambda: OPTIONS[0].valid(),
        lambda w, f: [
            "eval",
            "mt-bias",
            "--translations-dir",
            str(f.parent.parent),
            "--gold",
            str(w / "gold.txt"),
            "--benchmarks",
            "winomt",
            "--lang",
            "de",
            "--json",
            "-",
        ],
        filename="en-de.txt",
        in_dir="run/winomt",
        refuses=LINES_REFUSED | {"wrong_count"},
    ),
    Option(
        "eval mt-bias --spm-model",
        "binary",
        lambda: b"",
        lambda w, f: [
            "eval",
            "mt-bias",
            "--translations-dir",
            str(w / "mtb"),
            "--benchmarks",
            "flores",
            "--lang",
            "de",
            "--spm-model",
            str(f),
        ],
        runs=False,
    ),
    Option(
        "report RUN.json",
        "json",
        lambda: json.dumps(
            {
                "format": 1,
                "winomt": {
                    "de": {  # one score: something to show
                        "accuracy": 58.2,
                        "delta_g": 11.8,
                        "delta_s": 12.9,
                        "n": 3888,
                        "signature": "winomt|v:1.0|lang:de|gold:aggregates_acl2019/en.txt|align:fast_align|detector:GermanDetector|"
                        "compat:none|fairmt:0.1.0",
                    }
                },
                "geneval": {},
            }
        ).encode(),
        lambda w, f: ["report", str(f)],
        filename="run.json",
        refuses={"torn"},
    ),
    Option(
        "push --results",
        "json",
        lambda: json.dumps({"lang": "de", "accuracy": 60.0}).encode(),
        lambda w, f: ["push", str(w / "model"), "me/model", "--results", str(f)],
        filename="r.json",
        runs=False,
        refuses={"torn"},
    ),
]


# ---------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return build_work(tmp_path_factory.mktemp("hostile"))


def build_work(w: Path) -> Path:
    """Clean versions of every other input the commands need, under ``w`` (data root: ``w/data``)."""
    import sentencepiece as spm

    (w / "gold.txt").write_bytes(_lines(GOLD))
    (w / "translations.txt").write_bytes(OPTIONS[0].valid())
    for g in ("masculine", "feminine"):
        (w / f"{g}.de").write_bytes(_lines(GENEVAL_REF[g]))
        d = w / "data" / "mt_geneval" / "sentences" / "test"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"geneval-sentences-{g}-test.en_de.en").write_bytes(_lines(GENEVAL_SRC[g]))
        (d / f"geneval-sentences-{g}-test.en_de.de").write_bytes(_lines(GENEVAL_REF[g]))
    dt = w / "data" / "flores200" / "devtest"
    dt.mkdir(parents=True)
    (dt / "eng_Latn.devtest").write_bytes(_lines(["x"] * len(FLORES_REF)))
    (dt / "deu_Latn.devtest").write_bytes(_lines(FLORES_REF))
    (w / "hyp.de").write_bytes(_lines(FLORES_REF))
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(FLORES_REF * 30),
        model_prefix=str(w / "spm"),
        vocab_size=60,
        model_type="bpe",
        character_coverage=1.0,
    )
    (w / "preds.jsonl").write_bytes(_predictions())
    (w / "pred.json").write_bytes(_stereoset_predictions())
    (w / "gold.jsonl").write_bytes(_stereoset_gold())
    (w / "texts.txt").write_bytes(_lines(["He is a doctor ."]))
    (w / "pairs.jsonl").write_bytes(_parallel())
    (w / "a-file").write_text("not a folder\n")
    (w / "mtb" / "winomt").mkdir(parents=True)  # an mt-bias translations folder
    (w / "mtb" / "winomt" / "en-de.txt").write_bytes(OPTIONS[0].valid())
    (w / "mtb" / "flores").mkdir()
    (w / "mtb" / "flores" / "de.txt").write_bytes(
        _lines(FLORES_REF)
    )  # fairseq-prep's --out: refused after every input was read
    _tiny_mlm(w / "mlm")
    (w / "model").mkdir()
    (w / "model" / "config.json").write_text("{}", encoding="utf-8")
    return w


def _tiny_mlm(out: Path) -> None:
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(WORDS))]
    BertTokenizer(vocab={t: i for i, t in enumerate(vocab)}).save_pretrained(out)
    torch.manual_seed(0)
    BertForMaskedLM(
        BertConfig(
            vocab_size=len(vocab),
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=64,
        )
    ).save_pretrained(out)


def _write_case(option: Option, case: str, folder: Path) -> Path:
    """The file under test, written for ``case``; returns the path the command is given."""
    if option.in_dir:
        folder = folder / option.in_dir
        folder.mkdir(parents=True)
        if option.in_dir == "bias_ir":
            (folder / "queries-documents_1.csv").write_bytes(_bias_ir_docs())
    path = folder / option.filename
    if case == "missing":
        return path
    if case == "directory":
        path.mkdir()
        return path
    valid = option.valid()
    body = valid.rstrip(b"\n")
    make = {
        "empty": lambda: b"",
        "binary": lambda: bytes(range(256)) * 8,
        "utf16": lambda: (valid.decode("utf-8") if valid else "x\n").encode("utf-16"),
        "crlf": lambda: valid.replace(b"\n", b"\r\n"),
        "wrong_count": lambda: valid + valid.splitlines(keepends=True)[-1],
        # cut mid-write: no final newline, the last line missing its second half
        "torn": lambda: body[: len(body) - max(3, len(body.splitlines()[-1]) // 2)],
        "huge": lambda: valid + b"a" * 1_100_000 + b"\n",
    }
    data = make[case]()
    path.write_bytes(data)
    return path


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _applies(option: Option, case: str) -> bool:
    if option.kind == "binary":
        return case in ("missing", "directory", "empty", "binary")
    if case == "wrong_count" and option.kind in ("json", "yaml"):
        return False  # one document: there is no line count to get wrong
    if case == "huge" and option.kind == "json":
        return False  # a JSON document may be one long line
    return True


MATRIX = [(o, c) for o in OPTIONS for c in CASES if _applies(o, c)]


@pytest.mark.parametrize("option,case", MATRIX, ids=[f"{o.name}-{c}" for o, c in MATRIX])
def test_hostile_input(option: Option, case: str, work: Path, tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("FAIRMT_DATA", str(work / "data"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    if option.name.startswith("data fairseq-prep"):  # every input is read before fairseq is needed: stop there
        from fairmt.errors import FairmtError

        def no_fairseq():
            raise FairmtError("fairseq is not used by this test")

        monkeypatch.setattr("fairmt.fairseq.prep.require_fairseq", no_fairseq)
    path = _write_case(option, case, tmp_path)
    rc, out, err = _run(option.argv(work, path), capsys)
    assert "Traceback" not in err
    if case in ALWAYS_REFUSED or case in option.refuses:
        assert rc == 2, (rc, out[-500:], err[-2000:])
        errors = [line for line in err.splitlines() if line.startswith("fairmt: error: ")]
        assert len(errors) == 1, err
        # a folder option may name the folder it was given (e.g. "nothing to score in DIR") instead of the file
        named = [path] + (list(path.parents)[: option.in_dir.count("/") + 2] if option.in_dir else [])
        assert any(str(p) in errors[0] for p in named), errors[0]
        return
    if case == "crlf" and option.runs:
        # the same command on the clean file: same exit code and the same printed result
        cdir = tmp_path / "lf"
        cdir.mkdir()
        if option.in_dir:
            (cdir / option.in_dir).mkdir(parents=True)
            target = cdir / option.in_dir / option.filename
            if option.in_dir == "bias_ir":
                (cdir / option.in_dir / "queries-documents_1.csv").write_bytes(_bias_ir_docs())
        else:
            target = cdir / option.filename
        target.write_bytes(option.valid())
        rc_lf, out_lf, _ = _run(option.argv(work, target), capsys)
        assert rc_lf == 0, out_lf
        assert rc == rc_lf

        def norm(text: str) -> str:  # the two runs' folders differ; signatures name the file's folder
            for d in (cdir, tmp_path):
                text = text.replace(str(d), "<dir>").replace(d.name, "<dir>")
            return text

        assert norm(out) == norm(out_lf)
        return
    # accepted content: a normal outcome (exit 1 = `augment llm` produced nothing: its endpoint is unreachable here)
    assert rc in ((0, 2) if option.runs else (0, 1, 2)), (rc, err)


# Options that take a path but are not file inputs a command parses (outputs, flags, model folders — those are
# loaded by transformers and fail through fairmt.models' errors), with the reason.
NOT_INPUTS = {
    "augment llm --local-model": "a model folder",
    "data download --base-url": "a URL",
    "data download --output-dir": "an output folder",
    "data download --force": "a flag",
    "data verify --root": "checksums a data folder (no parsing): a bad file is reported as a checksum mismatch",
    "push --all-files": "a flag",
    "push --dry-run": "an output folder (the card it would upload and the list of files)",
    "train --overwrite": "a flag",
    "train --dry-run": "a flag (its help mentions the output folder)",
    "data fairseq-prep --src-lang": "a language code (its help mentions the file suffix)",
    "data fairseq-prep --lang": "a language code (its help mentions the file suffix)",
    "eval geneval --translations": "the contextual set: read by the same reader as --masculine (covered)",
    "eval mt-bias --name": "a display name",
    "data corpora --output-dir": "an output folder",
    "data fairseq-prep --lang-pairs": "language pairs (its help mentions the file naming)",
    "data corpora --sha256": "a FILE=DIGEST pin, not a path",
    "report --names": "display names (its help mentions file stems)",
    "sweep --accelerate-config": "handed to accelerate launch, which parses it; the sweep refuses a missing one before "
    "any trial (tests/cli/test_sweep.py::test_bad_input_is_one_line_before_any_run)",
    "sweep --storage": "an Optuna storage URL or a journal file the sweep creates (an output); one that cannot be "
    "opened is refused before any trial (tests/cli/test_sweep.py)",
    "sweep --study-name": "a name inside the storage",
}


def test_matrix_covers_every_file_option():
    """Every option of every sub-command whose metavar or help says it takes a file or folder is in OPTIONS or in
    NOT_INPUTS with a reason: a new file-taking option must join the matrix."""
    from fairmt.cli import build_parser

    seen: set[str] = set()

    def walk(p, prefix: str) -> None:
        for action in p._actions:
            if isinstance(getattr(action, "choices", None), dict):
                for name, sub in action.choices.items():
                    walk(sub, f"{prefix} {name}".strip())
            elif action.option_strings and (
                action.metavar in ("FILE", "DIR", "JSON", "PATH", "PAIRS", "D", "MODEL")
                or re.search(r"\b(file|folder|directory)\b", action.help or "", re.I)
            ):
                seen.add(f"{prefix} {action.option_strings[0]}")

    walk(build_parser(), "")
    outputs = re.compile(r"--(json|markdown|plot|output|output-dir|out|failures|cache-dir|aligner-bin|model)$")
    covered = {o.name for o in OPTIONS}
    missing = sorted(s for s in seen if not outputs.search(s) and s not in covered and s not in NOT_INPUTS)
    assert not missing, f"file-taking options not in the hostile-input matrix: {missing}"
    assert len(MATRIX) >= 150, len(MATRIX)
