"""The five stages, in order, stopping at the first that fails (DESIGN.md, "The environment").

The harness process builds inputs and computes references; candidates run only in worker
processes (``pool.Worker``), which rebuild the same inputs from the same seeds and send
their outputs back to be compared here.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import math
import statistics
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import torch
from warpgym.env.common.device import (
    ceilings_for,
    device_name,
    release_cached_memory,
    resolve_device,
    roofline_ms,
)
from warpgym.env.judge import feedback as feedback_mod
from warpgym.env.judge.cache import JsonCache, code_fingerprint, environment_fingerprint, fingerprint
from warpgym.env.judge.compare import compare_outputs, raw_bytes, same_bits
from warpgym.env.judge.instructions import FAMILIES, FEATURES, count_cubin, count_ptx
from warpgym.env.judge.pool import Worker, WorkerError
from warpgym.env.judge.result import CaseResult, EvalResult, KernelReport, Timing, Violation
from warpgym.env.judge.static import check_source
from warpgym.env.toolchain.targets import TARGETS
from warpgym.tasks import Sampler, Task
from warpgym.tasks.spec import dtype_of, sequence

INTERPRETER_FP8 = (
    "float8 outputs: Triton's interpreter rounds and saturates fp8 conversions wrongly (triton 3.9), so this "
    "case was not run on the CPU; run on a GPU to check it"
)
INTERPRETER_BF16 = (
    "bfloat16 inputs: Triton's interpreter computes bf16 wrongly (triton 3.9, silently) or not at all "
    "(3.6), so this case was not run on the CPU; run on a GPU to check it"
)
NO_GPU_CUDA = (
    "CUDA/PTX kernels need a GPU: correctness was not checked on this device (the modules were compiled "
    "and analysed, and the first launch was checked, without running)"
)


@dataclass
class Limits:
    """Seconds allowed for each kind of request before the worker is killed."""

    load: float = 60.0
    run: float = 120.0
    compile: float = 300.0
    timing: float = 300.0


@dataclass
class EvalOptions:
    target: str = "sm_90a"
    device: str = "auto"
    shape_sets: tuple[str, ...] = ("dev",)
    timing: bool = True
    warmup: int = 5
    reps: int = 30
    limits: Limits = field(default_factory=Limits)
    reveal_shapes: bool = True
    """Whether feedback may name the failing case (False for heldout scoring shown to a model)."""
    profile: bool | None = None
    """On a GPU, count executed instructions with Nsight Compute. None (the default) profiles exactly
    when the task requires instruction features on the target, since those must be shown executed;
    an Nsight Compute run costs tens of seconds, too much to pay for information alone."""
    memcheck: bool = False
    """On a GPU, run compute-sanitizer memcheck on one case before timing; any error fails the candidate."""

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise ValueError(f"unknown target {self.target!r}; use one of {', '.join(sorted(TARGETS))}")
        for name in self.shape_sets:
            if name not in ("dev", "heldout", "bench"):
                raise ValueError(f"unknown shape set {name!r}; use dev, heldout or bench")


def _upcast(value: Any, precision: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(precision)
    return value


def _itemsize(t: Any) -> int:
    return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0


def _has_bf16(inputs: dict[str, Any]) -> bool:
    return any(isinstance(v, torch.Tensor) and v.dtype == torch.bfloat16 for v in inputs.values())


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return same_bits(a, b)
    return a == b


_T = TypeVar("_T")
# Bench cases are checked on one distribution: they are there to catch what only size shows (offsets
# past 2^31, grid limits). Outliers at 1e8 elements put a few fp16 attention outputs past any
# element-wise bound (a cancellation of two 100x values), which dev and heldout sizes check already.
BENCH_DISTRIBUTION = "uniform"
LATE_CALLS = 16
"""Extra calls before the late re-check (``Evaluator._late_recheck``)."""
LATE_SEED = 7919
REFERENCE_CACHE_BYTES = 256 << 20
"""Reference answers up to this size are kept for the next candidate of the same task (dev and
heldout cases); bench-sized ones are computed per evaluation instead of pinning gigabytes."""


def _digest(outputs: list[Any]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for o in outputs:
        if isinstance(o, torch.Tensor):
            t = o.detach().to("cpu")
            h.update(f"{t.dtype}{tuple(t.shape)}".encode())
            h.update(raw_bytes(t).numpy().tobytes() if t.numel() else b"")
        else:
            h.update(repr(o).encode())
    return h.hexdigest()


def _params(task: Task) -> list[str]:
    import ast

    fn = ast.parse(task.signature + ": ...").body[0]
    assert isinstance(fn, ast.FunctionDef)
    return [a.arg for a in fn.args.args]


class Evaluator:
    """Judges candidates; holds the workers and the caches that make repeat evaluations cheap."""

    def __init__(self, device: str = "auto") -> None:
        self.device = resolve_device(device)
        self.run_worker = Worker(self.device, mode="run")
        self.compile_worker = Worker("cpu", mode="compile")
        self._references: OrderedDict[tuple[Any, ...], tuple[list[torch.Tensor], list[Any]]] = OrderedDict()
        self._baselines: dict[tuple[Any, ...], dict[str, float]] = {}
        self._source = ""
        self._options = EvalOptions()
        self._inherited: int | None = None
        """The run worker's pid when it was kept from an earlier evaluation (see ``_evaluate``)."""
        self._baseline_cache = JsonCache("baselines")
        self._compiled: dict[str, dict[str, Any]] = {}
        """Offline compilations by (source, launch spec): a resubmitted kernel is not compiled again."""

    def close(self) -> None:
        self.run_worker.stop()
        self.compile_worker.stop()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _gpu_shared(self) -> contextlib.AbstractContextManager[None]:
        """Other GPU work shares the GPU, but never with a timing loop (env/timing.gpu_lock)."""
        if not self.device.startswith("cuda"):
            return contextlib.nullcontext()
        from warpgym.env.common.timing import gpu_lock

        return gpu_lock(torch.device(self.device).index or 0, shared=True)

    # ------------------------------------------------------------------ references
    def reference(self, task: Task, case: dict[str, Any], seed: int,
                  dist: str) -> tuple[list[torch.Tensor], list[Any]]:
        """Expected outputs (in high precision) and their expected shapes/dtypes (meta tensors)."""
        key = (task.id, tuple(sorted(case.items())), seed, dist, self.device)
        if key in self._references:
            self._references.move_to_end(key)
            return self._references[key]
        inputs = task.make_inputs(case, Sampler(seed, dist, self.device))
        try:
            meta = list(sequence(task.reference(**{k: v.to("meta") if isinstance(v, torch.Tensor) else v
                                                   for k, v in inputs.items()})))
        except Exception:  # noqa: BLE001 - some ops have no meta kernel; run at the real dtype instead
            meta = [o.to("meta") if isinstance(o, torch.Tensor) else o
                    for o in sequence(task.reference(**inputs))]
        precision = dtype_of(task.reference_precision)
        with torch.no_grad(), self._gpu_shared():
            expected = list(sequence(task.reference(**{k: _upcast(v, precision) for k, v in inputs.items()})))
        size = sum(t.numel() * t.element_size() for t in expected if isinstance(t, torch.Tensor))
        if size <= REFERENCE_CACHE_BYTES:
            self._references[key] = (expected, meta)  # bench-sized answers are used once: not kept
        while len(self._references) > 16:
            self._references.popitem(last=False)
        return expected, meta

    # ------------------------------------------------------------------ the stages
    def evaluate(self, task: Task, source: str, options: EvalOptions | None = None) -> EvalResult:
        options = options or EvalOptions()
        self._source, self._options = source, options
        result = EvalResult(task=task.id, target=options.target, device=device_name(self.device))
        started = time.perf_counter()
        place = torch.cuda.device(torch.device(self.device)) if self.device.startswith("cuda") \
            else contextlib.nullcontext()
        try:
            with place:  # references and baselines on this evaluator's GPU, not the current one
                self._evaluate(task, source, options, result)
        except Exception as exc:  # noqa: BLE001 - hostile input must end in a verdict, never a crashed harness
            result.runtime_error = (f"the harness failed while judging this candidate ({type(exc).__name__}: "
                                    f"{str(exc)[:500]}); the verdict is incomplete")
            result.correct = False if result.correct else result.correct
        finally:
            self._integrity(result)
            release_cached_memory(self.device)
            result.seconds["total"] = time.perf_counter() - started
            result.feedback = feedback_mod.render(result, task, options.reveal_shapes)
        return result

    def _evaluate(self, task: Task, source: str, options: EvalOptions, result: EvalResult) -> None:
        params = _params(task)
        report = check_source(source, task.entrypoint, params, task.language)
        result.violations.extend(report.violations)
        if not report.ok:
            return
        result.stage = "compile"
        t0 = time.perf_counter()
        # A worker kept from earlier evaluations may carry damage an earlier candidate did unseen (a write
        # past every guard into the allocator's data): if it crashes here, the case runs again in a new one.
        self._inherited = self._worker_pid()
        if not self._load(task, source, params, result):
            return
        plan = self._plan(task, options)
        if not plan:
            result.compile_errors.append("the task has no cases in the requested shape sets")
            return

        # Probe with the first runnable case: it records the launches to compile offline.
        probe_index = None if self._cuda_on_cpu(task) else \
            next((i for i, p in enumerate(plan) if not (self.device == "cpu" and p[4])), None)
        probe_reply = self._run(task, plan[probe_index], result) if probe_index is not None else None
        if probe_reply is not None and probe_reply.get("kind") == "compile":
            result.compile_errors.append(probe_reply["error"])
            return
        if not self._compile(task, options, result):
            return
        result.seconds["compile"] = time.perf_counter() - t0
        result.compiled = True

        result.stage = "correctness"
        t0 = time.perf_counter()
        failed_sets: set[str] = set()
        seen_outputs: dict[tuple[Any, ...], list[Any]] = {}
        digests: dict[tuple[Any, ...], list[tuple[str, str, int]]] = {}
        launched = loader_launched = 0
        for index, item in enumerate(plan):
            shape_set, case, seed, dist, fault = item
            if shape_set in failed_sets:
                continue
            if self.device == "cpu" and (fault or task.language == "cuda"):
                why = NO_GPU_CUDA if task.language == "cuda" else fault
                result.cases.append(CaseResult(shape_set, case, seed, dist, None, skipped=why))
                continue
            if shape_set == "bench" and index != probe_index:
                reply, case_result = self._bench_check(task, item, result)
            else:
                reply = probe_reply if index == probe_index else self._run(task, item, result)
                case_result = self._judge(task, item, reply, result) if reply is not None else None
            if reply is None or case_result is None:
                return
            if task.check is not None and case_result.passed:
                case_result = self._check_randomness(task, item, reply, seen_outputs, result) or case_result
            case_result = self._stale(task, item, reply, digests, result) or case_result
            result.cases.append(case_result)
            launched += reply.get("launches", 0) if reply.get("ok") else 0
            loader_launched += reply.get("loader_launches", 0) if reply.get("ok") else 0
            if not case_result.passed:
                failed_sets.add(shape_set)
                if reply.get("kind") in ("timeout", "crash"):
                    break
        if not failed_sets and not (self.device.startswith("cuda") and options.timing):
            self._late_recheck(task, plan, result)  # on a GPU the timing loop and the check after it do this
        result.seconds["correctness"] = time.perf_counter() - t0
        skipped = sorted({c.skipped for c in result.cases if c.skipped})
        result.skipped_checks.extend(skipped)
        ran = [c for c in result.cases if c.passed is not None]
        if task.language == "triton" and ran and launched == 0 and result.runtime_error is None:
            result.violations.append(Violation("no-kernel-launched", "the entrypoint returned without "
                                               "launching any Triton kernel; the arithmetic must run in a "
                                               "kernel"))
        if task.language == "cuda" and ran and loader_launched == 0 and result.runtime_error is None:
            result.violations.append(Violation(
                "no-kernel-launched", "the entrypoint returned without launching a kernel built through "
                "warpgym.env.toolchain.loader; a CUDA/PTX task's arithmetic must run in such kernels"))
        result.correct = bool(ran) and all(c.passed for c in ran) and not result.violations
        if not ran:
            result.correct = None
            result.skipped_checks.append("no correctness check could run on this device")
        if result.correct is None and self._cuda_on_cpu(task) and not result.violations:
            result.stage = "instructions"  # the static half of the verdict still holds on a CPU
            self._instructions(task, options, result)
            return
        if not result.correct:
            return

        result.stage = "instructions"
        t0 = time.perf_counter()
        self._compile(task, options, result)  # launches seen after the probe (other shapes)
        self._instructions(task, options, result)
        result.seconds["instructions"] = time.perf_counter() - t0
        if result.required_features_met is False:
            return
        if options.memcheck and self.device.startswith("cuda") and not self._memcheck(task, options, result):
            return

        result.stage = "timing"
        if not self.device.startswith("cuda"):
            result.skipped_checks.append("timing: no GPU on this machine (timing runs on CUDA devices only)")
            result.stage = "done"
            return
        if options.timing:
            t0 = time.perf_counter()
            self._timing(task, options, result)
            result.seconds["timing"] = time.perf_counter() - t0
        else:
            result.skipped_checks.append("timing: turned off for this evaluation")
        if result.correct:
            result.stage = "done"

    def _plan(self, task: Task, options: EvalOptions) -> list[tuple[str, dict[str, Any], int, str, bool]]:
        """(shape set, case, seed, distribution, why the CPU cannot check it or None) for every check."""
        plan = []
        for shape_set in options.shape_sets:
            for i, case in enumerate(task.cases(shape_set)):
                if shape_set == "bench":
                    plan.append((shape_set, case, task.seeds[0], BENCH_DISTRIBUTION, None))
                    continue
                for r in range(max(len(task.seeds), len(task.distributions))):
                    seed = task.seeds[r % len(task.seeds)]
                    dist = task.distributions[(i + r) % len(task.distributions)]
                    fault = self._interpreter_fault(task, case, seed, dist)
                    plan.append((shape_set, case, seed, dist, fault))
        return plan

    def _bench_check(self, task: Task, item: tuple[Any, ...], result: EvalResult
                     ) -> tuple[dict[str, Any] | None, CaseResult | None]:
        """A bench-size check outside the timing phase (timing off) uses the GPU's memory as the timing
        phase does (four evaluations checking bench shapes at once ran an H200 out of memory)."""
        def attempt(alone: bool) -> tuple[dict[str, Any] | None, CaseResult | None]:
            reply = self._run(task, item, result)
            if reply is None:
                return None, None
            _raise_if_shared_oom(reply, alone)
            return reply, self._judge(task, item, reply, result)

        return self._in_bench_slot(attempt)

    def _in_bench_slot(self, attempt: Callable[[bool], _T], undo: Callable[[], None] = lambda: None) -> _T:
        """``attempt(alone)`` in one of the GPU's bench slots; if the GPU's memory runs out while another
        evaluation's bench phase shares it, ``undo`` what the attempt recorded and run it again with every
        slot (alone on the GPU)."""
        from warpgym.env.common.timing import bench_slot

        index = torch.device(self.device).index or 0
        for alone in (False, True):
            with bench_slot(index, alone=alone):
                try:
                    return attempt(alone)
                # torch's: the harness's own reference or inputs at a bench shape ran out here
                except (_SharedOutOfMemory, torch.OutOfMemoryError):
                    if alone:
                        raise
                    undo()
                finally:
                    release_cached_memory(self.device)  # inside the slot: the next attempt needs it
        raise AssertionError("the attempt alone returns or raises")

    def _interpreter_fault(self, task: Task, case: dict[str, Any], seed: int, dist: str) -> str | None:
        """Why Triton's interpreter cannot be trusted with this case on a CPU, or None.

        bf16 is wrong in the interpreter whether read or written; fp8 reads are exact but writes
        round and saturate wrongly (shared/HARDWARE.md), so the outputs' dtypes matter too.
        """
        if self.device != "cpu" or task.language != "triton":
            return None
        try:
            inputs = task.make_inputs(case, Sampler(seed, dist, "meta"))
        except Exception:  # noqa: BLE001 - builders that compute on their tensors need real ones
            inputs = task.make_inputs(case, Sampler(seed, dist, "cpu"))
        if _has_bf16(inputs):
            return INTERPRETER_BF16
        try:
            outputs = sequence(task.reference(**inputs))
        except Exception:  # noqa: BLE001 - no meta kernel: the output dtypes are found at run time
            return None
        dtypes = {o.dtype for o in outputs if isinstance(o, torch.Tensor)}
        if torch.bfloat16 in dtypes:
            return INTERPRETER_BF16.replace("bfloat16 inputs", "bfloat16 outputs")
        if dtypes & {torch.float8_e4m3fn, torch.float8_e5m2}:
            return INTERPRETER_FP8
        return None

    def _worker_pid(self) -> int | None:
        proc = self.run_worker.proc
        return proc.pid if proc is not None and self.run_worker.alive else None

    def _load(self, task: Task, source: str, params: list[str], result: EvalResult) -> bool:
        msg = {"op": "load", "source": source, "entrypoint": task.entrypoint, "params": params,
               "target": self._options.target}
        pid = self._worker_pid()
        try:
            reply = self.run_worker.request(msg, timeout=self._options.limits.load)
        except WorkerError as exc:
            if exc.kind == "crash" and pid is not None and pid == self._inherited:
                self._inherited = None  # the damage was an earlier candidate's: import into a new worker
                return self._load(task, source, params, result)
            result.compile_errors.append(f"importing the module: {exc}")
            return False
        result.stdout = self.run_worker.log_tail(clear=True)
        if not reply["ok"]:
            if reply.get("kind") in ("entrypoint", "signature"):
                code = "missing-entrypoint" if reply["kind"] == "entrypoint" else "signature"
                result.violations.append(Violation(code, reply["error"]))
                result.stage = "static"
            else:
                result.compile_errors.append(f"importing the module failed:\n{reply['error']}")
            return False
        if reply.get("tampered"):
            self._tampered(reply["tampered"], result)
            return False
        return True

    def _tampered(self, names: list[str], result: EvalResult) -> None:
        result.violations.append(Violation("tampering", "the candidate replaced harness functions: "
                                           + ", ".join(names) + "; timing and synchronisation are not the "
                                           "candidate's to change"))
        self.run_worker.stop()  # never reuse a process whose torch was patched

    def _send_run(self, msg: dict[str, Any]) -> dict[str, Any]:
        """One run request; a dead or overrunning worker becomes a failed reply of that kind."""
        try:
            with self._gpu_shared():
                return self.run_worker.request(msg, timeout=self._options.limits.run)
        except WorkerError as exc:
            return {"ok": False, "kind": exc.kind, "error": str(exc)}

    def _run(self, task: Task, item: tuple[Any, ...], result: EvalResult) -> dict[str, Any] | None:
        shape_set, case, seed, dist, _ = item
        expected, meta = self.reference(task, case, seed, dist)
        poison_bytes = 2 * sum(_itemsize(m) for m in meta)
        msg = {"op": "run", "task": task.id, "case": case, "seed": seed, "distribution": dist,
               "poison_bytes": max(poison_bytes, 1 << 20), "max_output_bytes": 2 * poison_bytes + (16 << 20)}
        pid = self._worker_pid()
        reply = self._send_run(msg)
        if reply.get("kind") == "crash" and pid is not None and pid == self._inherited:
            self._inherited = None  # once: a crash in a worker of its own is the candidate's
            if self._load(task, self._source, _params(task), result):
                reply = self._send_run(msg)
        out = self.run_worker.log_tail(clear=True)
        if out:
            result.stdout = (result.stdout + "\n" + out).strip()[-4000:]
        if reply.get("cuda_error"):
            self.run_worker.stop()  # a CUDA error poisons the context
        if reply.get("tampered"):
            self._tampered(reply["tampered"], result)
        self._run_findings(task, reply, result)
        forbidden = {k: n for k, n in (reply.get("forbidden_ops") or {}).items() if not k.startswith("host:")}
        if forbidden and not any(v.code == "torch-op" for v in result.violations):
            ops = ", ".join(f"{op} (x{n})" for op, n in sorted(forbidden.items()))
            result.violations.append(Violation("torch-op", f"host code ran PyTorch compute ops: {ops}; only "
                                               "allocation, views and kernel launches are allowed"))
        if reply.get("mutated") and not any(v.code == "mutated-input" for v in result.violations):
            result.violations.append(Violation("mutated-input", "the candidate modified its inputs: "
                                               + ", ".join(reply["mutated"])
                                               + "; inputs must be left as given"))
        return reply

    # ------------------------------------------------------------------ checks against gaming (issue 7)
    @staticmethod
    def _flag(result: EvalResult, code: str, message: str) -> None:
        if not any(v.code == code for v in result.violations):
            result.violations.append(Violation(code, message))

    def _run_findings(self, task: Task, reply: dict[str, Any], result: EvalResult) -> None:
        """What one run's reply says about how the outputs were made, beyond their values."""
        from warpgym.env.worker.policy import HOST_ELEMENT_LIMIT

        host = {k.removeprefix("host: "): n for k, n in (reply.get("forbidden_ops") or {}).items()
                if k.startswith("host: ")}
        if host:
            routes = ", ".join(f"{route}: {n} elements" for route, n in sorted(host.items()))
            self._flag(result, "host-compute", f"host code moved tensor data through Python ({routes}); more "
                       f"than {HOST_ELEMENT_LIMIT} elements per call means the host, not a kernel, computed "
                       "the answer")
        if reply.get("kind") == "output":
            self._flag(result, "output-type", reply.get("error", "the outputs are not plain tensors"))
        if reply.get("scrub_error") and reply["scrub_error"] not in result.skipped_checks:
            result.skipped_checks.append(reply["scrub_error"])
        if reply.get("out_of_bounds"):
            self._flag(result, "out-of-bounds", "the candidate wrote past the end (or before the start) of "
                       "its input(s) " + ", ".join(reply["out_of_bounds"]) + ": an unmasked store or wrong "
                       "offsets corrupt memory that is not the kernel's")
        if reply.get("background"):
            self._flag(result, "background-work", f"{reply['background']} thread(s) started by the candidate "
                       "were still running when the entrypoint returned; every result must be computed (or "
                       "queued on the current stream) before it returns")
        if task.language == "triton" and reply.get("unwritten") and reply.get("launches") and \
                not reply.get("loader_launches"):
            which = ", ".join(f"output {i}" for i in reply["unwritten"])
            self._flag(result, "output-not-written", f"{which} was never given to any of the candidate's "
                       "Triton kernels, so no kernel computed it (a buffer filled on the host, by a library, "
                       "or never)")

    def _timing_findings(self, task: Task, stats: dict[str, Any], result: EvalResult) -> bool:
        """The timing loop's calls answer to the same rules as the checked ones (patching, host ops)."""
        found = len(result.violations)
        if stats.get("tampered"):
            self._tampered(stats["tampered"], result)
        self._run_findings(task, stats, result)
        ops = {k: n for k, n in (stats.get("forbidden_ops") or {}).items() if not k.startswith("host: ")}
        if ops:
            self._flag(result, "torch-op", "during the timing loop, host code ran PyTorch compute ops: "
                       + ", ".join(f"{op} (x{n})" for op, n in sorted(ops.items())))
        if len(result.violations) > found:
            result.correct = False
            return True
        return False

    def _stale(self, task: Task, item: tuple[Any, ...], reply: dict[str, Any],
               digests: dict[tuple[Any, ...], list[tuple[str, str, int]]],
               result: EvalResult) -> CaseResult | None:
        """The same outputs for inputs whose answers differ: results cached by pointer, shape or count."""
        shape_set, case, seed, dist, _ = item
        if not reply.get("ok") or task.check is not None:
            return None
        expected, _ = self.reference(task, case, seed, dist)
        mine = (_digest(reply["outputs"]), _digest(expected), seed)
        key = (shape_set, tuple(sorted(case.items())))
        for out_digest, ref_digest, other_seed in digests.get(key, []):
            if out_digest == mine[0] and ref_digest != mine[1]:
                message = (f"returned exactly the outputs of an earlier call (seed {other_seed}) for "
                           "different inputs: results are cached or replayed instead of computed")
                self._flag(result, "stale-output", message)
                return CaseResult(shape_set, case, seed, dist, False, message=message)
        digests.setdefault(key, []).append(mine)
        return None

    def _late_recheck(self, task: Task, plan: list[tuple[Any, ...]], result: EvalResult) -> None:
        """Call the candidate many more times, then check again on fresh inputs.

        The correctness runs are a candidate's first calls; on a GPU the timing loop comes next and the
        outputs are checked again after it. Where no timing runs (a CPU), this stands in for it, so a
        kernel that is right only while it is being watched, early on, fails here too.
        """
        runnable = [p for p in plan if not (self.device == "cpu" and (p[4] or task.language == "cuda"))]
        if not runnable:
            return
        # Sized by their reference answers: a bench case's is gigabytes, and never the smallest anyway.
        sized = [p for p in runnable if p[0] != "bench"] or runnable
        smallest = min(sized, key=lambda p: sum(_itemsize(m) for m in self.reference(task, *p[1:4])[1]))
        first = runnable[0]
        dists = task.distributions
        calls = [(smallest[0], smallest[1], LATE_SEED + i, dists[i % len(dists)], False)
                 for i in range(LATE_CALLS)]
        calls.append((first[0], first[1], LATE_SEED - 1, dists[-1], False))
        for n, item in enumerate(calls):
            reply = self._run(task, item, result)
            check = self._judge(task, item, reply or {"ok": False, "error": "no reply"}, result)
            if not check.passed:
                check.message = f"call {n + 1} after the correctness runs, on fresh inputs: " + check.message
                result.cases.append(check)
                self._flag(result, "inconsistent", f"outputs were right on the first calls and wrong on a "
                           f"later one (call {n + 1} after them, fresh inputs): a kernel must give the same "
                           "answers on every call, not only while it is first checked")
                return
        result.cases.append(check)

    def _integrity(self, result: EvalResult) -> None:
        """After every evaluation: flush each worker's channel, and turn what the sandbox refused and any
        forged reply into violations. A worker that saw either is replaced."""
        # Threads left running, or memory written past an input's end, leave the process itself unsound.
        background = any(v.code in ("background-work", "out-of-bounds") for v in result.violations)
        for worker in (self.run_worker, self.compile_worker):
            try:
                if worker.alive and worker.request({"op": "ping"}, timeout=30).get("tampered"):
                    worker.stop()  # patched by a candidate's import (the compile worker runs it too)
            except Exception:  # noqa: BLE001 - a worker that cannot answer a ping is replaced, not trusted
                worker.stop()
            incidents = worker.take_incidents()
            for code, message in incidents:
                if not any(v.code == code and v.message == message for v in result.violations):
                    result.violations.append(Violation(code, message))
            if incidents or (background and worker is self.run_worker):
                result.correct = False
                worker.stop()  # never reuse a process a candidate fought with, or left threads in
        report = self.run_worker.sandbox_report or self.compile_worker.sandbox_report
        if report is not None or result.stage != "static":
            result.sandbox = report or {"not_applied": {"sandbox": "the workers ran without a sandbox"}}

    def _judge(self, task: Task, item: tuple[Any, ...], reply: dict[str, Any],
               result: EvalResult) -> CaseResult:
        shape_set, case, seed, dist, _ = item
        if not reply.get("ok"):
            kind = reply.get("kind", "runtime")
            prefix = {"timeout": "timed out: ", "crash": "crashed: "}.get(kind, "raised an error: ")
            message = prefix + reply["error"]
            if result.runtime_error is None:
                result.runtime_error = reply["error"]
            return CaseResult(shape_set, case, seed, dist, False, message=message)
        outputs = reply["outputs"]
        if task.check is not None:
            # The worker's very inputs: drawn on this evaluator's device (a CUDA generator's numbers are
            # not the CPU's), and checked there too, with the outputs moved to it.
            inputs = task.make_inputs(case, Sampler(seed, dist, self.device))
            outputs = [o.to(self.device) if isinstance(o, torch.Tensor) else o for o in outputs]
            with torch.no_grad(), self._gpu_shared():
                problem = task.check(outputs[0] if len(outputs) == 1 else outputs, inputs, case)
            return CaseResult(shape_set, case, seed, dist, problem is None, message=problem or "")
        expected, meta = self.reference(task, case, seed, dist)
        fields = compare_outputs(outputs, expected, meta, task)
        return CaseResult(shape_set, case, seed, dist, **fields)

    def _check_randomness(self, task: Task, item: tuple[Any, ...], reply: dict[str, Any],
                          seen: dict[tuple[Any, ...], list[Any]], result: EvalResult) -> CaseResult | None:
        """For random ops: the same seed must give the same output, and other seeds other outputs."""
        shape_set, case, seed, dist, _ = item
        again = self._run(task, item, result)
        if not again or not again.get("ok"):
            return CaseResult(shape_set, case, seed, dist, False,
                              message="a second run with the same seed failed")
        if not all(_same(a, b) for a, b in zip(reply["outputs"], again["outputs"], strict=True)):
            return CaseResult(shape_set, case, seed, dist, False,
                              message="two runs with the same inputs and seed gave different outputs")
        key = (shape_set, tuple(sorted(case.items())))
        for other in seen.get(key, []):
            if other[0] != seed and all(_same(a, b) for a, b in zip(reply["outputs"], other[1], strict=True)):
                return CaseResult(shape_set, case, seed, dist, False,
                                  message=f"seeds {other[0]} and {seed} gave identical outputs")
        seen.setdefault(key, []).append((seed, reply["outputs"]))
        return None

    def _compile(self, task: Task, options: EvalOptions, result: EvalResult) -> bool:
        if task.language == "cuda":
            return self._compile_cuda(task, options, result)
        if task.language != "triton":
            return True
        if self._native_target() == options.target:
            return self._jit_kernels(options, result)
        try:
            reply = self.run_worker.request({"op": "specs", "targets": [options.target]}, timeout=60)
        except WorkerError as exc:
            result.compile_errors.append(f"recording launches: {exc}")
            return False
        result.compile_errors.extend(reply.get("errors", []))
        specs = reply.get("specs", [])
        if not specs:
            return not result.compile_errors
        keys = [fingerprint(self._source, spec) for spec in specs]
        todo = [spec for key, spec in zip(keys, specs, strict=True) if key not in self._compiled]
        if todo:
            try:
                self.compile_worker.request({"op": "load", "source": self._source, "entrypoint":
                                             task.entrypoint, "mode": "compile"}, timeout=options.limits.load)
                compiled = self.compile_worker.request({"op": "compile", "specs": todo},
                                                       timeout=options.limits.compile)
            except WorkerError as exc:
                result.compile_errors.append(f"compiling for {options.target}: {exc}")
                return False
            for spec, kernel in zip(todo, compiled.get("kernels", []), strict=False):
                self._compiled[fingerprint(self._source, spec)] = kernel
            while len(self._compiled) > 512:
                self._compiled.pop(next(iter(self._compiled)))
        self._add_kernels([self._compiled[key] for key in keys if key in self._compiled], result)
        return not result.compile_errors

    def _native_target(self) -> str | None:
        """The target Triton's JIT compiles for on this device (sm_90a on an H100/H200), if any."""
        if not self.device.startswith("cuda"):
            return None
        major, minor = torch.cuda.get_device_capability(torch.device(self.device))
        return {(9, 0): "sm_90a", (10, 0): "sm_100a"}.get((major, minor))

    def _jit_kernels(self, options: EvalOptions, result: EvalResult) -> bool:
        """On a GPU of the target's architecture, the kernels that ran are the ones to inspect."""
        try:
            reply = self.run_worker.request({"op": "jit_kernels"}, timeout=60)
        except WorkerError as exc:
            result.compile_errors.append(f"reading the compiled kernels: {exc}")
            return False
        self._add_kernels([{**k, "target": options.target} for k in reply.get("kernels", [])], result)
        return not result.compile_errors

    def _add_kernels(self, kernels: list[dict[str, Any]], result: EvalResult) -> None:
        known = {(k.name, k.target) for k in result.kernels}
        for kernel in kernels:
            if not kernel["ok"]:
                result.compile_errors.append(f"{kernel['kernel']} for {kernel['target']}:\n{kernel['error']}")
                continue
            if (kernel["name"], kernel["target"]) in known:
                continue
            known.add((kernel["name"], kernel["target"]))
            ptx_counts = count_ptx(kernel["ptx"])
            sass_counts: dict[str, int] = {}
            try:
                per_fn = count_cubin(base64.b64decode(kernel["cubin"]))
                for counts in per_fn.values():
                    for fam, n in counts.items():
                        sass_counts[fam] = sass_counts.get(fam, 0) + n
            except RuntimeError as exc:
                result.skipped_checks.append(f"SASS of {kernel['name']}: {exc}")
            result.kernels.append(KernelReport(
                name=kernel["name"], target=kernel["target"],
                families={fam: {"ptx": ptx_counts.get(fam, 0), "sass": sass_counts.get(fam, 0)}
                          for fam in FAMILIES},
                shared_bytes=kernel.get("shared")))

    # ------------------------------------------------------------------ CUDA/PTX candidates (loader.py)
    def _cuda_on_cpu(self, task: Task) -> bool:
        return task.language == "cuda" and not self.device.startswith("cuda")

    def _compile_cuda(self, task: Task, options: EvalOptions, result: EvalResult) -> bool:
        """The modules a CUDA/PTX candidate built through the loader: reports and instruction counts.

        Modules built at import are there already; on a CPU the entrypoint is also dry-run up to its
        first launch, so modules built at call time are compiled too and that launch is checked.
        """
        if self._cuda_on_cpu(task) and not result.compiled:
            case = task.cases("dev")[0]  # small: the dry run builds its inputs on the CPU
            msg = {"op": "dry_run", "task": task.id, "case": case, "seed": task.seeds[0],
                   "distribution": task.distributions[0]}
            try:
                reply = self.run_worker.request(msg, timeout=options.limits.compile)
            except WorkerError as exc:
                result.compile_errors.append(f"dry run of the entrypoint: {exc}")
                return False
            if reply.get("forbidden_ops"):
                ops = ", ".join(f"{op} (x{n})" for op, n in sorted(reply["forbidden_ops"].items()))
                result.violations.append(Violation(
                    "torch-op", f"host code ran PyTorch compute ops: {ops}; only allocation, views and "
                    "kernel launches are allowed"))
            if not reply.get("ok"):
                if reply.get("kind") in ("compile", "launch"):
                    result.compile_errors.append(reply["error"])
                    return False
                last = (reply.get("error", "").strip().splitlines() or [""])[-1][:300]
                result.skipped_checks.append("the entrypoint could not run on CPU tensors up to its first "
                                             "kernel launch, so modules it builds at call time were not "
                                             f"analysed: {last}")
            elif not reply.get("reached_launch"):
                result.skipped_checks.append("the entrypoint returned on CPU tensors without launching a "
                                             "kernel")
        try:
            reply = self.run_worker.request({"op": "modules"}, timeout=60)
        except WorkerError as exc:
            result.compile_errors.append(f"reading the compiled modules: {exc}")
            return False
        modules = reply.get("modules", [])
        if not modules:
            result.violations.append(Violation(
                "no-loader-module", "no module was built through warpgym.env.toolchain.loader (load_cuda / "
                "load_ptx); a CUDA/PTX task's kernels must be compiled and launched through it"))
            return False
        known = {(k.name, k.target) for k in result.kernels}
        for module in modules:
            if module["target"] != options.target:
                result.compile_errors.append(f"module {module['name']!r} was built for {module['target']}; "
                                             f"this evaluation targets {options.target} (omit target= or "
                                             "use loader.default_target())")
                continue
            for k in module["kernels"]:
                if (k["name"], module["target"]) in known:
                    continue
                known.add((k["name"], module["target"]))
                spills = None if k["spill_stores"] is None else k["spill_stores"] + (k["spill_loads"] or 0)
                result.kernels.append(KernelReport(
                    name=k["name"], target=module["target"],
                    families={fam: {"ptx": k["ptx"].get(fam, 0), "sass": k["sass"].get(fam, 0)}
                              for fam in FAMILIES},
                    registers=k["registers"], shared_bytes=k["shared"], spills=spills,
                    warnings=module["warnings"]))
            if module.get("analysis_error"):
                result.skipped_checks.append(f"SASS of module {module['name']}: {module['analysis_error']}")
        return not result.compile_errors

    def _executed_counts(self, task: Task, options: EvalOptions, result: EvalResult,
                         totals: dict[str, dict[str, int | None]]) -> bool:
        """On a GPU, fill ``totals[family]["executed"]`` from Nsight Compute; False when not measured."""
        wanted = options.profile if options.profile is not None else \
            bool(task.required_features.get(options.target))
        if not self.device.startswith("cuda") or not wanted:
            if task.required_features.get(options.target):
                why = "profiling was turned off" if self.device.startswith("cuda") else "they need a GPU"
                result.skipped_checks.append(f"executed instruction counts: {why}; required features were "
                                             "checked in the compiled code only")
            return False
        from warpgym.env.judge.profile import ProfileError, profile_candidate

        names = sorted({k.name for k in result.kernels if k.target == options.target})
        shape_set = next((s for s in options.shape_sets if s != "bench"), "dev")
        case = max(task.cases(shape_set), key=task.flops)
        t0 = time.perf_counter()
        try:
            with self._gpu_shared():
                prof = profile_candidate(task.id, self._source, case, seed=task.seeds[0],
                                         distribution=task.distributions[0], target=options.target,
                                         kernels=names, timeout=options.limits.timing, device=self.device)
        except ProfileError as exc:
            result.skipped_checks.append(f"executed instruction counts: {exc}")
            return False
        finally:
            result.seconds["profile"] = time.perf_counter() - t0
        for fam, n in prof.families().items():
            if fam in totals:
                totals[fam]["executed"] = n
        return True

    def _memcheck(self, task: Task, options: EvalOptions, result: EvalResult) -> bool:
        """compute-sanitizer memcheck on one case; an error is undefined behaviour, and fails."""
        from warpgym.env.judge.profile import ProfileError, memcheck_candidate

        case = task.cases(next((s for s in options.shape_sets if s != "bench"), "dev"))[0]
        t0 = time.perf_counter()
        try:
            with self._gpu_shared():
                report = memcheck_candidate(task.id, self._source, case, seed=task.seeds[0],
                                            distribution=task.distributions[0], target=options.target,
                                            timeout=options.limits.timing, device=self.device)
        except ProfileError as exc:
            result.skipped_checks.append(f"memcheck: {exc}")
            return True
        finally:
            result.seconds["memcheck"] = time.perf_counter() - t0
        if report.ok:
            return True
        result.correct = False
        result.violations.append(Violation("memcheck", f"compute-sanitizer memcheck found {report.errors} "
                                           f"error(s) on {case}:\n{report.text}"))
        return False

    def _instructions(self, task: Task, options: EvalOptions, result: EvalResult) -> None:
        totals = {fam: {"ptx": 0, "sass": 0, "executed": None} for fam in FAMILIES}
        for kernel in result.kernels:
            if kernel.target != options.target:
                continue
            for fam, counts in kernel.families.items():
                totals[fam]["ptx"] += counts["ptx"]
                totals[fam]["sass"] += counts["sass"]
        result.instructions = totals
        required = list(task.required_features.get(options.target, ()))
        result.required_features = required
        if not required:
            result.required_features_met = None if task.language == "triton" else True
            return
        measured = self._executed_counts(task, options, result, totals)
        for feature in required:
            families = FEATURES[feature]
            if not any(totals[f]["sass"] or totals[f]["ptx"] for f in families):
                result.missing_features[feature] = \
                    f"no {'/'.join(families)} instruction in any compiled kernel"
            elif measured and not any(totals[f]["executed"] for f in families):
                result.missing_features[feature] = (
                    f"{'/'.join(families)} instructions are compiled in (sass "
                    f"{sum(totals[f]['sass'] for f in families)}) but none was executed: they are dead code "
                    "on this path (a branch never taken, or a size that picks another kernel)")
        result.required_features_met = not result.missing_features
        result.arch_verified = result.required_features_met

    def _timing(self, task: Task, options: EvalOptions, result: EvalResult) -> None:
        """The bench phase (timing, the bench check after it, baselines), in the GPU's bench slots."""
        marks = len(result.cases), len(result.violations), len(result.suspicious), result.correct

        def undo() -> None:
            del result.cases[marks[0]:], result.violations[marks[1]:], result.suspicious[marks[2]:]
            result.runtime_error, result.correct = None, marks[3]

        self._in_bench_slot(lambda alone: self._bench_cases(task, options, result, alone), undo)

    def _bench_cases(self, task: Task, options: EvalOptions, result: EvalResult, alone: bool) -> None:
        ceilings = ceilings_for(self.device)
        timings: list[Timing] = []
        ratios: dict[str, list[float]] = {}
        for case in task.cases("bench"):
            # The bench case is checked once, after the timing loop, on inputs the loop never saw: a
            # check before it too would move every output out of the worker twice (a gigabyte for
            # the largest elementwise tasks), and a wrong result is thrown away with its timing.
            try:
                t_candidate = time.perf_counter()
                stats = self.run_worker.request({"op": "time", "task": task.id, "case": case,
                                                 "seeds": [0, 1, 2], "warmup": options.warmup,
                                                 "reps": options.reps},
                                                timeout=options.limits.timing)
                result.seconds["timing_candidate"] = result.seconds.get("timing_candidate", 0.0) + \
                    time.perf_counter() - t_candidate
            except WorkerError as exc:
                result.runtime_error = f"timing: {exc}"
                result.correct = False
                return
            if not stats.get("ok"):
                _raise_if_shared_oom(stats, alone)
                result.runtime_error = f"timing: {stats.get('error')}"
                result.correct = False
                return
            if self._timing_findings(task, stats, result):
                return
            if stats.get("hidden_work"):
                result.suspicious.append(
                    f"{case}: the wall clock ({stats['wall_median_ms']:.3f} ms) is far above the CUDA events "
                    f"({stats['event_median_ms']:.3f} ms): work escapes the timed stream; the wall clock is "
                    "used")
            # Check on fresh inputs after the timing loop: a kernel that behaves differently once warm fails.
            after = ("bench", case, 7, BENCH_DISTRIBUTION, False)
            reply = self._run(task, after, result) or {"ok": False, "error": "no reply"}
            if _out_of_memory(reply):
                # Not evidence of a kernel that changes once warm: the GPU's memory ran out under it.
                _raise_if_shared_oom(reply, alone)
                result.runtime_error = f"bench check after the timing loop: {reply.get('error')}"
                result.correct = False
                return
            recheck = self._judge(task, after, reply, result)
            result.cases.append(recheck)
            if not recheck.passed:
                result.correct = False
                if not self._right_when_cold(task, after, result):
                    return  # wrong at this size from its first call (an offset overflow...): a wrong answer
                result.violations.append(Violation("inconsistent", "outputs were right in the checks before "
                                                   "the timing loop and wrong after it, on fresh inputs; "
                                                   "a new process computes this case right"))
                return
            t_baselines = time.perf_counter()
            baselines = self._baseline_times(task, case, options, alone)
            result.seconds["timing_baselines"] = result.seconds.get("timing_baselines", 0.0) + \
                time.perf_counter() - t_baselines
            timing = Timing(case=case, median_ms=stats["median_ms"], min_ms=stats["min_ms"],
                            max_ms=stats["max_ms"], runs=stats["runs"], baselines_ms=baselines,
                            host_issue_ms=stats.get("issue_median_ms"))
            flops, nbytes = task.flops(case), task.bytes(case)
            timing.tflops = flops / (timing.median_ms * 1e9)
            timing.gbps = nbytes / (timing.median_ms * 1e6)
            if ceilings is not None:
                dtype = case.get("dtype", task.dtypes[0])
                timing.roofline_fraction = roofline_ms(ceilings, flops, nbytes, dtype) / timing.median_ms
                if timing.roofline_fraction > 1.05:
                    result.suspicious.append(f"{case}: {timing.roofline_fraction:.2f}x the device's roofline")
            for name, ms in baselines.items():
                ratios.setdefault(name, []).append(ms / timing.median_ms)
            vendor = baselines.get("vendor")
            if vendor and vendor / timing.median_ms > 3:
                result.suspicious.append(
                    f"{case}: {vendor / timing.median_ms:.1f}x faster than the vendor library")
            timings.append(timing)
        result.timing = timings
        result.speedup = {name: math.exp(statistics.fmean(math.log(r) for r in rs))
                          for name, rs in ratios.items()}

    def _right_when_cold(self, task: Task, item: tuple[Any, ...], result: EvalResult) -> bool:
        """Whether a bench case that failed after the timing loop passes in a new worker. The bench case
        is not checked before the loop, so only this tells a kernel that changes once warm (cheating)
        from one that is wrong at that size from its first call."""
        self.run_worker.stop()
        if not self._load(task, self._source, _params(task), result):
            return False
        reply = self._run(task, item, result) or {"ok": False, "error": "no reply"}
        return bool(reply.get("ok")) and self._judge(task, item, reply, result).passed

    def _baseline_times(self, task: Task, case: dict[str, Any], options: EvalOptions, alone: bool = True
                        ) -> dict[str, float]:
        from warpgym.env.common.timing import time_callable

        key = (task.id, tuple(sorted(case.items())), self.device)
        if key in self._baselines:
            return self._baselines[key]
        disk_key = fingerprint(task.id, code_fingerprint(task.reference, task.vendor, task.make_inputs), case,
                               task.baselines, environment_fingerprint(self.device), options.warmup,
                               options.reps)
        cached = self._baseline_cache.get(disk_key)
        if cached is not None:
            self._baselines[key] = cached
            return cached
        inputs = [task.make_inputs(case, Sampler(seed, "normal", self.device)) for seed in (0, 1, 2)]
        fns: dict[str, Any] = {}
        if "eager" in task.baselines:
            fns["eager"] = task.reference
        if "torch.compile" in task.baselines:
            fns["torch.compile"] = torch.compile(_own_code(task.reference))
        if task.vendor is not None:
            fns["vendor"] = task.vendor
        times = {}
        with torch.no_grad():
            for name, fn in fns.items():
                try:
                    stats = time_callable(fn, inputs, warmup=options.warmup, reps=options.reps)
                    times[name] = stats["median_ms"]
                except Exception as exc:  # noqa: BLE001 - a baseline that fails is left out, and said
                    if isinstance(exc, torch.OutOfMemoryError) and not alone:
                        raise _SharedOutOfMemory from None
                    times[f"{name} (failed: {type(exc).__name__})"] = float("nan")
        self._baselines[key] = {k: v for k, v in times.items() if v == v}
        if all(v == v for v in times.values()):
            self._baseline_cache.put(disk_key, self._baselines[key])
        return self._baselines[key]


class _SharedOutOfMemory(Exception):
    """The GPU ran out of memory in a bench phase that shared it with another evaluation's."""


def _out_of_memory(reply: dict[str, Any]) -> bool:
    return not reply.get("ok") and "OutOfMemoryError" in str(reply.get("error"))


def _raise_if_shared_oom(reply: dict[str, Any], alone: bool) -> None:
    if not alone and _out_of_memory(reply):
        raise _SharedOutOfMemory


def _own_code(fn: Any) -> Any:
    """``fn`` behind a wrapper with a code object of its own. Dynamo caches compiled graphs per code
    object, and tasks declared in a loop share one reference lambda: after eight tasks or dtypes its
    recompile limit was hit and "torch.compile" silently timed eager code."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    call.__code__ = call.__code__.replace()
    return call


def evaluate(task: Task, source: str, options: EvalOptions | None = None, evaluator: Evaluator | None = None
             ) -> EvalResult:
    """Judge one candidate; a throwaway Evaluator is made (and closed) when none is given."""
    options = options or EvalOptions()
    own = evaluator is None
    evaluator = evaluator or Evaluator(options.device)
    try:
        return evaluator.evaluate(task, source, options)
    finally:
        if own:
            evaluator.close()
