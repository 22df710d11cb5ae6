"""Static checks of the package's source for the security review of issue 13: no remote code, no unsafe
unpickling, no pickled model files, no unsafe YAML. An AST scan, so comments and docstrings do not count."""

from __future__ import annotations

import ast
from pathlib import Path

import sources

PACKAGE = Path(__file__).resolve().parents[2] / "fairmt"


def _calls():
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in sources.nodes(path):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
                yield path.relative_to(PACKAGE.parent), node.lineno, owner, name, node


def _kw(node: ast.Call, key: str):
    for k in node.keywords:
        if k.arg == key:
            return k.value
    return None


def test_no_remote_code_no_unsafe_loading():
    problems = []
    for where, line, owner, name, node in _calls():
        trc = _kw(node, "trust_remote_code")
        if trc is not None and not (isinstance(trc, ast.Constant) and trc.value is False):
            problems.append(f"{where}:{line}: trust_remote_code set")
        if owner == "torch" and name == "load":
            wo = _kw(node, "weights_only")
            if not (isinstance(wo, ast.Constant) and wo.value is True):
                problems.append(f"{where}:{line}: torch.load without weights_only=True")
        if owner == "yaml" and name in ("load", "load_all", "unsafe_load", "full_load"):
            problems.append(f"{where}:{line}: yaml.{name} (use yaml.safe_load)")
        if owner == "pickle" and name in ("load", "loads"):
            problems.append(f"{where}:{line}: pickle.{name}")
        if name == "extractall":
            problems.append(f"{where}:{line}: extractall (members must be checked one by one)")
    assert not problems, problems


def test_models_and_states_are_saved_as_safetensors():
    """torch.save writes pickles; every tensor file fairmt writes is safetensors (the stock Trainer's own
    optimizer/RNG/training_args files are the Trainer's, not fairmt's)."""
    saves = [f"{w}:{line}" for w, line, owner, name, _ in _calls() if owner == "torch" and name == "save"]
    allowed = {
        "fairmt/trainers/ccd.py",  # training_args.bin, as the stock Trainer writes it beside any model
        # the sequential adversaries' optimizer states in a checkpoint, beside (and as) the Trainer's optimizer.pt
        "fairmt/trainers/adversarial.py",
    }
    assert [s for s in saves if s.split(":")[0] not in allowed] == []
