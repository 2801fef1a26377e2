"""Explanations of fixes: written by a model through any provider, or from a plain template.

The model is asked why the fix works, given the task, the failing kernel, the judge's log, the
diff and the fixed kernel. Without a model (or where the model's answer is unusable) the
explanation is a template filled from the diff and the log; such pairs carry
``explanation_source = "template"`` in ``pairs.jsonl`` and are counted in the dataset card, so
no one mistakes them for reasoning.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from .kinds import DESCRIPTIONS, headline
from .pairs import Pair

EXPLAINER_SYSTEM = (
    "You review fixes to GPU kernels. Given a kernel that failed, the judge's log, the diff and the fixed "
    "kernel, explain in two to five sentences of plain prose why the fixed kernel works where the failing "
    "one did not: name the cause the log points to and the change that removes it. Write as the author of "
    "the fix would, just before showing it. No code blocks, no headings, no preamble."
)

_FENCE = re.compile(r"```.*?(```|$)", re.S)
MAX_TEMPLATE_LINES = 6


def unified_diff(wrong: str, fixed: str, *, context: int = 2) -> str:
    return "".join(
        difflib.unified_diff(
            (wrong or "").splitlines(keepends=True),
            (fixed or "").splitlines(keepends=True),
            fromfile="failing.py",
            tofile="fixed.py",
            n=context,
        )
    )


def changed_lines(wrong: str, fixed: str) -> list[tuple[str, str, str]]:
    """(operation, old line, new line) for each changed line, stripped: ``replace`` pairs lines of
    equal-length blocks one to one; other blocks become ``delete`` and ``insert`` lines."""
    a = [" ".join(line.split()) for line in (wrong or "").splitlines()]  # layout-only edits are no change
    b = [" ".join(line.split()) for line in (fixed or "").splitlines()]
    out: list[tuple[str, str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        old = [s.strip() for s in a[i1:i2] if s.strip()]
        new = [s.strip() for s in b[j1:j2] if s.strip()]
        if op == "replace" and len(old) == len(new):
            out += [("replace", o, n) for o, n in zip(old, new, strict=True) if o != n]
        else:
            out += [("delete", o, "") for o in old] + [("insert", "", n) for n in new]
    return out


def _clip(text: str, n: int = 110) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def template_explanation(pair: Pair) -> str:
    """The plain explanation: what the judge reported, and what the fix changed."""
    result = pair.wrong.result or {}
    what = DESCRIPTIONS.get(pair.kind, pair.kind)
    head = headline(pair.kind, result, baseline=pair.wrong.baseline)
    lines = [f"The previous candidate {what}" + (f": {head.rstrip('.')}." if head else ".")]
    changes = changed_lines(pair.wrong.candidate or "", pair.fixed.candidate or "")
    if changes:
        lines.append("The fix changes:" if len(changes) > 1 else "The fix changes one line:")
        # Edited and new lines say more about the fix than removed ones: they come first.
        shown = sorted(changes, key=lambda c: ("replace", "insert", "delete").index(c[0]))
        for op, old, new in shown[:MAX_TEMPLATE_LINES]:
            if op == "replace":
                lines.append(f"- `{_clip(old)}` -> `{_clip(new)}`")
            elif op == "delete":
                lines.append(f"- removed `{_clip(old)}`")
            else:
                lines.append(f"- added `{_clip(new)}`")
        if len(changes) > MAX_TEMPLATE_LINES:
            lines.append(f"- and {len(changes) - MAX_TEMPLATE_LINES} more change(s)")
    if pair.source == "cross-model":
        lines.append(
            "This version is a rewrite that passes every check, rather than an edit of the failing one."
        )
    return "\n".join(lines)


def explainer_messages(pair: Pair, statement: str) -> list[dict[str, str]]:
    wrong, fixed = pair.wrong.candidate or "", pair.fixed.candidate or ""
    user = (
        f"Task:\n{statement.strip()}\n\n"
        f"The failing kernel:\n```python\n{wrong.rstrip()}\n```\n\n"
        f"The judge's log for it:\n{pair.wrong.feedback.strip()}\n\n"
        f"The diff from the failing kernel to the fixed one:\n"
        f"```diff\n{unified_diff(wrong, fixed).rstrip()}\n```\n\n"
        f"The fixed kernel (passes every check):\n```python\n{fixed.rstrip()}\n```\n\n"
        "Why does the fix work?"
    )
    return [{"role": "system", "content": EXPLAINER_SYSTEM}, {"role": "user", "content": user}]


def clean_model_text(text: str) -> str:
    """The model's prose with any code blocks removed (the training answer carries exactly one)."""
    text = _FENCE.sub("", text or "")
    return re.sub(r"\n{3,}", "\n\n", text).strip()


@dataclass
class Explanation:
    text: str
    source: str
    """``model:SPEC`` or ``template``."""
    note: str = ""


def explain(pair: Pair, statement: str, provider: Any | None, spec: str = "") -> Explanation:
    """A model's explanation through ``provider``; the template without one, or when the model fails."""
    if provider is None:
        return Explanation(template_explanation(pair), "template")
    from warpgym.agents import ProviderError

    meta = {
        "task": pair.task,
        "sample": 0,
        "turn": 1,
        "loop": "fixit-explain",
        "context": None,
        "phase": "explain",
        "pair": pair.id,
    }
    try:
        completion = provider.complete(explainer_messages(pair, statement), metadata=meta)
    except ProviderError as exc:
        return Explanation(template_explanation(pair), "template", f"explainer failed: {exc}")
    text = clean_model_text(completion.text)
    if len(text) < 20:
        return Explanation(template_explanation(pair), "template", "explainer gave no usable prose")
    return Explanation(text, f"model:{spec or getattr(provider, 'name', '?')}")


__all__ = [
    "EXPLAINER_SYSTEM",
    "Explanation",
    "changed_lines",
    "clean_model_text",
    "explain",
    "explainer_messages",
    "template_explanation",
    "unified_diff",
]
