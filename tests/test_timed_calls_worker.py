"""The worker's timed calls as the candidate sees them, on the CPU: the staged inputs are laid out as a
checked call's (inside NaN guards), a timed call that writes past an input is out of bounds, and the timing
loop prepares every call (the worker poisons memory there) before either clock starts. The CPU worker runs
only warm-up blocks (no CUDA events); what a timed block does on a GPU is tests/gpu/test_timed_trace_gpu.py.
"""

from __future__ import annotations

import torch
from warpgym.env.common.timing import HOST_BOUND, time_calls
from warpgym.env.judge import findings
from warpgym.env.judge.channel import ask, stage_inputs
from warpgym.env.judge.options import EvalOptions
from warpgym.env.judge.plan import Check
from warpgym.env.protocol import messages as m
from warpgym.tasks import get_task

ADD = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def add(x, y):
    {body}
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
'''
PROBE = ADD.format(body='print("layout", x.storage_offset(), y.storage_offset(), x.is_contiguous())')
OVERRUN = ADD.format(body="x.as_strided((x.numel() + 1,), (1,)).narrow(0, x.numel(), 1).fill_(0.0)")


def _loaded(evaluator, source: str):
    task = get_task("math/add")
    ev = evaluator.evaluation(task, source, EvalOptions(device="cpu"))
    assert ev.load(), (ev.result.compile_errors, ev.result.violations)
    return ev, task.cases("dev")[0]


def _warm_up(ev, case) -> m.TimeBlockReply:
    staged = stage_inputs(ev, case, [0, 1, 2], 120)
    assert staged.ok and staged.sets == 3, staged.error
    reply = ask(ev.workers.run, m.TimeBlockRequest(calls=0, warmup_calls=3), 120)
    assert reply.ok, reply.error
    ask(ev.workers.run, m.TimeBlockRequest(calls=0, release=True), 60)
    return reply


def test_a_timed_call_s_inputs_are_laid_out_as_a_checked_call_s(cpu_evaluator):
    """Inside a NaN guard of 4 KiB: the same storage offset checked and timed, so an input's layout does not
    say which call is timed (it did: staged inputs had offset 0)."""
    ev, case = _loaded(cpu_evaluator, PROBE)
    reply = ev.run(Check("dev", case, 5, "normal"))
    assert reply is not None and reply.ok, reply
    checked = {line for line in ev.result.stdout.splitlines() if line.startswith("layout")}
    _warm_up(ev, case)
    timed = {line for line in ev.workers.run.log_tail(clear=True).splitlines() if line.startswith("layout")}
    assert checked == timed == {"layout 1024 1024 True"}, (checked, timed)


def test_a_timed_call_that_writes_past_an_input_is_out_of_bounds(cpu_evaluator):
    ev, case = _loaded(cpu_evaluator, OVERRUN)
    reply = _warm_up(ev, case)
    assert reply.out_of_bounds == ["x"], reply
    assert findings.timing_findings(ev, reply) and ev.result.correct is False
    (found,) = [v for v in ev.result.violations if v.code == "out-of-bounds"]
    assert "x" in found.message
    ev.workers.run.stop()  # its memory was written past an input: never reused


def test_the_host_read_limit_holds_per_call_in_a_block_of_many_calls(cpu_evaluator):
    """A few values read by every call (offsets, a length table) add up over a long block; only more than
    the limit in one call is the host computing."""
    task = get_task("math/add")
    case = task.cases("dev")[2]
    for per_call, flagged in ((32, False), (4000, True)):
        ev = cpu_evaluator.evaluation(task, ADD.format(body=f"x.reshape(-1)[:{per_call}].tolist()"),
                                      EvalOptions(device="cpu"))
        assert ev.load(), (ev.result.compile_errors, ev.result.violations)
        assert stage_inputs(ev, case, [0, 1, 2], 120).ok
        reply = ask(ev.workers.run, m.TimeBlockRequest(calls=0, warmup_calls=64), 120)
        ask(ev.workers.run, m.TimeBlockRequest(calls=0, release=True), 60)
        assert reply.ok, reply.error
        flags = reply.forbidden_ops
        assert ("host: tolist() of tensor data" in flags) is flagged, (per_call, flags)
        ev.workers.run.stop()  # the host read tensor data in it: not reused


TRANSPOSE_ON_THE_HOST = """
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(ptr):
    tl.store(ptr, tl.load(ptr))


def transpose(x):
    out = x.t().contiguous()
    touch_kernel[(1,)](out)
    return out
"""


def test_a_layout_task_s_host_copy_counts_in_timed_calls_as_in_checked_ones(cpu_evaluator):
    """A transpose answered by ``contiguous()`` on the host is the host computing a layout task's answer,
    in a timed block as in a checked call."""
    task = get_task("index/transpose")
    ev = cpu_evaluator.evaluation(task, TRANSPOSE_ON_THE_HOST, EvalOptions(device="cpu"))
    assert ev.load(), (ev.result.compile_errors, ev.result.violations)
    assert stage_inputs(ev, task.cases("dev")[0], [0, 1, 2], 120).ok
    reply = ask(ev.workers.run, m.TimeBlockRequest(calls=0, warmup_calls=3), 120)
    ask(ev.workers.run, m.TimeBlockRequest(calls=0, release=True), 60)
    assert reply.ok, reply.error
    assert "clone" in reply.forbidden_ops or "copy_" in reply.forbidden_ops, reply.forbidden_ops


class FakeEvent:
    """Every call starved (its start event already reached as it returns) when ``starved`` is set."""

    starved = False

    def __init__(self, enable_timing: bool = False) -> None:
        pass

    def record(self) -> None:
        pass

    def query(self) -> bool:
        return self.starved

    def elapsed_time(self, other: FakeEvent) -> float:
        return 0.5


def _loop(log: list[str], count: int, **kw) -> object:
    sets = [{"x": torch.zeros(1)}, {"x": torch.ones(1)}]
    return time_calls(lambda x: log.append(f"call {int(x.item())}"), sets, count, event_cls=FakeEvent,
                      synchronize=lambda: log.append("sync"), flush=torch.empty(16, dtype=torch.uint8),
                      sleep=lambda cycles: log.append("spin"), cycles_per_ms=1000.0,
                      before=lambda: log.append("before"), **kw)


def test_the_timing_loop_prepares_each_call_before_its_clocks_start():
    """``before`` (the worker's poison) runs ahead of each call's synchronise and flush, never between the
    clocks and the call: the times are the call's alone."""
    log: list[str] = []
    calls = _loop(log, 3, start=1)
    assert log == ["before", "sync", "call 1", "sync"] + ["before", "sync", "call 0", "sync"] \
        + ["before", "sync", "call 1", "sync"]
    assert calls.event_ms == [0.5, 0.5, 0.5] and len(calls.wall_ms) == 3


def test_a_host_bound_loop_runs_each_call_once_with_no_spin(monkeypatch):
    """HOST_BOUND: however starved, no call is retimed after a spin, and each is prepared as a timed call
    is; with a spin, a starved call is timed again."""
    monkeypatch.setattr(FakeEvent, "starved", True)
    log: list[str] = []
    calls = _loop(log, 2, spin_cycles=HOST_BOUND)
    assert log == ["before", "sync", "call 0", "sync", "before", "sync", "call 1", "sync"], log
    assert calls.retimed == 0 and "spin" not in log
    retried: list[str] = []
    assert _loop(retried, 1, spin_cycles=100).retimed > 0 and retried.count("before") > 1, retried


GC_ON = ADD.format(body='__import__("pkg" "util").resolve_name("".join(("g", "c:enable")))()')


def test_a_timed_block_in_which_the_candidate_turns_collection_on_is_tampering(cpu_evaluator):
    """Collection is held through a timed block as through a checked call, so that a finalizer cannot run in
    the middle of it (inside a launch, unseen) or start work that outlives the block's reply."""
    ev, case = _loaded(cpu_evaluator, GC_ON)
    reply = _warm_up(ev, case)
    assert any(t.startswith("gc.enable()") for t in reply.tampered), reply.tampered
    clean, case = _loaded(cpu_evaluator, PROBE)
    assert not _warm_up(clean, case).tampered
