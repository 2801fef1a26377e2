"""The HTTP API on loopback, the server in a thread of the test: bad requests, the token, limits, the
full queue, priorities, duplicates, retries after a lost worker, streaming, the async client.

Real judging uses candidates the static stage rejects (no worker starts); the queue's behaviour under
load uses an executor that holds each evaluation until the test lets it go.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import pytest
from serve_helpers import TASK, GateExecutor, ThreadServer, static_rejects, summary
from warpgym.env import EvalOptions, Evaluator
from warpgym.experiments.executors import LocalExecutor
from warpgym.experiments.serve.client import AsyncServeClient, ServeClient, ServeError, item
from warpgym.tasks import get_task

TOKEN = "test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """A server judging with a real CPU evaluator (only static rejections reach it here)."""
    server = ThreadServer(LocalExecutor(["cpu"]), tmp_path_factory.mktemp("real") / "j.sqlite")
    yield server
    server.stop()


@pytest.fixture
def gated(tmp_path):
    servers = []

    def make(**settings):
        executor = GateExecutor(workers=settings.pop("workers", 1), failures=settings.pop("failures", 0))
        server = ThreadServer(executor, tmp_path / f"g{len(servers)}.sqlite", **settings)
        servers.append((server, executor))
        return server, executor

    yield make
    for server, executor in servers:
        executor.gate.set()
        server.stop()


def _wait_until(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# ----------------------------------------------------------------------------- bad requests
@pytest.mark.parametrize(("body", "status", "message"), [
    ({"task": "nope/none", "source": "x"}, 422, "unknown task id 'nope/none'"),
    ({"task": TASK}, 422, "source: Field required"),
    ({"task": TASK, "source": "x", "colour": "red"}, 422, "colour: Extra inputs are not permitted"),
    ({"task": TASK, "source": "x", "options": {"target": "sm_61"}}, 422, "unknown target 'sm_61'"),
    ({"task": TASK, "source": "x", "options": {"shape_sets": ["dev", "dev"]}}, 422, "each shape set at most"),
    ({"task": TASK, "source": "x", "options": {"shape_sets": ["secret"]}}, 422, "options.shape_sets.0"),
    ({"task": TASK, "source": "x", "options": {"timeouts": {"run": -1}}}, 422, "options.timeouts.run"),
    ({"task": TASK, "source": "x", "options": {"timeouts": {"run": 9999}}}, 422, "allows at most 600"),
    ({"task": TASK, "source": "x", "priority": 1000}, 422, "priority"),
    ({"task": TASK, "source": "x", "attachments": {"../evil.ptx": "x"}}, 422, "bare file name"),
    ({"task": TASK, "source": "x", "attachments": {"k.so": "x"}}, 422, "only .ptx, .cu, .cuh"),
    ({"task": TASK, "source": "x" * 200_001}, 413, "at most 200,000 are judged"),
    ({"task": TASK, "source": "x", "attachments": {"k.ptx": "x" * (5 << 20)}}, 413, "attachments total"),
    ({"task": TASK, "source": 12}, 422, "source: Input should be a valid string"),
    ([1, 2], 422, "valid dictionary"),
])
def test_a_bad_submission_gets_a_4xx_that_says_what_is_wrong(real, body, status, message):
    response = httpx.post(real.url + "/v1/evaluations", json=body)
    assert response.status_code == status, response.text
    assert message in response.json()["error"]


def test_malformed_json_unknown_ids_and_bad_waits_are_4xx(real):
    response = httpx.post(real.url + "/v1/evaluations", content=b'{"task": ',
                          headers={"content-type": "application/json"})
    assert response.status_code == 422 and "not valid JSON" in response.json()["error"]
    assert httpx.get(real.url + "/v1/evaluations/nothing-here").status_code == 404
    assert httpx.post(real.url + "/v1/stream", json={"ids": ["nothing-here"]}).status_code == 404
    assert httpx.post(real.url + "/v1/stream", json={"ids": []}).status_code == 422
    sub = httpx.post(real.url + "/v1/evaluations", json=item(TASK, static_rejects(1, "wait")[0])).json()
    assert httpx.get(real.url + f"/v1/evaluations/{sub['id']}", params={"wait": 9999}).status_code == 422
    assert httpx.post(real.url + "/v1/batches", json={"items": []}).status_code == 422


def test_an_oversized_body_is_refused_before_it_is_read(tmp_path):
    server = ThreadServer(LocalExecutor(["cpu"]), tmp_path / "j.sqlite", max_body_bytes=1000)
    try:
        response = httpx.post(server.url + "/v1/evaluations", json=item(TASK, "x" * 2000))
        assert response.status_code == 413 and "at most 1,000" in response.json()["error"]

        def chunks():  # no Content-Length: counted as it arrives
            for _ in range(10):
                yield b"x" * 500

        response = httpx.post(server.url + "/v1/evaluations", content=chunks())
        assert response.status_code == 413
        assert httpx.get(server.url + "/health").status_code == 200  # and the server is fine
    finally:
        server.stop()


def test_a_batch_over_the_limit_is_refused_whole(gated):
    server, executor = gated(max_batch=3, submission_burst=10)
    items = [item(TASK, f"# {i}\n") for i in range(4)]
    response = httpx.post(server.url + "/v1/batches", json={"items": items})
    assert response.status_code == 413 and "at most 3" in response.json()["error"]
    bad = [*items[:2], {"task": "nope/none", "source": "x"}]
    response = httpx.post(server.url + "/v1/batches", json={"items": bad})
    assert response.status_code == 422 and response.json()["error"].startswith("items[2]: unknown task")
    assert server.service.status()["waiting_submissions"] == 0 and executor.calls == []


# ----------------------------------------------------------------------------- the token
def test_with_a_token_every_route_but_health_needs_it(gated):
    server, executor = gated(token=TOKEN)
    executor.gate.set()
    assert httpx.get(server.url + "/health").status_code == 200
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": TOKEN}):
        for method, path, body in (("POST", "/v1/evaluations", item(TASK, "x")), ("GET", "/metrics", None),
                                   ("GET", "/v1/evaluations/abc", None)):
            response = httpx.request(method, server.url + path, json=body, headers=headers)
            assert response.status_code == 401, (path, headers)
            assert response.headers["www-authenticate"] == "Bearer"
    with ServeClient(server.url, token=TOKEN) as client:
        assert client.evaluate(TASK, "def softmax(x): ...\n")["correct"] is True


# ----------------------------------------------------------------------------- the queue
def test_a_full_queue_answers_429_with_retry_after_and_then_drains(gated):
    server, executor = gated(max_queue=3)
    url = server.url + "/v1/evaluations"
    first = httpx.post(url, json=item(TASK, "# running\n")).json()
    _wait_until(lambda: len(executor.calls) == 1)  # on the worker: the queue is empty again
    waiting = [httpx.post(url, json=item(TASK, f"# {i}\n")).json() for i in range(3)]
    response = httpx.post(url, json=item(TASK, "# one too many\n"))
    assert response.status_code == 429 and "queue is full" in response.json()["error"]
    assert int(response.headers["retry-after"]) >= 1
    # A duplicate of a waiting one takes no room, so it is still accepted; a batch needing room is not.
    duplicate = httpx.post(url, json=item(TASK, "# 1\n"))
    assert duplicate.status_code == 202
    pair = [item(TASK, "# a\n"), item(TASK, "# b\n")]
    response = httpx.post(server.url + "/v1/batches", json={"items": pair})
    assert response.status_code == 429
    executor.gate.set()
    with ServeClient(server.url) as client:
        ids = [first["id"], *(w["id"] for w in waiting), duplicate.json()["id"]]
        results = client.wait(ids, timeout_s=30)
    assert set(results) == set(ids) and len(executor.calls) == 4  # the duplicate was judged once
    assert 'warpgym_serve_rejected_total{reason="queue_full"} 2' in httpx.get(server.url + "/metrics").text


def test_the_client_waits_out_a_full_queue(gated):
    server, executor = gated(max_queue=1)
    with ServeClient(server.url, busy_timeout_s=30) as client:
        client.submit(TASK, "# running\n")
        _wait_until(lambda: len(executor.calls) == 1)
        client.submit(TASK, "# waiting\n")
        opened = time.monotonic()
        threading.Timer(1.0, executor.gate.set).start()
        third = client.submit(TASK, "# third\n")  # 429 at first; accepted once the queue moves
        assert time.monotonic() - opened >= 0.9 and third["state"] in ("queued", "done")


def test_higher_priority_is_judged_first(gated):
    server, executor = gated()
    with ServeClient(server.url) as client:
        client.submit(TASK, "# blocker\n")
        _wait_until(lambda: len(executor.calls) == 1)
        ids = [client.submit(TASK, f"# p{p}\n", priority=p)["id"] for p in (0, 5, -5, 5, 50)]
        executor.gate.set()
        client.wait(ids, timeout_s=30)
    assert executor.calls[1:] == ["# p50\n", "# p5\n", "# p0\n", "# p-5\n"]  # the second p5 joined


def test_a_duplicate_is_judged_once_and_answered_from_the_cache(gated):
    server, executor = gated()
    with ServeClient(server.url) as client:
        a = client.submit(TASK, "# same\n")
        b = client.submit(TASK, "# same\n")  # waiting or running: joins
        executor.gate.set()
        results = client.wait([a["id"], b["id"]], timeout_s=30)
        c = client.submit(TASK, "# same\n")  # known: answered at once
        d = client.submit(TASK, "# same\n", options={"timing": False})  # other options: judged again
        client.wait([d["id"]], timeout_s=30)
        assert c["state"] == "done" and c["cached"] is True and not a["cached"]
        assert client.result(c["id"])["result"] == results[a["id"]] == results[b["id"]]
    assert executor.calls == ["# same\n", "# same\n"]
    text = httpx.get(server.url + "/metrics").text
    for how, n in (("cached", 1), ("joined", 1), ("queued", 2)):
        assert f'warpgym_serve_submissions_total{{how="{how}"}} {n}' in text


def test_without_the_cache_every_submission_is_judged(gated):
    server, executor = gated(cache=False)
    executor.gate.set()
    with ServeClient(server.url) as client:
        client.evaluate_many([item(TASK, "# same\n")] * 3)
    assert executor.calls == ["# same\n"] * 3


def test_a_lost_worker_is_retried_and_a_lasting_failure_is_answered_not_cached(gated):
    server, executor = gated(failures=2, attempts=3)
    executor.gate.set()
    with ServeClient(server.url) as client:
        assert client.evaluate(TASK, "# flaky\n")["correct"] is True  # third try
        assert len(executor.calls) == 3
        executor.failures = 3
        verdict = client.evaluate(TASK, "# lost\n")
        assert verdict["correct"] is False
        assert verdict["runtime_error"].startswith("the server could not evaluate this candidate after 3")
        assert "actor died" in verdict["feedback"] or "actor died" in verdict["runtime_error"]
        again = client.submit(TASK, "# lost\n")  # not remembered: tried afresh
        assert not again["cached"]
        assert client.wait([again["id"]], timeout_s=30)[again["id"]]["correct"] is True
    text = httpx.get(server.url + "/metrics").text
    assert "warpgym_serve_retries_total 4" in text
    assert 'warpgym_serve_evaluations_total{outcome="server_error"} 1' in text


def test_rate_limits_answer_429_with_retry_after(gated):
    server, executor = gated(requests_per_s=1, request_burst=3, submissions_per_s=1, submission_burst=2,
                             max_batch=2)
    executor.gate.set()
    statuses = [httpx.get(server.url + "/metrics").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    time.sleep(2.1)
    assert httpx.post(server.url + "/v1/batches", json={"items": [item(TASK, "# 1\n"), item(TASK, "# 2\n")]}
                      ).status_code == 202
    response = httpx.post(server.url + "/v1/evaluations", json=item(TASK, "# 3\n"))
    assert response.status_code == 429 and "candidates a second" in response.json()["error"]
    assert int(response.headers["retry-after"]) >= 1


# ----------------------------------------------------------------------------- results
def test_a_stream_sends_each_result_as_it_finishes(gated):
    server, executor = gated(workers=1)
    with ServeClient(server.url) as client:
        ids = [a["id"] for a in client.submit_batch([item(TASK, f"# {i}\n") for i in range(3)])]
        lines = []
        with httpx.stream("POST", server.url + "/v1/stream", json={"ids": ids}, timeout=30) as response:
            assert response.headers["content-type"].startswith("application/x-ndjson")
            executor.gate.set()
            for raw in response.iter_lines():
                lines.append(json.loads(raw))
    assert sorted(line["id"] for line in lines) == sorted(ids)
    assert all(line["state"] == "done" and line["result"]["correct"] is True for line in lines)


def test_a_poll_waits_for_the_answer(gated):
    server, executor = gated()
    with ServeClient(server.url) as client:
        sub = client.submit(TASK, "# poll\n")
        assert client.result(sub["id"])["state"] in ("queued", "running")
        threading.Timer(0.5, executor.gate.set).start()
        started = time.monotonic()
        row = client.result(sub["id"], wait=20)
        assert row["state"] == "done" and row["result"]["correct"] is True
        assert 0.4 < time.monotonic() - started < 10


def test_the_async_client_gives_the_same_answers(gated):
    server, executor = gated(workers=2)
    executor.gate.set()

    async def main():
        async with AsyncServeClient(server.url) as client:
            one = await client.evaluate(TASK, "# a\n")
            many = await client.evaluate_many([item(TASK, "# b wrong\n"), item(TASK, "# c\n")])
            health = await client.health()
            return one, many, health

    one, many, health = asyncio.run(main())
    assert one["correct"] is True and [m["correct"] for m in many] == [False, True]
    assert health["workers"] == 2 and health["status"] == "ok"


def test_the_client_raises_on_a_refusal(real):
    with ServeClient(real.url) as client, pytest.raises(ServeError) as info:
        client.submit("nope/none", "x")
    assert info.value.status == 422


def test_verdicts_through_the_server_match_the_evaluator_for_static_rejections(real):
    task = get_task(TASK)
    sources = [*static_rejects(3, "match"), "def softmax(x):\n    return x\n", "def softmax(:\n"]
    with ServeClient(real.url) as client:
        served = client.evaluate_many([item(TASK, s) for s in sources])
    options = EvalOptions(device="cpu")
    with Evaluator("cpu") as evaluator:
        direct = [evaluator.evaluate(task, s, options).to_dict() for s in sources]
    assert [summary(s) for s in served] == [summary(d) for d in direct]
    assert [s["feedback"] for s in served] == [d["feedback"] for d in direct]
    assert {tuple(summary(s)[4]) for s in served} >= {("no-kernel", "torch-compute"), ("syntax",)}
