"""Word alignment of the English source to its translation, for finding the profession in the translation.

The default aligner re-implements fast_align (Dyer, Chahuneau & Smith, NAACL 2013, "A Simple, Fast, and Effective
Reparameterization of IBM Model 2"), run forward the way the WinoMT evaluation ran it (``fast_align -i FILE -d -o
-v``): a lexical translation table ``t(f | e)`` plus a NULL word, and a diagonal alignment prior

    p(a_j = i | j, m, n) = p0                                     if i = 0 (NULL)
                         = (1 - p0) * exp(-λ |i/n - j/m|) / Z_λ(j, m, n)   otherwise

(``m`` target length, ``n`` source length, 1-based positions). Training is EM over the whole file: 5 iterations,
of which the first four are E-steps followed by an M-step with variational Bayes (``t(f|e) ∝ exp ψ(c(e,f)+α) /
exp ψ(Σ_f c(e,f)+α)``, α = 0.01) and, from the second iteration on, eight gradient steps on the tension λ
(initial 4.0, clamped to [0.1, 14]) that match the model's expected feature ``∂ log Z / ∂λ`` to the empirical one;
the fifth iteration is the Viterbi pass, keeping for each target word the most probable source position (NULL
and earlier positions win ties, links to NULL are not printed). The C++ program's numerics are mirrored step by
step, including its quirks, because each of them changes alignments: its digamma approximation; its closed-form
``ComputeZ`` (geometric series) and ``ComputeDLogZ`` (arithmetico-geometric series), the latter normalising by
``ComputeZ(i, n, m)`` with target and source lengths swapped (and C++ ``unsigned`` wrap-around inside); the
empirical feature taken at the 0-based target position ``Feature(j, i, m, n)``; the 1e-9 translation
probability of the first iteration; and the order in which counts and sums are accumulated. With all of these
the 2019 WinoMT alignment ``logs/forward.en-es.align`` is reproduced on 3888 of 3888 lines. Everything is
vectorised with NumPy over the flattened (target word, NULL + source words) cells, so one WinoMT language (3888
lines) aligns in about 0.25 s of CPU time.

Alternatives behind the same :class:`Aligner` interface: :class:`ExternalFastAlign` runs a ``fast_align`` binary,
:class:`EflomalAligner` uses the ``eflomal`` package when installed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fairmt.errors import FairmtError

Alignment = list[tuple[int, int]]  # (source index, target index) pairs, 0-based, Pharaoh order


_WS = re.compile(r"[ \t]+")


def tokenize(text: str) -> list[str]:
    """fast_align's tokenisation: split on spaces and tabs only (not on other Unicode whitespace)."""
    return [w for w in _WS.split(text.strip("\r\n")) if w]


class Aligner:
    """Interface: align parallel sentences given as whitespace-tokenised strings.

    ``align(sources, targets)`` returns one list of ``(source_index, target_index)`` pairs per sentence pair,
    0-based, in the order the aligner emits them (Pharaoh ``i-j``).
    """

    name = "aligner"

    def align(self, sources: Sequence[str], targets: Sequence[str]) -> list[Alignment]:  # pragma: no cover
        raise NotImplementedError


def _fast_align_digamma(x: np.ndarray) -> np.ndarray:
    """fast_align's ``Md::digamma`` (recurrence up to 7, then the asymptotic series), vectorised."""
    x = np.array(x, dtype=np.float64, copy=True)
    result = np.zeros_like(x)
    for _ in range(7):  # ``for (; x < 7; ++x) result -= 1/x;`` — at most 7 steps for x > 0
        mask = x < 7
        if not mask.any():
            break
        result[mask] -= 1.0 / x[mask]
        x[mask] += 1.0
    x -= 0.5
    xx = 1.0 / x
    xx2 = xx * xx
    xx4 = xx2 * xx2
    result += (
        np.log(x)
        + (1.0 / 24.0) * xx2
        - (7.0 / 960.0) * xx4
        + (31.0 / 8064.0) * xx4 * xx2
        - (127.0 / 30720.0) * xx4 * xx4
    )
    return result


def _feature(i, j, m, n):
    """``DiagonalAlignment::Feature(i, j, m, n) = -|j/n - i/m|`` (i target position, j source position)."""
    return -np.abs(j / n - i / m)


def _unnormalized(i, j, m, n, tension):
    return np.exp(_feature(i, j, m, n) * tension)


def _compute_z(i, m, n, tension):
    """``DiagonalAlignment::ComputeZ``: Σ_{j=1..n} exp(-λ|j/n - i/m|) as two geometric series, vectorised."""
    i = np.asarray(i, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    split = i * n / m
    floor = np.floor(split)
    ceil = floor + 1
    ratio = np.exp(-tension / n)
    num_top = n - floor
    num_top = np.where(num_top < 0, num_top + 2.0**32, num_top)  # C++ ``unsigned`` wrap-around
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ezt = np.where(num_top > 0, _unnormalized(i, ceil, m, n, tension) * (1.0 - ratio**num_top) / (1.0 - ratio), 0.0)
        ezb = np.where(floor > 0, _unnormalized(i, floor, m, n, tension) * (1.0 - ratio**floor) / (1.0 - ratio), 0.0)
    return ezb + ezt


def _arith_geo(a_1, g_1, r, d, n):
    g_np1 = g_1 * r**n
    a_n = d * (n - 1) + a_1
    x_1 = a_1 * g_1
    g_2 = g_1 * r
    rm1 = r - 1
    return (a_n * g_np1 - x_1) / rm1 - d * (g_np1 - g_2) / (rm1 * rm1)


def _compute_dlogz(i, m, n, tension):
    """``DiagonalAlignment::ComputeDLogZ``: ∂ log Z / ∂λ via arithmetico-geometric series, vectorised."""
    i = np.asarray(i, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = _compute_z(i, n, m, tension)  # sic: fast_align's da.h passes (i, n, m) here
    split = i * n / m
    floor = np.floor(split)
    ceil = floor + 1
    ratio = np.exp(-tension / n)
    d = -1.0 / n
    num_top = n - floor
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = np.where(
            num_top > 0,
            _arith_geo(_feature(i, ceil, m, n), _unnormalized(i, ceil, m, n, tension), ratio, d, num_top),
            0.0,
        )
        pcb = np.where(
            floor > 0,
            _arith_geo(_feature(i, floor, m, n), _unnormalized(i, floor, m, n, tension), ratio, d, floor),
            0.0,
        )
    return (pct + pcb) / z


@dataclass
class FastAlignResult:
    """Alignments plus the trained model's summary numbers (final tension, per-iteration log-likelihood)."""

    alignments: list[Alignment]
    tension: float
    log_likelihoods: list[float]


ALIGN_CACHE = 8
"""Alignment results :meth:`FastAlign.fit_align` keeps per process (a WinoMT file's: a few hundred kB)."""
_ALIGNED: dict[tuple, FastAlignResult] = {}
_ALIGNED_LOCK = threading.Lock()


class FastAlign(Aligner):
    """fast_align's reparameterised IBM Model 2, forward direction, in NumPy (see the module docstring).

    Defaults are those of ``fast_align -d -o -v``: ``iterations=5``, ``tension=4.0`` (optimised), ``p0=0.08``,
    ``alpha=0.01`` (variational Bayes), NULL word on, diagonal favoured. ``reverse=True`` aligns target to source
    (``-r``) and still returns ``(source, target)`` pairs.
    """

    name = "fast_align"

    def __init__(
        self,
        iterations: int = 5,
        tension: float = 4.0,
        optimize_tension: bool = True,
        p0: float = 0.08,
        variational_bayes: bool = True,
        alpha: float = 0.01,
        favor_diagonal: bool = True,
        use_null: bool = True,
        reverse: bool = False,
    ):
        if iterations < 1:
            raise FairmtError(f"fast_align needs at least 1 iteration, got {iterations}")
        if variational_bayes and alpha <= 0:
            raise FairmtError(f"variational Bayes needs alpha > 0, got {alpha}")
        self.iterations = iterations
        self.tension = tension
        self.optimize_tension = optimize_tension
        self.p0 = p0
        self.variational_bayes = variational_bayes
        self.alpha = alpha
        self.favor_diagonal = favor_diagonal
        self.use_null = use_null
        self.reverse = reverse

    def align(self, sources: Sequence[str], targets: Sequence[str]) -> list[Alignment]:
        """Align each ``sources[k]`` to ``targets[k]`` (whitespace tokens); see :meth:`fit_align`."""
        return self.fit_align(sources, targets).alignments

    def _settings(self) -> tuple:
        return (
            type(self), self.iterations, self.tension, self.optimize_tension, self.p0, self.variational_bayes,
            self.alpha, self.favor_diagonal, self.use_null, self.reverse,
        )  # fmt: skip

    def fit_align(self, sources: Sequence[str], targets: Sequence[str]) -> FastAlignResult:
        """Train on all pairs and return their Viterbi alignments (``(src, tgt)`` 0-based pairs per line).

        The last :data:`ALIGN_CACHE` results of the process are kept, keyed by the aligner's settings and the text
        of every pair: the same file aligned again (another gold subset's or compat mode's score of it, the next
        command of a session) is not trained again; each call gets its own copy."""
        key = (self._settings(), tuple(sources), tuple(targets))
        with _ALIGNED_LOCK:
            kept = _ALIGNED.pop(key, None)
            if kept is not None:
                _ALIGNED[key] = kept  # most recently used last
        if kept is None:
            kept = self._fit_align(sources, targets)
            with _ALIGNED_LOCK:
                _ALIGNED[key] = kept
                while len(_ALIGNED) > ALIGN_CACHE:
                    del _ALIGNED[next(iter(_ALIGNED))]
        return FastAlignResult([list(a) for a in kept.alignments], kept.tension, list(kept.log_likelihoods))

    def _fit_align(self, sources: Sequence[str], targets: Sequence[str]) -> FastAlignResult:
        if len(sources) != len(targets):
            raise FairmtError(f"aligner got {len(sources)} source and {len(targets)} target sentences")
        src_tok = [tokenize(s) for s in sources]
        tgt_tok = [tokenize(t) for t in targets]
        for k, (s, t) in enumerate(zip(src_tok, tgt_tok)):
            if not s or not t:
                side = "source" if not s else "target"
                raise FairmtError(f"aligner: line {k + 1} has an empty {side} sentence; fast_align cannot align it")
        if self.reverse:
            src_tok, tgt_tok = tgt_tok, src_tok
        return self._run(src_tok, tgt_tok)

    # ------------------------------------------------------------------------------------------------------
    def _run(self, src_tok: list[list[str]], tgt_tok: list[list[str]]) -> FastAlignResult:
        # Layout: one row per target token (corpus order); its cells are column 0 (NULL) then source positions
        # 1..n, flattened row-major, so that ``np.bincount`` accumulates counts in fast_align's order.
        use_null = bool(self.use_null)
        e_vocab: dict[str, int] = {}
        f_vocab: dict[str, int] = {}
        src_ids = [[e_vocab.setdefault(w, len(e_vocab) + 1) for w in s] for s in src_tok]  # 0 = NULL
        tgt_flat = [f_vocab.setdefault(w, len(f_vocab)) for t in tgt_tok for w in t]
        n_f = max(len(f_vocab), 1)
        n_lens = np.fromiter(map(len, src_ids), dtype=np.int64, count=len(src_ids))
        m_lens = np.fromiter(map(len, tgt_tok), dtype=np.int64, count=len(tgt_tok))
        T = int(m_lens.sum())
        line_of_row = np.repeat(np.arange(len(tgt_tok)), m_lens)
        row_start = np.concatenate([[0], np.cumsum(m_lens)[:-1]])
        j_row = np.arange(T) - row_start[line_of_row] + 1  # 1-based target position
        n_row = n_lens[line_of_row]
        m_row = m_lens[line_of_row].astype(np.float64)
        f_row = np.asarray(tgt_flat, dtype=np.int64)
        cells_per_row = n_row + 1
        cell_start = np.concatenate([[0], np.cumsum(cells_per_row)[:-1]])
        n_cells = int(cells_per_row.sum())
        cell_row = np.repeat(np.arange(T), cells_per_row)
        cell_col = np.arange(n_cells) - cell_start[cell_row]  # 0 = NULL, i = source position
        src_flat = np.concatenate([np.concatenate([[0], s]) for s in src_ids]).astype(np.int64)
        src_off = np.concatenate([[0], np.cumsum(n_lens + 1)[:-1]])
        cell_e = src_flat[src_off[line_of_row][cell_row] + cell_col]
        keys = cell_e * n_f + f_row[cell_row]
        uniq, inv = np.unique(keys, return_inverse=True)
        n_params = len(uniq)
        e_of_param = uniq // n_f
        e_starts = np.concatenate([[0], np.flatnonzero(np.diff(e_of_param)) + 1])
        e_sizes = np.diff(np.append(e_starts, n_params))
        is_src = cell_col > 0
        n_cell = n_row[cell_row].astype(np.float64)
        m_cell = m_row[cell_row]
        j_cell = j_row[cell_row].astype(np.float64)
        feat = np.where(is_src, -np.abs(cell_col / n_cell - j_cell / m_cell), 0.0)
        # fast_align's empirical feature uses the 0-based target position: Feature(j, i, m, n)
        feat_emp = np.where(is_src, -np.abs(cell_col / n_cell - (j_cell - 1) / m_cell), 0.0)
        # per column: the cells and rows having it, for sums and argmax in fast_align's order (NULL, 1, 2, ...)
        C = int(n_lens.max()) + 1
        col_cells = [np.flatnonzero(cell_col == 0)]
        by_n = np.argsort(n_row, kind="stable")
        n_sorted = n_row[by_n]
        for c in range(1, C):
            rows_c = np.sort(by_n[np.searchsorted(n_sorted, c) :])
            col_cells.append(cell_start[rows_c] + c)
        col_rows = [cell_row[cc] for cc in col_cells]
        # size classes (m, n) for the tension gradient
        size_pairs, size_counts = np.unique(np.stack([m_lens, n_lens], 1), axis=0, return_counts=True)
        sz_m = np.repeat(size_pairs[:, 0], size_pairs[:, 0])
        sz_n = np.repeat(size_pairs[:, 1], size_pairs[:, 0])
        sz_c = np.repeat(size_counts, size_pairs[:, 0]).astype(np.float64)
        sz_start = np.concatenate([[0], np.cumsum(size_pairs[:, 0])[:-1]])
        sz_j = np.arange(len(sz_m)) - np.repeat(sz_start, size_pairs[:, 0]) + 1

        tension = float(self.tension)
        p0 = float(self.p0)
        ttable = np.full(n_params, 1e-9)  # before the first M-step every t(f|e) is 1e-9
        toks = float(T)
        lls: list[float] = []
        alignments: list[Alignment] = []
        for it in range(self.iterations):
            final = it == self.iterations - 1
            if self.favor_diagonal:
                az = _compute_z(j_row, m_row, n_row, tension) / (1.0 - p0)
                prior = np.where(is_src, np.exp(feat * tension) / az[cell_row], p0)
            else:
                prior = np.broadcast_to(1.0 / (n_row + use_null), (T,))[cell_row]
            if not use_null:
                prior = np.where(is_src, prior, 0.0)
            probs = ttable[inv] * prior
            total = np.zeros(T)
            for cc, rr in zip(col_cells, col_rows):
                total[rr] += probs[cc]
            lls.append(float(np.log(total).sum()))
            if final:
                best = np.zeros(T, dtype=np.int64)
                best_p = probs[col_cells[0]] if use_null else np.full(T, -1.0)
                for c in range(1, C):
                    cc, rr = col_cells[c], col_rows[c]
                    better = probs[cc] > best_p[rr]  # strict: the first maximum wins
                    best[rr[better]] = c
                    best_p[rr[better]] = probs[cc][better]
                keep = best > 0
                src_pos = (best - 1)[keep]
                tgt_pos = (j_row - 1)[keep]
                line = line_of_row[keep]
                bounds = np.searchsorted(line, np.arange(len(tgt_tok) + 1))
                sp, tp = src_pos.tolist(), tgt_pos.tolist()
                alignments = [list(zip(sp[a:b], tp[a:b])) for a, b in zip(bounds[:-1], bounds[1:])]
                break
            post = probs / total[cell_row]
            if not use_null:
                post[~is_src] = 0.0
            counts = np.bincount(inv, weights=post, minlength=n_params)
            if self.favor_diagonal and self.optimize_tension and it > 0:
                emp = float(np.cumsum(feat_emp * post)[-1]) / toks
                for _ in range(8):
                    mod = float(np.sum(sz_c * _compute_dlogz(sz_j, sz_m, sz_n, tension))) / toks
                    tension += (emp - mod) * 20.0
                    tension = min(max(tension, 0.1), 14.0)
            if self.variational_bayes:
                tot = np.add.reduceat(counts + self.alpha, e_starts)
                tot[tot == 0] = 1.0
                ttable = np.exp(_fast_align_digamma(counts + self.alpha) - np.repeat(_fast_align_digamma(tot), e_sizes))
            else:
                tot = np.add.reduceat(counts, e_starts)
                tot[tot == 0] = 1.0
                ttable = counts / np.repeat(tot, e_sizes)
        if self.reverse:
            alignments = [[(j, i) for i, j in al] for al in alignments]
        return FastAlignResult(alignments=alignments, tension=tension, log_likelihoods=lls)


def format_pharaoh(alignment: Alignment) -> str:
    """``[(0, 0), (1, 2)] -> "0-0 1-2"``."""
    return " ".join(f"{i}-{j}" for i, j in alignment)


def parse_pharaoh(line: str, where: str = "alignment") -> Alignment:
    """Parse one Pharaoh-format line (``"0-0 1-2"``) into ``(src, tgt)`` pairs."""
    out: Alignment = []
    for tok in line.split():
        a, sep, b = tok.partition("-")
        if not sep or not a.isdigit() or not b.isdigit():
            raise FairmtError(f"{where}: '{tok}' is not an 'i-j' alignment link")
        out.append((int(a), int(b)))
    return out


class ExternalFastAlign(Aligner):
    """Runs a compiled ``fast_align`` binary (``fast_align -i FILE -d -o -v``) and parses its Pharaoh output."""

    name = "fast_align-bin"

    def __init__(self, binary: str = "fast_align", args: Sequence[str] = ("-d", "-o", "-v")):
        path = shutil.which(binary) or (binary if os.path.isfile(binary) else None)
        if path is None:
            raise FairmtError(
                f"fast_align binary '{binary}' not found: build https://github.com/clab/fast_align and pass its path "
                "with --aligner-bin, or use the built-in aligner (the default)"
            )
        self.binary = path
        self.args = list(args)

    def align(self, sources: Sequence[str], targets: Sequence[str]) -> list[Alignment]:
        from fairmt.outputs import write_file

        folder = tempfile.mkdtemp(prefix="fairmt-fast-align-")
        try:
            name = os.path.join(folder, "pairs.txt")  # a full /tmp: the writer's one line
            write_file(name, "".join(f"{s} ||| {t}\n" for s, t in zip(sources, targets)), what="fast_align's input")
            proc = subprocess.run(
                [self.binary, "-i", name, *self.args], capture_output=True, text=True, encoding="utf-8"
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if proc.returncode != 0:
            raise FairmtError(f"{self.binary} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
        lines = proc.stdout.splitlines()
        if len(lines) != len(sources):
            raise FairmtError(f"{self.binary} printed {len(lines)} alignment lines for {len(sources)} sentence pairs")
        return [parse_pharaoh(line, f"{self.binary} output line {k + 1}") for k, line in enumerate(lines)]


class EflomalAligner(Aligner):
    """eflomal (Östling & Tiedemann 2016; ``pip install eflomal``) forward links, through its Python API."""

    name = "eflomal"

    def __init__(self, **kwargs):
        try:
            import eflomal  # noqa: F401
        except ImportError as err:
            raise FairmtError("the eflomal aligner needs the eflomal package: pip install eflomal") from err
        self.kwargs = kwargs

    def align(self, sources: Sequence[str], targets: Sequence[str]) -> list[Alignment]:
        import eflomal

        aligner = eflomal.Aligner(**self.kwargs)
        with tempfile.TemporaryDirectory() as tmp:
            fwd = os.path.join(tmp, "fwd")
            from fairmt.outputs import write_file

            write_file(os.path.join(tmp, "s"), "".join(s + "\n" for s in sources), what="eflomal's source input")
            write_file(os.path.join(tmp, "t"), "".join(t + "\n" for t in targets), what="eflomal's target input")
            with (
                open(os.path.join(tmp, "s"), encoding="utf-8") as fs,
                open(os.path.join(tmp, "t"), encoding="utf-8") as ft,
            ):
                aligner.align(fs, ft, links_filename_fwd=fwd, quiet=True)
            with open(fwd, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        return [parse_pharaoh(line, f"eflomal output line {k + 1}") for k, line in enumerate(lines)]


ALIGNERS = {"fast_align": FastAlign, "fast_align-bin": ExternalFastAlign, "eflomal": EflomalAligner}


def get_aligner(name: str = "fast_align", binary: str | None = None) -> Aligner:
    """An aligner by name; a ``binary`` path selects the external fast_align program."""
    if binary:
        return ExternalFastAlign(binary)
    if name not in ALIGNERS:
        raise FairmtError(f"unknown aligner '{name}': choose one of {', '.join(ALIGNERS)}")
    return ALIGNERS[name]()
