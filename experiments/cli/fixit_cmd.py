"""``warpgym fixit build RUN... --out DIR`` and ``warpgym fixit train DATA --base PATH``.

From an experiment run to a training set, and from the training set to a LoRA adapter: two
commands. See ``warpgym.experiments.fixit`` for what each step does.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import UsageError


def _positive_or_none(text: str) -> int | None:
    if text.lower() in ("none", "0", "off"):
        return None
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("a cap is a positive number, or none")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("fixit", help="fine-tuning data from repaired kernels, and training on it")
    fsub = parser.add_subparsers(dest="fixit_command", metavar="{build,train}", required=True)

    b = fsub.add_parser(
        "build",
        help="pairs of (wrong kernel, log, fixed kernel) from runs -> chat JSONL",
        description="Find every wrong candidate and the later one that fixed it in the runs' "
        "stored episodes, classify, balance and de-duplicate them, explain the fixes and write "
        "chat-format JSONL (OpenAI and Hugging Face layouts), a report and a dataset card.",
    )
    b.add_argument("runs", nargs="+", metavar="RUN", help="run directories (or names under --runs-root)")
    b.add_argument("--out", required=True, metavar="DIR", help="output directory")
    b.add_argument("--runs-root", default="runs", metavar="DIR")
    b.add_argument(
        "--cross-model",
        action="store_true",
        help="also pair failures left unfixed with another model's correct kernel for the task",
    )
    b.add_argument(
        "--adjacent-only",
        action="store_true",
        help="only the failure right before each fix (not every earlier failure of the episode)",
    )
    b.add_argument(
        "--per-task-kind",
        type=_positive_or_none,
        default=4,
        metavar="N",
        help="at most N pairs per (task, error kind) (default 4; none for no cap)",
    )
    b.add_argument("--per-task", type=_positive_or_none, default=None, metavar="N")
    b.add_argument("--per-kind", type=_positive_or_none, default=None, metavar="N")
    b.add_argument(
        "--kind-ratio",
        type=float,
        default=None,
        metavar="R",
        help="no error kind keeps more than R times the pairs of the rarest kind",
    )
    b.add_argument(
        "--max-pairs", type=_positive_or_none, default=None, metavar="N", help="at most N pairs in all"
    )
    b.add_argument(
        "--similarity",
        type=float,
        default=0.9,
        metavar="S",
        help="drop a pair whose wrong and fixed kernels are both at least S alike to a kept pair's "
        "(token shingles, 0..1; default 0.9)",
    )
    b.add_argument(
        "--slow-below",
        type=float,
        default=1.0,
        metavar="X",
        help="a correct kernel under X times the baseline speed counts as a slow failure (default 1)",
    )
    b.add_argument(
        "--val-fraction",
        type=float,
        default=0.2,
        metavar="F",
        help="share of pairs for validation, taken whole tasks at a time (default 0.2)",
    )
    b.add_argument(
        "--val-tasks",
        default=None,
        metavar="A,B",
        help="exactly these tasks (or categories with --split-by category) for validation",
    )
    b.add_argument("--split-by", default="task", choices=["task", "category"])
    b.add_argument("--seed", type=int, default=0)
    b.add_argument(
        "--explainer",
        default=None,
        metavar="SPEC",
        help="a model that writes the explanations (openai:MODEL, anthropic:MODEL, "
        "openai-compatible:MODEL@URL, replay:PATH); without one, a plain template is used",
    )
    b.add_argument(
        "--explainer-param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a call parameter for the explainer (JSON value), e.g. max_tokens=800",
    )
    b.add_argument(
        "--join-user",
        action="store_true",
        help="fold the failed attempt into the task message (chat templates that need alternating roles)",
    )
    b.set_defaults(func=run_build)

    t = fsub.add_parser(
        "train",
        help="supervised fine-tuning with TRL and a PEFT LoRA adapter",
        description="Fine-tune a local model on a `fixit build` output with a LoRA adapter. "
        'Needs the optional extra: pip install "warpgym[fixit]".',
    )
    t.add_argument("data", metavar="DATA", help="a `fixit build` output directory, or one JSONL file")
    t.add_argument(
        "--base", required=True, metavar="PATH", help="local model directory (config, weights, tokenizer)"
    )
    t.add_argument("--out", default=None, metavar="DIR", help="where the adapter goes (default DATA/adapter)")
    t.add_argument("--epochs", type=float, default=3.0)
    t.add_argument(
        "--max-steps", type=int, default=-1, help="stop after N optimiser steps (overrides --epochs)"
    )
    t.add_argument("--lr", type=float, default=2e-4)
    t.add_argument("--batch-size", type=int, default=1)
    t.add_argument("--grad-accum", type=int, default=8)
    t.add_argument("--max-length", type=int, default=8192,
                   help="tokens per example: longer ones are cut, and one whose prompt alone reaches it "
                        "is dropped")
    t.add_argument("--lora-r", type=int, default=16)
    t.add_argument("--lora-alpha", type=int, default=32)
    t.add_argument("--lora-dropout", type=float, default=0.05)
    t.add_argument(
        "--target-modules",
        default="all-linear",
        help="comma-separated module names for LoRA, or all-linear (default)",
    )
    t.add_argument(
        "--chat-template", default=None, metavar="FILE", help="a Jinja chat template to train with"
    )
    t.add_argument("--gradient-checkpointing", action="store_true")
    t.add_argument("--merge", action="store_true", help="also write the merged model to OUT/merged")
    t.add_argument("--seed", type=int, default=0)
    t.set_defaults(func=run_train)


def _params(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--explainer-param {item!r}: write KEY=VALUE")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def run_build(args: argparse.Namespace) -> int:
    from warpgym.agents import ProviderConfigError
    from warpgym.experiments.fixit import BuildOptions, Caps, FixitError, build

    if not 0 <= args.val_fraction < 1:
        raise UsageError("--val-fraction must be in [0, 1)")
    if not 0 < args.similarity <= 1:
        raise UsageError("--similarity must be in (0, 1]")
    options = BuildOptions(
        adjacent_only=args.adjacent_only,
        cross_model=args.cross_model,
        slow_below=args.slow_below,
        near_duplicate=args.similarity,
        caps=Caps(
            per_task_kind=args.per_task_kind,
            per_task=args.per_task,
            per_kind=args.per_kind,
            total=args.max_pairs,
            kind_ratio=args.kind_ratio,
        ),
        val_fraction=args.val_fraction,
        split_by=args.split_by,
        val_groups=[s.strip() for s in args.val_tasks.split(",") if s.strip()] if args.val_tasks else None,
        seed=args.seed,
        explainer=args.explainer,
        explainer_params=_params(args.explainer_param),
        join_user=args.join_user,
    )
    try:
        result = build(
            args.runs,
            Path(args.out),
            options,
            runs_root=Path(args.runs_root),
            log=lambda msg: print(msg, file=sys.stderr),
        )
    except (FixitError, ProviderConfigError) as exc:
        raise UsageError(str(exc)) from None
    r = result.report
    splits = r["splits"]
    print(
        f"Fixit data: {r['kept']} examples ({splits['train']['examples']} train, "
        f"{splits['validation']['examples']} validation) from {sum(r['pairs_found'].values())} pairs found"
    )
    if r["by_kind"]:
        print("  by kind: " + ", ".join(f"{k} {n}" for k, n in r["by_kind"].items()))
    if r["dropped"]:
        print("  dropped: " + ", ".join(f"{n} {why}" for why, n in sorted(r["dropped"].items())))
    if r["explanations"]:
        print("  explanations: " + ", ".join(f"{n} {s}" for s, n in sorted(r["explanations"].items())))
    for note in r["notes"]:
        print(f"  note: {note}")
    print(f"Wrote {result.out}/ (README.md is the dataset card; report.md says what was kept and dropped)")
    return 0


def run_train(args: argparse.Namespace) -> int:
    from warpgym.experiments.fixit import FixitError, TrainOptions, train

    modules = args.target_modules
    targets: list[str] | str = modules if modules == "all-linear" else [m.strip() for m in modules.split(",")]
    options = TrainOptions(
        out=Path(args.out) if args.out else None,
        epochs=args.epochs,
        max_steps=args.max_steps,
        learning_rate=args.lr,
        batch_size=args.batch_size,
        grad_accum=args.grad_accum,
        max_length=args.max_length,
        lora_r=args.lora_r,
        lora_alpha=args.lora_alpha,
        lora_dropout=args.lora_dropout,
        target_modules=targets,
        seed=args.seed,
        merge=args.merge,
        gradient_checkpointing=args.gradient_checkpointing,
        chat_template=args.chat_template,
    )
    try:
        result = train(Path(args.data), Path(args.base), options, log=lambda msg: print(msg, file=sys.stderr))
    except FixitError as exc:
        raise UsageError(str(exc)) from None
    first, last = result.first_loss, result.last_loss
    loss = f"loss {first:.4f} -> {last:.4f}" if first is not None and last is not None else "no loss logged"
    evals = f", validation loss {result.eval_loss:.4f}" if result.eval_loss is not None else ""
    print(f"Trained {result.steps} steps in {result.seconds:.0f} s: {loss}{evals}")
    for note in result.notes:
        print(f"  note: {note}")
    print(f"Adapter: {result.out} (fixit-train.json has the full log)")
    return 0
