"""The memory ledger (issue 33) in-process, on a real database: who may look (token, cookie,
Bearer, CSRF, headers), what a user's ledger shows (escaped), and that each action goes
through the CLI's services into erasure_log and the access log. One database and one app for
the module; the browser tests (tests/e2e/test_ledger_browser.py) drive the same pages."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, text
from starlette.testclient import TestClient

from eros.ledger.app import create_app
from eros.ledger.security import CSP, SESSION_COOKIE, Keys
from eros.ledger.web import Context
from eros.memory.db.user_lock import LOCK_NAMESPACE
from eros.privacy.db.forget_sql import LOCK_USER
from eros.providers import make_providers
from eros.settings import Settings, load_settings
from testkit.services import TemplateDatabases
from tests.support.ledger import LINK, SCRIPT, Seeded, seed

TOKEN = "t" * 20 + "-ledger-test-token"


@pytest.fixture(scope="module")
def module_db(templates: TemplateDatabases) -> Iterator[str]:
    url = templates.clone()
    yield url
    templates.drop(url)


@pytest.fixture(scope="module")
def settings(module_db: str) -> Settings:
    return load_settings(database_url=module_db, eros_providers="offline",
                         eros_offline_embedder="hash")


@pytest.fixture(scope="module")
def db(module_db: str) -> Iterator[Engine]:
    eng = create_engine(module_db, pool_size=5)
    yield eng
    eng.dispose()


@pytest.fixture(scope="module")
def app_client(db: Engine, settings: Settings) -> Iterator[TestClient]:
    _, embedder = make_providers(settings)
    broker = {"url": "redis://127.0.0.1:1/0", "embedded": False, "reachable": False}
    app = create_app(Context(db, settings, embedder, Keys.from_token(TOKEN),
                             lambda: broker))
    with TestClient(app, base_url="http://127.0.0.1:8400") as client:
        yield client


@pytest.fixture
def anon(app_client: TestClient) -> TestClient:
    app_client.cookies.clear()
    return app_client


@pytest.fixture
def client(app_client: TestClient) -> TestClient:
    """Logged in through the login URL, as a person following it would be."""
    app_client.cookies.clear()
    res = app_client.get(f"/login?token={TOKEN}", follow_redirects=False)
    assert res.status_code == 303 and SESSION_COOKIE in app_client.cookies
    return app_client


@pytest.fixture
def seeded(db: Engine, settings: Settings) -> Seeded:
    _, embedder = make_providers(settings)
    return seed(db, embedder)


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, "no CSRF field on the page"
    return found.group(1)


def _access(db: Engine, user: uuid.UUID) -> list[tuple[str, uuid.UUID | None]]:
    with db.connect() as conn:
        return [(r.action, r.object_id) for r in conn.execute(text(
            "SELECT action, object_id FROM engine.ledger_access_log WHERE user_id = :u"
            " ORDER BY id"), {"u": user})]


# --- who may look ---------------------------------------------------------------------------
def test_without_a_token_every_request_is_refused(anon: TestClient, seeded: Seeded) -> None:
    page = anon.get(f"/users/{seeded.user}", follow_redirects=False)
    assert page.status_code == 303
    assert page.headers["location"] == f"/login?next=/users/{seeded.user}"
    for path in ("/static/ledger.css", "/api/status", f"/api/users/{seeded.user}/recall?q=jazz"):
        res = anon.get(path)
        assert res.status_code == 401, path
        assert "Lyon" not in res.text and "font" not in res.text
    res = anon.post(f"/memories/{seeded.memories['Lives in Lyon']}/forget")
    assert res.status_code == 401
    # the login page itself is open, and says nothing about anyone
    login = anon.get("/login")
    assert login.status_code == 200 and 'name="token"' in login.text


def test_a_wrong_token_is_refused_everywhere(anon: TestClient, seeded: Seeded) -> None:
    assert anon.get("/login?token=wrong-token-of-some-length").status_code == 401
    assert SESSION_COOKIE not in anon.cookies
    form = anon.get("/login")
    res = anon.post("/login", data={"csrf": _csrf(form.text), "token": TOKEN + "x"},
                    follow_redirects=False)
    assert res.status_code == 401 and SESSION_COOKIE not in anon.cookies
    bearer = anon.get("/api/status", headers={"Authorization": "Bearer nope-nope-nope-nope"})
    assert bearer.status_code == 401
    forged = Keys.from_token("another-token-entirely-x").new_session()
    anon.cookies.set(SESSION_COOKIE, forged)
    assert anon.get(f"/users/{seeded.user}", follow_redirects=False).status_code == 303


def test_the_login_form_sets_a_strict_httponly_cookie(anon: TestClient) -> None:
    form = anon.get("/login?next=/status")
    res = anon.post("/login", data={"csrf": _csrf(form.text), "token": TOKEN,
                                    "next": "/status"}, follow_redirects=False)
    assert res.status_code == 303 and res.headers["location"] == "/status"
    cookie = next(v for k, v in res.headers.multi_items()
                  if k == "set-cookie" and v.startswith(SESSION_COOKIE))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert anon.get("/status").status_code == 200
    # a login form POSTed without its CSRF token (another site's form) logs nobody in
    anon.cookies.clear()
    res = anon.post("/login", data={"token": TOKEN}, follow_redirects=False)
    assert res.status_code == 403 and SESSION_COOKIE not in anon.cookies
    # and "next" never leaves the site
    form = anon.get("/login")
    res = anon.post("/login", data={"csrf": _csrf(form.text), "token": TOKEN,
                                    "next": "//evil.example/"}, follow_redirects=False)
    assert res.headers["location"] == "/"


def test_bearer_is_accepted_for_scripts(anon: TestClient, seeded: Seeded) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    status = anon.get("/api/status", headers=auth)
    assert status.status_code == 200 and status.json()["guard"]["quarantined"] >= 1
    recall = anon.get(f"/api/users/{seeded.user}/recall", params={"q": "jazz music"},
                      headers=auth)
    assert recall.status_code == 200
    assert set(recall.json()["strategies"]) == {"grouped", "decay", "composite"}
    assert anon.get("/static/ledger.css", headers=auth).status_code == 200


def test_every_post_needs_the_csrf_token(client: TestClient, seeded: Seeded,
                                         db: Engine) -> None:
    """Each action's POST without the token (or with another session's) changes nothing."""
    mid = seeded.memories["Lives in Lyon"]
    quarantined = seeded.memories["Password is hunter2"]
    posts = [f"/memories/{mid}/forget", f"/memories/{quarantined}/restore",
             f"/messages/{seeded.messages[0]}/forget", f"/users/{seeded.user}/forget",
             f"/users/{seeded.user}/export", "/logout"]
    other = Keys.from_token(TOKEN).csrf_for("someone-else's-session")
    for path in posts:
        assert client.post(path, data={}).status_code == 403, path
        assert client.post(path, data={"csrf": other}).status_code == 403, path
    with db.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM engine.erasure_log WHERE user_id = :u"),
                            {"u": seeded.user}).scalar_one() == 0
        assert conn.execute(text("SELECT status FROM engine.companion_memories WHERE id = :i"),
                            {"i": quarantined}).scalar_one() == "quarantined"
    assert _access(db, seeded.user) == []
    # every POST route of the app is in the list above
    routes = {getattr(r, "path", "") for r in client.app.routes  # type: ignore[attr-defined]
              if "POST" in (getattr(r, "methods", None) or ())} - {"/login"}
    assert len(routes) == len(posts)


def test_a_post_from_another_site_is_refused(client: TestClient, seeded: Seeded) -> None:
    page = client.get(f"/memories/{seeded.memories['Lives in Lyon']}/forget")
    res = client.post(f"/memories/{seeded.memories['Lives in Lyon']}/forget",
                      data={"csrf": _csrf(page.text)},
                      headers={"Origin": "http://evil.example"})
    assert res.status_code == 403


def test_security_headers_on_every_response(client: TestClient, anon: TestClient,
                                            seeded: Seeded) -> None:
    for res in (client.get(f"/users/{seeded.user}"), client.get("/static/ledger.css"),
                anon.get("/login"), anon.get("/api/status")):
        assert res.headers["content-security-policy"] == CSP
        assert "script-src" not in CSP and "default-src 'none'" in CSP
        assert res.headers["x-frame-options"] == "DENY"
        assert res.headers["cache-control"] == "no-store"
        assert res.headers["x-content-type-options"] == "nosniff"


# --- what a user's ledger shows -------------------------------------------------------------
def test_the_ledger_shows_memories_sources_lineage_quarantine(client: TestClient,
                                                              seeded: Seeded,
                                                              db: Engine) -> None:
    page = client.get(f"/users/{seeded.user}")
    assert page.status_code == 200
    html = page.text
    assert "Lives in Lyon" in html and "I live in Lyon with my cat Miso" in html  # quoted turn
    assert "CRISIS" in html
    assert "merge" in html and "Likes jazz" in html  # lineage of the canonical memory
    assert "quarantined" in html and "secret" in html and "Password is hunter2" in html
    assert "<svg" in html  # the timeline
    # text is text: the script and the javascript: link are escaped, never markup
    assert SCRIPT not in html and LINK not in html
    assert "&lt;script&gt;document.title=" in html
    assert "&lt;a href=&#34;javascript:" in html or "&lt;a href=&quot;javascript:" in html
    assert "<script" not in html.lower()
    assert _access(db, seeded.user) == [("view_user", None)]


def test_a_big_ledger_is_paginated(client: TestClient, db: Engine) -> None:
    user = uuid.uuid4()
    with db.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, created_at)"
            " SELECT :u, 'memory number ' || g, 'fact', now() - make_interval(mins => g)"
            " FROM generate_series(1, 120) g"), {"u": user})
    first = client.get(f"/users/{user}?size=50").text
    assert "memory number 1<" in first and "memory number 50<" in first
    assert "memory number 51<" not in first and "page 1 of 3" in first
    last = client.get(f"/users/{user}?size=50&page=3").text
    assert "memory number 120<" in last and "memory number 101<" in last
    assert "memory number 100<" not in last


def test_the_memory_page_links_the_turns_to_forget(client: TestClient, seeded: Seeded,
                                                   db: Engine) -> None:
    mid = seeded.memories["Lives in Lyon"]
    html = client.get(f"/memories/{mid}").text
    assert "I live in Lyon with my cat Miso" in html
    assert f"/messages/{seeded.messages[0]}/forget" in html
    assert _access(db, seeded.user) == [("view_memory", mid)]


def test_the_recall_playground_runs_every_strategy(client: TestClient, seeded: Seeded,
                                                   db: Engine) -> None:
    html = client.get(f"/users/{seeded.user}/recall", params={"q": "jazz Coltrane"}).text
    for strategy in ("grouped", "decay", "composite"):
        assert f'id="s-{strategy}"' in html
    assert "Loves jazz, especially Coltrane" in html
    assert "plan" in html and "ms" in html
    assert "Password is hunter2" not in html  # quarantined memories are never recalled
    assert _access(db, seeded.user) == [("recall", None)]


def test_status_page(client: TestClient, seeded: Seeded) -> None:
    html = client.get("/status").text
    assert "backlog" in html and "quarantined memories" in html and "not reachable" in html


# --- actions --------------------------------------------------------------------------------
def test_forget_a_memory_through_the_cli_service(client: TestClient, seeded: Seeded,
                                                 db: Engine) -> None:
    mid = seeded.memories["Has a cat named Miso"]
    confirm = client.get(f"/memories/{mid}/forget")
    assert confirm.status_code == 200 and "Permanently forget" in confirm.text
    res = client.post(f"/memories/{mid}/forget", data={"csrf": _csrf(confirm.text)},
                      follow_redirects=False)
    assert res.status_code == 303 and res.headers["location"].startswith(f"/users/{seeded.user}")
    with db.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM engine.companion_memories WHERE id = :i"),
                            {"i": mid}).scalar_one() == 0
        row = conn.execute(text("SELECT scope, status, memory_id, user_id FROM"
                                " engine.erasure_log WHERE user_id = :u"),
                           {"u": seeded.user}).one()
    assert (row.scope, row.status, row.memory_id, row.user_id) == ("memory", "done", mid,
                                                                   seeded.user)
    page = client.get(res.headers["location"]).text
    assert "Has a cat named Miso" not in page and f"memory {mid}" in page
    assert ("forget_memory", mid) in _access(db, seeded.user)


def test_forget_a_message_restore_and_export(client: TestClient, seeded: Seeded,
                                             db: Engine) -> None:
    quarantined = seeded.memories["Password is hunter2"]
    page = client.get(f"/memories/{quarantined}/restore")
    client.post(f"/memories/{quarantined}/restore", data={"csrf": _csrf(page.text)})
    with db.connect() as conn:
        assert conn.execute(text("SELECT status FROM engine.companion_memories WHERE id = :i"),
                            {"i": quarantined}).scalar_one() == "current"
    export = client.post(f"/users/{seeded.user}/export", data={"csrf": _csrf(page.text)})
    assert export.status_code == 200
    assert "attachment" in export.headers["content-disposition"]
    doc = export.json()
    assert doc["format"] == "eros-export/2" and doc["user_id"] == str(seeded.user)
    msg = seeded.messages[2]  # "I love jazz…": two memories cite it
    client.post(f"/messages/{msg}/forget", data={"csrf": _csrf(page.text)})
    with db.connect() as conn:
        left = {r.content for r in conn.execute(text(
            "SELECT content FROM engine.companion_memories WHERE user_id = :u"),
            {"u": seeded.user})}
        scopes = [r.scope for r in conn.execute(text(
            "SELECT scope FROM engine.erasure_log WHERE user_id = :u"), {"u": seeded.user})]
    assert "Loves jazz, especially Coltrane" not in left and "Lives in Lyon" in left
    assert scopes == ["message"]
    assert [a for a, _ in _access(db, seeded.user) if not a.startswith("view")] == [
        "restore", "export", "forget_message"]


def test_forget_the_user(client: TestClient, seeded: Seeded, db: Engine) -> None:
    page = client.get(f"/users/{seeded.user}/forget")
    assert "Also delete the chat sessions" in page.text
    client.post(f"/users/{seeded.user}/forget", data={"csrf": _csrf(page.text),
                                                      "sessions": "on"})
    with db.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM engine.companion_memories"
                                 " WHERE user_id = :u"), {"u": seeded.user}).scalar_one() == 0
        assert conn.execute(text("SELECT count(*) FROM engine.chat_sessions"
                                 " WHERE user_id = :u"), {"u": seeded.user}).scalar_one() == 0
        assert conn.execute(text("SELECT scope FROM engine.erasure_log WHERE user_id = :u"),
                            {"u": seeded.user}).scalar_one() == "user"


def test_no_text_in_the_server_log(client: TestClient, seeded: Seeded,
                                   caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        client.get(f"/users/{seeded.user}")
        client.get(f"/users/{seeded.user}/recall", params={"q": "secret query words"})
        client.get(f"/login?token={TOKEN}")
    # the server's records (the test client's own httpx records name the URL it asked for)
    logged = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith("httpx"))
    assert f"/users/{seeded.user}/recall" in logged  # the path is logged ...
    for text_ in ("secret query words", "Lyon", "jazz", TOKEN):  # ... never text or the token
        assert text_ not in logged


def test_a_failed_erasure_is_recorded_and_said(db: Engine, settings: Settings,
                                               seeded: Seeded, module_db: str) -> None:
    """A forget that cannot get the user's lock in time (a real lock_timeout): the page says
    it failed, nothing is removed, erasure_log holds a 'failed' row with the SQLSTATE."""
    _, embedder = make_providers(settings)
    impatient = create_engine(module_db, connect_args={"options": "-c lock_timeout=200"})
    app = create_app(Context(impatient, settings, embedder, Keys.from_token(TOKEN),
                             lambda: {}))
    mid = seeded.memories["Lives in Lyon"]
    try:
        with TestClient(app, base_url="http://127.0.0.1:8400") as client, \
                db.begin() as holder:
            holder.execute(LOCK_USER, {"ns": LOCK_NAMESPACE, "user_id": str(seeded.user)})
            res = client.post(f"/memories/{mid}/forget",
                              headers={"Authorization": f"Bearer {TOKEN}"})
    finally:
        impatient.dispose()
    assert res.status_code == 500 and "was not forgotten" in res.text and "55P03" in res.text
    with db.connect() as conn:
        row = conn.execute(text("SELECT status, error_code FROM engine.erasure_log"
                                " WHERE memory_id = :m"), {"m": mid}).one()
        assert conn.execute(text("SELECT count(*) FROM engine.companion_memories"
                                 " WHERE id = :m"), {"m": mid}).scalar_one() == 1
    assert (row.status, row.error_code) == ("failed", "55P03")


def test_forgetting_in_the_ledger_purges_the_users_stored_recall_results(
        db: Engine, settings: Settings, seeded: Seeded, redis_url: str) -> None:
    """As after a forget task or `eros forget` (issue 32): the user's recall results, stored in
    the real Redis result backend and indexed as the recall task indexes them, are deleted by
    the erase button at once; another user's stay."""
    import redis

    from eros.tasks import results
    from eros.tasks.app import create_app as create_celery_app

    with_redis = settings.model_copy(update={"redis_url": redis_url})
    celery = create_celery_app(with_redis)
    other = str(uuid.uuid4())
    for task_id, user in (("mine", str(seeded.user)), ("theirs", other)):
        celery.backend.store_result(task_id, {"memories": [{"content": "Has a cat"}]}, "SUCCESS")
        results.keep_briefly(celery, user, task_id, 30)
    keys = {t: celery.backend.get_key_for_task(t) for t in ("mine", "theirs")}
    backend = redis.Redis.from_url(redis_url)
    assert all(backend.exists(k) for k in keys.values())
    _, embedder = make_providers(with_redis)
    broker = {"url": redis_url, "embedded": False, "reachable": True}
    app = create_app(Context(db, with_redis, embedder, Keys.from_token(TOKEN), lambda: broker))
    with TestClient(app, base_url="http://127.0.0.1:8400") as client:
        client.get(f"/login?token={TOKEN}", follow_redirects=False)
        mid = seeded.memories["Lives in Lyon"]
        confirm = client.get(f"/memories/{mid}/forget")
        res = client.post(f"/memories/{mid}/forget", data={"csrf": _csrf(confirm.text)},
                          follow_redirects=False)
    assert res.status_code == 303
    assert not backend.exists(keys["mine"]) and backend.exists(keys["theirs"])
