"""Why does a baseline block timed right after the candidate's read slower? (GPU only.)

On the H200 math/add's eager baseline ran 11% slower in rounds that time the candidate first than in
rounds that time it last; torch.compile, which never follows the candidate's block, did not. This
probe evaluates one task's reference in one process under variants of the paired timing that each
remove one suspect, and keeps every block's per-call times, so the cause shows in one call:

- ``default``: the shipped settings;
- ``untraced``: no traced blocks (CUPTI switched on and off in the worker);
- ``blocks-10`` / ``blocks-20``: longer blocks (a slowdown of the first calls after a switch of
  process shrinks in the median; one that lasts the block does not);
- ``compile-first``: torch.compile listed before eager, so it follows the candidate instead.

Per variant it prints the order effect of each baseline, and the median ms of call 1, 2, ... of the
baseline blocks that follow the candidate against those that follow another baseline.

    CUDA_VISIBLE_DEVICES=0 python3 scripts/order_effect_probe.py --task math/add --out $OUT/order.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from typing import Any

VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "untraced": {"traced_blocks": 0},
    "blocks-10": {"block_calls": 10},
    "blocks-20": {"block_calls": 20},
    "compile-first": {},
}


def _per_call(blocks: list[list[float]]) -> list[float]:
    """The median, over blocks, of each call position's milliseconds."""
    width = min((len(b) for b in blocks), default=0)
    return [round(statistics.median(b[i] for b in blocks), 4) for i in range(width)]


def _summary(outcome: Any) -> dict[str, Any]:
    names = list(outcome.baselines)
    out: dict[str, Any] = {"rounds": outcome.rounds, "block_calls": outcome.block_calls,
                           "candidate_per_call": _per_call(outcome.candidate_ms())}
    for position, name in enumerate(names):
        blocks = [b.event_ms for b in outcome.baselines[name]]
        # Even rounds time the candidate first, so the first baseline follows the candidate's block there;
        # in odd rounds it follows another baseline (or itself), and no other baseline ever follows it.
        after_candidate = blocks[0::2] if position == 0 else []
        after_other = blocks[1::2] if position == 0 else blocks
        out[name] = {"order_effect": outcome.order_effect(name),
                     "speedup": dataclasses.asdict(outcome.speedup(name)),
                     "after_candidate_per_call": _per_call(after_candidate),
                     "after_other_per_call": _per_call(after_other)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="math/add")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--out")
    args = parser.parse_args()

    from warpgym.env import EvalOptions, Evaluator
    from warpgym.env.judge import baselines, bench
    from warpgym.env.judge.options import PairedTiming
    from warpgym.tasks import get_task

    captured: list[Any] = []
    original = bench.run_rounds

    def keep(*a: Any, **k: Any) -> Any:
        outcome = original(*a, **k)
        captured.append(outcome)
        return outcome

    bench.run_rounds = keep
    ordered = baselines.callables
    task = get_task(args.task)
    report: dict[str, Any] = {"task": args.task, "variants": {}}
    with Evaluator("cuda") as evaluator:
        for name in args.variants.split(","):
            captured.clear()
            if name == "compile-first":
                baselines.callables = lambda *a, **k: dict(reversed(list(ordered(*a, **k).items())))
            options = EvalOptions(device="cuda", profile=False, paired=PairedTiming(**VARIANTS[name]))
            started = time.perf_counter()
            result = evaluator.evaluate(task, task.solution_candidate(), options)
            baselines.callables = ordered
            report["variants"][name] = {
                "correct": result.correct, "seconds": round(time.perf_counter() - started, 1),
                "speedup": result.speedup, "cases": [_summary(o) for o in captured]}
            for case in report["variants"][name]["cases"]:
                effects = {k: v["order_effect"] for k, v in case.items() if isinstance(v, dict)}
                print(f"{name:14s} rounds {case['rounds']:3d} x {case['block_calls']:2d}  order effect "
                      + ", ".join(f"{k} {e:+.3f}" if e is not None else f"{k} -" for k, e in effects.items()),
                      flush=True)
                for k, v in case.items():
                    if isinstance(v, dict):
                        print(f"    {k}: after candidate {v['after_candidate_per_call']}  "
                              f"after another {v['after_other_per_call']}")
                print(f"    candidate: {case['candidate_per_call']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1, default=str)


if __name__ == "__main__":
    main()
