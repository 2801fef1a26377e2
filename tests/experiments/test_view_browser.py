"""``warpgym view`` in a real headless browser: Debian's chromium, driven by Playwright.

The page is opened from disk (as ``warpgym view`` writes it) and from the server: filtering, an episode's
turns with their diff and verdict, markup in a model's answer shown as text and never run, and new
episodes and turns appearing while the run goes on.
"""

from __future__ import annotations

import re
import struct
import threading
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect, sync_playwright
from view_helpers import HOSTILE, grid_row, make_run, record
from warpgym.experiments.view.server import ViewServer
from warpgym.experiments.view.site import Site

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install chromium; .ci/run installs it)"
)
ROWS = "#episodes tbody tr"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            args=ARGS,
            headless=True,
        )
        yield context
        context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.set_default_timeout(15_000)
    yield page
    page.close()
    # a script error, or a resource the page's policy refused; a poll cut off by a busy loopback
    # server is transport, not the page's fault
    errors = [e for e in errors if "ERR_CONNECTION_RESET" not in e]
    assert errors == [], errors


def tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0\xff\0\0"))
        + chunk(b"IEND", b"")
    )


def rows_shown(page: Any) -> list[str]:
    return page.locator(ROWS).all_inner_texts()


def test_the_page_from_disk_filters_shows_turns_escapes_answers_and_follows_the_run(
    tmp_path: Path, page: Any
) -> None:
    store = make_run(tmp_path, live=True)
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "turns.png").write_bytes(tiny_png())
    site = Site(tmp_path, tmp_path / "view", refresh_s=0.5, report_every_s=None)
    site.write_page()
    site.update()
    page.goto(site.page.as_uri())
    expect(page.locator(ROWS)).to_have_count(3)
    assert "running" in page.inner_text("#state")
    assert page.eval_on_selector("#plots img", "img => img.complete && img.naturalWidth") == 1
    assert "Results by agent, model and context" in page.inner_text("#summary")

    page.select_option("#filter-agent", "one-shot")
    assert len(rows_shown(page)) == 2 and all("one-shot" in r for r in rows_shown(page))
    page.select_option("#filter-agent", "fix-retry")
    (row,) = rows_shown(page)
    assert "wrong" in row and "no code" in row and "correct 2.00x" in row
    page.click(ROWS)
    page.wait_for_selector(".turn[data-turn='3']")
    assert page.locator(".turn").count() == 3

    first = page.locator(".turn[data-turn='1'] .verdict").inner_text()
    assert "Verdict: wrong" in first and "Failing cases" in first and "non-finite output" in first
    diff = page.locator(".turn[data-turn='3'] .diff")
    assert "Diff from turn 1's candidate" in diff.inner_text()
    assert diff.locator("span.add").all_inner_texts() == [
        "+    m = x.max(-1, keepdim=True).values",
        "+    return (x - m).exp() / (x - m).exp().sum(-1)",
    ]
    assert diff.locator("span.del").all_inner_texts() == ["-    return x.exp() / x.exp().sum(-1)"]
    assert "Verdict: correct (eager 2.00x)" in page.inner_text(".turn[data-turn='3'] .verdict")

    # the hostile answer is text: the same characters, no element made from it, nothing run
    answer = page.locator(".turn[data-turn='2'] .answer pre")
    assert answer.text_content() == HOSTILE
    page.click(".turn[data-turn='2'] details:has(.answer) > summary")
    assert "</textarea></pre><script>" in answer.inner_text()
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img[src='x'], #episode script, #episode textarea").count() == 0

    # the run goes on: a new episode and its turn appear without reloading the page
    store.add_episodes([grid_row("math/add", "fix-retry", sample=1)])
    new_id = max(e["id"] for e in store.episodes())
    store.start_episode(new_id)
    store.add_turn(new_id, record(1, "none", None, None), "eager")
    site.update()
    expect(page.locator(ROWS)).to_have_count(2)
    assert "math/add" in rows_shown(page)[1] and "no code" in rows_shown(page)[1]
    assert page.locator(".turn").count() == 3  # the open episode stays open

    store.event("finished", {"finished": 4, "total": 4})
    site.update()
    expect(page.locator("#state")).to_have_text(re.compile("^finished"))
    assert "not refreshing" in page.inner_text("#state")
    site.close()
    store.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ViewServer, Any]]:
    store = make_run(tmp_path, live=True)
    server = ViewServer(tmp_path, 0, refresh_s=0.5, report_every_s=None)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, store
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)
    store.close()


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_served_page_rebuilds_on_request_and_answers_only_its_own_paths(served: Any, page: Any) -> None:
    # served before page: the page closes (and stops polling) before the server shuts down
    server, store = served
    with urllib.request.urlopen(server.url, timeout=10) as r:
        assert "script-src 'self'" in r.headers["Content-Security-Policy"]
    for path in ("store.sqlite", "run/store.sqlite", "run/plots/../store.sqlite", "data/episode-99.js", "x"):
        assert status_of(server.url + path) == 404, path

    unplayed = max(e["id"] for e in store.episodes())
    page.goto(f"{server.url}#episode-{unplayed}")
    expect(page.locator(ROWS)).to_have_count(3)
    page.wait_for_selector("#episode >> text=No turn stored yet.")
    store.start_episode(unplayed)
    store.add_turn(unplayed, record(1, "<b>bold?</b>", None, None), "eager")
    page.wait_for_selector("#episode .turn[data-turn='1']")
    assert page.locator("#episode b").count() == 0
    assert page.locator(".turn[data-turn='1'] .answer pre").text_content() == "<b>bold?</b>"
    assert "no code" in rows_shown(page)[2]
