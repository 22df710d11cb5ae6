"""The documentation cannot go stale (issue 39): every code block of ``docs/`` and ``README.md`` is executed here, run
by the test its marker names, or marked not runnable with a reason and then checked (compiles, imports resolve, each
``fairmt`` command parses and its recipe overrides pass the recipe checks); the generated references name every
recipe key and every CLI option; every command line fairmt's own messages tell a user to type parses and validates;
the README keeps the test command CI reads and stays short. (The strict build and the browser check:
``tests/project/test_docs_browser.py``.)"""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import needs
from doc_blocks import ROOT, Block, blocks, one_folder, shell_commands

sys.path.insert(0, str(ROOT / "docs_gen"))
import reference  # noqa: E402

ALL = blocks()
EXECUTED = [b for b in ALL if b.marker in (None, "run-with")]
OTHERS = [b for b in ALL if b.marker not in (None, "run-with")]


def _fairmt_words(line: str) -> list[str] | None:
    """The words after ``fairmt`` (or ``-m fairmt`` of a launcher) on a command line, else None."""
    words = shlex.split(line)
    if words and words[0] == "fairmt":
        return words[1:]
    if "-m" in words and words.index("-m") + 1 < len(words) and words[words.index("-m") + 1] == "fairmt":
        return words[words.index("-m") + 2 :]
    return None


def _check_fairmt_line(words: list[str]) -> None:
    """The command and its options parse; a built-in recipe with its overrides passes the recipe checks."""
    from fairmt.cli import parse_command_line  # as main() reads it, with the parser built once (~25 ms a build)

    try:
        args = parse_command_line(words)
    except SystemExit as err:
        raise AssertionError(f"`fairmt {' '.join(words)}` does not parse (exit {err.code})") from None
    if args.command in ("train", "sweep") and getattr(args, "recipe", None):
        from fairmt.commands.train import builtin_recipes, load_recipe

        recipe = args.recipe.removesuffix(".yaml").removeprefix("recipes/")
        if recipe in builtin_recipes():
            overrides = [w for w in getattr(args, "overrides", []) or [] if "=" in w]
            load_recipe(recipe, overrides)
            if args.command == "sweep" and getattr(args, "grid", None):  # every setting of the grid validates
                from fairmt.sweep.spec import grid_settings, parse_grid

                for setting in grid_settings(parse_grid(args.grid)[1]):
                    load_recipe(recipe, [*overrides, *setting])


def _has_name(module: str, name: str) -> bool:
    """Whether ``module`` (found, not imported: importing torch/transformers/evaluate here costs seconds) defines or
    exports ``name``; fairmt's modules by their source (the package top by its lazy table), others by their spec."""
    spec = importlib.util.find_spec(module)
    assert spec is not None, f"no module {module}"
    if not module.startswith("fairmt") or spec.origin is None:
        return True  # a third-party module is installed: its names are its own business
    if spec.submodule_search_locations and importlib.util.find_spec(f"{module}.{name}") is not None:
        return True
    return re.search(rf"\b{re.escape(name)}\b", Path(spec.origin).read_text(encoding="utf-8")) is not None


def _check_python(block: Block) -> None:
    """Compiles; every module it imports is installed, and every fairmt name it imports or uses exists."""
    tree = ast.parse(block.code, filename=block.id)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                assert importlib.util.find_spec(alias.name) is not None, f"{block.id}: no module {alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                assert _has_name(node.module, alias.name), f"{block.id}: {node.module} has no {alias.name}"
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "fairmt":
            assert _has_name("fairmt", node.attr), f"{block.id}: fairmt has no {node.attr}"


def _check_shell(block: Block) -> None:
    r = subprocess.run(["bash", "-n"], input=block.code, text=True, capture_output=True)
    assert r.returncode == 0, f"{block.id}: not valid bash: {r.stderr}"
    for line in shell_commands(block.code):
        for part in re.split(r"\s&&\s|\s\|\|\s|;\s", line):
            words = _fairmt_words(part)
            if words is not None:
                _check_fairmt_line(words)


@pytest.mark.parametrize("block", OTHERS, ids=lambda b: b.id)
def test_marked_block_is_checked(block):
    assert block.arg, f"{block.id}: a <!-- {block.marker}: ... --> marker needs its reason / test"
    if block.marker == "runs-in":
        test_file = ROOT / block.arg.split("::")[0]
        assert test_file.is_file(), f"{block.id}: {block.arg} does not exist"
        assert block.page in test_file.read_text(encoding="utf-8"), f"{block.arg} does not read {block.page}"
    if block.lang == "python":
        _check_python(block)
    elif block.lang in ("bash", "sh", "shell", "console"):
        _check_shell(block)
    else:
        pytest.fail(f"{block.id}: a ```{block.lang} block: say bash, python or text")


_FOLDERS: dict[str, Path] = {}  # page -> the folder its blocks share (pages marked <!-- one-folder -->)
_DONE: set[str] = set()  # the blocks already run in their page's shared folder


@pytest.mark.parametrize("block", EXECUTED, ids=lambda b: b.id)
def test_executed_block_runs(block, tmp_path, tmp_path_factory, monkeypatch, capsys):
    """The block as a user runs it, in an empty folder (``run-with`` overrides appended to ``fairmt train``); on a
    page marked ``<!-- one-folder -->``, in the page's folder after the page's earlier blocks. The tiny model of
    ``gacl/tiny_offline`` is built by the first block that runs it and copied where later ones build it again
    (:func:`_tiny_original_in`)."""
    data = needs.shared_data_dir()
    if data is not None:
        monkeypatch.setenv("FAIRMT_DATA", str(data))
    needs.require(
        *block.needs, who=block.id
    )  # <!-- needs: ... --> (tests/support/needs.py): skips naming what is missing
    if not one_folder(block.page):
        monkeypatch.chdir(tmp_path)
        _run_block(block, data, capsys, tmp_path_factory)
        return
    folder = _FOLDERS.setdefault(block.page, tmp_path_factory.mktemp("page"))
    monkeypatch.chdir(folder)
    for earlier in [b for b in EXECUTED if b.page == block.page and b.line <= block.line and b.id not in _DONE]:
        if any(map(needs.missing, earlier.needs)):
            continue  # an earlier block that cannot run here (a block that needs what it makes says so itself)
        _DONE.add(earlier.id)
        _run_block(earlier, data, capsys, tmp_path_factory)


def _run_block(block: Block, data, capsys, tmp_path_factory) -> None:
    from fairmt.cli import main

    if block.lang == "python":
        exec(compile(block.code, block.id, "exec"), {"__name__": "__docs__"})  # noqa: S102 - the page's own code
        return
    assert block.lang == "bash", f"{block.id}: an executed block is bash or python"
    for line in shell_commands(block.code):
        words = _fairmt_words(line)
        assert words is not None and line.startswith("fairmt "), (
            f"{block.id}: `{line}` is not a fairmt command: mark the block <!-- not-runnable: why -->"
        )
        words = _fairmt_words(os.path.expandvars(line))  # $FAIRMT_DATA/... as a shell expands it
        if block.marker == "run-with" and words[0] in ("train", "sweep"):
            words += shlex.split(block.arg)
        if _needs_data(words):
            needs.require("data", who=f"{block.id} (`fairmt {' '.join(words[:2])}`)")
        reused = _tiny_original_in(words)
        rc = main(words)
        out = capsys.readouterr()
        if reused is None:
            _keep_tiny_original(words, tmp_path_factory)
        else:  # the recipe took the copy as its model, as on a second run
            assert "building the tiny model" not in out.out, f"{block.id}: the copied tiny model was not reused"
        assert rc == 0, f"{block.id}: `fairmt {' '.join(words)}` exited {rc}: {out.err[-2000:]}"


_TINY = "outputs/tiny-offline"  # where gacl/tiny_offline builds its model and data (the recipe's `model`, `data.train`)
_TINY_BUILT: dict[tuple[str, ...], Path] = {}  # the tiny_model overrides -> a copy of the first model built with them


def _tiny_key(words: list[str]) -> tuple[str, ...] | None:
    """For ``fairmt train gacl/tiny_offline`` building its model in the default place: the overrides that shape the
    model it builds (``tiny_model.*``); None for any other command."""
    if words[:2] != ["train", "gacl/tiny_offline"] or any(w.startswith(("model=", "data.train=")) for w in words):
        return None
    return tuple(sorted(w for w in words if w.startswith("tiny_model.")))


def _tiny_original_in(words: list[str]) -> Path | None:
    """The tiny model (and its data) another block already built with the same ``tiny_model`` settings, copied into
    this block's folder, where the recipe reuses it as it does on a user's second run (the build itself, from an
    empty folder, runs in the first block that needs it, and in tests/recipes/test_demo.py): three blocks pretrain
    the same model otherwise. The copy keeps the files' times, so the original's held-out scores kept beside it
    (fairmt.recipes.gacl.tiny.tiny_before_after) are reused too."""
    import shutil

    key = _tiny_key(words)
    if key is None or key not in _TINY_BUILT or Path(_TINY).exists():
        return None
    shutil.copytree(_TINY_BUILT[key], _TINY)
    return Path(_TINY)


def _keep_tiny_original(words: list[str], tmp_path_factory) -> None:
    import shutil

    key = _tiny_key(words)
    if key is None or key in _TINY_BUILT or not Path(_TINY, "original").is_dir():
        return
    keep = tmp_path_factory.mktemp("tiny-offline")
    for name in ("original", "finetune.jsonl"):
        (shutil.copytree if name == "original" else shutil.copy2)(Path(_TINY, name), keep / name)
    _TINY_BUILT[key] = keep


def _needs_data(words: list[str]) -> str | None:
    if words[:1] == ["train"]:
        from fairmt.commands.train import builtin_recipes, recipe_needs

        path = builtin_recipes().get(words[1])
        local = recipe_needs(path)[1] if path else []
        return ", ".join(n for n in local if n.startswith("FAIRMT_DATA")) or None
    return None


def test_every_block_is_counted_and_most_are_run():
    """Every block is one of the kinds (so the counts in the report are all of them), and the blocks that run here
    outnumber none of the kinds by accident: a page of only marked blocks is allowed, the whole site is not."""
    executed, elsewhere = len(EXECUTED), sum(b.marker == "runs-in" for b in ALL)
    marked = sum(b.marker == "not-runnable" for b in ALL)
    assert executed + elsewhere + marked == len(ALL)
    assert executed + elsewhere >= 8, (executed, elsewhere, marked)
    print(f"doc blocks: {executed} executed here, {elsewhere} run by other tests, {marked} not runnable here")


# ------------------------------------------------------------------------------------ generated references


def test_the_recipe_reference_names_every_key_of_every_family():
    from fairmt.recipes._schema import SCHEMAS

    page = reference.recipe_reference_md()
    sections = dict(re.findall(r"^## `method: (\w+)`\n(.*?)(?=^## |\Z)", page, flags=re.S | re.M))
    assert set(sections) == set(SCHEMAS)
    for family, keys in reference.recipe_keys().items():
        missing = [k for k in keys if f"| `{k}` |" not in sections[family]]
        assert not missing, (family, missing)
        assert "data.train" in keys if family == "gacl" else True
    # the values a Literal allows are listed: a key with a choice says its choices
    assert "| `geneval.metric` | one of: `explicit_accuracy`, `accuracy` | `explicit_accuracy` |" in sections["gacl"]


def test_the_cli_reference_names_every_command_and_option():
    page = reference.cli_md()
    commands = reference.cli_options()
    assert {"fairmt train", "fairmt eval winomt", "fairmt data corpora", "fairmt recipes", "fairmt sweep"} <= set(
        commands
    )
    for command, options in commands.items():
        start = page.index(f"`{command}`\n\n")
        end = page.find("\n#", start + 1)
        section = page[start : end if end > 0 else None]
        missing = [o for o in options if f"`{o}`" not in section]
        assert not missing, (command, missing)


def test_the_shipped_recipe_list_is_every_builtin_recipe():
    from fairmt.commands.train import builtin_recipes

    page = reference.recipes_md()
    assert all(f"## {name}\n" in page for name in builtin_recipes())


# ------------------------------------------------------------------------------------ hints and the README


HINT = re.compile(r"`(fairmt [^`]+)`")


def _hints() -> list[tuple[str, str]]:
    """Every backticked ``fairmt ...`` command line in fairmt's source (messages, help, corpus listings), with
    adjacent string literals joined (``"... celeba_resnet50 " "data.root=FOLDER"``)."""
    out = []
    for path in sorted((ROOT / "fairmt").rglob("*.py")):
        text = re.sub(r'"\s*\n\s*f?"', "", path.read_text(encoding="utf-8"))
        for m in HINT.finditer(text):
            cmd = " ".join(m.group(1).split())
            if not any(c in cmd for c in '{}…<>[]|#"') and "..." not in cmd and cmd != "fairmt extension":
                # ("fairmt extension": a kind of departure from a paper in the cards, not a command)
                out.append((str(path.relative_to(ROOT)), cmd))
    return sorted(set(out))


def _check_hint(words: list[str]) -> None:
    """A hint names real commands and options (a mention such as `fairmt eval winomt --json` need not be a whole
    command line), and a built-in recipe with its overrides passes the recipe checks."""
    from fairmt.cli import _parser

    parser, rest = _parser(), list(words)
    while rest:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or rest[0] not in subs[0].choices:
            break
        parser = subs[0].choices[rest.pop(0)]
    assert (
        not [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        or not rest
        or rest[0].startswith("-")
    ), f"`fairmt {' '.join(words)}`: no command {rest[0]!r}"
    unknown = [w for w in rest if w.startswith("--") and w.split("=")[0] not in parser._option_string_actions]
    assert not unknown, f"`fairmt {' '.join(words)}`: no option {unknown} of `{parser.prog}`"
    if parser.prog in ("fairmt train", "fairmt sweep") and rest and not rest[0].startswith("-"):
        from fairmt.commands.train import builtin_recipes, load_recipe

        if rest[0] in builtin_recipes():
            load_recipe(rest[0], [w for w in rest[1:] if "=" in w and not w.startswith("-")])


def test_every_command_fairmt_tells_a_user_to_type_parses_and_validates():
    hints = _hints()
    assert (
        "fairmt/data/corpora.py",
        "fairmt train ccd/minilm_cda data.tuples=tuples.jsonl data.cda_source=null",
    ) in hints
    assert ("fairmt/data/corpora.py", "fairmt train sampling/celeba_resnet50 data.root=FOLDER") in hints
    failed = []
    for path, cmd in hints:
        try:
            _check_hint(shlex.split(cmd)[1:])
        except Exception as err:  # noqa: BLE001 - reported all together
            failed.append(f"{path}: {err}")
    assert not failed, "\n".join(failed)


def test_the_data_corpora_ccd_hint_runs(tmp_path, monkeypatch, capsys):
    """`fairmt data corpora`'s two CCD commands, run: CDA tuples from a small English text, then the recipe on them
    (its dry run: every check the real run makes before loading weights)."""
    from fairmt.cli import main
    from fairmt.data.corpora import CORPORA

    hint = CORPORA["news-commentary-v15"].prepare
    augment, train = (" ".join(h.split()) for h in HINT.findall(hint))
    monkeypatch.chdir(tmp_path)
    sentences = [
        "The doctor said she would come back tomorrow.",
        "He is a nurse and his patients like him.",
        "The engineer finished her design last week.",
        "She told the manager that he was late.",
    ] * 3
    Path("news-commentary-v15.en").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    assert main(shlex.split(augment)[1:]) == 0
    assert Path("tuples.jsonl").stat().st_size > 0
    from fairmt.commands.train import load_recipe

    words = shlex.split(train)[1:]
    config = load_recipe(words[1], words[2:])
    assert config["data"]["tuples"] == "tuples.jsonl" and config["data"].get("cda_source") is None
    capsys.readouterr()


def _inline_commands() -> list[tuple[str, str]]:
    """Every backticked ``fairmt ...`` command in the text of the docs and the README (outside code blocks, which the
    block tests cover), placeholders (``{}…<>[]|#``, ``...``) aside. troubleshooting.md is left out: its commands
    show errors on purpose."""
    from doc_blocks import FENCE, pages

    out = []
    for page in pages():
        if page.name == "troubleshooting.md":
            continue
        text = FENCE.sub("", page.read_text(encoding="utf-8"))
        for m in HINT.finditer(text):
            cmd = " ".join(m.group(1).split())
            if not any(c in cmd for c in '{}…<>[]|#"') and "..." not in cmd and cmd != "fairmt extension":
                out.append((str(page.relative_to(ROOT)), cmd))
    return sorted(set(out))


def test_every_command_in_the_docs_text_parses_and_validates():
    """The commands written inline in the pages (tables of commands, "run `fairmt ...`") name real commands and
    options, and a built-in recipe's overrides and each value of a sweep's ``--grid`` pass the recipe checks."""
    from fairmt.commands.train import builtin_recipes, load_recipe
    from fairmt.sweep.spec import parse_grid

    commands = _inline_commands()
    assert ("docs/reproducing/gacl.md", "fairmt train gacl/small100_en-de_official") in commands
    failed = []
    for page, cmd in commands:
        words, grids, rest = shlex.split(cmd)[1:], [], []
        while words:
            w = words.pop(0)
            if w in ("--grid", "--range") and words:  # a range's bounds are not a value: only the grid's are checked
                value = words.pop(0)
                if w == "--grid":
                    grids.append(value)
            else:
                rest.append(w)
        try:
            _check_hint(rest)
            if grids and len(rest) > 1 and rest[1] in builtin_recipes():
                overrides = [w for w in rest[2:] if "=" in w and not w.startswith("-")]
                for key, texts in parse_grid(grids)[1].items():
                    for text in texts:
                        load_recipe(rest[1], [*overrides, f"{key}={text}"])
        except Exception as err:  # noqa: BLE001 - reported all together
            failed.append(f"{page}: `{cmd}`: {err}")
    assert not failed, "\n".join(failed)


def test_readme_is_short_and_keeps_the_test_command_ci_reads():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "cmd=$(.ci/readme-line test-command)" in ci and ".ci/readme-only" in ci
    line = [str(ROOT / ".ci" / "readme-line")]
    r = subprocess.run([*line, "test-command"], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "OMP_NUM_THREADS=1 python -m pytest -q -ra -n 2 --dist loadfile"
    r = subprocess.run([*line, "install-command"], capture_output=True, text=True, check=True)  # .ci/readme-only's
    assert r.stdout.startswith("python3 -m venv .venv && ") and '-e ".[all,dev]"' in r.stdout, r.stdout
    assert "mkdocs serve" in text and "fairmt demo" in text
    for page in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / page).is_file(), page


def test_fairmt_recipes_is_a_table_with_a_family_filter(capsys, monkeypatch, tmp_path):
    from fairmt.cli import main
    from fairmt.commands.train import builtin_recipes

    monkeypatch.setenv("FAIRMT_DATA", str(tmp_path))  # nothing there: the data recipes need data
    assert main(["recipes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["recipe", "family", "paper", "status"]
    rows = {ln.split()[0]: ln for ln in lines[2:] if ln.split() and ln.split()[0] in builtin_recipes()}
    assert set(rows) == set(builtin_recipes())  # one line per recipe: no description reflowed into it
    assert rows["gacl/tiny_offline"].endswith("ready here")
    assert (
        rows["gacl/small100_en-de"].endswith("needs Hub download") and "Lee et al. 2023" in rows["gacl/small100_en-de"]
    )
    assert rows["ccd/minilm_cda"].endswith("needs data") and "->" not in rows["ccd/minilm_cda"]
    assert main(["recipes", "ccd"]) == 0
    ccd = [ln.split()[0] for ln in capsys.readouterr().out.splitlines()[2:] if ln.startswith("ccd/")]
    assert ccd == sorted(n for n in builtin_recipes() if n.startswith("ccd/"))
    assert main(["recipes", "nope"]) == 2
    assert "no recipe family 'nope': the families are ccd, classification, gacl, sampling" in capsys.readouterr().err
    assert main(["recipes", "ccd", "--long"]) == 0  # the recipe's comment as written: its results table stays rows
    out = capsys.readouterr().out
    assert "\n      CCED gap (150 held-out tuples)" in out


# ------------------------------------------------------------------------------------ method and paper pages

METHOD_PAGES = ("gacl", "ccd", "dpce-adept", "cscl", "fcl", "sampling", "baselines")
PAPER_PAGES = ("gacl", "ccd", "cscl", "fcl", "sampling")


@pytest.mark.parametrize("name", METHOD_PAGES)
def test_every_method_page_runs_its_trainer_and_shows_its_paper_card(name):
    """Issue 39: each method page has its formula, the Trainer as a drop-in in a block this file executes, and the
    card of a recipe (a placeholder docs_gen/cards.py fills at build time, so the table cannot go stale)."""
    from fairmt.commands.train import builtin_recipes
    from fairmt.recipes.cards import card_path

    sys.path.insert(0, str(ROOT / "docs_gen"))
    import cards

    page = f"docs/methods/{name}.md"
    text = (ROOT / page).read_text(encoding="utf-8")
    assert "## The formula" in text, f"{page}: no formula section"
    runs = [b for b in EXECUTED if b.page == page and b.lang == "python" and re.search(r"Trainer\(", b.code)]
    assert runs and all(".train()" in b.code for b in runs), f"{page}: no executed Trainer drop-in"
    named = cards.CARD.findall(text)
    assert named, f"{page}: no <!-- paper-card: RECIPE --> placeholder"
    recipes = builtin_recipes()
    assert all(r in recipes and card_path(recipes[r]).is_file() for r in named), (page, named)


def test_the_paper_card_placeholder_becomes_the_cards_table_and_a_wrong_one_fails_the_build():
    sys.path.insert(0, str(ROOT / "docs_gen"))
    import cards

    from fairmt.commands.train import paper_card

    page = "intro\n\n<!-- paper-card: classification/fcl -->\n\nafter\n"
    out = cards.expand(page)
    table = paper_card("classification/fcl").table().partition("\n\n")[2]
    assert "paper-card" not in out and table in out and out.startswith("intro\n\n**`classification/fcl`**")
    assert "| `stages.train.fcl_beta` | (silent) | 0.1 |" in out
    with pytest.raises(cards.CardError, match="gacl/tiny_offline.*has no paper card"):
        cards.expand("<!-- paper-card: gacl/tiny_offline -->\n")
    with pytest.raises(cards.CardError, match="no built-in recipe 'nope/x'"):
        cards.expand("<!-- paper-card: nope/x -->\n")
    with pytest.raises(cards.CardError, match="names 0 papers"):
        cards.departures_md("Nobody et al.")


def test_each_seed_paper_has_its_page_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for name in PAPER_PAGES:
        text = (ROOT / "docs" / "reproducing" / f"{name}.md").read_text(encoding="utf-8")
        assert f"reproducing/{name}.md" in nav
        assert "## Each table and figure → the command" in text and "## What fairmt gets, on what data" in text
        assert "<!-- paper-departures: " in text
    for name in METHOD_PAGES:
        assert f"methods/{name}.md" in nav
