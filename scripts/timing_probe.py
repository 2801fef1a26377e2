"""Where the harness's kernel time departs from Nsight Compute's, measured (GPU only).

Times the matmul reference at its bench case, in this process, five times per variant:

- ``harness``: ``env.timing.time_callable`` as the evaluator calls it;
- ``preroll_X``: the same with a GPU spin of X ms queued before the start event, so the host's
  launch work for the call is done before the events start;
- ``rest_20``: the harness's loop with the host idle 20 ms before each call (lets power and
  clocks recover, as between Nsight Compute's profiled launches);
- ``back_to_back``: 30 calls between one pair of events (the sustained rate, no flush);
- ``do_bench``: ``triton.testing.do_bench``'s median.

Every variant runs on a quiet host and again with every CPU core busy (``--load``), while
``nvidia-smi`` samples SM clock, power and the clock-event reasons every 20 ms.

    CUDA_VISIBLE_DEVICES=0 python3 scripts/timing_probe.py --out $OUT/timing_probe.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from warpgym.env.common.timing import L2_FLUSH_BYTES, time_callable
from warpgym.tasks import Sampler, get_task

TASK = "matmul/matmul"
REPEATS = 5


def _spin() -> None:
    while True:
        pass


def _loop_with_rest(fn: Any, sets: list[dict[str, Any]], rest_s: float, reps: int = 30) -> dict[str, Any]:
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    for i in range(10):
        fn(**sets[i % len(sets)])
    times = []
    for i in range(reps):
        torch.cuda.synchronize()
        time.sleep(rest_s)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        flush.zero_()
        start.record()
        fn(**sets[i % len(sets)])
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return {"median_ms": statistics.median(times), "event_ms": times}


def _back_to_back(fn: Any, sets: list[dict[str, Any]], calls: int = 30) -> dict[str, Any]:
    for i in range(10):
        fn(**sets[i % len(sets)])
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for i in range(calls):
        fn(**sets[i % len(sets)])
    end.record()
    torch.cuda.synchronize()
    return {"median_ms": start.elapsed_time(end) / calls}


def _do_bench(fn: Any, sets: list[dict[str, Any]]) -> dict[str, Any]:
    import triton.testing

    return {"median_ms": triton.testing.do_bench(lambda: fn(**sets[0]), warmup=100, rep=300,
                                                 return_mode="median")}


def _sampler(path: Path) -> subprocess.Popen[bytes] | None:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
    try:
        return subprocess.Popen(
            ["nvidia-smi", "-i", visible, "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,"
             "clocks_event_reasons.active", "--format=csv,noheader,nounits", "-lms", "20"],
            stdout=path.open("w"), stderr=subprocess.DEVNULL)
    except OSError:
        return None


def _samples_between(path: Path, t0: float, t1: float) -> dict[str, Any]:
    clocks, power, reasons = [], [], set()
    for line in path.read_text().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 5:
            continue
        try:
            stamp = time.mktime(time.strptime(parts[0].split(".")[0], "%Y/%m/%d %H:%M:%S"))
            if not t0 - 1 <= stamp <= t1 + 1:
                continue
            clocks.append(float(parts[1]))
            power.append(float(parts[2]))
            reasons.add(parts[4])
        except ValueError:
            continue
    if not clocks:
        return {}
    return {"sm_mhz_min": min(clocks), "sm_mhz_median": statistics.median(clocks), "power_w_max": max(power),
            "reasons": sorted(reasons)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")) / "timing_probe.json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("timing_probe.py times kernels on a CUDA GPU; none is visible here")
    task = get_task(TASK)
    spec = importlib.util.spec_from_file_location("ref", task.solution_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, task.entrypoint)
    case = task.cases("bench")[0]
    sets = [task.make_inputs(case, Sampler(seed, "normal", "cuda")) for seed in (0, 1, 2)]
    variants = {
        "harness": lambda: time_callable(fn, sets),
        "preroll_0.2": lambda: time_callable(fn, sets, preroll_ms=0.2),
        "preroll_1": lambda: time_callable(fn, sets, preroll_ms=1.0),
        "rest_20": lambda: _loop_with_rest(fn, sets, 0.02),
        "back_to_back": lambda: _back_to_back(fn, sets),
        "do_bench": lambda: _do_bench(fn, sets),
    }
    smi_log = Path(tempfile.mkdtemp()) / "smi.csv"
    sampler = _sampler(smi_log)
    report: dict[str, Any] = {"task": TASK, "case": case, "device": torch.cuda.get_device_name(), "runs": {}}
    for load in (False, True):
        burners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(os.cpu_count() or 1)] \
            if load else []
        for p in burners:
            p.start()
        for name, run in variants.items():
            label = f"{name}{' (cpu load)' if load else ''}"
            t0 = time.time()
            runs = [run() for _ in range(REPEATS)]
            t1 = time.time()
            medians = [r["median_ms"] for r in runs]
            row = {"medians_ms": [round(m, 4) for m in medians], "median_ms": statistics.median(medians),
                   "spread": max(medians) / min(medians),
                   "issue_median_ms": statistics.median(r["issue_median_ms"] for r in runs)
                   if "issue_median_ms" in runs[0] else None,
                   "last_event_ms": [round(v, 4) for v in runs[-1].get("event_ms", [])],
                   "gpu": _samples_between(smi_log, t0, t1) if sampler else {}}
            report["runs"][label] = row
            print(f"{label:28s} median {row['median_ms']:.4f} ms  spread {row['spread']:.4f}  "
                  f"issue {row['issue_median_ms']}  {row['gpu']}", flush=True)
        for p in burners:
            p.terminate()
    if sampler:
        sampler.terminate()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
