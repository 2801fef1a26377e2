"""A small synthetic run directory for the viewer's tests: a store written the way the runner writes it,
with turns whose verdicts, diffs and texts the tests look for (one answer carries markup meant to run)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from warpgym.experiments.rundir import STORE_NAME
from warpgym.experiments.store import Store

SYSTEM = "You write Triton kernels."
TASK = "Task normalization/softmax\n\nRow-wise softmax."
HOSTILE = (
    "Here it is.</textarea></pre><script>window.__pwned = 'script'</script>"
    "<img src=x onerror=\"window.__pwned = 'img'\"> ```python\nprint(1)\n```"
)
V1 = "import triton\n\n\ndef softmax(x):\n    return x.exp() / x.exp().sum(-1)\n"
V2 = (
    "import triton\n\n\ndef softmax(x):\n    m = x.max(-1, keepdim=True).values\n"
    "    return (x - m).exp() / (x - m).exp().sum(-1)\n"
)


def failing_result() -> dict[str, Any]:
    return {
        "task": "normalization/softmax",
        "target": "sm_90a",
        "device": "cpu (Triton interpreter)",
        "stage": "correctness",
        "compiled": True,
        "correct": False,
        "cases": [
            {"shape_set": "dev", "case": {"rows": 4, "cols": 4096}, "seed": 0, "distribution": "large",
             "passed": False, "max_abs_error": float("inf"), "mismatches": 16384, "numel": 16384,
             "message": "non-finite output where the reference is finite"},
            {"shape_set": "dev", "case": {"rows": 4, "cols": 8}, "seed": 0, "distribution": "normal",
             "passed": True, "max_abs_error": 1e-7, "mismatches": 0, "numel": 32},
        ],
        "instructions": {"wgmma": {"ptx": 0, "sass": 0, "executed": None},
                         "cp.async": {"ptx": 3, "sass": 3, "executed": None}},
        "kernels": [{"name": "softmax_kernel", "target": "sm_90a", "registers": 40, "shared_bytes": 0}],
        "skipped_checks": ["timing: no GPU on this machine"],
    }  # fmt: skip


def correct_result() -> dict[str, Any]:
    return {
        "task": "normalization/softmax",
        "stage": "done",
        "compiled": True,
        "correct": True,
        "cases": [{"shape_set": "dev", "case": {"rows": 4, "cols": 8}, "passed": True}],
        "timing": [{"case": {"rows": 4096, "cols": 4096}, "median_ms": 0.21, "min_ms": 0.2, "max_ms": 0.25,
                    "runs": 100, "baselines_ms": {"eager": 0.42}, "roofline_fraction": 0.61}],
        "speedup": {"eager": 2.0},
    }  # fmt: skip


def record(turn: int, response: str, candidate: str | None, result: dict[str, Any] | None, **kw: Any) -> dict:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    for earlier in kw.pop("earlier", []):
        messages += [
            {"role": "assistant", "content": earlier["response"]},
            {"role": "user", "content": earlier["feedback"]},
        ]
    base = {
        "turn": turn,
        "phase": "generate" if turn == 1 else "fix",
        "messages": messages,
        "response": response,
        "candidate": candidate,
        "extraction_problem": None if candidate is not None else "no code block in the answer",
        "feedback": f"Verdict of turn {turn}",
        "result": result,
        "input_tokens": 1000 * turn,
        "output_tokens": 100,
        "cost_usd": 0.01,
        "latency_s": 1.5,
        "eval_s": 2.0,
        "model": "rec",
    }
    base.update(kw)
    return base


def trajectory() -> list[dict[str, Any]]:
    """Three turns of one fix-retry episode: a wrong kernel, an answer with no code (and hostile markup),
    then the fixed kernel."""
    t1 = record(1, f"```python\n{V1}```", V1, failing_result())
    t2 = record(2, HOSTILE, None, None, earlier=[t1])
    t3 = record(3, f"```python\n{V2}```", V2, correct_result(), earlier=[t1, t2])
    return [t1, t2, t3]


CONFIG = {
    "name": "synthetic",
    "description": "viewer test",
    "resolved_tasks": ["normalization/softmax", "math/add"],
    "agents": ["one-shot", "fix-retry"],
    "models": [{"spec": "replay:x.jsonl", "name": "rec"}],
    "contexts": ["none"],
    "samples": 1,
    "max_turns": 3,
    "history": "full",
    "target": "sm_90a",
    "metrics": {"baseline": "eager", "pass_k": [1], "fast_p": [0, 1]},
}


def grid_row(task: str, agent: str, sample: int = 0) -> dict[str, Any]:
    return {"task": task, "category": task.split("/")[0], "agent": agent, "model": "rec", "context": "none",
            "sample": sample}  # fmt: skip


def make_run(run_dir: Path, *, live: bool = True, pid: int | None = None) -> Store:
    """A run with three episodes: a fix-retry trajectory, a one-shot one, and one not yet played; its
    process is ``pid``, else this one (``live``) or one that cannot exist."""
    store = Store(run_dir / STORE_NAME)
    store.set_meta("config", CONFIG)
    store.set_meta("created", 1.7e9)
    store.add_episodes(
        [
            grid_row("normalization/softmax", "fix-retry"),
            grid_row("normalization/softmax", "one-shot"),
            grid_row("math/add", "one-shot"),
        ]
    )
    ids = {(e["task"], e["agent"]): e["id"] for e in store.episodes()}
    if pid is None:
        pid = os.getpid() if live else 2**22 + 12345  # above any pid Linux hands out
    store.event("started", {"episodes": 3, "pid": pid})
    fix = ids[("normalization/softmax", "fix-retry")]
    store.start_episode(fix)
    for r in trajectory():
        store.add_turn(fix, r, "eager")
    store.finish_episode(fix, solved=True, best_turn=3, heldout=correct_result())
    one = ids[("normalization/softmax", "one-shot")]
    store.start_episode(one)
    store.add_turn(one, record(1, f"```python\n{V1}```", V1, failing_result()), "eager")
    store.finish_episode(one, solved=False, best_turn=None, heldout=None)
    return store
