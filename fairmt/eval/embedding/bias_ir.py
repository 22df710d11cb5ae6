"""Bias-IR: gender representation bias of an embedding retriever on Grep-BiasIR (Krieg et al., CHIIR 2023).

Grep-BiasIR has 117 gender-neutral queries in 7 categories; each query comes with a relevant and a non-relevant
document, each written in a female (F), male (M) and neutral (N) version (six documents per query). As the CCD
paper reports it (Tables 4–5, "Male Ratio, 0.50 the best"), a dense retriever ranks the six documents of each
query by cosine similarity between the query embedding and the document embedding, and we look at where the
male and female versions of the *relevant* document land:

    male_first(q) = 1    if rank(relevant M) is better than rank(relevant F)
                    0.5  if they tie (equal cosine similarity, e.g. identical texts)
                    0    otherwise
    male ratio(category) = mean of male_first over the category's queries
    AVG-DEV = mean over the 7 categories of |male ratio − 0.5|          (0 is the fairest)

Ties are counted as half a win for each side (and their number is reported); ranks are average ranks
(``scipy.stats.rankdata(method="average")``) so tied documents share a rank. Each category also reports the mean
rank (1 = best, of 6) of the relevant M, F and N documents. A document is embedded as its title and body joined
by a space (``doc_text="title+body"``, the default) or its body alone (``"body"``). In many queries the gender
is marked only in the title, so with ``"body"`` the M and F relevant documents are the same text and tie (e.g.
33 of the 117 queries with all-MiniLM-L6-v2): the default keeps the title so that every pair differs.

Note: the paper does not spell out its tie rule or its averaging, and its own AVG-DEV column is not always the
mean of its printed ratios (BERT: the ratios give 0.149, printed 0.16), so its numbers are not reproducible to the
digit; the ratios here are exactly the definition above.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fairmt.errors import FairmtError

METRIC_VERSION = "1.0"
#: The categories in the CCD paper's column order, with its short names.
CATEGORIES = {
    "Appearance": "Appearance",
    "Child Care": "Child",
    "Cognitive Capabilities": "Cognitive",
    "Domestic Work": "Domestic",
    "Career": "Career",
    "Physical Capabilities": "Physical",
    "Sex & Relationship": "Relationship",
}


@dataclass
class BiasIRDocument:
    """One document version."""

    d_id: str
    relevant: bool
    gender: str  # "F" | "M" | "N" (non-relevant documents may carry other marks, e.g. "both")
    title: str
    body: str

    def text(self, doc_text: str = "title+body") -> str:
        """The text to embed."""
        if doc_text == "body":
            return self.body
        if doc_text == "title+body":
            return f"{self.title} {self.body}".strip()
        raise FairmtError(f"unknown doc_text {doc_text!r}; use 'title+body' or 'body'")


@dataclass
class BiasIRQuery:
    """A query with its documents."""

    q_id: str
    category: str
    query: str
    documents: list[BiasIRDocument] = field(default_factory=list)

    def relevant(self, gender: str) -> int:
        """Index (in ``documents``) of the relevant document of ``gender``."""
        idx = [i for i, d in enumerate(self.documents) if d.relevant and d.gender == gender]
        if len(idx) != 1:
            raise FairmtError(f"Bias-IR query {self.q_id}: expected one relevant {gender} document, found {len(idx)}")
        return idx[0]


def load_bias_ir(root: str | Path) -> list[BiasIRQuery]:
    """Read Grep-BiasIR from its folder (``queries.csv`` and ``queries-documents_*.csv``)."""
    from fairmt.data.inputs import csv_dict_rows, input_dir

    root = input_dir(root, "Grep-BiasIR")
    qfile = root / "queries.csv"
    _, qrows = csv_dict_rows(qfile, "Grep-BiasIR queries", required=("q_id", "category", "query"))
    queries = {r["q_id"]: BiasIRQuery(r["q_id"], r["category"], r["query"]) for _, r in qrows}
    doc_files = sorted(root.glob("queries-documents_*.csv"))
    if not doc_files:
        raise FairmtError(f"no Grep-BiasIR document files (queries-documents_*.csv) in {root}")
    for path in doc_files:
        _, rows = csv_dict_rows(
            path,
            "Grep-BiasIR documents",
            required=("q_id", "d_id", "relevant", "content_gender", "doc_title", "document"),
        )
        for lineno, r in rows:
            q = queries.get(r["q_id"])
            if q is None:
                raise FairmtError(f"{path}:{lineno}: q_id {r['q_id']} is not in {qfile}")
            q.documents.append(
                BiasIRDocument(
                    r["d_id"], r["relevant"].strip() == "1", r["content_gender"].strip(), r["doc_title"], r["document"]
                )
            )
    out = [q for q in queries.values() if q.documents]
    for q in out:
        q.relevant("M"), q.relevant("F")  # validate
    return out


@dataclass
class BiasIRCategory:
    """Male ratio and ranks of one category."""

    category: str
    short: str
    n_queries: int
    male_ratio: float
    ties: int
    mean_rank: dict[str, float]


@dataclass
class BiasIRResult:
    """Male ratio per category, the average deviation from 0.5, and the signature."""

    categories: list[BiasIRCategory]
    avg_dev: float
    male_ratio_all: float
    n_queries: int
    signature: str

    def rows(self) -> list[dict]:
        """Table rows."""
        return [
            {
                "category": c.short,
                "n": c.n_queries,
                "male_ratio": c.male_ratio,
                "ties": c.ties,
                "rank_M": c.mean_rank["M"],
                "rank_F": c.mean_rank["F"],
                "rank_N": c.mean_rank["N"],
            }
            for c in self.categories
        ]

    def __str__(self) -> str:
        cats = " ".join(f"{c.short}={c.male_ratio:.2f}" for c in self.categories)
        return f"Bias-IR male ratio: {cats}; AVG-DEV {self.avg_dev:.3f}  [{self.signature}]"


def bias_ir_signature(doc_text: str, pooling: str) -> str:
    """The versioned signature printed beside every Bias-IR score."""
    return f"BiasIR|rank:cosine|pool:per-query-6docs|tie:half|doc:{doc_text}|emb:{pooling}|v:{METRIC_VERSION}"


def _cos(q: np.ndarray, D: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    D = np.asarray(D, dtype=np.float64)
    return (D @ q) / (np.linalg.norm(D, axis=1) * np.linalg.norm(q))


def bias_ir_score(
    queries: Sequence[BiasIRQuery],
    encode: Callable[[Sequence[str]], np.ndarray],
    doc_text: str = "title+body",
    pooling: str = "unknown",
) -> BiasIRResult:
    """Rank each query's documents by cosine similarity and compute male ratios (see the module docstring)."""
    from scipy.stats import rankdata

    if not queries:
        raise FairmtError("no Bias-IR queries to score")
    qtexts = [q.query for q in queries]
    dtexts = list(dict.fromkeys(d.text(doc_text) for q in queries for d in q.documents))
    qemb = np.asarray(encode(qtexts))
    demb = dict(zip(dtexts, np.asarray(encode(dtexts))))
    by_cat: dict[str, list[tuple[float, dict[str, float]]]] = {}
    for q, qe in zip(queries, qemb):
        sims = _cos(qe, np.stack([demb[d.text(doc_text)] for d in q.documents]))
        ranks = rankdata(-sims, method="average")
        m, f = q.relevant("M"), q.relevant("F")
        win = 1.0 if sims[m] > sims[f] else 0.5 if sims[m] == sims[f] else 0.0
        rk = {"M": float(ranks[m]), "F": float(ranks[f])}
        try:
            rk["N"] = float(ranks[q.relevant("N")])
        except FairmtError:
            rk["N"] = float("nan")
        by_cat.setdefault(q.category, []).append((win, rk))
    order = [c for c in CATEGORIES if c in by_cat] + sorted(c for c in by_cat if c not in CATEGORIES)
    cats = []
    for c in order:
        wins = [w for w, _ in by_cat[c]]
        cats.append(
            BiasIRCategory(
                category=c,
                short=CATEGORIES.get(c, c),
                n_queries=len(wins),
                male_ratio=float(np.mean(wins)),
                ties=sum(w == 0.5 for w in wins),
                mean_rank={g: float(np.mean([r[g] for _, r in by_cat[c]])) for g in ("M", "F", "N")},
            )
        )
    all_wins = [w for c in order for w, _ in by_cat[c]]
    return BiasIRResult(
        categories=cats,
        avg_dev=float(np.mean([abs(c.male_ratio - 0.5) for c in cats])),
        male_ratio_all=float(np.mean(all_wins)),
        n_queries=len(all_wins),
        signature=bias_ir_signature(doc_text, pooling),
    )


__all__ = [
    "BiasIRCategory",
    "BiasIRDocument",
    "BiasIRQuery",
    "BiasIRResult",
    "CATEGORIES",
    "bias_ir_score",
    "bias_ir_signature",
    "load_bias_ir",
]
