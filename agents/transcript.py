"""What happened at each turn, in words a person reads: the verdict, the reward, what it cost."""

from __future__ import annotations

from typing import Any

from .api import EpisodeResult, TurnRecord


def _verdict(record: TurnRecord) -> str:
    if record.result is None:
        return "not judged: " + (record.extraction_problem or "no candidate").split(". ")[0]
    first = (record.feedback or "").splitlines()[0] if record.feedback else ""
    return first.removeprefix("Verdict: ") or ("correct" if record.correct else "incorrect")


def _cost(record: TurnRecord) -> str:
    if record.origin == "paid":
        return f"${record.cost_usd:.4f}"
    recorded = record.recorded_cost_usd
    return "not paid" + (f" (recorded ${recorded:.4f})" if recorded else "")


def format_turn(record: TurnRecord, *, prompt: bool = False, response: bool = False,
                feedback: bool = False) -> str:
    speedup: dict[str, Any] = (record.result or {}).get("speedup") or {}
    speed = ", ".join(f"{k} {v:.2f}x" for k, v in speedup.items())
    flags = "".join((" [solved]" if record.terminated else "", " [turn limit]" if record.truncated else "",
                     f" [{record.origin}]" if record.origin != "paid" else ""))
    lines = [
        f"turn {record.turn} ({record.phase}): {_verdict(record)}{flags}",
        f"  reward {record.reward:.3f}" + (f", speedup {speed}" if speed else "")
        + f"; tokens in {record.input_tokens} / out {record.output_tokens}"
        + (f" (reasoning {record.reasoning_tokens})" if record.reasoning_tokens else "")
        + f"; {_cost(record)}; model {record.latency_s:.1f} s, judge {record.eval_s:.1f} s",
    ]
    if prompt and record.messages:
        lines.append("  --- last message sent ---\n" + record.messages[-1].get("content", ""))
    if response:
        lines.append("  --- response ---\n" + record.response)
    if feedback and record.feedback:
        lines.append("  --- feedback ---\n" + record.feedback)
    return "\n".join(lines)


def format_episode(result: EpisodeResult, **detail: bool) -> str:
    head = (f"{result.task} | loop {result.loop} | {result.provider} | context {result.context} | "
            f"sample {result.sample} | history {result.history}")
    body = [format_turn(t, **detail) for t in result.turns]
    best = (f"best: turn {result.best.turn}, reward {result.best.reward:.3f}" if result.best
            else "best: no correct candidate")
    tail = (f"{'solved' if result.solved else 'not solved'} in {len(result.turns)} turn(s); {best}; "
            f"tokens in {result.input_tokens} / out {result.output_tokens}; ${result.cost_usd:.4f} paid")
    return "\n".join([head, *body, tail])
