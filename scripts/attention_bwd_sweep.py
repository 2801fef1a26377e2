"""Variant sweep for the ptx/attention-bwd references (goals: 0.90x cuDNN, 0.85x causal).

The shipped kernel (``attn_bwd``) needs no atomics, but recomputes P and dP for dQ: seven tile
products per pair of blocks where five suffice, which by itself caps it near 5/7 of a five-product
kernel. ``attn_bwd_atomic`` takes five and sums dQ in fp32 across key blocks, by a TMA reduction or by
per-element atomics. Two halves, because the PTX is made where Triton's newest compiler is (no GPU
needed) and timed on the H200:

    python scripts/attention_bwd_sweep.py emit .sweep-bwd        # here: PTX of each variant (sm_90a)
    python3 scripts/attention_bwd_sweep.py run .sweep-bwd        # on the H200 (carry .sweep-bwd)

``run`` draws the task's own bench inputs (B=4, H=32, S=4096, D=128, bf16), checks each variant's dQ,
dK, dV against the vendor baseline's (cuDNN through torch SDPA autograd) by relative L2 error, and
times both with the evaluator's timing (``time_callable``: L2 flushed, inputs rotated). The winner goes
into generate.py's ATTN_BWD and the solution.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tasks" / "solutions" / "ptx"))

D = 128
LOG2E = 1.4426950408889634
TWO_PASS = ((64, 128, 8, 3), (64, 128, 8, 2), (64, 128, 8, 4), (32, 128, 4, 3), (32, 128, 4, 5),
            (64, 128, 4, 3), (32, 128, 8, 4), (64, 64, 4, 3), (64, 64, 4, 4), (128, 128, 8, 2))
"""(SMALL, BIG, warps, stages) of ``attn_bwd``: the shipped one, then its tile and pipeline neighbours."""
ATOMIC = ((64, 128, 8, 3, True),)
"""(BM, BN, warps, stages, TMA_REDUCE) of ``attn_bwd_atomic``: the best of 2026-12-03's six."""
REL_L2 = 1e-2


def _desc(rows: int) -> str:
    return f"tensordesc<bf16[{rows},{D}]>"


def specs() -> dict[str, dict]:
    out: dict[str, dict] = {}
    for causal in (False, True):
        tag = "causal" if causal else "full"
        for small, big, warps, stages in TWO_PASS:
            sm, bg = _desc(small), _desc(big)
            out[f"two_pass_{tag}_{small}x{big}_w{warps}s{stages}"] = {
                "kernel": "attn_bwd", "causal": causal,
                "signature": {"q_small": sm, "do_small": sm, "k_small": sm, "v_small": sm, "q_big": bg,
                              "do_big": bg, "k_big": bg, "v_big": bg, "dq_desc": bg, "dk_desc": bg,
                              "dv_desc": bg, "lse_ptr": "*fp32", "delta_ptr": "*fp32", "S": "i32",
                              "sm_scale": "fp32", "qk_scale": "fp32", "D": "constexpr", "SMALL": "constexpr",
                              "BIG": "constexpr", "CAUSAL": "constexpr"},
                "constexprs": {16: D, 17: small, 18: big, 19: causal},
                "options": {"num_warps": warps, "num_stages": stages}, "tile": [small, big],
            }
        for bm, bn, warps, stages, tma in ATOMIC:
            name = f"atomic_{tag}_{bm}x{bn}_w{warps}s{stages}_{'tma' if tma else 'red'}"
            out[name] = {
                "kernel": "attn_bwd_atomic", "causal": causal,
                "signature": {"q_desc": _desc(bm), "do_desc": _desc(bm), "k_desc": _desc(bn),
                              "v_desc": _desc(bn), "dq_acc_desc": f"tensordesc<fp32[{bm},{D}]>",
                              "dq_acc_ptr": "*fp32", "dk_desc": _desc(bn), "dv_desc": _desc(bn),
                              "lse_ptr": "*fp32", "delta_ptr": "*fp32", "S": "i32", "sm_scale": "fp32",
                              "qk_scale": "fp32", "D": "constexpr",
                              "BM": "constexpr", "BN": "constexpr", "CAUSAL": "constexpr",
                              "TMA_REDUCE": "constexpr"},
                "constexprs": {13: D, 14: bm, 15: bn, 16: causal, 17: tma},
                "options": {"num_warps": warps, "num_stages": stages}, "tile": [bm, bn],
            }
    for kernel in ("attn_bwd_delta", "attn_bwd_dq"):
        first = {"attn_bwd_delta": {"o_ptr": "*bf16", "do_ptr": "*bf16", "delta_ptr": "*fp32"},
                 "attn_bwd_dq": {"acc_ptr": "*fp32", "dq_ptr": "*bf16", "sm_scale": "fp32"}}[kernel]
        out[kernel] = {"kernel": kernel, "signature": {**first, "D": "constexpr", "BM": "constexpr"},
                       "constexprs": {3: D, 4: 64}, "options": {"num_warps": 4, "num_stages": 1},
                       "tile": [64]}
    return out


def emit(folder: Path) -> None:
    from generate import emit_sweep

    emit_sweep(folder, specs(), keep=("kernel", "causal"))


def _launchers(folder: Path):
    """Each variant as a function of the task's inputs, returning (dq, dk, dv)."""
    import torch

    from warpgym import loader

    def load(name: str):
        entry = json.loads((folder / f"{name}.json").read_text())
        meta = entry["meta"]
        return meta, loader.load_ptx(entry["ptx"], name=name, target="sm_90a").kernel(meta["entry"])

    def maps(descriptors: list, tensors: list) -> list:
        args = []
        for t, d in zip(tensors, descriptors, strict=True):
            args += [loader.tensor_map(t, d["box"], swizzle=d["swizzle"]), *t.shape, *t.stride()]
        return args

    delta_meta, delta_kernel = load("attn_bwd_delta")
    dq_meta, dq_kernel = load("attn_bwd_dq")
    out = {}
    for path in sorted(folder.glob("*.json")):
        if path.stem in ("attn_bwd_delta", "attn_bwd_dq") or path.stem.startswith("results"):
            continue
        meta, kernel = load(path.stem)

        def run(q, k, v, o, lse, do, meta=meta, kernel=kernel):
            b, h, s, d = q.shape
            rows = (b * h * s, d)
            scale = 1.0 / math.sqrt(d)
            delta = torch.empty((b * h * s,), dtype=torch.float32, device=q.device)
            delta_kernel(o, do, delta, 0, 0, grid=(b * h * s // 64,), block=delta_meta["threads"],
                         shared_mem=delta_meta["shared"])
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            flat = [t.view(rows) for t in (q, do, k, v)]
            if meta["kernel"] == "attn_bwd":
                big = meta["tile"][1]
                args = maps(meta["descriptors"], [*flat, *flat, dq.view(rows), dk.view(rows), dv.view(rows)])
                kernel(*args, lse, delta, s, scale, scale * LOG2E, 0, 0, grid=(s // big, b * h),
                       block=meta["threads"], shared_mem=meta["shared"])
                return dq, dk, dv
            acc = torch.zeros(rows, dtype=torch.float32, device=q.device)
            bn = meta["tile"][1]
            descriptors = meta["descriptors"]
            args = [*maps(descriptors[:5], [*flat, acc]), acc,
                    *maps(descriptors[5:], [dk.view(rows), dv.view(rows)])]
            kernel(*args, lse, delta, s, scale, scale * LOG2E, 0, 0, grid=(s // bn, b * h),
                   block=meta["threads"], shared_mem=meta["shared"])
            dq_kernel(acc, dq, scale, 0, 0, grid=(b * h * s // 64,), block=dq_meta["threads"],
                      shared_mem=dq_meta["shared"])
            return dq, dk, dv

        out[path.stem] = (meta, run)
    return out


def run(folder: Path, reps: int, masks: tuple[str, ...] = ("full", "causal")) -> None:
    import torch
    from warpgym.env.common.timing import time_callable
    from warpgym.tasks import Sampler, get_task

    results: dict = {}
    for causal in (mask == "causal" for mask in masks):
        task = get_task("ptx/attention-bwd" + ("-causal" if causal else ""))
        case = task.shapes["bench"][0]
        inputs = [task.make_inputs(case, Sampler(seed, task.distributions[0], "cuda")) for seed in range(2)]
        vendor = task.vendor
        expected = [t.float() for t in vendor(**inputs[0])]
        vendor_ms = time_callable(vendor, inputs, warmup=5, reps=reps)["median_ms"]
        print(f"{task.id}: cuDNN {vendor_ms:.3f} ms", flush=True)
        results[task.id] = {"vendor_ms": vendor_ms}
        for name, (meta, fn) in _launchers(folder).items():
            if meta.get("causal") != causal:
                continue
            try:
                got = fn(**inputs[0])
                errors = [float((g.float() - e).norm() / e.norm())
                          for g, e in zip(got, expected, strict=True)]
                ms = time_callable(fn, inputs, warmup=5, reps=reps)["median_ms"]
            except Exception as exc:  # noqa: BLE001 - one variant's failure is a row, not the end
                results[task.id][name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                print(f"  {name}: {results[task.id][name]['error']}", flush=True)
                continue
            ok = max(errors) < REL_L2
            results[task.id][name] = {"ms": ms, "vs_vendor": vendor_ms / ms, "rel_l2": errors, "correct": ok}
            print(f"  {name}: {ms:.3f} ms, {vendor_ms / ms:.3f}x cuDNN, rel L2 dq/dk/dv "
                  f"{', '.join(f'{e:.1e}' for e in errors)}{'' if ok else '  WRONG'}", flush=True)
            torch.cuda.empty_cache()
        (folder / "results.out.json").write_text(json.dumps(results, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["emit", "run"])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--masks", nargs="+", choices=["full", "causal"], default=["full", "causal"],
                        help="which tasks' variants to time, in this order")
    args = parser.parse_args()
    emit(args.folder) if args.action == "emit" else run(args.folder, args.reps, tuple(args.masks))


if __name__ == "__main__":
    main()
