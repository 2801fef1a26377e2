"""One episode as the viewer shows it: each turn's new messages, the answer, the candidate's diff from
the turn before, the verdict, and what the turn cost.

A prompt repeats the conversation so far, so each turn lists only the messages its predecessor's prompt
and answer did not already hold (with how many were carried over); an assistant message that resends an
earlier answer is marked as that turn's answer.
"""

from __future__ import annotations

import difflib
from typing import Any

from . import fmt
from .verdict import verdict

KNOWN_TURN_FIELDS = {
    "turn", "phase", "messages", "response", "candidate", "extraction_problem", "feedback", "result",
    "reward", "terminated", "truncated", "input_tokens", "output_tokens", "reasoning_tokens", "cost_usd",
    "latency_s", "cached", "model", "eval_s", "attachments",
}  # fmt: skip


def episode_doc(row: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """The episode's page: its grid point and status, its heldout verdict, and every turn."""
    heldout = row.get("heldout")
    return {
        "id": row.get("id"),
        "version": version(row),
        "header": fmt.pairs(
            "Episode",
            [
                (k, fmt.general(row.get(k)))
                for k in ("task", "category", "agent", "model", "context", "sample", "status", "n_turns")
            ]
            + [
                ("solved", fmt.flag(row.get("solved"))),
                ("best turn", fmt.general(row.get("best_turn"))),
                ("heldout", fmt.flag(row.get("heldout_correct"))),
                ("error", fmt.general(row.get("error"))),
            ],
        ),
        "heldout": verdict(heldout) if isinstance(heldout, dict) else None,
        "turns": turn_docs(records),
    }


def version(row: dict[str, Any]) -> str:
    """Changes whenever the episode's page would: a new turn, a new status, the heldout check."""
    return f"{row.get('status')}:{row.get('n_turns')}:{row.get('heldout_correct')}:{row.get('finished_at')}"


def turn_docs(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    docs = []
    answers: dict[str, int] = {}
    previous: dict[str, Any] | None = None
    last_candidate: dict[str, Any] | None = None
    for record in records:
        docs.append(_turn_doc(record, previous, last_candidate, answers))
        response = record.get("response")
        if isinstance(response, str) and response:
            answers.setdefault(response, _int(record.get("turn")))
        if record.get("candidate") is not None:
            last_candidate = record
        previous = record
    return docs


def _int(x: Any) -> int:
    return int(x) if isinstance(x, int) and not isinstance(x, bool) else 0


def _turn_doc(
    record: dict[str, Any],
    previous: dict[str, Any] | None,
    last_candidate: dict[str, Any] | None,
    answers: dict[str, int],
) -> dict[str, Any]:
    result = record.get("result") if isinstance(record.get("result"), dict) else None
    carried, new = _new_messages(record, previous)
    return {
        "turn": record.get("turn"),
        "phase": fmt.general(record.get("phase")),
        "carried": carried,
        "messages": [_message(m, i, answers) for i, m in new],
        "answer": fmt.text(record.get("response")),
        "extraction_problem": fmt.general(record.get("extraction_problem"))
        if record.get("extraction_problem")
        else None,
        "candidate": fmt.text(record.get("candidate")) if record.get("candidate") is not None else None,
        "diff": _diff(record, last_candidate),
        "feedback": fmt.text(record.get("feedback")),
        "verdict": verdict(result),
        "usage": _usage(record),
    }


def _new_messages(
    record: dict[str, Any], previous: dict[str, Any] | None
) -> tuple[int, list[tuple[int, dict[str, Any]]]]:
    messages = [m for m in record.get("messages") or [] if isinstance(m, dict)]
    if previous is None:
        return 0, list(enumerate(messages))
    before = [m for m in previous.get("messages") or [] if isinstance(m, dict)]
    before = before + [{"role": "assistant", "content": previous.get("response")}]
    carried = 0
    for a, b in zip(messages, before, strict=False):
        if a.get("role") != b.get("role") or a.get("content") != b.get("content"):
            break
        carried += 1
    return carried, list(enumerate(messages))[carried:]


def _message(m: dict[str, Any], position: int, answers: dict[str, int]) -> dict[str, Any]:
    role = m.get("role")
    content = m.get("content")
    if role == "user":
        kind = "task" if position <= 1 else "feedback"
    else:
        kind = fmt.general(role)
    resent = answers.get(content) if role == "assistant" and isinstance(content, str) else None
    return {"role": fmt.general(role), "kind": kind, "resent_answer_of": resent, **fmt.text(content)}


def _diff(record: dict[str, Any], last: dict[str, Any] | None) -> dict[str, Any] | None:
    """The unified diff of this turn's candidate (and attachments) against the last earlier candidate."""
    if record.get("candidate") is None:
        return None
    if last is None:
        return {"against": None, "lines": [], "same": False}
    files = [("module", last.get("candidate") or "", record.get("candidate") or "")]
    old_att, new_att = last.get("attachments") or {}, record.get("attachments") or {}
    for name in sorted(set(old_att) | set(new_att)):
        files.append((name, str(old_att.get(name, "")), str(new_att.get(name, ""))))
    lines: list[str] = []
    turn, before = record.get("turn"), last.get("turn")
    for name, old, new in files:
        lines += difflib.unified_diff(
            old.splitlines(),
            new.splitlines(),
            fromfile=f"{name} (turn {before})",
            tofile=f"{name} (turn {turn})",
            lineterm="",
        )
    cut = max(0, len(lines) - 5000)
    return {"against": before, "lines": lines[:5000], "cut_lines": cut, "same": not lines}


def _usage(record: dict[str, Any]) -> dict[str, Any]:
    items = [
        ("model", fmt.general(record.get("model"))),
        ("input tokens", fmt.count(record.get("input_tokens"))),
        ("output tokens", fmt.count(record.get("output_tokens"))),
        ("reasoning tokens", fmt.count(record.get("reasoning_tokens"))),
        ("cost", fmt.usd(record.get("cost_usd"))),
        ("model latency", fmt.seconds(record.get("latency_s"))),
        ("judging time", fmt.seconds(record.get("eval_s"))),
        ("answer from a cache", fmt.flag(record.get("cached"))),
        ("reward", fmt.general(record.get("reward"))),
        ("terminated", fmt.flag(record.get("terminated"))),
        ("truncated", fmt.flag(record.get("truncated"))),
    ]
    extra = sorted(k for k, v in record.items() if k not in KNOWN_TURN_FIELDS and not isinstance(v, list))
    items += [(k.replace("_", " "), fmt.general(record[k])) for k in extra]
    return fmt.pairs("Tokens, time and cost", items)
