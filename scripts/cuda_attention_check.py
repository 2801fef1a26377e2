"""The hand-written CUDA attention references on a GPU: correct, how fast against cuDNN and flash attention.

    python3 scripts/cuda_attention_check.py [--out DIR] [--variants JSON] [--tasks full,causal]
                                            [--reps 20] [--rounds 3] [--budget 100] [--eval]

Builds each reference's kernel through warpgym.loader exactly as the judge's worker does (its module run
with its attachments installed), once per pipeline variant (defines over the shipped ones; the first is
the shipped kernel) and task (ptx/attention-fwd, ptx/attention-fwd-causal), each pair in a child process
of its own, so a hang, a fault or a launch error is a row, not the end of the run. Per row: O and LSE at
every dev, heldout and bench shape against fp32 math (the outputs' memory filled with NaN first so
unwritten elements show; each shape's failure is reported and the next shape still runs, until a CUDA
error poisons the process), then, if all were right, the time at the bench shape against cuDNN's fused
attention (the task's baseline) and PyTorch's flash attention, through the evaluator's timing (L2 flushed
before each call, inputs rotated), in alternating rounds. Variants stop being started once --budget
seconds have passed. With --eval, also ``warpgym eval`` of each shipped folder (Nsight Compute proves
the instructions executed: minutes). Writes cuda_attention_check.json under --out (default $OUT, else
the cwd) after every row, and prints a line per row.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = {"full": ("ptx/attention-fwd", "attention-fwd-cuda"),
         "causal": ("ptx/attention-fwd-causal", "attention-fwd-causal-cuda")}
VARIANTS = [{}, {"OVERLAP": 1, "PINGPONG": 1}, {"OVERLAP": 1}, {"STAGES": 3}]
"""Defines over the shipped ones (sm_90a: STAGES 2, OVERLAP 0, PINGPONG 0); {} is the shipped kernel, the
second the overlapped and pingponged design it was measured against."""
HANG_SECONDS = 15.0


def _folder(which: str) -> Path:
    return ROOT / "tasks" / "solutions" / "ptx" / TASKS[which][1]


def _solution(which: str) -> dict:
    """The reference's module, run as the worker runs a candidate: its attachments installed first."""
    from warpgym.env.candidate import Candidate
    from warpgym.env.toolchain import attachments

    folder = _folder(which)
    candidate = Candidate.from_path(folder)
    attachments.install(candidate.attachments)
    namespace: dict = {"__name__": "candidate"}
    exec(compile(candidate.source, str(folder / f"{folder.name}.py"), "exec"), namespace)  # noqa: S102
    return namespace


def _wait(what: str) -> None:
    """Synchronise, but give up on a kernel that never finishes (a barrier waiting for ever): exit 3."""
    import torch

    done = torch.cuda.Event()
    done.record()
    deadline = time.monotonic() + HANG_SECONDS
    while not done.query():
        if time.monotonic() > deadline:
            print(json.dumps({"hang": what}), flush=True)
            os._exit(3)
        time.sleep(0.005)
    torch.cuda.synchronize()


def _check(attention, case: dict, causal: bool, seed: int, tolerances: tuple) -> dict:
    import torch
    from warpgym.tasks.ptx.attention import attention_forward

    shape = (case["b"], case["h"], case["s"], case["d"])
    row: dict = {"shape": list(shape)}
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    poison = (torch.full(shape, float("nan"), device="cuda", dtype=torch.bfloat16),
              torch.full(shape[:3], float("nan"), device="cuda", dtype=torch.float32))
    del poison   # the caching allocator hands these NaN-filled blocks to the outputs
    o, lse = attention(q, k, v)
    _wait(f"{shape}")
    ref_o, ref_lse = attention_forward(q, k, v, causal)   # fp32 math, O rounded to bf16 like ours
    ref_o, ref_lse = ref_o.float(), ref_lse.float()
    tol_o, tol_lse = tolerances
    diff = (o.float() - ref_o).abs()
    bad = ~(diff <= tol_o.atol + tol_o.rtol * ref_o.abs())   # NaN counts as bad
    lse_diff = (lse - ref_lse).abs()
    lse_bad = ~(lse_diff <= tol_lse.atol + tol_lse.rtol * ref_lse.abs())
    rel_l2 = (torch.linalg.vector_norm(o.float() - ref_o) / torch.linalg.vector_norm(ref_o)).item()
    row.update({"max_abs_err": diff.max().item(), "rel_l2": rel_l2, "bad": int(bad.sum()),
                "nan": int(torch.isnan(o).sum()), "lse_max_abs_err": lse_diff.max().item(),
                "lse_bad": int(lse_bad.sum()), "lse_nan": int(torch.isnan(lse).sum())})
    row["ok"] = row["bad"] == 0 and row["lse_bad"] == 0 and rel_l2 <= tol_o.rel_l2
    if row["bad"]:
        idx = bad.nonzero()[:4].tolist()
        row["first_bad"] = [[*i, o[tuple(i)].item(), ref_o[tuple(i)].item()] for i in idx]
        flat = bad.reshape(-1, shape[2], shape[3]).nonzero()
        row["bad_rows"] = [int(flat[:, 1].min()), int(flat[:, 1].max())]
        row["bad_cols"] = [int(flat[:, 2].min()), int(flat[:, 2].max())]
    if row["lse_bad"]:
        idx = lse_bad.nonzero()[:4].tolist()
        row["first_lse_bad"] = [[*i, lse[tuple(i)].item(), ref_lse[tuple(i)].item()] for i in idx]
    return row


def child(which: str, defines: dict, reps: int, rounds: int) -> dict:
    """One variant of one task: build, check every shape, time. Prints its JSON as the last line."""
    import torch
    from warpgym.env.common.timing import time_callable
    from warpgym.tasks import get_task
    from warpgym.tasks.ptx.attention import _cudnn_forward

    from warpgym import loader

    task_id = TASKS[which][0]
    task = get_task(task_id)
    causal = which == "causal"
    namespace = _solution(which)
    target = loader.default_target()
    started = time.perf_counter()
    shipped = not defines   # the module built it at import
    config, kernel = ((namespace["CONFIG"], namespace["KERNEL"]) if shipped
                      else namespace["build"](target, defines))
    record = kernel.module.record
    out: dict = {"task": task_id, "defines": config["defines"], "target": target,
                 "compile_s": round(time.perf_counter() - started, 2), "registers": kernel.info.registers,
                 "spills": kernel.info.spills, "shared": config["shared"], "warnings": record.warnings,
                 "sass": {f: n for f, n in kernel.info.sass_counts.items() if n}, "checks": []}

    def attention(q, k, v):
        return namespace["launch"](config, kernel, q, k, v)

    tolerances = (task.tolerance("bfloat16"), task.tolerance("float32"))
    for shape_set in ("dev", "heldout", "bench"):
        for i, case in enumerate(task.cases(shape_set)):
            try:
                row = _check(attention, case, causal, 1000 * len(out["checks"]) + i, tolerances)
            except Exception as exc:  # noqa: BLE001 - a launch error is a row; a CUDA fault ends the rows
                row = {"shape": [case["b"], case["h"], case["s"], case["d"]], "ok": False,
                       "error": f"{type(exc).__name__}: {exc}"[:2000]}
                out["checks"].append({"set": shape_set, **row})
                try:
                    torch.cuda.synchronize()
                except Exception:  # noqa: BLE001 - the context is gone: later shapes cannot run
                    out["error"] = "CUDA context lost after " + row["error"][:300]
                    out["correct"] = False
                    return out
                continue
            out["checks"].append({"set": shape_set, **row})
            print(json.dumps({"checked": row["shape"], "ok": row["ok"]}), flush=True)
    out["correct"] = all(c["ok"] for c in out["checks"])
    if not out["correct"]:
        return out
    case = task.cases("bench")[0]
    shape = (case["b"], case["h"], case["s"], case["d"])
    inputs = [{n: torch.randn(shape, device="cuda", dtype=torch.bfloat16) for n in "qkv"} for _ in range(2)]
    flops = task.flops(case)

    def cudnn(q, k, v):
        return _cudnn_forward(q, k, v, causal)

    def flash(q, k, v):
        return torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False)[:2]

    attention(**inputs[0])
    _wait("bench warm-up")
    ours, theirs = [], {"cudnn": [], "flash": []}
    for _ in range(rounds):
        for name, fn in (("cudnn", cudnn), ("flash", flash)):
            theirs[name].append(time_callable(fn, inputs, warmup=3, reps=reps)["median_ms"])
        ours.append(time_callable(attention, inputs, warmup=3, reps=reps)["median_ms"])
    timing: dict = {"ms": ours, "tflops": flops / statistics.median(ours) / 1e9}
    for name, times in theirs.items():
        ratios = [t / o for t, o in zip(times, ours, strict=True)]
        timing.update({f"{name}_ms": times, f"vs_{name}": ratios,
                       f"vs_{name}_median": statistics.median(ratios),
                       f"{name}_tflops": flops / statistics.median(times) / 1e9})
    out["timing"] = timing
    return out


def _run_child(which: str, defines: dict, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--child", json.dumps([which, defines]), "--reps", str(args.reps),
           "--rounds", str(args.rounds)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.child_timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"task": TASKS[which][0], "defines": defines,
                "error": f"timed out after {args.child_timeout} s"}
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    last = lines[-1] if lines else {}
    if proc.returncode != 0 or "defines" not in last:
        return {"task": TASKS[which][0], "defines": defines, "returncode": proc.returncode,
                "progress": lines[-8:], "error": (proc.stderr or proc.stdout)[-3000:]}
    return last


def _eval(which: str, out_dir: Path, timeout: int) -> dict:
    task_id, name = TASKS[which]
    cmd = [sys.executable, "-m", "warpgym.experiments.cli", "eval", task_id, str(_folder(which)), "--device",
           "cuda", "--json"]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s", "command": " ".join(cmd)}
    (out_dir / f"eval-{name}.json").write_text(proc.stdout)
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"returncode": proc.returncode, "error": (proc.stderr or proc.stdout)[-3000:]}
    shown = ("wgmma", "tma", "mbarrier", "setmaxnreg", "tcgen05")
    return {"returncode": proc.returncode, "seconds": round(time.perf_counter() - started, 1),
            "correct": result.get("correct"), "arch_verified": result.get("arch_verified"),
            "missing_features": result.get("missing_features"), "speedup": result.get("speedup"),
            "instructions": {f: (result.get("instructions") or {}).get(f) for f in shown},
            "feedback": result.get("feedback", "")[:4000]}


def _line(row: dict) -> str:
    t = row.get("timing") or {}
    bad = [c["shape"] for c in row.get("checks", []) if not c.get("ok")]
    return (f"{row['task']} {json.dumps(row['defines'])}: correct {row.get('correct')}"
            + (f" (wrong at {bad})" if bad else "")
            + (f", {t['tflops']:.0f} TFLOP/s, {t['vs_cudnn_median']:.3f}x cuDNN ({t['cudnn_tflops']:.0f}), "
               f"{t['vs_flash_median']:.3f}x flash ({t['flash_tflops']:.0f})" if t else "")
            + (f" ERROR {row['error'][:300]}" if row.get("error") else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "."))
    parser.add_argument("--variants", default=None, help="JSON list of define dicts (default: a small sweep)")
    parser.add_argument("--tasks", default="full,causal", help="comma-separated: full, causal")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3, help="alternating baseline / kernel timing rounds")
    parser.add_argument("--budget", type=float, default=100.0,
                        help="start no variant after this many seconds")
    parser.add_argument("--child-timeout", type=int, default=120)
    parser.add_argument("--eval", action="store_true", help="also `warpgym eval` each shipped folder")
    parser.add_argument("--eval-timeout", type=int, default=600)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        which, defines = json.loads(args.child)
        print(json.dumps(child(which, defines, args.reps, args.rounds), default=str), flush=True)
        return 0

    import torch

    if not torch.cuda.is_available():
        print("no CUDA GPU here: this script runs the CUDA attention references on a GPU", file=sys.stderr)
        return 2
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        parser.error(f"unknown tasks {unknown}; use {', '.join(TASKS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "cuda_attention_check.json"
    report: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
    started = time.perf_counter()
    variants = json.loads(args.variants) if args.variants else VARIANTS
    for n, defines in enumerate(variants):
        if report["rows"] and time.perf_counter() - started > args.budget:
            report.setdefault("not_run", []).append(defines)
            continue
        for which in tasks:
            row = {"variant": n, **_run_child(which, defines, args)}
            report["rows"].append(row)
            path.write_text(json.dumps(report, indent=1, default=str))
            print(_line(row), flush=True)
    best: dict = {}
    for row in report["rows"]:
        if row.get("correct") and row.get("timing"):
            if row["task"] not in best or row["timing"]["tflops"] > best[row["task"]]["tflops"]:
                best[row["task"]] = {"defines": row["defines"], "tflops": row["timing"]["tflops"],
                                     "vs_cudnn": row["timing"]["vs_cudnn_median"]}
    report["best"] = best
    if args.eval:
        report["eval"] = {which: _eval(which, args.out, args.eval_timeout) for which in tasks}
        for which, e in report["eval"].items():
            executed = {f: (v or {}).get("executed") for f, v in (e.get("instructions") or {}).items()}
            print(f"warpgym eval {TASKS[which][0]}: correct {e.get('correct')}, arch-verified "
                  f"{e.get('arch_verified')}, speedup {e.get('speedup')}, executed {executed}", flush=True)
    report["seconds"] = round(time.perf_counter() - started, 1)
    path.write_text(json.dumps(report, indent=1, default=str))
    shipped = [r for r in report["rows"] if r["variant"] == 0] if variants and variants[0] == {} else []
    ok = len(shipped) == len(tasks) and all(r.get("correct") for r in shipped)
    print(f"wrote {path} in {report['seconds']} s; best {json.dumps(best)}; shipped variant "
          f"{'passes' if ok else 'FAILS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
