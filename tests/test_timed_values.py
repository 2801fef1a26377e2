"""Timed calls' answers read back, on the CPU: which blocks and calls are sampled (a seed of the judge's),
that the worker learns of a sample only in the request of the block it samples, what the worker reads
(with its own gather), and the verdict when a sampled answer is wrong. The real run is in
tests/gpu/test_timed_trace_gpu.py."""

from __future__ import annotations

import statistics
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from test_timed_trace import Clock, FakeWorker, _bench
from warpgym.env.common import timing
from warpgym.env.judge import feedback
from warpgym.env.judge.options import EvalOptions, PairedTiming
from warpgym.env.judge.timed_values import POSITIONS, SampledCall, ValueSample, judge_sample
from warpgym.env.protocol import messages as m
from warpgym.tasks import get_task


# ----------------------------------------------------------------------------------------- the draw
def _fields(sample: ValueSample, blocks: int, calls: int = 5, sets: int = 3) -> list[dict[str, Any]]:
    return [sample.fields(calls, i * calls, sets) for i in range(blocks)]


def test_the_sampled_blocks_are_the_judge_s_seed_and_a_secret_one_by_default():
    first, again, other = (_fields(ValueSample(2, 6, seed), 40) for seed in (1, 1, 2))
    assert first == again and first != other
    secret = [_fields(ValueSample(2, 6), 60) for _ in range(2)]
    assert secret[0] != secret[1]
    for fields in first:
        if fields:
            assert 0 <= fields["sample_call"] < 5 and len(fields["sample_at"]) == POSITIONS
            assert all(0.0 <= f < 1.0 for f in fields["sample_at"])


def test_every_block_is_as_likely_to_be_sampled_up_to_the_most_asked():
    picks = [[i for i, f in enumerate(_fields(ValueSample(1, 6, seed), 30)) if f] for seed in range(600)]
    assert all(len(p) <= 1 for p in picks)
    firsts = [p[0] for p in picks if p]
    assert statistics.mean(p[0] < 6 for p in picks if p) == pytest.approx(1 - (5 / 6) ** 6, abs=0.06)
    assert max(firsts) > 12, "late blocks are sampled too"
    assert not any(_fields(ValueSample(0, 6, 3), 30))


def test_a_window_without_a_sampled_block_owes_one_and_the_next_block_takes_it():
    unsampled = ValueSample(2, 10**6, seed=5)  # a draw of one in a million: none in a few blocks
    assert not any(_fields(unsampled, 4)) and unsampled.owed
    unsampled.force = True
    (fields,) = _fields(unsampled, 1)
    assert fields and not unsampled.owed and not unsampled.force


def test_the_sampled_call_s_input_set_is_its_place_in_the_rotation():
    sample = ValueSample(1, 1, seed=4)  # every block drawn
    fields = sample.fields(5, 7, 3)
    assert sample.taken[0].staged == (7 + fields["sample_call"]) % 3
    assert sample.fields(0, 0, 3) == {} and sample.fields(5, 0, 3) == {}  # warm-up; then the most is one


# ----------------------------------------------------------------------------------------- the worker
@pytest.fixture
def worker_main():
    """The worker's module, imported here rather than at collection (it is the worker process's own)."""
    from warpgym.env.worker import main

    return main


def test_the_worker_reads_each_output_at_its_fractions_with_its_own_gather(monkeypatch, worker_main):
    at = [0.0, 0.5, 0.999]
    out = (torch.arange(10, dtype=torch.float32), torch.arange(4, dtype=torch.int64).reshape(2, 2) * 3)
    monkeypatch.setattr(torch, "take", lambda t, i: torch.zeros(len(i)))  # a candidate's patch is not used
    sampled, error = worker_main._sample(out, at)
    assert error is None
    assert [s.numel for s in sampled] == [10, 4] and [s.dtype for s in sampled] == ["float32", "int64"]
    assert sampled[0].values == [0.0, 5.0, 9.0] and sampled[1].values == [0.0, 6.0, 9.0]


def test_the_worker_refuses_to_read_what_is_not_a_plain_tensor(worker_main):
    class Sneaky(torch.Tensor):
        pass

    assert worker_main._sample(None, [0.5])[1] == "the sampled call did not run"
    assert "not plain tensors" in worker_main._sample(torch.ones(3).as_subclass(Sneaky), [0.5])[1]
    assert "not plain tensors" in worker_main._sample([torch.ones(3), 2.0], [0.5])[1]


class FakeEvent:
    def __init__(self, enable_timing: bool = True) -> None:
        pass

    def record(self) -> None:
        pass

    def query(self) -> bool:
        return False

    def elapsed_time(self, other: FakeEvent) -> float:
        return 1.0


def test_the_timing_loop_holds_only_the_kept_call_s_result():
    results = []

    def fn(x: torch.Tensor) -> torch.Tensor:
        results.append(x + len(results))
        return results[-1]

    common = {"event_cls": FakeEvent, "synchronize": lambda: None, "flush": torch.zeros(4),
              "sleep": lambda cycles: None, "cycles_per_ms": 1.0}
    calls = timing.time_calls(fn, [{"x": torch.zeros(2)}], 5, keep=3, **common)
    assert calls.kept is results[3] and len(calls.event_ms) == 5
    assert timing.time_calls(fn, [{"x": torch.zeros(2)}], 2, **common).kept is None


def test_the_kept_call_is_read_before_a_later_call_could_repair_it():
    """A candidate that skips part of its work, then finishes an earlier output in a later call only when
    that output is still held (a sampled call's): the read comes first, so the skipped part shows."""
    import weakref

    earlier: list = []

    def fn(x: torch.Tensor) -> torch.Tensor:
        for ref in earlier:
            if (held := ref()) is not None:
                held.fill_(1.0)  # the work the earlier call skipped, done now that it is being read
        out = torch.zeros(4)  # 1.0 everywhere is the right answer
        earlier[:] = [weakref.ref(out)]
        return out

    common = {"event_cls": FakeEvent, "synchronize": lambda: None, "flush": torch.zeros(4),
              "sleep": lambda cycles: None, "cycles_per_ms": 1.0}
    calls = timing.time_calls(fn, [{"x": torch.zeros(4)}], 5, keep=1, read=lambda out: out.tolist(), **common)
    assert calls.kept == [0.0, 0.0, 0.0, 0.0], "read after the next call had rewritten it"


# ----------------------------------------------------------------------------------------- the verdict
def _ev(expected: torch.Tensor) -> SimpleNamespace:
    task = get_task("math/add")
    meta = [torch.empty_like(expected, dtype=torch.float32, device="meta")]
    got = []

    def get(task, case, seed, dist, gpu_shared, *, role, salt):
        got.append(role)
        return [expected], meta

    seeds = SimpleNamespace(seed=lambda role, purpose: role * 100, salt=0)
    return SimpleNamespace(task=task, references=SimpleNamespace(get=get), seeds=seeds, gpu_shared=None,
                           asked=got)


def _taken(values: torch.Tensor, at: list[float], staged: int = 0, dtype: str = "float32") -> SampledCall:
    where = [int(f * values.numel()) for f in at]
    out = m.SampledOutput(dtype=dtype, numel=values.numel(), values=values.flatten()[where].double().tolist())
    return SampledCall(staged=staged, call=2, at=at, outputs=[out])


def test_right_sampled_values_pass_and_are_counted():
    expected = torch.linspace(-3, 3, 1000, dtype=torch.float64)
    ev = _ev(expected)
    at = [i / 64 for i in range(64)]
    sample = ValueSample(2, 6, seed=0)
    sample.taken = [_taken(expected.float(), at), _taken(expected.float(), at, staged=1)]
    found = judge_sample(ev, {"n": 1000}, sample)
    assert found == {"calls": 2, "elements": 128, "mismatches": 0, "message": ""}
    assert len(ev.asked) == 2  # one reference per staged set sampled


@pytest.mark.parametrize(("wrong", "said"), [
    (lambda v: torch.where(torch.arange(v.numel()) >= 750, torch.nan, v), "sampled elements outside"),
    (lambda v: v[:999], "has 999 float32 elements; expected 1000 float32"),
])
def test_a_wrong_sampled_answer_is_named_with_its_case_and_position(wrong, said):
    expected = torch.linspace(-3, 3, 1000, dtype=torch.float64)
    at = [i / 64 for i in range(64)]
    sample = ValueSample(1, 6, seed=0)
    sample.taken = [_taken(wrong(expected.float()), at)]
    found = judge_sample(_ev(expected), {"n": 1000}, sample)
    message = found["message"]
    assert said in message and "n=1000" in message and "call 3 of its block" in message


def test_no_sample_no_finding_and_an_unread_sample_is_a_finding():
    ev = _ev(torch.zeros(10, dtype=torch.float64))
    assert judge_sample(ev, {"n": 10}, ValueSample(2, 6, seed=0)) is None
    sample = ValueSample(1, 6, seed=0)
    sample.taken = [SampledCall(staged=0, call=0, at=[0.5], error="the sampled call returned int")]
    assert "returned int" in judge_sample(ev, {"n": 10}, sample)["message"]



def _random_ev(checked_answer: torch.Tensor, passes: bool = True) -> SimpleNamespace:
    """An evaluation of a task judged by its own check: its checked call on the timing inputs answers
    ``checked_answer``, and the check passes it or not."""
    from warpgym.env.judge.result import CaseResult

    ran = []

    def run(check):
        ran.append(check)
        return m.RunReply(ok=True, outputs=[checked_answer])

    def judge(check, reply):
        return CaseResult(shape_set=check.shape_set, case=check.case, seed=check.seed,
                          distribution=check.distribution, passed=passes,
                          message="" if passes else "element 3 is nan; a kept element must be x / (1 - p)")

    return SimpleNamespace(task=get_task("random/dropout"), run=run, judge=judge, ran=ran,
                           result=SimpleNamespace(cases=[]))


def test_a_random_op_s_sampled_values_are_its_own_checked_answer_on_the_same_inputs():
    """No reference answer exists for a random op, but one seed gives one output: the timed call's values
    must be the checked call's on the same timing inputs (drawn for timing, not for a check)."""
    answer = torch.rand(1000)
    at = [i / 64 for i in range(64)]
    sample = ValueSample(1, 6, seed=0)
    sample.taken = [_taken(answer, at)]
    ev = _random_ev(answer)
    assert judge_sample(ev, {"n": 1000}, sample) == {"calls": 1, "elements": 64, "mismatches": 0,
                                                     "message": ""}
    (check,) = ev.ran
    assert check.purpose == "timing" and check.distribution == "normal" and check.shape_set == "bench"
    short = torch.where(torch.arange(1000) >= 750, torch.nan, answer)
    sample.taken = [_taken(short, at)]
    assert "sampled elements outside" in judge_sample(_random_ev(answer), {"n": 1000}, sample)["message"]


def test_a_random_op_whose_checked_answer_on_the_timing_inputs_fails_its_check_fails_the_sample():
    answer = torch.rand(1000)
    sample = ValueSample(1, 6, seed=0)
    sample.taken = [_taken(answer, [0.5])]
    ev = _random_ev(answer, passes=False)
    message = judge_sample(ev, {"n": 1000}, sample)["message"]
    assert "fails the task's check (element 3 is nan" in message
    assert [c.passed for c in ev.result.cases] == [False], "the failed check is in the verdict's cases"


# ----------------------------------------------------------------------------------------- the bench phase
def _sampled_bench(monkeypatch, tmp_path, worker: FakeWorker, **paired: Any):
    options = EvalOptions(device="cpu", paired=PairedTiming(trace_seed=0, **paired))
    return _bench(monkeypatch, tmp_path, options, worker,
                  checked=lambda check, settle_ms: m.RunReply(ok=True, outputs=[]))


def test_an_honest_candidate_s_sampled_timed_calls_pass_and_say_so(monkeypatch, tmp_path):
    worker = FakeWorker(Clock())
    ev, task = _sampled_bench(monkeypatch, tmp_path, worker, value_seed=1)
    result = ev.result
    assert result.correct and not result.violations, result.violations
    (t,) = result.timing
    sampled = t.sampled_values
    assert 1 <= sampled["calls"] <= 2 and sampled["elements"] == POSITIONS * sampled["calls"]
    assert sampled["mismatches"] == 0 and sampled["message"] == ""
    said = f"timed call(s)' answers read back at {sampled['elements']} positions"
    assert said in feedback.render(result, task)
    asked = [r for r in worker.requests if r.get("sample_call") is not None]
    assert len(asked) == t.sampled_values["calls"] and not any(r["trace"] for r in asked)
    assert all(r["sample_at"] == [] for r in worker.requests if r.get("sample_call") is None)


def test_a_wrong_timed_answer_fails_and_loses_its_speedup(monkeypatch, tmp_path):
    worker = FakeWorker(Clock(), answer=lambda v: torch.where(torch.arange(1000) >= 750, 0.0, v))
    ev, task = _sampled_bench(monkeypatch, tmp_path, worker, value_seed=1)
    result = ev.result
    assert result.correct is False and result.speedup is None and result.speedup_low is None
    (found,) = [v for v in result.violations if v.code == "timed-wrong-answer"]
    assert "add() answered wrongly in a timed call" in found.message and "sampled elements" in found.message


def test_a_window_whose_rounds_drew_no_sample_samples_one_block_more(monkeypatch, tmp_path):
    seed = next(s for s in range(10_000) if not any(_fields(ValueSample(1, 6, s), 20)))
    worker = FakeWorker(Clock())
    ev, _ = _sampled_bench(monkeypatch, tmp_path, worker, value_seed=seed, value_samples=1)
    assert ev.result.timing[0].sampled_values["calls"] == 1
    timed = [r for r in worker.requests if r["calls"] and not r["trace"]]
    assert [i for i, r in enumerate(timed) if r["sample_call"] is not None] == [len(timed) - 1]
    assert timed[-1]["calls"] == timed[-2]["calls"]  # a block like the rounds'


def test_value_samples_off_read_nothing(monkeypatch, tmp_path):
    worker = FakeWorker(Clock())
    ev, _ = _sampled_bench(monkeypatch, tmp_path, worker, value_samples=0)
    assert ev.result.timing[0].sampled_values is None
    assert not any(r.get("sample_call") is not None for r in worker.requests)


def test_later_samples_run_on_the_first_sample_s_input_set():
    """One reference per bench case: a second sampled call is one that ran on the first's staged set."""
    for seed in range(50):
        sample = ValueSample(2, 1, seed=seed)  # every block drawn, two samples
        sample.fields(5, 0, 3)
        sample.fields(5, 5, 3)
        first, second = sample.taken
        assert first.staged == second.staged and (5 + second.call) % 3 == second.staged


def test_two_outliers_in_a_sample_pass_and_three_fail():
    """The timed inputs' rare honest outliers (a cancellation past any bound) are allowed, two per output."""
    expected = torch.linspace(1, 2, 1000, dtype=torch.float64)
    at = [i / 100 for i in range(100)]
    for wrong, fails in ((2, False), (3, True)):
        got = expected.float().clone()
        got[[int(f * 1000) for f in at[:wrong]]] += 1.0
        sample = ValueSample(1, 6, seed=0)
        sample.taken = [_taken(got, at)]
        found = judge_sample(_ev(expected), {"n": 1000}, sample)
        assert found["mismatches"] == wrong and bool(found["message"]) is fails


def test_float8_and_bool_outputs_are_read_exactly_on_both_sides(worker_main):
    """torch.take indexes no float8: both sides gather same-size integers and read them back as the dtype."""
    codes = torch.linspace(-4, 4, 64).to(torch.float8_e4m3fn)
    at = [i / 16 for i in range(16)]
    (sampled,), error = worker_main._sample(codes, at)
    assert error is None and sampled.dtype == "float8_e4m3fn"
    where = [int(f * 64) for f in at]
    assert sampled.values == codes[where].to(torch.float64).tolist()
    (flags,), _ = worker_main._sample(torch.arange(8) % 3 == 0, [0.0, 0.25])
    assert flags.values == [1.0, 0.0]
    expected = codes.to(torch.float64)
    ev = _ev(expected)
    meta = torch.empty(64, dtype=torch.float8_e4m3fn, device="meta")
    ev.references.get = lambda *a, **kw: ([codes], [meta])
    sample = ValueSample(1, 6, seed=0)
    sample.taken = [SampledCall(staged=0, call=0, at=at, outputs=[sampled])]
    assert judge_sample(ev, {"n": 64}, sample)["message"] == ""
