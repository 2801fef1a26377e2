"""Which examples still teach something once ``--max-length`` cuts them.

TRL keeps the first ``max_length`` tokens of prompt + completion, so an example whose prompt alone
reaches the limit keeps no token of its answer and trains nothing. Those examples are dropped with
a note; a training set left with none stops before any model is loaded, saying what to change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .build import FixitError

Row = dict[str, Any]
Lengths = Callable[[Row], tuple[int, int]]
"""(prompt tokens, prompt + completion tokens) of a row, as the model's chat template renders it."""


def fit_to_length(rows: list[Row], lengths: Lengths, max_length: int, what: str,
                  notes: list[str], required: bool = True) -> list[Row]:
    """The rows whose prompt is shorter than ``max_length``; raises ``FixitError`` when none is and the
    set is ``required`` (the training set)."""
    if not rows:
        return rows
    measured = [(row, *lengths(row)) for row in rows]
    kept = [row for row, prompt, _ in measured if prompt < max_length]
    if kept and len(kept) == len(rows):
        return kept
    shortest = min(prompt for _, prompt, _ in measured)
    longest = max(whole for _, _, whole in measured)
    if not kept and required:
        raise FixitError(
            f"nothing left to train on: every one of the {len(rows)} {what} examples has a prompt of at "
            f"least --max-length {max_length} tokens (the shortest prompt has {shortest}), so no token of "
            f"an answer would be trained on. Raise --max-length above {shortest} (--max-length {longest} "
            "keeps every example whole), or build shorter examples"
        )
    notes.append(
        f"{len(rows) - len(kept)} of {len(rows)} {what} examples dropped: their prompt alone reaches "
        f"--max-length {max_length} (--max-length {longest} keeps every example whole)"
    )
    return kept


def chat_lengths(tokenizer: Any) -> Lengths:
    """Token counts through the tokenizer's chat template, as the trainer will render the rows."""

    def count(messages: list[dict[str, Any]], generation_prompt: bool) -> int:
        out = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=generation_prompt)
        ids = out if isinstance(out, list) else out["input_ids"]
        return len(ids)

    return lambda row: (count(row["prompt"], True), count(row["prompt"] + row["completion"], False))
