"""Which timing protocol gives a ratio that repeats (GPU only): the data behind PairedTiming's defaults.

For three pairs (the matmul reference against cuBLAS, softmax against eager, add against eager, each at
its first bench case, in this process) it times the ratio baseline / candidate by every protocol,
``--repeats`` times each, L2 flushed before every call as the evaluator does:

- ``blocks_30``: 30 calls of the candidate, then 30 of the baseline; the ratio of the two medians;
- ``call_by_call``: candidate and baseline alternated call by call, 30 of each; the ratio of medians;
- ``rounds_N`` (N = 1, 5, 10, 30): the evaluator's paired rounds (judge/paired.run_rounds) with blocks
  of N calls, the order reversed each round; the median of the rounds' ratios, its interval, the rounds
  and what ended them, and the seconds it took.

For each protocol: the ratios of the repeats, their max/min, whether every interval covers the others'
medians, the seconds, and the GPU's SM clock, power and clock-event reasons over its repeats (NVML).

    CUDA_VISIBLE_DEVICES=0 python3 scripts/paired_timing_probe.py --out $OUT/paired_timing_probe.json

About two minutes on an H200 (under five with ``--repeats 5 --budget 2``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from warpgym.env.common.timing import L2_FLUSH_BYTES, WARMUP_SECONDS, time_calls, warm_up
from warpgym.env.judge.machine import Sampler
from warpgym.env.judge.options import PairedTiming
from warpgym.env.judge.paired import run_rounds

PAIRS = (("matmul/matmul", "vendor"), ("normalization/softmax", "eager"), ("math/add", "eager"))
BLOCKS = (1, 5, 10, 30)


class Timed:
    """A callable with its rotating inputs, timed by the evaluator's own loop."""

    def __init__(self, fn: Callable[..., Any], sets: list[dict[str, Any]], flush: torch.Tensor) -> None:
        self.fn, self.sets, self.flush = fn, sets, flush

    def calls(self, count: int, start: int = 0) -> list[float]:
        return time_calls(self.fn, self.sets, count, event_cls=torch.cuda.Event,
                          synchronize=torch.cuda.synchronize, flush=self.flush, start=start).event_ms

    def side(self, calls: int, warmup_calls: int, warmup_seconds: float, start: int) -> tuple[Any, Any]:
        began = time.perf_counter()
        warmed = warm_up(self.fn, self.sets, warmup_calls, warmup_seconds, torch.cuda.synchronize)
        call_ms = (time.perf_counter() - began) * 1e3 / warmed if warmed else None
        return time_calls(self.fn, self.sets, calls, event_cls=torch.cuda.Event,
                          synchronize=torch.cuda.synchronize, flush=self.flush, start=start), call_ms


def _blocks(candidate: Timed, baseline: Timed) -> dict[str, Any]:
    c = candidate.calls(30)
    b = baseline.calls(30)
    return {"ratio": statistics.median(b) / statistics.median(c)}


def _call_by_call(candidate: Timed, baseline: Timed) -> dict[str, Any]:
    c, b = [], []
    for i in range(30):
        c += candidate.calls(1, i)
        b += baseline.calls(1, i)
    return {"ratio": statistics.median(b) / statistics.median(c),
            "median_of_pair_ratios": statistics.median(x / y for x, y in zip(b, c, strict=True))}


def _rounds(candidate: Timed, baseline: Timed, block: int, budget: float) -> dict[str, Any]:
    settings = PairedTiming(block_calls=block, min_rounds=6, max_rounds=200, budget_seconds=budget)
    outcome = run_rounds(candidate.side, {"baseline": baseline.side}, settings, warmup_calls=5)
    interval = outcome.speedup("baseline")
    return {"ratio": interval.median, "low": interval.low, "high": interval.high,
            "coverage": interval.coverage, "rounds": outcome.rounds, "block_calls": outcome.block_calls,
            "ended_by": outcome.ended_by}


def _load(task: Any) -> Callable[..., Any]:
    spec = importlib.util.spec_from_file_location(f"ref_{task.entrypoint}", task.solution_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, task.entrypoint)


def probe_pair(task_id: str, baseline_name: str, repeats: int, budget: float) -> dict[str, Any]:
    from warpgym.tasks import Sampler as InputSampler
    from warpgym.tasks import get_task

    task = get_task(task_id)
    case = task.cases("bench")[0]
    sets = [task.make_inputs(case, InputSampler(seed, "normal", "cuda")) for seed in (0, 1, 2)]
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    baseline_fn = task.vendor if baseline_name == "vendor" else task.reference
    candidate, baseline = Timed(_load(task), sets, flush), Timed(baseline_fn, sets, flush)
    protocols: dict[str, Callable[[], dict[str, Any]]] = {
        "blocks_30": lambda: _blocks(candidate, baseline),
        "call_by_call": lambda: _call_by_call(candidate, baseline),
        **{f"rounds_{n}": (lambda n=n: _rounds(candidate, baseline, n, budget)) for n in BLOCKS},
    }
    out: dict[str, Any] = {"case": case, "baseline": baseline_name, "protocols": {}}
    with torch.no_grad():
        for fn in (candidate.fn, baseline.fn):  # compile (Triton's JIT) before anything is timed
            fn(**sets[0])
        torch.cuda.synchronize()
        for name, protocol in protocols.items():
            sampler = Sampler(torch.cuda.current_device())
            started = time.perf_counter()
            with sampler.running():
                runs = []
                for _ in range(repeats):
                    warm_up(candidate.fn, sets, 5, WARMUP_SECONDS, torch.cuda.synchronize)
                    runs.append(protocol())
            ratios = [r["ratio"] for r in runs]
            row: dict[str, Any] = {"ratios": [round(r, 4) for r in ratios],
                                   "median": statistics.median(ratios),
                                   "max_over_min": max(ratios) / min(ratios),
                                   "seconds": round(time.perf_counter() - started, 2), "runs": runs,
                                   "machine": asdict(sampler.state())}
            if "low" in runs[0]:
                row["intervals_cover_each_other"] = all(r["low"] <= o["ratio"] <= r["high"]
                                                        for r in runs for o in runs)
            out["protocols"][name] = row
            print(f"{task_id:24s} {name:13s} ratios {row['ratios']}  max/min {row['max_over_min']:.4f}  "
                  f"{row['seconds']:.1f} s  "
                  + (f"covering {row.get('intervals_cover_each_other')}" if "low" in runs[0] else ""),
                  flush=True)
    del sets, flush
    torch.cuda.empty_cache()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path,
                        default=Path(os.environ.get("OUT", ".")) / "paired_timing_probe.json",
                        help="the JSON report (a directory gets paired_timing_probe.json inside)")
    parser.add_argument("--repeats", type=int, default=3, help="times each protocol is repeated (default 3)")
    parser.add_argument("--budget", type=float, default=1.5,
                        help="seconds of rounds per paired measurement (default 1.5)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("paired_timing_probe.py times kernels on a CUDA GPU; none is visible here")
    out = args.out / "paired_timing_probe.json" if args.out.is_dir() else args.out
    started = time.perf_counter()
    report: dict[str, Any] = {"device": torch.cuda.get_device_name(), "repeats": args.repeats,
                              "budget_seconds": args.budget, "pairs": {}}
    for task_id, baseline in PAIRS:
        report["pairs"][task_id] = probe_pair(task_id, baseline, args.repeats, args.budget)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1, default=str))  # what is done survives a timeout
    report["seconds"] = round(time.perf_counter() - started, 1)
    out.write_text(json.dumps(report, indent=1, default=str))
    print(f"wrote {out} in {report['seconds']} s")


if __name__ == "__main__":
    main()
