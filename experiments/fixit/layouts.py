"""The output directory of a build, in the layouts fine-tuning tools read.

Output directory::

    openai/{train,validation}.jsonl   {"messages": [...]}: OpenAI fine-tuning; also TRL's
                                      conversational "messages" type (the answer is the last turn)
    hf/{train,validation}.jsonl       {"prompt": [...], "completion": [...]}: TRL's conversational
                                      prompt-completion type (loss on the completion only)
    pairs.jsonl                       every kept pair with its provenance, kind, diff and log
    report.json, report.md            what was found, kept and dropped, and why
    README.md                         the dataset card, with the counts
    compare.toml                      an experiment comparing the base and the tuned model on the
                                      validation tasks (dev and heldout shapes)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .card import card, compare_config
from .explain import unified_diff
from .kinds import headline
from .pairs import Attempt
from .report import SPLITS, report_markdown
from .select import Drop

if TYPE_CHECKING:
    from .build import Example


def openai_row(ex: Example) -> dict[str, Any]:
    return {"messages": ex.messages}


def hf_row(ex: Example) -> dict[str, Any]:
    return {
        "id": ex.pair.id,
        "task": ex.pair.task,
        "kind": ex.pair.kind,
        "explanation_source": ex.explanation_source,
        "prompt": ex.messages[:-1],
        "completion": ex.messages[-1:],
    }


def pair_row(ex: Example) -> dict[str, Any]:
    p = ex.pair

    def side(a: Attempt) -> dict[str, Any]:
        return {
            "run": a.run,
            "episode": a.episode_id,
            "model": a.model,
            "agent": a.agent,
            "context": a.context,
            "sample": a.sample,
            "turn": a.turn,
            "stage": (a.result or {}).get("stage"),
            "speedup": a.speedup,
            "candidate": a.candidate,
        }

    return {
        "id": p.id,
        "split": ex.split,
        "task": p.task,
        "kind": p.kind,
        "source": p.source,
        "gap": p.gap,
        "headline": headline(p.kind, p.wrong.result or {}, baseline=p.wrong.baseline),
        "explanation_source": ex.explanation_source,
        "explanation_note": ex.explanation_note or None,
        "explanation": ex.explanation,
        "wrong": side(p.wrong),
        "fixed": side(p.fixed),
        "log": p.wrong.feedback,
        "diff": unified_diff(p.wrong.candidate or "", p.fixed.candidate or ""),
        "cross_model_similarity": p.similarity,
    }


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def write(out: Path, examples: list[Example], drops: list[Drop], report: dict[str, Any]) -> None:
    """Every file of the output directory, as listed above."""
    out.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        chosen = [e for e in examples if e.split == split]
        _jsonl(out / "openai" / f"{split}.jsonl", [openai_row(e) for e in chosen])
        _jsonl(out / "hf" / f"{split}.jsonl", [hf_row(e) for e in chosen])
    _jsonl(out / "pairs.jsonl", [pair_row(e) for e in examples])
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "report.md").write_text(report_markdown(report))
    (out / "README.md").write_text(card(report))
    (out / "compare.toml").write_text(compare_config(report))
