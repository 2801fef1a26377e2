"""One evaluation: the five stages in order, stopping at the first that fails (DESIGN.md, "The
environment").

An ``Evaluation`` owns everything about judging one candidate: the task, the candidate, the options,
the checks, the workers it was lent and the verdict it writes. The evaluator that made it lends it
workers and shares its caches, nothing else, so two evaluations never see each other's state.

The judge builds inputs and computes references; candidates run only in worker processes, which receive
the inputs (tensors, never a seed) and send their outputs back to be compared here. The inputs come from
seeds derived from a root of this evaluation's own (judge/seeds.py), so no candidate knows them in advance.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from warpgym.env.candidate import Candidate
from warpgym.env.common.device import RESERVED_LIMIT, device_name, release_cached_memory
from warpgym.env.judge import (
    bench,
    channel,
    correctness,
    device_evidence,
    inspection,
    kernels,
    tensor_core_kind,
    tensor_core_timing,
    timed_evidence,
)
from warpgym.env.judge import feedback as feedback_mod
from warpgym.env.judge.options import EvalOptions
from warpgym.env.judge.plan import Check, params, plan
from warpgym.env.judge.pool import Worker
from warpgym.env.judge.references import Memo, Reference, References
from warpgym.env.judge.result import CaseResult, EvalResult
from warpgym.env.judge.seeds import InputSeeds, derive, draw_root
from warpgym.env.judge.static import check_source
from warpgym.env.judge.static_models import check_model_source
from warpgym.env.protocol.messages import RunReply
from warpgym.env.protocol.violations import violation
from warpgym.tasks import Task
from warpgym.tasks.importers.model_problem import parameters_drawn_with

log = logging.getLogger(__name__)


@dataclass
class Workers:
    """The pair of worker processes an evaluation is lent: one runs the candidate, one compiles offline."""

    run: Worker
    compile: Worker


@dataclass
class Caches:
    """What evaluations of one evaluator share, each safe to use from several threads."""

    references: References
    compiled: Memo[str, dict[str, Any]] = field(default_factory=lambda: Memo(512))
    """Offline compilations by (candidate, launch spec): a resubmitted kernel is not compiled again."""


@dataclass(eq=False)
class Evaluation:
    task: Task
    candidate: Candidate
    options: EvalOptions
    device: str
    workers: Workers
    caches: Caches
    result: EvalResult = field(init=False)
    params: list[str] = field(init=False)
    device_traces: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(case, trace) of every checked call on a GPU: what the device ran (judge/device_evidence.py)."""
    traces_judged: int = 0
    """How many of ``device_traces`` a device verdict has read (the bench checks after timing come later)."""
    timed_traces: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(label, trace) of every traced timed block (judge/timed_trace.py, judge/timed_evidence.py)."""
    inherited: int | None = None
    """The run worker's pid when it was kept from an earlier evaluation: a crash there may be an
    earlier candidate's doing (see ``channel.run``)."""
    loaded: int | None = None
    """The pid of the run worker the candidate was loaded into: a call finding another one there (the
    worker died between calls, and a fresh one holds no candidate) is a crash of that worker."""
    extensions: list[str] = field(default_factory=list)
    """The CUDA extensions the candidate built (``load_inline``): native code in the run worker."""
    models_sent: set[str] = field(default_factory=set)
    """For a module-class candidate: the cases whose model parameters the run worker got since the
    candidate was last loaded (``shipped.model_call``)."""
    seeds: InputSeeds = field(init=False)
    """Where every input this evaluation sends comes from: ``options.input_seed``, or a root drawn now."""
    references: References = field(init=False)
    """The evaluator's shared references under a root the user chose (a replay may meet them again);
    under a drawn one, this evaluation's own, gone with it: no later evaluation draws those inputs."""

    def __post_init__(self) -> None:
        root = self.options.input_seed
        self.seeds = InputSeeds(draw_root() if root is None else root)
        self.references = self.caches.references if root is not None else \
            References(self.caches.references.device, self.caches.references.memo.size)
        self.result = EvalResult(task=self.task.id, target=self.options.target,
                                 device=device_name(self.device), input_seed=self.seeds.root)
        self.params = params(self.task)

    # ------------------------------------------------------------------ what other parts of the judge use
    @property
    def on_gpu(self) -> bool:
        return self.device.startswith("cuda")

    @property
    def cuda_on_cpu(self) -> bool:
        return self.task.language == "cuda" and not self.on_gpu

    def gpu_shared(self) -> contextlib.AbstractContextManager[None]:
        """Other GPU work shares the GPU, but never with a timing loop (common/timing.gpu_lock)."""
        if not self.on_gpu:
            return contextlib.nullcontext()
        from warpgym.env.common.timing import gpu_lock

        return gpu_lock(torch.device(self.device).index or 0, shared=True)

    def release_memory(self) -> None:
        """Give cached GPU memory above ``RESERVED_LIMIT`` back after a check. A large check's answers would
        otherwise stay cached in this process until the evaluation ends, where another evaluation's bench
        phase, alone in the GPU's bench slots, needs the memory (on an H100 one ran out while another judge
        process held 57 GiB). Under the shared lock, so that no timing window sees memory unmapped."""
        if self.on_gpu and torch.cuda.memory_reserved(torch.device(self.device)) > RESERVED_LIMIT:
            with self.gpu_shared():
                release_cached_memory(self.device)

    def reference(self, check: Check) -> Reference:
        """The expected outputs of ``check``'s inputs (its role's derived seed)."""
        return self.references.get(self.task, check.case, self.seeds.seed(check.seed, check.purpose),
                                   check.distribution, self.gpu_shared, role=check.seed, salt=self.seeds.salt)

    def load(self) -> bool:
        return channel.load(self)

    def run(self, check: Check, settle_ms: float = 0.0) -> RunReply | None:
        return channel.run(self, check, settle_ms)

    def judge(self, check: Check, reply: RunReply) -> CaseResult:
        return correctness.judge(self, check, reply)

    def flag(self, code: str, **fields: Any) -> None:
        """Record the violation ``code`` once per evaluation."""
        if not any(v.code == code for v in self.result.violations):
            self.result.violations.append(violation(code, **fields))

    # ------------------------------------------------------------------ the stages
    def evaluate(self) -> EvalResult:
        result = self.result
        started = time.perf_counter()
        place = torch.cuda.device(torch.device(self.device)) if self.on_gpu else contextlib.nullcontext()
        parameters = parameters_drawn_with(derive(self.seeds.root, "model parameters"))
        try:
            with place, parameters:  # on this evaluation's GPU; an imported model's parameters its own
                self._stages()
        except Exception as exc:  # noqa: BLE001 - hostile input must end in a verdict, never a crashed harness
            result.runtime_error = (f"the harness failed while judging this candidate ({type(exc).__name__}: "
                                    f"{str(exc)[:500]}); the verdict is incomplete")
            result.correct = False if result.correct else result.correct
            result.harness_failure = type(exc).__name__
        finally:
            channel.integrity(self)
            channel.retire_native(self)
            if self.references is not self.caches.references:
                self.references.memo.clear()  # inputs no later evaluation draws: their answers go now
            release_cached_memory(self.device)
            result.seconds["total"] = time.perf_counter() - started
            result.feedback = feedback_mod.render(result, self.task, self.options.reveal_shapes)
        return result

    def enter(self, stage: str) -> None:
        """Record the stage reached, and log it (``warpgym eval --verbose``): a stalled run shows where."""
        self.result.stage = stage
        log.info("%s: %s", self.task.id, stage)

    def _stages(self) -> None:
        task, options, result = self.task, self.options, self.result
        result.mode = "allow-torch" if options.allow_torch else ("strict" if task.model is not None else None)
        if task.model is not None:
            report = check_model_source(self.candidate.source, task.entrypoint, self.params,
                                        options.allow_torch)
        else:
            report = check_source(self.candidate.source, task.entrypoint, self.params, task.language)
        result.violations.extend(report.violations)
        if not report.ok:
            return
        self.enter("compile")
        t0 = time.perf_counter()
        # A worker kept from earlier evaluations may carry damage an earlier candidate did unseen (a write
        # past every guard into the allocator's data): if it crashes here, the case runs again in a new one.
        channel.close_problem_file(self)
        self.inherited = channel.worker_pid(self.workers.run)
        if not self.load():
            return
        checks = plan(task, options, self.device)
        if not checks:
            result.compile_errors.append("the task has no cases in the requested shape sets")
            return
        # Probe with the first runnable case: it records the launches to compile offline.
        probe = None if self.cuda_on_cpu else \
            next((c for c in checks if not (self.device == "cpu" and c.fault)), None)
        probe_reply = self.run(probe) if probe is not None else None
        if probe_reply is not None and probe_reply.kind == "compile":
            result.compile_errors.append(probe_reply.error or "")
            return
        if not kernels.compile(self):
            return
        result.seconds["compile"] = time.perf_counter() - t0
        result.compiled = True

        self.enter("correctness")
        t0 = time.perf_counter()
        correctness.check_all(self, checks, probe, probe_reply)
        result.seconds["correctness"] = time.perf_counter() - t0
        if result.correct is None and self.cuda_on_cpu and not result.violations:
            self.enter("instructions")  # the static half of the verdict still holds on a CPU
            inspection.instructions(self)
            return
        if result.correct is None and correctness.interpreter_limited(result.cases) and not result.violations:
            self.enter("instructions")  # what the interpreter could not run must still compile
            if not kernels.compile(self):
                result.compiled = False
                return
            inspection.instructions(self)
            return
        if not result.correct:
            return

        self.enter("instructions")
        t0 = time.perf_counter()
        if not kernels.compile(self):  # launches seen after the probe (other shapes) must compile too
            result.correct = False
            return
        if not device_evidence.judge(self):
            return
        inspection.instructions(self)
        result.seconds["instructions"] = time.perf_counter() - t0
        if result.required_features_met is False:
            return
        if options.memcheck and self.on_gpu and not inspection.memcheck(self):
            return

        self.enter("timing")
        if not self.on_gpu:
            result.skipped_checks.append("timing: no GPU on this machine (timing runs on CUDA devices only)")
            self.enter("done")
            return
        if options.timing:
            t0 = time.perf_counter()
            bench.timing(self)
            # Kernels first launched at a bench size are the candidate's too (and must compile, as those of
            # any other case): known before the device's verdict on the timed calls. Loader modules built
            # during the timing are counted whether or not a timed block was traced.
            traced = self.timed_traces or len(self.device_traces) > self.traces_judged
            if (traced or task.language == "cuda") and channel.worker_pid(self.workers.run) == self.loaded \
                    and not kernels.compile(self):
                result.correct = False
            if traced:
                timed_evidence.judge_after_timing(self)
            tensor_core_kind.judge(self)
            tensor_core_timing.judge(self)
            result.seconds["timing"] = time.perf_counter() - t0
        else:
            result.skipped_checks.append("timing: turned off for this evaluation")
        if result.correct:
            self.enter("done")
