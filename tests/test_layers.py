"""The layering of DESIGN.md: each layer imports only the layers above it (and never transformers in losses)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "fairmt"
LAYERS = ["losses", "data", "models", "trainers", "eval"]  # then cli/commands/scripts/demo, which may use all


def _imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, node.lineno


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_imports_only_layers_above(layer):
    below = set(LAYERS[LAYERS.index(layer) + 1:]) | {"cli", "commands", "scripts", "demo"}
    files = sorted((ROOT / layer).rglob("*.py"))
    assert files, f"no modules in fairmt/{layer}"
    bad = []
    for f in files:
        for name, line in _imports(f):
            parts = name.split(".")
            if parts[0] == "fairmt" and len(parts) > 1 and parts[1] in below:
                bad.append(f"{f.relative_to(ROOT.parent)}:{line} imports {name}")
            if layer == "losses" and parts[0] == "transformers":
                bad.append(f"{f.relative_to(ROOT.parent)}:{line} imports transformers (losses are pure PyTorch)")
    assert not bad, "\n".join(bad)
