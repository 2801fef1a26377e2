"""Reading a CUDA activity trace: own kernels pass, library kernels and host-computed copies do not.

The kernel names are those an H200 recorded (torch 2.11, scripts/device_trace_probe.py).
"""

from __future__ import annotations

from warpgym.env.judge.device_evidence import (
    HOST_TO_DEVICE_BYTES,
    base_name,
    demangled_base,
    device_violations,
    idle_calls,
    reserved,
)
from warpgym.env.worker.device_trace import MAX_ACTIVITIES, SENTINEL_NAME, read_chrome_trace

SOFTMAX = ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 9, false, false>"
           "(float*, float const*, int, int, int, bool const*, int, bool)")
CUBLAS = ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_"
          "execute_kernel__5x_cublas")
FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")
COPY = ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
        "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const>")


def _chrome(*events: tuple[str, str, int]) -> dict:
    opening = f"void at::native::(anonymous namespace)::{SENTINEL_NAME}(long)"
    rows = [{"cat": "kernel", "name": opening, "ts": 0}]
    for i, (cat, name, nbytes) in enumerate(events, start=1):
        rows.append({"cat": cat, "name": name, "ts": i, "args": {"bytes": nbytes}})
    rows.append({"cat": "kernel", "name": f"void {SENTINEL_NAME}(long)", "ts": 10_000})
    rows.append({"cat": "cpu_op", "name": "aten::softmax", "ts": 3})  # host events are not device activity
    return {"traceEvents": rows}


def _verdict(trace: dict, own: list[str]) -> list[str]:
    return [v.code for v in device_violations([("case 0", read_chrome_trace(trace).to_wire())], own, "f")]


def test_own_triton_and_loader_kernels_pass_with_a_fill_and_a_clone():
    trace = _chrome(("kernel", "_double", 0), ("kernel", "triple", 0), ("kernel", FILL, 0),
                    ("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 1 << 22), ("gpu_memset", "Memset", 64))
    assert _verdict(trace, ["_double", "triple"]) == []


def test_library_kernels_are_named_whoever_launched_them():
    trace = _chrome(("kernel", "_double", 0), ("kernel", SOFTMAX, 0), ("kernel", CUBLAS, 0),
                    ("kernel", COPY, 0))
    violations = device_violations([("case 0", read_chrome_trace(trace).to_wire())], ["_double"], "softmax")
    assert [v.code for v in violations] == ["device-library-kernel"] * 3
    assert "softmax_warp_forward" in violations[0].message and "inside softmax()" in violations[0].message


def test_a_large_host_to_device_copy_is_the_host_computing():
    copy = "Memcpy HtoD (Pageable -> Device)"
    small = _chrome(("gpu_memcpy", copy, 4096), ("kernel", "k", 0))
    large = _chrome(("gpu_memcpy", copy, HOST_TO_DEVICE_BYTES + 1), ("kernel", "k", 0))
    assert _verdict(small, ["k"]) == []
    assert _verdict(large, ["k"]) == ["device-host-copy"]


def test_an_interrupted_trace_is_not_trusted():
    trace = _chrome(("kernel", "k", 0))
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e["ts"] != 10_000]  # the closing sentinel
    assert _verdict(trace, ["k"]) == ["device-trace"]
    assert _verdict({"traceEvents": []}, ["k"]) == ["device-trace"]


def test_a_trace_that_failed_says_so():
    failed = {"error": "CUDA activity tracing could not start: boom"}
    violations = device_violations([("case 0", failed)], [], "f")
    assert [v.code for v in violations] == ["device-trace"] and "boom" in violations[0].message


def test_names_compare_by_qualified_base_so_a_namesake_in_another_namespace_is_foreign():
    assert base_name(SOFTMAX) == "anonymous_namespace::softmax_warp_forward"
    assert demangled_base("_ZN2ns6kernelEPf") == "ns::kernel" and demangled_base("_Z6kernelPf") == "kernel"
    own_softmax = "softmax_warp_forward"  # the candidate's kernel of the same short name
    assert _verdict(_chrome(("kernel", SOFTMAX, 0)), [own_softmax]) == ["device-library-kernel"]
    assert _verdict(_chrome(("kernel", "void ns::kernel<float>(float*)", 0)), ["_ZN2ns6kernelIfEEvPT_"]) == []


def test_own_kernels_may_not_take_a_library_name():
    assert reserved(["softmax_kernel", "matmul", "fused_gemm", "flash_attention_fwd"]) == []
    assert reserved([CUBLAS, "nvjet_hsh_256x128", "_ZN2at6native4fillEv", "triton_poi_fused_add_0", "void",
                     SENTINEL_NAME]) == sorted([CUBLAS, "nvjet_hsh_256x128", "_ZN2at6native4fillEv",
                                                "triton_poi_fused_add_0", "void", SENTINEL_NAME])


def test_a_long_run_of_own_kernels_hides_no_foreign_one():
    """Activities are kept by kind and name with counts, so a library kernel after thousands of own launches
    is still seen; more distinct activities than are kept is an untrusted trace, not a partial one."""
    many = [("kernel", "k", 0)] * 10_000 + [("kernel", CUBLAS, 0)]
    trace = read_chrome_trace(_chrome(*many)).to_wire()
    assert [a["count"] for a in trace["activities"]] == [10_000, 1]
    assert _verdict(_chrome(*many), ["k"]) == ["device-library-kernel"]
    distinct = [("kernel", f"k{i}", 0) for i in range(MAX_ACTIVITIES + 1)]
    assert _verdict(_chrome(*distinct), [f"k{i}" for i in range(MAX_ACTIVITIES + 1)]) == ["device-trace"]


def test_a_foreign_kernel_is_named_once_over_many_calls_with_its_first_case():
    calls = [(f"case {i}", read_chrome_trace(_chrome(("kernel", "k", 0), ("kernel", SOFTMAX, 0))).to_wire())
             for i in range(3)]
    (named,) = device_violations(calls, ["k"], "softmax")
    assert named.code == "device-library-kernel" and "on case 0 (3 launches)" in named.message


def _timeline(*spans: tuple[str, float, float]) -> dict:
    """Kernels with their start and duration (microseconds), as CUPTI records them on any stream."""
    return {"traceEvents": [{"cat": "kernel", "name": name, "ts": ts, "dur": dur} for name, ts, dur in spans]}


SPIN = f"void at::native::(anonymous namespace)::{SENTINEL_NAME}(long)"


def test_a_kernel_running_beside_a_spin_is_unordered_work():
    """A side stream's kernel overlapping the spin before a timed call: work the events never bracketed."""
    trace = _timeline((SPIN, 0, 1), (SPIN, 10, 500), ("add_kernel", 20, 300), (SPIN, 520, 1),
                      (SPIN, 600, 1))
    assert read_chrome_trace(trace).unordered == ["add_kernel"]
    assert "device-unordered-kernel" in _verdict(trace, ["add_kernel"])


def test_a_kernel_still_running_at_the_closing_sentinel_is_unordered_work():
    trace = _timeline((SPIN, 0, 1), ("add_kernel", 5, 300), (SPIN, 100, 1))
    assert _verdict(trace, ["add_kernel"]) == ["device-unordered-kernel"]


def test_kernels_in_stream_order_between_spins_are_not_flagged():
    """An honest timed block: spin, kernel, spin, kernel, each starting where the last ended."""
    trace = _timeline((SPIN, 0, 1), (SPIN, 1, 400), ("add_kernel", 401, 300), (FILL, 701, 5),
                      (SPIN, 706, 400), ("add_kernel", 1106, 300), (SPIN, 1406, 1))
    assert read_chrome_trace(trace).unordered == []
    assert _verdict(trace, ["add_kernel"]) == []


def test_a_large_device_to_host_copy_is_the_host_reading_the_data():
    copy = "Memcpy DtoH (Device -> Pageable)"
    small = _chrome(("gpu_memcpy", copy, 8), ("kernel", "k", 0))
    large = _chrome(("gpu_memcpy", copy, HOST_TO_DEVICE_BYTES + 1), ("kernel", "k", 0))
    assert _verdict(small, ["k"]) == []
    assert _verdict(large, ["k"]) == ["device-host-read"]


def test_a_call_that_runs_none_of_the_extensions_kernels_is_idle():
    mangled = "_Z17scale_rows_kernelPKfPfll"  # as cuobjdump names it; the trace shows it demangled
    ran = _chrome(("kernel", "scale_rows_kernel(float const*, float*, long, long)", 0))
    library_only = _chrome(("kernel", SOFTMAX, 0))
    traces = [("case 0", read_chrome_trace(ran).to_wire()),
              ("case 1", read_chrome_trace(library_only).to_wire())]
    assert idle_calls(traces[:1], [mangled]) == []
    (idle,) = idle_calls(traces, [mangled])
    assert idle.code == "no-kernel-launched" and "case 1" in idle.message
