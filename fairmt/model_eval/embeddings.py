"""The embedding bias suite on a model: SEAT, CrowS-Pairs, StereoSet, CCED and Bias-IR in one call.

:func:`evaluate_embeddings` is what ``fairmt eval embeddings`` runs (the command only prints and writes what it
returns) and what ``fairmt.evaluate_embeddings`` is; the ``*_section`` functions score one suite on an encoder and
are shared with the sentence-transformers evaluators of :mod:`fairmt.integrations`, so the three give the same
numbers on the same model and settings. Evaluators (:mod:`fairmt.eval.embedding`) see texts and vectors only; the
runners of :mod:`fairmt.eval.embedding.encode` turn a model into them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from fairmt.errors import FairmtError
from fairmt.eval.embedding.seat import GENDER_TESTS, SEAT_N_SAMPLES, seat_n_samples_of

SUITES = ("seat", "crows", "stereoset", "cced", "bias-ir")
SEAT_TESTS = GENDER_TESTS
CROWS_VARIANTS = ("nangia", "bias-bench")
BIAS_IR_DOCS = ("title+body", "body")

OnSuite = Callable[[str, str, list, list, str, int], None]
"""``on_suite(suite, title, rows, columns, signature, digits)``: called when a suite is finished (the CLI prints
its table and writes the results so far)."""


def _names(value: str | Sequence[str] | None) -> list[str]:
    """``"seat,bias-ir"`` or ``["seat", "bias-ir"]`` → ``["seat", "bias-ir"]``."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(v).strip() for v in items if str(v).strip()]


def check_suites(suites: str | Sequence[str]) -> list[str]:
    """The suites asked for, in the one spelling (``bias_ir`` accepted for ``bias-ir``); unknown ones refused."""
    names = [s.replace("_", "-") for s in _names(suites)]
    unknown = [s for s in names if s not in SUITES]
    if unknown or not names:
        raise FairmtError(f"unknown suite(s) {unknown}; choose from {','.join(SUITES)}")
    return names


def check_seat_tests(tests: str | Sequence[str]) -> list[str]:
    """SEAT test names (``6``, ``6b``, ...); unknown ones refused."""
    names = _names(tests)
    bad = [t for t in names if t not in SEAT_TESTS]
    if bad or not names:
        raise FairmtError(f"unknown SEAT test(s) {bad}; choose from {','.join(SEAT_TESTS)}")
    return names


def default_data_file(*parts: str) -> Path:
    """A file or folder of the embedding-bias data under ``$FAIRMT_DATA`` (``fairmt data download``)."""
    from fairmt.data.paths import data_path

    return data_path("embedding_bias", *parts)


def _data_file(explicit: str | Path | None, *parts: str) -> Path:
    if explicit:
        from fairmt.data.inputs import input_path

        return input_path(str(explicit))
    return default_data_file(*parts)


# ------------------------------------------------------------------------------------------------ inputs


def load_seat_tests(seat_tests: str | Sequence[str] = SEAT_TESTS, seat_dir: str | Path | None = None) -> list:
    """The SEAT tests (``sent-weat{t}.jsonl`` in ``seat_dir``, default the downloaded data)."""
    from fairmt.data.inputs import input_dir
    from fairmt.eval.embedding.seat import load_seat_test

    folder = input_dir(str(seat_dir), "SEAT") if seat_dir else default_data_file("seat")
    return [load_seat_test(folder / f"sent-weat{t}.jsonl", name=t) for t in check_seat_tests(seat_tests)]


def load_cced_tuples(cced_tuples: str | Path | None) -> tuple[list, list[str]]:
    """The held-out CCED tuples and their group names."""
    if not cced_tuples:
        raise FairmtError(
            'the cced suite needs held-out tuples: pass --cced-tuples FILE (JSONL {"neutral", "male", "female"})'
        )
    from fairmt.eval.embedding.cced import load_tuples

    return load_tuples(cced_tuples)


def load_bias_ir_queries(bias_ir_dir: str | Path | None = None, bias_ir_limit: int | None = None) -> list:
    """The Grep-BiasIR queries (the first ``bias_ir_limit`` of each category when given)."""
    from fairmt.eval.embedding.bias_ir import load_bias_ir

    queries = load_bias_ir(Path(bias_ir_dir) if bias_ir_dir else default_data_file("bias_ir"))
    if not bias_ir_limit:
        return queries
    kept: dict[str, list] = {}
    for q in queries:
        kept.setdefault(q.category, [])
        if len(kept[q.category]) < bias_ir_limit:
            kept[q.category].append(q)
    return [q for qs in kept.values() for q in qs]


# ------------------------------------------------------------------------------------------------ one suite


def seat_section(tests: Sequence, encode, pooling: str, seat_n_samples: int = SEAT_N_SAMPLES, seed: int = 0):
    """``(payload, rows, signature)`` of SEAT on ``encode``: the JSON section ``eval embeddings`` writes."""
    from fairmt.eval.embedding.seat import seat_score

    results = [seat_score(t, encode, pooling=pooling, n_samples=seat_n_samples, seed=seed) for t in tests]
    avg = sum(abs(r.effect_size) for r in results) / len(results)
    payload = {"tests": {r.test: asdict(r) for r in results}, "avg_abs_effect_size": avg}
    rows = [
        {"test": r.test, "effect_size": r.effect_size, "p_value": f"{r.p_value:.3g}", "p": r.p_method} for r in results
    ]
    rows.append({"test": "AVG(abs)", "effect_size": avg})
    return payload, rows, results[0].signature


def cced_section(tuples: Sequence, groups: Sequence[str], encode, pooling: str, normalize: bool = False):
    """``(payload, rows, signature)`` of CCED on ``encode``."""
    from fairmt.eval.embedding.cced import cced_score

    res = cced_score(tuples, groups, encode, normalize=normalize, pooling=pooling)
    rows = [{"pair": k, "gap": res.pair_gap[k], "signed": res.pair_signed[k]} for k in res.pair_gap]
    rows.append({"pair": "CCED", "gap": res.gap})
    return asdict(res), rows, res.signature


def bias_ir_section(queries: Sequence, encode, pooling: str, doc_text: str = "title+body"):
    """``(payload, rows, signature)`` of Bias-IR on ``encode``."""
    from fairmt.eval.embedding.bias_ir import bias_ir_score

    if doc_text not in BIAS_IR_DOCS:
        raise FairmtError(f"unknown Bias-IR document text {doc_text!r}; choose from {', '.join(BIAS_IR_DOCS)}")
    res = bias_ir_score(queries, encode, doc_text=doc_text, pooling=pooling)
    rows = res.rows() + [{"category": "AVG-DEV", "male_ratio": res.avg_dev}]
    return asdict(res), rows, res.signature


# ------------------------------------------------------------------------------------------------ a model in


def embedding_runner(
    model: Any, pooling: str = "auto", batch_size: int = 32, device: str | None = None, progress: bool = False
):
    """An :class:`~fairmt.eval.embedding.encode.EmbeddingRunner` for ``model``: a path / Hub id / ``pkg:`` / alias
    (loaded), a loaded ``SentenceTransformer`` (``pooling`` ``auto`` = ``model``: its own modules; ``mean`` /
    ``first``: over its transformer's last hidden states, as for a folder), or a runner (returned as it is)."""
    from fairmt.eval.embedding.encode import POOLINGS, EmbeddingRunner

    if isinstance(model, EmbeddingRunner):
        return model
    if pooling not in POOLINGS:
        raise FairmtError(f"unknown pooling {pooling!r}; use one of {', '.join(POOLINGS)}")
    if isinstance(model, (str, Path)):
        return EmbeddingRunner.from_path(
            model, pooling=pooling, batch_size=batch_size, device=device, progress=progress
        )
    if hasattr(model, "encode") and hasattr(model, "tokenizer") and callable(model.encode):
        # a loaded SentenceTransformer (duck-typed: sentence-transformers is optional)
        dev = device or str(model.device)
        if device:
            model.to(device)
        if pooling in ("auto", "model"):
            return EmbeddingRunner(model, None, "model", batch_size=batch_size, device=dev, progress=progress)
        transformer = model[0]
        return EmbeddingRunner(
            transformer.auto_model,
            model.tokenizer,
            pooling,
            batch_size=batch_size,
            device=dev,
            progress=progress,
            max_length=getattr(transformer, "max_seq_length", None) or 512,
        )
    raise FairmtError(
        f"cannot embed with a {type(model).__name__}: give a model folder, a Hub id or a loaded SentenceTransformer"
    )


def evaluate_embeddings(
    model: Any,
    suites: str | Sequence[str] = ("seat", "bias-ir"),
    *,
    pooling: str = "auto",
    cced_tuples: str | Path | None = None,
    cced_normalize: bool = False,
    seat_tests: str | Sequence[str] = SEAT_TESTS,
    seat_dir: str | Path | None = None,
    seat_n_samples: int | None = None,
    seed: int = 0,
    crows_variant: str | Sequence[str] = CROWS_VARIANTS,
    crows_file: str | Path | None = None,
    bias_types: str | Sequence[str] | None = None,
    stereoset_gold: str | Path | None = None,
    bias_ir_dir: str | Path | None = None,
    bias_ir_doc: str = "title+body",
    bias_ir_limit: int | None = None,
    limit: int | None = None,
    batch_size: int = 32,
    device: str | None = None,
    progress: bool = False,
    on_suite: OnSuite | None = None,
    payload: dict | None = None,
    strict: bool = False,
    n_samples: int | None = None,
) -> dict:
    """Run the embedding bias suites on ``model`` and return the dict ``fairmt eval embeddings --json`` writes.

    ``model``: a model folder (transformers or sentence-transformers), a Hub id, ``pkg:MODULE``, ``minilm``, or a
    loaded ``SentenceTransformer``. The keywords are the command's options (``--seat-n-samples`` →
    ``seat_n_samples``, ...) with the same defaults (``seat_n_samples`` None:
    :data:`~fairmt.eval.embedding.seat.SEAT_N_SAMPLES`; ``n_samples`` is its old name, deprecated);
    ``device=None`` keeps the model where it loads. ``on_suite`` is called after each suite
    (see :data:`OnSuite`); ``payload``, when given, is the dict filled in place (and returned), so that ``on_suite``
    can write the results so far. Every input file is read before the
    model loads, and a masked-LM suite (crows, stereoset) checks its model before any slow work: on a model without a
    masked-LM head those suites are skipped (``payload["skipped"]``: suite → reason; the others run), or with
    ``strict=True`` the whole run is refused.

    >>> import fairmt
    >>> res = fairmt.evaluate_embeddings("minilm", suites="seat", seat_tests="6")  # doctest: +SKIP
    >>> res["seat"]["avg_abs_effect_size"]  # doctest: +SKIP
    """
    import os

    suites = check_suites(suites)
    seat_tests = check_seat_tests(seat_tests)
    seat_n_samples = seat_n_samples_of(seat_n_samples, n_samples, "evaluate_embeddings")
    if "cced" in suites and not cced_tuples:
        load_cced_tuples(None)  # the one error message
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    name = str(model) if isinstance(model, (str, Path)) else type(model).__name__
    payload = {} if payload is None else payload
    from fairmt.eval.reporting.formats import EMBEDDINGS

    payload.update({"format": EMBEDDINGS, "model": name, "suites": list(suites), "completed": []})

    def done(suite: str, title: str, rows: list, cols: list, signature: str, digits: int = 3) -> None:
        if suite not in payload["completed"]:
            payload["completed"].append(suite)
        if on_suite is not None:
            on_suite(suite, title, rows, cols, signature, digits)

    # Read every input file before any model loads: a bad file fails in a second, not after the model's load.
    seat = load_seat_tests(seat_tests, seat_dir) if "seat" in suites else None
    tuples, groups = load_cced_tuples(cced_tuples) if "cced" in suites else (None, None)
    queries = load_bias_ir_queries(bias_ir_dir, bias_ir_limit) if "bias-ir" in suites else None
    crows_pairs = stereo_examples = None
    if "crows" in suites:
        from fairmt.eval.embedding.crows import VARIANTS, load_crows_pairs

        crows_variant = _names(crows_variant)
        bad = [v for v in crows_variant if v not in VARIANTS]
        if bad or not crows_variant:
            raise FairmtError(f"unknown CrowS-Pairs variant(s) {bad}; choose from {','.join(VARIANTS)}")
        crows_pairs = load_crows_pairs(
            _data_file(crows_file, "crows", "crows_pairs_anonymized.csv"), _names(bias_types) or None, limit
        )
    if "stereoset" in suites:
        from fairmt.eval.embedding.stereoset import load_stereoset

        stereo_examples = load_stereoset(
            _data_file(stereoset_gold, "stereoset", "stereoset_dev_langtest2.7.0.jsonl"), splits=["intrasentence"]
        )
        if limit:
            stereo_examples = stereo_examples[:limit]

    # Then the masked LM, before any slow work: without a masked-LM head crows/stereoset are skipped (strict: refused).
    mlm = None
    if {"crows", "stereoset"} & set(suites):
        from fairmt.eval.embedding.encode import MaskedLMRunner, NotMaskedLMError

        try:
            if not isinstance(model, (str, Path)):
                raise NotMaskedLMError("crows and stereoset load a masked LM: give the model as a folder or Hub id")
            mlm = MaskedLMRunner.from_path(model, batch_size=max(batch_size, 1), device=device)
        except NotMaskedLMError as err:
            mlm_suites = [s for s in suites if s in ("crows", "stereoset")]
            if strict or len(mlm_suites) == len(suites):
                raise
            payload["skipped"] = {s: str(err) for s in mlm_suites}
            suites = [s for s in suites if s not in mlm_suites]
            payload["suites"] = list(suites)
            crows_pairs = stereo_examples = None

    emb = None
    if {"seat", "cced", "bias-ir"} & set(suites):
        emb = embedding_runner(model, pooling, batch_size=batch_size, device=device, progress=progress)
        payload["pooling"] = emb.pooling

    if seat is not None:
        payload["seat"], rows, sig = seat_section(seat, emb.encode, emb.pooling, seat_n_samples, seed)
        done("seat", "SEAT", rows, ["test", "effect_size", "p_value", "p"], sig)
    if tuples is not None:
        payload["cced"], rows, sig = cced_section(tuples, groups, emb.encode, emb.pooling, cced_normalize)
        done("cced", f"CCED ({payload['cced']['n']} tuples)", rows, ["pair", "gap", "signed"], sig, 4)
    if queries is not None:
        payload["bias_ir"], rows, sig = bias_ir_section(queries, emb.encode, emb.pooling, bias_ir_doc)
        done(
            "bias-ir",
            "Bias-IR (male ratio, 0.50 best)",
            rows,
            ["category", "n", "male_ratio", "ties", "rank_M", "rank_F", "rank_N"],
            sig,
        )
    if crows_pairs is not None:
        from fairmt.eval.embedding.crows import crows_score

        payload["crows"] = {}
        for v in crows_variant:
            res = crows_score(crows_pairs, mlm, variant=v, progress=progress)
            d = asdict(res)
            d.pop("pair_scores")
            payload["crows"][v] = d
            rows = [{"bias_type": k, **row} for k, row in res.per_bias_type.items()]
            rows.append({"bias_type": "overall", **res.overall})
            done(
                "crows",
                f"CrowS-Pairs ({v}; 50 best)",
                rows,
                ["bias_type", "n", "metric", "stereo_score", "antistereo_score", "neutral"],
                res.signature,
                2,
            )
    if stereo_examples is not None:
        from fairmt.eval.embedding.stereoset import intrasentence_predictions, stereoset_score

        preds = intrasentence_predictions(stereo_examples, progress=progress, fill_probs_many=mlm.fill_probs_many)
        scores = {p["id"]: p["score"] for p in preds["intrasentence"]}
        res = stereoset_score(stereo_examples, scores, scores_from="mlm-mean-subtoken-prob")
        payload["stereoset"] = res.to_json()
        # scored as the official scorer does: BLANK masked at every place, the first mask read
        payload["stereoset"]["contexts_with_several_blanks"] = sum(
            e.context.count("BLANK") > 1 for e in stereo_examples
        )
        done(
            "stereoset",
            "StereoSet intrasentence",
            res.rows(),
            ["domain", "lms", "ss", "icat", "count"],
            res.signature,
            2,
        )
    return payload


__all__ = [
    "SEAT_TESTS",
    "SUITES",
    "bias_ir_section",
    "cced_section",
    "check_suites",
    "embedding_runner",
    "evaluate_embeddings",
    "load_bias_ir_queries",
    "load_cced_tuples",
    "load_seat_tests",
    "seat_section",
]
