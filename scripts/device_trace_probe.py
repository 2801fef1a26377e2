"""What the CUDA activity trace of one call shows, and what tracing costs (run on a GPU machine).

Prints, for calls that reach the GPU in different ways (a Triton kernel, a module built through the
loader, PyTorch and cuBLAS ops, copies both ways, a fill, a side stream, a thread), every activity
the trace recorded and how the judge reads it; then the time a traced call adds to an untraced one.

    python scripts/device_trace_probe.py --out trace_probe.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time

import torch
import triton
import triton.language as tl
from warpgym.env.judge.device_evidence import device_violations
from warpgym.env.worker.device_trace import traced

from warpgym import loader


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


CUDA_SOURCE = r"""
extern "C" __global__ void triple(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 3.0f * x[i];
}
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="trace_probe.json")
    args = parser.parse_args()
    x = torch.randn(1 << 20, device="cuda")
    a = torch.randn(512, 512, device="cuda")
    module = loader.load_cuda(CUDA_SOURCE)

    def triton_kernel():
        out = torch.empty_like(x)
        _double[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out

    def loader_kernel():
        out = torch.empty_like(x)
        module.triple(x, out, x.numel(), grid=(x.numel() // 256,), block=(256,))
        return out

    def side_stream():
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            return torch.softmax(a, -1)

    def other_thread():
        box = []
        t = threading.Thread(target=lambda: box.append(a @ a))
        t.start()
        t.join()
        return box[0]

    calls = {
        "triton": triton_kernel, "loader": loader_kernel, "softmax": lambda: torch.softmax(a, -1),
        "matmul_cublas": lambda: a @ a, "zeros_fill": lambda: torch.zeros_like(x),
        "host_to_device": lambda: torch.tensor(x.cpu().tolist(), device="cuda"),
        "device_to_device_clone": lambda: x.clone(), "side_stream": side_stream, "thread": other_thread,
        "contiguous_copy": lambda: a.t().contiguous(),
    }
    own = ["_double", "triple"]
    report: dict[str, object] = {"torch": torch.__version__, "triton": triton.__version__,
                                 "device": torch.cuda.get_device_name()}
    for name, fn in calls.items():
        fn()
        torch.cuda.synchronize()
        with traced() as t:
            fn()
        wire = t.trace.to_wire()
        if name == "triton":
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                fn()
            raw = [(e.name()[:80], str(e.device_type())) for e in prof.profiler.kineto_results.events()]
            print("profiler events of one triton call:", raw[:12])
        verdict = [v.message for v in device_violations([("probe", wire)], own, name)]
        report[name] = {"trace": wire, "violations": verdict}
        ran = sum(a["count"] for a in wire["activities"])
        print(f"== {name}: {ran} activities, sentinels {wire['sentinels']}, "
              f"{wire['seconds'] * 1e3:.1f} ms, error {wire['error']}")
        for act in wire["activities"][:6]:
            print(f"   {act['kind']:7} {act['copy']:5} {act['nbytes']:>9}  {act['name'][:110]}")
        for v in verdict:
            print(f"   -> {v[:160]}")

    costs = {}
    for name in ("triton", "softmax"):
        fn = calls[name]
        plain, traced_s = [], []
        for _ in range(20):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            plain.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            with traced():
                fn()
            traced_s.append(time.perf_counter() - t0)
        cost = {"plain_ms": statistics.median(plain) * 1e3, "traced_ms": statistics.median(traced_s) * 1e3,
                "traced_max_ms": max(traced_s) * 1e3}
        costs[name] = cost
        print(f"cost {name}: plain {cost['plain_ms']:.3f} ms, traced {cost['traced_ms']:.3f} ms "
              f"(max {cost['traced_max_ms']:.3f})")
    report["costs"] = costs
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
