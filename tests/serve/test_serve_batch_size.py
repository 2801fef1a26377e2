"""Batches cut to the server's request body limit: the client splits by encoded size as well as by count,
halves a batch the server still refuses as too large (413), and gives a submission refused alone for its
size a verdict of its own, so one oversized completion never costs the others their rewards."""

from __future__ import annotations

import asyncio

import pytest
from serve_helpers import TASK, GateExecutor, ThreadServer
from warpgym.experiments.serve.client import AsyncServeClient, ServeClient, item
from warpgym.experiments.serve.reward import AsyncKernelReward, KernelReward

LIMIT = 128 << 10
"""The test server's request body limit (the default is 16 MiB)."""


def module(chars: int, marker: str) -> str:
    """A softmax module padded with comments to about ``chars`` characters."""
    head = f"def softmax(x):\n    return x  # {marker}\n"
    return head + ("# " + "x" * 98 + "\n") * max(0, (chars - len(head)) // 101)


@pytest.fixture
def server(tmp_path):
    executor = GateExecutor()
    executor.gate.set()
    served = ThreadServer(executor, tmp_path / "j.sqlite", max_body_bytes=LIMIT)
    yield served
    served.stop()


@pytest.mark.parametrize("batch_bytes", [100 << 10, 8 << 20], ids=["under the limit", "over it: halved"])
def test_a_batch_larger_than_the_body_limit_is_sent_in_parts(server, batch_bytes: int):
    items = [item(TASK, module(40_000, f"part {i}")) for i in range(30)]  # 1.2 MB in all
    with ServeClient(server.url, batch_bytes=batch_bytes) as client:
        rows = client.submit_batch(items)
        assert [r["state"] for r in rows if r["id"] is None] == []
        verdicts = client.evaluate_many(items, timeout_s=60)
    assert all(v["correct"] is True for v in verdicts) and len(verdicts) == 30


def test_a_submission_over_the_limit_alone_gets_a_verdict_that_says_so(server):
    items = [item(TASK, module(1_000, "small 0")), item(TASK, module(150_000, "too large")),
             item(TASK, module(1_000, "small 1"))]
    with ServeClient(server.url) as client:
        verdicts = client.evaluate_many(items, timeout_s=60)
    assert [v["correct"] for v in verdicts] == [True, False, True]
    refused = verdicts[1]
    assert refused["task"] == TASK and [v["code"] for v in refused["violations"]] == ["too-large"]
    assert "413" in refused["feedback"] and "nothing was judged" in refused["feedback"]

    async def from_async() -> list[dict]:
        async with AsyncServeClient(server.url) as client:
            return await client.evaluate_many(items, timeout_s=60)

    assert [v["correct"] for v in asyncio.run(from_async())] == [True, False, True]


def test_the_reward_scores_every_completion_when_the_whole_exceeds_the_limit(server):
    """Forty completions of 40k characters and one of 150k: each scored, the large one 0."""
    completions = [f"```python\n{module(40_000, f'reward {i}')}```" for i in range(40)]
    completions.append(f"```python\n{module(150_000, 'reward large')}```")
    kwargs = {"prompts": [""] * 41, "completions": completions, "task_id": [TASK] * 41}
    reward = KernelReward(client=ServeClient(server.url), timing=False)
    rewards = reward(**kwargs)
    assert rewards[:40] == [1.0] * 40 and rewards[40] == 0.0
    assert reward.last_results[40]["violations"][0]["code"] == "too-large"
    assert asyncio.run(AsyncKernelReward(server.url, timing=False)(**kwargs)) == rewards
