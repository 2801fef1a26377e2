"""Paired timing on the CPU: the statistics, the rounds and their stop rule, the result's fields and the
feedback, driven by fake timers whose true ratio is known (a GPU's clock drifts under them; the real
run is tests/gpu/test_paired_gpu.py)."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import statistics
from pathlib import Path

import pytest
from warpgym.env.common.timing import WARMUP_SECONDS, Calls
from warpgym.env.judge import bench, feedback, machine
from warpgym.env.judge.evaluator import Evaluator
from warpgym.env.judge.options import EvalOptions, PairedTiming
from warpgym.env.judge.paired import BaselineFailed, PairedOutcome, block_length, run_rounds
from warpgym.env.judge.ratios import median_interval, order_statistic_rank
from warpgym.env.judge.result import CaseResult, EvalResult, MachineState
from warpgym.env.protocol import messages as m
from warpgym.tasks import get_task


# ------------------------------------------------------------------------------------------ a fake GPU
class FakeGPU:
    """A GPU whose speed drifts with (simulated) time, as an H200 at its power cap does: a call of
    nominal ``ms`` takes ``ms * speed(now)``, times a multiplicative noise."""

    def __init__(self, drift: float = 0.06, period_s: float = 0.5, noise: float = 0.0, seed: int = 0,
                 slowdown: float = 1.0) -> None:
        self.now, self.drift, self.period, self.noise = 0.0, drift, period_s, noise
        self.rng = random.Random(seed)
        self.slowdown = slowdown
        self.log: list[str] = []

    def clock(self) -> float:
        return self.now

    def call(self, ms: float) -> float:
        speed = self.slowdown * (1 + self.drift * math.sin(2 * math.pi * self.now / self.period))
        taken = ms * speed * (1 + self.noise * self.rng.uniform(-1, 1))
        self.now += taken / 1e3
        return taken

    def block(self, name: str, ms: float, calls: int, warmup_calls: int, warmup_seconds: float
              ) -> tuple[Calls, float | None]:
        began = self.now
        warmed = 0
        while warmed < warmup_calls or self.now - began < warmup_seconds:
            self.call(ms)
            warmed += 1
        times = [self.call(ms) for _ in range(calls)]
        if calls:
            self.log.append(name)
        return Calls(times, [t + 0.01 for t in times], [0.005] * calls), ms if warmed else None

    def side(self, name: str, ms: float, fail_after: int | None = None):
        def side(calls, warmup_calls, warmup_seconds, start):
            if fail_after is not None and self.log.count(name) >= fail_after:
                raise BaselineFailed("RuntimeError: cuBLAS failed")
            return self.block(name, ms, calls, warmup_calls, warmup_seconds)

        return side


# ------------------------------------------------------------------------------------------ statistics
def test_the_order_statistic_interval_has_the_textbook_ranks_and_exact_coverage():
    # Known ranks for a 95% interval on a median: n=6 -> 1, 10 -> 2, 20 -> 6, 100 -> 40.
    assert [order_statistic_rank(n)[0] for n in (6, 10, 20, 100)] == [1, 2, 6, 40]
    for n in (6, 9, 20, 33):
        j, coverage = order_statistic_rank(n)
        exact = 1 - 2 * sum(math.comb(n, i) for i in range(j)) / 2 ** n
        assert coverage == pytest.approx(exact) and coverage >= 0.95
        wider = 1 - 2 * sum(math.comb(n, i) for i in range(j + 1)) / 2 ** n
        assert wider < 0.95, "the narrowest interval that reaches 95%"
    assert order_statistic_rank(5) == (1, 0.9375), "below six values: [min, max], saying its coverage"
    assert order_statistic_rank(1500)[1] >= 0.95  # exact integers: no underflow


def test_the_interval_covers_the_true_median_as_often_as_it_says_whatever_the_distribution():
    rng = random.Random(3)
    for draw, true_median in ((lambda: rng.expovariate(1.0), math.log(2)), (lambda: rng.uniform(0, 2), 1.0)):
        covered = 0
        for _ in range(2000):
            interval = median_interval([draw() for _ in range(20)])
            covered += interval.low <= true_median <= interval.high
        assert 0.94 <= covered / 2000 <= 0.98, covered  # 95.9% exactly for n = 20


def test_an_interval_refuses_values_that_are_not_finite():
    with pytest.raises(ValueError):
        median_interval([1.0, float("nan"), 2.0])


# ------------------------------------------------------------------------------------------ rounds
SETTINGS = PairedTiming(block_calls=5, min_rounds=6, max_rounds=60, budget_seconds=4.0, precision=0.02)


def test_paired_rounds_recover_the_true_ratio_under_drift_that_unpaired_timing_gets_wrong():
    gpu = FakeGPU(drift=0.06, period_s=0.5, noise=0.002)
    outcome = run_rounds(gpu.side("candidate", 2.0), {"eager": gpu.side("eager", 1.0)}, SETTINGS,
                         warmup_calls=5, clock=gpu.clock)
    speedup = outcome.speedup("eager")
    assert speedup.low <= 0.5 <= speedup.high and speedup.median == pytest.approx(0.5, rel=0.01)
    own = median_interval(outcome.round_ratios("eager"))
    assert outcome.ended_by == "precision" and own.half_width <= 0.02
    term = SETTINGS.between_evaluations
    assert term <= speedup.half_width <= math.hypot(0.02, term)
    # The same kernels timed apart, as a cached baseline was: 100 ms later the clock has moved.
    late = FakeGPU(drift=0.06, period_s=0.5)
    baseline_then = statistics.median(late.block("b", 1.0, 30, 0, 0.0)[0].event_ms)
    late.now += 0.12
    candidate_now = statistics.median(late.block("c", 2.0, 30, 0, 0.0)[0].event_ms)
    assert abs(baseline_then / candidate_now / 0.5 - 1) > 0.03, "the drift would show unpaired"


def test_each_round_is_a_block_of_one_then_the_other_and_the_order_alternates():
    gpu = FakeGPU(drift=0.0, noise=0.0)
    sides = {"eager": gpu.side("eager", 1.0), "vendor": gpu.side("vendor", 0.8)}
    outcome = run_rounds(gpu.side("C", 2.0), sides, SETTINGS, warmup_calls=2, clock=gpu.clock)
    assert outcome.settled and gpu.log[:3] == ["C", "eager", "vendor"]  # the settling round, thrown away
    assert gpu.log[3:9] == ["C", "eager", "vendor", "vendor", "eager", "C"]
    assert outcome.rounds == SETTINGS.min_rounds and outcome.ended_by == "precision"  # no noise: 6 rounds
    assert all(len(block.event_ms) == 5 for block in outcome.candidate)
    assert outcome.speedup("vendor").median == pytest.approx(0.4)


def test_a_slow_first_block_after_the_warm_up_is_thrown_away_not_counted():
    """As on the H200: the candidate's first block after the baselines' warm-up reads 13% slow."""
    gpu = FakeGPU(drift=0.0, noise=0.0)
    side = gpu.side("C", 2.0)
    first = [True]

    def transient(calls, warmup_calls, warmup_seconds, start):
        taken = side(calls, warmup_calls, warmup_seconds, start)
        if calls and first[0]:
            first[0] = False
            return Calls([t * 1.13 for t in taken[0].event_ms], taken[0].wall_ms, taken[0].issue_ms), taken[1]
        return taken

    outcome = run_rounds(transient, {"eager": gpu.side("eager", 1.0)}, SETTINGS, warmup_calls=2,
                         clock=gpu.clock)
    assert outcome.settled and min(outcome.round_ratios("eager")) == pytest.approx(0.5)  # not 0.5 / 1.13
    slow = run_rounds(gpu.side("C", 900.0), {"eager": gpu.side("eager", 900.0)}, SETTINGS, warmup_calls=1,
                      clock=gpu.clock)
    assert slow.block_calls < SETTINGS.block_calls and not slow.settled  # long calls: no extra round


class BlockLog:
    """Sides that time nothing: each block's calls all read one value no other block reads, and the log keeps
    every timed block as (side, rotation start, value), so a block can be found again among the outcome's."""

    def __init__(self) -> None:
        self.now = 0.0
        self.blocks: list[tuple[str, int, float]] = []

    def clock(self) -> float:
        return self.now

    def side(self, name: str, ms: float):
        def side(calls, warmup_calls, warmup_seconds, start):
            if not calls:  # a warm-up
                return Calls([], [], []), ms
            value = ms + len(self.blocks) * 1e-6
            self.blocks.append((name, start, value))
            self.now += calls * ms / 1e3
            return Calls([value] * calls, [value] * calls, [0.001] * calls), None

        return side

    def window(self, settings: PairedTiming, ms: float = 2.0) -> PairedOutcome:
        sides = {"eager": self.side("eager", ms / 2), "vendor": self.side("vendor", ms / 2.5)}
        return run_rounds(self.side("C", ms), sides, settings, warmup_calls=2, clock=self.clock)


def _kept(outcome: PairedOutcome) -> set[float]:
    """Every value in the outcome's counted blocks."""
    blocks = [*outcome.candidate, *(b for blocks in outcome.baselines.values() for b in blocks)]
    return {v for block in blocks for v in block.event_ms}


def test_settling_rounds_are_timed_before_the_first_counted_round_and_thrown_away():
    log = BlockLog()
    outcome = log.window(dataclasses.replace(SETTINGS, settling_rounds=3))
    assert outcome.settled and outcome.settling_rounds == 3
    assert len(log.blocks) == 3 * 3 + 3 * outcome.rounds  # three sides: three rounds more than counted
    settling, counted = log.blocks[:9], log.blocks[9:]
    assert not _kept(outcome) & {value for *_, value in settling}
    assert _kept(outcome) == {value for *_, value in counted}
    assert [len(b.event_ms) for b in outcome.candidate] == [SETTINGS.block_calls] * outcome.rounds


def test_no_settling_round_with_settling_rounds_zero():
    log = BlockLog()
    outcome = log.window(dataclasses.replace(SETTINGS, settling_rounds=0))
    assert not outcome.settled and outcome.settling_rounds == 0
    assert len(log.blocks) == 3 * outcome.rounds and _kept(outcome) == {value for *_, value in log.blocks}
    assert log.blocks[0][0] == "C" and outcome.candidate[0].event_ms[0] == log.blocks[0][2]


def test_settling_rounds_alternate_the_order_and_the_inputs_as_counted_rounds_do():
    log = BlockLog()
    outcome = log.window(dataclasses.replace(SETTINGS, settling_rounds=4))
    block = outcome.block_calls
    one_round = [["C", "eager", "vendor"], ["vendor", "eager", "C"]]
    settling = [(name, start) for name, start, _ in log.blocks[:12]]
    assert settling == [(name, i * block) for i in range(4) for name in one_round[i % 2]]
    counted = [(name, start) for name, start, _ in log.blocks[12:18]]
    assert counted == [(name, i * block) for i in range(2) for name in one_round[i % 2]]


def test_a_call_too_slow_for_full_blocks_gets_no_settling_round_however_many_are_asked():
    log = BlockLog()
    outcome = log.window(dataclasses.replace(SETTINGS, settling_rounds=5), ms=900.0)
    assert outcome.block_calls < SETTINGS.block_calls
    assert not outcome.settled and outcome.settling_rounds == 0
    assert len(log.blocks) == 3 * outcome.rounds and _kept(outcome) == {value for *_, value in log.blocks}


def test_noise_that_never_narrows_the_interval_ends_by_budget_within_the_budget():
    gpu = FakeGPU(drift=0.0, noise=0.6, seed=1)
    settings = PairedTiming(block_calls=1, min_rounds=6, max_rounds=1000, budget_seconds=0.5, precision=0.001)
    outcome = run_rounds(gpu.side("C", 2.0), {"eager": gpu.side("eager", 1.0)}, settings, warmup_calls=1,
                         clock=gpu.clock)
    assert outcome.ended_by == "budget" and outcome.rounds >= 6
    rounds_seconds = gpu.now - WARMUP_SECONDS  # the candidate's warm-up, then the rounds
    assert 0.9 * settings.budget_seconds <= rounds_seconds <= settings.budget_seconds + 0.01
    capped = run_rounds(gpu.side("C", 2.0), {"eager": gpu.side("eager", 1.0)}, settings, warmup_calls=1,
                        clock=gpu.clock, max_rounds=9)
    assert capped.rounds == 9 and capped.ended_by == "budget"


def test_a_slow_call_gets_blocks_of_one_and_two_rounds_at_least_whatever_the_budget():
    assert block_length(SETTINGS, {"": 1000.0, "eager": 1000.0}) == 1
    assert block_length(SETTINGS, {"": 2.0, "eager": 1.0}) == 5
    assert block_length(SETTINGS, {"": 150.0, "eager": 100.0}) == 2  # 4000 ms / (6 rounds x 250 ms)
    gpu = FakeGPU(drift=0.0, noise=0.3)
    settings = PairedTiming(block_calls=5, min_rounds=6, max_rounds=60, budget_seconds=1.0)
    outcome = run_rounds(gpu.side("C", 900.0), {"eager": gpu.side("eager", 900.0)}, settings, warmup_calls=1,
                         clock=gpu.clock)
    assert outcome.block_calls == 1 and outcome.rounds == 2 and outcome.ended_by == "budget"
    assert median_interval(outcome.round_ratios("eager")).coverage == 0.5


def test_a_baseline_that_fails_in_the_window_is_left_out_with_its_reason_and_the_others_stay_paired():
    gpu = FakeGPU(drift=0.03, noise=0.001)
    outcome = run_rounds(gpu.side("C", 2.0), {"eager": gpu.side("eager", 1.0),
                                              "vendor": gpu.side("vendor", 0.5, fail_after=3)},
                         SETTINGS, warmup_calls=1, clock=gpu.clock)
    assert set(outcome.baselines) == {"eager"} and "cuBLAS failed" in outcome.failed["vendor"]
    assert len(outcome.round_ratios("eager")) == outcome.rounds


def test_hidden_work_makes_the_candidate_s_wall_clock_count():
    slow_wall = Calls([1.0] * 5, [5.0] * 5, [0.01] * 5)
    outcome = PairedOutcome(candidate=[slow_wall] * 6, baselines={"eager": [Calls([2.0] * 5, [2.1] * 5,
                                                                                   [0.01] * 5)] * 6})
    assert outcome.hidden_work and outcome.speedup("eager").median == pytest.approx(0.4)
    honest = PairedOutcome(candidate=[Calls([1.0] * 5, [1.05] * 5, [0.01] * 5)] * 6,
                           baselines={"eager": [Calls([2.0] * 5, [2.1] * 5, [0.01] * 5)] * 6})
    assert not honest.hidden_work and honest.speedup("eager").median == pytest.approx(2.0)


def test_the_paired_settings_are_validated_and_reps_caps_the_rounds():
    with pytest.raises(ValueError):
        PairedTiming(min_rounds=1)
    with pytest.raises(ValueError):
        PairedTiming(max_rounds=4, min_rounds=6)
    with pytest.raises(ValueError):
        PairedTiming(precision=0)
    for settling_rounds in (-1, 21):
        with pytest.raises(ValueError, match="settling_rounds"):
            PairedTiming(settling_rounds=settling_rounds)
    assert PairedTiming(settling_rounds=0).settling_rounds == 0
    assert PairedTiming(settling_rounds=20).settling_rounds == 20
    assert EvalOptions().max_rounds() == PairedTiming().max_rounds
    assert EvalOptions(reps=100).max_rounds() == 20
    assert EvalOptions(reps=10).max_rounds() == PairedTiming().min_rounds


def test_a_timed_block_reply_with_impossible_figures_is_refused():
    with pytest.raises(m.ProtocolError):
        m.parse_reply("time_block", {"ok": True, "event_ms": [1.0], "wall_ms": [], "issue_ms": []})
    with pytest.raises(m.ProtocolError):
        m.parse_reply("time_block", {"ok": True, "event_ms": [-1.0], "wall_ms": [1.0], "issue_ms": [0.1]})
    with pytest.raises(m.ProtocolError):
        m.parse_reply("time_block", {"ok": True, "event_ms": [float("nan")], "wall_ms": [1.0],
                                     "issue_ms": [0.1]})


# ------------------------------------------------------------------------------------------ NVML
class FakeNVML:
    NVML_CLOCK_SM, NVML_TEMPERATURE_GPU = 1, 0

    class NVMLError(Exception):
        pass

    def __init__(self, reasons: int, clocks=(1980, 1755)) -> None:
        self.reasons, self.clocks, self.calls = reasons, list(clocks), 0

    def nvmlDeviceGetHandleByUUID(self, uuid):
        raise self.NVMLError("Not Found")

    def nvmlDeviceGetHandleByIndex(self, index):
        return ("handle", index)

    def nvmlDeviceGetClockInfo(self, handle, which):
        self.calls += 1
        return self.clocks[self.calls % len(self.clocks)]

    def nvmlDeviceGetPowerUsage(self, handle):
        return 698_000

    def nvmlDeviceGetTemperature(self, handle, which):
        return 61

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return 700_000

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):  # the older name only
        return self.reasons


def test_the_machine_state_is_sampled_and_only_slowdowns_beyond_the_power_cap_are_flagged():
    at_cap = machine.Sampler(0, nvml=FakeNVML(reasons=0x4 | 0x1))
    with at_cap.running():
        at_cap.sample()
    state = at_cap.state()
    assert state.sampled and state.samples >= 3
    assert state.sm_clock_mhz["min"] == 1755 and state.sm_clock_mhz["max"] == 1980
    assert state.power_w["median"] == 698.0 and state.power_limit_w == 700.0
    assert state.temperature_c["max"] == 61
    assert state.reasons == ["gpu idle", "software power cap"] and state.flagged == []
    hot = machine.Sampler(0, nvml=FakeNVML(reasons=0x4 | 0x40 | 0x10))
    hot.sample()
    assert hot.state().flagged == ["sync boost", "hardware thermal slowdown"]


def test_without_nvml_the_state_says_not_sampled_and_why(monkeypatch):
    monkeypatch.setattr(machine, "_INIT", ["nvidia-ml-py is not installed"])
    sampler = machine.Sampler(0)
    with sampler.running():
        pass
    state = sampler.state()
    assert not state.sampled and state.reason == "nvidia-ml-py is not installed"

    class NoHandle(FakeNVML):
        def nvmlDeviceGetHandleByIndex(self, index):
            raise self.NVMLError("Invalid Argument")

    state = machine.Sampler(0, nvml=NoHandle(0)).state()
    assert not state.sampled and "no handle" in state.reason


# ------------------------------------------------------------------------------------------ the bench phase
class FakeWorker:
    """The run worker's side of the window: answers time_block from the fake GPU."""

    alive = True

    def __init__(self, gpu: FakeGPU, ms: float) -> None:
        self.gpu, self.ms, self.requests = gpu, ms, []

    def request(self, msg, timeout):
        if msg["op"] == "stage":  # the window's input sets, before its blocks
            return {"ok": True, "sets": len(msg["input_sets"])}
        assert msg["op"] == "time_block", msg
        self.requests.append(msg)
        if msg["release"] and not msg["calls"]:
            return {"ok": True}
        calls, warm = self.gpu.block("candidate", self.ms, msg["calls"], msg["warmup_calls"],
                                     msg["warmup_seconds"])
        return {"ok": True, "event_ms": calls.event_ms, "wall_ms": calls.wall_ms, "issue_ms": calls.issue_ms,
                "warmup_call_ms": warm, "forbidden_ops": {}, "tampered": []}

    def stop(self):
        pass


def _fake_baselines(gpu: FakeGPU, times: dict[str, float]):
    class FakeBaselines:
        def __init__(self, task, case, device, *, alone, out_of_memory, seeds=None):
            self.errors = {"torch.compile": "RuntimeError: no compiler"}

        def prepare(self):
            pass

        def sides(self):
            return {name: gpu.side(name, ms) for name, ms in times.items()}

        def close(self):
            pass

    return FakeBaselines


def _bench(monkeypatch, tmp_path, gpu: FakeGPU, reasons: int = 0x4, paired: PairedTiming | None = None):
    monkeypatch.setenv("WARPGYM_LOCK_DIR", str(tmp_path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(bench, "Baselines", _fake_baselines(gpu, {"eager": 3.0}))
    monkeypatch.setattr(bench, "Sampler", lambda index: machine.Sampler(index, nvml=FakeNVML(reasons)))
    monkeypatch.setattr(bench, "run_rounds", lambda *a, **kw: run_rounds(*a, clock=gpu.clock, **kw))
    task = get_task("math/add")
    evaluator = Evaluator("cpu")
    evaluator.run_worker = worker = FakeWorker(gpu, 2.0)
    options = EvalOptions(device="cpu", paired=paired or PairedTiming())
    evaluation = evaluator.evaluation(task, task.solution_source(), options)
    monkeypatch.setattr(evaluation, "run", lambda check, settle_ms=0.0: m.RunReply(ok=True, outputs=[]))
    monkeypatch.setattr(evaluation, "judge", lambda check, reply: CaseResult(
        check.shape_set, check.case, check.seed, check.distribution, True))
    evaluation.result = result = EvalResult(task=task.id, target="sm_90a", device="fake", correct=True,
                                            compiled=True)
    bench.timing(evaluation)
    return result, worker, task


def test_the_bench_phase_reports_the_paired_speedup_with_its_interval_and_the_machine(monkeypatch, tmp_path):
    result, worker, task = _bench(monkeypatch, tmp_path, FakeGPU(drift=0.05, noise=0.002))
    assert result.correct and result.runtime_error is None, result.runtime_error
    (timing,) = result.timing
    ratio = timing.ratios["eager"]
    assert ratio.low <= 1.5 <= ratio.high and ratio.median == pytest.approx(1.5, rel=0.01)
    assert ratio.coverage >= 0.95 and ratio.rounds == timing.rounds >= 6 and timing.ended_by == "precision"
    assert result.speedup == {"eager": ratio.median} and result.speedup_low == {"eager": ratio.low}
    assert timing.baselines_ms["eager"] == pytest.approx(3.0, rel=0.06) and timing.runs == 5 * timing.rounds
    assert timing.baseline_errors == {"torch.compile": "RuntimeError: no compiler"}
    assert timing.machine.sampled and timing.machine.reasons == ["software power cap"]
    assert not result.throttled
    # The worker: a first call before the window, warm-up, the rounds, then the inputs released.
    assert worker.requests[0]["calls"] == 0 and worker.requests[0]["warmup_calls"] == 1
    assert worker.requests[1]["warmup_seconds"] > 0 and worker.requests[-1]["release"]
    text = feedback.render(result, task)
    shown = (f"eager {timing.baselines_ms['eager']:.3f} ms "
             f"({ratio.median:.2f}x [{ratio.low:.2f}, {ratio.high:.2f}])")
    assert shown in text, text
    assert "paired rounds of 5 calls, ended by precision" in text and "torch.compile not timed" in text
    assert "Faster than eager: yes by the point estimate" in text
    assert "yes by the interval's lower bound" in text
    assert "software power cap" in text and "Throttled" not in text
    again = EvalResult.from_dict(result.to_dict())
    assert again.timing[0].ratios["eager"] == ratio and again.timing[0].machine == timing.machine


def test_the_bench_phase_runs_the_settling_rounds_asked_for_and_the_result_keeps_their_number(
        monkeypatch, tmp_path):
    gpu = FakeGPU(drift=0.0, noise=0.001)
    result, _, _ = _bench(monkeypatch, tmp_path, gpu, paired=PairedTiming(settling_rounds=3))
    (timing,) = result.timing
    assert timing.settled and timing.settling_rounds == 3
    assert gpu.log.count("eager") == timing.rounds + 3 and timing.runs == 5 * timing.rounds
    again = EvalResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.timing[0].settled and again.timing[0].settling_rounds == 3
    default, _, _ = _bench(monkeypatch, tmp_path, FakeGPU(drift=0.0, noise=0.001))
    assert default.timing[0].settling_rounds == PairedTiming().settling_rounds == 1


def test_a_window_throttled_beyond_the_power_cap_is_flagged_in_result_and_feedback(monkeypatch, tmp_path):
    result, _, task = _bench(monkeypatch, tmp_path, FakeGPU(drift=0.0, noise=0.001), reasons=0x4 | 0x20)
    assert result.throttled == ["software thermal slowdown"]
    assert "Throttled while timing (software thermal slowdown)" in feedback.render(result, task)


def test_the_ratio_is_measured_in_each_window_never_carried_over(monkeypatch, tmp_path):
    """Two evaluations at two clocks (the GPU 25% slower for the second, both sides alike): each reports the
    true ratio, and the baseline's time is the one measured beside the candidate. A baseline time kept from
    the first window would have given 1.2 for the second."""
    fast, _, _ = _bench(monkeypatch, tmp_path, FakeGPU(drift=0.0, noise=0.001))
    slow, _, _ = _bench(monkeypatch, tmp_path, FakeGPU(drift=0.0, noise=0.001, slowdown=1.25))
    assert fast.speedup["eager"] == pytest.approx(1.5, rel=0.005)
    assert slow.speedup["eager"] == pytest.approx(1.5, rel=0.005)
    assert slow.timing[0].baselines_ms["eager"] == pytest.approx(1.25 * fast.timing[0].baselines_ms["eager"],
                                                                 rel=0.01)


def test_a_candidate_within_noise_is_faster_by_the_point_estimate_only():
    result = EvalResult(task="math/add", target="sm_90a", device="fake", correct=True,
                        speedup={"eager": 1.01}, speedup_low={"eager": 0.97}, speedup_high={"eager": 1.05})
    assert result.faster_than("eager") and not result.faster_than("eager", conservative=True)
    assert result.faster_than("eager", p=1.02) is False
    line = feedback._faster_line(result, "eager")
    assert "yes by the point estimate (1.01x)" in line
    assert "no by the interval's lower bound (0.97x): within noise" in line


# ------------------------------------------------------------------------------------------ the worker's op
def test_the_worker_times_blocks_on_inputs_it_keeps_until_released_and_reports_host_compute():
    """The real worker on the CPU (no CUDA events here, so warm-up blocks only): a block's calls run under
    the run-time policy, like the timing loop's, and the window's inputs outlive a block until released."""
    from warpgym.env.judge.channel import ask, stage_inputs

    task = get_task("math/add")
    case = task.cases("dev")[0]
    honest = task.solution_source()
    host = "def add(x, y):\n    return x + y\n"  # PyTorch computes the answer: host compute
    with Evaluator("cpu") as evaluator:
        for source, forbidden in ((honest, False), (host, True)):
            evaluation = evaluator.evaluation(task, source, EvalOptions(device="cpu"))
            assert evaluation.load(), evaluation.result.compile_errors
            staged = stage_inputs(evaluation, case, [0, 1, 2], 120)
            assert staged.ok and staged.sets == 3, staged.error
            request = m.TimeBlockRequest(calls=0, warmup_calls=3)
            reply = ask(evaluation.workers.run, request, 120)
            assert reply.ok, reply.error
            assert reply.warmup_call_ms is not None and reply.warmup_call_ms > 0 and reply.event_ms == []
            assert bool(reply.forbidden_ops) is forbidden, reply.forbidden_ops
            released = ask(evaluation.workers.run, m.TimeBlockRequest(calls=0, release=True), 60)
            assert released.ok and released.warmup_call_ms is None
            unstaged = ask(evaluation.workers.run, m.TimeBlockRequest(calls=0, warmup_calls=1), 60)
            assert not unstaged.ok and "no input sets were staged" in unstaged.error


def test_the_preroll_covers_the_median_issue_time_and_is_bounded():
    from warpgym.env.common import timing

    assert timing.preroll_ms([]) == 0.0
    assert timing.preroll_ms([0.3, 0.31, 5.0]) == pytest.approx(0.31 + timing.PREROLL_MARGIN_MS)
    assert timing.preroll_ms([50.0]) == timing.MAX_PREROLL_MS
    assert timing.spin_cycles_of(0.0) == 0


# ------------------------------------------------------------------------ what one window cannot see
def test_every_interval_carries_the_between_evaluations_term_and_zero_leaves_the_window_s_own():
    gpu = FakeGPU(drift=0.0, noise=0.0)
    plain = PairedTiming(between_evaluations=0.0)
    exact = run_rounds(gpu.side("C", 2.0), {"eager": gpu.side("eager", 1.0)}, plain, warmup_calls=1,
                       clock=gpu.clock).speedup("eager")
    assert exact.low == exact.high == pytest.approx(0.5)
    window = run_rounds(gpu.side("C", 2.0), {"eager": gpu.side("eager", 1.0)},
                        PairedTiming(between_evaluations=0.01), warmup_calls=1, clock=gpu.clock)
    widened = window.speedup("eager")
    assert widened.low == pytest.approx(0.495) and widened.high == pytest.approx(0.505)
    # In quadrature: a window's own half-width of 3% and 1% between evaluations make 3.16%.
    noisy = median_interval([0.97, 0.98, 0.99, 1.0, 1.01, 1.02, 1.03]).widened(0.01)
    assert noisy.high - 1.0 == pytest.approx(math.hypot(0.03, 0.01))
    with pytest.raises(ValueError):
        PairedTiming(between_evaluations=-0.01)


def test_a_baseline_slowed_right_after_the_candidate_s_block_shows_as_an_order_effect():
    """What the H200 showed before the worker freed its memory ahead of its reply: the baseline timed
    right after the candidate's block read 11% slower than after another baseline's."""
    gpu = FakeGPU(drift=0.0, noise=0.001)

    def eager(calls, warmup_calls, warmup_seconds, start):
        gpu.slowdown = 1.11 if gpu.log and gpu.log[-1] == "C" else 1.0
        try:
            return gpu.block("eager", 1.0, calls, warmup_calls, warmup_seconds)
        finally:
            gpu.slowdown = 1.0

    sides = {"eager": eager, "torch.compile": gpu.side("torch.compile", 1.0)}
    outcome = run_rounds(gpu.side("C", 1.0), sides, SETTINGS, warmup_calls=1, clock=gpu.clock)
    assert outcome.order_effect("eager") == pytest.approx(0.11, abs=0.01)
    assert abs(outcome.order_effect("torch.compile")) < 0.01
    timing = bench.timing_of({"n": 1}, outcome, MachineState(sampled=False), {})
    assert timing.order_effect["eager"] == pytest.approx(0.11, abs=0.01)
    assert len(timing.round_ratios["eager"]) == timing.rounds == len(timing.round_ms)
    assert PairedOutcome(candidate=outcome.candidate[:3],
                         baselines={"eager": outcome.baselines["eager"][:3]}).order_effect("eager") is None


RUNS = Path(__file__).resolve().parents[1] / "docs" / "runs"


def _five_process_cases(name: str) -> dict[str, list[list[float]]]:
    """Per pair and bench case of a recorded paired_repeat run: each process's rounds' ratios."""
    cases: dict[str, list[list[float]]] = {}
    for process in json.loads((RUNS / name).read_text())["runs"]:
        for pair in process:
            for t in pair["timing_detail"]:
                ratios = (t.get("round_ratios") or {}).get(pair["baseline"])
                if ratios:
                    cases.setdefault(f"{pair['task']} {t['case']}", []).append(ratios)
    return cases


def _covered(processes: list[list[float]], between: float) -> bool:
    intervals = [median_interval(r).widened(between) for r in processes]
    return all(i.low <= j.median <= i.high for i in intervals for j in intervals)


def test_the_default_between_evaluations_term_covers_every_recorded_multi_process_run():
    """The default is calibrated on recorded runs (docs/benchmarks.md): lowering it un-covers them."""
    default = PairedTiming().between_evaluations
    runs = sorted(RUNS.glob("paired-repeat-*.json"))
    cases = [p for run in runs for p in _five_process_cases(run.name).values() if len(p) >= 3]
    assert len(cases) == 44
    assert all(_covered(p, default) for p in cases)
    assert sum(_covered(p, 0.022) for p in cases) == 43
    assert sum(_covered(p, 0.016) for p in cases) == 39


def test_the_stop_rule_reads_the_window_s_own_interval_not_the_term_no_round_can_shrink():
    """A term above the precision would otherwise end every window by its budget."""
    gpu = FakeGPU(drift=0.0, noise=0.0)
    settings = PairedTiming(min_rounds=6, precision=0.02, between_evaluations=0.05)
    outcome = run_rounds(gpu.side("C", 2.0), {"eager": gpu.side("eager", 1.0)}, settings, warmup_calls=1,
                         clock=gpu.clock)
    assert outcome.ended_by == "precision" and outcome.rounds == settings.min_rounds
    assert outcome.speedup("eager").half_width == pytest.approx(0.05)
    noisy = FakeGPU(drift=0.0, noise=0.03)
    wide = run_rounds(noisy.side("C", 2.0), {"eager": noisy.side("eager", 1.0)},
                      PairedTiming(min_rounds=6, max_rounds=8, precision=0.001, between_evaluations=0.0),
                      warmup_calls=1, clock=noisy.clock)
    assert wide.ended_by == "budget" and wide.rounds == 8
