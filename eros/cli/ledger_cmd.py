"""``eros ledger`` (the memory ledger web application, docs/ledger.md) and ``eros ledger-log``
(who looked at whose ledger, and what was done — ids only)."""

from __future__ import annotations

import json
import uuid

import click

from eros.cli import main

_HELP = """Serve the memory ledger: a web page where a person sees what eros remembers about
a user, why (the turns each memory came from, its lineage, the guard's verdicts), runs a
recall, and erases or exports (docs/ledger.md). Needs the `ledger` extra
(pip install 'eros[ledger]').

\b
Log in with EROS_LEDGER_TOKEN (16 characters or more; scripts send
"Authorization: Bearer TOKEN"). Without it a random token is made at each start and
printed once, as a login URL, on this terminal; then only a loopback address may be bound.

\b
Behind a reverse proxy with TLS (the way to reach it from another machine):
  keep the default --host 127.0.0.1, set EROS_LEDGER_TOKEN, run with --secure-cookies,
  and let the proxy terminate TLS and forward to it, e.g. with nginx:
    location / { proxy_pass http://127.0.0.1:8400; }
  or Caddy: `reverse_proxy 127.0.0.1:8400`. Keep the proxy's access log free of query
  strings (a recall query is the user's text).

Every view of a user's ledger and every action is written to engine.ledger_access_log
(`eros ledger-log`); the server logs paths, never query strings or text.
"""


@main.command(help=_HELP)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; a non-loopback one needs EROS_LEDGER_TOKEN.")
@click.option("--port", type=click.IntRange(1, 65535), default=8400, show_default=True)
@click.option("--secure-cookies", is_flag=True,
              help="Mark the session cookie Secure (served over HTTPS through a proxy).")
def ledger(host: str, port: int, secure_cookies: bool) -> None:
    try:
        import eros.ledger.server as server
    except ImportError as err:
        raise click.ClickException(f"the ledger needs its extra: pip install 'eros[ledger]' "
                                   f"({err.name} is missing)") from None
    from eros.cli._common import runtime
    from eros.cli.inspect_cmds import broker_info
    from eros.providers import make_providers
    from eros.settings import load_settings

    server.check_bind(host, load_settings().eros_ledger_token)  # before starting anything
    with runtime() as rt:
        _, embedder = make_providers(rt.settings)
        server.serve(rt.engine, rt.settings, embedder, host=host, port=port,
                     broker_info=lambda: broker_info(rt), db_embedded=rt.services.db_embedded,
                     secure_cookies=secure_cookies,
                     announce=lambda line: click.echo(line, err=True))


@main.command(name="ledger-log")
@click.argument("user", type=click.UUID, required=False)
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
def ledger_log(user: uuid.UUID | None, limit: int, as_json: bool) -> None:
    """List the ledger's access log (engine.ledger_access_log), newest first: every view of
    a user's ledger and every action taken in `eros ledger` — time, action, user id and the
    memory or message acted on. Ids only."""
    from eros.cli._common import runtime
    from eros.ledger.db.ledger_sql import access_log

    with runtime() as rt, rt.engine.connect() as conn:
        rows = access_log(conn, user, limit=limit)
    if as_json:
        click.echo(json.dumps([{"id": r["id"], "at": r["at"].isoformat(),
                                "action": r["action"],
                                "user_id": str(r["user_id"]) if r["user_id"] else None,
                                "object_id": str(r["object_id"]) if r["object_id"] else None}
                               for r in rows], indent=2))
        return
    if not rows:
        click.echo("no ledger access recorded")
        return
    for r in rows:
        click.echo(f"{r['id']:>6} {r['at']:%Y-%m-%d %H:%M:%S} {r['action']:<14} "
                   f"user {r['user_id'] or '-'}"
                   + (f" {r['object_id']}" if r["object_id"] else ""))
