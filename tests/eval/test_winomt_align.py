"""The NumPy fast_align against a slow line-by-line port of fast_align.cc, hand examples and the 2019 file."""

import math
import random

import numpy as np
import pytest
from scipy.special import digamma

from fairmt.errors import FairmtError
from fairmt.eval.winomt.align import (
    ExternalFastAlign,
    FastAlign,
    _compute_dlogz,
    _compute_z,
    _fast_align_digamma,
    format_pharaoh,
    get_aligner,
    parse_pharaoh,
    tokenize,
)


# ---------------------------------------------------------------------------------------------------------------
# slow reference: fast_align.cc / da.h / ttables.h transcribed loop by loop (dicts, scalars, no NumPy)
def _ref_digamma(x):
    result = 0.0
    while x < 7:
        result -= 1 / x
        x += 1
    x -= 1.0 / 2.0
    xx = 1.0 / x
    xx2 = xx * xx
    xx4 = xx2 * xx2
    result += (
        math.log(x)
        + (1.0 / 24.0) * xx2
        - (7.0 / 960.0) * xx4
        + (31.0 / 8064.0) * xx4 * xx2
        - (127.0 / 30720.0) * xx4 * xx4
    )
    return result


def _feat(i, j, m, n):
    return -abs(j / n - i / m)


def _unnorm(i, j, m, n, a):
    return math.exp(_feat(i, j, m, n) * a)


def _ref_z(i, m, n, a):
    split = i * n / m
    floor = int(split)
    ceil = floor + 1
    ratio = math.exp(-a / n)
    num_top = (n - floor) % 2**32  # unsigned
    ezt = ezb = 0.0
    if num_top:
        ezt = _unnorm(i, ceil, m, n, a) * (1.0 - ratio**num_top) / (1.0 - ratio)
    if floor:
        ezb = _unnorm(i, floor, m, n, a) * (1.0 - ratio**floor) / (1.0 - ratio)
    return ezb + ezt


def _ags(a_1, g_1, r, d, n):
    g_np1 = g_1 * r**n
    a_n = d * (n - 1) + a_1
    x_1 = a_1 * g_1
    g_2 = g_1 * r
    rm1 = r - 1
    return (a_n * g_np1 - x_1) / rm1 - d * (g_np1 - g_2) / (rm1 * rm1)


def _ref_dlogz(i, m, n, a):
    z = _ref_z(i, n, m, a)  # sic, as in da.h
    split = i * n / m
    floor = int(split)
    ceil = floor + 1
    ratio = math.exp(-a / n)
    d = -1.0 / n
    num_top = n - floor
    pct = pcb = 0.0
    if num_top:
        pct = _ags(_feat(i, ceil, m, n), _unnorm(i, ceil, m, n, a), ratio, d, num_top)
    if floor:
        pcb = _ags(_feat(i, floor, m, n), _unnorm(i, floor, m, n, a), ratio, d, floor)
    return (pct + pcb) / z


def reference_fast_align(corpus, iterations=5, tension=4.0, p0=0.08, alpha=0.01):
    """fast_align -d -o -v, forward, straight from the C++ (one thread)."""
    data = [(s.split(), t.split()) for s, t in corpus]
    size_counts = {}
    toks = 0
    counts = {}
    for src, trg in data:
        size_counts[(len(trg), len(src))] = size_counts.get((len(trg), len(src)), 0) + 1
        toks += len(trg)
    ttable = None
    out = []
    for it in range(iterations):
        final = it == iterations - 1
        c0 = emp = 0.0
        counts = {}
        for src, trg in data:
            m, n = len(trg), len(src)
            links = []
            for j, f in enumerate(trg):
                probs = [0.0] * (n + 1)
                probs[0] = (ttable[("<null>", f)] if ttable else 1e-9) * p0
                s = probs[0]
                az = _ref_z(j + 1, m, n, tension) / (1.0 - p0)
                for i in range(1, n + 1):
                    pa = _unnorm(j + 1, i, m, n, tension) / az
                    probs[i] = (ttable[(src[i - 1], f)] if ttable else 1e-9) * pa
                    s += probs[i]
                if final:
                    best, best_p = 0, probs[0]
                    for i in range(1, n + 1):
                        if probs[i] > best_p:
                            best, best_p = i, probs[i]
                    if best > 0:
                        links.append((best - 1, j))
                else:
                    c = probs[0] / s
                    c0 += c
                    counts[("<null>", f)] = counts.get(("<null>", f), 0.0) + c
                    for i in range(1, n + 1):
                        p = probs[i] / s
                        counts[(src[i - 1], f)] = counts.get((src[i - 1], f), 0.0) + p
                        emp += _feat(j, i, m, n) * p
            if final:
                out.append(links)
        if final:
            break
        emp /= toks
        if it > 0:
            for _ in range(8):
                mod = 0.0
                for (mm, nn), cnt in size_counts.items():
                    for j in range(1, mm + 1):
                        mod += cnt * _ref_dlogz(j, mm, nn, tension)
                mod /= toks
                tension += (emp - mod) * 20.0
                tension = min(max(tension, 0.1), 14.0)
        tot = {}
        for (e, _f), c in counts.items():
            tot[e] = tot.get(e, 0.0) + c + alpha
        ttable = {(e, f): math.exp(_ref_digamma(c + alpha) - _ref_digamma(tot[e])) for (e, f), c in counts.items()}
    return out, tension


# ---------------------------------------------------------------------------------------------------------------
def test_digamma_matches_scipy():
    x = np.array([0.01, 0.3, 1.0, 2.5, 6.99, 7.0, 12.0, 1234.5])
    np.testing.assert_allclose(_fast_align_digamma(x), digamma(x), rtol=0, atol=1e-9)
    assert [float(v) for v in _fast_align_digamma(x)] == [_ref_digamma(float(v)) for v in x]


@pytest.mark.parametrize("i,m,n,t", [(1, 5, 7, 4.0), (3, 10, 4, 2.0), (5, 5, 5, 8.0), (7, 7, 3, 0.5), (1, 1, 1, 14.0)])
def test_diagonal_normaliser_is_the_sum_it_replaces(i, m, n, t):
    brute = sum(math.exp(-t * abs(j / n - i / m)) for j in range(1, n + 1))
    assert _compute_z(i, m, n, t) == pytest.approx(brute, rel=1e-12)
    assert float(_compute_z(i, m, n, t)) == pytest.approx(_ref_z(i, m, n, t), rel=1e-14)


@pytest.mark.parametrize("i,m,n,t", [(1, 6, 6, 4.0), (4, 9, 9, 2.0), (2, 3, 3, 10.0)])
def test_dlogz_is_the_expected_feature_when_lengths_agree(i, m, n, t):
    # with m == n the (i, n, m) argument swap in da.h's ComputeDLogZ is harmless, so it must equal E[feature]
    w = [math.exp(-t * abs(j / n - i / m)) for j in range(1, n + 1)]
    f = [-abs(j / n - i / m) for j in range(1, n + 1)]
    assert _compute_dlogz(i, m, n, t) == pytest.approx(sum(a * b for a, b in zip(w, f)) / sum(w), rel=1e-10)


def test_dlogz_keeps_fast_alignment_argument_swap():
    for i, m, n, t in [(2, 9, 4, 4.0), (8, 9, 4, 6.0), (1, 3, 11, 2.0)]:
        assert float(_compute_dlogz(i, m, n, t)) == pytest.approx(_ref_dlogz(i, m, n, t), rel=1e-12)


def _random_corpus(seed, n_lines=40):
    rng = random.Random(seed)
    vocab_s = [f"s{k}" for k in range(25)]
    out = []
    for _ in range(n_lines):
        ls = rng.randint(1, 9)
        src = [rng.choice(vocab_s) for _ in range(ls)]
        trg = [w.replace("s", "t") for w in src if rng.random() > 0.15]
        trg += [f"t{rng.randint(30, 40)}" for _ in range(rng.randint(0, 2))]
        if not trg:
            trg = ["t0"]
        rng.shuffle(trg) if rng.random() < 0.3 else None
        out.append((" ".join(src), " ".join(trg)))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_slow_reference_on_random_corpora(seed):
    corpus = _random_corpus(seed)
    ref_links, ref_tension = reference_fast_align(corpus)
    res = FastAlign().fit_align([s for s, _ in corpus], [t for _, t in corpus])
    assert res.alignments == ref_links
    assert res.tension == pytest.approx(ref_tension, rel=1e-9)


def test_matches_slow_reference_on_real_lines(shared_data):
    lines = (shared_data / "winomt/translations/google/en-de.txt").read_text(encoding="utf-8").splitlines()[:80]
    corpus = [tuple(x.split(" ||| ")) for x in lines]
    ref_links, ref_tension = reference_fast_align(corpus)
    res = FastAlign().fit_align([s for s, _ in corpus], [t for _, t in corpus])
    assert res.alignments == ref_links
    assert res.tension == pytest.approx(ref_tension, rel=1e-9)


def test_hand_example_learns_word_translations():
    src = ["the house", "the book", "a book", "a house", "the small house", "a small book"]
    tgt = ["das haus", "das buch", "ein buch", "ein haus", "das kleine haus", "ein kleines buch"]
    al = FastAlign().align(src, tgt)
    assert al[0] == [(0, 0), (1, 1)]
    assert al[2] == [(0, 0), (1, 1)]
    assert al[4] == [(0, 0), (1, 1), (2, 2)]
    assert format_pharaoh(al[5]) == "0-0 1-1 2-2"


def test_reverse_returns_source_target_pairs():
    src = ["the house", "the book", "a book", "a house"]
    tgt = ["das haus", "das buch", "ein buch", "ein haus"]
    assert FastAlign(reverse=True).align(src, tgt)[0] == [(0, 0), (1, 1)]


def test_tokenisation_is_space_and_tab_only():
    assert tokenize("a  b\tc\u00a0d\n") == ["a", "b", "c\u00a0d"]


def test_bad_input_errors():
    with pytest.raises(FairmtError, match="line 2 has an empty target"):
        FastAlign().align(["a b", "c"], ["x y", "  "])
    with pytest.raises(FairmtError, match="2 source and 1 target"):
        FastAlign().align(["a", "b"], ["x"])
    with pytest.raises(FairmtError, match="not an 'i-j'"):
        parse_pharaoh("0-1 2x3")
    with pytest.raises(FairmtError, match="not found"):
        ExternalFastAlign("/nonexistent/fast_align")
    with pytest.raises(FairmtError, match="unknown aligner"):
        get_aligner("giza")


def test_reproduces_2019_alignment_file(shared_data):
    lines = (shared_data / "winomt/translations/google/en-es.txt").read_text(encoding="utf-8").splitlines()
    ref = (shared_data / "winomt/logs/forward.en-es.align").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(ref) == 3888
    src, tgt = zip(*(x.split(" ||| ", 1) for x in lines))
    ours = [format_pharaoh(a) for a in FastAlign().align(src, tgt)]
    share = sum(a == b.strip() for a, b in zip(ours, ref)) / len(ref)
    assert share >= 0.99, f"only {share:.4f} of lines identical to forward.en-es.align"


def test_external_binary_wiring(tmp_path):
    """A stand-in 'fast_align' script: checks the flags it receives and the input file, prints Pharaoh lines."""
    script = tmp_path / "fast_align"
    script.write_text(
        "#!/bin/sh\n"
        '[ "$1" = "-i" ] && [ "$3" = "-d" ] && [ "$4" = "-o" ] && [ "$5" = "-v" ] || exit 3\n'
        'grep -c " ||| " "$2" > /dev/null || exit 4\n'
        "while IFS= read -r line; do echo '0-0 1-1'; done < \"$2\"\n"
    )
    script.chmod(0o755)
    al = get_aligner(binary=str(script))
    assert al.align(["a b", "c d"], ["x y", "z w"]) == [[(0, 0), (1, 1)], [(0, 0), (1, 1)]]
    bad = tmp_path / "bad_align"
    bad.write_text("#!/bin/sh\necho boom >&2\nexit 1\n")
    bad.chmod(0o755)
    with pytest.raises(FairmtError, match="failed \\(exit 1\\): boom"):
        ExternalFastAlign(str(bad)).align(["a"], ["x"])


def test_eflomal_alternative():
    pytest.importorskip("eflomal")
    from fairmt.eval.winomt.align import EflomalAligner

    src = ["the house", "the book", "a book", "a house"] * 3
    tgt = ["das haus", "das buch", "ein buch", "ein haus"] * 3
    assert EflomalAligner().align(src, tgt)[:2] == [[(0, 0), (1, 1)], [(0, 0), (1, 1)]]


def test_alignments_are_kept_per_text_and_settings():
    """The same pairs aligned again give the same result as a fresh training, as a copy of their own; a changed
    line or a changed setting is trained anew."""
    from fairmt.eval.winomt import align

    src = ["the doctor asked the nurse", "the nurse helped the doctor", "the cook thanked the guard"]
    tgt = ["der Arzt fragte die Pflegerin", "die Pflegerin half dem Arzt", "der Koch dankte dem Wächter"]
    first = FastAlign().fit_align(src, tgt)
    assert first == FastAlign()._fit_align(src, tgt)
    first.alignments[0].clear()
    again = FastAlign().fit_align(src, tgt)
    assert again == FastAlign()._fit_align(src, tgt) and again.alignments[0]  # the caller's change did not leak
    changed = tgt[:2] + ["der Koch dankte"]
    assert FastAlign().fit_align(src, changed) == FastAlign()._fit_align(src, changed) != again
    reverse = FastAlign(reverse=True).fit_align(src, tgt)
    assert reverse == FastAlign(reverse=True)._fit_align(src, tgt) and reverse.tension != again.tension
    for k in range(align.ALIGN_CACHE + 1):  # the oldest results leave the cache
        FastAlign(iterations=1 + k % 2).fit_align(src[:1], [f"{tgt[0]} {k}"])
    assert len(align._ALIGNED) == align.ALIGN_CACHE
