"""An episode's best turn, defined once for the agent loops, the metrics and the experiment runner.

The best turn is the correct turn with the highest speedup over the baseline; a correct turn with
no timing (a CPU run, a failed timing) ranks below every timed one, and ties go to the earliest.
An episode with no correct turn has no best turn; tables that need one turn to stand for such an
episode use its last (``else_last``).

Why speedup and not the reward: the speedup is what reports quote, while the reward is clipped
(every correct kernel slower than the baseline, and every one past ``max_speed_bonus``, earns the
same), scaled by settings of the environment, and zero for a correct kernel that lacks required
instructions. A best turn chosen by reward could differ from the one whose speedup is reported.
Why the earliest on ties: reaching the same kernel in fewer turns is the better outcome, and the
answer must not depend on the order equal values are compared in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

Outcome = tuple[bool, float | None]
"""One turn as the rule sees it: (correct, speedup over the baseline or None)."""


def best_index(outcomes: Sequence[Outcome], *, else_last: bool = False) -> int | None:
    """The position in ``outcomes`` of the best turn (see the module docstring); None when there is
    no correct turn, or, with ``else_last``, the last position (None only when ``outcomes`` is empty)."""
    best: int | None = None
    best_speedup = -math.inf
    for i, (correct, speedup) in enumerate(outcomes):
        value = speedup if speedup is not None else -math.inf
        if correct and (best is None or value > best_speedup):
            best, best_speedup = i, value
    if best is None and else_last and outcomes:
        return len(outcomes) - 1
    return best


def speedup_over(result: Mapping[str, Any] | None, baseline: str) -> float | None:
    """The speedup over ``baseline`` in an ``EvalResult`` dict; None when absent or not finite."""
    value = ((result or {}).get("speedup") or {}).get(baseline)
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def outcome_of(result: Mapping[str, Any] | None, baseline: str) -> Outcome:
    """(correct, speedup) of an ``EvalResult`` dict (None for a turn that was never judged)."""
    return bool((result or {}).get("correct")), speedup_over(result, baseline)
