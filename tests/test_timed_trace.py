"""A sample of timed blocks traced on the device, on the CPU: which rounds are drawn (a seed of the judge's),
that the worker learns of a traced block only when asked for it, that traced calls are never timing samples
nor budget, and the verdict on what they ran. The worker is a fake that answers ``time_block`` from a fake
clock and writes the trace a GPU would (the real run is tests/gpu/test_timed_trace_gpu.py)."""

from __future__ import annotations

import random
import statistics
from typing import Any

import pytest
import torch
from test_timed_evidence import FILL, SOFTMAX, block, trace
from warpgym.env.common.timing import Calls
from warpgym.env.judge import bench, feedback, machine, timed_evidence
from warpgym.env.judge.evaluator import Evaluator
from warpgym.env.judge.options import EvalOptions, PairedTiming
from warpgym.env.judge.paired import run_rounds
from warpgym.env.judge.result import CaseResult, EvalResult, KernelReport, Timing
from warpgym.env.judge.timed_evidence import timed_work_violations
from warpgym.env.judge.timed_trace import TraceSample
from warpgym.env.protocol import messages as m
from warpgym.env.worker.device_trace import SENTINEL_NAME, busy_us, read_chrome_trace
from warpgym.tasks import get_task


class Clock:
    """Simulated seconds: a call of ``ms`` advances it by ``ms``, times a factor within ``noise`` of 1 drawn
    from a generator of its own (so two windows with the same calls see the same times)."""

    def __init__(self, noise: float = 0.0, seed: int = 0) -> None:
        self.now, self.noise, self.rng, self.log = 0.0, noise, random.Random(seed), []

    def __call__(self) -> float:
        return self.now

    def block(self, name: str, ms: float, calls: int, warmup_calls: int = 0) -> Calls:
        times = []
        for _ in range(calls + warmup_calls):
            times.append(ms * self.rng.uniform(1 - self.noise, 1 + self.noise))
            self.now += times[-1] / 1e3
        if calls:
            self.log.append(name)
        return Calls(times[warmup_calls:], times[warmup_calls:], [0.01] * calls)

    def side(self, name: str, ms: float):
        return lambda calls, warmup, seconds, start: (self.block(name, ms, calls, warmup), ms)

    def traced(self, seconds: float = 0.05):
        def side(calls: int, start: int, index: int) -> float:
            self.log.append(f"traced {index}")
            self.now += seconds
            return seconds

        return side


NOISY = 0.5
"""Calls within 50% of their time: no interval gets within 2%."""


def rounds(settings: PairedTiming, clock: Clock, trace: bool = True, traced_s: float = 0.05):
    return run_rounds(clock.side("C", 2.0), {"eager": clock.side("eager", 3.0)}, settings, warmup_calls=1,
                      clock=clock, trace=clock.traced(traced_s) if trace else None)


# ------------------------------------------------------------------------------------------ the sample
def test_the_sample_is_the_judge_s_seed_and_a_secret_one_by_default():
    first, again, other = ([s.draw() for _ in range(40)] for s in (TraceSample(2, 6, 1), TraceSample(2, 6, 1),
                                                                   TraceSample(2, 6, 2)))
    assert first == again and first != other
    secret = [[s.draw() for _ in range(60)] for s in (TraceSample(2, 6), TraceSample(2, 6))]
    assert secret[0] != secret[1]  # 2**-60-ish to collide
    assert set(first) <= {None, "before", "after"} and {"before", "after"} <= set(first + other)
    assert TraceSample(0, 6, 1).rate == 0.0 and TraceSample(9, 6).rate == 1.0
    assert TraceSample(2, 6).missing(1) == 1 and TraceSample(2, 6).missing(5) == 0


def test_a_window_traces_at_least_the_asked_blocks_and_a_long_one_keeps_the_rate():
    short = [rounds(PairedTiming(trace_seed=seed), Clock()) for seed in range(60)]
    assert all(o.rounds == 6 and o.ended_by == "precision" and len(o.traced) >= 2 for o in short)
    assert statistics.mean(len(o.traced) for o in short) < 3.0
    noisy = NOISY  # never precise: the window runs its 60 rounds
    long = [rounds(PairedTiming(trace_seed=seed, budget_seconds=100), Clock(noisy)) for seed in range(20)]
    assert all(o.rounds == 60 for o in long)
    assert 12 <= statistics.mean(len(o.traced) for o in long) <= 28  # 60 rounds at 1/3
    assert {b.round for o in long for b in o.traced} >= set(range(50, 60)), "late rounds are traced too"


def test_traced_blocks_are_beside_the_candidate_s_timed_block_and_never_samples():
    clock = Clock()
    outcome = rounds(PairedTiming(trace_seed=3), clock)
    assert len(outcome.candidate) == outcome.rounds and all(len(c.event_ms) == 5 for c in outcome.candidate)
    for i, entry in enumerate(clock.log):
        if entry.startswith("traced") and int(entry.split()[1]) < outcome.rounds:
            assert "C" in (clock.log[i - 1], clock.log[i + 1]), clock.log  # before or after its timed block
    assert all(b.calls == outcome.block_calls for b in outcome.traced)


def test_tracing_takes_nothing_from_the_budget():
    """A traced block of a second (a slow export, a long call) changes no round count: with the same noise,
    a window with tracing ends after as many rounds as one without."""
    noisy = NOISY
    settings = PairedTiming(budget_seconds=0.5, max_rounds=1000, trace_seed=4, traced_blocks=3)
    plain = rounds(settings, Clock(noisy), trace=False)
    traced = rounds(settings, Clock(noisy), traced_s=1.0)
    assert plain.ended_by == traced.ended_by == "budget" and plain.rounds == traced.rounds >= 6
    assert len(traced.traced) >= 3 and not plain.traced


def test_no_trace_side_or_no_sample_traces_nothing():
    assert not rounds(PairedTiming(traced_blocks=0, trace_seed=1), Clock()).traced
    assert not rounds(PairedTiming(trace_seed=1), Clock(), trace=False).traced


# ------------------------------------------------------------------------------------------ the bench phase
ANSWER = torch.arange(1000, dtype=torch.float64)
"""The fake reference of every bench case here: what a sampled timed call should have returned."""


class FakeWorker:
    """The run worker's side of the window: ``time_block`` from the clock; a traced block's reply carries the
    trace ``traced_block(calls)`` writes (an honest one by default), and its calls take ten times as long; a
    sampled block's, the values of ``answer(ANSWER)`` at the asked positions (judge/timed_values.py)."""

    alive = True

    def __init__(self, clock: Clock, traced_block=None, answer=lambda right: right) -> None:
        self.clock, self.requests = clock, []
        self.traced_block = traced_block or (lambda calls: block(("kernel", "add_kernel", 0), calls=calls))
        self.answer = answer

    def request(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        self.requests.append({k: v for k, v in msg.items() if k != "id"})
        if msg["release"] and not msg["calls"]:
            return {"ok": True}
        ms = 20.0 if msg["trace"] else 2.0
        calls = self.clock.block("candidate", ms, msg["calls"], msg["warmup_calls"])
        reply = {"ok": True, "event_ms": calls.event_ms, "wall_ms": calls.wall_ms, "issue_ms": calls.issue_ms,
                 "warmup_call_ms": ms if msg["warmup_calls"] else None}
        if msg["trace"]:
            reply["device_trace"] = self.traced_block(msg["calls"])
        if msg.get("sample_call") is not None:
            values = self.answer(ANSWER.float())
            where = [int(f * values.numel()) for f in msg["sample_at"]]
            reply["sample"] = [{"dtype": "float32", "numel": values.numel(),
                                "values": values[where].double().tolist()}]
        return reply

    def stop(self) -> None:
        pass


def _bench(monkeypatch, tmp_path, options: EvalOptions, worker: FakeWorker, own=("add_kernel",),
           checked=lambda check, settle_ms: m.RunReply(ok=True, outputs=[])):
    """The bench phase of math/add against the fake worker, then the device's verdict on what was traced;
    the checked calls ran ``add_kernel``, ``own`` are the kernels the candidate built, and ``checked``
    answers the bench check after the window."""
    clock = worker.clock

    class Baselines:
        def __init__(self, task, case, device, *, alone, out_of_memory, seeds=None):
            self.errors = {}

        def prepare(self):
            pass

        def sides(self):
            return {"eager": clock.side("eager", 3.0)}

        def close(self):
            pass

    monkeypatch.setenv("WARPGYM_LOCK_DIR", str(tmp_path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(bench, "Baselines", Baselines)
    monkeypatch.setattr(machine, "_INIT", ["nvidia-ml-py is not installed"])
    monkeypatch.setattr(bench, "run_rounds", lambda *a, **kw: run_rounds(*a, clock=clock, **kw))
    # The bench case's inputs are gigabytes: the fake worker needs none.
    monkeypatch.setattr(bench, "stage_inputs", lambda ev, case, seeds, timeout: m.StageReply(ok=True, sets=3))
    task = get_task("math/add")
    evaluator = Evaluator("cpu")
    evaluator.run_worker = worker
    ev = evaluator.evaluation(task, task.solution_source(), options)
    monkeypatch.setattr(ev, "run", lambda check, settle_ms=0.0: checked(check, settle_ms))
    monkeypatch.setattr(ev.references, "get", lambda *a, **kw: ([ANSWER], [torch.empty(1000, device="meta")]))
    monkeypatch.setattr(ev, "judge", lambda check, reply: CaseResult(check.shape_set, check.case, check.seed,
                                                                     check.distribution, True))
    ev.result = EvalResult(task=task.id, target="sm_90a", device="fake", correct=True, compiled=True,
                           kernels=[KernelReport(name, "sm_90a", {}) for name in own])
    ev.device_traces = [("n=1000", trace(("kernel", "add_kernel", 0)))]
    ev.traces_judged = 1
    bench.timing(ev)
    timed_evidence.judge_after_timing(ev)
    return ev, task


def test_an_honest_candidate_keeps_its_speedup_and_the_sample_s_cost_is_in_the_verdict(monkeypatch, tmp_path):
    options = EvalOptions(device="cpu", paired=PairedTiming(trace_seed=0))
    ev, task = _bench(monkeypatch, tmp_path, options, FakeWorker(Clock()))
    result = ev.result
    assert result.correct and not result.violations, result.violations
    (timing,) = result.timing
    assert timing.traced_blocks >= 2 and timing.traced_calls == timing.traced_blocks * timing.block_calls
    assert timing.trace_seconds > 0 and timing.runs == timing.rounds * timing.block_calls
    # Traced calls take ten times as long here: none of them is among the samples.
    assert timing.max_ms == pytest.approx(2.0) and result.speedup["eager"] == pytest.approx(1.5)
    timed = result.device_activity["timed"]
    assert timed["traced_blocks"] == timing.traced_blocks and timed["traced_calls"] == timing.traced_calls
    assert timed["timed_calls"] == timing.runs and timed["kernels"]["add_kernel"] == timing.traced_calls
    said = f"{timing.traced_calls} further calls traced on the device, not timed"
    assert said in feedback.render(result, task)
    again = EvalResult.from_dict(result.to_dict())
    assert again.timing[0].traced_calls == timing.traced_calls


def test_the_worker_learns_of_a_traced_block_only_from_the_request_that_runs_it(monkeypatch, tmp_path):
    """Two windows with other samples send the same untraced requests, field for field: nothing the worker
    holds before a traced block's request says that one is coming."""
    sent = []
    for seed in (0, 1):
        worker = FakeWorker(Clock())
        paired = PairedTiming(trace_seed=seed, value_seed=0)  # the sampled timed call: the same in both
        _bench(monkeypatch, tmp_path, EvalOptions(device="cpu", paired=paired), worker)
        sent.append(worker.requests)
    untraced = [[r for r in requests if not r["trace"]] for requests in sent]
    assert untraced[0] == untraced[1]
    traced = [[i for i, r in enumerate(requests) if r["trace"]] for requests in sent]
    assert traced[0] != traced[1] and all(traced)
    assert all(set(r) == set(m.TimeBlockRequest.model_fields) for r in sent[0])


@pytest.mark.parametrize(("name", "written", "code"), [
    ("a library kernel", lambda calls: block(("kernel", SOFTMAX, 0), calls=calls), "device-library-kernel"),
    ("no kernel at all", lambda calls: block(calls=calls), "device-timed-no-kernel"),
    ("an unchecked kernel", lambda calls: block(("kernel", "add_kernel", 0), ("kernel", "fast_path", 0),
                                                calls=calls), "device-timed-unchecked-kernel"),
])
def test_a_timed_call_that_ran_other_work_fails_and_its_speedup_is_withdrawn(monkeypatch, tmp_path, name,
                                                                           written, code):
    options = EvalOptions(device="cpu", paired=PairedTiming(trace_seed=2))
    worker = FakeWorker(Clock(), written)
    ev, _ = _bench(monkeypatch, tmp_path, options, worker, own=("add_kernel", "fast_path"))
    result = ev.result
    assert result.correct is False and code in {v.code for v in result.violations}, (name, result.violations)
    assert result.speedup is None and result.speedup_low is None and result.speedup_high is None
    message = next(v.message for v in result.violations if v.code == code)
    assert "timed calls" in message and "add()" in message


def test_tracing_turned_off_is_said_in_the_verdict(monkeypatch, tmp_path):
    worker = FakeWorker(Clock())
    options = EvalOptions(device="cpu", paired=PairedTiming(traced_blocks=0))
    ev, _ = _bench(monkeypatch, tmp_path, options, worker)
    assert not any(r["trace"] for r in worker.requests) and ev.result.timing[0].traced_blocks == 0
    assert any("no timed call was traced" in s for s in ev.result.skipped_checks)


def test_a_rejected_verdict_withholds_its_timing_figures(monkeypatch, tmp_path):
    options = EvalOptions(device="cpu", paired=PairedTiming(trace_seed=2))
    worker = FakeWorker(Clock(), lambda calls: block(calls=calls))
    ev, task = _bench(monkeypatch, tmp_path, options, worker)
    text = feedback.render(ev.result, task)
    assert ev.result.violations and ev.result.timing
    assert "Timing withheld: 1 bench case(s) were timed" in text
    assert "TFLOP/s" not in text and "roofline" not in text and "paired rounds" not in text


# ------------------------------------------------------------------------- timed calls against their work
def busy_block(kernel_us: float, calls: int) -> dict[str, Any]:
    """A traced block whose calls each ran ``add_kernel`` for ``kernel_us`` on the device, beside the worker's
    own poison fill, scrub and spins (which are not the candidate's work)."""
    rows, now = [], 0.0
    for _ in range(calls):
        for name, us in ((f"void {SENTINEL_NAME}(long)", 50.0), (FILL, 400.0), ("scrub_kernel", 5.0),
                         ("add_kernel", kernel_us)):
            rows.append({"cat": "kernel", "name": name, "ts": now, "dur": us})
            now += us + 1.0
    return {**read_chrome_trace({"traceEvents": rows}).to_wire(), "calls": calls}


def checked_reply(kernel_us: float):
    """The bench check after the window: one call that kept the device busy for ``kernel_us``."""
    rows = [{"cat": "kernel", "name": f"void {SENTINEL_NAME}(long)", "ts": 0.0, "dur": 1.0},
            {"cat": "kernel", "name": "add_kernel", "ts": 10.0, "dur": kernel_us},
            {"cat": "kernel", "name": f"void {SENTINEL_NAME}(long)", "ts": 20.0 + kernel_us, "dur": 1.0}]
    wire = read_chrome_trace({"traceEvents": rows}).to_wire()
    return lambda check, settle_ms: m.RunReply(ok=True, outputs=[], device_trace=wire)


def test_an_honest_candidate_s_timed_calls_take_as_long_as_its_traced_and_checked_work(monkeypatch, tmp_path):
    """Timed calls of 2 ms whose kernels ran 1.9 ms per call when traced and checked: the device time of
    the work is in the verdict, and the rule passes."""
    settled = []

    def checked(check, settle_ms):
        settled.append(settle_ms)
        return checked_reply(1900.0)(check, settle_ms)

    options = EvalOptions(device="cpu", paired=PairedTiming(trace_seed=0))
    worker = FakeWorker(Clock(), lambda calls: busy_block(1900.0, calls))
    ev, _ = _bench(monkeypatch, tmp_path, options, worker, checked=checked)
    assert ev.result.correct and not ev.result.violations, ev.result.violations
    (timing,) = ev.result.timing
    assert timing.traced_device_ms == pytest.approx(1.9) and timing.checked_device_ms == pytest.approx(1.9)
    assert settled == [bench.SETTLE_MS] and bench.SETTLE_MS > 0  # the check after the window spins first
    assert EvalResult.from_dict(ev.result.to_dict()).timing[0].checked_device_ms == pytest.approx(1.9)


def test_calls_timed_again_in_a_traced_block_are_work_of_that_block(monkeypatch, tmp_path):
    """A starved call is timed again inside the same trace, so the trace holds its kernels once per attempt:
    the worker reports the calls it ran, and the work per call is read over those, not over the calls asked
    for (a slow honest kernel would otherwise read as twice its work and fail)."""
    def retimed_once(calls: int) -> dict[str, Any]:
        return {**busy_block(1900.0, calls + 1), "calls": calls + 1}

    options = EvalOptions(device="cpu", paired=PairedTiming(trace_seed=0))
    ev, _ = _bench(monkeypatch, tmp_path, options, FakeWorker(Clock(), retimed_once),
                   checked=checked_reply(1900.0))
    assert ev.result.correct and not ev.result.violations, ev.result.violations
    assert ev.result.timing[0].traced_device_ms == pytest.approx(1.9)


@pytest.mark.parametrize(("traced_us", "checked_us", "where"), [
    (50.0, 10_000.0, "check after the timing window"),  # a kept answer and a token launch in every timed call
    (10_000.0, 10_000.0, "traced timed calls"),  # honest while traced (it can tell, by its launches' pace)
    (10_000.0, 1_900.0, "traced timed calls"),
])
def test_timed_calls_faster_than_their_own_work_fail_and_lose_their_speedup(monkeypatch, tmp_path, traced_us,
                                                                            checked_us, where):
    """The timed calls take 2 ms; the same work took 10 ms on the device where the candidate could not skip
    it: they computed less, whatever kernels they launched."""
    options = EvalOptions(device="cpu", paired=PairedTiming(trace_seed=0))
    worker = FakeWorker(Clock(), lambda calls: busy_block(traced_us, calls))
    ev, _ = _bench(monkeypatch, tmp_path, options, worker, checked=checked_reply(checked_us))
    result = ev.result
    assert result.correct is False and result.speedup is None and result.speedup_low is None
    (found,) = [v for v in result.violations if v.code == "device-timed-less-work"]
    assert where in found.message and "add()" in found.message and "2.0000 ms" in found.message


def test_the_rule_reads_the_median_timed_call_against_a_floor():
    """Within the floor, passes; below it, fails; missing evidence (no trace, a broken one) says nothing."""
    case = {"n": 1 << 20, "dtype": "float32"}

    def timing(median_ms, traced=None, checked=None) -> Timing:
        return Timing(case=case, median_ms=median_ms, min_ms=median_ms, max_ms=median_ms, runs=30,
                      traced_device_ms=traced, checked_device_ms=checked)

    floor = timed_evidence.TIMED_WORK_FLOOR
    assert not timed_work_violations([timing(1.0, traced=1.0 / floor * 0.999)], "add")
    assert timed_work_violations([timing(1.0, traced=1.0 / floor * 1.001)], "add")
    assert timed_work_violations([timing(1.0, checked=2.0)], "add")[0].code == "device-timed-less-work"
    assert not timed_work_violations([timing(1.0), timing(0.5, traced=0.45, checked=0.5)], "add")
    assert bench.device_ms(None) is None and bench.device_ms({"error": "cut", "busy_us": 5.0}) is None
    assert bench.device_ms({"busy_us": 5000.0}, calls=5) == pytest.approx(1.0)


def test_the_device_time_of_the_work_is_the_union_of_the_candidate_s_kernels():
    """Kernels on two streams that overlap count once; the worker's spins, scrub and ATen's fill not at all;
    the gaps between kernels are not work."""
    rows = [{"cat": "kernel", "name": f"void {SENTINEL_NAME}(long)", "ts": 0.0, "dur": 100.0},
            {"cat": "kernel", "name": "a_kernel", "ts": 200.0, "dur": 100.0},
            {"cat": "kernel", "name": "b_kernel", "ts": 250.0, "dur": 100.0},   # overlaps a_kernel by 50
            {"cat": "kernel", "name": FILL, "ts": 400.0, "dur": 300.0},
            {"cat": "kernel", "name": "scrub_kernel", "ts": 700.0, "dur": 30.0},
            {"cat": "gpu_memset", "name": "Memset (Device)", "ts": 740.0, "dur": 30.0},
            {"cat": "kernel", "name": "a_kernel", "ts": 800.0, "dur": 10.0},
            {"cat": "kernel", "name": f"void {SENTINEL_NAME}(long)", "ts": 900.0, "dur": 100.0}]
    assert read_chrome_trace({"traceEvents": rows}).busy_us == pytest.approx(160.0)
    assert busy_us([]) == 0.0 and busy_us([(0.0, 5.0), (1.0, 2.0), (5.0, 6.0)]) == pytest.approx(6.0)
