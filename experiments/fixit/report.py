"""``report.json`` and ``report.md`` of a build: what was found, kept and dropped, and why.

The counts are worked out once into a JSON-able dict; the Markdown report and the dataset card
are written from that dict only, so they agree with ``report.json``.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .kinds import KINDS
from .pairs import Attempt
from .select import Drop

if TYPE_CHECKING:
    from .build import BuildOptions, Example

SPLITS = ("train", "validation")


def _drop_row(d: Drop) -> dict[str, Any]:
    return {
        "id": d.pair.id,
        "task": d.pair.task,
        "kind": d.pair.kind,
        "source": d.pair.source,
        "wrong": d.pair.wrong.key,
        "fixed": d.pair.fixed.key,
        "reason": d.reason,
        "detail": d.detail,
    }


def summarize(
    run_dirs: list[Path],
    attempts: list[Attempt],
    found: Any,
    drops: list[Drop],
    examples: list[Example],
    options: BuildOptions,
    seconds: float,
) -> dict[str, Any]:
    """The build's counts as a JSON-able dict: ``report.json``, and what the Markdown and card say."""
    judged = [a for a in attempts if a.candidate and a.result]
    failures = Counter(a.kind for a in judged if a.kind)
    by_split: dict[str, Any] = {}
    for split in SPLITS:
        chosen = [e for e in examples if e.split == split]
        by_split[split] = {
            "examples": len(chosen),
            "tasks": sorted({e.pair.task for e in chosen}),
            "kinds": dict(Counter(e.pair.kind for e in chosen)),
        }
    opts = asdict(options)
    opts["explainer_params"] = sorted(options.explainer_params)  # names only: params may hold keys
    return {
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        "seconds": round(seconds, 2),
        "runs": [{"name": r.name, "path": str(r.resolve()), **_run_meta(r)} for r in run_dirs],
        "options": opts,
        "turns": len(attempts),
        "judged_candidates": len(judged),
        "no_candidate": sum(1 for a in attempts if not a.candidate),
        "failures": dict(failures),
        "unjudged": sum(1 for a in judged if a.kind is None and not a.solved),
        "pairs_found": {
            "episode": sum(1 for p in found.pairs if p.source == "episode"),
            "cross-model": sum(1 for p in found.pairs if p.source == "cross-model"),
        },
        "unpaired_failures": dict(Counter(why for _, why in found.unpaired)),
        "unpaired_by_kind": dict(Counter(a.kind for a, _ in found.unpaired)),
        "kept": len(examples),
        "dropped": dict(Counter(d.reason for d in drops)),
        "drops": [_drop_row(d) for d in drops],
        "splits": by_split,
        "split_by": options.split_by,
        "by_task": {
            t: dict(Counter(e.pair.kind for e in examples if e.pair.task == t))
            for t in sorted({e.pair.task for e in examples})
        },
        "by_kind": {
            k: sum(1 for e in examples if e.pair.kind == k)
            for k in KINDS
            if any(e.pair.kind == k for e in examples)
        },
        "explanations": dict(Counter(e.explanation_source for e in examples)),
        "explanation_notes": [
            {"id": e.pair.id, "note": e.explanation_note} for e in examples if e.explanation_note
        ],
        "sources": dict(Counter(e.pair.source for e in examples)),
        "models": sorted({e.pair.wrong.model for e in examples} | {e.pair.fixed.model for e in examples}),
        "targets": sorted({e.pair.wrong.target for e in examples}),
    }


def _run_meta(run_dir: Path) -> dict[str, Any]:
    from warpgym.experiments.rundir import STORE_NAME
    from warpgym.experiments.store import Store

    store = Store(run_dir / STORE_NAME, readonly=True)
    try:
        config = store.get_meta("config") or {}
    finally:
        store.close()
    return {
        "experiment": config.get("name"),
        "target": config.get("target"),
        "models": [m.get("name") or m.get("spec") for m in config.get("models") or []],
    }


def table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def kind_table(report: dict[str, Any]) -> str:
    kinds = [k for k in KINDS if any(report["splits"][s]["kinds"].get(k) for s in SPLITS)]
    rows = [
        [
            k,
            *(report["splits"][s]["kinds"].get(k, 0) for s in SPLITS),
            sum(report["splits"][s]["kinds"].get(k, 0) for s in SPLITS),
        ]
        for k in kinds
    ]
    rows.append(["**all**", *(report["splits"][s]["examples"] for s in SPLITS), report["kept"]])
    return table(["error kind", *SPLITS, "total"], rows)


def report_markdown(report: dict[str, Any]) -> str:
    caps = {k: "none" if v is None else v for k, v in report["options"]["caps"].items()}
    parts = [
        "# Fixit build report\n",
        f"Built {report['created']} in {report['seconds']} s from "
        + ", ".join(f"`{r['name']}`" for r in report["runs"])
        + ".\n",
        "## Found\n",
        f"- turns read: {report['turns']} ({report['judged_candidates']} judged candidates, "
        f"{report['no_candidate']} answers without code)",
        "- failures by kind: "
        + (", ".join(f"{k} {n}" for k, n in sorted(report["failures"].items())) or "none"),
        f"- pairs found: {report['pairs_found']['episode']} within episodes, "
        f"{report['pairs_found']['cross-model']} across models",
        "- failures without a pair: "
        + (", ".join(f"{n} ({why})" for why, n in report["unpaired_failures"].items()) or "none"),
        "\n## Selection\n",
        f"Near-duplicates: both sources at least {report['options']['near_duplicate']:g} alike "
        "(token shingles). "
        f"Caps: per task and kind {caps['per_task_kind']}, per task {caps['per_task']}, per kind "
        f"{caps['per_kind']}, kind ratio {caps['kind_ratio']}, total {caps['total']}.\n",
        f"Kept {report['kept']}; dropped "
        + (", ".join(f"{n} {why}" for why, n in sorted(report["dropped"].items())) or "none")
        + ".\n",
        kind_table(report),
        f"\nSplit by {report['split_by']}: validation holds "
        + (", ".join(f"`{t}`" for t in report["splits"]["validation"]["tasks"]) or "no task")
        + ".\n",
    ]
    if report["drops"]:
        parts.append("## Dropped\n")
        rows = [
            [d["id"], d["task"], d["kind"], d["source"], d["reason"], d["detail"]]
            for d in report["drops"][:500]
        ]
        parts.append(table(["pair", "task", "kind", "source", "reason", "detail"], rows))
        if len(report["drops"]) > 500:
            parts.append(f"\n... and {len(report['drops']) - 500} more (report.json has them all).")
    if report.get("notes"):
        parts.append("\n## Notes\n")
        parts += [f"- {note}" for note in report["notes"]]
    if report["explanation_notes"]:
        parts.append("\n## Explanation fallbacks\n")
        parts += [f"- {n['id']}: {n['note']}" for n in report["explanation_notes"]]
    return "\n".join(parts) + "\n"
