"""Time Triton reference solutions, old and new and a few tile configs of the new, against their baselines.

On a GPU, for each task below and each of its bench shapes: the task's eager and vendor baselines (and
torch.compile with --compile), the reference as it was at --old-rev (read with ``git show``; skipped where
git or the revision is missing), and the current reference under each config override of SWEEP (module
constants such as ``TAPS_LARGE`` set before the call). Every timing is the harness's own
(``time_callable``: L2 flushed before each call, median). Each variant's output is compared with the
eager baseline's (relative L2), so a fast but wrong config shows. JSON goes to --out after every task.

The answer per task is the override with the best geometric-mean ratio to the best baseline; ``--apply
PATH`` writes those constants into the solution files (one line each), so a sweep's result is one command:

    python scripts/triton_ref_sweep.py --out runs/triton-ref-sweep.json        # on the GPU, < 5 minutes
    python scripts/triton_ref_sweep.py --apply runs/triton-ref-sweep.json      # anywhere
    python scripts/triton_ref_sweep.py --summary runs/triton-ref-sweep.json    # the table, anywhere
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from warpgym.tasks.spec import SOLUTIONS_DIR

ROOT = Path(__file__).resolve().parents[1]
OLD_REV = "ef757676487ff9a5f5627e06b045cf353e80a99c"
"""The commit before the references of SWEEP were rewritten (their docs/suite.md figures are from it)."""
COPY_TBPS = 4.24
"""Device-to-device copy on the H200, read + write bytes (/work/shared/HARDWARE.md's table)."""
BF16_TFLOPS = 718.0
"""cuBLAS bf16 GEMM 4096^3 on the H200 (same table): the dense tensor-core ceiling we measured."""

_TAPS_ALT = [{"TAPS_LARGE": (128, 256, 64, 8, 3)}, {"TAPS_LARGE": (128, 128, 64, 4, 4)},
             {"TAPS_LARGE": (256, 128, 64, 8, 3)}]
_GEMM_ALT = [{"LARGE": (128, 256, 64, 8, 4)}, {"LARGE": (256, 128, 64, 8, 3)},
             {"LARGE": (128, 128, 64, 4, 4)}]
SWEEP: dict[str, list[dict[str, Any]]] = {
    "convolution/conv2d": [{}, *_TAPS_ALT, {"FLAT_LARGE": (256, 64, 32, 8, 3)},
                           {"FLAT_LARGE": (128, 64, 16, 4, 4)}],
    "convolution/dilated-conv2d": [{}, *_TAPS_ALT],
    "convolution/conv-transpose1d": [{}, *_TAPS_ALT],
    "convolution/conv-transpose2d": [{}, *_TAPS_ALT],
    "index/gather": [{}, {"TILES": (1, 1024, 4)}, {"TILES": (4, 512, 4)}, {"TILES": (8, 512, 8)}],
    "index/index-select": [{}, {"TILES": (1, 2048, 8)}, {"TILES": (8, 512, 4)}, {"TILES": (16, 256, 4)}],
    "matmul/matmul": [{}, *_GEMM_ALT],
    "matmul/matmul-nt": [{}, *_GEMM_ALT],
    "matmul/linear": [{}, *_GEMM_ALT],
    "fusion/layer-norm-linear": [{}, *_GEMM_ALT],
    **{f"fusion/linear-bias-{act}": [{}, {"LARGE": (128, 256, 64, 8, 3)}, {"LARGE": (128, 128, 64, 8, 4)}]
       for act in ("relu", "gelu", "silu", "residual")},
    "fusion/mlp-gelu": [{}, {"LARGE": (128, 256, 64, 8, 3)}],
    "fusion/rms-norm-linear": [{}, {"LARGE": (128, 256, 64, 8, 3)}],
    "matmul/bmm": [{}, {"LARGE": (128, 256, 64, 8, 4)}, {"MEDIUM": (128, 128, 64, 4, 4)}],
    "linalg/bmm-broadcast": [{}, {"LARGE": (128, 256, 64, 8, 4)}, {"MEDIUM": (128, 128, 64, 4, 4)}],
    **{f"linalg/{name}": [{}, {"ALGO": (0,)}] for name in ("cholesky", "spd-inverse")},
    "linalg/solve-triangular": [{}, {"ROWS_MAX": (0,)}],
    "convolution/depthwise-conv2d": [{}, {"PIXELS": (2048, 8)}, {"PIXELS": (512, 4)}],
    "convolution/conv2d-3x3": [{}, {"TAPS_LARGE": (128, 256, 64, 8, 4)}, {"TAPS_LARGE": (128, 128, 64, 4, 4)},
                               {"TAPS_LARGE": (256, 128, 64, 8, 3)}],
    "convolution/conv2d-3x3-stride2": [{}, {"TAPS_LARGE": (128, 256, 64, 8, 4)},
                                       {"TAPS_LARGE": (128, 128, 64, 4, 4)}, {"TRANSPOSE": (64, 128, 4)}],
    "convolution/conv1d": [{}, {"TAPS_LARGE": (128, 256, 64, 8, 4)}, {"TAPS_LARGE": (256, 128, 64, 8, 3)},
                           {"TAPS_LARGE": (128, 128, 64, 4, 4)}],
    "fusion/depthwise-pointwise-conv1d": [{}, {"LARGE": (128, 256, 64, 8, 3)},
                                          {"LARGE": (256, 128, 64, 8, 3)}, {"DEPTHWISE": (8, 512, 4)}],
    "reduce/amax": [{}, {"SPLIT": (2048, 4)}, {"SPLIT": (4096, 2)}, {"LONG": (2048, 4)}],
    "reduce/amin": [{}, {"SPLIT": (2048, 4)}, {"SPLIT": (4096, 2)}, {"LONG": (2048, 4)}],
    "reduce/std": [{}, {"SPLIT": (2048, 4)}, {"LONG": (2048, 4)}, {"LONG": (4096, 16)}],
    "reduce/mean-middle": [{}, {"SPLIT": (2048, 8, 1024)}, {"SPLIT": (8192, 4, 1024)},
                           {"WIDE": (64, 128, 8), "WIDE_HALF": (128, 128, 8)}],
    **{f"normalization/{norm}": [{}, {"ONE_BLOCK": (16384, 32)}, {"ONE_BLOCK": (16384, 8)},
                                 {"ONE_BLOCK": (1, 16)}] for norm in ("rms-norm", "layer-norm")},
    "normalization/add-rms-norm": [{}, {"ONE_BLOCK": (16384, 32)}, {"ONE_BLOCK": (1, 16)}],
    "normalization/instance-norm": [{}, {"ONE_BLOCK": (16384, 64)}, {"ONE_BLOCK": (8192, 16)}],
    "normalization/batch-norm": [{}, {"TILE": (2048, 4)}, {"TILE": (8192, 8)}, {"TILE": (1024, 4)}],
    "fusion/attention": [{}, {"LARGE": (64, 64, 4, 2)}],
    **{f"fusion/{name}": [{}, {"LARGE": (128, 64, 8, 3)}] for name in ("attention-gqa", "attention-mqa")},
    "fusion/linear-cross-entropy": [{}, {"LARGE": (128, 256, 64, 8, 3, 4, 8)},
                                    {"LARGE": (128, 128, 64, 8, 4, 8, 8)},
                                    {"LARGE": (256, 128, 64, 8, 3, 4, 8)}],
    "matmul/matmul-splitk": [{}, {"PROGRAMS": (264,)}, {"LARGE": (128, 128, 64, 8, 4), "PROGRAMS": (264,)}],
    "quantization/fp8-gemm": [{}, {"LARGE": (128, 128, 128, 8, 6)},
                              {"LARGE": (256, 128, 128, 8, 4), "PROMOTE_IN_DOT": (1,)},
                              {"LARGE": (128, 128, 128, 4, 3), "PROMOTE_IN_DOT": (1,)}],
    "quantization/w4a16-gemm": [{}, {"LARGE": (128, 128, 64, 4, 3)}, {"LARGE": (128, 256, 64, 8, 3)},
                                {"SMALL": (64, 32, 128, 4, 4)}],
    "quantization/quantize-per-tensor": [{}, {"HW_FP8": (1,)}, {"TILES": (16, 512, 4)}],
    "quantization/quantize-dynamic-per-token": [{}, {"HW_FP8": (1,)}, {"ROW_TILE": (16384, 16)}],
    **{f"quantization/{name}": [{}, {"TILES": (4096, 8, 4)}, {"TILES": (16384, 8, 8)}]
       for name in ("int4-dequantize", "int4-quantize-pack", "dequantize-per-group")},
    **{f"quantization/{name}": [{}, {"TILES": (16, 256, 4)}, {"TILES": (16, 1024, 8)}]
       for name in ("dequantize-per-tensor", "dequantize-per-channel")},
    "fusion/rope-interleaved": [{}, {"ROWS": (64, 8)}, {"ROWS": (16, 4)}, {"ROWS": (64, 4)}],
    "pooling/adaptive-avg-pool2d": [{}, {"TILE": (4096, 8)}, {"TILE": (1024, 4)}, {"TILE": (2048, 8)}],
    "pooling/max-pool1d": [{}, {"POOL": (2048, 8)}, {"POOL": (512, 4)}, {"POOL": (2048, 4)}],
    "spatial/upsample-nearest": [{}, {"TILE": (8, 512, 4)}, {"TILE": (32, 256, 8)}, {"TILE": (16, 1024, 8)}],
    "spatial/grid-sample": [{}, {"SAMPLE": (32, 64, 4)}, {"SAMPLE": (128, 32, 8)},
                            {"TRANSPOSE": (32, 128, 4), "SAMPLE": (64, 64, 4)}],
}
"""Config overrides of each reference's module constants; {} is the reference as committed."""


def load_module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def old_source(rel: Path, rev: str) -> str | None:
    """The file at ``rev``: from git, or from a folder (``--old-rev DIR``) where a copy has no git history."""
    if (ROOT / rev).is_dir():
        path = ROOT / rev / rel
        return path.read_text() if path.is_file() else None
    try:
        return subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{rel.as_posix()}"], check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def label(override: dict[str, Any]) -> str:
    return ", ".join(f"{k}={tuple(v)}" for k, v in override.items()) or "committed"


def rel_l2(out: Any, ref: Any) -> float:
    """Relative L2 error; for several outputs (a tuple), the largest of theirs."""
    if isinstance(ref, (tuple, list)):
        return max(rel_l2(o, r) for o, r in zip(out, ref, strict=True))
    out, ref = out.float(), ref.float()
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


def time_ms(fn: Any, inputs: dict[str, Any], reps: int) -> float:
    from warpgym.env.common.timing import time_callable

    return time_callable(fn, [inputs], warmup=3, reps=reps)["median_ms"]


def sweep_task(task_id: str, old_rev: str, reps: int, with_compile: bool) -> dict[str, Any]:
    import torch
    from warpgym.tasks import case_label, get_task
    from warpgym.tasks.sampling import Sampler

    task = get_task(task_id)
    rel = Path("tasks/solutions") / task.solution_path.relative_to(SOLUTIONS_DIR)
    entry = {"task": task_id, "file": rel.as_posix(), "shapes": []}
    old = old_source(rel, old_rev)
    old_fn = None
    if old is not None:
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "old.py").write_text(old)
            old_fn = getattr(load_module(Path(folder) / "old.py", f"old_{task.name.replace('-', '_')}"),
                             task.entrypoint)
    baselines = {"eager": task.reference}
    if task.vendor is not None:
        baselines["vendor"] = task.vendor
    if with_compile and "torch.compile" in task.baselines:
        baselines["torch.compile"] = torch.compile(task.reference)
    for case in task.cases("bench"):
        inputs = task.make_inputs(case, Sampler(0, "normal", device="cuda"))
        expected = task.reference(**inputs)
        row: dict[str, Any] = {"shape": case_label(case), "flops": task.flops(case),
                               "bytes": task.bytes(case), "baselines": {}, "variants": []}
        for name, fn in baselines.items():
            row["baselines"][name] = time_ms(fn, inputs, reps)
        best = min(row["baselines"].values())
        variants: list[tuple[str, dict[str, Any], Any]] = []
        if old_fn is not None:
            variants.append((f"old ({old_rev})", {}, old_fn))
        for override in SWEEP[task_id]:
            module = load_module(ROOT / rel, f"new_{task.name.replace('-', '_')}_{len(variants)}")
            for attr, value in override.items():
                if not hasattr(module, attr):
                    raise SystemExit(f"{rel}: no constant {attr} to override")
                setattr(module, attr, tuple(value))
            variants.append((label(override), override, getattr(module, task.entrypoint)))
        for name, override, fn in variants:
            result: dict[str, Any] = {"variant": name, "override": override}
            try:
                result["rel_l2_vs_eager"] = rel_l2(fn(**inputs), expected)
                ms = time_ms(fn, inputs, reps)
            except Exception as exc:  # noqa: BLE001 - a config that fails to compile or launch is a result
                result["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                row["variants"].append(result)
                continue
            result.update(ms=ms, vs_best_baseline=best / ms, tflops=row["flops"] / ms / 1e9,
                          tbps=row["bytes"] / ms / 1e9)
            result["fraction_of_roofline"] = max(result["tflops"] / BF16_TFLOPS, result["tbps"] / COPY_TBPS)
            row["variants"].append(result)
            fastest = min(row["baselines"], key=row["baselines"].get)
            print(f"{task_id} {row['shape']} {name}: {ms:.4g} ms, {best / ms:.2f}x best baseline "
                  f"({fastest}), rel L2 {result['rel_l2_vs_eager']:.1e}", flush=True)
        entry["shapes"].append(row)
        del inputs, expected
        torch.cuda.empty_cache()
    entry["choice"] = choose(entry)
    return entry


def choose(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The override (of the current reference) with the best geometric-mean ratio over the bench shapes."""
    scores: dict[str, list[float]] = {}
    overrides: dict[str, dict[str, Any]] = {}
    for row in entry["shapes"]:
        for v in row["variants"]:
            if v["variant"].startswith("old") or "ms" not in v or v["rel_l2_vs_eager"] > 0.02:
                continue
            scores.setdefault(v["variant"], []).append(v["vs_best_baseline"])
            overrides[v["variant"]] = v["override"]
    whole = {k: s for k, s in scores.items() if len(s) == len(entry["shapes"])}
    if not whole:
        return None
    name = max(whole, key=lambda k: math.fsum(map(math.log, whole[k])))
    geo = math.exp(math.fsum(map(math.log, whole[name])) / len(whole[name]))
    return {"variant": name, "set": overrides[name], "geomean_vs_best_baseline": geo}


def apply(results: Path, root: Path = ROOT) -> list[str]:
    """Write each task's chosen constants into its solution file under ``root``; returns what changed."""
    changed = []
    for entry in json.loads(results.read_text())["tasks"]:
        choice = entry.get("choice")
        if not choice:
            continue
        path = root / entry["file"]
        text = path.read_text()
        for attr, value in choice["set"].items():
            pattern = re.compile(rf"^({re.escape(attr)}: Tiles = )\([^)]*\)$", re.M)
            if not pattern.search(text):
                raise SystemExit(f"{entry['file']}: no line '{attr}: Tiles = (...)' to set")
            text = pattern.sub(lambda m, v=tuple(value): f"{m.group(1)}{v}", text, count=1)
            changed.append(f"{entry['file']}: {attr} = {tuple(value)}")
        path.write_text(text)
    return changed


def summary(results: Path) -> list[str]:
    """A markdown row per task and bench shape: the best baseline, the old reference, the chosen variant (the
    committed one where the sweep chose none), its ratio to the best baseline and the rates it reached."""
    rows = ["| task | bench case | best baseline ms | old ms | chosen | ms | vs the best | TFLOP/s | TB/s |",
            "|---|---|---:|---:|---|---:|---:|---:|---:|"]
    for entry in json.loads(results.read_text())["tasks"]:
        chosen = (entry.get("choice") or {}).get("variant", "committed")
        for row in entry["shapes"]:
            fastest = min(row["baselines"], key=row["baselines"].get)
            by_name = {v["variant"]: v for v in row["variants"]}
            old = next((v for name, v in by_name.items() if name.startswith("old")), {})
            new = by_name.get(chosen, {})
            if "ms" not in new:
                error = new.get("error", "no time")
                rows.append(f"| {entry['task']} | {row['shape']} | | | {chosen} | {error} | | | |")
                continue
            rows.append(f"| {entry['task']} | {row['shape']} | {row['baselines'][fastest]:.4g} ({fastest}) | "
                        f"{old.get('ms', float('nan')):.4g} | {chosen} | {new['ms']:.4g} | "
                        f"{new['vs_best_baseline']:.2f}x | {new['tflops']:.1f} | {new['tbps']:.2f} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="JSON results (written after every task)")
    parser.add_argument("--task", action="append", help="only these task ids (repeatable)")
    parser.add_argument("--old-rev", default=OLD_REV,
                        help="git revision of the old references, or a folder holding them by path")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--compile", action="store_true", help="also time the torch.compile baseline (slow)")
    parser.add_argument("--apply", type=Path, metavar="RESULTS", help="set the chosen configs and exit")
    parser.add_argument("--summary", type=Path, metavar="RESULTS",
                        help="print a results file as a table and exit")
    args = parser.parse_args(argv)
    if args.summary:
        print("\n".join(summary(args.summary)))
        return 0
    if args.apply:
        for line in apply(args.apply):
            print(line)
        return 0
    if not args.out:
        parser.error("--out is required (or --apply)")
    import torch
    import triton

    if not torch.cuda.is_available():
        parser.error("the sweep times on a GPU; none is visible")
    unknown = sorted(set(args.task or []) - set(SWEEP))
    if unknown:
        parser.error(f"not in the sweep: {unknown}; choose from {sorted(SWEEP)}")
    started = time.time()
    results: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                               "triton": triton.__version__, "old_rev": args.old_rev, "tasks": []}
    for task_id in args.task or list(SWEEP):
        results["tasks"].append(sweep_task(task_id, args.old_rev, args.reps, args.compile))
        results["seconds"] = round(time.time() - started, 1)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    for entry in results["tasks"]:
        print(entry["task"], json.dumps(entry["choice"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
