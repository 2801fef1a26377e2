"""A short GPU check that prints as it goes and stops starting work after --budget seconds.

For a lease nearly spent: the core references on every shape set (bf16 included), one timed
evaluation with per-stage seconds, a PTX reference with executed-instruction counts, a wrong
bf16 kernel, then as many suite references as time allows (no timing).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

from kernelgym.env import EvalOptions, Evaluator
from kernelgym.tasks import all_tasks, get_task

START = time.perf_counter()


def line(*parts: object) -> None:
    print(f"[{time.perf_counter() - START:6.1f}s]", *parts, flush=True)


def summary(r) -> str:
    stages = {k: round(v, 1) for k, v in r.seconds.items()}
    skipped = [s[:60] for s in r.skipped_checks]
    return (f"stage={r.stage} compiled={r.compiled} correct={r.correct} arch={r.arch_verified} "
            f"cases={sum(1 for c in r.cases if c.passed)}/{len(r.cases)} seconds={stages} skipped={skipped}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget", type=float, default=200)
    args = parser.parse_args()
    ev = Evaluator("cuda")
    quick = EvalOptions(device="cuda", shape_sets=("dev", "heldout"), timing=False)
    try:
        for tid in ("math/add", "normalization/softmax", "normalization/layer-norm", "matmul/matmul",
                    "fusion/attention"):
            t = get_task(tid)
            line(tid, "reference, dev+heldout:", summary(ev.evaluate(t, t.solution_source(), quick)))
        mm = get_task("matmul/matmul")
        wrong = mm.solution_source().replace("for k in range(0, K, BLOCK_K):",
                                             "for k in range(0, K - BLOCK_K + 1, BLOCK_K):")
        r = ev.evaluate(mm, wrong, quick)
        line("matmul K-loop drops last tile:", summary(r), [c.case for c in r.cases if c.passed is False][:2])
        r = ev.evaluate(mm, mm.solution_source(), EvalOptions(device="cuda", reps=10, warmup=3))
        line("matmul timed:", summary(r))
        for t in r.timing or []:
            line("   ", t.case, f"{t.median_ms:.3f} ms [{t.min_ms:.3f}, {t.max_ms:.3f}]", f"{t.tflops:.0f} TFLOP/s",
                 f"roofline {t.roofline_fraction}", {k: round(v, 3) for k, v in t.baselines_ms.items()})
        line("    speedup", r.speedup, "suspicious", r.suspicious, "instructions wgmma", r.instructions.get("wgmma"))
        g = get_task("ptx/gemm-bf16")
        r = ev.evaluate(g, g.solution_source(), EvalOptions(device="cuda", shape_sets=("dev",), reps=10, warmup=3))
        line("ptx/gemm-bf16:", summary(r))
        line("    executed", {k: v for k, v in r.instructions.items() if v.get("executed")}, "speedup", r.speedup,
             "missing", r.missing_features)
        for t in r.timing or []:
            line("   ", t.case, f"{t.median_ms:.3f} ms", f"{t.tflops:.0f} TFLOP/s", t.baselines_ms)
        for t in all_tasks(suite="triton"):
            if time.perf_counter() - START > args.budget:
                line("budget reached; stopping")
                break
            if "bfloat16" not in t.dtypes:
                continue
            r = ev.evaluate(t, t.solution_source(), quick)
            line("suite", t.id, "OK" if r.correct else "FAIL", round(r.seconds.get("total", 0), 1),
                 "" if r.correct else r.feedback[:600].replace("\n", " | "))
    except Exception:  # noqa: BLE001 - print and stop: the lease is nearly spent
        traceback.print_exc()
    finally:
        ev.close()
        line("end")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
