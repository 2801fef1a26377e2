"""Helpers for the Fixit tests: verdict dicts of every kind, distinct kernels, and run stores written
through the store's own API (for kinds a CPU cannot produce: timeouts, timing, GPU instructions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from warpgym.experiments.rundir import STORE_NAME
from warpgym.experiments.store import Store

SYSTEM = "You write Triton kernels."


def kernel(seed: int, task: str = "math/add", tweak: str = "") -> str:
    """A kernel-shaped source whose tokens depend on ``seed``, so different seeds are far apart."""
    body = "\n".join(
        f"    v{j} = tl.load(x_ptr + offs * {seed * 37 + j}) + {seed * 11 + j}" for j in range(6)
    )
    name = task.split("/")[-1].replace("-", "_")
    return (
        "import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        f"def {name}_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        f"{body}\n    tl.store(out_ptr + offs, v0{tweak}, mask=offs < n)\n\n\n"
        f"def {name}(x: torch.Tensor) -> torch.Tensor:\n    out = torch.empty_like(x)\n"
        f"    {name}_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)\n    return out\n"
    )


def verdict(kind: str, speedup: float | None = None) -> dict[str, Any]:
    """An EvalResult dict as the evaluator writes it, failing (or passing) in the given way."""
    base: dict[str, Any] = {
        "stage": "done",
        "compiled": True,
        "correct": True,
        "violations": [],
        "compile_errors": [],
        "runtime_error": None,
        "cases": [{"passed": True, "message": ""}],
        "required_features": [],
        "required_features_met": None,
        "missing_features": {},
        "speedup": None,
        "feedback": "",
    }
    if kind == "compile":
        base.update(
            stage="compile",
            compiled=False,
            correct=None,
            cases=[],
            compile_errors=[
                "k for sm_90a:\nCompilationError: at 6:8:\n"
                "AttributeError(\"module 'triton.language' has no attribute 'mean'\")"
            ],
        )
    elif kind == "syntax":
        base.update(
            stage="static",
            compiled=False,
            correct=None,
            cases=[],
            violations=[
                {"code": "syntax", "message": "syntax error at line 3, column 1: invalid syntax", "line": 3}
            ],
        )
    elif kind == "policy":
        base.update(
            stage="static",
            compiled=False,
            correct=None,
            cases=[],
            violations=[
                {"code": "torch-op", "message": "host code ran PyTorch compute ops: aten::add", "line": None}
            ],
        )
    elif kind == "timeout":
        base.update(
            stage="correctness",
            correct=False,
            runtime_error="the candidate ran past 30 s",
            cases=[{"passed": False, "message": "timed out: the candidate ran past 30 s"}],
        )
    elif kind == "runtime":
        base.update(
            stage="correctness",
            correct=False,
            runtime_error="IndexError: tuple index out of range",
            cases=[{"passed": False, "message": "raised an error: IndexError: tuple index out of range"}],
        )
    elif kind == "numerical":
        base.update(
            stage="correctness",
            correct=False,
            cases=[{"passed": False, "message": "output: 541 of 800 elements outside atol=1e-07"}],
        )
    elif kind == "missing_instruction":
        base.update(
            stage="instructions",
            required_features=["wgmma"],
            required_features_met=False,
            missing_features={"wgmma": "not in the SASS of any kernel"},
        )
    elif kind == "ok":
        pass
    else:
        raise ValueError(kind)
    if speedup is not None:
        base["speedup"] = {"eager": speedup}
    base["feedback"] = f"Verdict: {kind.upper()} (synthetic)"
    return base


def record(turn: int, candidate: str | None, result: dict[str, Any] | None, task: str) -> dict[str, Any]:
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Write `{task}` as a Triton kernel."},
    ]
    return {
        "turn": turn,
        "phase": "generate" if turn == 1 else "fix",
        "messages": messages,
        "response": f"```python\n{candidate}\n```" if candidate else "no code",
        "candidate": candidate,
        "extraction_problem": None if candidate else "no code block",
        "feedback": (result or {}).get("feedback", "no code block"),
        "result": result,
        "reward": 0.0,
    }


Episode = tuple[str, str, int, list[tuple[str | None, dict[str, Any] | None]]]
"""(task, model, sample, [(candidate, verdict) per turn])."""


def make_run(
    run_dir: Path,
    episodes: list[Episode],
    *,
    name: str = "synthetic",
    max_turns: int = 4,
    target: str = "sm_90a",
) -> Path:
    """A run directory whose store holds ``episodes``, written through ``Store``'s public methods."""
    store = Store(run_dir / STORE_NAME)
    try:
        models = sorted({m for _, m, _, _ in episodes})
        store.set_meta(
            "config",
            {
                "name": name,
                "target": target,
                "max_turns": max_turns,
                "metrics": {"baseline": "eager"},
                "models": [{"spec": f"replay:{m}", "name": m} for m in models],
            },
        )
        store.add_episodes(
            [
                {
                    "task": t,
                    "category": t.split("/")[0],
                    "agent": "fix-retry",
                    "model": m,
                    "context": "none",
                    "sample": s,
                }
                for t, m, s, _ in episodes
            ]
        )
        ids = {(e["task"], e["model"], e["sample"]): e["id"] for e in store.episodes()}
        for task, model, sample, turns in episodes:
            for n, (candidate, result) in enumerate(turns, 1):
                store.add_turn(ids[(task, model, sample)], record(n, candidate, result, task), "eager")
    finally:
        store.close()
    return run_dir


K = {i: kernel(i) for i in range(1, 20)}
# The same code as K[1] and K[3] with comments and layout changed: a duplicate pair.
K1_COPY = K[1].replace("    offs =", "    # offsets of this program\n    offs  =")
K3_COPY = K[3] + "\n\n"


def scenario() -> list:
    ok = verdict("ok")
    return [
        ("math/add", "m1", 0, [(K[1], verdict("numerical")), (K[2], verdict("compile")), (K[3], ok)]),
        ("math/add", "m1", 1, [(K1_COPY, verdict("numerical")), (K3_COPY, ok)]),
        ("math/mul", "m1", 0, [(K[4], verdict("runtime")), (K[5], ok)]),
        ("math/mul", "m2", 0, [(K[6], verdict("policy")), (K[7], verdict("policy"))]),
        (
            "activation/relu",
            "m1",
            0,
            [(K[8], verdict("timeout")), (K[9], verdict("ok", 0.5)), (K[10], verdict("ok", 1.5))],
        ),
        ("reduce/sum-rows", "m1", 0, [(K[11], verdict("missing_instruction")), (K[12], ok)]),
        ("reduce/sum-rows", "m1", 1, [(None, None), (K[13], verdict("numerical")), (K[14], ok)]),
        ("math/add", "m2", 0, [(K[15], verdict("numerical")), (K[16], ok)]),
    ]
