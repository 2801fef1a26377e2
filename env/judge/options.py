"""What one evaluation is asked to do: target, device, shape sets, timing, limits."""

from __future__ import annotations

from dataclasses import dataclass, field

from warpgym.env.judge.seeds import check_root
from warpgym.env.toolchain.targets import TARGETS


@dataclass
class Limits:
    """Seconds allowed for each kind of request before the worker is killed."""

    load: float = 60.0
    run: float = 120.0
    compile: float = 600.0
    """Compiling every launch signature offline: linalg/spd-inverse's reference unrolls a 64-step loop at each
    size, and on two busy CPU cores its compiles for sm_90a passed 300 s."""
    timing: float = 300.0


@dataclass
class PairedTiming:
    """How the candidate and its baselines are timed side by side (judge/bench.py, judge/paired.py).

    Every round times a block of ``block_calls`` calls of the candidate and then of each baseline, the
    order reversed from one round to the next; the speedup is the median of the rounds' ratios with a
    95% order-statistics interval (judge/ratios.py). Rounds go on until the half-width of every interval
    the window's rounds give is at most ``precision`` (from ``min_rounds`` on; the reported interval is
    then grown by ``between_evaluations``, which no round can shrink), or until ``max_rounds`` or
    ``budget_seconds`` (the rounds' wall clock per bench case, the GPU held alone throughout) is spent:
    the result's ``ended_by`` says "precision" or "budget". A slow call gets shorter blocks (down to one
    call) so that ``min_rounds`` rounds fit in the budget; at least two rounds (one of each order) always run.

    ``traced_blocks`` of the candidate's blocks per bench case run under CUDA activity tracing, with the
    same evidence rules as a checked call (judge/device_evidence.py): each round carries one with
    probability ``traced_blocks / min_rounds``, drawn in the judge from ``trace_seed`` (a secret one when
    None; the worker never sees it), and a window that ends with fewer traces the rest after its last
    round. A traced block is an extra block beside the round's timed one, on the same inputs: its times
    are not samples, and its seconds do not count against ``budget_seconds``. 0 traces no timed call
    (the verdict then says so).
    """

    block_calls: int = 5
    min_rounds: int = 6
    """Six is the fewest rounds whose [min, max] covers the median with 95% (96.9%)."""
    max_rounds: int = 60
    budget_seconds: float = 4.0
    precision: float = 0.012
    """The window's own half-width that ends it: with the default term the reported one is then 2.8%."""
    between_evaluations: float = 0.025
    """Relative uncertainty added in quadrature to each side of every interval (judge/ratios.py): the
    rounds of one window sample the noise within it, not what differs from one evaluation to the next (the
    GPU's temperature and power state, a library's algorithm choice). Calibrated from every recorded run of
    five or ten processes (scripts/interval_study.py, docs/benchmarks.md): from 0.023 on (in steps of 0.001)
    every process's interval covers every other process's median in all 38 cases (32 on the H200, 6 on an
    H100), and 0.025 keeps a margin; 0.016 leaves 5 uncovered, each one process 1.5-2% from the others with
    tight rounds of its own. 0 reports the window's interval alone."""
    traced_blocks: int = 2
    trace_seed: int | None = None
    value_samples: int = 2
    """Timed calls per bench case whose outputs are read at secret positions and set against the reference
    of their inputs (judge/timed_values.py): each block is drawn with probability 1 / ``min_rounds``, up to
    this many, and one block more after the rounds when none was. 0 reads no timed call's outputs."""
    value_seed: int | None = None
    settling_rounds: int = 1
    """Rounds timed and thrown away before the first counted one, in the counted rounds' alternating order,
    when blocks are full length (judge/paired.py ``_settle``): on the H200 the first blocks after the
    warm-up read off. Their seconds do not count against ``budget_seconds``; 0 settles nothing."""

    def __post_init__(self) -> None:
        if self.block_calls < 1 or self.min_rounds < 2 or self.max_rounds < self.min_rounds:
            raise ValueError("paired timing needs block_calls >= 1 and 2 <= min_rounds <= max_rounds, not "
                             f"{self.block_calls}, {self.min_rounds}, {self.max_rounds}")
        if not 0 <= self.between_evaluations < 1:
            raise ValueError(f"paired timing needs 0 <= between_evaluations < 1, not "
                             f"{self.between_evaluations}")
        if self.max_rounds > 1000 or not self.budget_seconds > 0 or not 0 < self.precision < 1:
            raise ValueError("paired timing needs max_rounds <= 1000, budget_seconds > 0 and "
                             "0 < precision < 1")
        if not 0 <= self.value_samples <= self.max_rounds:
            raise ValueError("paired timing needs 0 <= value_samples <= max_rounds, not "
                             f"{self.value_samples}")
        if not 0 <= self.traced_blocks <= self.max_rounds:
            raise ValueError("paired timing needs 0 <= traced_blocks <= max_rounds, not "
                             f"{self.traced_blocks}")
        if not 0 <= self.settling_rounds <= 20:
            raise ValueError(f"paired timing needs 0 <= settling_rounds <= 20, not {self.settling_rounds}")


@dataclass
class EvalOptions:
    target: str = "sm_90a"
    device: str = "auto"
    shape_sets: tuple[str, ...] = ("dev",)
    timing: bool = True
    warmup: int = 5
    """Warm-up calls of each timed callable before its first block (the first one timed in a window also
    warms up for common/timing.WARMUP_SECONDS, so the GPU's clocks settle)."""
    reps: int | None = None
    """When given, the most timed calls of each callable in a bench case's window: ``paired.max_rounds``
    is lowered to ``reps // paired.block_calls`` rounds when that is fewer (never below ``min_rounds``)."""
    paired: PairedTiming = field(default_factory=PairedTiming)
    limits: Limits = field(default_factory=Limits)
    reveal_shapes: bool = True
    """Whether feedback may name the failing case (False for heldout scoring shown to a model)."""
    profile: bool | None = None
    """On a GPU, count executed instructions with Nsight Compute. None (the default) profiles exactly
    when the task requires instruction features on the target, since those must be shown executed;
    an Nsight Compute run costs tens of seconds, too much to pay for information alone."""
    allow_torch: bool = False
    """KernelBench's rule: the candidate may call PyTorch besides its own kernels (the result says so, and
    on a GPU reports the share of GPU time in its own kernels). The default, strict, refuses any PyTorch
    compute op in the candidate's code."""
    memcheck: bool = False
    """On a GPU, run compute-sanitizer memcheck on one case before timing; any error fails the candidate."""
    input_seed: int | None = None
    """The root every input the candidate is given is drawn from (judge/seeds.py): each check's, the
    re-checks', the timing's staged sets'. None (the default) draws a secret one for each evaluation, so
    no candidate can know its inputs in advance; the verdict records the root (``EvalResult.input_seed``),
    and giving it here replays that evaluation's inputs and verdict. A root a model could learn (a fixed
    one in a training loop) lets it store answers for those inputs."""

    def max_rounds(self) -> int:
        """Rounds a bench case's window may take: ``paired.max_rounds``, lowered by ``reps``."""
        rounds = self.paired.max_rounds
        if self.reps is not None:
            rounds = min(rounds, self.reps // self.paired.block_calls)
        return max(self.paired.min_rounds, rounds)

    def __post_init__(self) -> None:
        if self.input_seed is not None:
            check_root(self.input_seed)
        if self.target not in TARGETS:
            raise ValueError(f"unknown target {self.target!r}; use one of {', '.join(sorted(TARGETS))}")
        for name in self.shape_sets:
            if name not in ("dev", "heldout", "bench"):
                raise ValueError(f"unknown shape set {name!r}; use dev, heldout or bench")
