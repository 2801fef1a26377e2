"""Where Nsight Compute stalls on a reference (GPU only): one call of its kernel under ncu, several ways.

    python3 scripts/ncu_probe.py [--out DIR] [--solutions gemm-fp8-cuda,gemm-fp8] [--seconds 60]
    python3 scripts/ncu_probe.py --layers | --memcheck [--seconds 60]   # the layer a tool stalls under
    python3 scripts/ncu_probe.py --blocks [--solutions attention-bwd-cuda,attention-fwd-cuda,attention-bwd]

--blocks: how many per-launch blocks the judge's source-page output holds against how many launches ncu
profiled (its raw page, one row a launch) and the program made, under several ncu option sets: where a
launch is printed twice, the judge would count its instructions twice.

For each ptx solution folder, the same program (the folder's module run as the worker runs it, one call at
the dev case the judge profiles) runs: without ncu; under ncu measuring only the kernel's duration (no SASS
patching); under ncu with the judge's per-instruction counts; and last through the judge's own
``profile_candidate`` (the confined worker behind ncu). Each run gets ``--seconds``; printed per run: the
exit status, the seconds, and the last lines of what it printed. Writes ncu_probe.json under --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = r"""
import sys, time, torch
from warpgym.env.candidate import Candidate
from warpgym.env.toolchain import attachments
from warpgym.tasks import Sampler, get_task
task, folder = get_task(sys.argv[1]), sys.argv[2]
candidate = Candidate.from_path(folder)
attachments.install(candidate.attachments)
namespace = {"__name__": "candidate"}
started = time.perf_counter()
exec(compile(candidate.source, folder, "exec"), namespace)
print(f"loaded in {time.perf_counter() - started:.1f} s", flush=True)
case = max(task.cases("dev"), key=task.flops)
inputs = task.make_inputs(case, Sampler(0, task.distributions[0], "cuda"))
from warpgym.env.toolchain.registry import REGISTRY
before = REGISTRY.launch_count
namespace[task.entrypoint](**inputs)
torch.cuda.synchronize()
print(f"returned at {case}; loader launches {REGISTRY.launch_count - before}", flush=True)
"""
NCU_DURATION = ["--clock-control", "none", "--metrics", "gpu__time_duration.sum"]


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _timed(command: list[str], seconds: float) -> dict:
    started = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=seconds, cwd=ROOT)
        rc, said = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc = "timeout"
        said = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                       for x in (exc.stdout, exc.stderr))
    return {"rc": rc, "seconds": round(time.perf_counter() - started, 1), "tail": _tail(said)}


def _judge_profile(task_id: str, folder: Path | None, seconds: float) -> dict:
    from warpgym.env.candidate import Candidate
    from warpgym.env.judge.profile import ProfileError, profile_candidate
    from warpgym.tasks import get_task

    task = get_task(task_id)
    candidate = task.solution_candidate() if folder is None else Candidate.from_path(folder)
    case = max(task.cases("dev"), key=task.flops)
    started = time.perf_counter()
    try:
        prof = profile_candidate(task_id, candidate.source, case, attachments=candidate.attachments,
                                 timeout=seconds)
        said = f"families {prof.families()}"
        rc: int | str = 0
    except ProfileError as exc:
        rc, said = "error", str(exc)
    return {"rc": rc, "seconds": round(time.perf_counter() - started, 1), "tail": said[-1500:]}


def main() -> None:
    from warpgym.env.judge.profile import NCU_METRICS, ncu_path

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--solutions", help="comma-separated ptx solution folders (default: gemm-fp8-cuda,"
                        "gemm-fp8; with --blocks attention-bwd-cuda,attention-fwd-cuda,attention-bwd)")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--layers", action="store_true",
                        help="instead: the judge's profile of math/add, then of ptx/gemm-fp8 with one "
                             "sandbox layer off at a time (which layer ncu cannot work under)")
    parser.add_argument("--memcheck", action="store_true",
                        help="instead: the judge's compute-sanitizer memcheck of math/add with the defaults, "
                             "without the network namespace, and without the sandbox")
    parser.add_argument("--blocks", action="store_true",
                        help="instead: source-page blocks against profiled launches (see the docstring)")
    args = parser.parse_args()
    if args.blocks:
        return _blocks(args)
    if args.memcheck:
        return _memcheck(args)
    if args.layers:
        return _layers(args)
    ncu = ncu_path()
    source_counts = ["--clock-control", "none", "--metrics", NCU_METRICS, "--page", "source", "--csv",
                     "--print-source", "sass"]
    rows = []
    for name in (args.solutions or "gemm-fp8-cuda,gemm-fp8").split(","):
        folder = ROOT / "tasks" / "solutions" / "ptx" / name
        task_id = "ptx/" + name.removesuffix("-cuda")
        program = [sys.executable, "-c", CHILD, task_id, str(folder)]
        runs = {"plain": _timed(program, args.seconds)}
        if ncu:
            runs["ncu duration"] = _timed([ncu, *NCU_DURATION, *program], args.seconds)
            runs["ncu source counts"] = _timed([ncu, *source_counts, *program], args.seconds)
            runs["judge profile_candidate"] = _judge_profile(task_id, folder, args.seconds)
        for how, run in runs.items():
            print(f"== {name}, {how}: rc {run['rc']}, {run['seconds']} s\n{run['tail']}\n", flush=True)
        rows.append({"solution": name, "runs": runs})
        Path(args.out, "ncu_probe.json").write_text(json.dumps(rows, indent=1))


def _block_names(text: str) -> list[str]:
    from warpgym.env.judge.profile import parse_ncu_source_csv

    return [k.name for k in parse_ncu_source_csv(text)]


def _blocks(args: argparse.Namespace) -> None:
    """Per solution and ncu option set: the source page's blocks, the raw page's launches, the program's."""
    from warpgym.env.judge.profile import ncu_path, ncu_source_options

    ncu = ncu_path()
    judge = ncu_source_options()
    variants = {
        "judge's options": judge,
        "one pass metric": ncu_source_options("inst_executed"),
        "application replay": [*judge, "--replay-mode", "application"],
        "no cache control": [*judge, "--cache-control", "none"],
    }
    raw = ["--clock-control", "none", "--target-processes", "all", "--metrics", "gpu__time_duration.sum",
           "--page", "raw", "--csv"]
    rows = []
    for name in (args.solutions or "attention-bwd-cuda,attention-fwd-cuda,attention-bwd").split(","):
        folder = ROOT / "tasks" / "solutions" / "ptx" / name
        task_id = "ptx/" + name.removesuffix("-cuda")
        program = [sys.executable, "-c", CHILD, task_id, str(folder)]
        row: dict = {"solution": name}
        for how, options in {"raw page": raw, **variants}.items():
            started = time.perf_counter()
            try:
                proc = subprocess.run([ncu, *options, *program], capture_output=True, text=True,
                                      timeout=args.seconds, cwd=ROOT)
                said = proc.stdout + proc.stderr
            except subprocess.TimeoutExpired:
                row[how] = {"rc": "timeout"}
                continue
            launches = [ln for ln in said.splitlines() if "loader launches" in ln]
            entry = {"rc": proc.returncode, "seconds": round(time.perf_counter() - started, 1),
                     "program": launches[-1] if launches else _tail(said, 4)}
            if how == "raw page":
                entry["launch_rows"] = sum(1 for ln in said.splitlines() if "gpu__time_duration" not in ln
                                           and ln.count('","') > 5)
                entry["head"] = said[:1500]
            else:
                entry["blocks"] = _block_names(said)
            row[how] = entry
            print(f"== {name}, {how}: {json.dumps(entry)[:600]}", flush=True)
        rows.append(row)
        Path(args.out, "ncu_blocks.json").write_text(json.dumps(rows, indent=1))


LAYERS = ({"sandbox": "off"}, {"network": False}, {"mount": False}, {"drop_uid": False}, {"cgroup": False},
          {"audit": False})


def _layers(args: argparse.Namespace) -> None:
    from warpgym.env.judge import profile

    rows = [{"task": "math/add", "overrides": "defaults",
             **_judge_profile("math/add", None, args.seconds)}]
    print(f"== math/add defaults: rc {rows[0]['rc']}, {rows[0]['seconds']} s\n{rows[0]['tail']}\n",
          flush=True)
    for overrides in LAYERS:
        if overrides == {"sandbox": "off"}:
            os.environ["WARPGYM_NO_SANDBOX"] = "1"
        else:
            os.environ.pop("WARPGYM_NO_SANDBOX", None)
            profile.PROFILER_SANDBOX = overrides
        rows.append({"task": "ptx/gemm-fp8", "overrides": overrides,
                     **_judge_profile("ptx/gemm-fp8", ROOT / "tasks" / "solutions" / "ptx" / "gemm-fp8",
                                      args.seconds)})
        profile.PROFILER_SANDBOX = None
        row = rows[-1]
        print(f"== {row['task']} {row['overrides']}: rc {row['rc']}, {row['seconds']} s\n{row['tail']}\n",
              flush=True)
        Path(args.out, "ncu_layers.json").write_text(json.dumps(rows, indent=1))


def _memcheck(args: argparse.Namespace) -> None:
    """Whether compute-sanitizer, like ncu, cannot reach its target through one of the sandbox's layers."""
    from warpgym.env.judge import profile
    from warpgym.tasks import get_task

    task = get_task("math/add")
    case = task.cases("dev")[0]
    rows = []
    for overrides in ({}, {"network": False}, {"sandbox": "off"}):
        if overrides == {"sandbox": "off"}:
            os.environ["WARPGYM_NO_SANDBOX"] = "1"
        profile.PROFILER_SANDBOX = overrides or None
        started = time.perf_counter()
        try:
            report = profile.memcheck_candidate(task.id, task.solution_source(), case, timeout=args.seconds)
            rc: int | str = 0 if report.ok else report.errors
            said = report.text or report.run.log[-1500:]
        except profile.ProfileError as exc:
            rc, said = "error", str(exc)
        profile.PROFILER_SANDBOX = None
        os.environ.pop("WARPGYM_NO_SANDBOX", None)
        rows.append({"overrides": overrides or "defaults", "rc": rc,
                     "seconds": round(time.perf_counter() - started, 1), "tail": said[-1500:]})
        row = rows[-1]
        print(f"== memcheck {row['overrides']}: rc {rc}, {row['seconds']} s\n{said[-600:]}\n", flush=True)
        Path(args.out, "memcheck_layers.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
