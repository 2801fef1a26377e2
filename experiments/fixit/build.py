"""``fixit build``: runs -> pairs -> selection -> explanations -> chat JSONL, a report and a card.

What a training example holds, as the model would see it at inference:

- the system message and the task message the episode's model was sent (taken from the stored
  turn, so hardware context and wording match the run; rebuilt from ``warpgym.prompts`` only
  when a record lacks them);
- a user message with the wrong kernel and the judge's verdict, worded by the prompts' own
  feedback template;
- one assistant message, the only trained one: the explanation, then the fixed kernel in one
  ```python block (the form the agents' extractor reads).

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
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .explain import explain, unified_diff
from .kinds import KINDS, headline
from .pairs import Attempt, Pair, find_pairs, load_attempts
from .select import Caps, Drop, balance, deduplicate, group_key, similarity, split_groups

SPLITS = ("train", "validation")
ATTEMPT_INTRO = "Your previous candidate:"


class FixitError(Exception):
    """A build or training that cannot proceed (no runs, nothing to train on, a missing extra)."""


@dataclass
class BuildOptions:
    adjacent_only: bool = False
    cross_model: bool = False
    slow_below: float = 1.0
    """A correct kernel below this speedup over the run's baseline is a ``slow`` failure (GPU runs)."""
    near_duplicate: float = 0.9
    caps: Caps = field(default_factory=Caps)
    val_fraction: float = 0.2
    split_by: str = "task"
    val_groups: list[str] | None = None
    seed: int = 0
    explainer: str | None = None
    explainer_params: dict[str, Any] = field(default_factory=dict)
    join_user: bool = False
    """Fold the attempt into the task message (for chat templates that insist on alternating roles)."""


@dataclass
class Example:
    pair: Pair
    split: str
    messages: list[dict[str, str]]
    explanation: str
    explanation_source: str
    explanation_note: str = ""


@dataclass
class BuildResult:
    out: Path
    examples: list[Example]
    drops: list[Drop]
    report: dict[str, Any]


# ------------------------------------------------------------------------------------------ messages
def _task_info(task_id: str) -> tuple[str, str, str]:
    """(language, entrypoint, statement) of a task; placeholders if it is no longer registered."""
    try:
        from warpgym.tasks import get_task

        task = get_task(task_id)
        return task.language, task.entrypoint, task.statement()
    except Exception:  # noqa: BLE001 - a run from an older task list still yields data
        return "triton", "", ""


def prompt_messages(attempt: Attempt) -> list[dict[str, str]]:
    """The system and task messages of the attempt's episode, as sent; rebuilt if the record lacks them."""
    got = attempt.messages
    if len(got) == 2 and got[0].get("role") == "system" and got[1].get("role") == "user":
        return [{"role": m["role"], "content": str(m["content"])} for m in got]
    from warpgym.prompts import system_prompt, task_prompt

    language, entrypoint, statement = _task_info(attempt.task)
    return [
        {
            "role": "system",
            "content": system_prompt(
                language=language, target=attempt.target, entrypoint=entrypoint, context=attempt.context
            ),
        },
        {
            "role": "user",
            "content": task_prompt(
                statement=statement, target=attempt.target, entrypoint=entrypoint, language=language
            ),
        },
    ]


def attempt_message(attempt: Attempt) -> str:
    """The wrong kernel, then the judge's verdict in the feedback template the loops use."""
    from warpgym.prompts import feedback_prompt

    language = _task_info(attempt.task)[0]
    max_turns = max(attempt.max_turns, attempt.turn + 1)  # a pair always has a turn left for its fix
    verdict = feedback_prompt(
        turn=attempt.turn, max_turns=max_turns, feedback=attempt.feedback, language=language
    )
    return f"{ATTEMPT_INTRO}\n```python\n{(attempt.candidate or '').rstrip()}\n```\n\n{verdict.strip()}\n"


def answer_message(explanation: str, fixed: str) -> str:
    return f"{explanation.strip()}\n\n```python\n{fixed.rstrip()}\n```\n"


def example_messages(pair: Pair, explanation: str, *, join_user: bool = False) -> list[dict[str, str]]:
    system, task = prompt_messages(pair.wrong)
    attempt = attempt_message(pair.wrong)
    if join_user:
        users = [{"role": "user", "content": task["content"].rstrip() + "\n\n" + attempt}]
    else:
        users = [task, {"role": "user", "content": attempt}]
    answer = {"role": "assistant", "content": answer_message(explanation, pair.fixed.candidate or "")}
    return [system, *users, answer]


# ------------------------------------------------------------------------------------------ build
def resolve_runs(runs: list[str | Path], runs_root: Path | None = None) -> list[Path]:
    from warpgym.experiments.rundir import RunError, find_run

    out: list[Path] = []
    for run in runs:
        try:
            path = find_run(run, runs_root)
        except RunError as exc:
            raise FixitError(str(exc)) from None
        if path.resolve() not in [p.resolve() for p in out]:
            out.append(path)
    if not out:
        raise FixitError("no runs given")
    names = Counter(p.name for p in out)
    if any(n > 1 for n in names.values()):
        raise FixitError(
            "two runs share a directory name: " + ", ".join(k for k, n in names.items() if n > 1)
        )
    return out


def build(
    runs: list[str | Path],
    out: str | Path,
    options: BuildOptions | None = None,
    *,
    runs_root: Path | None = None,
    provider: Any | None = None,
    log: Any = None,
) -> BuildResult:
    """Build the data set from ``runs`` into ``out``. ``provider`` overrides ``options.explainer``
    (tests pass a replay provider)."""
    options = options or BuildOptions()
    say = log or (lambda _msg: None)
    started = time.time()
    run_dirs = resolve_runs(runs, runs_root)
    attempts: list[Attempt] = []
    for run_dir in run_dirs:
        attempts += load_attempts(run_dir, slow_below=options.slow_below)
    found = find_pairs(
        attempts,
        adjacent_only=options.adjacent_only,
        cross_model=options.cross_model,
        slow_below=options.slow_below,
        similarity=similarity,
    )
    say(f"{len(attempts)} turns in {len(run_dirs)} run(s); {len(found.pairs)} pair(s) found")
    unique, dup_drops = deduplicate(found.pairs, options.near_duplicate)
    kept, cap_drops = balance(unique, options.caps)
    drops = dup_drops + cap_drops
    groups = split_groups(
        kept,
        val_fraction=options.val_fraction,
        seed=options.seed,
        by=options.split_by,
        val_groups=options.val_groups,
    )
    key = group_key(options.split_by)
    notes = []
    missing = sorted(set(options.val_groups or []) - set(groups))
    if missing:
        notes.append(f"--val-tasks named {', '.join(missing)}, which no kept pair has")
    if groups and "validation" not in groups.values():
        notes.append("no validation split (one task only, or --val-fraction 0)")

    if provider is None and options.explainer:
        from warpgym.agents import make_provider

        provider = make_provider(options.explainer, **options.explainer_params)
    examples = []
    for n, pair in enumerate(sorted(kept, key=lambda p: (p.task, KINDS.index(p.kind), p.id)), 1):
        statement = _task_info(pair.task)[2] or (prompt_messages(pair.wrong)[1]["content"])
        if provider is not None:
            say(f"explaining {n}/{len(kept)}: {pair.task} ({pair.kind})")
        ex = explain(pair, statement, provider, options.explainer or "")
        examples.append(
            Example(
                pair,
                groups[key(pair)],
                example_messages(pair, ex.text, join_user=options.join_user),
                ex.text,
                ex.source,
                ex.note,
            )
        )

    out = Path(out)
    report = _report(run_dirs, attempts, found, drops, examples, options, time.time() - started)
    report["notes"] = notes
    write(out, examples, drops, report)
    return BuildResult(out, examples, drops, report)


# ------------------------------------------------------------------------------------------ output
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


def _report(
    run_dirs: list[Path],
    attempts: list[Attempt],
    found: Any,
    drops: list[Drop],
    examples: list[Example],
    options: BuildOptions,
    seconds: float,
) -> dict[str, Any]:
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


# ------------------------------------------------------------------------------------------ text
def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _kind_table(report: dict[str, Any]) -> str:
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
    return _table(["error kind", *SPLITS, "total"], rows)


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
        _kind_table(report),
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
        parts.append(_table(["pair", "task", "kind", "source", "reason", "detail"], rows))
        if len(report["drops"]) > 500:
            parts.append(f"\n... and {len(report['drops']) - 500} more (report.json has them all).")
    if report.get("notes"):
        parts.append("\n## Notes\n")
        parts += [f"- {note}" for note in report["notes"]]
    if report["explanation_notes"]:
        parts.append("\n## Explanation fallbacks\n")
        parts += [f"- {n['id']}: {n['note']}" for n in report["explanation_notes"]]
    return "\n".join(parts) + "\n"


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
        _kind_table(report),
        "",
        "### By task\n",
        _table(["task", "split", *KINDS, "total"], task_rows) if task_rows else "(no examples)",
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


__all__ = [
    "ATTEMPT_INTRO",
    "BuildOptions",
    "BuildResult",
    "Example",
    "FixitError",
    "answer_message",
    "attempt_message",
    "build",
    "card",
    "compare_config",
    "example_messages",
    "hf_row",
    "openai_row",
    "prompt_messages",
    "resolve_runs",
]
