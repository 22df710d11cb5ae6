"""WinoMT metrics from gold and predicted genders (all figures in percent, as the WinoMT paper reports them).

- accuracy: correct / all lines, neutral gold lines included, an "unknown" prediction counts as wrong;
- per gender g ∈ {male, female}: precision = correct_g / predicted_g, recall = correct_g / gold_g, F1;
- ΔG = Acc_male − Acc_female, the GACL paper's definition (Lee et al., 2024, §4.2: "ΔG = Acc_male − Acc_female
  measures the difference in accuracy of male sentences and female sentences"), fairmt's one ΔG everywhere (tables,
  JSON ``delta_g``, report, model card). On WinoMT, Acc_g is the share of gold-g lines predicted g, i.e. the recall of
  g, so ΔG equals ΔR;
- ΔG_F1 = F1(male) − F1(female) (JSON ``delta_g_f1``), what the 2019 evaluator (Stanovsky et al.) prints as "ΔG" and
  the published 2019 tables report; ΔR = recall(male) − recall(female);
- ΔS = accuracy(pro-stereotypical lines) − accuracy(anti-stereotypical lines), when the lines are marked.

``compat="acl2019"`` reproduces the 2019 evaluator (mt_gender ``evaluate_bias``) exactly: accuracy, precision
and recall are each rounded to one decimal, F1 is computed from the rounded precision and recall and rounded
again, so ΔG is a difference of rounded numbers. The default mode (``compat=None``) keeps full precision (F1
from exact precision and recall, nothing rounded) and defines a metric whose denominator is zero as 0.0 instead
of failing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fairmt.errors import FairmtError
from fairmt.eval.winomt.io import Gender

GENDERS = (Gender.male, Gender.female, Gender.neutral, Gender.unknown)
COMPAT_MODES = (None, "acl2019")


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if (p + r) else 0.0


def _pct(num: int, den: int, compat: str | None, what: str) -> float:
    if den == 0:
        if compat == "acl2019":  # the 2019 evaluator divides by zero here
            raise FairmtError(f"cannot compute {what}: its denominator is 0 (the 2019 evaluator fails here too)")
        return 0.0
    v = 100.0 * num / den
    return round(v, 1) if compat == "acl2019" else v


@dataclass
class GenderScores:
    """Accuracy, per-gender precision/recall/F1 and the gaps, for one set of lines."""

    accuracy: float
    precision_male: float
    recall_male: float
    f1_male: float
    precision_female: float
    recall_female: float
    f1_female: float
    delta_g: float  # Acc_male − Acc_female (the GACL paper's ΔG; = ΔR on WinoMT)
    delta_r: float
    n: int
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    delta_g_f1: float = 0.0  # F1_male − F1_female (the 2019 evaluator's "ΔG")


def confusion_matrix(gold: Sequence[Gender], pred: Sequence[Gender]) -> dict[str, dict[str, int]]:
    """``confusion[gold][pred]`` counts over the four labels (string keys, for JSON)."""
    if len(gold) != len(pred):
        raise FairmtError(f"{len(gold)} gold labels but {len(pred)} predictions")
    out = {g.value: {p.value: 0 for p in GENDERS} for g in GENDERS}
    for g, p in zip(gold, pred):
        out[Gender(g).value][Gender(p).value] += 1
    return out


def score(gold: Sequence[Gender], pred: Sequence[Gender], compat: str | None = None) -> GenderScores:
    """Accuracy, precision/recall/F1 per gender, ΔG and ΔR (see the module docstring for ``compat``)."""
    if compat not in COMPAT_MODES:
        raise FairmtError(f"unknown compat mode '{compat}': use acl2019 or nothing")
    if not gold:
        raise FairmtError("no lines to score")
    conf = confusion_matrix(gold, pred)
    n = len(gold)
    correct = {g: conf[g.value][g.value] for g in GENDERS}
    gold_tot = {g: sum(conf[g.value].values()) for g in GENDERS}
    pred_tot = {g: sum(conf[x.value][g.value] for x in GENDERS) for g in GENDERS}
    acc = _pct(sum(correct.values()), n, compat, "accuracy")
    out = {}
    for g in (Gender.male, Gender.female):
        r = _pct(correct[g], gold_tot[g], compat, f"recall({g.value})")
        p = _pct(correct[g], pred_tot[g], compat, f"precision({g.value})")
        f = _f1(p, r)
        out[g] = (p, r, round(f, 1) if compat == "acl2019" else f)
    (pm, rm, fm), (pf, rf, ff) = out[Gender.male], out[Gender.female]
    dg_f1, dr = fm - ff, rm - rf
    if compat == "acl2019":
        dg_f1, dr = round(dg_f1, 1), round(dr, 1)
    return GenderScores(acc, pm, rm, fm, pf, rf, ff, dr, dr, n, conf, delta_g_f1=dg_f1)


def stereotype_gap(
    gold: Sequence[Gender], pred: Sequence[Gender], stereotype: Sequence[str | None], compat: str | None = None
) -> tuple[float | None, float | None, float | None]:
    """``(acc_pro, acc_anti, ΔS)`` over lines marked ``"pro"`` / ``"anti"`` (others ignored); None if unmarked."""
    pro = [(g, p) for g, p, s in zip(gold, pred, stereotype) if s == "pro"]
    anti = [(g, p) for g, p, s in zip(gold, pred, stereotype) if s == "anti"]
    if not pro or not anti:
        return None, None, None
    a_pro = _pct(sum(g == p for g, p in pro), len(pro), compat, "accuracy(pro)")
    a_anti = _pct(sum(g == p for g, p in anti), len(anti), compat, "accuracy(anti)")
    ds = a_pro - a_anti
    return a_pro, a_anti, round(ds, 1) if compat == "acl2019" else ds
