"""The environment: judges a candidate kernel and returns the verdict as an observation.

Importable without the agent packages (langgraph, openai, anthropic, tenacity).
"""

from .environment import KernelEnv, RewardConfig, make
from .evaluator import EvalOptions, Evaluator, Limits, evaluate
from .result import STAGES, CaseResult, EvalResult, KernelReport, Timing, Violation

__all__ = [
    "STAGES", "CaseResult", "EvalOptions", "EvalResult", "Evaluator", "KernelEnv", "KernelReport", "Limits",
    "RewardConfig", "Timing", "Violation", "evaluate", "make",
]
