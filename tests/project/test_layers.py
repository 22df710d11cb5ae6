"""The layering of DESIGN.md, checked on the source.

Every top-level part of ``fairmt`` stands on a floor of :data:`FLOORS`; a module imports only parts on lower floors
(or its own part), never a sibling on its own floor, and there is no import cycle between modules anywhere in the
package. Lazy imports inside functions count like the others (a cycle through them is a cycle all the same); imports
under ``if TYPE_CHECKING:`` do not run and count for neither check.

The old import paths kept for one release (:mod:`fairmt._deprecated`) name their new homes as strings
(``importlib``), which these checks do not see: ``fairmt.eval.runner`` and ``fairmt.eval.mtbias.translate_suite``
lead up to ``fairmt.model_eval`` until they go in 0.2. The project itself never uses them (checked below).
"""

from __future__ import annotations

import ast
import functools
import sys
from collections import deque
from pathlib import Path

import procs
import sources

ROOT = Path(__file__).resolve().parents[2] / "fairmt"

FLOORS: list[tuple[str, ...]] = [
    ("errors", "_deprecated"),  # no fairmt imports at all
    ("citations", "hub", "outputs"),  # outputs: the checks of every output path, run folders, valid JSON
    ("distributed", "forking"),  # process-group helpers for every layer, torch only when asked; forking: a forked
    # child in place of a fresh interpreter, where that is safe (the standard library only)
    ("losses",),  # pure PyTorch
    ("data",),
    ("models",),
    ("trainers", "fairseq"),  # fairseq: the fairseq front end, beside the Trainers, never importing one
    ("translate",),  # backends, cache, sharded generation: strings out
    ("eval",),  # scores strings and vectors
    ("evaluate_modules", "model_eval"),  # model_eval: a model in, scores out (translate + eval)
    ("recipes", "integrations"),  # recipes: the recipe families (registry, schemas, runners, cards);
    # integrations: fairmt in other libraries' loops (sentence-transformers evaluators)
    ("demo",),  # a scripted GACL run: the GACL recipe's tiny model (fairmt.recipes.gacl.tiny), its folder rule
    ("sweep",),  # the engine of `fairmt sweep`: reads recipes through fairmt.recipes, never the CLI layer above it
    ("commands", "scripts"),  # scripts: the old paths of the recipe runners (deprecated shims over fairmt.recipes,
    # until 0.2)
    ("cli",),
    ("__main__",),
]
"""Bottom first. The package root (``fairmt/__init__.py``) is the lazy facade over all of them: it imports nothing
when it runs (its names load on first access), and ``from fairmt import __version__`` is allowed from anywhere."""

ONE_LAYER: set[frozenset[str]] = set()
"""Parts of one floor that are one layer split over two folders, and may import each other (never in a cycle): none
now (the demo, a scripted GACL run, stands on its own floor above the recipes it reads). Other parts of a floor are
siblings that never meet."""

FLOOR = {part: i for i, floor in enumerate(FLOORS) for part in floor}


# ------------------------------------------------------------------------------------------------ reading imports


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, module: str, is_package: bool) -> tuple[tuple[list[str], int], ...]:
    """``(names, line)`` for every import statement of the file that can run (TYPE_CHECKING blocks left out):
    ``import a.b`` gives ``[a.b]``; ``from a import b, c`` gives ``[a.b, a.c, a]`` (the caller keeps the ones that
    are modules, else ``a``). Parsed once per text: the checks here read the same package several times."""
    return _parsed_imports(path.read_text(encoding="utf-8"), module, is_package)


@functools.cache
def _parsed_imports(text: str, module: str, is_package: bool) -> tuple[tuple[list[str], int], ...]:
    return tuple(_imports_in(sources.tree(text), module, is_package))


def _imports_in(tree: ast.Module, module: str, is_package: bool):
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield [alias.name], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield [f"{target}.{alias.name}" for alias in node.names] + [target], node.lineno


def import_graph(root: Path = ROOT) -> tuple[dict[str, set[str]], dict[str, list[tuple[str, int]]]]:
    """The package's module graph: ``module → modules it imports`` (inside the package; for ``from a import b`` the
    module ``a.b`` if there is one, else ``a``), and ``module → [(imported name, line)]`` for every import, outside
    ones included."""
    files = {_module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    every: dict[str, list[tuple[str, int]]] = {m: [] for m in files}
    for module, path in files.items():
        for names, line in _imports(path, module, path.name == "__init__.py"):
            *submodules, target = names
            found = [n for n in submodules if n in files] or [target]
            for name in found:
                every[module].append((name, line))
                if name in files and name != module:
                    graph[module].add(name)
    return graph, every


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle: the strongly connected components with more than one module (Tarjan), each given as one
    closed path through it, e.g. ``[a, b, a]``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(comp)

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_closed_path(graph, comp) for comp in components]


def _closed_path(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """A shortest cycle through the first module of a strongly connected component (breadth-first inside it)."""
    start = min(comp)
    parents: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(graph[v] & comp):
            if w == start:
                path = [v]
                while parents[path[-1]] is not None:
                    path.append(parents[path[-1]])
                return path[::-1] + [start]
            if w not in parents:
                parents[w] = v
                queue.append(w)
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover - a component always has one


def layer_violations(every: dict[str, list[tuple[str, int]]]) -> list[str]:
    """Imports that go up the floors or sideways to a sibling; transformers in losses; the external fairseq outside
    the fairseq front end."""
    bad = []
    for module, imports in sorted(every.items()):
        parts = module.split(".")
        part = parts[1] if len(parts) > 1 else None  # None: the package root
        for name, line in imports:
            target = name.split(".")
            where = f"{module.replace('.', '/')}.py:{line}"
            if target[0] == "transformers" and part == "losses":
                bad.append(f"{where} imports transformers (losses are pure PyTorch)")
            if target[0] == "fairseq" and part != "fairseq":
                bad.append(f"{where} imports fairseq (only fairmt.fairseq may)")
            if target[0] != "fairmt" or len(target) < 2 or target[1] not in FLOOR or part is None:
                continue  # outside fairmt, the root's names (__version__), or the root itself (lazy, checked below)
            if target[1] == part:
                continue
            if FLOOR[target[1]] > FLOOR[part]:
                bad.append(f"{where} imports {name}: fairmt.{target[1]} is above fairmt.{part}")
            elif FLOOR[target[1]] == FLOOR[part] and frozenset({part, target[1]}) not in ONE_LAYER:
                bad.append(f"{where} imports {name}: fairmt.{target[1]} is beside fairmt.{part}, on the same floor")
    return bad


# ------------------------------------------------------------------------------------------------ the checks


def test_every_part_of_the_package_has_a_floor():
    parts = {p.stem for p in ROOT.glob("*.py") if p.name != "__init__.py"}
    parts |= {p.name for p in ROOT.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    assert parts - set(FLOOR) == set(), "give these parts of fairmt a floor in tests/project/test_layers.py FLOORS"
    assert set(FLOOR) - parts == set(), "FLOORS names parts that no longer exist"
    assert {"translate", "fairseq", "evaluate_modules", "hub", "model_eval", "distributed"} <= parts


def test_each_part_imports_only_the_floors_below_it():
    _, every = import_graph()
    assert not layer_violations(every), "\n".join(layer_violations(every))


def test_the_package_root_imports_nothing_when_it_runs():
    """``import fairmt`` stays lazy: the root's imports are all under TYPE_CHECKING."""
    _, every = import_graph()
    assert [n for n, _ in every["fairmt"] if n.startswith("fairmt.")] == []


def test_sweep_never_imports_the_cli_layer():
    """``fairmt sweep``'s engine reads recipes, their checks and their families through :mod:`fairmt.recipes`, never
    through ``fairmt.commands`` or ``fairmt.cli`` (lazy imports included): the CLI stands on it, not beside it."""
    _, every = import_graph()
    up = [
        f"{m}: {name} (line {line})"
        for m, imports in sorted(every.items())
        if m.startswith("fairmt.sweep")
        for name, line in imports
        if name.split(".")[:2] in (["fairmt", "commands"], ["fairmt", "cli"])
    ]
    assert up == [], "\n".join(up)
    assert FLOOR["sweep"] < FLOOR["commands"] and frozenset({"commands", "sweep"}) not in ONE_LAYER


def test_no_import_cycle_anywhere():
    graph, _ = import_graph()
    cycles = find_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" → ".join(c) for c in cycles)


def test_inside_translate_the_backends_stand_on_the_cache_and_the_runner_on_both():
    """runner → backends → cache, never back: the cache (format, fingerprints, lock) imports no backend, and no
    backend imports the runner."""
    graph, _ = import_graph()
    inside = {
        m: {n for n in deps if n.startswith("fairmt.translate")}
        for m, deps in graph.items()
        if m.startswith("fairmt.translate")
    }
    assert inside["fairmt.translate.cache"] == set()
    for module, deps in inside.items():
        if module.startswith("fairmt.translate.backends"):
            assert deps <= {"fairmt.translate.cache"} | {d for d in deps if d.startswith("fairmt.translate.backends")}
    assert {"fairmt.translate.backends", "fairmt.translate.cache"} <= inside["fairmt.translate.runner"]
    assert inside["fairmt.translate.backends.hf"] == {"fairmt.translate.cache"}


def test_the_checks_catch_a_planted_cycle_and_a_planted_upward_import(tmp_path):
    """The checks fail when they should: on a tiny package with a cycle through a lazy import, and on fairmt's own
    graph with the translation cache importing a backend back (the cycle the translate layer was made to remove)."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub.a import f\n")  # a package re-export is no cycle
    (pkg / "sub" / "a.py").write_text("from pkg.b import g\n\ndef f():\n    return g()\n")
    (pkg / "b.py").write_text("def g():\n    from pkg.sub import a  # lazy, still a cycle\n    return a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import b\n")
    graph, _ = import_graph(pkg)
    assert find_cycles(graph) == [["pkg.b", "pkg.sub.a", "pkg.b"]]
    (pkg / "b.py").write_text("def g():\n    return 1\n")
    assert find_cycles(import_graph(pkg)[0]) == []

    graph, every = import_graph()
    graph["fairmt.translate.cache"].add("fairmt.translate.backends.hf")
    cycle = ["fairmt.translate.backends.hf", "fairmt.translate.cache", "fairmt.translate.backends.hf"]
    assert cycle in find_cycles(graph)
    every["fairmt.translate.runner"].append(("fairmt.eval.geneval", 1))
    every["fairmt.trainers.gacl"].append(("fairmt.fairseq.criterion", 2))
    assert layer_violations(every) == [
        "fairmt/trainers/gacl.py:2 imports fairmt.fairseq.criterion: fairmt.fairseq is beside fairmt.trainers, on the "
        "same floor",
        "fairmt/translate/runner.py:1 imports fairmt.eval.geneval: fairmt.eval is above fairmt.translate",
    ]


def test_translate_and_process_helpers_import_neither_torch_nor_transformers():
    """What the file-based commands load stays light: the layers' entry points import torch only when they run."""
    code = (
        "import sys, fairmt.translate, fairmt.model_eval, fairmt.distributed, fairmt.eval.winomt.detectors, "
        "fairmt.commands._backend; print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    out = procs.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ------------------------------------------------------------------------------------------------ moved names

OLD_PATHS = {  # old path → new path of the same object
    "fairmt.eval.runner:generate_translations": "fairmt.translate:generate_translations",
    "fairmt.eval.runner:read_cache": "fairmt.translate.cache:read_cache",
    "fairmt.eval.runner:model_fingerprint": "fairmt.translate.cache:model_fingerprint",
    "fairmt.eval.runner:as_translator": "fairmt.translate:as_translator",
    "fairmt.eval.runner:flores_to_model_lang": "fairmt.translate:flores_to_model_lang",
    "fairmt.eval.runner:evaluate_geneval": "fairmt.model_eval:evaluate_geneval",
    "fairmt.eval.runner:evaluate_flores": "fairmt.model_eval:evaluate_flores",
    "fairmt.eval.runner:translate_geneval": "fairmt.model_eval:translate_geneval",
    "fairmt.eval.runner:is_main_process": "fairmt.distributed:is_main_process",
    "fairmt.eval.runner:world_size": "fairmt.distributed:launch_world_size",
    "fairmt.eval.backends:get_backend": "fairmt.translate.backends:get_backend",
    "fairmt.eval.backends:Translator": "fairmt.translate.backends:Translator",
    "fairmt.eval.backends.hf:HFTranslator": "fairmt.translate.backends.hf:HFTranslator",
    "fairmt.eval.backends.ct2:cache_root": "fairmt.translate.backends.ct2:cache_root",
    "fairmt.eval.backends.openai:OpenAITranslator": "fairmt.translate.backends.openai:OpenAITranslator",
    "fairmt.eval.backends.causal_lm:CausalLMTranslator": "fairmt.translate.backends.causal_lm:CausalLMTranslator",
    "fairmt.eval.backends.prompting:clean_translation": "fairmt.translate.backends.prompting:clean_translation",
    "fairmt.eval.mtbias:translate_suite": "fairmt.model_eval:translate_suite",
    "fairmt.losses.distributed:gather_with_grad": "fairmt.distributed:gather_with_grad",
    "fairmt.eval.callbacks:GenEvalCallback": "fairmt.model_eval.callbacks:GenEvalCallback",
    "fairmt.scripts.gacl:main": "fairmt.recipes.gacl.runner:main",
    "fairmt.scripts.ccd:main": "fairmt.recipes.ccd.runner:main",
    "fairmt.scripts.ccd_validation:split_bias_ir": "fairmt.recipes.ccd.validation:split_bias_ir",
    "fairmt.scripts.dpce:main": "fairmt.recipes.ccd.dpce:main",
    "fairmt.scripts.adept:main": "fairmt.recipes.ccd.adept:main",
    "fairmt.scripts.classification:main": "fairmt.recipes.classification.runner:main",
    "fairmt.scripts.sampling:main": "fairmt.recipes.sampling.runner:main",
    "fairmt.scripts.cards:card_of_config": "fairmt.recipes.cards:card_of_config",
    "fairmt.scripts.recipe_checks:check_training": "fairmt.recipes._checks:check_training",
    "fairmt.scripts.recipe_schema:resolve_recipe": "fairmt.recipes._schema:resolve_recipe",
    "fairmt.data.fair_sampling:PairIndex": "fairmt.data.sampling:PairIndex",
    "fairmt.scripts.recipe_schema:GaclRecipe": "fairmt.recipes.gacl.schema:GaclRecipe",
}

_CHECK_OLD_PATHS = r"""
import importlib, warnings
out = {}
for old, new in old_paths.items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module, name = old.split(":")
        value = getattr(importlib.import_module(module), name)
    new_module, new_name = new.split(":")
    out[old] = {"same": value is getattr(importlib.import_module(new_module), new_name),
                "warnings": [[w.category.__name__, str(w.message), w.filename] for w in caught]}
"""
"""A user's code using the old paths (compiled as ``<string>``: the file each warning must point at)."""


def _forget_old_paths() -> None:
    """Put this process's old paths back as a fresh process has them: a whole moved module is imported again (its
    shim runs and warns), a moved name is looked up again (its module ``__getattr__`` warns). Only the shims' state
    goes: the new modules, which the rest of the tests hold, stay as they are."""
    for old in OLD_PATHS:
        module, name = old.split(":")
        if module in MOVED_MODULES:
            sys.modules.pop(module, None)  # the alias (the new module itself) the shim left there
        elif module in sys.modules:
            vars(sys.modules[module]).pop(name, None)  # the value moved_names cached on its first use


MOVED_MODULES = (
    "fairmt.eval.backends.hf",
    "fairmt.eval.backends.ct2",
    "fairmt.eval.backends.openai",
    "fairmt.eval.backends.causal_lm",
    "fairmt.eval.backends.prompting",
    "fairmt.eval.callbacks",
    "fairmt.losses.distributed",
    "fairmt.scripts.gacl",
    "fairmt.scripts.ccd",
    "fairmt.scripts.ccd_validation",
    "fairmt.scripts.dpce",
    "fairmt.scripts.adept",
    "fairmt.scripts.classification",
    "fairmt.scripts.sampling",
    "fairmt.scripts.cards",
    "fairmt.scripts.recipe_checks",
    "fairmt.data.fair_sampling",
)  # whole modules: the warning names the new module


def test_old_import_paths_work_and_warn_naming_the_new_one():
    """Each old path gives the very object of the new one, with one DeprecationWarning that names the new path and
    points at the line that used the old one (not at fairmt's shims or importlib). In this process, as a fresh one
    has the old paths (:func:`_forget_old_paths`): a process of its own paid 12 s of CPU for imports the tests have
    already made."""
    _forget_old_paths()
    scope: dict = {"__name__": "__old_paths__", "old_paths": dict(OLD_PATHS)}
    exec(compile(_CHECK_OLD_PATHS, "<string>", "exec"), scope)  # noqa: S102 - the test's own code
    results = scope["out"]
    assert sorted(results) == sorted(OLD_PATHS)
    bad = []
    for old, res in sorted(results.items()):
        new_module, new_name = OLD_PATHS[old].split(":")
        expected = new_module if old.split(":")[0] in MOVED_MODULES else f"{new_module}.{new_name}"
        ours = [w for w in res["warnings"] if w[0] == "DeprecationWarning" and "fairmt" in w[1]]
        if not (
            res["same"] and len(ours) == 1 and f"import {expected} instead" in ours[0][1] and ours[0][2] == "<string>"
        ):
            bad.append(f"{old}: {res}")
    assert not bad, "\n".join(bad)


OLD_MODULES = {old.split(":")[0] for old in OLD_PATHS} - {"fairmt.eval.mtbias"}


def test_nothing_in_the_project_uses_an_old_path():
    """fairmt, its tests and scripts import the new paths only (the old ones are for users' code)."""
    repo = ROOT.parent
    bad = []
    for folder in ("fairmt", "tests", "scripts"):
        for path in sorted((repo / folder).rglob("*.py")):
            module = _module_name(path, repo / folder)
            if module in OLD_MODULES:
                continue  # the old paths themselves
            for names, line in _imports(path, module, path.name == "__init__.py"):
                old = [n for n in names if n in OLD_MODULES or n == "fairmt.eval.mtbias.translate_suite"]
                if old:
                    bad.append(f"{path.relative_to(repo)}:{line} imports {old[0]}")
    assert not bad, "\n".join(bad)


# the public names of the one-file fairmt/eval/winomt/detectors.py before it became one module per analyser
DETECTOR_NAMES = [
    "ACL2019_UK_DICT_VERSION", "AR_FEMININE_SUFFIXES", "AR_PARTICLES", "CS_SPACY_MODEL", "CS_WORDS",
    "CzechSpacyDetector", "DE_DETERMINERS", "DE_FEMININE_ENDINGS", "F", "GenderDetector", "GermanDetector",
    "HE_FEMININE_SUFFIXES", "HE_PARTICLES", "IT_ARTICLES", "IT_FUNCTION_WORDS", "ItalianRuleDetector", "M",
    "MorfeuszDetector", "N", "PL_WORDS", "PymorphyDetector", "SlavicRuleDetector", "SpacyDetector", "StanzaDetector",
    "SuffixDetector", "TokenVoteDetector", "U", "acl2019_uk_dictionary", "available_languages", "czech_detector",
    "get_detector", "load_pymorphy", "majority", "polish_detector", "register_detector",
]  # fmt: skip


def test_winomt_detector_names_are_importable_where_they_were():
    import fairmt.eval.winomt.detectors as detectors

    assert sorted(detectors.__all__) == DETECTOR_NAMES
    missing = [n for n in DETECTOR_NAMES if not hasattr(detectors, n)]
    assert not missing
    analysers = [p.stem for p in (ROOT / "eval" / "winomt" / "detectors").glob("*.py") if p.stem != "__init__"]
    assert sorted(analysers) == [
        "base",
        "czech",
        "german",
        "italian",
        "polish",
        "pymorphy",
        "registry",
        "slavic_rules",
        "spacy_morph",
        "stanza_morph",
        "suffix",
    ]
