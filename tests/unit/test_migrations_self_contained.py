"""The migrations are self-contained: an old migration gives the same result whatever today's
code and environment say. They import nothing from eros (the schema, the settings) and read
no environment; what a run needs from outside (the vector size) reaches them from env.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

VERSIONS = Path(__file__).resolve().parents[2] / "eros" / "db" / "migrations" / "versions"
SCRIPTS = sorted(VERSIONS.glob("*.py"))

#: the only packages a migration may import (none of them ours).
ALLOWED = {"__future__", "alembic", "sqlalchemy", "pgvector"}


def _imports(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "__import__"):
            names.add("__import__")
    return names


def test_there_are_migrations() -> None:
    assert len(SCRIPTS) >= 30  # 0001-0031 (no 0014)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_a_migration_imports_nothing_of_ours_and_reads_no_environment(script: Path) -> None:
    tree = ast.parse(script.read_text(encoding="utf-8"))
    imported = _imports(tree)
    assert {name.split(".")[0] for name in imported} <= ALLOWED, imported
    words = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not words & {"environ", "getenv", "environb", "load_settings", "importlib"}, words
