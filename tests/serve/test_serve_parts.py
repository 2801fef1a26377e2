"""The server's parts on their own: the queue, the journal, the verdict key, rate limits, settings, metrics
and the reward's reading of completions. No HTTP, no worker: each test runs in milliseconds."""

from __future__ import annotations

import math

import pytest
from warpgym.experiments.serve.cache import reusable, verdict_key
from warpgym.experiments.serve.guards import RateLimit, token_ok
from warpgym.experiments.serve.journal import Journal, JournalInUse
from warpgym.experiments.serve.models import Submission
from warpgym.experiments.serve.queue import PendingQueue
from warpgym.experiments.serve.reward import completion_text
from warpgym.experiments.serve.settings import Settings, check
from warpgym.experiments.serve.telemetry import Telemetry


def drain(queue: PendingQueue) -> list[str]:
    out = []
    while (key := queue.pop()) is not None:
        out.append(key)
    return out


def test_queue_serves_the_highest_priority_first_and_equal_ones_in_arrival_order():
    q = PendingQueue(10)
    for seq, (key, priority) in enumerate([("a", 0), ("b", 5), ("c", 0), ("d", 5), ("e", -3)]):
        assert q.push(key, priority, seq)
    assert drain(q) == ["b", "d", "a", "c", "e"]


def test_a_full_queue_refuses_a_new_key_but_a_duplicate_takes_no_room_and_may_raise_its_priority():
    q = PendingQueue(2)
    assert q.push("a", 0, 1) and q.push("b", 0, 2)
    assert not q.push("c", 0, 3)
    assert q.push("b", 9, 4)  # already waiting: no room needed, and now the most urgent
    assert q.push("a", -5, 5)  # asking for less never lowers it
    assert len(q) == 2 and q.room() == 0
    assert q.push("c", 0, 6, force=True)  # a submission accepted before a restart always goes back
    assert drain(q) == ["b", "a", "c"]


def test_a_closed_queue_gives_nothing_and_wakes_its_waiters():
    q = PendingQueue(4)
    q.push("a", 0, 1)
    q.close()
    assert q.pop() is None and q.wait(0.01) is False


def _sub(**kw) -> Submission:
    return Submission(**{"task": "normalization/softmax", "source": "def softmax(x): ...\n", **kw})


def _key(sub: Submission, where: str = "cpu:cpu:1", task_print: str = "softmax") -> str:
    return verdict_key(sub, where, None, task_print)


def test_the_verdict_key_covers_task_candidate_options_and_where_it_was_judged():
    base = _key(_sub())
    assert _key(_sub()) == base
    assert _key(_sub(priority=7)) == base  # urgency is not part of the verdict
    different = [
        _key(_sub(source="def softmax(x): ... \n")),
        _key(_sub(attachments={"k.ptx": "x"})),
        _key(_sub(task="normalization/layernorm")),
        _key(_sub(), task_print="another task of the same id"),
        _key(_sub(options={"timing": False})),
        _key(_sub(options={"shape_sets": ["dev", "heldout"]})),
        _key(_sub(options={"timeouts": {"run": 5}})),
        _key(_sub(), "cuda:NVIDIA H200:1"),
    ]
    assert len({base, *different}) == len(different) + 1


def test_a_verdict_the_server_made_up_is_never_reused():
    assert reusable({"runtime_error": None, "correct": False})
    assert reusable({"runtime_error": "the harness failed while judging this candidate (...)"})
    assert not reusable({"runtime_error": "the server could not evaluate this candidate after 3 attempt(s)"})
    assert not reusable({"runtime_error": "the harness failed while judging this candidate (...)",
                         "harness_failure": "OutOfMemoryError"})


def test_the_journal_keeps_submissions_across_a_reopen_and_answers_every_duplicate(tmp_path):
    path = tmp_path / "j.sqlite"
    j = Journal(path)
    with pytest.raises(JournalInUse):
        Journal(path)  # two servers never share a queue
    rows = [{"id": f"s{i}", "key": "k1" if i < 2 else "k2", "task": "t", "priority": i, "state": "queued",
             "request": {"task": "t", "source": f"src{i}"}} for i in range(3)]
    seqs = j.add(rows)
    assert seqs == sorted(seqs)
    assert j.start("k1") == {"task": "t", "source": "src0"}
    assert j.get("s1")["state"] == "running"
    j.close()
    j = Journal(path)  # a restart: the running ones were cut off and go back to waiting
    j.requeue()
    assert [r.id for r in j.unanswered()] == ["s0", "s1", "s2"]
    assert j.finish("k1", '{"correct": true}', remember=True) == ["s0", "s1"]
    assert j.get("s0")["result"] == '{"correct": true}' and j.get("s2")["state"] == "queued"
    assert j.verdict("k1") == '{"correct": true}' and j.verdict("k2") is None
    assert j.finish("k1", '{"correct": false}', remember=False) == []  # answered once, never twice
    assert j.states(["s0", "s2", "nope"]) == {"s0": "done", "s2": "queued"}
    j.close()


def test_rate_limit_lets_a_burst_through_then_says_how_long_to_wait():
    limit = RateLimit(rate=10, burst=5)
    assert all(limit.take("a", now=0.0) == 0 for _ in range(5))
    assert limit.take("a", now=0.0) == pytest.approx(0.1)
    assert limit.take("b", now=0.0) == 0  # per client
    assert limit.take("a", now=0.5) == 0  # refilled
    assert limit.take("a", 5, now=0.5) == pytest.approx(0.1)  # 4 left after the one above
    assert math.isinf(limit.take("c", 6, now=0.0))  # more than a burst can ever pass


def test_rate_limit_forgets_the_oldest_clients_past_its_bound():
    limit = RateLimit(rate=1, burst=1, clients=3)
    for name in "abcd":
        limit.take(name, now=0.0)
    assert list(limit.buckets) == ["b", "c", "d"]


def test_the_token_is_required_exactly_when_one_is_set():
    assert token_ok(None, None)
    assert token_ok("s" * 20, "Bearer " + "s" * 20)
    for header in (None, "", "s" * 20, "Bearer " + "s" * 19, "Basic " + "s" * 20, "Bearer " + "s" * 21):
        assert not token_ok("s" * 20, header), header


@pytest.mark.parametrize(("host", "token", "ok"), [
    ("127.0.0.1", None, True), ("localhost", None, True), ("::1", None, True), ("127.0.0.2", None, True),
    ("0.0.0.0", None, False), ("10.1.2.3", None, False), ("::", None, False),
    ("0.0.0.0", "t" * 32, True), ("127.0.0.1", "short", False),
])
def test_the_server_refuses_another_address_without_a_token(host, token, ok):
    settings = Settings(host=host, token=token)
    if ok:
        check(settings)
    else:
        with pytest.raises(ValueError, match="token"):
            check(settings)


def test_metrics_are_prometheus_text_with_cumulative_buckets():
    t = Telemetry()
    for seconds in (0.003, 0.2, 0.2, 700.0):
        t.observe("evaluation", seconds)
    t.count("warpgym_serve_rejected_total", reason="queue_full")
    t.count("warpgym_serve_rejected_total", 2, reason="rate")
    text = t.render({"warpgym_serve_queue_length": ("waiting", 3)}, {}, gpus=False)
    lines = text.splitlines()
    assert "warpgym_serve_queue_length 3" in lines
    assert 'warpgym_serve_rejected_total{reason="rate"} 2' in lines
    assert 'warpgym_serve_stage_seconds_bucket{le="0.005",stage="evaluation"} 1' in lines
    assert 'warpgym_serve_stage_seconds_bucket{le="0.25",stage="evaluation"} 3' in lines
    assert 'warpgym_serve_stage_seconds_bucket{le="600",stage="evaluation"} 3' in lines
    assert 'warpgym_serve_stage_seconds_bucket{le="+Inf",stage="evaluation"} 4' in lines
    assert 'warpgym_serve_stage_seconds_count{stage="evaluation"} 4' in lines
    assert all(line.startswith("#") or len(line.split()) == 2 for line in lines)


def test_evaluations_per_minute_counts_the_last_minute_only():
    t = Telemetry()
    start = t.started_monotonic
    for s in (1, 2, 3):
        t.evaluated(start + s)
    assert t.per_minute(start + 60) == pytest.approx(3.0)
    assert t.per_minute(start + 62.5) == pytest.approx(1.0)  # the first two left the window


def test_gpu_lines_say_why_they_are_missing_without_nvml():
    text = Telemetry().render({}, {}, gpus=True)
    assert "warpgym_serve_gpu_utilization_percent{" in text or "# GPU utilisation not reported" in text


def test_completions_are_read_as_text_or_as_a_conversation():
    assert completion_text("```python\nx\n```") == "```python\nx\n```"
    assert completion_text([{"role": "assistant", "content": "answer"}]) == "answer"
    parts = [{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    assert completion_text(parts) == "ab"
    with pytest.raises(TypeError):
        completion_text(42)


RACE = """
import threading
from warpgym.tasks import get_task
errors, barrier = [], threading.Barrier(8)
def ask():
    barrier.wait()
    try:
        get_task("normalization/softmax")
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=ask) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
print(errors)
"""


def test_threads_asking_for_a_task_at_once_all_get_it():
    """A server's first requests arrive together: none may see a registry still loading."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_serve_help_loads_no_heavy_library():
    import json
    import subprocess
    import sys

    probe = "\n".join([
        "import json, sys",
        "from warpgym.experiments.cli import main",
        "try:",
        "    main(['serve', '--help'])",
        "except SystemExit:",
        "    pass",
        "heavy = ('torch', 'fastapi', 'uvicorn', 'pydantic', 'httpx', 'warpgym.tasks')",
        "print(json.dumps([m for m in heavy if m in sys.modules]), file=sys.stderr)",
    ])
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "untrusted code" in proc.stdout and "--drain-timeout" in proc.stdout
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == []
