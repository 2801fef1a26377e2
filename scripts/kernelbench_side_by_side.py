"""warpgym and KernelBench's own harness on KernelBench's problems, the same candidates, the same GPU.

Needs a KernelBench checkout's ``src`` and ``KernelBench`` folders in ``.kb/`` (ignored by git, never
committed), carried to the GPU machine:

    git -C <checkout> archive HEAD src KernelBench | tar -x -C .kb
    python3 scripts/kernelbench_side_by_side.py --kb .kb --out $OUT/kb_side_by_side.json

KernelBench's side is ``kernelbench.eval.eval_kernel_against_ref`` (its ``src/kernelbench/eval.py``): 5
correctness trials, 100 timed trials, ``backend="triton"``, float32; it needs a GPU. ``--device cpu``
judges warpgym's side alone, at the dev sizes in Triton's interpreter (``--only 19_ReLU`` picks problems).

Candidates are written here, in KernelBench's format, per problem: ``correct`` (a ModelNew derived from
the problem's Model, its output copied by a Triton kernel: correct under KernelBench's rule, PyTorch calls
allowed; deriving keeps Model's parameter names, which warpgym loads the reference's values by), strict
Triton kernels for the elementwise problems in ``ELEMENTWISE``, two plausible bugs (a dropped tail, an
output 0.1% off), and the three exploits of KernelBench's adversarial tests: result reuse (the first
call's output returned again), zeroed output, and work on a non-default stream left unsynchronised.
warpgym judges them with ``--allow-torch`` (KernelBench's rule) and strict; the JSON holds both verdicts,
each disagreement, both speedups (warpgym's also by its interval's lower bound), and evaluations per
minute.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

COPY_KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)


def _copied(y, tail=0):
    y = y.contiguous()
    out = torch.empty_like(y)
    n = y.numel() - tail
    _copy[(triton.cdiv(max(n, 1), 1024),)](y, out, n, BLOCK=1024)
    return out
"""

REFERENCE = "super().forward(*args)"
WRAPPED = {
    "correct": f"return _copied({REFERENCE})",
    "bug-tail": f"return _copied({REFERENCE}, tail=1)",
    "bug-scale": f"return _copied({REFERENCE} * 1.001)",
    "exploit-zeros": f"return _copied(torch.zeros_like({REFERENCE}))",
    "exploit-reuse": (
        f"if getattr(self, '_kept', None) is None:\n            self._kept = _copied({REFERENCE})\n"
        "        return self._kept"
    ),
    "exploit-stream": (
        "s = torch.cuda.Stream()\n        with torch.cuda.stream(s):\n"
        f"            torch.cuda._sleep(20000000)\n            return _copied({REFERENCE})"
    ),
}
CPU_LABELS = ("correct", "bug-tail", "bug-scale", "exploit-zeros", "exploit-reuse", "strict-triton",
              "strict-cuda")
"""Without a GPU: the side stream needs CUDA."""

ELEMENTWISE = {
    "19_ReLU": "tl.maximum(x, 0.0)",
    "21_Sigmoid": "1.0 / (1.0 + tl.exp(-x))",
    "22_Tanh": "2.0 / (1.0 + tl.exp(-2.0 * x)) - 1.0",
    "25_Swish": "x / (1.0 + tl.exp(-x))",
    "29_Softplus": "tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(x)))",
    "30_Softsign": "x / (1.0 + tl.abs(x))",
    "32_HardTanh": "tl.minimum(tl.maximum(x, -1.0), 1.0)",
}

STRICT_TEMPLATE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _op(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, {expr}, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _op[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
"""


CUDA_ELEMENTWISE = {
    "19_ReLU": "fmaxf(v, 0.f)",
    "21_Sigmoid": "1.f / (1.f + expf(-v))",
    "22_Tanh": "tanhf(v)",
    "25_Swish": "v / (1.f + expf(-v))",
    "29_Softplus": "v > 20.f ? v : log1pf(expf(v))",
    "30_Softsign": "v / (1.f + fabsf(v))",
    "32_HardTanh": "fminf(fmaxf(v, -1.f), 1.f)",
}
"""The same problems in KernelBench's CUDA format: the expression of ``v`` in C."""

CUDA_TEMPLATE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = r"""
__global__ void op_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {{
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {{
        float v = x[i];
        y[i] = {expr};
    }}
}}

torch::Tensor op(torch::Tensor x) {{
    auto y = torch::empty_like(x);
    long n = x.numel();
    long blocks = (n + 255) / 256;
    op_kernel<<<blocks < 65535 * 8 ? blocks : 65535 * 8, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}}
"""

ext = load_inline(name="op_ext", cpp_sources="torch::Tensor op(torch::Tensor x);", cuda_sources=SOURCE,
                  functions=["op"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        return ext.op(x.contiguous())
'''


def wrapped(problem_source: str, body: str) -> str:
    """The problem's Model renamed, and a ModelNew derived from it: the same constructor, the same parameter
    names, its forward ``body`` (which calls Model's as ``super().forward``)."""
    ref = re.sub(r"\bclass Model\b", "class _Reference", problem_source)
    ref = re.sub(r"super\(Model, self\)", "super(_Reference, self)", ref)
    return (
        COPY_KERNEL
        + "\n"
        + ref
        + """

class ModelNew(_Reference):
    def forward(self, *args):
        """
        + body
        + "\n"
    )


WRONG = [label for label in WRAPPED if label != "correct"]


def candidates(problem: Path, index: int | None = None) -> dict[str, str]:
    """Every candidate for the problem; with ``index``, the correct ones and one wrong kind, taken in turn
    from problem to problem (so every kind meets several problems in a run that fits a time limit)."""
    source = problem.read_text()
    labels = list(WRAPPED) if index is None else ["correct", WRONG[index % len(WRONG)]]
    out = {label: wrapped(source, WRAPPED[label]) for label in labels}
    if problem.stem in ELEMENTWISE:
        out["strict-triton"] = STRICT_TEMPLATE.format(expr=ELEMENTWISE[problem.stem])
    if problem.stem in CUDA_ELEMENTWISE:
        out["strict-cuda"] = CUDA_TEMPLATE.format(expr=CUDA_ELEMENTWISE[problem.stem])
    return out


def kernelbench_verdict(kb_eval, problem: Path, source: str) -> dict:  # noqa: ANN001
    """KernelBench's verdict (``eval_kernel_against_ref``; its times are milliseconds, ``-1`` when not
    measured, and it returns None when a compile lock got in the way)."""
    started = time.perf_counter()
    try:
        r = kb_eval.eval_kernel_against_ref(
            problem.read_text(),
            source,
            num_correct_trials=5,
            num_perf_trials=100,
            measure_performance=True,
            backend="triton",
            device=torch.device("cuda:0"),
        )
        if r is None:
            raise RuntimeError("eval_kernel_against_ref returned None (a lock file error: retry)")
        row = {
            "compiled": getattr(r, "compiled", None),
            "correct": getattr(r, "correctness", None),
            "runtime_ms": getattr(r, "runtime", None),
            "ref_runtime_ms": getattr(r, "ref_runtime", None),
            "excessive_speedup": bool((r.metadata or {}).get("excessive_speedup")),
            "metadata": {k: str(v)[:300] for k, v in (getattr(r, "metadata", None) or {}).items()},
        }
    except Exception as exc:  # noqa: BLE001 - a harness failure is a result to report
        row = {"correct": None, "error": f"{type(exc).__name__}: {exc}"[:300]}
    row["seconds"] = time.perf_counter() - started
    rt, ref = row.get("runtime_ms"), row.get("ref_runtime_ms")
    timed = isinstance(rt, float) and isinstance(ref, float) and rt > 0 and ref > 0
    row["speedup"] = ref / rt if timed else None
    return row


def precision_probe(task, device: str = "cuda") -> dict:  # noqa: ANN001
    """The imported problem's own model at its own sizes (the harness's model and inputs), with TF32 allowed
    (cuDNN's default in PyTorch) and not, against its float64 reference: how many elements the judge's
    comparison puts outside the float32 bound each way. Run where the two harnesses disagree on a candidate
    that returns ``Model``'s output, it measures whether TF32 is the reason rather than inferring it."""
    from warpgym.env.judge.compare import compare_outputs
    from warpgym.tasks import Sampler
    from warpgym.tasks.spec import sequence

    case = task.cases("bench")[0]
    inputs = task.make_inputs(case, Sampler(task.seeds[0], task.distributions[0], device))
    wide = {k: v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
            for k, v in inputs.items()}
    model = task.model.reference_for(case)
    reference = sequence(model(**wide))
    out: dict = {"elements": sum(t.numel() for t in reference if isinstance(t, torch.Tensor))}
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        for tf32 in (True, False):
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = tf32
            got = sequence(model(**inputs))
            out["outside_tf32_on" if tf32 else "outside_tf32_off"] = compare_outputs(
                got, reference, got, task)["mismatches"]
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn
    return out


def warpgym_verdict(evaluator, task, source: str, options) -> dict:  # noqa: ANN001
    started = time.perf_counter()
    r = evaluator.evaluate(task, source, options)
    return {
        "correct": r.correct,
        "mode": r.mode,
        "violations": [v.code for v in r.violations][:6],
        "speedup_eager": r.speedup_by("eager"),
        "speedup_eager_low": r.speedup_by("eager", conservative=True),
        "speedup_compile": r.speedup_by("torch.compile"),
        "own_gpu_share": r.own_gpu_share,
        "seconds": time.perf_counter() - started,
        "first_failure": next((c.message[:200] for c in r.cases if c.passed is False), None),
    }


def chosen_problems(kb: Path, level1: int, level2: int, only: list[str], spread: bool = False) -> list[Path]:
    """The elementwise problems first, then others in order (``spread``: evenly spaced through the level),
    ``level1`` and ``level2`` of them; or the problems named in ``only`` (file stems)."""
    chosen = []
    for level, count in (("level1", level1), ("level2", level2)):
        files = sorted((kb / "KernelBench" / level).glob("*.py"), key=lambda p: int(p.stem.split("_")[0]))
        if only:
            chosen += [f for f in files if f.stem in only]
            continue
        others = [f for f in files if f.stem not in ELEMENTWISE]
        if spread:
            room = max(1, count - sum(1 for f in files if f.stem in ELEMENTWISE))
            others = others[:: max(1, len(others) // room)]
        wanted = [f for f in files if f.stem in ELEMENTWISE] + others
        chosen += sorted(wanted[:count], key=lambda p: int(p.stem.split("_")[0]))
    return chosen


def summary(device: str, tasks: dict, rows: list[dict], walls: dict[str, float]) -> dict:
    compared = [r for r in rows if "agree" in r]
    disagreements = [r for r in compared if not r["agree"]]
    return {
        "device": device,
        "problems": {
            "level1": sum(1 for p in tasks if p.parent.name == "level1"),
            "level2": sum(1 for p in tasks if p.parent.name == "level2"),
        },
        "evaluations": len(rows),
        "agreement": 1 - len(disagreements) / len(compared) if compared else None,
        "evaluations_per_minute": {k: 60 * len(rows) / v if v else None for k, v in walls.items()},
        "walls": walls,
        "disagreements": [
            {
                "task": r["task"],
                "candidate": r["candidate"],
                "warpgym": r["warpgym_allow-torch"],
                "kernelbench": r["kernelbench"],
            }
            for r in disagreements
        ],
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--kb", default=str(ROOT / ".kb"), help="folder holding KernelBench's src and KernelBench"
    )
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "kb_side_by_side.json"))
    parser.add_argument("--level1", type=int, default=20)
    parser.add_argument("--level2", type=int, default=10)
    parser.add_argument("--only", default="", help="comma-separated problem file stems (e.g. 19_ReLU)")
    parser.add_argument("--device", default="cuda", help="cuda, or cpu: warpgym's side alone, dev sizes")
    parser.add_argument("--all-candidates", action="store_true",
                        help="every wrong kind on every problem (default: one wrong kind per problem, "
                        "in turn)")
    parser.add_argument("--spread", action="store_true",
                        help="the other problems evenly spaced through each level, not the first ones")
    parser.add_argument("--resume", action="store_true",
                        help="keep the rows in --out; judge only the missing (problem, candidate) pairs")
    parser.add_argument("--budget", type=float, default=None,
                        help="warpgym's paired-timing seconds per bench case (default: EvalOptions')")
    parser.add_argument("--baselines", default="eager",
                        help="warpgym's baselines (default eager, the one KernelBench times against; "
                        "torch.compile compiles every problem, tens of seconds each)")
    args = parser.parse_args()
    kb = Path(args.kb)
    on_gpu = args.device.startswith("cuda")
    kb_eval = None
    if on_gpu:
        from kernelbench_compare import stub_missing_modules

        stub_missing_modules()
        sys.path.insert(0, str(kb / "src"))
        from kernelbench import eval as kb_eval
    from warpgym.env import EvalOptions, Evaluator
    from warpgym.tasks.importers import import_suite

    only = [s for s in args.only.split(",") if s]
    tasks = {}
    for path in chosen_problems(kb, args.level1, args.level2, only, args.spread):
        started = time.perf_counter()
        done = import_suite("kernelbench", path)
        print(f"imported {path.stem} in {time.perf_counter() - started:.1f} s", flush=True)
        if done.tasks:
            tasks[path] = dataclasses.replace(done.tasks[0], baselines=tuple(args.baselines.split(",")))
        for why in done.failures.values():
            print(f"not imported: {why}", flush=True)
    sets = ("dev", "heldout", "bench") if on_gpu else ("dev",)
    extra = {}
    if args.budget:
        from warpgym.env.judge.options import PairedTiming

        extra["paired"] = PairedTiming(budget_seconds=args.budget)
    modes = {
        "allow-torch": EvalOptions(device=args.device, shape_sets=sets, allow_torch=True, **extra),
        "strict": EvalOptions(device=args.device, shape_sets=sets, **extra),
    }
    rows, walls = [], {"warpgym": 0.0, "kernelbench": 0.0}
    if args.resume and Path(args.out).exists():
        kept = json.loads(Path(args.out).read_text())
        rows = kept.get("rows", [])
        walls = {k: float(kept.get("walls", {}).get(k, 0.0)) for k in walls}
        print(f"resuming: {len(rows)} rows kept from {args.out}", flush=True)
    done_pairs = {(r["task"], r["candidate"]) for r in rows}
    with Evaluator(args.device) as evaluator:
        for index, (path, task) in enumerate(tasks.items()):
            for label, source in candidates(path, None if args.all_candidates else index).items():
                if (not on_gpu and label not in CPU_LABELS) or (task.id, label) in done_pairs:
                    continue
                row: dict = {"task": task.id, "candidate": label}
                for mode, options in modes.items():
                    row[f"warpgym_{mode}"] = warpgym_verdict(evaluator, task, source, options)
                walls["warpgym"] += row["warpgym_allow-torch"]["seconds"]
                if kb_eval is not None:
                    t0 = time.perf_counter()
                    row["kernelbench"] = kernelbench_verdict(kb_eval, path, source)
                    walls["kernelbench"] += time.perf_counter() - t0
                    ours, theirs = row["warpgym_allow-torch"]["correct"], row["kernelbench"].get("correct")
                    row["agree"] = bool(ours) == bool(theirs)
                    if label == "correct" and ours is False and theirs:
                        row["precision_probe"] = precision_probe(task)
                rows.append(row)
                print(json.dumps(row, default=str)[:400], flush=True)
                # after every row: a run stopped by its time limit keeps what it measured
                Path(args.out).write_text(json.dumps(summary(args.device, tasks, rows, walls), default=str))
    report = summary(args.device, tasks, rows, walls)
    Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    measured = report["agreement"] is not None
    agreement = f"{report['agreement']:.2%}" if measured else "not measured (no KernelBench side)"
    print(f"agreement {agreement} over {len(rows)} evaluations; "
          f"evaluations/min {report['evaluations_per_minute']}")


if __name__ == "__main__":
    main()
