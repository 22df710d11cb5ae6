"""Every JSON fairmt writes, read into :class:`Run` rows of one of the report's families.

A file is recognised by its declared ``format`` (:mod:`fairmt.eval.reporting.formats`) and nothing else: a file
without one, or with one this fairmt does not know, is refused in one line. Each reader picks the family's measures
out of the file (a value that is not a number where a number belongs is a one-line error naming the file and the
key), the signatures the numbers were computed under (compared across runs by
:func:`fairmt.eval.reporting.tables.build_tables`) and the run's settings (shown, not compared). A recipe that
measured the model before and after training gives two rows; a ``sweep.json`` one row per setting (mean ± std over
its seeds), labelled by the setting's values (``β=0.1``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairmt.citations import METHOD_PAPERS
from fairmt.errors import FairmtError
from fairmt.eval.reporting import formats


@dataclass
class Run:
    """One row of a report table. ``values``/``std`` are keyed by measure (``std`` only for means over seeds);
    ``scale`` is the scale of the run's rates as written (``percent`` or ``fraction``), converted by the table when
    runs of different scales share it."""

    name: str
    family: str
    source: str
    values: dict[str, float | None]
    std: dict[str, float | None] = field(default_factory=dict)
    n: int = 1
    scale: str = "percent"
    settings: dict[str, Any] = field(default_factory=dict)
    signatures: dict[str, str] = field(default_factory=dict)
    method: str | None = None
    group: str | None = None  # the method/sweep a run belongs to (one colour in a trade-off figure)
    setting: dict[str, Any] | None = None  # a sweep setting's overrides
    seeds: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # said under the run's table (a sweep's area under its front)
    items: dict[str, dict] = field(default_factory=dict)  # "winomt:de" → per-sentence data (a paired bootstrap)


class _Reader:
    """Typed access to one file's values: every error names the file and the dotted key. ``at`` gives the reader
    of a nested object (keys then relative to it, errors still naming the whole path)."""

    def __init__(self, path: str, data: dict, prefix: str = ""):
        self.path, self.data, self.prefix = path, data, prefix

    def name(self, dotted: str) -> str:
        return f"{self.prefix}{dotted}"

    def get(self, dotted: str) -> Any:
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, dict):
                raise FairmtError(
                    f"{self.path}: {self.name(dotted)!r}: {part!r} is inside a {type(node).__name__}, not an object"
                )
            node = node.get(part)
            if node is None:
                return None
        return node

    def at(self, dotted: str) -> _Reader:
        v = self.get(dotted)
        if v is not None and not isinstance(v, dict):
            raise FairmtError(
                f"{self.path}: {self.name(dotted)!r} must be an object, got {type(v).__name__} {_short(v)}"
            )
        return _Reader(self.path, v or {}, f"{self.name(dotted)}.")

    def num(self, dotted: str) -> float | None:
        return self.check(self.get(dotted), dotted)

    def check(self, v: Any, dotted: str) -> float | None:
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise FairmtError(
                f"{self.path}: {self.name(dotted)!r} is {_short(v)} ({type(v).__name__}), not a number (or null)"
            )
        if not math.isfinite(v):
            raise FairmtError(
                f"{self.path}: {self.name(dotted)!r} is {v!r}, not a finite number (null marks an undefined value)"
            )
        return float(v)

    def text(self, dotted: str) -> str | None:
        v = self.get(dotted)
        if v is None:
            return None
        if isinstance(v, (dict, list)):
            raise FairmtError(f"{self.path}: {self.name(dotted)!r} must be a string, got {type(v).__name__}")
        return str(v)


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def strip_version(sig: str | None) -> str:
    """A signature without the fairmt version in it (``|fairmt:0.1.0``): a new release with the same metric keeps
    comparing equal."""
    return re.sub(r"\|fairmt:[^|]*", "", str(sig))


def _items(r: _Reader, bench: str, key: str) -> dict:
    """``{"bench:key": items}`` when the result row ``r`` carries per-sentence data
    (:mod:`fairmt.eval.significance`)."""
    items = r.get("items")
    if items is None:
        return {}
    if not isinstance(items, dict):
        raise FairmtError(f"{r.path}: {r.name('items')!r} must be an object, got {type(items).__name__}")
    return {f"{bench}:{key}": items}


def _drop_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


# ------------------------------------------------------------------------------------------------ MT (GACL paper)
def _mt_winomt_row(r: _Reader) -> dict:
    """A WinoMT language's measures from an mt-bias row, or from a ``fairmt eval winomt`` result: ΔG is the accuracy gap
    Acc_male − Acc_female (``delta_g`` in a result that has ``delta_g_f1``; in an older one ``delta_g_acc``, or from
    the confusion matrix, its ``delta_g`` being the F1 gap)."""
    dg = r.num("delta_g") if "delta_g_f1" in r.data else r.num("delta_g_acc")
    conf = r.at("confusion")
    if dg is None and conf.data:

        def rate(g):
            row = conf.at(g)
            counts = {k: row.check(v, k) or 0.0 for k, v in row.data.items()}
            total = sum(counts.values())
            return 100.0 * counts.get(g, 0.0) / total if total else None

        am, af = rate("male"), rate("female")
        dg = am - af if am is not None and af is not None else None
    return {"acc": r.num("accuracy"), "dg": dg, "ds": r.num("delta_s")}


def _mean(vals: list) -> float | None:
    vals = [v for v in vals if v is not None]
    return sum(vals) / len(vals) if vals else None


def _abs_mean(vals: list) -> float | None:
    return _mean([abs(v) if v is not None else None for v in vals])


def _mt_values(winomt: dict, geneval: dict, flores: dict) -> dict:
    """The MT family's values from per-language rows: the Table 3 averages (|ΔG| = mean of absolute gaps) and the
    per-language WinoMT accuracy."""
    out: dict[str, float | None] = {}
    if geneval:
        g = list(geneval.values())
        out.update(
            {
                "geneval_e_acc": _mean([x["explicit_accuracy"] for x in g]),
                "geneval_acc": _mean([x["accuracy"] for x in g]),
                "geneval_abs_edg": _abs_mean([x["explicit_delta_g"] for x in g]),
                "geneval_abs_dg": _abs_mean([x["delta_g"] for x in g]),
                "geneval_chrfpp": _mean([x["chrfpp"] for x in g]),
            }
        )
    if flores:
        f = list(flores.values())
        if any(x.get("bleu_star") is not None for x in f):  # a language scored with another SentencePiece model
            out["bleu_star"] = _mean([x["bleu"] if x["bleu"] is not None else x.get("bleu_star") for x in f])
        else:
            out["bleu"] = _mean([x["bleu"] for x in f])
        out["chrfpp"] = _mean([x["chrfpp"] for x in f])
    if winomt:
        w = list(winomt.values())
        out.update(
            {
                "winomt_acc": _mean([x["acc"] for x in w]),
                "winomt_abs_dg": _abs_mean([x["dg"] for x in w]),
                "winomt_abs_ds": _abs_mean([x["ds"] for x in w]),
            }
        )
        if len(winomt) > 1:
            out.update({f"winomt_acc:{lang}": x["acc"] for lang, x in winomt.items()})
    return _drop_none(out)


def _geneval_row(r: _Reader) -> dict:
    return {k: r.num(k) for k in ("explicit_accuracy", "accuracy", "explicit_delta_g", "delta_g", "chrfpp")}


def _flores_row(r: _Reader) -> dict:
    """spBLEU (official FLORES-200 SentencePiece model) as ``bleu``; BLEU with any other model as ``bleu_star``
    (shown as "spBLEU*": not comparable with published spBLEU)."""
    return {"bleu": r.num("spbleu"), "bleu_star": r.num("bleu_spm_nonstandard"), "chrfpp": r.num("chrfpp")}


_MT_AVERAGES = {
    "geneval": (
        ("explicit_accuracy", "geneval_e_acc"),
        ("accuracy", "geneval_acc"),
        ("abs_explicit_delta_g", "geneval_abs_edg"),
        ("abs_delta_g", "geneval_abs_dg"),
        ("chrfpp", "geneval_chrfpp"),
    ),
    "flores": (("spbleu", "bleu"), ("chrfpp", "chrfpp")),
    "winomt": (("accuracy", "winomt_acc"), ("abs_delta_g_acc", "winomt_abs_dg"), ("abs_delta_s", "winomt_abs_ds")),
}


def _read_mt_bias(r: _Reader, name: str) -> list[Run]:
    from fairmt.eval.mtbias import run_signatures

    parts = {b: r.at(b) for b in ("winomt", "geneval", "flores")}
    langs = {b: [k for k in s.data if len(k) <= 3] for b, s in parts.items()}
    winomt = {x: _mt_winomt_row(parts["winomt"].at(x)) for x in langs["winomt"]}
    geneval = {x: _geneval_row(parts["geneval"].at(x)) for x in langs["geneval"]}
    flores = {x: _flores_row(parts["flores"].at(x)) for x in langs["flores"]}
    settings = r.at("settings").data
    values = _mt_values(winomt, geneval, flores)
    for bench, keys in _MT_AVERAGES.items():  # the file's own averages (Table 3's) where it has them
        avg = parts[bench].at("average")
        for src, key in keys:
            if bench == "winomt" and key == "winomt_abs_dg" and avg.get("abs_delta_g_f1") is not None:
                src = "abs_delta_g"  # a current file: delta_g is the accuracy gap (an older one: abs_delta_g_acc)
            if key == "bleu" and ("bleu_star" in values or avg.get("bleu_spm_nonstandard") is not None):
                continue  # the official languages' mean alone would hide the others: spBLEU* from the languages
            if avg.get(src) is not None:
                values[key] = avg.num(src)
        if bench == "flores" and "bleu_star" not in values and avg.get("bleu_spm_nonstandard") is not None:
            values["bleu_star"] = avg.num("bleu_spm_nonstandard")  # averages without per-language rows
    degenerate = [parts[b].at(x).at("degenerate") for b in ("geneval", "flores") for x in langs[b]]
    degenerate = [d for d in degenerate if d.data]
    if degenerate:
        values["degenerate"] = sum(d.num("degenerate") or 0.0 for d in degenerate)
        settings = {**settings, "degenerate of": int(sum(d.num("n") or 0.0 for d in degenerate))}
    sigs = {k: v for k, v in run_signatures(r.data).items() if k != "settings:id_lang"}  # no in/out-domain column
    items = {k: v for b in parts for x in langs[b] for k, v in _items(parts[b].at(x), b, x).items()}
    return [
        Run(
            name,
            "mt",
            r.path,
            values,
            signatures=sigs,
            items=items,
            settings=_drop_none(
                {k: settings.get(k) for k in ("model", "compat", "split", "id_lang", "backend", "degenerate of")}
            ),
            method=settings.get("method"),
        )
    ]


def _per_language(r: _Reader) -> list[_Reader]:
    if "per_language" in r.data:
        rows = r.data["per_language"]
        if not isinstance(rows, list) or not all(isinstance(x, dict) for x in rows):
            raise FairmtError(f"{r.path}: 'per_language' must be a list of objects")
        return [_Reader(r.path, x, f"per_language.{i}.") for i, x in enumerate(rows)]
    return [r]


def _read_one_benchmark(r: _Reader, name: str, bench: str, read_row, setting: str) -> list[Run]:
    """A per-language result of one MT benchmark (``bench``: winomt or geneval) as one run: each row read by
    ``read_row``, its signature and the ``setting`` it was scored under (compat, split) kept."""
    scores, sigs, items = {}, {}, {}
    for row in _per_language(r):
        lang = row.text("lang") or "?"
        scores[lang] = read_row(row)
        items.update(_items(row, bench, lang))
        if row.get("signature"):
            sigs[f"{bench}:{lang}"] = strip_version(row.text("signature"))
        sigs[f"settings:{setting}"] = str(row.get(setting))
    sigs[f"languages:{bench}"] = ",".join(sorted(scores))
    values = _mt_values(scores, {}, {}) if bench == "winomt" else _mt_values({}, scores, {})
    return [Run(name, "mt", r.path, values, signatures=sigs, items=items)]


def _read_winomt(r: _Reader, name: str) -> list[Run]:
    return _read_one_benchmark(r, name, "winomt", _mt_winomt_row, "compat")


def _read_geneval(r: _Reader, name: str) -> list[Run]:
    return _read_one_benchmark(r, name, "geneval", _geneval_row, "split")


def _read_translation(r: _Reader, name: str) -> list[Run]:
    flores, sigs, items = {}, {}, {}
    for row in _per_language(r):
        pair = row.text("lang_pair") or "?"
        flores[pair] = _flores_row(row)
        items.update(_items(row, "flores", pair))
        for label, key in (("chrF++", "chrf_signature"), ("BLEU", "bleu_signature")):
            if row.get(key):
                sigs[f"flores:{pair}:{label}"] = strip_version(row.text(key))
    sigs["languages:flores"] = ",".join(sorted(flores))
    return [Run(name, "mt", r.path, _mt_values({}, {}, flores), signatures=sigs, items=items)]


def _gacl_values(r: _Reader, split: str) -> dict:
    s = r.at(split)
    dg = s.num("geneval_delta_g")
    return _drop_none(
        {
            "geneval_acc": s.num("geneval_accuracy"),
            "geneval_e_acc": s.num("geneval_explicit_accuracy"),
            "geneval_abs_dg": abs(dg) if dg is not None else None,
        }
    )


HELD_OUT = (("accuracy", "heldout_acc"), ("accuracy_anti", "heldout_anti"), ("chrf++", "heldout_chrfpp"))


def _held_out_values(h: _Reader) -> dict:
    """A tiny recipe's held-out gender scores (``held_out_gender.before``/``after``, :func:`fairmt.demo.score`) as
    the MT table's "Held-out demo sentences" measures: gender accuracy, |ΔG|, anti-stereotypical accuracy, chrF++."""
    out = {key: h.num(src) for src, key in HELD_OUT}
    dg = h.num("delta_g")
    out["heldout_abs_dg"] = abs(dg) if dg is not None else None
    return _drop_none(out)


def _held_out_signature(h: _Reader) -> dict[str, str]:
    return {"heldout": f"{h.text('set') or 'fairmt demo held-out sentences'}|n:{h.get('n')}"} if h.data else {}


def _read_gacl(r: _Reader, name: str) -> list[Run]:
    split = "test" if any(k.startswith("geneval_") for k in r.at("test").data) else "dev"
    g = r.at("geneval")
    sigs = {
        "settings:split": "dev" if split == "dev" else str(r.get("test_data.geneval_split")),
        "geneval:max_pairs": str(g.get("max_pairs")),
        "geneval:num_beams": str(g.get("num_beams")),
        "languages:geneval": str(g.get("lang")),
    }
    train = r.at("train").data
    items = _items(r.at("test_data"), "geneval", str(g.get("lang"))) if split == "test" else {}
    held = r.at("held_out_gender")
    sigs.update(_held_out_signature(held))
    values = {**_gacl_values(r, split), **_held_out_values(held.at("after"))}
    loss = r.at("dev").num("loss")
    if loss is not None:
        values["eval_loss"] = loss
    settings = _drop_none(
        {
            "model": r.get("model"),
            "seed": r.get("seed"),
            "split": split,
            **{k: train.get(k) for k in ("gacl_lambda", "kd_alpha", "temperature")},
        }
    )
    rows = []
    if held.at("before").data:  # the tiny recipe's untrained starting model, scored on the same sentences
        rows.append(
            Run(
                f"{name} (original)",
                "mt",
                r.path,
                _held_out_values(held.at("before")),
                signatures=sigs,
                method="original",
                group=name,
                settings=_drop_none({"model": r.get("model"), "measured": "before training"}),
            )
        )
    if not values:
        raise FairmtError(
            f"{r.path}: no held-out measure (neither 'held_out_gender', MT-GenEval 'test'/'dev' "
            "numbers nor 'dev.loss'): nothing to report"
        )
    rows.append(
        Run(name, "mt", r.path, values, signatures=sigs, method="gacl", items=items, group=name, settings=settings)
    )
    return rows


# ------------------------------------------------------------------------------------------------ classification
CLASSIFICATION_KEYS = (
    "accuracy",
    "f1",
    "macro_f1",
    "micro_f1",
    "auc",
    "gap",
    "delta_eo",
    "leakage_h",
    "leakage_yhat",
    "tradeoff",
)


def _classification_values(r: _Reader, per_class: _Reader | None = None) -> dict:
    out = {k: r.num(k) for k in CLASSIFICATION_KEYS if k in r.data}
    if per_class is not None:
        out.update({f"gap:{c}": per_class.num(c) for c in per_class.data})
    return _drop_none(out)


def eo_per_class(vals: dict, std: dict | None, convention: str | None, n_classes: float | None) -> None:
    """ΔEO on a scale a reader knows: the ``all`` convention sums |TPR_{a,y} − TPR_y| + |FPR_{a,y} − FPR_y| over
    every class (28 Bios classes: several hundred percentage points), so it is divided by the number of classes K
    (the mean per class; the ``positive`` convention is one class, K = 1). In place, on ``vals`` and ``std``."""
    if convention != "all" or not n_classes or n_classes <= 1:
        return
    for d in (vals, std or {}):
        if d.get("delta_eo") is not None:
            d["delta_eo"] = d["delta_eo"] / n_classes


def _classification_sigs(r: _Reader) -> dict:
    """The ΔEO convention, the positive class, and each part of the metric signature (``cls:gap``, ``cls:auc``,
    ``cls:leak`` ...; the convention parts ``eo``/``f1`` are the first two already)."""
    out = {"delta_eo": str(r.get("eo_classes") or "positive"), "positive_class": str(r.get("positive_class"))}
    for part in strip_version(r.text("signature") or "").split("|"):
        k, _, v = part.partition(":")
        if k and k not in ("eo", "f1"):
            out["cls:version" if k == "fairmt-cls" else f"cls:{k}"] = v
    return out


def _read_classification(r: _Reader, name: str) -> list[Run]:
    d = r.data
    vals = _classification_values(r, r.at("gap_by_class"))
    eo_per_class(vals, None, r.text("eo_classes"), r.num("n_classes"))
    return [
        Run(
            name,
            "classification",
            r.path,
            vals,
            scale=str(d.get("scale", "fraction")),
            signatures=_classification_sigs(r),
            settings=_drop_none(
                {
                    "n": d.get("n"),
                    "classes": d.get("n_classes"),
                    "groups": d.get("n_groups"),
                    "leakage": d.get("leakage_protocol"),
                }
            ),
        )
    ]


def _read_classification_results(r: _Reader, name: str) -> list[Run]:
    test = r.at("test")
    if not test.data:
        raise FairmtError(f"{r.path}: no 'test' section (the recipe's test-set scores)")
    objective = r.text("objective")
    vals = _classification_values(test, r.at("test_full").at("gap_by_class"))
    eo_per_class(
        vals, None, test.text("eo_classes") or r.at("test_full").text("eo_classes"), r.at("test_full").num("n_classes")
    )
    return [
        Run(
            name,
            "classification",
            r.path,
            vals,
            scale=str(test.get("scale") or "percent"),
            signatures=_classification_sigs(test),
            method=objective,
            settings=_drop_none(
                {
                    "objective": objective,
                    "dataset": r.get("dataset"),
                    "model": r.get("model"),
                    "seed": r.get("seed"),
                    "selection": r.get("selection"),
                }
            ),
        )
    ]


# ------------------------------------------------------------------------------------------------ embeddings (CCD)
def _embedding_block(b: _Reader) -> tuple[dict, dict]:
    """Values and signatures of one measurement: an ``eval embeddings`` JSON or a recipe's before/after block."""
    vals: dict[str, float | None] = {}
    sigs: dict[str, str] = {}
    seat = b.at("seat")
    if seat.data:
        nested = isinstance(seat.data.get("tests"), dict)  # eval embeddings: {tests, avg_abs_effect_size}
        tests = seat.at("tests") if nested else seat
        for t in tests.data:
            row = tests.at(t)
            vals[f"seat:{t}"] = row.num("effect_size")
            if row.get("signature"):
                sigs["seat"] = strip_version(row.text("signature"))
        flat = "seat_avg_abs_effect_size" if b.get("seat_avg_abs_effect_size") is not None else "seat_avg_abs"  # old
        vals["seat_avg_abs"] = seat.num("avg_abs_effect_size") if nested else b.num(flat)
    if b.get("seat_signature"):
        sigs["seat"] = strip_version(b.text("seat_signature"))
    for key, section, measure in (("cced_gap", "cced", "gap"), ("bias_ir_avg_dev", "bias_ir", "avg_dev")):
        s = b.at(section)
        if s.data:
            vals[key] = s.num(measure)
            if s.get("signature"):
                sigs[section] = strip_version(s.text("signature"))
    crows = b.at("crows")
    for v in crows.data:
        row = crows.at(v)
        vals[f"crows:{v}"] = row.at("overall").num("metric")
        if row.get("signature"):
            sigs[f"crows:{v}"] = strip_version(row.text("signature"))
    st = b.at("stereoset")
    if st.data:
        vals.update({f"stereoset_{k}": st.at("overall").num(k) for k in ("lms", "ss", "icat")})
        if st.get("signature"):
            sigs["stereoset"] = strip_version(st.text("signature"))
    return _drop_none(vals), sigs


def _read_embeddings(r: _Reader, name: str) -> list[Run]:
    vals, sigs = _embedding_block(r)
    if r.get("pooling"):
        sigs["pooling"] = r.text("pooling")
    return [
        Run(
            name,
            "embeddings",
            r.path,
            vals,
            scale="raw",
            signatures=sigs,
            settings=_drop_none({"model": r.get("model"), "suites": ",".join(map(str, r.data.get("suites") or []))}),
        )
    ]


def _read_stereoset(r: _Reader, name: str) -> list[Run]:
    vals = {f"stereoset_{k}": r.at("overall").num(k) for k in ("lms", "ss", "icat")}
    sigs = {"stereoset": strip_version(r.text("signature"))} if r.get("signature") else {}
    return [Run(name, "embeddings", r.path, _drop_none(vals), scale="raw", signatures=sigs)]


def _read_word_debias(r: _Reader, name: str) -> list[Run]:
    method = r.text("method") or Path(r.path).name.removesuffix("_results.json")  # <method>_results.json
    rows = []
    for when in ("before", "after"):
        block = r.at(when)
        if not block.data:
            continue
        vals, sigs = _embedding_block(block)
        if when == "after":
            for key, section in (
                ("utility_spearman", "utility.spearman_pairwise_cos"),
                ("utility_nn1", "utility.nn1_agreement"),
                ("glue_avg", "glue.avg"),
            ):
                if r.get(section) is not None:
                    vals[key] = r.num(section)
        rows.append(
            Run(
                f"{name} (before)" if when == "before" else name,
                "embeddings",
                r.path,
                vals,
                scale="raw",
                signatures=sigs,
                method=method if when == "after" else "original",
                group=name,
                settings=_drop_none({"method": method, "model": r.get("model"), "measured": when + " training"}),
            )
        )
    if not rows:
        raise FairmtError(f"{r.path}: neither a 'before' nor an 'after' section (the recipe's measurements)")
    return rows


# ------------------------------------------------------------------------------------------------ probes, sampling
PROBE_KEYS = ("accuracy", "f1", "auc_roc")
SUBGROUP_KEYS = ("cluster_dominance_ratio", "representation_entropy", "subgroup_separation_distance")


def _probe_values(p: _Reader, target: str) -> dict:
    out = {f"probe:{target}:{k}": p.num(k) for k in PROBE_KEYS}
    fair = p.at("fairness")
    if fair.data:
        out[f"probe:{target}:gap"] = fair.num("gap")
        out[f"probe:{target}:delta_eo"] = fair.num("delta_eo")
    return out


def _subgroup_values(s: _Reader) -> dict:
    return {k: s.num(k) for k in SUBGROUP_KEYS if k in s.data}


def _read_linear_probe(r: _Reader, name: str) -> list[Run]:
    target = r.text("target") or "target"
    vals = _probe_values(r, target)
    sub = r.at("subgroups")
    vals.update(_subgroup_values(sub))
    sigs = {"probe": strip_version(r.text("signature"))} if r.get("signature") else {}
    if sub.get("signature"):
        sigs["subgroups"] = strip_version(sub.text("signature"))
    return [
        Run(
            name,
            "probe",
            r.path,
            _drop_none(vals),
            scale=str(r.get("scale") or "fraction"),
            signatures=sigs,
            settings=_drop_none({"n_train": r.get("n_train"), "n_test": r.get("n_test")}),
        )
    ]


def _read_sampling(r: _Reader, name: str) -> list[Run]:
    objective = r.text("objective")
    rows = []
    stages = r.at("stages")
    for stage, label in (("stage1", f"{name} (stage 1, SimCLR)"), ("stage2", name)):
        block = stages.at(stage)
        if not block.data:
            continue
        sub = block.at("subgroups")
        vals = _subgroup_values(sub)
        sigs = {"subgroups": strip_version(sub.text("signature"))} if sub.get("signature") else {}
        probes = block.at("probe")
        for target in probes.data:
            p = probes.at(target)
            vals.update(_probe_values(p, target))
            if p.get("signature"):
                sigs["probe"] = strip_version(p.text("signature"))
        rows.append(
            Run(
                label,
                "probe",
                r.path,
                _drop_none(vals),
                scale="fraction",
                signatures=sigs,
                group=name,
                method=objective if stage == "stage2" else "simclr",
                settings=_drop_none(
                    {"objective": objective, "dataset": r.get("dataset"), "seed": r.get("seed"), "stage": stage}
                ),
            )
        )
    if not rows:
        raise FairmtError(f"{r.path}: no 'stages' (the recipe's stage-1 and stage-2 evaluations)")
    return rows


# ------------------------------------------------------------------------------------------------ sweeps
GREEK = {
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "lambda": "λ",
    "temperature": "τ",
    "tau": "τ",
    "rho": "ρ",
    "epsilon": "ε",
    "eps": "ε",
    "delta": "δ",
    "mu": "μ",
    "sigma": "σ",
    "lam": "λ",
}


def _greek(name: str) -> str:
    """``fcl_beta`` → ``β``, ``temperature`` → ``τ``, ``learning_rate`` → ``learning_rate``: a name whose last word is a
    Greek letter's is written as the letter (the papers' notation)."""
    words = name.split("_")
    return GREEK.get(words[-1].lower(), name)


def setting_label(overrides: dict[str, Any]) -> str:
    """``{"objective_args.fcl_beta": 0.1}`` → ``β=0.1``: each override by its last key, as a Greek letter where the
    name ends in one (two overrides that would read alike keep their names: ``fcl_alpha=1, kd_alpha=0.5``)."""
    lasts = [str(k).rsplit(".", 1)[-1] for k in overrides]
    short = [_greek(x) for x in lasts]
    names = [s if short.count(s) == 1 else x for s, x in zip(short, lasts)]
    parts = [f"{n}={v:g}" if isinstance(v, float) else f"{n}={v}" for n, v in zip(names, overrides.values())]
    return ", ".join(parts) or "(defaults)"


def _unflatten(flat: dict[str, Any]) -> dict:
    """``{"test.accuracy": 1}`` → ``{"test": {"accuracy": 1}}`` (a sweep's means are flat result names)."""
    out: dict = {}
    for key, v in flat.items():
        node = out
        *parents, last = str(key).split(".")
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            node[last] = v
    return out


OLD_SWEEP_FORMATS = {
    "classification": formats.CLASSIFICATION_RESULTS,
    "probe": formats.SAMPLING_RESULTS,
    "embeddings": formats.WORD_DEBIAS_RESULTS,
    "mt": formats.GACL_RESULTS,
}
"""The results format of a sweep.json written before it named its runs' (``results_format``), by the report table
:func:`_sweep_table` tells from the means' layout."""


def _sweep_table(mean: _Reader) -> str:
    """The report table of a sweep.json that does not name its runs' results format (written before it did), told
    by what their results hold: a test ``gap`` (classification), ``stages`` (fairness-driven sampling), a
    ``before``/``after`` measurement (embedding debiasing), else an MT run's ``dev``/``test``/``train``/
    ``held_out_gender``."""
    if "gap" in mean.at("test").data:
        return "classification"
    if mean.at("stages").data:
        return "probe"
    if mean.at("after").data or mean.at("before").data:
        return "embeddings"
    if any(mean.at(k).data for k in ("dev", "test", "train", "held_out_gender")):
        return "mt"
    raise FairmtError(
        f"{mean.path}: a sweep whose results fairmt report does not know (none of the recipes' "
        "measures: test.gap, stages, before/after, dev/test/train)"
    )


def _spread_row(read, std: _Reader) -> Run | None:
    """The standard deviations of a setting's trained-model row (the last row: ``after``, stage 2), read by the reader
    of its runs' results file, as its means are; None where a one-seed setting has none (all null), which the reader
    refuses as a run without any measure."""
    try:
        return read(std, "")[-1]
    except FairmtError:
        return None


def _sweep_signatures(r: _Reader, setting: dict, method: str) -> dict[str, str]:
    """The signatures of a sweep setting's numbers: those of its first run's results file, read from the sweep's
    folder (the runs' results are where ``fairmt sweep`` left them); none when the folder is not beside the file."""
    from fairmt.data.inputs import read_json

    runs = setting.get("runs") or []
    if not runs:
        return {}
    folder = Path(r.path).parent / str(runs[0]) / "run"
    found = sorted(folder.glob("*results.json")) if folder.is_dir() else []
    if not found:
        return {}
    data = read_json(str(found[0]), "run result", expect=dict)
    reader = READERS.get(data.get("format")) if isinstance(data.get("format"), str) else None
    if reader is None or reader is _read_sweep:
        return {}
    rows = reader(_Reader(str(found[0]), data), "run")
    return rows[-1].signatures  # the trained model's row (after / stage 2)


def _read_sweep(r: _Reader, name: str) -> list[Run]:
    d = r.data
    method = r.text("method") or "?"
    recipe = r.text("recipe") or ""
    label = name or Path(recipe).stem or method
    settings = d.get("settings")
    if not isinstance(settings, list) or not all(isinstance(s, dict) for s in settings):
        raise FairmtError(f"{r.path}: 'settings' must be a list of objects")
    rules = ((d.get("selection") or {}).get("checkpoint_rules") or {}) if isinstance(d.get("selection"), dict) else {}
    rows = []
    for i, s in enumerate(settings):
        if not s.get("n"):
            continue
        rule = next((k for k, v in rules.items() if Path(str(s.get("folder", ""))).name in v), None)
        here = _Reader(r.path, s, f"settings.{i}.")
        mean = _Reader(r.path, _unflatten(here.at("mean").data), f"settings.{i}.mean.")
        std = _Reader(r.path, _unflatten(here.at("std").data), f"settings.{i}.std.")
        fmt = r.text("results_format") or OLD_SWEEP_FORMATS[_sweep_table(mean)]
        read = READERS.get(fmt)
        if read is None or read is _read_sweep:
            raise FairmtError(f"{r.path}: results_format {fmt!r} is not a results format fairmt report reads")
        row, spread = read(mean, "")[-1], _spread_row(read, std)
        fam, scale = row.family, row.scale
        vals, sd = dict(row.values), dict(spread.values) if spread else {}
        overrides = here.at("overrides").data
        sigs = _sweep_signatures(r, s, method)
        if fam == "classification":
            eo_per_class(vals, sd, sigs.get("delta_eo"), mean.at("test_full").num("n_classes"))
        rows.append(
            Run(
                f"{label} {setting_label(overrides)}",
                fam,
                r.path,
                _drop_none(vals),
                std=sd,
                n=int(s.get("n") or 1),
                scale=scale,
                method=method,
                group=label,
                setting=overrides,
                seeds=list(s.get("seeds") or []),
                signatures=sigs,
                settings={
                    "recipe": recipe,
                    "setting": s.get("id"),
                    **{str(k): v for k, v in overrides.items()},
                    "seeds": ",".join(map(str, s.get("seeds") or [])),
                    "fixed overrides": " ".join(map(str, d.get("overrides") or [])),
                    **({"selection": rule} if rule else {}),
                },
            )
        )
    if not rows:
        raise FairmtError(f"{r.path}: no finished setting (every setting has n = 0)")
    if rows[0].family == "mt":  # a tiny recipe's starting model, the same for every setting (its scores are cached)
        first = next(i for i, s in enumerate(settings) if s.get("n"))
        before = (
            _Reader(r.path, _unflatten(_Reader(r.path, settings[first]).at("mean").data), f"settings.{first}.mean.")
            .at("held_out_gender")
            .at("before")
        )
        if _held_out_values(before):
            rows.insert(
                0,
                Run(
                    f"{label} (original)",
                    "mt",
                    r.path,
                    _held_out_values(before),
                    method="original",
                    group=label,
                    signatures=rows[0].signatures,
                    settings={"recipe": recipe, "measured": "before training"},
                ),
            )
    aucs = {
        k: v["auc"]
        for k, v in (d.get("front_auc") or {}).items()
        if isinstance(v, dict) and isinstance(v.get("auc"), (int, float))
    }
    if aucs:  # fairlib's auc_performance_fairness_tradeoff of the sweep, as `fairmt sweep` computed it
        rows[0].notes.append(
            f"{label}: area under the performance–fairness front (fairlib's AUC of (performance, "
            "1 − gap) as fractions; a summary of the sweep, not used to select): "
            + ", ".join(f"{k} {v:.4f}" for k, v in aucs.items())
        )
    return rows


READERS = {
    formats.WINOMT: _read_winomt,
    formats.GENEVAL: _read_geneval,
    formats.TRANSLATION: _read_translation,
    formats.EMBEDDINGS: _read_embeddings,
    formats.STEREOSET: _read_stereoset,
    formats.CLASSIFICATION: _read_classification,
    formats.LINEAR_PROBE: _read_linear_probe,
    formats.GACL_RESULTS: _read_gacl,
    formats.WORD_DEBIAS_RESULTS: _read_word_debias,
    formats.CLASSIFICATION_RESULTS: _read_classification_results,
    formats.SAMPLING_RESULTS: _read_sampling,
    formats.SWEEP: _read_sweep,
}


def read_runs(path: str | Path, name: str | None = None) -> list[Run]:
    """The rows of one result file (a folder holding a ``sweep.json`` or a single ``*results.json`` is read through
    it); refused in one line when its ``format`` is missing or unknown, or a value has the wrong type."""
    from fairmt.data.inputs import read_json

    p = Path(path)
    if p.is_dir():
        found = [p / "sweep.json"] if (p / "sweep.json").is_file() else sorted(p.glob("*results.json"))
        if len(found) != 1:
            raise FairmtError(
                f"{p}: a folder must hold a sweep.json or one *results.json (found {len(found)}); name the file"
            )
        p = found[0]
    data = read_json(str(p), "fairmt result", expect=dict)
    fmt = data.get("format")
    r = _Reader(str(p), data)
    default = name or ""
    if fmt == formats.MT_BIAS and not isinstance(fmt, bool) and any(k in data for k in ("winomt", "geneval", "flores")):
        return _read_mt_bias(r, default or (data.get("settings") or {}).get("name") or p.stem)
    reader = READERS.get(fmt) if isinstance(fmt, str) else None
    if reader is None:
        what = "declares no 'format'" if fmt is None else f"declares format {fmt!r}, which this fairmt does not read"
        raise FairmtError(
            f"{p}: {what}; fairmt report reads the JSON of fairmt eval mt-bias/winomt/geneval/flores/"
            "embeddings/stereoset/classification/linear-probe, the recipes' results and sweep.json "
            "(a file written by an older fairmt: score or aggregate it again)"
        )
    if reader is _read_sweep:
        return reader(r, name or "")
    return reader(r, default or _default_name(p, data))


def _default_name(p: Path, data: dict) -> str:
    """A run's name when none is given: its method/objective and folder for recipe results, else the file stem."""
    stem = p.stem
    if stem in ("results", f"{data.get('method')}_results") and p.parent.name:  # a run folder's file: its folder
        stem = p.parent.name if p.parent.name not in ("run", ".") else p.parent.parent.name or p.parent.name
    for key in ("objective", "method"):
        if isinstance(data.get(key), str) and data[key] not in stem:
            return f"{data[key]} ({stem})"
    return stem


def distinct_default_names(inputs: list[list[Run]]) -> None:
    """The rows of several inputs (one list per file given, in order) named by default (no ``--names``): where rows
    of different inputs share a name, each gets the part of its path that tells its file from the others'
    (``gacl (seed-0) [s1]``, ``… [s2]`` for a sweep's ``trials/*/seed-0/run/results.json``; ``mtb [de.json]``,
    ``mtb [es.json]`` for two files of one folder with one ``settings.name``), and a file given twice is numbered
    (``[a.json #1]``, ``[a.json #2]``): two inputs are never averaged into one row unless ``--names`` says so."""
    by_name: dict[str, list[int]] = {}
    for i, rows in enumerate(inputs):
        for r in rows:
            if i not in by_name.setdefault(r.name, []):
                by_name[r.name].append(i)
    for name, held in by_name.items():
        if len(held) < 2:
            continue
        parts = {i: Path(inputs[i][0].source).resolve().parts for i in held}
        distinct = len(set(parts.values()))
        depth = max(len(p) for p in parts.values())
        # the shortest tail of the paths (folders and file name) that tells the files apart
        k = next((k for k in range(1, depth + 1) if len({p[-k:] for p in parts.values()}) == distinct), depth)
        tails = {i: p[-k:] for i, p in parts.items()}
        common = 0  # the end the tails share (seed-0/run/results.json) says nothing: the parts before it label them
        while common < k - 1 and len({t[len(t) - 1 - common] for t in tails.values() if len(t) > common}) == 1:
            common += 1
        for i in held:
            t = tails[i]
            label = "/".join(t[: len(t) - common]) or Path(inputs[i][0].source).name
            same = [j for j in held if parts[j] == parts[i]]
            if len(same) > 1:  # one file given twice (or under two spellings of its path)
                label += f" #{same.index(i) + 1}"
            for r in inputs[i]:
                if r.name == name:
                    r.name = f"{name} [{label}]"


CITED = tuple(METHOD_PAPERS)
"""The methods whose paper a model card cites (:data:`fairmt.citations.METHOD_PAPERS`)."""


def run_method(data: dict) -> str | None:
    """The training method an eval result or a ``sweep.json`` says it comes from, as a model card names it (a
    recipe's results: its family's :meth:`fairmt.recipes.Family.cited_method`, which ``fairmt push`` asks), or None
    when it says none of the methods of :data:`CITED`."""
    fmt = data.get("format")
    if fmt == formats.SWEEP:
        method = str(data.get("method") or "")
        return method if method in CITED else None
    if fmt == formats.MT_BIAS and isinstance(data.get("settings"), dict):
        method = str(data["settings"].get("method") or "")
        return method if method in CITED else None
    return None
