"""The dataset card (``README.md``) and the comparison experiment (``compare.toml``) of a build.

Both are written from the build's report dict, so the card's counts are those of ``report.json``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .kinds import KINDS
from .report import kind_table, table

CARD_INTRO = """# Fixit data set

Supervised fine-tuning data built by `warpgym fixit build` from repaired kernels: each example is a
kernel that failed, the judge's verdict on it, an explanation, and a kernel that passed. The system and
task messages are the ones the model was sent in the run, so the examples look like the conversations
a model has at inference.
"""

CARD_FILES = """## Files

- `openai/train.jsonl`, `openai/validation.jsonl`: `{"messages": [...]}` for OpenAI fine-tuning; the
  explanation and the fixed kernel are the only assistant message. The same rows are TRL's
  conversational `messages` type.
- `hf/train.jsonl`, `hf/validation.jsonl`: `{"prompt": [...], "completion": [...]}`, TRL's
  conversational prompt-completion type (the loss falls on the completion only). Extra columns: `id`,
  `task`, `kind`, `explanation_source`.
- `pairs.jsonl`: each example's provenance (run, episode, model, turns), error kind, log, diff and
  explanation source. `report.md` / `report.json`: what was found, kept and dropped, and why.
- `compare.toml`: an experiment comparing the base and the tuned model on the validation tasks.

## Use

```
warpgym fixit train . --base /path/to/local/model    # a LoRA adapter in ./adapter
warpgym run compare.toml                              # base vs tuned, dev and heldout shapes
```

Error kinds: compile, policy (rejected by the rules), timeout, runtime, numerical,
missing_instruction (correct without the required instructions), slow (correct, slower than the
baseline).

Caveat (PTXBench's Fixit): tuned models may fix the sizes they saw and still fail new problem sizes;
judge a tuned model on the validation tasks and on heldout shapes, which `compare.toml` does.
"""


def card(report: dict[str, Any]) -> str:
    """The dataset card: what the data is, where it came from, and the counts."""
    explained = report["explanations"]
    template = explained.get("template", 0)
    by_model = [
        f"{n} written by `{s.removeprefix('model:')}`"
        for s, n in sorted(explained.items())
        if s != "template"
    ]
    if template:
        by_model.append(
            f"**{template} from a plain template** (the judge's headline and the changed "
            "lines; not a model's reasoning)"
        )
    val_tasks = report["splits"]["validation"]["tasks"]
    task_rows = [
        [
            t,
            "validation" if t in val_tasks else "train",
            *(kinds.get(k, 0) for k in KINDS),
            sum(kinds.values()),
        ]
        for t, kinds in report["by_task"].items()
    ]
    runs = ", ".join(f"`{r['name']}` ({r['experiment']}, {r['target']})" for r in report["runs"])
    sources = ", ".join(f"{n} {s}" for s, n in sorted(report["sources"].items())) or "none"
    split = report["split_by"]
    lines = [
        CARD_INTRO,
        "## Contents\n",
        f"- {report['kept']} examples: {report['splits']['train']['examples']} train, "
        f"{report['splits']['validation']['examples']} validation, split by {split} (no {split} is in both)",
        f"- from runs: {runs}",
        "- models: " + (", ".join(f"`{m}`" for m in report["models"]) or "none"),
        f"- pair sources: {sources} (cross-model: a failure paired with another model's correct kernel)",
        "- explanations: " + (", ".join(by_model) or "none"),
        "",
        kind_table(report),
        "",
        "### By task\n",
        table(["task", "split", *KINDS, "total"], task_rows) if task_rows else "(no examples)",
        "",
        CARD_FILES,
    ]
    return "\n".join(lines)


COMPARE_TEMPLATE = Path(__file__).resolve().parent.parent / "configs" / "fixit-compare.toml"


def compare_config(report: dict[str, Any]) -> str:
    """The bundled comparison experiment with this build's validation tasks (or all its tasks)."""
    text = COMPARE_TEMPLATE.read_text()
    tasks = report["splits"]["validation"]["tasks"] or report["splits"]["train"]["tasks"]
    if not tasks:
        return text
    line = "tasks = [" + ", ".join(json.dumps(t) for t in tasks) + "]"
    which = "validation" if report["splits"]["validation"]["tasks"] else "every (no validation split)"
    text = re.sub(r"(?m)^tasks = \[.*\]$", f"# The {which} task(s) of this build:\n{line}", text, count=1)
    target = (report["targets"] or [None])[0]
    if target:
        text = re.sub(r'(?m)^target = "[^"]*"', f'target = "{target}"', text, count=1)
    return text
