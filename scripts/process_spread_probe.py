"""What makes one process's cuBLAS faster than another's? (GPU only.)

Five evaluations of the same matmul in five processes agree to within 0.5%, except that now and then
one process's cuBLAS runs the same kernel 1.3-2.2% faster (docs/benchmarks.md). Something fixed for a
process's life then differs between processes. Each child process here times cuBLAS in trials, and
before each trial resamples one suspect while the rest stay put:

- ``same``: nothing (the within-process drift);
- ``inputs``: new input tensors behind a spacer of random size (where the inputs lie);
- ``values``: new random values written into the same buffers (what the data toggles: power);
- ``workspace``: cuBLAS's workspaces dropped and made again behind a spacer (where the workspace lies);
- ``flush``: a new L2-flush buffer behind a spacer.

A suspect whose trials spread as widely as the processes' ``same`` medians do is what varies between
processes; the paired timing can then resample it between rounds, so one window sees what five
processes see.

    CUDA_VISIBLE_DEVICES=0 python3 scripts/process_spread_probe.py --processes 8 --out $OUT/spread.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
from typing import Any

SUSPECTS = ("same", "inputs", "values", "workspace", "flush")
CASES = {"matmul 4096^3 fp16": (4096, "float16"), "matmul 8192^3 bf16": (8192, "bfloat16")}


def child(trials: int, calls: int, seed: int) -> dict[str, Any]:
    import torch

    rng = random.Random(seed)
    torch.manual_seed(seed)
    spacers: list[Any] = []

    def spacer() -> None:
        spacers.append(torch.empty(rng.randrange(1, 256) << 20, dtype=torch.uint8, device="cuda"))
        del spacers[:-8]

    def block_ms(a: Any, b: Any, flush: Any) -> float:
        times = []
        for _ in range(calls):
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(100000)  # the launches queue ahead of the GPU: the events time the GEMM alone
            start.record()
            a @ b
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return statistics.median(times)

    rows = {}
    for name, (n, dtype) in CASES.items():
        def make(n: int = n, dt: Any = getattr(torch, dtype)) -> tuple[Any, Any]:
            return torch.randn(n, n, device="cuda", dtype=dt), torch.randn(n, n, device="cuda", dtype=dt)

        a, b = make()
        flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        for _ in range(3):
            block_ms(a, b, flush)
        per: dict[str, list[float]] = {s: [] for s in SUSPECTS}
        for _ in range(trials):
            order = list(SUSPECTS)
            rng.shuffle(order)
            for suspect in order:
                if suspect == "inputs":
                    spacer()
                    a, b = make()
                elif suspect == "values":
                    a.normal_()
                    b.normal_()
                elif suspect == "workspace":
                    torch._C._cuda_clearCublasWorkspaces()
                    spacer()
                elif suspect == "flush":
                    spacer()
                    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
                block_ms(a, b, flush)  # one block to settle after the change, not kept
                per[suspect].append(block_ms(a, b, flush))
        rows[name] = {s: [round(v, 5) for v in per[s]] for s in SUSPECTS}
        del a, b, flush
        spacers.clear()
        torch.cuda.empty_cache()
    return rows


def summary(processes: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in CASES:
        same = [statistics.median(p[name]["same"]) for p in processes]
        case: dict[str, Any] = {"between_processes_same": {
            "medians_ms": [round(m, 5) for m in same], "max_over_min": round(max(same) / min(same), 4)}}
        for suspect in SUSPECTS:
            spreads = [max(p[name][suspect]) / min(p[name][suspect]) for p in processes]
            case[suspect] = {"within_process_max_over_min": [round(s, 4) for s in spreads],
                             "median": round(statistics.median(spreads), 4)}
        out[name] = case
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--child", type=int, metavar="SEED", help=argparse.SUPPRESS)
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.trials, args.calls, args.child)))
        return
    if not args.out:
        parser.error("--out is required")
    processes = []
    for seed in range(args.processes):
        done = subprocess.run([sys.executable, __file__, "--child", str(seed), "--trials", str(args.trials),
                               "--calls", str(args.calls)], capture_output=True, text=True, check=False)
        if done.returncode:
            print(done.stderr[-2000:], file=sys.stderr)
            continue
        processes.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"process {seed} done", flush=True)
    result = {"args": vars(args), "summary": summary(processes) if processes else {}, "processes": processes}
    print(json.dumps(result["summary"], indent=1))
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
