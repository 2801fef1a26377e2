"""The hand-written CUDA reference of ptx/gemm-bf16 (or -fp8) on a GPU: correct, how fast against the
vendor library, arch-verified.

    python3 scripts/cuda_gemm_check.py [--dtype bf16|fp8] [--out DIR] [--variants JSON] [--reps 30]
        [--no-eval]

Builds the reference's kernel through warpgym.loader exactly as the judge's worker does (its module run with
its attachments installed), once per tile variant (defines over the shipped ones; the first variant is the
shipped one), each in a child process of its own, so a hang or a fault in one variant is a row, not the end
of the run. Per variant: the result against an fp32 torch.matmul at the bench shape and at odd shapes (M, N,
K multiples of 16 but not of the tiles), the output's memory filled with NaN first so unwritten elements
show, then the time at the bench shape against cuBLAS (torch.matmul; for fp8 cuBLASLt through
torch._scaled_mm), both through the evaluator's timing (L2 flushed before each call, inputs rotated), in
alternating rounds. Then the shipped folder through ``warpgym eval ptx/gemm-<dtype> <folder> --device cuda
--json``: correct, and the required features present AND executed. Writes cuda_gemm_check.json (and
eval.json) under --out, default $OUT, else the cwd.
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
DTYPE = "bf16"
"""The operand type, set from --dtype in main (each variant's child process is given the same flag)."""


def _folder() -> Path:
    return ROOT / "tasks" / "solutions" / "ptx" / f"gemm-{DTYPE}-cuda"

BENCH = (8192, 7168, 5120)
ODD = [(272, 208, 336), (1040, 528, 1104), (16, 1024, 2048), (144, 272, 80), (128, 256, 64),
       (4096, 4096, 4096), (8192 - 16, 7168 + 16, 5120 - 48)]
VARIANTS = [{}, {"GROUP_M": 8}, {"GROUP_M": 32}, {"BN": 128, "STAGES": 6, "GROUP_M": 16}]
"""Defines over the shipped ones (sm_90a: BN 256, STAGES 4, INFLIGHT 1, GROUP_M 16); {} is the shipped
kernel."""
ATOL = RTOL = 2e-2
REL_L2 = 1e-2
HANG_SECONDS = 20.0


def _solution() -> dict:
    """The reference's module, run as the worker runs a candidate: its attachments installed first."""
    from warpgym.env.candidate import Candidate
    from warpgym.env.toolchain import attachments

    folder = _folder()
    candidate = Candidate.from_path(folder)
    attachments.install(candidate.attachments)
    namespace: dict = {"__name__": "candidate"}
    exec(compile(candidate.source, str(folder / f"gemm-{DTYPE}-cuda.py"), "exec"), namespace)  # noqa: S102
    return namespace


def _inputs(m: int, n: int, k: int, generator=None) -> dict:
    """The task's operands: bf16 N(0, 1), or e4m3 of 4 N(0, 1) with per-tensor scales."""
    import torch

    if DTYPE == "bf16":
        return {"a": torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=generator),
                "b": torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=generator)}
    a, b = (4 * torch.randn(rows, k, device="cuda", generator=generator) for rows in (m, n))
    scales = 0.02 + 0.03 * torch.rand(2, device="cuda", generator=generator)
    return {"a": a.clamp(-448, 448).to(torch.float8_e4m3fn), "b": b.clamp(-448, 448).to(torch.float8_e4m3fn),
            "scale_a": scales[:1].clone(), "scale_b": scales[1:].clone()}


def _exact(x: dict):
    """The answer in fp32 from the same operands."""
    out = x["a"].float() @ x["b"].float().T
    return out * x["scale_a"] * x["scale_b"] if DTYPE == "fp8" else out


def _vendor(**x):
    import torch

    if DTYPE == "bf16":
        return torch.matmul(x["a"], x["b"].T)
    return torch._scaled_mm(x["a"], x["b"].T, scale_a=x["scale_a"], scale_b=x["scale_b"],
                            out_dtype=torch.bfloat16)


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
        time.sleep(0.01)
    torch.cuda.synchronize()


def _check(launch, m: int, n: int, k: int, seed: int) -> dict:
    import torch

    x = _inputs(m, n, k, torch.Generator(device="cuda").manual_seed(seed))
    poison = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    del poison  # the caching allocator hands the NaN-filled block to the output: unwritten elements stay NaN
    c = launch(**x)
    _wait(f"{m}x{n}x{k}")
    ref = _exact(x)
    diff = (c.float() - ref).abs()
    bad = ~(diff <= ATOL + RTOL * ref.abs())  # NaN counts as bad
    rel_l2 = (torch.linalg.vector_norm(c.float() - ref) / torch.linalg.vector_norm(ref)).item()
    row = {"shape": [m, n, k], "max_abs_err": diff.max().item(), "rel_l2": rel_l2,
           "bad": int(bad.sum().item()), "nan": int(torch.isnan(c).sum().item())}
    row["ok"] = row["bad"] == 0 and rel_l2 <= REL_L2
    if row["bad"]:
        rows, cols = bad.nonzero(as_tuple=True)
        row["first_bad"] = [[int(r), int(q), c[r, q].item(), ref[r, q].item()] for r, q in
                            zip(rows[:4].tolist(), cols[:4].tolist(), strict=True)]
        row["bad_rows"] = [int(rows.min()), int(rows.max())]
        row["bad_cols"] = [int(cols.min()), int(cols.max())]
    return row


def child(defines: dict, reps: int, rounds: int) -> dict:
    """One variant: build, check, time. Prints its JSON as the last line."""
    import torch
    from warpgym.env.common.timing import time_callable

    from warpgym import loader

    namespace = _solution()
    target = loader.default_target()
    started = time.perf_counter()
    config, kernel = namespace["build"](target, defines)
    record = kernel.module.record
    out = {"defines": config["defines"], "target": target,
           "compile_s": round(time.perf_counter() - started, 2), "registers": kernel.info.registers,
           "spills": kernel.info.spills, "shared": config["shared"],
           "warnings": record.warnings, "sass": {f: n for f, n in kernel.info.sass_counts.items() if n}}

    def gemm(**x: torch.Tensor) -> torch.Tensor:
        return namespace["launch"](config, kernel, *x.values())

    out["checks"] = [_check(gemm, m, n, k, seed) for seed, (m, n, k) in enumerate([BENCH, *ODD])]
    out["correct"] = all(c["ok"] for c in out["checks"])
    print(json.dumps({"checked": out["correct"]}), flush=True)
    if not out["correct"]:
        return out
    m, n, k = BENCH
    inputs = [_inputs(m, n, k) for _ in range(3)]
    flops = 2 * m * n * k
    gemm(**inputs[0])
    _wait("bench warm-up")
    ours, cublas = [], []
    for _ in range(rounds):
        cublas.append(time_callable(_vendor, inputs, warmup=5, reps=reps)["median_ms"])
        ours.append(time_callable(gemm, inputs, warmup=5, reps=reps)["median_ms"])
    ratios = [c / o for c, o in zip(cublas, ours, strict=True)]
    out["timing"] = {"ms": ours, "cublas_ms": cublas, "vs_cublas": ratios,
                     "vs_cublas_median": statistics.median(ratios),
                     "tflops": flops / statistics.median(ours) / 1e9,
                     "cublas_tflops": flops / statistics.median(cublas) / 1e9}
    return out


def _run_child(defines: dict, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--child", json.dumps(defines), "--reps", str(args.reps),
           "--rounds", str(args.rounds), "--dtype", DTYPE]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.child_timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"defines": defines, "error": f"timed out after {args.child_timeout} s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    last = json.loads(lines[-1]) if lines else {}
    if proc.returncode != 0 or "defines" not in last or "target" not in last:
        return {"defines": defines, "returncode": proc.returncode, "last": last,
                "error": (proc.stderr or proc.stdout)[-3000:]}
    return last


def _eval(out_dir: Path, timeout: int) -> dict:
    cmd = [sys.executable, "-m", "warpgym.experiments.cli", "eval", f"ptx/gemm-{DTYPE}", str(_folder()),
           "--device", "cuda", "--json", "--verbose"]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired as exc:  # the stages it reached say where it stalled
        stages = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or ""
        (out_dir / "eval.log").write_text(stages)
        return {"error": f"timed out after {timeout} s", "command": " ".join(cmd), "stages": stages[-2000:]}
    (out_dir / "eval.json").write_text(proc.stdout)
    (out_dir / "eval.log").write_text(proc.stderr)
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"returncode": proc.returncode, "error": (proc.stderr or proc.stdout)[-3000:]}
    shown = ("wgmma", "tma", "mbarrier", "setmaxnreg", "tcgen05")
    features = {f: (result.get("instructions") or {}).get(f) for f in shown}
    return {"returncode": proc.returncode, "seconds": round(time.perf_counter() - started, 1),
            "correct": result.get("correct"), "arch_verified": result.get("arch_verified"),
            "required_features_met": result.get("required_features_met"),
            "missing_features": result.get("missing_features"), "speedup": result.get("speedup"),
            "instructions": features, "feedback": result.get("feedback", "")[:4000]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dtype", choices=("bf16", "fp8"), default="bf16")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "."))
    parser.add_argument("--variants", default=None, help="JSON list of define dicts (default: a small sweep)")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3, help="alternating cuBLAS / kernel timing rounds")
    parser.add_argument("--child-timeout", type=int, default=120)
    parser.add_argument("--eval-timeout", type=int, default=300)
    parser.add_argument("--no-eval", action="store_true")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global DTYPE
    DTYPE = args.dtype
    if args.child is not None:
        print(json.dumps(child(json.loads(args.child), args.reps, args.rounds), default=str), flush=True)
        return 0

    import torch

    if not torch.cuda.is_available():
        print("no CUDA GPU here: this script runs the CUDA GEMM reference on a GPU", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "cuda_gemm_check.json"
    report: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "variants": []}
    started = time.perf_counter()
    for defines in json.loads(args.variants) if args.variants else VARIANTS:
        row = _run_child(defines, args)
        report["variants"].append(row)
        path.write_text(json.dumps(report, indent=1, default=str))
        timing = row.get("timing") or {}
        print(f"{json.dumps(defines)}: correct {row.get('correct')}, "
              f"{timing.get('tflops', 0):.0f} TFLOP/s, {timing.get('vs_cublas_median', 0):.3f}x cuBLAS "
              f"({timing.get('cublas_tflops', 0):.0f}) {row.get('error', '')[:400]}", flush=True)
    if not args.no_eval:
        report["eval"] = _eval(args.out, args.eval_timeout)
        path.write_text(json.dumps(report, indent=1, default=str))
        e = report["eval"]
        executed = {f: (v or {}).get("executed") for f, v in (e.get("instructions") or {}).items()}
        print(f"warpgym eval: correct {e.get('correct')}, arch-verified {e.get('arch_verified')}, "
              f"speedup {e.get('speedup')}, executed {executed}", flush=True)
    report["seconds"] = round(time.perf_counter() - started, 1)
    path.write_text(json.dumps(report, indent=1, default=str))
    shipped = report["variants"][0]
    ok = bool(shipped.get("correct")) and (args.no_eval or bool(report["eval"].get("arch_verified")))
    print(f"wrote {path} in {report['seconds']} s; shipped variant {'passes' if ok else 'FAILS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
