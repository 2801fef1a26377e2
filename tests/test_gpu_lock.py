"""The per-GPU lock (env/timing.gpu_lock): checks share a GPU, a timing loop has it alone."""

from __future__ import annotations

import fcntl
import threading
import time

import pytest
import torch
from warpgym.env import EvalOptions, Evaluator
from warpgym.env.common.timing import (
    MAX_TIMED_SECONDS,
    MIN_TIMED_CALLS,
    bench_slot,
    calls_within_budget,
    gpu_lock,
)
from warpgym.env.judge import bench
from warpgym.env.judge.plan import BENCH_DISTRIBUTION, Check
from warpgym.env.judge.result import CaseResult, Violation
from warpgym.env.protocol.messages import RunReply
from warpgym.tasks import get_task


def _hold(shared: bool, entered: threading.Event, release: threading.Event) -> None:
    with gpu_lock(0, shared=shared):
        entered.set()
        release.wait(10)


def _hold_index(index: int, entered: threading.Event) -> None:
    with gpu_lock(index, shared=True):
        entered.set()


def test_checks_share_the_gpu_and_timing_waits_for_them(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPGYM_LOCK_DIR", str(tmp_path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    release = threading.Event()
    first, second = threading.Event(), threading.Event()
    checks = [threading.Thread(target=_hold, args=(True, e, release)) for e in (first, second)]
    for t in checks:
        t.start()
    assert first.wait(5) and second.wait(5), "two checks must hold the GPU together"
    timed = threading.Event()
    go = threading.Event()
    go.set()
    timing = threading.Thread(target=_hold, args=(False, timed, go))
    timing.start()
    time.sleep(0.3)
    assert not timed.is_set(), "a timing loop started while checks were on the GPU"
    release.set()
    assert timed.wait(5)
    for t in (*checks, timing):
        t.join(5)


def test_a_check_waits_for_a_timing_loop_and_gpus_are_separate(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPGYM_LOCK_DIR", str(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    release, timed = threading.Event(), threading.Event()
    timing = threading.Thread(target=_hold, args=(False, timed, release))
    timing.start()
    assert timed.wait(5)
    other_gpu, same_gpu, go = threading.Event(), threading.Event(), threading.Event()
    go.set()  # the checks leave as soon as they are in
    threading.Thread(target=lambda: _hold_index(1, other_gpu)).start()
    checker = threading.Thread(target=_hold, args=(True, same_gpu, go))
    checker.start()
    assert other_gpu.wait(5), "GPU 5 is not GPU 3"
    time.sleep(0.3)
    assert not same_gpu.is_set()
    release.set()
    assert same_gpu.wait(5)
    assert {p.name for p in tmp_path.iterdir()} == {f"warpgym-gpu-{gpu}.{kind}" for gpu in (3, 5)
                                                    for kind in ("lock", "gate")}


def _could_share(path) -> bool:
    """Whether another process could take ``path``'s lock shared now (nobody holds it exclusively)."""
    if not path.exists():
        return True
    with open(path) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def _held_exclusively(path, seconds: float = 5.0) -> bool:
    """Whether someone takes ``path``'s lock exclusively within ``seconds`` (polled)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _could_share(path):
            return True
        time.sleep(0.01)
    return False


def test_checks_asked_for_after_a_timing_loop_wait_behind_it(tmp_path, monkeypatch):
    """Overlapping checks must not keep a timing loop waiting for good: flock alone grants a shared lock
    while an exclusive one waits, so evaluations that keep checking could starve every timing."""
    monkeypatch.setenv("WARPGYM_LOCK_DIR", str(tmp_path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    order: list[str] = []

    def hold(name: str, shared: bool, entered: threading.Event, leave: threading.Event) -> None:
        with gpu_lock(0, shared=shared):
            order.append(name)
            entered.set()
            leave.wait(10)

    first_check, timing, later_check, release, go = (threading.Event() for _ in range(5))
    go.set()
    threads = [threading.Thread(target=hold, args=("first check", True, first_check, release))]
    threads[0].start()
    assert first_check.wait(5)
    threads.append(threading.Thread(target=hold, args=("timing", False, timing, go)))
    threads[-1].start()
    assert _held_exclusively(tmp_path / "warpgym-gpu-0.gate"), "the timing loop never reached the gate"
    threads.append(threading.Thread(target=hold, args=("later check", True, later_check, go)))
    threads[-1].start()
    time.sleep(0.3)
    assert not timing.is_set(), "the timing loop must wait for the first check"
    assert not later_check.is_set(), "a check overtook the timing loop waiting before it"
    release.set()
    for t in threads:
        t.join(5)
    assert order == ["first check", "timing", "later check"]


def test_a_thread_holding_the_gpu_does_not_wait_for_itself(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPGYM_LOCK_DIR", str(tmp_path))
    done = threading.Event()

    def nested() -> None:
        with gpu_lock(0), gpu_lock(0, shared=True):
            done.set()

    t = threading.Thread(target=nested, daemon=True)
    t.start()
    assert done.wait(5), "a check inside a timed section deadlocked"


def _in_slot(entered: threading.Event, release: threading.Event, index: int = 0) -> None:
    with bench_slot(index):
        entered.set()
        release.wait(10)


def test_bench_phases_take_one_of_a_few_slots_per_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPGYM_LOCK_DIR", str(tmp_path))
    monkeypatch.setenv("WARPGYM_BENCH_SLOTS", "2")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    release = threading.Event()
    entered = [threading.Event() for _ in range(3)]
    threads = [threading.Thread(target=_in_slot, args=(e, release), daemon=True) for e in entered]
    for t in threads:
        t.start()
    time.sleep(0.5)
    assert sum(e.is_set() for e in entered) == 2, "two slots: exactly two bench phases at once"
    other_gpu = threading.Event()
    threading.Thread(target=_in_slot, args=(other_gpu, release, 1), daemon=True).start()
    assert other_gpu.wait(5), "GPU 1's slots are not GPU 0's"
    release.set()
    assert all(e.wait(5) for e in entered), "the third waited for a slot and then got one"


def test_a_thread_in_a_slot_does_not_wait_for_itself(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPGYM_LOCK_DIR", str(tmp_path))
    done = threading.Event()

    def nested() -> None:
        with bench_slot(0, slots=1), bench_slot(0, slots=1), gpu_lock(0):
            done.set()

    t = threading.Thread(target=nested, daemon=True)
    t.start()
    assert done.wait(5), "a nested bench phase deadlocked"


def _free_slots(lock_dir, count: int = 2, gpu: str = "0") -> int:
    """How many of a GPU's bench slots another process could take now."""
    free = 0
    for k in range(count):
        with open(lock_dir / f"warpgym-gpu-{gpu}-bench-{k}.lock", "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            free += 1
            fcntl.flock(handle, fcntl.LOCK_UN)
    return free


def test_a_phase_alone_waits_for_every_slot_and_holds_them_all(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPGYM_LOCK_DIR", str(tmp_path))
    monkeypatch.setenv("WARPGYM_BENCH_SLOTS", "2")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    release, shared_in = threading.Event(), threading.Event()
    threading.Thread(target=_in_slot, args=(shared_in, release), daemon=True).start()
    assert shared_in.wait(5)
    alone_in, alone_out = threading.Event(), threading.Event()

    def alone() -> None:
        with bench_slot(0, alone=True):
            alone_in.set()
            alone_out.wait(10)

    threading.Thread(target=alone, daemon=True).start()
    time.sleep(0.3)
    assert not alone_in.is_set(), "alone while another bench phase held a slot"
    release.set()
    assert alone_in.wait(5)
    assert _free_slots(tmp_path) == 0, "a phase alone leaves no slot to another"
    late = threading.Event()
    threading.Thread(target=_in_slot, args=(late, threading.Event()), daemon=True).start()
    time.sleep(0.3)
    assert not late.is_set()
    alone_out.set()
    assert late.wait(5)


def _checks_could_run(lock_dir, gpu: str = "0") -> bool:
    """Whether another evaluation's check could take the GPU now (the shared lock)."""
    return _could_share(lock_dir / f"warpgym-gpu-{gpu}.lock")


class _OutOfMemoryWorker:
    """A run worker whose timing runs out of GPU memory, as when another bench phase fills the GPU."""

    def __init__(self, lock_dir) -> None:
        self.lock_dir, self.free_slots, self.checks_could_run = lock_dir, [], []

    def request(self, msg: dict, timeout: float) -> dict:
        self.free_slots.append(_free_slots(self.lock_dir))
        self.checks_could_run.append(_checks_could_run(self.lock_dir))
        return {"ok": False, "error": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32 GiB"}

    def stop(self) -> None:
        pass


def test_a_bench_phase_out_of_memory_runs_again_alone_and_only_then_is_a_verdict(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPGYM_LOCK_DIR", str(tmp_path))
    monkeypatch.setenv("WARPGYM_BENCH_SLOTS", "2")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    evaluator = Evaluator("cpu")
    evaluator.run_worker = worker = _OutOfMemoryWorker(tmp_path)
    evaluation = evaluator.evaluation(get_task("math/add"), "", EvalOptions(device="cpu"))
    result = evaluation.result
    result.correct = True
    result.suspicious.append("kept: found before the bench phase")
    bench.timing(evaluation)
    assert worker.free_slots == [1, 0], "first beside another phase (one slot), then alone (none left)"
    assert worker.checks_could_run == [True, False], \
        "alone, no other evaluation's check may hold GPU memory meanwhile: the GPU lock is held throughout"
    assert _checks_could_run(tmp_path), "and given back after"
    assert result.correct is False and result.runtime_error.startswith("timing: torch.OutOfMemoryError")
    assert result.suspicious == ["kept: found before the bench phase"]


def test_a_phase_that_fits_alone_keeps_nothing_of_the_attempt_that_did_not(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPGYM_LOCK_DIR", str(tmp_path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    evaluator = Evaluator("cpu")
    attempts = []

    def bench_cases(evaluation, alone):
        result = evaluation.result
        attempts.append(alone)
        result.violations.append(Violation("inconsistent", "from the attempt that ran out of memory"))
        if not alone:
            raise torch.OutOfMemoryError("CUDA out of memory")
        result.violations.pop()
        result.speedup = {"eager": 1.5}

    monkeypatch.setattr(bench, "bench_cases", bench_cases)
    evaluation = evaluator.evaluation(get_task("math/add"), "", EvalOptions(device="cpu"))
    result = evaluation.result
    result.correct = True
    bench.timing(evaluation)
    assert attempts == [False, True]
    assert result.correct is True and result.runtime_error is None and result.violations == []
    assert result.speedup == {"eager": 1.5}


def test_the_exclusive_hold_of_a_timing_loop_is_bounded_by_fewer_calls_of_a_slow_call():
    assert calls_within_budget(0.001, 5, 30) == (5, 30)  # 35 ms in all: as asked
    warmup, reps = calls_within_budget(0.2, 5, 30)  # 7 s as asked
    assert warmup == 1 and reps == int(MAX_TIMED_SECONDS / 0.2)
    assert calls_within_budget(1.75, 5, 30) == (1, MIN_TIMED_CALLS)  # torch's QR at a bench shape
    assert calls_within_budget(0.5, 5, 3) == (1, 3)  # never more timed calls than asked


def test_a_bench_check_without_timing_takes_a_slot_and_again_alone_after_running_out(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPGYM_LOCK_DIR", str(tmp_path))
    monkeypatch.setenv("WARPGYM_BENCH_SLOTS", "2")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    evaluator = Evaluator("cpu")
    free_slots: list[int] = []
    harness_oom = torch.OutOfMemoryError("CUDA out of memory")
    worker_oom = RunReply(ok=False, error="torch.OutOfMemoryError: CUDA out of memory")
    fits = RunReply(ok=True, outputs=[])
    outcomes = [harness_oom, harness_oom, worker_oom, fits, fits]

    def run(check):
        free_slots.append(_free_slots(tmp_path))
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome  # the harness's float64 reference at a bench shape
        return outcome

    evaluation = evaluator.evaluation(get_task("math/add"), "", EvalOptions(device="cpu"))
    monkeypatch.setattr(evaluation, "run", run)
    monkeypatch.setattr(evaluation, "judge", lambda check, reply: "judged")
    item = Check("bench", {"n": 1}, 0, "uniform")
    with pytest.raises(torch.OutOfMemoryError):  # alone too: the harness's error, not the candidate's
        bench.bench_check(evaluation, item)
    assert free_slots == [1, 0], "first beside another phase (one slot), then alone (none left)"
    assert bench.bench_check(evaluation, item) == (fits, "judged")
    assert free_slots[2:] == [1, 0], "the worker out of memory beside another phase: again, alone"
    assert bench.bench_check(evaluation, item) == (fits, "judged")
    assert free_slots[4:] == [1], "a check that fits runs once, in one slot"
    assert _free_slots(tmp_path) == 2


def test_bench_cases_are_checked_once_each_on_the_distribution_of_the_check_after_timing():
    from warpgym.env.judge.plan import plan

    task = get_task("fusion/attention-gqa")
    checks = plan(task, EvalOptions(device="cpu", shape_sets=("heldout", "bench")), "cpu")
    on_bench = [c for c in checks if c.shape_set == "bench"]
    assert [c.case for c in on_bench] == task.cases("bench")
    assert {c.distribution for c in on_bench} == {BENCH_DISTRIBUTION}
    assert "outliers" in {c.distribution for c in checks if c.shape_set == "heldout"}


def test_the_late_recheck_never_computes_a_bench_reference_to_find_the_smallest_case(monkeypatch):
    from warpgym.env.judge.correctness import late_recheck
    from warpgym.env.judge.plan import plan

    task = get_task("math/add")
    options = EvalOptions(device="cpu", shape_sets=("dev", "bench"))
    evaluation = Evaluator("cpu").evaluation(task, "", options)
    sized: list[dict] = []

    def reference(check):
        sized.append(check.case)
        return None, [torch.empty(check.case["n"] if "n" in check.case else 1)]

    monkeypatch.setattr(evaluation, "reference", reference)
    monkeypatch.setattr(evaluation, "run", lambda check, settle_ms=0.0: RunReply(ok=True, outputs=[]))
    judged: list[Check] = []
    monkeypatch.setattr(evaluation, "judge", lambda check, reply: judged.append(check) or
                        CaseResult(check.shape_set, check.case, check.seed, check.distribution, True))
    late_recheck(evaluation, plan(task, options, "cpu"))
    assert sized and all(case in task.cases("dev") for case in sized)
    assert {check.shape_set for check in judged} == {"dev"}
