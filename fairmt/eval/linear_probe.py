"""Linear-probe evaluation of frozen embeddings (Martin & Ogbuokiri, §4.2.2; the standard self-supervised protocol
of Chen et al., 2020): a logistic regression on a seeded random 80/20 split of the embeddings.

:func:`linear_probe` reports, on the held-out 20 %:

* accuracy, **positive-class F1** (label 1; scikit-learn's ``f1_score``) and **AUC-ROC** (``roc_auc_score`` on the
  predicted probability of label 1) — the paper's Table 2 columns. A task with more than two classes gets macro-F1
  and one-vs-rest macro AUC, marked in the signature;
* when ``groups`` (a protected attribute, never seen by the probe) are given, the group-fairness scores of the
  probe's predictions (:func:`fairmt.eval.classification.classification_metrics`: GAP, ΔEO, ...);
* the three latent-subgroup measures of the embedding space (:func:`fairmt.eval.classification.latent_subgroup_metrics`:
  cluster dominance ratio, representation entropy, subgroup separation distance) on ``subgroup_embeddings``
  (default: the probed embeddings), K-means with ``n_clusters`` (4) unless ``cluster_labels`` are given.

Settings: ``standardize`` (z-scoring with the training part's mean/std, default on), ``C`` (inverse L2 strength, 1),
L-BFGS with ``max_iter`` iterations. The paper reports "a learning rate of 0.0001" for its classifiers, which has no
counterpart in L-BFGS logistic regression; the signature records what was run.

Rows whose label is negative (``-1``: e.g. CheXpert's uncertain labels under U-Ignore) are left out of the probe.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence
from typing import Any, Literal, overload

import numpy as np

from fairmt.errors import FairmtError

PROBE_VERSION = "1"


@dataclasses.dataclass
class LinearProbeResult:
    """Probe scores (fractions), sizes, optional fairness and latent-subgroup results and the settings' signature."""

    target: str
    n_train: int
    n_test: int
    n_classes: int
    accuracy: float
    f1: float
    auc_roc: float
    positive_rate_test: float | None
    fairness: dict[str, Any] | None = None
    subgroups: dict[str, Any] | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    signature: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; scores are fractions (``scale``), as in the paper's Table 2, not percent."""
        return {**dataclasses.asdict(self), "scale": "fraction"}

    def summary(self) -> dict[str, Any]:
        """The headline numbers (fractions, 4 decimals as in the paper's tables)."""
        out = {
            "target": self.target,
            "accuracy": round(self.accuracy, 4),
            "f1": round(self.f1, 4),
            "auc_roc": round(self.auc_roc, 4) if math.isfinite(self.auc_roc) else None,
        }
        if self.fairness:
            out.update({"gap": round(self.fairness["gap"], 4), "delta_eo": round(self.fairness["delta_eo"], 4)})
        if self.subgroups:
            s = self.subgroups
            out.update(
                {
                    "cluster_dominance_ratio": round(s["cluster_dominance_ratio"], 4),
                    "representation_entropy": round(s["representation_entropy"], 4),
                    "subgroup_separation_distance": round(s["subgroup_separation_distance"], 4),
                }
            )
        return out


def group_fairness(
    labels: Any, preds: Any, groups: Any, classes: Sequence[int], seed: int = 0
) -> dict[str, Any] | None:
    """GAP, ΔEO and the per-group rates of a probe's test predictions over one protected attribute (rows without a
    group — a negative id or NaN: unknown — left out and counted in ``n_without_group``); ``None`` with fewer than
    two known groups."""
    from fairmt.eval.classification import classification_metrics

    y, p, g = (np.asarray(a).reshape(-1) for a in (labels, preds, groups))
    ok = rows_with_group(g)
    if not ok.any() or len(np.unique(g[ok])) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = classification_metrics(
            y[ok].tolist(), p[ok].tolist(), g[ok].tolist(), classes=list(classes), leakage_yhat=False, seed=seed
        )
    return {
        "gap": r.gap,
        "delta_eo": r.delta_eo,
        "delta_tpr": r.delta_tpr,
        "delta_fpr": r.delta_fpr,
        "tpr": r.tpr,
        "fpr": r.fpr,
        "n": r.n,
        "n_without_group": int((~ok).sum()),
        "signature": r.signature,
    }


def rows_with_group(groups: Any) -> np.ndarray:
    """Which rows have a group: a non-negative id (a negative one or NaN marks a row whose group is unknown)."""
    g = np.asarray(groups).reshape(-1)
    if g.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            return np.isfinite(g) & (g >= 0)
    return g >= 0


def probe_split(n: int, test_fraction: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Indices of a seeded random train/test split (scikit-learn ``train_test_split``, not stratified: "a simple
    80-20 train/test split")."""
    from sklearn.model_selection import train_test_split

    if not 0 < test_fraction < 1:
        raise FairmtError(f"test_fraction must lie in (0, 1), got {test_fraction}")
    idx = np.arange(n)
    train, test = train_test_split(idx, test_size=test_fraction, random_state=seed, shuffle=True)
    return np.sort(train), np.sort(test)


@overload
def linear_probe(
    embeddings: Any,
    labels: Sequence[int],
    *,
    target: str = "label",
    groups: Sequence[int] | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    standardize: bool = True,
    C: float = 1.0,
    max_iter: int = 1000,
    subgroup_embeddings: Any = None,
    cluster_labels: Sequence[int] | None = None,
    n_clusters: int | None = 4,
    return_predictions: Literal[False] = False,
    optimizer: str = "lbfgs",
    learning_rate: float = 1e-4,
    epochs: int = 100,
) -> LinearProbeResult: ...


@overload
def linear_probe(
    embeddings: Any,
    labels: Sequence[int],
    *,
    target: str = "label",
    groups: Sequence[int] | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    standardize: bool = True,
    C: float = 1.0,
    max_iter: int = 1000,
    subgroup_embeddings: Any = None,
    cluster_labels: Sequence[int] | None = None,
    n_clusters: int | None = 4,
    return_predictions: Literal[True],
    optimizer: str = "lbfgs",
    learning_rate: float = 1e-4,
    epochs: int = 100,
) -> tuple[LinearProbeResult, dict[str, np.ndarray]]: ...


def linear_probe(
    embeddings: Any,
    labels: Sequence[int],
    *,
    target: str = "label",
    groups: Sequence[int] | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    standardize: bool = True,
    C: float = 1.0,
    max_iter: int = 1000,
    subgroup_embeddings: Any = None,
    cluster_labels: Sequence[int] | None = None,
    n_clusters: int | None = 4,
    return_predictions: bool = False,
    optimizer: str = "lbfgs",
    learning_rate: float = 1e-4,
    epochs: int = 100,
) -> LinearProbeResult | tuple[LinearProbeResult, dict[str, np.ndarray]]:
    """Train and score a logistic-regression probe on frozen ``embeddings`` (see the module docstring).

    ``optimizer="lbfgs"`` fits the L2-regularised logistic regression to convergence (``C``, ``max_iter``);
    ``"sgd"`` is a gradient probe (Martin & Ogbuokiri: "a learning rate of 0.0001"): scikit-learn's
    ``SGDClassifier`` on the log loss at the constant ``learning_rate`` for exactly ``epochs`` passes (L2 strength
    ``1/(C·n_train)``), which may stop far from the optimum as a short gradient run does.

    ``n_clusters=None`` skips the latent-subgroup measures. With ``return_predictions`` also returns the test rows'
    ``index``, ``label``, ``pred`` and ``proba`` (and ``group``).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

    X = np.asarray(embeddings, dtype=np.float64)
    y = np.asarray(labels).reshape(-1)
    if X.ndim != 2 or len(X) != len(y) or len(X) == 0:
        raise FairmtError(f"linear probe: embeddings must be (n, d) with one label per row; got {X.shape} and {len(y)}")
    if not np.issubdtype(y.dtype, np.integer):
        raise FairmtError(f"linear probe: labels must be integers (0/1 for a binary target), got {y.dtype}")
    if not np.isfinite(X).all():
        raise FairmtError("linear probe: the embeddings hold NaN or infinite values")
    g = None if groups is None else np.asarray(groups).reshape(-1)
    if g is not None and len(g) != len(y):
        raise FairmtError(f"linear probe: {len(g)} groups for {len(y)} labels")
    notes: list[str] = []
    keep = np.flatnonzero(y >= 0)
    if len(keep) < len(y):
        notes.append(f"{len(y) - len(keep)} rows with a negative label (unusable for this target) left out")
    classes = np.unique(y[keep])
    if len(classes) < 2:
        raise FairmtError(f"linear probe on {target!r}: only one class ({classes.tolist()}) among the usable labels")
    tr, te = probe_split(len(keep), test_fraction, seed)
    tr, te = keep[tr], keep[te]
    Xtr, Xte = X[tr], X[te]
    if standardize:
        mu, sd = Xtr.mean(0), Xtr.std(0)
        sd[sd == 0] = 1.0
        Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    if len(np.unique(y[tr])) < 2:
        raise FairmtError(f"linear probe on {target!r}: the training part holds one class only")
    if optimizer not in ("lbfgs", "sgd"):
        raise FairmtError(f"linear probe: optimizer must be lbfgs or sgd, got {optimizer!r}")
    if optimizer == "sgd":
        from sklearn.linear_model import SGDClassifier

        clf = SGDClassifier(
            loss="log_loss",
            learning_rate="constant",
            eta0=learning_rate,
            max_iter=epochs,
            tol=None,
            alpha=1.0 / (C * len(tr)),
            random_state=seed,
        )
    else:
        clf = LogisticRegression(C=C, max_iter=max_iter, random_state=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(Xtr, y[tr])
    if optimizer == "lbfgs" and any("converge" in str(w.message).lower() for w in caught):
        notes.append(f"L-BFGS did not converge in {max_iter} iterations; raise max_iter")
    pred = clf.predict(Xte)
    proba = clf.predict_proba(Xte)
    binary = len(classes) == 2 and set(classes.tolist()) <= {0, 1}
    acc = float(accuracy_score(y[te], pred))
    if binary:
        f1 = float(f1_score(y[te], pred, pos_label=1, zero_division=0))
        pos = proba[:, list(clf.classes_).index(1)]
        auc = float(roc_auc_score(y[te], pos)) if len(np.unique(y[te])) == 2 else math.nan
        rate = float((y[te] == 1).mean())
    else:
        f1 = float(f1_score(y[te], pred, average="macro", zero_division=0))
        try:
            auc = float(roc_auc_score(y[te], proba, multi_class="ovr", average="macro", labels=clf.classes_))
        except ValueError:
            auc = math.nan
        rate = None
    if not math.isfinite(auc):
        notes.append("AUC-ROC undefined: the test part holds one class only")
    fairness = None
    if g is not None:
        fairness = group_fairness(y[te], pred, g[te], clf.classes_.tolist(), seed)
        missing = int((~rows_with_group(g[te])).sum())
        if fairness is None:
            notes.append(
                "fairness not scored: fewer than two known groups in the test part"
                + (f" ({missing} of {len(te)} test rows without a group: a negative id or NaN)" if missing else "")
            )
        elif missing:
            notes.append(
                f"{missing} of {len(te)} test rows without a group (a negative id or NaN) left out of the "
                "fairness scores"
            )
    subgroups = None
    if n_clusters is not None:
        from fairmt.eval.classification import latent_subgroup_metrics

        S = X if subgroup_embeddings is None else np.asarray(subgroup_embeddings, dtype=np.float64)
        if len(S) != len(X):
            raise FairmtError(f"subgroup_embeddings has {len(S)} rows for {len(X)} embeddings")
        subgroups = latent_subgroup_metrics(
            S, cluster_labels=cluster_labels, n_clusters=n_clusters, seed=seed
        ).to_dict()
    kind = "binary:f1-pos1:auc-proba1" if binary else "multiclass:f1-macro:auc-ovr-macro"
    sig = (
        f"fairmt-linear-probe:v{PROBE_VERSION}|split:random-{1 - test_fraction:g}/{test_fraction:g}:seed{seed}"
        + (
            f"|logreg:lbfgs:C{C:g}:iter{max_iter}"
            if optimizer == "lbfgs"
            else f"|logreg:sgd:lr{learning_rate:g}:epochs{epochs}:C{C:g}"
        )
        + f"|std:{'yes' if standardize else 'no'}|{kind}"
    )
    result = LinearProbeResult(
        target=target,
        n_train=int(len(tr)),
        n_test=int(len(te)),
        n_classes=int(len(classes)),
        accuracy=acc,
        f1=f1,
        auc_roc=auc,
        positive_rate_test=rate,
        fairness=fairness,
        subgroups=subgroups,
        warnings=notes,
        signature=sig,
    )
    if not return_predictions:
        return result
    preds = {"index": te, "label": y[te], "pred": pred, "proba": proba}
    if g is not None:
        preds["group"] = g[te]
    return result, preds
