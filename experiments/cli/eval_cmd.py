"""``warpgym eval TASK FILE [--attach F ...]``: judge one candidate and print the verdict.

The candidate is a module file (or ``-``, standard input) with the files named by ``--attach``
carried beside it, or a folder holding exactly one ``.py`` module and its ``.ptx``/``.cu``/``.cuh``
attachments. The module reads an attachment by its bare file name: ``loader.attachment("gemm.ptx")``.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from warpgym.env.candidate import ATTACHMENT_SUFFIXES, Candidate, CandidateError
from warpgym.env.toolchain import targets

from . import UsageError

if TYPE_CHECKING:
    from warpgym.env import EvalResult


EXIT_STATUS = ("exit status: 0 when the candidate is accepted (correct, no policy finding, the required "
               "instructions present); 1 when it is not (rejected, failed to compile, incorrect, or not "
               "checked on this device); 2 on a usage error (unknown task id, missing file, bad option)")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("eval", help="evaluate a candidate module for a task", epilog=EXIT_STATUS)
    parser.add_argument("task_id")
    parser.add_argument("file", help="the candidate module (a .py file), - for standard input, or a folder "
                                     "holding one .py module and its attachments")
    parser.add_argument("--attach", nargs="+", action="extend", default=[], metavar="F",
                        help=f"source files ({', '.join(ATTACHMENT_SUFFIXES)}) carried with the module; it "
                             "reads each by file name with warpgym.loader.attachment(name)")
    parser.add_argument("--target", default="sm_90a", choices=targets.NAMES)
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    parser.add_argument("--shapes", default="dev,heldout",
                        help="comma-separated shape sets to check (dev, heldout, bench); default dev,heldout")
    parser.add_argument("--no-timing", action="store_true", help="skip the timing stage on a GPU")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--input-seed", type=int, default=None, metavar="N",
                        help="draw the inputs from this root instead of a secret one drawn for the "
                             "evaluation; a verdict's input_seed (in --json) replays its inputs")
    parser.add_argument("--allow-torch", action="store_true",
                        help="allow PyTorch calls besides the candidate's kernels (KernelBench's rule; the "
                             "result names the mode and, on a GPU, the share of GPU time in its own kernels)")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="log each stage as it starts, with the time, and every 60 s the judge's "
                             "Python stacks, on standard error")
    parser.set_defaults(func=run)


def _read_text(path: Path, what: str) -> str:
    if not path.is_file():
        raise UsageError(f"no such {what}: {path}")
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise UsageError(f"{what} {path} is not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror}") from None


def read_candidate(file: str, attach: list[str]) -> Candidate:
    """The candidate the user named; every way it cannot be read is a usage error, not a traceback."""
    attachments: dict[str, str] = {}
    for name in attach:
        text = _read_text(Path(name), "attachment file")
        if Path(name).name in attachments:
            raise UsageError(f"two attachments named {Path(name).name!r}")
        attachments[Path(name).name] = text
    path = Path(file)
    try:
        if path.is_dir():
            folder = Candidate.from_path(path)
            clash = sorted(set(folder.attachments) & set(attachments))
            if clash:
                raise UsageError(f"--attach {clash[0]}: the folder {file} already holds a file of that name")
            return Candidate(folder.source, {**folder.attachments, **attachments})
        source = sys.stdin.read() if file == "-" else _read_text(path, "file")
        return Candidate(source, attachments)
    except CandidateError as exc:
        raise UsageError(str(exc)) from None


def json_view(result: dict) -> dict:
    """The documented JSON fields first, then the rest of the result."""
    keys = ("task", "stage", "compiled", "correct", "violations", "errors", "instructions",
            "required_features_met", "timing", "speedup", "feedback")
    return {**{k: result.get(k) for k in keys}, **{k: v for k, v in result.items() if k not in keys}}


def run(args: argparse.Namespace) -> int:
    if not args.verbose:
        return _run(args)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    # where a stalled run waits: every stack, every minute (unless standard error has no descriptor)
    with contextlib.suppress(AttributeError, ValueError, OSError):
        faulthandler.dump_traceback_later(60, repeat=True, file=sys.stderr)
    try:
        return _run(args)
    finally:
        faulthandler.cancel_dump_traceback_later()


def _run(args: argparse.Namespace) -> int:
    from warpgym.env import EvalOptions, evaluate
    from warpgym.tasks import UnknownTaskError, get_task
    from warpgym.tasks.importers import use_configured

    use_configured()
    try:
        task = get_task(args.task_id)
    except UnknownTaskError as exc:
        raise UsageError(str(exc)) from None
    candidate = read_candidate(args.file, args.attach)
    try:
        options = EvalOptions(target=args.target, device=args.device,
                              shape_sets=tuple(s.strip() for s in args.shapes.split(",") if s.strip()),
                              timing=not args.no_timing, allow_torch=args.allow_torch,
                              input_seed=args.input_seed)
        result = evaluate(task, candidate if candidate.attachments else candidate.source, options)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps(json_view(result.to_dict()), indent=1, default=str))
    else:
        print(result.feedback)
        print(f"inputs drawn from --input-seed {result.input_seed}", file=sys.stderr)
    return 0 if accepted(result) else 1


def accepted(result: EvalResult) -> bool:
    """What exit status 0 promises a script: the verdict a model would be told is CORRECT."""
    return result.correct is True and not result.violations and result.required_features_met is not False
