"""The memory ledger as a person uses it (issue 33): a real ``eros ledger`` process on a real
database, driven by Debian's headless Chromium through chromium-driver — log in, open a user,
follow a memory to its source turns, run a recall, forget a memory and see it gone and
listed, and the security items (no token, wrong token, missing CSRF token, script in a
memory). One server and one browser for the module.

With EROS_LEDGER_SCREENSHOTS=DIR the pages are saved there as PNGs (docs/ledger.md's).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine

from eros.providers import make_providers
from eros.settings import load_settings
from testkit.redis_process import free_port
from testkit.services import TemplateDatabases
from tests.support.ledger import LINK, SCRIPT, Seeded, seed

pytestmark = pytest.mark.e2e

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
TOKEN = "browser-test-token-" + "x" * 12
ROOT = Path(__file__).resolve().parents[2]
SHOTS = os.environ.get("EROS_LEDGER_SCREENSHOTS")

if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
    pytest.skip("Debian's chromium and chromium-driver are not installed (scripts/bootstrap "
                "installs them)", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def world(templates: TemplateDatabases, redis_base: str) -> Iterator[tuple[str, Seeded]]:
    """A seeded database and ``eros ledger`` serving it; yields the base URL."""
    url = templates.clone()
    settings = load_settings(database_url=url, eros_providers="offline",
                             eros_offline_embedder="hash")
    engine = create_engine(url)
    seeded = seed(engine, make_providers(settings)[1])
    engine.dispose()
    port = free_port()
    data = tempfile.mkdtemp(prefix="erosledger", dir="/tmp")
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env.update(DATABASE_URL=url, REDIS_URL=redis_base + "/1", EROS_LEDGER_TOKEN=TOKEN,
               EROS_PROVIDERS="offline", EROS_OFFLINE_EMBEDDER="hash", EMBEDDING_DIM="512",
               EROS_EMBEDDED="never", EROS_DATA_DIR=data)
    log = open(os.path.join(data, "server.log"), "w+")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "eros", "--debug", "ledger", "--port",
                             str(port)],
                            env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(base + "/login", timeout=2):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"eros ledger did not start: {log.read()[-2000:]}")
            time.sleep(0.2)
    try:
        yield base, seeded
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.seek(0)
        server_log = log.read()
        log.close()
        shutil.rmtree(data, ignore_errors=True)
        templates.drop(url)
        # nothing personal in the server's output, even at DEBUG (--debug)
        assert "GET /users/" in server_log  # the paths are logged ...
        for text_ in ("Lyon", "jazz", "Coltrane", "成都", "hunter2", TOKEN):  # ... nothing else
            assert text_ not in server_log, text_


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    os.environ.setdefault("SE_OFFLINE", "true")  # never let selenium fetch a driver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="eroschrome", dir="/tmp")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile}", "--window-size=1100,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options,
                              service=webdriver.ChromeService(executable_path=DRIVER))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _shot(driver: Any, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(SHOTS) / f"{name}.png"))


def _click(driver: Any, element: Any) -> None:
    """Click and wait for the next page (a click returns before the navigation ends)."""
    page = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, 30).until(expected_conditions.staleness_of(page))


def _text(driver: Any) -> str:
    return str(driver.find_element(By.TAG_NAME, "body").text)


def test_a_person_walks_the_ledger(world: tuple[str, Seeded], browser: Any) -> None:
    base, seeded = world
    user_page = f"{base}/users/{seeded.user}"
    # no token: the page is the login form, with nothing of the user on it
    browser.get(user_page)
    assert browser.current_url.startswith(f"{base}/login")
    assert "Lyon" not in browser.page_source
    _shot(browser, "login")
    # a wrong token: still the login form
    browser.find_element(By.ID, "token").send_keys("not-the-token-at-all")
    _click(browser, browser.find_element(By.ID, "login"))
    assert "That token is not right" in _text(browser)
    assert "Lyon" not in browser.page_source
    # the right one: back to the page asked for
    browser.find_element(By.ID, "token").send_keys(TOKEN)
    _click(browser, browser.find_element(By.ID, "login"))
    assert browser.current_url == user_page
    assert browser.get_cookie("eros_ledger_session")["httpOnly"] is True
    assert browser.get_cookie("eros_ledger_session")["sameSite"] == "Strict"
    body = _text(browser)
    assert "Lives in Lyon" in body and "CRISIS" in body and "住在成都" in body
    # a memory holding a script and a javascript: link shows them as text, runs nothing
    assert SCRIPT in body and LINK in body
    assert "pwned" not in browser.title and browser.title.startswith("User ")
    assert not browser.find_elements(By.CSS_SELECTOR, "a[href^='javascript']")
    assert not browser.find_elements(By.CSS_SELECTOR, "#memories script, #memories img")
    _shot(browser, "user")

    # follow a memory to the turns it came from
    card = browser.find_element(By.ID, f"m-{seeded.memories['Lives in Lyon']}")
    _click(browser, card.find_element(By.CLASS_NAME, "open"))
    assert "I live in Lyon with my cat Miso" in _text(browser)
    _shot(browser, "memory")

    # a recall, under every strategy
    browser.get(f"{user_page}/recall")
    browser.find_element(By.ID, "q").send_keys("jazz Coltrane")
    _click(browser, browser.find_element(By.ID, "run"))
    for strategy in ("grouped", "decay", "composite"):
        assert browser.find_element(By.ID, f"s-{strategy}")
    assert "Loves jazz, especially Coltrane" in _text(browser)
    _shot(browser, "recall")

    # a missing CSRF token: the action is refused and nothing changes
    kept = seeded.memories["Has a cat named Miso"]
    browser.get(f"{base}/memories/{kept}/forget")
    browser.execute_script("document.querySelector('#confirm input[name=csrf]').remove()")
    _click(browser, browser.find_element(By.ID, "go"))
    assert "CSRF token is missing" in _text(browser)
    browser.get(user_page)
    assert "Has a cat named Miso" in _text(browser)

    # forget a memory: gone, and listed among the erasures
    gone = seeded.memories["Lives in Lyon"]
    browser.get(f"{base}/memories/{gone}")
    _click(browser, browser.find_element(By.ID, "forget"))
    _shot(browser, "confirm")
    _click(browser, browser.find_element(By.ID, "go"))
    assert browser.current_url.startswith(user_page)
    body = _text(browser)
    assert "Lives in Lyon" not in body and "Erasure" in body
    erasures = browser.find_element(By.ID, "erasures").text
    assert f"memory {gone}" in erasures and "done" in erasures
    _shot(browser, "erased")

    browser.get(f"{base}/status")
    assert "quarantined memories" in _text(browser)
    _shot(browser, "status")
