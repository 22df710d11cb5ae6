"""Paired bootstrap (issue 44 item 3): accuracy, ΔG and chrF++ of two runs against a brute-force resampling that
rebuilds each resample's item lists and scores them from scratch (chrF++ by sacrebleu.corpus_chrf)."""

import numpy as np
import pytest

from fairmt.eval.significance import paired_accuracy, paired_chrf, paired_delta_g, resample_indices

GENDER = ["male", "female"] * 10 + ["neutral"] * 2
A = [1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1]
B = [1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 1, 0, 0, 1, 1, 0, 1, 1]


def _brute(score_a, score_b, n, n_samples, seed):
    diffs = []
    for row in resample_indices(n, n_samples, seed):  # every resample rebuilt and scored from scratch
        diffs.append(score_a(list(row)) - score_b(list(row)))
    diffs = np.array(diffs)
    obs = score_a(list(range(n))) - score_b(list(range(n)))
    c = np.abs(diffs) - np.abs(diffs).mean()
    return obs, np.percentile(diffs, [2.5, 97.5]), (np.sum(c >= abs(obs)) + 1) / (len(diffs) + 1)


def _acc(c):
    return lambda rows: 100.0 * sum(c[i] for i in rows) / len(rows)


def _dg(c):
    def f(rows):
        m = [c[i] for i in rows if GENDER[i] == "male"]
        w = [c[i] for i in rows if GENDER[i] == "female"]
        return 100.0 * (sum(m) / len(m) - sum(w) / len(w))

    return f


@pytest.mark.parametrize("which", ["accuracy", "delta_g"])
def test_accuracy_and_delta_g_match_brute_force_resampling(which):
    if which == "accuracy":
        got = paired_accuracy(A, B, n_samples=300, seed=7)
        obs, ci, p = _brute(_acc(A), _acc(B), len(A), 300, 7)
    else:
        got = paired_delta_g(A, B, GENDER, n_samples=300, seed=7)
        obs, ci, p = _brute(_dg(A), _dg(B), len(A), 300, 7)
    assert got.difference == pytest.approx(obs) and [got.ci_low, got.ci_high] == pytest.approx(list(ci))
    assert got.p_value == pytest.approx(p) and got.n_items == 22 and got.ci_low < got.difference < got.ci_high
    assert paired_accuracy(A, A, n_samples=200).p_value == 1.0  # a run against itself is never significant


def test_chrf_uses_sacrebleus_statistics_and_matches_corpus_chrf_on_each_resample():
    import sacrebleu

    refs = [
        "the doctor finished her shift",
        "a nurse helped him",
        "the teacher spoke to the class",
        "my lawyer called yesterday",
        "the baker sold bread",
        "our engineer fixed it",
    ]
    ha = [
        "the doctor finished his shift",
        "a nurse helped him",
        "the teacher talked to the class",
        "my lawyer called today",
        "the baker sold the bread",
        "our engineer repaired it",
    ]
    hb = ["doctor ends shift", "nurse help", "teacher class", "the lawyer phoned", "bread", "engineer fix"]

    def chrf(h):
        return lambda rows: sacrebleu.corpus_chrf([h[i] for i in rows], [[refs[i] for i in rows]], word_order=2).score

    got = paired_chrf(ha, hb, refs, n_samples=100, seed=3)
    obs, ci, p = _brute(chrf(ha), chrf(hb), len(refs), 100, 3)
    assert got.a == pytest.approx(sacrebleu.corpus_chrf(ha, [refs], word_order=2).score)
    assert got.difference == pytest.approx(obs) and [got.ci_low, got.ci_high] == pytest.approx(list(ci), abs=1e-6)
    assert got.p_value == pytest.approx(p) and got.to_dict()["method"].startswith("paired bootstrap")


def test_chrf_reads_text_as_the_scorers_do_and_states_the_self_comparison_convention():
    """Issue 54: two files the scorers score identically (no-break spaces and decomposed accents in one, plain text
    in the other) are identical in the paired test too; a system against itself gets p = 1 (sacrebleu: 1 / (N + 1))."""
    import sacrebleu

    from fairmt.data.text import normalize_many
    from fairmt.eval.degenerate import chrfpp_corpus_and_statistics

    refs = ["Die Ärztin beendete ihre Schicht.", "Ein Pfleger half ihm.", "Der Lehrer sprach zur Klasse."]
    plain = ["Die Ärztin beendete seine Schicht.", "Ein Pfleger half ihm.", "Der Lehrer redete zur Klasse."]
    odd = [h.replace(" ", "\u00a0").replace("Ä", "A\u0308") for h in plain]  # what a word processor leaves
    scored = [chrfpp_corpus_and_statistics(normalize_many(h)[0], normalize_many(refs)[0])[0] for h in (plain, odd)]
    assert scored[0] == scored[1]  # as `fairmt eval flores` scores them (translation_quality normalises both)
    got = paired_chrf(plain, odd, refs, n_samples=200)
    assert got.difference == 0 and got.a == pytest.approx(scored[0]) and got.p_value == 1.0
    raw = paired_chrf(plain, odd, refs, n_samples=200, normalize=False)  # --compat official: the text as it is
    assert raw.b == pytest.approx(sacrebleu.corpus_chrf(odd, [refs], word_order=2).score) and raw.difference > 0
    assert "p = 1" in paired_chrf.__doc__ and "0.001" in paired_chrf.__doc__
    # sacrebleu's own rule on the same centred resampled differences (all 0 for a system against itself): 1/(N + 1)
    import numpy as np
    from sacrebleu.significance import _compute_p_value

    assert _compute_p_value(np.zeros(1000), 0.0) == pytest.approx(1 / 1001) and round(1 / 1001, 3) == 0.001


def _geneval_file(tmp_path, name, masc_hyps, drop_items=False):
    """An `eval geneval --json` result of four pairs, written by the real scorer (:func:`score_counterfactual`)."""
    import json
    from dataclasses import asdict

    from fairmt.eval.geneval import score_counterfactual
    from fairmt.eval.reporting.formats import GENEVAL, declared

    mr = ["der Arzt kam", "der Lehrer sprach", "der Koch lachte", "der Bauer ging", "der Maler las", "der Wirt sah"]
    fr = [
        "die Ärztin kam",
        "die Lehrerin sprach",
        "die Köchin lachte",
        "die Bäuerin ging",
        "die Malerin las",
        "die Wirtin sah",
    ]
    data = declared(asdict(score_counterfactual(masc_hyps, fr, mr, fr, lang="de", split="test")), GENEVAL)
    if drop_items:
        del data["items"]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path, data


def test_report_prints_the_paired_bootstrap_the_significance_module_gives(tmp_path, capsys):
    """`fairmt report` on two result files: the comparison is compare_items' own (checked against brute force above),
    printed with its interval and verdict; a file without per-sentence data gets one line, not an error."""
    import json

    from fairmt.cli import main
    from fairmt.eval.reporting.compare import format_test
    from fairmt.eval.significance import compare_items, read_flags

    good = ["der Arzt kam", "der Lehrer sprach", "der Koch lachte", "der Bauer ging", "der Maler las", "der Wirt sah"]
    bad = [
        "die Ärztin kam",
        "der Lehrer sprach",
        "die Köchin lachte",
        "der Bauer ging",
        "die Malerin las",
        "der Wirt sah",
    ]
    a, da = _geneval_file(tmp_path, "a", good)
    b, db = _geneval_file(tmp_path, "b", bad)
    assert len(da["items"]["correct_masculine"]) == 6 and len(da["items"]["chrf_stats"].split(",")) == 12
    assert main(["report", str(a), str(b), "--json", "-"]) == 0
    got = {c["measure"]: c for c in json.loads(capsys.readouterr().out)["tables"][0]["comparisons"]}
    want = {t.measure: t for t in compare_items("geneval", db["items"], da["items"])}
    assert set(got) == {"accuracy", "explicit_accuracy", "delta_g", "chrf++"} == set(want)
    for m, t in want.items():
        assert [got[m]["difference"], got[m]["ci_low"], got[m]["ci_high"], got[m]["p_value"]] == pytest.approx(
            [t.difference, t.ci_low, t.ci_high, t.p_value]
        )
    acc = paired_accuracy(
        [
            x and y
            for x, y in zip(
                read_flags(db["items"]["correct_masculine"], "m"), read_flags(db["items"]["correct_feminine"], "f")
            )
        ],
        [True] * 6,
    )
    assert got["accuracy"]["difference"] == pytest.approx(-50.0) == acc.difference
    assert got["accuracy"]["ci_low"] == pytest.approx(acc.ci_low)
    assert main(["report", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert f"b: MT-GenEval de Acc. {format_test(want['accuracy'])}" in out
    # issue 53: what the interval covers, and that each run is one training seed, under the comparisons
    note = out.splitlines()[out.splitlines().index(next(x for x in out.splitlines() if x.startswith("Paired"))) + 1]
    assert "covers test-set noise only" in note and "not training-seed noise" in note and "(a, b)" in note
    assert "p = 1.000, not distinguishable" in format_test(compare_items("geneval", da["items"], da["items"])[0])
    from fairmt.eval.geneval import score_contextual  # the contextual set: accuracy and E-accuracy over sentences

    orig = ["der Arzt kam", "die Ärztin kam", "der Koch lachte"]
    flip = ["die Ärztin kam", "der Arzt kam", "die Köchin lachte"]
    ca, cb = (score_contextual(h, orig, flip).items for h in (orig, flip))
    ctx = compare_items("geneval", ca, cb, n_samples=200)
    assert [t.measure for t in ctx] == ["accuracy", "explicit_accuracy"]
    assert ctx[0].difference == pytest.approx(100.0) == paired_accuracy([1, 1, 1], [0, 0, 0], n_samples=200).difference
    old, _ = _geneval_file(tmp_path, "old", bad, drop_items=True)
    assert main(["report", str(a), str(old)]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if "no interval" in x]
    assert len(lines) == 1 and "old" in lines[0] and "older fairmt" in lines[0]


def test_format_test_digits_follow_the_interval():
    from fairmt.eval.reporting.compare import format_test
    from fairmt.eval.significance import PairedBootstrap

    def t(lo, hi, p):
        return format_test(PairedBootstrap("accuracy", 50, 48, 2.0, lo, hi, p, 300, 1000, 1))

    # spread = (hi - lo) / 3.92 to two significant digits when it begins with 1 or 2, else one (fairmt report's rule)
    assert t(-10.0, 20.0, 0.3) == "+2 [-10, +20], p = 0.300, not distinguishable"  # spread 7.7
    assert t(-1.5, 5.5, 0.3) == "+2.0 [-1.5, +5.5], p = 0.300, not distinguishable"  # spread 1.8
    assert t(1.91, 2.09, 0.001) == "+2.00 [+1.91, +2.09], p = 0.001, distinguishable"  # spread 0.046
