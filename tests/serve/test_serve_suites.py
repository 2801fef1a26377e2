"""Imported suites in `warpgym serve`: a server started with ``--suite`` (or with a suite named in its
environment) accepts and judges the suite's task ids as the evaluator in this process does; an id the suite
lacks is a 422 naming it; a bad ``--suite`` stops the start with the reason; a queued submission whose
suite is gone at the next start gets a server's verdict rather than stopping dispatch.

The problems are this repository's KernelBench-format fixtures; each server runs in a process of its own,
whose task registry starts with the built-in tasks only.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from serve_helpers import GateExecutor, ProcessServer, ThreadServer, summary
from warpgym.env import EvalOptions
from warpgym.experiments.serve.cache import SERVER_ERROR, reusable
from warpgym.experiments.serve.client import ServeClient, item

pytestmark = pytest.mark.timeout(600)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "kernelbench"
CANDIDATES = FIXTURES / "candidates"
IMPORTED = "kernelbench/level1/1_Scale_rows"
ABSENT = "kernelbench/level1/99_Not_in_the_suite"


def _unknown_is_422(url: str) -> None:
    response = httpx.post(url + "/v1/evaluations", json={"task": ABSENT, "source": "x"}, timeout=30)
    assert response.status_code == 422, response.text
    assert f"unknown task id {ABSENT!r}" in response.json()["error"]


@pytest.mark.slow  # a server process, then one cold worker judging in Triton's interpreter
def test_a_suite_given_with_the_option_is_judged_as_in_process(tmp_path: Path, cpu_evaluator) -> None:  # noqa: ANN001
    from warpgym.tasks import get_task
    from warpgym.tasks.importers import use

    server = ProcessServer(tmp_path / "journal.sqlite", "--suite", f"kernelbench={FIXTURES}",
                           env={"WARPGYM_CACHE_DIR": str(tmp_path / "cache")})  # nothing saved there
    try:
        assert f"suite kernelbench from {FIXTURES.resolve()}" in server.output()
        sources = [(CANDIDATES / name).read_text() for name in
                   ("scale_rows_ok.py", "scale_rows_off_by_one.py", "scale_rows_torch.py")]
        with ServeClient(server.url) as client:
            served = client.evaluate_many([item(IMPORTED, s) for s in sources], timeout_s=500)
        _unknown_is_422(server.url)
    finally:
        server.kill()
    use({"kernelbench": str(FIXTURES)})
    options = EvalOptions(device="cpu")
    direct = [cpu_evaluator.evaluate(get_task(IMPORTED), s, options).to_dict() for s in sources]
    assert [(r["stage"], r["correct"]) for r in served][::2] == [("done", True), ("static", None)], served
    assert served[1]["stage"] == "correctness" and served[1]["correct"] is False
    assert [summary(r) for r in served] == [summary(r) for r in direct]


@pytest.mark.slow  # a server process; the candidate is refused at the static stage
def test_a_suite_named_in_the_environment_is_known_to_the_server(tmp_path: Path) -> None:
    server = ProcessServer(tmp_path / "journal.sqlite",
                           env={"WARPGYM_CACHE_DIR": str(tmp_path / "cache"),
                                "WARPGYM_SUITE_KERNELBENCH": str(FIXTURES)})
    try:
        source = (CANDIDATES / "scale_rows_torch.py").read_text()
        with ServeClient(server.url) as client:
            (result,) = client.evaluate_many([item(IMPORTED, source)], timeout_s=300)
        _unknown_is_422(server.url)
    finally:
        server.kill()
    assert result["task"] == IMPORTED and result["stage"] == "static" and not result["correct"]


@pytest.mark.parametrize(("value", "message"), [
    ("tritonbench=.", "suite tritonbench=.: unknown suite format 'tritonbench'; importers: kernelbench"),
    ("kernelbench={missing}", "suite kernelbench={missing}: no such file or folder"),
    ("kernelbench={empty}", "no kernelbench problem files under {empty}"),
    ("kernelbench", "--suite kernelbench: use FORMAT=PATH"),
])
def test_a_bad_suite_option_stops_the_start_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, value: str,
    message: str,
) -> None:
    import os

    from warpgym.experiments.cli import main

    monkeypatch.setenv("WARPGYM_CACHE_DIR", str(tmp_path / "cache"))  # no saved suite of this machine's
    for name in [n for n in os.environ if n.startswith("WARPGYM_SUITE_")]:
        monkeypatch.delenv(name)
    (tmp_path / "empty").mkdir()
    paths = {"missing": tmp_path / "missing", "empty": tmp_path / "empty"}
    code = main(["serve", "--port", "0", "--devices", "cpu", "--workers", "1", "--journal",
                 str(tmp_path / "j.sqlite"), "--suite", value.format(**paths)])
    assert code == 2
    assert message.format(**paths) in capsys.readouterr().err
    assert not (tmp_path / "j.sqlite").exists()  # refused before anything started


def test_a_queued_submission_whose_suite_is_gone_gets_a_server_verdict(tmp_path: Path) -> None:
    """What an earlier start accepted and never answered is judged at the next: without its suite the
    answer says so, is not cached, and the dispatcher goes on."""
    server = ThreadServer(GateExecutor(), tmp_path / "j.sqlite")
    try:
        result, server_error = server.service._judge(
            {"task": ABSENT, "source": "x", "options": {"target": "sm_90a"}})
    finally:
        server.stop()
    assert server_error and not reusable(result)
    assert result["runtime_error"].startswith(SERVER_ERROR) and ABSENT in result["runtime_error"]
    assert "--suite" in result["feedback"] and result["task"] == ABSENT and result["correct"] is False
