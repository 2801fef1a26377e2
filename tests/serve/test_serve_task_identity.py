"""A server restarted with another suite that uses the same task ids never answers from the old suite's
verdicts: the journal's key holds what the task is (``task_fingerprint``), not its id alone; a submission
still queued for a task that changed since is answered with a server's verdict, never filed under the old
task's key."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from serve_helpers import ThreadServer
from warpgym.experiments.serve.cache import SERVER_ERROR, reusable
from warpgym.experiments.serve.client import ServeClient
from warpgym.experiments.serve.models import Submission
from warpgym.tasks.fingerprint import task_fingerprint

sys.path.insert(0, str(Path(__file__).parents[1]))
from twin_suites import DOUBLE, TASK_ID, ReferenceExecutor, imported, twin_suites  # noqa: E402


@pytest.fixture
def suites(tmp_path: Path) -> tuple[Path, Path]:
    return twin_suites(tmp_path)


def _served(journal: Path, suite: Path, executor: ReferenceExecutor) -> dict[str, Any]:
    server = ThreadServer(executor, journal, suites={"kernelbench": str(suite)})
    try:
        with ServeClient(server.url) as client:
            submitted = client.submit(TASK_ID, DOUBLE)
            deadline = time.monotonic() + 60
            while (row := client.result(submitted["id"], wait=5))["state"] != "done":
                assert time.monotonic() < deadline, row
    finally:
        server.stop()
    return {"cached": row["cached"], "correct": row["result"]["correct"]}


def test_a_server_restarted_on_another_suite_with_the_same_ids_never_answers_from_the_old_one(
    suites, tmp_path: Path,
):
    journal = tmp_path / "journal.sqlite"
    executor = ReferenceExecutor()
    assert _served(journal, suites[0], executor) == {"cached": False, "correct": True}
    assert _served(journal, suites[1], executor) == {"cached": False, "correct": False}
    assert _served(journal, suites[0], executor) == {"cached": True, "correct": True}
    assert executor.calls == 2


def test_a_submission_queued_for_a_task_that_changed_since_gets_a_server_verdict(suites, tmp_path: Path):
    """Accepted under one suite, still queued when the server restarts with another: judging it against
    the new task would file that verdict under the old task's key."""
    executor = ReferenceExecutor()
    server = ThreadServer(executor, tmp_path / "j.sqlite", suites={"kernelbench": str(suites[1])})
    try:
        request = {**Submission(task=TASK_ID, source=DOUBLE).model_dump(mode="json"),
                   "task_print": task_fingerprint(imported(suites[0]))}
        result, server_error = server.service._judge(request)
    finally:
        server.stop()
    assert server_error and not reusable(result) and executor.calls == 0
    assert result["runtime_error"].startswith(SERVER_ERROR) and "the task changed" in result["runtime_error"]
