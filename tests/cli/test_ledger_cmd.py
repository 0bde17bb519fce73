"""``eros ledger`` and ``eros ledger-log`` at the edge (issue 33): the bind check, the help a
person deploying it reads, and the access log as a command prints it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, text

from eros.cli import main
from testkit.redis_process import free_port
from tests.cli.conftest import ROOT, Cli


def test_refuses_a_public_address_without_a_token() -> None:
    runner = CliRunner()
    for host in ("0.0.0.0", "192.0.2.7", "::"):
        res = runner.invoke(main, ["ledger", "--host", host, "--port", "1"],
                            env={"EROS_LEDGER_TOKEN": None})
        assert res.exit_code == 1, res.output
        assert f"refusing to bind {host}: set EROS_LEDGER_TOKEN" in res.output
    short = runner.invoke(main, ["ledger", "--host", "0.0.0.0"],
                          env={"EROS_LEDGER_TOKEN": "short"})
    assert short.exit_code != 0 and "EROS_LEDGER_TOKEN" in short.output


def test_help_explains_the_reverse_proxy() -> None:
    out = CliRunner().invoke(main, ["ledger", "--help"]).output
    assert "reverse proxy with TLS" in out and "EROS_LEDGER_TOKEN" in out
    assert "--secure-cookies" in out and "127.0.0.1" in out


def test_ledger_log_prints_ids_only(cli: Cli, engine: Engine) -> None:
    user, memory = uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO engine.ledger_access_log (action, user_id, object_id)"
                          " VALUES ('view_user', :u, NULL), ('forget_memory', :u, :m),"
                          " ('view_user', :o, NULL)"),
                     {"u": user, "m": memory, "o": uuid.uuid4()})
    res = cli("ledger-log", str(user))
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert len(lines) == 2 and "forget_memory" in lines[0] and str(memory) in lines[0]
    doc = json.loads(cli("ledger-log", "--json").out)
    assert len(doc) == 3 and {d["action"] for d in doc} == {"view_user", "forget_memory"}


def test_without_a_token_it_prints_a_login_url_once(db_url: str, cli_env: Any) -> None:
    """`eros ledger` with no EROS_LEDGER_TOKEN: a random token, shown once as a login URL
    that logs a browser in (and a wrong one does not)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "eros", "ledger", "--port", str(port)],
                            env=cli_env(DATABASE_URL=db_url), cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        url = ""
        for line in proc.stderr:
            if "/login?token=" in line:
                url = line.strip()
                break
        assert url.startswith(f"http://127.0.0.1:{port}/login?token=")
        token = url.split("token=", 1)[1]
        assert len(token) >= 40
        opener = urllib.request.build_opener(_NoRedirect)
        deadline = time.monotonic() + 30
        while True:
            try:
                res = opener.open(url, timeout=5)
                break
            except urllib.error.HTTPError as err:
                res = err
                break
            except OSError:
                assert time.monotonic() < deadline, "the ledger did not start"
                time.sleep(0.2)
        assert res.status == 303 and "eros_ledger_session=" in res.headers["Set-Cookie"]
        with pytest.raises(urllib.error.HTTPError) as wrong:
            opener.open(url[:-1] + ("a" if token[-1] != "a" else "b"), timeout=5)
        assert wrong.value.code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=20)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None
