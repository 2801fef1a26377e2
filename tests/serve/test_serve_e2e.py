"""`warpgym serve` as users run it: its own process on loopback, one CPU worker, real evaluations.

Many client processes at once get exactly one answer per submission, each the verdict in-process
evaluation gives; a candidate that crashes or hangs its worker gets that verdict and the server goes
on; a worker killed from outside mid-evaluation is replaced and the evaluation run again; the reward
function gives what ``env.step`` gives; SIGTERM finishes the evaluation in flight, exits 0, and a
restart answers what was still queued. Most candidates are ones the static stage rejects (judged in
milliseconds); the real ones are normalization/softmax's reference and variants of it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import httpx
import pytest
from serve_clients import submit_and_stream
from serve_helpers import TASK, ProcessServer, static_rejects, summary
from warpgym.env import EvalOptions, KernelEnv
from warpgym.experiments.serve.client import ServeClient, item
from warpgym.experiments.serve.reward import AsyncKernelReward, KernelReward
from warpgym.tasks import get_task

pytestmark = pytest.mark.timeout(600)

GOOD = get_task(TASK).solution_source()
WRONG = GOOD.replace("out = num / tl.sum(num, axis=0)", "out = num / (tl.sum(num, axis=0) + 1.0)")
ENTRY = "    m, n = x.shape\n"
SLOW = "import time\n" + GOOD.replace(ENTRY, "    time.sleep(0.4)\n" + ENTRY)
"""Right, and slow enough (0.4 s a call) that a test can act while it runs."""
CRASH = GOOD.replace(ENTRY, "    import faulthandler\n    faulthandler._sigsegv()\n" + ENTRY)
HANG = GOOD.replace(ENTRY, "    while True:\n        pass\n" + ENTRY)
assert len({GOOD, WRONG, SLOW, CRASH, HANG}) == 5


def variant(source: str, name: str) -> str:
    """The same candidate with a comment of its own, so no earlier verdict answers it."""
    return f"{source}\n# {name} {time.time_ns()}\n"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    journal = tmp_path_factory.mktemp("served") / "journal.sqlite"
    server = ProcessServer(journal)
    server.journal = journal
    yield server
    server.kill()


def metric(url: str, line_start: str) -> float:
    text = httpx.get(url + "/metrics", timeout=30).text
    values = [float(line.split()[-1]) for line in text.splitlines() if line.startswith(line_start)]
    return sum(values)


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_fifty_submissions_from_five_processes_are_each_answered_once_as_in_process(served, cpu_evaluator):
    distinct = [*static_rejects(8, "many"), variant(GOOD, "many"), variant(WRONG, "many")]
    per_client = [[distinct[(c * 3 + k) % len(distinct)] for k in range(10)] for c in range(5)]
    direct: dict[str, dict] = {}

    def judge_in_process() -> None:  # meanwhile, on this side: the verdicts to compare with
        for source in distinct:
            result = cpu_evaluator.evaluate(get_task(TASK), source, EvalOptions(device="cpu"))
            direct[source] = result.to_dict()

    before = metric(served.url, "warpgym_serve_evaluations_total")
    local = threading.Thread(target=judge_in_process)
    local.start()
    with ProcessPoolExecutor(5, mp_context=get_context("spawn")) as pool:
        jobs = [pool.submit(submit_and_stream, served.url, TASK, sources, c % 2 == 0)
                for c, sources in enumerate(per_client)]
        answers = [row for job in jobs for row in job.result(timeout=540)]
    local.join(540)

    assert len(answers) == 50 and len({a["id"] for a in answers}) == 50
    assert all(len(a["lines"]) == 1 for a in answers), "each submission streamed exactly once"
    for a in answers:
        served_result = a["lines"][0]["result"]
        assert summary(served_result) == summary(direct[a["source"]]), a["source"][-40:]
    corrects = {summary(direct[s])[3] for s in distinct}
    assert corrects == {None, True, False}  # rejected, right and wrong all among them
    # Duplicates were judged once: one evaluation per distinct candidate, however many submitted it.
    assert metric(served.url, "warpgym_serve_evaluations_total") - before == len(distinct)
    with ServeClient(served.url) as client:
        assert all(client.result(a["id"])["state"] == "done" for a in answers[::7])


def test_a_candidate_that_crashes_or_hangs_its_worker_gets_that_verdict_and_the_server_goes_on(served):
    restarts = metric(served.url, "warpgym_serve_worker_restarts_total")
    with ServeClient(served.url) as client:
        crashed, hung, good = client.evaluate_many([
            item(TASK, variant(CRASH, "crash")),
            item(TASK, variant(HANG, "hang"), options={"timeouts": {"run": 3}}),
            item(TASK, variant(GOOD, "after")),
        ])
        assert client.health()["status"] == "ok"
    assert crashed["correct"] is False and "died" in crashed["feedback"]
    assert hung["correct"] is False and any("timed out" in c["message"] for c in hung["cases"])
    assert good["correct"] is True, good["feedback"]
    assert metric(served.url, "warpgym_serve_worker_restarts_total") >= restarts + 2


def test_a_worker_killed_mid_evaluation_is_replaced_and_the_evaluation_run_again(served):
    with ServeClient(served.url) as client:
        assert client.evaluate(TASK, variant(GOOD, "warm"))["correct"]  # the worker is now kept
        (before,) = served.worker_pids("run")
        restarts = metric(served.url, "warpgym_serve_worker_restarts_total")
        sub = client.submit(TASK, variant(SLOW, "killed"))
        wait_for(lambda: client.result(sub["id"])["state"] == "running", 60, "the evaluation to start")
        time.sleep(1.5)  # inside the candidate's calls
        os.kill(before, signal.SIGKILL)
        result = client.wait([sub["id"]], timeout_s=300)[sub["id"]]
    assert result["correct"] is True, result["feedback"]
    assert served.worker_pids("run") != [before]
    assert metric(served.url, "warpgym_serve_worker_restarts_total") >= restarts + 1


def test_the_grpo_reward_is_what_env_step_gives(served, cpu_evaluator):
    good, wrong = variant(GOOD, "reward"), variant(WRONG, "reward")
    completions = [f"Here it is:\n```python\n{good}```\n",
                   [{"role": "assistant", "content": f"```python\n{wrong}```"}],
                   "I cannot do that.", f"```python\n{good}```"]
    logged: dict[str, list] = {}
    kwargs = {"prompts": ["p"] * 4, "completions": completions, "completion_ids": [[1]] * 4,
              "task_id": [TASK] * 4, "trainer_state": None,
              "log_extra": lambda column, values: logged.setdefault(column, []).extend(values),
              "log_metric": lambda name, value: logged.setdefault(name, []).append(value)}
    rewards = KernelReward(served.url)(**kwargs)
    again = asyncio.run(AsyncKernelReward(served.url)(**kwargs))

    env = KernelEnv(TASK, device="cpu", evaluator=cpu_evaluator, max_turns=8)
    env.reset(seed=0, options={"continue_after_solved": True})
    stepped = [env.step(good)[1], env.step(wrong)[1]]
    assert rewards == again == [stepped[0], stepped[1], 0.0, stepped[0]]
    assert stepped == [1.0, 0.0]
    assert logged["warpgym_stage"] == ["done", "correctness", "no-module", "done"] * 2  # both calls
    assert logged["warpgym/correct"] == [0.5, 0.5]

    trl_utils = pytest.importorskip("trl.trainer.utils")
    assert trl_utils.get_callable_name(KernelReward(served.url)) == "warpgym_kernel"
    assert not trl_utils.is_async_callable(KernelReward(served.url))
    assert trl_utils.is_async_callable(AsyncKernelReward(served.url))
    with pytest.raises(KeyError, match="task_id"):
        KernelReward(served.url)(prompts=["p"], completions=["x"], trainer_state=None)


def test_sigterm_finishes_what_runs_exits_0_and_a_restart_answers_what_was_queued(served):
    """Last in the file: it stops the module's server."""
    in_flight = variant(SLOW, "in-flight")
    queued = static_rejects(3, f"queued {time.time_ns()}")
    with ServeClient(served.url) as client:
        ids = [a["id"] for a in client.submit_batch(
            [item(TASK, in_flight, priority=10), *(item(TASK, s) for s in queued)])]
        wait_for(lambda: client.result(ids[0])["state"] == "running", 60, "the evaluation to start")
        lines: list[dict] = []
        reader = threading.Thread(target=lambda: lines.extend(_read_stream(served.url, ids)))
        reader.start()
        time.sleep(1.0)
        assert served.terminate(timeout=120) == 0, served.output()
        reader.join(30)
    # The in-flight evaluation finished and was streamed; the stream then named the ones still queued.
    answered = [line for line in lines if "id" in line]
    assert [a["id"] for a in answered] == [ids[0]] and answered[0]["result"]["correct"] is True
    assert lines[-1]["event"] == "shutdown" and sorted(lines[-1]["pending"]) == sorted(ids[1:])
    db = sqlite3.connect(served.journal)
    states = dict(db.execute("SELECT id, state FROM submissions WHERE id IN (?, ?, ?, ?)", ids))
    finished = db.execute("SELECT finished FROM submissions WHERE id = ?", (ids[0],)).fetchone()[0]
    db.close()
    assert states == {ids[0]: "done", **{i: "queued" for i in ids[1:]}}

    restarted = ProcessServer(served.journal)
    try:
        assert "3 submission(s) resumed" in restarted.output()
        with ServeClient(restarted.url) as client:
            results = client.wait(ids, timeout_s=300)
            rows = [client.result(i) for i in ids]
        assert [summary(results[i])[1] for i in ids] == ["done", "static", "static", "static"]
        assert rows[0]["finished"] == finished  # answered once, before the restart
        assert all(r["attempts"] == 1 for r in rows)  # none judged twice
        assert restarted.terminate(timeout=120) == 0, restarted.output()
    finally:
        restarted.kill()


def _read_stream(url: str, ids: list[str]) -> list[dict]:
    import json

    with httpx.stream("POST", url + "/v1/stream", json={"ids": ids}, timeout=None) as response:
        return [json.loads(raw) for raw in response.iter_lines() if raw.strip()]
