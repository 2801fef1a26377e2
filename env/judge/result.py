"""The typed verdict of one evaluation, and its JSON form.

Every field a consumer reads is here; the feedback text is derived from it
(``feedback.py``) so the model and the researcher see the same facts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from warpgym.env.protocol.violations import Violation

__all__ = ["STAGES", "CaseResult", "EvalResult", "KernelReport", "MachineState", "Ratio", "Timing",
           "Violation"]

STAGES = ("static", "compile", "correctness", "instructions", "timing", "done")


@dataclass
class CaseResult:
    """The check of one (shape set, case, seed, distribution)."""

    shape_set: str
    case: dict[str, Any]
    seed: int
    distribution: str
    passed: bool | None
    """None when the check could not run here (see ``skipped``)."""
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    rel_l2_error: float | None = None
    mismatches: int | None = None
    numel: int | None = None
    first_mismatch: dict[str, Any] | None = None
    message: str = ""
    skipped: str | None = None


@dataclass
class KernelReport:
    """One compiled kernel: where it came from and what it contains."""

    name: str
    target: str
    families: dict[str, dict[str, int]]
    registers: int | None = None
    shared_bytes: int | None = None
    spills: int | None = None
    warnings: list[str] = field(default_factory=list)
    builds: list[str] = field(default_factory=list)
    """The loader modules (``position:name``) whose kernel of this name is counted here: a module that defines
    a name again adds what it holds (the most of each family), so no version of a kernel goes uncounted."""
    sass_unread: dict[str, str] = field(default_factory=dict)
    """Why its SASS could not be read, by build (``""`` for a Triton kernel): where it was not, its PTX counts
    alone. Kept by build rather than read back from the skipped checks' wording, which names the candidate's
    own kernels and modules and so could be made to match another's."""


@dataclass
class Ratio:
    """One baseline's speedup on one bench case, measured paired (judge/paired.py): the median of the
    rounds' ratios (baseline over candidate) and its order-statistics interval (judge/ratios.py)."""

    median: float
    low: float
    high: float
    coverage: float
    """The interval's exact chance of covering the true median: at least 0.95 from six rounds on."""
    rounds: int


@dataclass
class MachineState:
    """The GPU during a timing window, sampled through NVML (judge/machine.py)."""

    sampled: bool
    reason: str | None = None
    """Why nothing was sampled (no NVML here, no handle for the device)."""
    samples: int = 0
    sm_clock_mhz: dict[str, float] = field(default_factory=dict)
    """``min``, ``median`` and ``max`` over the samples; likewise power and temperature."""
    power_w: dict[str, float] = field(default_factory=dict)
    temperature_c: dict[str, float] = field(default_factory=dict)
    power_limit_w: float | None = None
    reasons: list[str] = field(default_factory=list)
    """Every clock event (throttle) reason seen in the window."""
    flagged: list[str] = field(default_factory=list)
    """Those that slow the clock other than the power cap: thermal, hardware slowdown, sync boost."""


@dataclass
class Timing:
    """Milliseconds per call, for one bench case, with the candidate and its baselines timed in the same
    window (judge/paired.py); every figure here is from that window, none from a cache."""

    case: dict[str, Any]
    median_ms: float
    min_ms: float
    max_ms: float
    runs: int
    baselines_ms: dict[str, float] = field(default_factory=dict)
    host_issue_ms: float | None = None
    """Median host time to issue one call (until ``fn`` returns); near ``median_ms``: host-bound."""
    starved_calls: int = 0
    """Timed calls the GPU may have waited in for the host (their start event was reached before the
    call was issued, even after the longest spin): near ``runs``, the figure is the host's, not the GPU's."""
    retimed_calls: int = 0
    """Calls timed again after a longer spin because the GPU reached them before the host had issued them."""
    tflops: float | None = None
    gbps: float | None = None
    roofline_fraction: float | None = None
    ratios: dict[str, Ratio] = field(default_factory=dict)
    """Per baseline: the speedup with its interval (``baselines_ms`` over ``median_ms`` is not it: the
    ratio is the median of the rounds' ratios)."""
    rounds: int = 0
    block_calls: int = 0
    round_ms: list[float] = field(default_factory=list)
    """The candidate's block median, round by round (even rounds time the candidate first, odd ones last)."""
    round_ratios: dict[str, list[float]] = field(default_factory=dict)
    """Per baseline, each round's ratio in the same order: the evidence behind ``ratios``."""
    order_effect: dict[str, float] = field(default_factory=dict)
    """Per baseline, how much higher its ratio read with the candidate's block first than with it last
    (judge/paired.py ``PairedOutcome.order_effect``): near zero when neither side slows the other."""
    ended_by: str | None = None
    """"precision" (every interval narrow enough) or "budget" (rounds or seconds spent)."""
    settled: bool = False
    """A settling round ran before the counted ones and was thrown away (judge/paired.py ``_settle``)."""
    settling_rounds: int = 0
    """How many ran (options.PairedTiming.settling_rounds; none when the blocks were shortened)."""
    baseline_errors: dict[str, str] = field(default_factory=dict)
    """Baselines that could not be timed here, and why."""
    machine: MachineState | None = None
    traced_blocks: int = 0
    """The candidate's blocks traced on the device in this window (judge/timed_trace.py), beside the timed
    ones: ``traced_calls`` calls that are not among the ``runs``, taking ``trace_seconds`` in all."""
    traced_calls: int = 0
    trace_seconds: float = 0.0
    traced_device_ms: float | None = None
    """Per call, the milliseconds the candidate's kernels kept the GPU busy in the traced timed blocks
    (median over blocks): the work of a timed call, seen by the device. ``median_ms`` below a fraction of it
    or of ``checked_device_ms`` fails the candidate (judge/timed_evidence.py)."""
    checked_device_ms: float | None = None
    """The same for the bench case's check after the window: the work of a call whose answer was judged."""
    sampled_values: dict[str, Any] | None = None
    """Timed calls whose outputs were read at sampled positions and set against what their inputs must
    give (judge/timed_values.py): ``calls``, ``elements``, ``mismatches`` and, for a wrong answer, the
    ``message``. None when none was sampled."""


@dataclass
class EvalResult:
    task: str
    target: str
    device: str
    stage: str = "static"
    """The last stage reached (``done`` when every stage ran)."""
    input_seed: int | None = None
    """The root the evaluation drew its inputs from (``EvalOptions.input_seed``, judge/seeds.py):
    ``EvalOptions(input_seed=...)`` or ``warpgym eval --input-seed`` replays them. Never in ``feedback``."""
    compiled: bool = False
    correct: bool | None = None
    arch_verified: bool | None = None
    """The required instructions shown executed in the profiled call (``required_features_met``) and, for a
    tensor-core feature, shown at work in the timed calls by their speed (``timed_tensor_cores``)."""
    violations: list[Violation] = field(default_factory=list)
    compile_errors: list[str] = field(default_factory=list)
    runtime_error: str | None = None
    harness_failure: str | None = None
    """The exception type when the harness itself failed (``runtime_error`` says more): the verdict is
    incomplete, and an ``OutOfMemoryError`` may be memory another evaluation on the GPU held."""
    cases: list[CaseResult] = field(default_factory=list)
    kernels: list[KernelReport] = field(default_factory=list)
    instructions: dict[str, dict[str, int | None]] = field(default_factory=dict)
    required_features: list[str] = field(default_factory=list)
    required_features_met: bool | None = None
    missing_features: dict[str, str] = field(default_factory=dict)
    executed_work: dict[str, Any] | None = None
    """On a GPU, what the profiled call's instructions did (judge/work.py): flops per tensor-core family,
    other floating-point flops and ordinary global-load bytes, beside the task's flops and bytes for the
    profiled case."""
    timing: list[Timing] | None = None
    speedup: dict[str, float] | None = None
    """Per baseline: the geometric mean over bench cases of each case's median ratio (the point estimate)."""
    speedup_low: dict[str, float] | None = None
    """The conservative counterpart: the geometric mean of each case's interval's lower bound (it is
    below the true speedup whenever every case's interval covers its own)."""
    speedup_high: dict[str, float] | None = None
    throttled: list[str] = field(default_factory=list)
    """Clock slowdowns other than the power cap seen while timing (``Timing.machine.flagged``)."""
    skipped_checks: list[str] = field(default_factory=list)
    suspicious: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """How the checks ran where that differs from a GPU (a workaround for Triton's interpreter)."""
    stdout: str = ""
    feedback: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    sandbox: dict[str, Any] | None = None
    """What confined the candidate's worker: ``applied`` and ``not_applied`` protections, each with a
    sentence (env/worker/confine.py); None when the evaluation never started a worker."""
    mode: str | None = None
    """For imported problems: ``strict`` (only the candidate's kernels compute) or ``allow-torch``
    (PyTorch calls allowed, KernelBench's rule); None for our own tasks, which are always strict."""
    own_gpu_share: float | None = None
    """With PyTorch calls allowed, on a GPU: the share of GPU kernel time spent in the candidate's own
    kernels over the checked calls (from the device trace)."""
    extensions: list[str] = field(default_factory=list)
    """The CUDA extensions (``load_inline``) the candidate built and loaded: native host code ran in its
    worker, whose in-process evidence such code could reach (docs/threat-model.md)."""
    timed_tensor_cores: list[dict[str, Any]] | None = None
    """Per bench case of a task that requires tensor-core instructions: the timed median's rate
    (``tflops``), what CUDA cores reach without tensor cores (``cuda_core_tflops``), and whether the first
    is far enough above the second to show the tensor cores at work (``shown``):
    judge/tensor_core_timing.py."""
    other_tensor_cores: dict[str, list[str]] | None = None
    """For a task that requires one kind of tensor core (wgmma, tcgen05): each other kind compiled into the
    candidate's kernels, with the kernels that hold it; any withdraws the mark (judge/tensor_core_kind.py)."""
    device_activity: dict[str, Any] | None = None
    """What the GPU ran inside the entrypoint, by CUDA activity tracing: ``traced_calls``, ``kernels``
    (each name seen and how often), ``seconds`` the tracing took; None without a GPU. After a timing,
    ``timed`` says the same of the timed calls that were traced: ``traced_blocks``, ``traced_calls`` (and
    ``timed_calls``, the timed samples beside them), ``kernels`` and ``seconds`` (the traced blocks in
    the worker, their calls included)."""

    @property
    def errors(self) -> dict[str, dict[str, Any]]:
        """Per failing shape set: worst errors and mismatch count (the CLI's ``errors``)."""
        out: dict[str, dict[str, Any]] = {}
        for c in self.cases:
            if c.passed is not False:
                continue
            e = out.setdefault(c.shape_set, {"max_abs_error": 0.0, "max_rel_error": 0.0, "mismatches": 0,
                                             "failed_cases": 0, "first_failure": None})
            e["max_abs_error"] = _nanmax(e["max_abs_error"], c.max_abs_error)
            e["max_rel_error"] = _nanmax(e["max_rel_error"], c.max_rel_error)
            e["mismatches"] += c.mismatches or 0
            e["failed_cases"] += 1
            if e["first_failure"] is None:
                e["first_failure"] = {"case": c.case, "seed": c.seed, "distribution": c.distribution,
                                      "message": c.message, "first_mismatch": c.first_mismatch}
        return out

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["errors"] = self.errors
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvalResult:
        d = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        d["violations"] = [Violation(**v) for v in d.get("violations", [])]
        d["cases"] = [CaseResult(**c) for c in d.get("cases", [])]
        d["kernels"] = [KernelReport(**k) for k in d.get("kernels", [])]
        if d.get("timing") is not None:
            d["timing"] = [_timing(t) for t in d["timing"]]
        return cls(**d)

    def speedup_by(self, baseline: str, conservative: bool = False) -> float | None:
        """The speedup over ``baseline``: the point estimate, or with ``conservative`` the interval's
        lower bound (None when not timed; a result stored before intervals has no lower bound)."""
        return ((self.speedup_low if conservative else self.speedup) or {}).get(baseline)

    def faster_than(self, baseline: str, p: float = 1.0, conservative: bool = False) -> bool | None:
        """Correct and more than ``p`` times as fast as ``baseline`` (fast_p's test); None when untimed."""
        speedup = self.speedup_by(baseline, conservative)
        return None if speedup is None else bool(self.correct) and speedup > p


def _timing(d: dict[str, Any]) -> Timing:
    d = {k: v for k, v in d.items() if k in Timing.__dataclass_fields__}
    d["ratios"] = {name: Ratio(**r) for name, r in (d.get("ratios") or {}).items()}
    if d.get("machine") is not None:
        d["machine"] = MachineState(**d["machine"])
    return Timing(**d)


def _nanmax(a: float | None, b: float | None) -> float | None:
    values = [v for v in (a, b) if v is not None]
    if not values:
        return None
    if any(v != v for v in values):  # NaN is the worst error there is
        return float("nan")
    return max(values)
