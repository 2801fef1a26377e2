"""The environment: judges a candidate kernel and returns the verdict as an observation.

Four rooms, along the trust wall:
- ``judge``: the harness side. Plans an evaluation, talks to workers, compares outputs with
  references it computed itself, inspects instructions, times, decides. Never runs candidate code.
- ``worker``: what runs in the untrusted process beside the candidate: the worker's loop, the
  confinement, the audit hook, the run-time policy, the launch recorder and its rules.
- ``protocol``: what crosses the wall: the wire encoding and the typed requests and replies.
- ``toolchain``: the bottom layer (targets, NVRTC/ptxas, PTX parsing, tensor maps, disassembly)
  that tasks, prompts, the judge and the worker all use.
``common`` holds what both sides run: devices, the GPU locks and the timing loop.

Importable without the agent packages (langgraph, openai, anthropic, tenacity). The names below
are loaded on first use, so a worker that imports ``warpgym.env.worker`` never loads the judge.
Importing registers every task with Gymnasium (``registration``: ids only, no task is loaded), so
``gymnasium.make("warpgym/normalization-softmax-v0")`` works after ``import warpgym``.
"""

from __future__ import annotations

import importlib
from typing import Any

from warpgym.env.registration import register_all as _register_all

_EXPORTS = {
    "KernelEnv": "warpgym.env.environment", "RewardConfig": "warpgym.env.environment",
    "make": "warpgym.env.environment",
    "EvalOptions": "warpgym.env.judge.options", "Limits": "warpgym.env.judge.options",
    "Evaluator": "warpgym.env.judge.evaluator", "evaluate": "warpgym.env.judge.evaluator",
    "Candidate": "warpgym.env.candidate", "CandidateError": "warpgym.env.candidate",
    "EpisodeOver": "warpgym.env.environment",
    "STAGES": "warpgym.env.judge.result", "CaseResult": "warpgym.env.judge.result",
    "EvalResult": "warpgym.env.judge.result", "KernelReport": "warpgym.env.judge.result",
    "Timing": "warpgym.env.judge.result", "Violation": "warpgym.env.protocol.violations",
}

__all__ = sorted(_EXPORTS)

_register_all()


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'warpgym.env' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
