"""Reading the traces of timed calls: the checked calls' rules, plus "only kernels a checked call ran" and
"every timed call launches a kernel of the candidate's". Traces are built as the profiler writes them
(Chrome trace events, read by the worker's own reader), with the kernel names an H200 recorded."""

from __future__ import annotations

from typing import Any

from warpgym.env.judge.device_evidence import HOST_TO_DEVICE_BYTES, reserved
from warpgym.env.judge.timed_evidence import timed_violations
from warpgym.env.worker.device_trace import SENTINEL_NAME, read_chrome_trace

SOFTMAX = ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 9, false, false>"
           "(float*, float const*, int, int, int, bool const*, int, bool)")
FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")
HTOD = "Memcpy HtoD (Pageable -> Device)"


def trace(*events: tuple[str, str, int], calls: int = 1) -> dict[str, Any]:
    """A block's trace on the wire: two sentinels around ``events`` (category, name, bytes)."""
    rows = [{"cat": "kernel", "name": f"void {SENTINEL_NAME}(long)", "ts": 0}]
    rows += [{"cat": cat, "name": name, "ts": i, "args": {"bytes": nbytes}}
             for i, (cat, name, nbytes) in enumerate(events, start=1)]
    rows.append({"cat": "kernel", "name": f"void {SENTINEL_NAME}(long)", "ts": 10_000})
    return {**read_chrome_trace({"traceEvents": rows}).to_wire(), "calls": calls}


def block(*per_call: tuple[str, str, int], calls: int = 5) -> dict[str, Any]:
    """A block of ``calls`` timed calls, each prepared as the worker prepares it (poison fill, shared-memory
    scrub, L2 flush), then running ``per_call``."""
    prepared = [("kernel", FILL, 0), ("kernel", "scrub_kernel", 0),
                ("gpu_memset", "Memset (Device)", 1 << 28)]
    return trace(*[e for _ in range(calls) for e in (*prepared, *per_call)], calls=calls)


CHECKED = [("n=1000", trace(("kernel", "add_kernel", 0), ("kernel", FILL, 0)))]
OWN = ["add_kernel", "add_kernel_tail"]


def codes(timed: list[tuple[str, dict[str, Any]]], checked=CHECKED, own=OWN) -> list[str]:
    return [v.code for v in timed_violations(timed, checked, own, "add")]


def test_an_honest_timed_block_passes_with_the_worker_s_own_preparation_in_it():
    assert codes([("block 1", block(("kernel", "add_kernel", 0)))]) == []


def test_a_library_kernel_in_a_timed_call_is_named_as_in_a_checked_call():
    found = timed_violations([("a traced block on n=268435456", block(("kernel", SOFTMAX, 0)))], CHECKED, OWN,
                             "add")
    assert [v.code for v in found][:1] == ["device-library-kernel"]
    assert "inside add() on a traced block on n=268435456 (5 launches)" in found[0].message


def test_an_own_kernel_that_ran_in_no_checked_call_fails():
    """Its name is the candidate's, so only the comparison with the checked calls shows it was never
    checked: a kernel kept for the timing loop."""
    found = timed_violations([("block 2", block(("kernel", "add_kernel_tail", 0)))], CHECKED, OWN, "add")
    assert [v.code for v in found] == ["device-timed-unchecked-kernel"]
    assert "`add_kernel_tail`" in found[0].message and "none of its checked calls" in found[0].message
    mixed = block(("kernel", "add_kernel", 0), ("kernel", "add_kernel_tail", 0))
    both_checked = [*CHECKED, ("n=4097", trace(("kernel", "add_kernel_tail", 0)))]
    assert codes([("block 2", mixed)], checked=both_checked) == []


def test_timed_calls_that_launch_none_of_the_candidate_s_kernels_fail():
    """An answer kept from an earlier call on the same inputs: no kernel, no PyTorch op, no time. The worker's
    own scrub and fills do not count as the candidate's launches."""
    idle = block()
    found = timed_violations([("block 3", idle)], CHECKED, OWN, "add")
    assert [v.code for v in found] == ["device-timed-no-kernel"]
    assert "5 timed calls of add() (block 3) launched 0 of your kernels" in found[0].message
    some = trace(*[("kernel", "add_kernel", 0)] * 4, calls=5)  # one call in five computed nothing
    assert codes([("block 3", some)]) == ["device-timed-no-kernel"]
    assert codes([("block 3", trace(*[("kernel", "add_kernel", 0)] * 10, calls=5))]) == []


def test_with_pytorch_allowed_a_library_kernel_is_the_candidate_s_launch_and_a_kept_answer_still_fails():
    """KernelBench's rule: a ModelNew may call PyTorch, so a library kernel in a timed call is its work;
    the worker's own fills and scrub still are not, and a call that ran nothing still fails."""
    library = block(("kernel", SOFTMAX, 0))
    assert codes([("block 4", library)])[:1] == ["device-library-kernel"]
    allowed = timed_violations([("block 4", library)], CHECKED, OWN, "add", allow_torch=True)
    assert [v.code for v in allowed] == []
    idle = timed_violations([("block 4", block())], CHECKED, OWN, "add", allow_torch=True)
    assert [v.code for v in idle] == ["device-timed-no-kernel"]

def test_host_to_device_bytes_are_allowed_per_call_of_a_block():
    small = block(("kernel", "add_kernel", 0), ("gpu_memcpy", HTOD, HOST_TO_DEVICE_BYTES))
    assert codes([("block 4", small)]) == []
    large = trace(("kernel", "add_kernel", 0), ("kernel", "add_kernel", 0),
                  ("gpu_memcpy", HTOD, 2 * HOST_TO_DEVICE_BYTES + 1), calls=2)
    assert codes([("block 4", large)]) == ["device-host-copy"]


def test_an_interrupted_timed_trace_is_not_trusted_and_says_nothing_more():
    cut = block(("kernel", "add_kernel", 0))
    cut["sentinels"] = 1
    assert codes([("block 5", cut), ("block 6", block())]) == ["device-trace"]
    assert codes([("block 5", {"error": "CUDA activity tracing could not start: boom", "calls": 5})]) == \
        ["device-trace"]


def test_the_worker_s_scrub_kernel_name_is_reserved():
    """It passes inside a timed block as the worker's own, so a candidate may not call a kernel of its
    own so."""
    assert reserved(["scrub_kernel", "scrub_kernel_v2", "add_kernel"]) == ["scrub_kernel"]


def test_the_verdict_after_timing_allows_library_kernels_only_with_pytorch_allowed():
    """The checked bench calls and the traced timed blocks are judged after the timing: with PyTorch
    allowed a ModelNew that calls a library kernel keeps its verdict and its speedup."""
    from types import SimpleNamespace

    from warpgym.env.judge.options import EvalOptions
    from warpgym.env.judge.result import EvalResult
    from warpgym.env.judge.timed_evidence import judge_after_timing

    for allow_torch, passes in ((True, True), (False, False)):
        result = EvalResult(task="kernelbench/level1/x", target="sm_90a", device="cuda", correct=True,
                            speedup={"eager": 1.0})
        result.kernels = [SimpleNamespace(name="add_kernel")]
        checked = ("bench", trace(("kernel", "add_kernel", 0), ("kernel", SOFTMAX, 0)))
        ev = SimpleNamespace(result=result, device_traces=[*CHECKED, checked], traces_judged=1,
                             timed_traces=[("block 1", block(("kernel", "add_kernel", 0),
                                                             ("kernel", SOFTMAX, 0)))],
                             options=EvalOptions(device="cuda", allow_torch=allow_torch),
                             task=SimpleNamespace(entrypoint="forward"))
        assert judge_after_timing(ev) is passes, result.violations
        assert (result.correct, bool(result.speedup)) == (passes, passes), result.violations


def test_a_kernel_under_a_library_name_found_after_timing_withdraws_the_speedup():
    """A kernel named as a library kernel is left out of the candidate's own, so the timed work rule reads
    the timed calls without it: the speedup goes with the verdict."""
    from types import SimpleNamespace

    from warpgym.env.judge.options import EvalOptions
    from warpgym.env.judge.result import EvalResult
    from warpgym.env.judge.timed_evidence import judge_after_timing

    result = EvalResult(task="math/add", target="sm_90a", device="cuda", correct=True, speedup={"eager": 3.0})
    assert reserved(["gemv2T_kernel_val"]), "cuBLAS's name"
    result.kernels = [SimpleNamespace(name="add_kernel"), SimpleNamespace(name="gemv2T_kernel_val")]
    ev = SimpleNamespace(result=result, device_traces=CHECKED, traces_judged=1, timed_traces=[],
                         options=EvalOptions(device="cuda"), task=SimpleNamespace(entrypoint="add"))
    assert judge_after_timing(ev) is False
    assert [v.code for v in result.violations] == ["reserved-kernel-name"]
    assert result.correct is False and result.speedup is None


def test_only_findings_on_the_timed_calls_evidence_discredit_the_timing():
    from warpgym.env.protocol.violations import CODES

    discrediting = {code for code, c in CODES.items() if c.discredits_timing}
    assert {code for code in CODES if code.startswith("device-")} <= discrediting
    assert {"timed-wrong-answer", "reserved-kernel-name"} <= discrediting
    assert not {"inconsistent", "output-layout", "syntax"} & discrediting

