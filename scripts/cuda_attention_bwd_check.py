"""The hand-written CUDA attention backward on a GPU: correct at every shape, how fast against cuDNN.

    python3 scripts/cuda_attention_bwd_check.py [--out DIR] [--budget 140]

Builds the shipped reference (tasks/solutions/ptx/attention-bwd-cuda and -causal-cuda, its module run with its
attachment installed, as the judge's worker runs a candidate) once per variant (defines over the shipped
ones; {} is the shipped kernel). Each job runs in a child process of its own, so a trap, an illegal
instruction or a hang is a row, not the end of the run: the correctness of a variant at (B, H, S) = (1, 2,
256), (2, 3, 1024) and the bench case (4, 32, 4096), full and causal, against an fp32 backward built from
torch's flash forward (cuDNN's own error on the same inputs beside it; on a failure, where: per 64-row
block, 64-column half, head and column group), or its time at the bench case (median of 20 calls after a
warm-up, CUDA events) and cuDNN's, in TFLOP/s (2.5 forwards, half for causal) and as a ratio. Writes
cuda_attention_bwd_check.json under --out (default $OUT, else the cwd) and prints it.

With --ab I J ..., the variants I, J, ... and cuDNN are instead timed side by side in one process, in
rounds (a block of calls of each, the order rotated from round to round), so that the drift of a call
moves all of them alike: each variant's ratio to cuDNN and to the shipped kernel is the median of the
per-round ratios with its order-statistics 95% interval.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import subprocess
import sys
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the task's cuDNN baseline: tasks/ptx/attention.py
FOLDERS = {False: "attention-bwd-cuda", True: "attention-bwd-causal-cuda"}

VARIANTS = [
    {},                                # shipped: STAGES 2, EARLY_DV 0, DQ_TMA 1 (TMA reduce-add), AUX_BULK 0
    {"EARLY_DV": 1},                   # dV issued as soon as P^T is packed
    {"DQ_TMA": 0},                     # dQ by red.global.add.v2.f32
    {"DQ_TMA": 0, "DQ_RED": 2},        # by red.global.add.v4.f32 after a lane-pair shuffle
    {"AUX_BULK": 1},                   # the delta and dQ-conversion passes on bulk copies
    {"STAGES": 3},
    {"DS_KMAJOR": 1},                  # dQ without the transposed-A descriptor
    {"EARLY_DV": 1, "AUX_BULK": 1},    # shipped until 2026-12-07
    {"Q_ROTATE": 1},                   # the full mask's key blocks start their query loops spread out
]
SMALL = [(1, 2, 256), (2, 3, 1024)]
BENCH = (4, 32, 4096)
D = 128
ATOL = RTOL = 2e-2
AB: list[int] = []
"""The variants --ab times side by side (set from the command line, in the parent and each child)."""


def jobs() -> list[dict]:
    """In order of importance (the budget may cut the tail): cuDNN's time (the ratios need it), then each
    variant's correctness followed by its time."""
    if AB:
        return [{"kind": "ab", "variants": AB}]
    out: list[dict] = [{"kind": "time_cudnn"}]
    for i in range(len(VARIANTS)):
        out += [{"kind": "correct", "variant": i, "small_only": i > 0}, {"kind": "time", "variant": i}]
    return out


def backward(causal: bool, defines: dict):
    """The shipped reference's kernels built with ``defines`` over its own: a function of (q, k, v, o, lse,
    do) returning (dq, dk, dv)."""
    from warpgym.env.candidate import Candidate
    from warpgym.env.toolchain import attachments

    folder = ROOT / "tasks" / "solutions" / "ptx" / FOLDERS[causal]
    candidate = Candidate.from_path(folder)
    attachments.install(candidate.attachments)
    namespace: dict = {"__name__": "candidate"}
    exec(compile(candidate.source, str(folder / f"{folder.name}.py"), "exec"), namespace)  # noqa: S102 - ours
    config, kernels = namespace["build"]("sm_90a", defines)
    return lambda *args: namespace["launch"](config, kernels, *args)


def make_inputs(b, h, s, causal, seed=0):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v, do = (torch.randn((b, h, s, D), generator=g, device="cuda").to(torch.bfloat16) for _ in range(4))
    o, lse = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False)[:2]
    return q, k, v, o.contiguous(), lse.float().contiguous(), do


def reference(q, k, v, o, lse, do, causal, heads_per_chunk=8):
    """fp32 dq, dk, dv from the given o and lse (natural log), a few heads at a time."""
    import torch
    b, h, s, d = q.shape
    scale = 1.0 / math.sqrt(d)
    outs = [torch.empty((b * h, s, d), dtype=torch.float32, device=q.device) for _ in range(3)]
    qf, kf, vf, of, dof = (t.float().reshape(b * h, s, d) for t in (q, k, v, o, do))
    lf = lse.float().reshape(b * h, s)
    mask = torch.triu(torch.ones((s, s), dtype=torch.bool, device=q.device), 1) if causal else None
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for c0 in range(0, b * h, heads_per_chunk):
            sl = slice(c0, c0 + heads_per_chunk)
            sc = torch.bmm(qf[sl], kf[sl].transpose(1, 2)) * scale
            p = torch.exp(sc - lf[sl, :, None])
            if mask is not None:
                p = p.masked_fill(mask, 0.0)
            del sc
            outs[2][sl] = torch.bmm(p.transpose(1, 2), dof[sl])
            dp = torch.bmm(dof[sl], vf[sl].transpose(1, 2))
            delta = (of[sl] * dof[sl]).sum(-1)
            ds = p * (dp - delta[:, :, None])
            del p, dp
            outs[0][sl] = torch.bmm(ds, kf[sl]) * scale
            outs[1][sl] = torch.bmm(ds.transpose(1, 2), qf[sl]) * scale
            del ds
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    return [x.reshape(b, h, s, d) for x in outs]


def compare(name, got, ref, detail=True):
    import torch
    got = got.float()
    err = (got - ref).abs()
    nan = int(torch.isnan(got).sum().item())
    max_err = float(err.nan_to_num(float("inf")).max().item())
    max_ref = float(ref.abs().max().item())
    bad = err.nan_to_num(float("inf")) > ATOL + RTOL * ref.abs()
    out = {"max_abs_err": max_err, "max_abs_ref": max_ref, "rel_err": max_err / max(max_ref, 1e-30),
           "mean_abs_err": float(err.nan_to_num(0).mean().item()), "nan": nan,
           "bad_frac": float(bad.float().mean().item())}
    out["pass"] = bool(nan == 0 and out["rel_err"] < 2e-2 and out["bad_frac"] < 1e-3)
    if detail and not out["pass"]:
        b, h, s, d = ref.shape
        e = err.nan_to_num(float("inf"))
        rows = e.amax(dim=(0, 1, 3)).reshape(s // 64, 64).amax(1)
        rref = ref.abs().amax(dim=(0, 1, 3)).reshape(s // 64, 64).amax(1)
        out["err_per_64row_block"] = [round(float(x), 5) for x in rows[:128]]
        out["ref_per_64row_block"] = [round(float(x), 5) for x in rref[:128]]
        out["err_per_64col_half"] = [float(e[..., :64].max()), float(e[..., 64:].max())]
        out["err_per_head"] = [round(float(x), 5) for x in e.amax(dim=(2, 3)).flatten()[:64]]
        # within the first bad 64-row block: per row mod 64 and per column mod 16 (fragment-layout hints)
        blk = int((rows > ATOL + RTOL * rref).float().argmax().item())
        sub = e[:, :, 64 * blk: 64 * blk + 64, :]
        out["first_bad_block"] = blk
        out["err_by_row_in_block"] = [round(float(x), 5) for x in sub.amax(dim=(0, 1, 3))]
        by16 = sub.reshape(*sub.shape[:3], 8, 16).amax(dim=(0, 1, 2, 3))
        by8 = sub.reshape(*sub.shape[:3], 16, 8).amax(dim=(0, 1, 2, 4))
        out["err_by_col_mod16"] = [round(float(x), 5) for x in by16]
        out["err_by_col_block8"] = [round(float(x), 5) for x in by8]
    return out


def run_correct(job):
    import torch
    defines = VARIANTS[job["variant"]]
    res = {"defines": defines, "cases": []}
    shapes = SMALL + ([] if job.get("small_only") else [BENCH])
    for causal in (False, True):
        for (b, h, s) in shapes:
            case = {"causal": causal, "shape": [b, h, s, D]}
            try:
                q, k, v, o, lse, do = make_inputs(b, h, s, causal)
                t0 = time.time()
                dq, dk, dv = backward(causal, defines)(q, k, v, o, lse, do)
                torch.cuda.synchronize()
                case["first_call_s"] = round(time.time() - t0, 3)
                ref = reference(q, k, v, o, lse, do, causal)
                for name, got, r in zip(("dq", "dk", "dv"), (dq, dk, dv), ref, strict=True):
                    case[name] = compare(name, got, r)
                case["pass"] = all(case[n]["pass"] for n in ("dq", "dk", "dv"))
                try:   # calibration: cuDNN's error against the same reference
                    from tasks.ptx.attention import _cudnn_backward
                    cd = _cudnn_backward(q, k, v, o, lse, do, causal)
                    case["cudnn_rel_err"] = {n: compare(n, g, r, detail=False)["rel_err"]
                                             for n, g, r in zip(("dq", "dk", "dv"), cd, ref, strict=True)}
                    del cd
                except Exception as e:  # noqa: BLE001
                    case["cudnn_rel_err"] = f"error: {e!r}"[:300]
                del ref
            except Exception as e:  # noqa: BLE001
                case["error"] = traceback.format_exc()[-2000:]
                case["pass"] = False
                res["cases"].append(case)
                if "CUDA" in repr(e) or "cuda" in repr(e):
                    break    # a sticky CUDA error: the rest of this process cannot run
                continue
            res["cases"].append(case)
            torch.cuda.empty_cache()
    res["pass"] = all(c.get("pass") for c in res["cases"])
    return res


def time_fn(fn, warmup=5, reps=20, before=None):
    """Median and fastest ms of ``reps`` calls; ``before`` (an L2 flush) runs ahead of each, untimed."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        if before is not None:
            before()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2], times[0]


def flops(b, h, s, causal):
    full = 4 * b * h * s * s * D
    return 2.5 * (full / 2 if causal else full)


def run_time(job):
    res = {}
    b, h, s = BENCH
    for causal in (False, True):
        try:
            q, k, v, o, lse, do = make_inputs(b, h, s, causal)
            if job["kind"] == "time_cudnn":
                from tasks.ptx.attention import _cudnn_backward
                fn = lambda a=(q, k, v, o, lse, do, causal): _cudnn_backward(*a)  # noqa: E731
            else:
                defines = VARIANTS[job["variant"]]
                res["defines"] = defines
                run = backward(causal, defines)
                fn = lambda a=(q, k, v, o, lse, do), r=run: r(*a)  # noqa: E731
            med, best = time_fn(fn)
            res[f"causal{int(causal)}"] = {"median_ms": round(med, 4), "min_ms": round(best, 4),
                                           "tflops": round(flops(b, h, s, causal) / med / 1e9, 1)}
        except Exception as e:  # noqa: BLE001
            res[f"causal{int(causal)}"] = {"error": traceback.format_exc()[-1500:]}
            if "CUDA" in repr(e) or "cuda" in repr(e):
                break
    return res


def run_ab(job, rounds=40, block=4):
    """Each variant of ``job`` and cuDNN, a block of ``block`` calls each per round (the median call of
    the block counts), the order rotated every round; per-round ratios summarised by their median."""
    from warpgym.env.judge.ratios import median_interval

    from tasks.ptx.attention import _cudnn_backward
    res: dict = {"variants": [VARIANTS[i] for i in job["variants"]], "rounds": rounds, "block": block}
    b, h, s = BENCH
    for causal in (False, True):
        args = make_inputs(b, h, s, causal)
        sides = [lambda a=args, c=causal: _cudnn_backward(*a, c)]
        sides += [lambda a=args, r=backward(causal, VARIANTS[i]): r(*a) for i in job["variants"]]
        for fn in sides:
            time_fn(fn, warmup=3, reps=3)
        times: list[list[float]] = [[] for _ in sides]
        for r in range(rounds):
            for k in range(len(sides)):
                side = (k + r) % len(sides)
                times[side].append(time_fn(sides[side], warmup=1, reps=block)[0])
        vendor, shipped = times[0], times[1]
        mask = {"cudnn_ms": round(sorted(vendor)[rounds // 2], 4), "variants": []}
        for defines, mine in zip(res["variants"], times[1:], strict=True):
            ms = sorted(mine)[rounds // 2]
            vs_cudnn = median_interval([v / m for v, m in zip(vendor, mine, strict=True)])
            vs_shipped = median_interval([t / m for t, m in zip(shipped, mine, strict=True)])
            mask["variants"].append({
                "defines": defines, "median_ms": round(ms, 4),
                "tflops": round(flops(b, h, s, causal) / ms / 1e9, 1),
                "vs_cudnn": [round(x, 4) for x in (vs_cudnn.median, vs_cudnn.low, vs_cudnn.high)],
                "vs_shipped": [round(x, 4) for x in (vs_shipped.median, vs_shipped.low, vs_shipped.high)]})
        res[f"causal{int(causal)}"] = mask
        del args, sides
    return res


def child(index: int, out_dir: pathlib.Path) -> None:
    job = jobs()[index]
    t0 = time.time()
    try:
        import torch
        res = {"job": job, "device": torch.cuda.get_device_name()}
        runner = {"correct": run_correct, "ab": run_ab}.get(job["kind"], run_time)
        res.update(runner(job))
    except Exception:  # noqa: BLE001
        res = {"job": job, "error": traceback.format_exc()[-3000:]}
    res["seconds"] = round(time.time() - t0, 1)
    (out_dir / f"part_{index}.json").write_text(json.dumps(res, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--job", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--budget", type=float, default=140.0, help="seconds for the whole check")
    ap.add_argument("--ab", type=int, nargs="+", default=[], metavar="VARIANT",
                    help="time these variants (indices into VARIANTS; 0, the shipped one, always) and cuDNN "
                         "side by side")
    args = ap.parse_args()
    AB[:] = [0] + [i for i in args.ab if i != 0] if args.ab else []
    out_dir = pathlib.Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    parts = out_dir / "cuda_attention_bwd_parts"  # one file a job; the report gathers them
    parts.mkdir(exist_ok=True)
    if args.job is not None:
        child(args.job, parts)
        return
    started = time.time()
    results = []
    limits = {"correct": 50, "time": 22, "time_cudnn": 22, "ab": args.budget}
    for i, job in enumerate(jobs()):
        left = args.budget - (time.time() - started)
        if left < 8:
            results.append({"job": job, "skipped": "out of time"})
            continue
        limit = min(limits[job["kind"]], left)
        part = parts / f"part_{i}.json"
        try:
            ab = ["--ab", *map(str, AB)] if AB else []
            proc = subprocess.run([sys.executable, __file__, "--job", str(i), "--out", str(out_dir), *ab],
                                  capture_output=True, text=True, timeout=limit, check=False, cwd=str(ROOT))
            rc, tail = proc.returncode, (proc.stdout + proc.stderr)[-1500:]
        except subprocess.TimeoutExpired as e:
            rc, tail = "timeout", str((e.stdout or b"")[-500:]) + str((e.stderr or b"")[-1000:])
        if part.exists():
            res = json.loads(part.read_text())
        else:
            res = {"job": job, "error": "no result file"}
        res["rc"] = rc
        if rc != 0:
            res["log_tail"] = tail
        results.append(res)
        print(f"[{time.time() - started:6.1f}s] job {i} {job} rc={rc}", flush=True)

    summary: dict = {"cudnn": None, "variants": []}
    summary["ab"] = [{k: r.get(k) for k in ("causal0", "causal1")} for r in results
                     if r.get("job", {}).get("kind") == "ab"]
    for r in results:
        if r.get("job", {}).get("kind") == "time_cudnn":
            summary["cudnn"] = {k: r.get(k) for k in ("causal0", "causal1")}
    for r in results:
        if r.get("job", {}).get("kind") == "time":
            row = {"defines": VARIANTS[r["job"]["variant"]]}
            for c in ("causal0", "causal1"):
                mine, ven = (r.get(c) or {}), ((summary["cudnn"] or {}).get(c) or {})
                row[c] = mine.get("tflops", mine.get("error", "n/a"))
                if "median_ms" in mine and "median_ms" in ven:
                    row[c + "_ratio_vs_cudnn"] = round(ven["median_ms"] / mine["median_ms"], 3)
            summary["variants"].append(row)
    summary["correct"] = [
        {"defines": VARIANTS[r["job"]["variant"]], "pass": r.get("pass"),
         "cases": [(c.get("causal"), c.get("shape"), c.get("pass")) for c in r.get("cases", [])]}
        for r in results if r.get("job", {}).get("kind") == "correct"]
    report = {"summary": summary, "results": results, "seconds": round(time.time() - started, 1)}
    text = json.dumps(report, indent=1)
    (out_dir / "cuda_attention_bwd_check.json").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
