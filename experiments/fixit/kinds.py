"""Error kinds: what went wrong with a candidate, read from its stored ``EvalResult`` dict.

PTXBench's Fixit finding is that balanced pairs beat more pairs of one kind, so every pair is
labelled with the kind of its wrong candidate, and selection balances over these labels. The
rule is first-match, in the order the evaluator's stages run, so each verdict has exactly one
kind:

- ``compile``: a syntax error, an import that fails, or a kernel the compiler rejects;
- ``policy``: rejected by the rules (a PyTorch op on the host, a missing entrypoint, cheating);
  not one of the six kinds the issue names, but a distinct lesson, so it is kept apart;
- ``timeout``: a check that ran past its time limit;
- ``runtime``: an exception or a crash while running (a ``runtime_error``, or a failed check that raised
  or crashed);
- ``numerical``: it ran, and some output was wrong;
- ``missing_instruction``: correct, but a required instruction family was not present and executed;
- ``slow``: correct and complete, but slower than ``slow_below`` times the baseline (GPU runs only).

Labels come from the verdict's structure (violation codes, compile errors, whether a runtime error was
set, the judge's own prefix on a failed check's message), never from words inside what the candidate
wrote: its exception text and output are part of those messages, and a candidate whose exception says
"timed out" must not be filed as a timeout.
"""

from __future__ import annotations

import math
from typing import Any

KINDS: tuple[str, ...] = (
    "compile",
    "policy",
    "timeout",
    "runtime",
    "numerical",
    "missing_instruction",
    "slow",
)

DESCRIPTIONS: dict[str, str] = {
    "compile": "did not compile",
    "policy": "was rejected by the rules",
    "timeout": "timed out",
    "runtime": "raised an error at run time",
    "numerical": "gave wrong results",
    "missing_instruction": "was correct but did not use the required instructions",
    "slow": "was correct but slower than the baseline",
}

RUNTIME_VIOLATIONS = frozenset({"memcheck"})
"""Violation codes that report a run-time fault rather than a broken rule."""


def speedup_of(result: dict[str, Any] | None, baseline: str) -> float | None:
    value = ((result or {}).get("speedup") or {}).get(baseline)
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def solves(result: dict[str, Any] | None) -> bool:
    """Correct, with every required instruction family proven (where the task requires any)."""
    return bool(result and result.get("correct") is True and result.get("required_features_met") is not False)


def _failed_messages(result: dict[str, Any]) -> list[str]:
    return [str(c.get("message") or "") for c in result.get("cases") or [] if c.get("passed") is False]


TIMED_OUT = "timed out: "
FAILED_RUNS = ("raised an error: ", "crashed: ")
"""How the judge begins a failed check's message when the run itself failed (``env/judge/correctness.py``);
what follows is the worker's text, the candidate's exception among it."""


def _failed_by(result: dict[str, Any], prefixes: str | tuple[str, ...]) -> bool:
    return any(m.startswith(prefixes) for m in _failed_messages(result))


def classify(
    result: dict[str, Any] | None, *, baseline: str = "eager", slow_below: float = 1.0
) -> str | None:
    """The kind of a verdict; None for a candidate with nothing to fix, or one that could not be judged
    (no code extracted, a check that cannot run on this device)."""
    if not result:
        return None
    violations = result.get("violations") or []
    codes = [str(v.get("code", "")) for v in violations]
    if "syntax" in codes or result.get("compile_errors"):
        return "compile"
    other = [c for c in codes if c not in RUNTIME_VIOLATIONS]
    if other:
        return "policy"
    if _failed_by(result, TIMED_OUT):
        return "timeout"
    if codes or result.get("runtime_error") or _failed_by(result, FAILED_RUNS):
        return "runtime"
    if not result.get("compiled"):
        return "compile" if result.get("stage") == "compile" else None
    if result.get("correct") is False or _failed_messages(result):
        return "numerical"
    if result.get("correct") is not True:
        return None
    if result.get("required_features_met") is False:
        return "missing_instruction"
    speedup = speedup_of(result, baseline)
    if speedup is not None and speedup < slow_below:
        return "slow"
    return None


def fixes(
    kind: str,
    wrong: dict[str, Any] | None,
    later: dict[str, Any] | None,
    *,
    baseline: str = "eager",
    slow_below: float = 1.0,
) -> bool:
    """Whether ``later`` repairs a candidate of ``kind`` whose verdict was ``wrong``: it must solve the
    task, and for ``slow`` also reach the bar and beat the slow one."""
    if not solves(later):
        return False
    if kind != "slow":
        return True
    before, after = speedup_of(wrong, baseline), speedup_of(later, baseline)
    return after is not None and after >= slow_below and (before is None or after > before)


def headline(kind: str, result: dict[str, Any], *, baseline: str = "eager") -> str:
    """One line that names the failure: the compiler's last line, the rule, the first bad check."""

    def last_line(text: str) -> str:
        lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
        return lines[-1] if lines else ""

    if kind == "compile":
        for v in result.get("violations") or []:
            if v.get("code") == "syntax":
                return str(v.get("message", "")).splitlines()[0]
        errors = result.get("compile_errors") or []
        return last_line(errors[0]) if errors else "the module did not compile"
    if kind == "policy":
        v = (result.get("violations") or [{}])[0]
        return f"[{v.get('code', '?')}] " + str(v.get("message", "")).splitlines()[0] if v else ""
    if kind in ("timeout", "runtime"):
        text = result.get("runtime_error") or next(iter(_failed_messages(result)), "")
        return last_line(text) or kind
    if kind == "numerical":
        message = next(iter(_failed_messages(result)), "")
        return message.splitlines()[0] if message else "outputs did not match the reference"
    if kind == "missing_instruction":
        missing = result.get("missing_features") or {}
        if missing:
            return "; ".join(f"{name}: {why}" for name, why in missing.items())
        return "required instructions: " + ", ".join(result.get("required_features") or [])
    if kind == "slow":
        s = speedup_of(result, baseline)
        return f"speedup {s:.2f}x over {baseline}" if s is not None else "slower than the baseline"
    return ""


__all__ = ["DESCRIPTIONS", "KINDS", "classify", "fixes", "headline", "solves", "speedup_of"]
