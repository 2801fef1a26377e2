"""Does where a kernel's inputs lie in device memory change its time? (GPU only.)

Paired timing reads the same speedups in one process to within a fraction of a percent, yet separate
processes disagree by more than that (docs/benchmarks.md). Each process allocates its own inputs, so a
time that depends on placement would be fixed within a process and differ between processes. Here one
process allocates ``--sets`` input sets of the same op, each behind a spacer of random size (so each
lands elsewhere), and times them in interleaved blocks (L2 flushed before every call, CUDA events):
a spread between the sets' medians well above the spread between a set's own blocks says placement
matters.

    CUDA_VISIBLE_DEVICES=0 python3 scripts/placement_probe.py --out $OUT/placement_probe.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections.abc import Callable
from typing import Any

import torch

OPS: dict[str, tuple[Callable[[], dict[str, torch.Tensor]], Callable[..., torch.Tensor]]] = {
    "add 2^28 fp32": (lambda: {"x": torch.randn(1 << 28, device="cuda"),
                               "y": torch.randn(1 << 28, device="cuda")},
                      lambda x, y: x + y),
    "matmul 4096^3 fp16": (lambda: {"a": torch.randn(4096, 4096, device="cuda", dtype=torch.float16),
                                    "b": torch.randn(4096, 4096, device="cuda", dtype=torch.float16)},
                           lambda a, b: a @ b),
    "softmax 16384x8192 fp16": (lambda: {"x": torch.randn(16384, 8192, device="cuda", dtype=torch.float16)},
                                lambda x: torch.softmax(x, dim=-1)),
}


def block_ms(fn: Callable[..., torch.Tensor], inputs: dict[str, torch.Tensor], calls: int,
             flush: torch.Tensor) -> float:
    times = []
    for _ in range(calls):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(**inputs)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def probe(name: str, sets: int, rounds: int, calls: int, rng: random.Random) -> dict[str, Any]:
    make, fn = OPS[name]
    spacers, inputs = [], []
    for _ in range(sets):
        spacers.append(torch.empty(rng.randrange(1, 512) << 20, dtype=torch.uint8, device="cuda"))
        inputs.append(make())
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for i in range(sets):
        block_ms(fn, inputs[i], 10, flush)
    per_set: list[list[float]] = [[] for _ in range(sets)]
    for _ in range(rounds):
        order = list(range(sets))
        rng.shuffle(order)
        for i in order:
            per_set[i].append(block_ms(fn, inputs[i], calls, flush))
    medians = [statistics.median(v) for v in per_set]
    within = statistics.median([max(v) / min(v) for v in per_set])
    return {"op": name, "set_medians_ms": [round(m, 5) for m in medians],
            "between_sets_max_over_min": round(max(medians) / min(medians), 4),
            "within_set_max_over_min": round(within, 4),
            "addresses": [hex(next(iter(s.values())).data_ptr()) for s in inputs]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rows = []
    for name in OPS:
        row = probe(name, args.sets, args.rounds, args.calls, rng)
        print(json.dumps(row), flush=True)
        rows.append(row)
        torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump({"args": vars(args), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
