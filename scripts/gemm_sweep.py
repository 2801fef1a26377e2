"""Tile and schedule sweep for the ptx/gemm-bf16 reference (goal: at least 0.70x cuBLAS).

Two halves, because the PTX is generated where Triton's newest compiler is (any machine, no GPU)
and timed where the H200 is:

    python scripts/gemm_sweep.py emit .sweep            # here: PTX of each variant, for sm_90a
    python3 scripts/gemm_sweep.py run .sweep            # on the H200 (carry .sweep)

``run`` loads each variant's PTX through warpgym.loader exactly as the shipped reference
does, checks it against torch.matmul, and times it with the evaluator's own timing
(env/timing.time_callable: L2 flushed, inputs rotated) against cuBLAS at the bench shape.
The winner goes into generate.py's GEMM_BF16 / the solution's VARIANT.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tasks" / "solutions" / "ptx"))

M, N, K = 8192, 7168, 5120
NUM_SMS = 132


def _desc(rows: int, cols: int) -> str:
    return f"tensordesc<bf16[{rows},{cols}]>"


def specs() -> dict[str, dict]:
    out = {}
    for persistent, bm, bn, bk, warps, stages, group in [
        (False, 128, 256, 64, 8, 3, 8),   # the shipped variant
        (False, 128, 256, 64, 8, 4, 8),
        (True, 128, 256, 64, 8, 3, 8),
        (True, 128, 256, 64, 8, 3, 16),
        (True, 256, 128, 64, 8, 3, 8),
        (True, 128, 128, 64, 8, 4, 8),
        (True, 128, 128, 64, 4, 4, 8),
    ]:
        sig = {"a_desc": _desc(bm, bk), "b_desc": _desc(bn, bk), "c_desc": _desc(bm, bn), "M": "i32",
               "N": "i32", "K": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr",
               "GROUP_M": "constexpr"}
        constexprs = {6: bm, 7: bn, 8: bk, 9: group}
        if persistent:
            sig["NUM_SMS"] = "constexpr"
            constexprs[10] = NUM_SMS
        name = f"{'p' if persistent else 't'}{bm}x{bn}x{bk}_w{warps}s{stages}g{group}"
        out[name] = {"kernel": "gemm_bf16_persistent" if persistent else "gemm_bf16", "signature": sig,
                     "constexprs": constexprs, "options": {"num_warps": warps, "num_stages": stages},
                     "tile": [bm, bn, bk], "persistent": persistent}
    return out


def emit(folder: Path) -> None:
    from generate import emit_sweep

    emit_sweep(folder, specs(), keep=("persistent",))


def run(folder: Path, reps: int) -> None:
    import torch
    from warpgym.env.common.timing import time_callable

    from warpgym import loader

    inputs = [{"a": torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
               "b": torch.randn(N, K, device="cuda", dtype=torch.bfloat16)} for _ in range(3)]
    flops = 2 * M * N * K
    cublas = time_callable(lambda a, b: torch.matmul(a, b.T), inputs, warmup=5, reps=reps)["median_ms"]
    print(f"cuBLAS: {cublas:.3f} ms, {flops / cublas / 1e9:.0f} TFLOP/s", flush=True)
    expected = (inputs[0]["a"].float() @ inputs[0]["b"].float().T)
    results = {"cublas_ms": cublas}
    for path in sorted(folder.glob("*.json")):
        entry = json.loads(path.read_text())
        meta = entry["meta"]
        kernel = loader.load_ptx(entry["ptx"], name=path.stem, target="sm_90a").kernel(meta["entry"])
        bm, bn, _ = meta["tile"]
        tiles = -(-M // bm) * -(-N // bn)
        grid = (min(NUM_SMS, tiles) if meta.get("persistent") else tiles,)

        def gemm(a: torch.Tensor, b: torch.Tensor, meta: dict = meta, kernel: object = kernel,
                 grid: tuple = grid) -> torch.Tensor:
            c = torch.empty((a.shape[0], b.shape[0]), dtype=torch.bfloat16, device=a.device)
            args = []
            for t, d in zip((a, b, c), meta["descriptors"], strict=True):
                args += [loader.tensor_map(t, d["box"], swizzle=d["swizzle"]), *t.shape, *t.stride()]
            kernel(*args, a.shape[0], b.shape[0], a.shape[1], 0, 0, grid=grid, block=meta["threads"],
                   shared_mem=meta["shared"])
            return c

        err = (gemm(**inputs[0]).float() - expected).abs().max().item()
        ms = time_callable(gemm, inputs, warmup=5, reps=reps)["median_ms"]
        results[path.stem] = {"ms": ms, "tflops": flops / ms / 1e9, "vs_cublas": cublas / ms, "max_err": err}
        print(f"{path.stem}: {ms:.3f} ms, {flops / ms / 1e9:.0f} TFLOP/s, {cublas / ms:.3f}x cuBLAS, "
              f"max err {err:.3g}", flush=True)
    (folder / "results.out.json").write_text(json.dumps(results, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["emit", "run"])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    emit(args.folder) if args.action == "emit" else run(args.folder, args.reps)


if __name__ == "__main__":
    main()
