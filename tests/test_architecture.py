"""The boundaries of docs/design.md, checked on the source: desktop -> tracker -> core, never back;
only desktop imports Qt; heavy libraries are imported inside functions, never at module level;
the database schema and SQL stay inside ``tracker/db``; views reach the tracker through services;
presenters, the views' plain-Python half, import no Qt."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "core": {"tracker", "desktop", "sqlalchemy", "alembic", "PySide6", "pyqtgraph"},
    "tracker": {"desktop", "PySide6", "pyqtgraph"},
    "desktop": set(),
    "desktop/presenters": {"PySide6", "pyqtgraph"},
}
HEAVY = {"torch", "transformers", "tensorboard", "lightning", "pytorch_lightning", "pandas",
         "safetensors", "peft", "wandb"}
# Modules only tracker/db may import: the ORM rows and the query builders.
PERSISTENCE = ("tracker.db.schema", "sqlalchemy")


def _imports(tree: ast.AST, top_level_only: bool, depth: int = 1) -> set[str]:
    """Imported module names, cut to their first ``depth`` dotted parts."""
    nodes = tree.body if top_level_only else ast.walk(tree)
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {".".join(name.split(".")[:depth]) for name in names}


def _parsed(root: Path, package: str):
    for path in sorted((root / package).rglob("*.py")):
        yield path.relative_to(root).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def layer_violations(root: Path) -> list[str]:
    problems = []
    for package, forbidden in FORBIDDEN.items():
        for name, tree in _parsed(root, package):
            wrong = _imports(tree, top_level_only=False) & forbidden
            heavy = _imports(tree, top_level_only=True) & HEAVY
            if wrong:
                problems.append(f"{name} imports {sorted(wrong)}")
            if heavy:
                problems.append(f"{name} imports {sorted(heavy)} at module level")
    return problems


def sql_outside_db(root: Path) -> set[str]:
    found = set()
    for package in ("tracker", "desktop"):
        for name, tree in _parsed(root, package):
            names = _imports(tree, False, 1) | _imports(tree, False, 3)
            if not name.startswith("tracker/db/") and names & set(PERSISTENCE):
                found.add(name)
    return found


def views_importing_tracker(root: Path) -> set[str]:
    return {name for name, tree in _parsed(root, "desktop/views")
            if "tracker" in _imports(tree, top_level_only=False)}


def test_imports_point_one_way_and_heavy_ones_are_lazy():
    assert layer_violations(ROOT) == []


def test_schema_and_sql_stay_in_tracker_db():
    assert sql_outside_db(ROOT) == set()


def test_views_never_import_tracker():
    """Views reach the tracker through the services and presenters (their records too)."""
    assert views_importing_tracker(ROOT) == set()
def test_a_planted_violation_of_each_contract_is_caught(tmp_path):
    plant = {
        "core/bad.py": "import PySide6\n",
        "desktop/presenters/paint.py": "def f():\n    from PySide6.QtGui import QColor\n",
        "tracker/eager.py": "import torch\n",
        "tracker/rows.py": "def f():\n    from tracker.db.schema import Run\n",
        "tracker/db/fine.py": "from sqlalchemy import select\n",
        "desktop/views/reach.py": "def f():\n    from tracker.store import Store\n",
    }
    for name, text in plant.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert layer_violations(tmp_path) == ["core/bad.py imports ['PySide6']",
                                          "tracker/eager.py imports ['torch'] at module level",
                                          "desktop/presenters/paint.py imports ['PySide6']"]
    assert sql_outside_db(tmp_path) == {"tracker/rows.py"}
    assert views_importing_tracker(tmp_path) == {"desktop/views/reach.py"}
