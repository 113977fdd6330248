"""The boundaries of docs/design.md, checked on the source: desktop -> tracker -> core, never back;
only desktop imports Qt; heavy libraries are imported inside functions, never at module level."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "core": {"tracker", "desktop", "sqlalchemy", "sqlmodel", "alembic", "PySide6", "pyqtgraph"},
    "tracker": {"desktop", "PySide6", "pyqtgraph"},
    "desktop": set(),
}
HEAVY = {"torch", "transformers", "tensorboard", "lightning", "pytorch_lightning", "pandas",
         "safetensors", "peft", "wandb"}


def _imports(tree: ast.AST, top_level_only: bool) -> set[str]:
    nodes = tree.body if top_level_only else ast.walk(tree)
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _modules(package: str):
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_point_one_way_and_heavy_ones_are_lazy(package):
    problems = []
    for path in _modules(package):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        wrong = _imports(tree, top_level_only=False) & FORBIDDEN[package]
        heavy = _imports(tree, top_level_only=True) & HEAVY
        if wrong:
            problems.append(f"{path.relative_to(ROOT)} imports {sorted(wrong)}")
        if heavy:
            problems.append(f"{path.relative_to(ROOT)} imports {sorted(heavy)} at module level")
    assert problems == []
