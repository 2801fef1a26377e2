"""How often each task's tolerance rejects an honest answer: the reference computed in float32 from the
same inputs and rounded once to the output dtype, judged against the float64 answer as a candidate is.

An honest kernel can be no more exact than that, so a task whose float32 answer fails some draws rejects
honest candidates at random: its verdict depends on the secret input seed. Run over every task, case,
distribution and ``--seeds`` draws; prints the tasks that failed any draw (all of them with ``--all``).
``--precision input`` computes the reference in the inputs' own dtype instead (eager PyTorch rounding every
intermediate): stricter than a fused kernel, so a failure there is a lead to read, not a verdict.

    python scripts/tolerance_audit.py --seeds 50            # CPU, every task
    python scripts/tolerance_audit.py --task fusion/attention-alibi --seeds 500
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch
from warpgym.env.judge.compare import compare_outputs
from warpgym.env.judge.references import output_meta, upcast
from warpgym.tasks import Sampler, Task, all_tasks, get_task
from warpgym.tasks.spec import dtype_of, sequence


def _all_as(inputs: dict[str, Any], dtype: torch.dtype) -> dict[str, Any]:
    """The inputs as the judge upcasts them for its reference, here to ``dtype``."""
    return {k: upcast(v, dtype) for k, v in inputs.items()}


def _rounded(outputs: list[Any], meta: list[Any]) -> list[Any]:
    return [o.to(m.dtype) if isinstance(o, torch.Tensor) and isinstance(m, torch.Tensor) else o
            for o, m in zip(outputs, meta, strict=True)]


def audit_task(task: Task, seeds: int, shape_sets: tuple[str, ...] = ("dev", "heldout"),
               precision: str = "float32") -> dict[str, Any]:
    """Draws whose answer in ``precision`` (a dtype, or ``input``: the inputs' own) fails, per (case,
    distribution); skips tasks judged by properties."""
    row: dict[str, Any] = {"task": task.id, "draws": 0, "failed": 0, "failures": []}
    if task.check is not None or task.model is not None:
        row["skipped"] = "judged by properties" if task.check is not None else "imported problem"
        return row
    exact = dtype_of(task.reference_precision)
    honest = None if precision == "input" else dtype_of(precision)
    for shape_set in shape_sets:
        for case in task.cases(shape_set):
            reference = task.reference_of(case)
            for dist in task.distributions:
                for seed in range(seeds):
                    inputs = task.make_inputs(case, Sampler(seed, dist, "cpu"))
                    with torch.no_grad():
                        expected = list(sequence(reference(**_all_as(inputs, exact))))
                        given = inputs if honest is None else _all_as(inputs, honest)
                        wide = list(sequence(reference(**given)))
                        meta = output_meta(task, inputs, case)
                    result = compare_outputs(_rounded(wide, meta), expected, meta, task)
                    row["draws"] += 1
                    if not result["passed"]:
                        row["failed"] += 1
                        if len(row["failures"]) < 5:
                            row["failures"].append({"case": case, "dist": dist, "seed": seed,
                                                    "message": result["message"]})
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", action="append", help="only these task ids (repeatable)")
    parser.add_argument("--suite", default="triton", help="triton, ptx or all (default triton)")
    parser.add_argument("--seeds", type=int, default=20, help="draws per case and distribution")
    parser.add_argument("--precision", default="float32",
                        help="what the honest answer is computed in: a dtype, or input (default float32)")
    parser.add_argument("--out", type=Path, help="write every task's row as JSON")
    parser.add_argument("--all", action="store_true", help="print every task, not only those that failed")
    args = parser.parse_args(argv)
    tasks = ([get_task(t) for t in args.task] if args.task
             else [t for t in all_tasks() if args.suite == "all" or t.suite == args.suite])
    rows, start = [], time.monotonic()
    for task in tasks:
        row = audit_task(task, args.seeds, precision=args.precision)
        rows.append(row)
        if args.all or row["failed"]:
            what = row.get("skipped") or f"{row['failed']} of {row['draws']} draws fail"
            print(f"{task.id}: {what}", flush=True)
            for failure in row["failures"][:2]:
                print(f"    {failure['case']} {failure['dist']} seed {failure['seed']}: {failure['message']}")
    bad = [r for r in rows if r["failed"]]
    print(f"{len(bad)} of {len(rows)} tasks reject a {args.precision} answer in some draw "
          f"({args.seeds} draws per case and distribution, {time.monotonic() - start:.0f} s)")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1, default=str))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
