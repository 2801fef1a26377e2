"""The typed requests and replies of each worker operation.

The worker builds its replies with these types and the judge validates every reply it receives
(``parse_reply``) before reading a field: a reply that does not fit its type, forged or broken, is a
``ProtocolError`` with the field that is wrong, never a KeyError deep inside a stage. The wire
below them stays JSON and raw tensor bytes (``wire``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class ProtocolError(Exception):
    """A worker's reply that is not a well-formed answer to its request: a harness error."""


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    def wire(self) -> dict[str, Any]:
        """Plain data for ``wire.send`` (tensors stay tensors: the wire sends their bytes)."""
        return self.model_dump()


# ---------------------------------------------------------------------------------------- requests
class ModelCall(Message):
    """For a task whose candidate is a module class (an imported ``ModelNew``): which instance to call, and
    how to build it. The worker keeps one instance per ``key`` (a case's sizes) until the next load; the
    problem itself (its file, its ``Model``) never reaches the worker, only these values."""

    key: str
    init_inputs: list[Any] = Field(default_factory=list)
    """The constructor's arguments (numbers, lists), as the problem's ``get_init_inputs()`` returns them."""
    state: dict[str, torch.Tensor] | None = None
    """The reference model's parameters and buffers, loaded by name (``load_state_dict``) into a new
    instance; None: the instance built for ``key`` since the last load is called again (a level-3 model's
    parameters are hundreds of megabytes, sent once per case rather than with every call)."""


class LoadRequest(Message):
    op: Literal["load"] = "load"
    source: str
    entrypoint: str
    params: list[str] = Field(default_factory=list)
    target: str | None = None
    mode: Literal["run", "compile"] = "run"
    attachments: dict[str, str] = Field(default_factory=dict)
    """File name -> text, installed (``toolchain.attachments``) before the module is imported."""
    model: bool = False
    """The entrypoint is an ``nn.Module`` class whose forward takes ``params`` (see ``ModelCall``)."""


Inputs = dict[str, Any]
"""One call's arguments by name: tensors (sent as bytes) and plain values. The judge builds them from the
task; the worker never holds a task, its reference, its other cases or its held-out shapes."""


class RunRequest(Message):
    op: Literal["run"] = "run"
    inputs: Inputs
    poison_bytes: int = 1 << 24
    output_bytes: list[int] = Field(default_factory=list)
    """The size of each output of the reference: a block of each is poisoned too (worker ``poison``)."""
    max_output_bytes: int | None = None
    contiguous_outputs: bool = True
    """The statement promises contiguous outputs (every task unless its declaration says otherwise)."""
    layout: bool = False
    """A layout task: host copies (clone, copy_) count as computing its answer."""
    host_moves: int | None = None
    """The most host copies and fills a call of this task may make (``Task.host_moves``)."""
    model: ModelCall | None = None
    """For a module-class candidate: the instance the inputs are given to."""
    settle_ms: float = 0.0
    """On a GPU, a spin of this long before the call, outside its trace: the clock of an idle GPU comes up."""


class SpecsRequest(Message):
    op: Literal["specs"] = "specs"
    targets: list[str]


class JitKernelsRequest(Message):
    op: Literal["jit_kernels"] = "jit_kernels"


class CompileRequest(Message):
    op: Literal["compile"] = "compile"
    specs: list[dict[str, Any]]


class ModulesRequest(Message):
    op: Literal["modules"] = "modules"


class DryRunRequest(Message):
    op: Literal["dry_run"] = "dry_run"
    inputs: Inputs
    """On the CPU, whatever the worker's device: the call runs only up to its first launch."""


class StageRequest(Message):
    """Input sets kept in the worker for the next ``time`` request, sent on their own so the judge's copies
    are gone before the timing starts (bench-sized sets are gigabytes)."""

    op: Literal["stage"] = "stage"
    input_sets: list[Inputs]
    poison_bytes: int = Field(default=1 << 20, ge=0)
    """Memory poisoned with NaN before each timed call, as before a checked call of the case (``run``)."""
    output_bytes: list[int] = Field(default_factory=list)
    model: ModelCall | None = None
    """For a module-class candidate: the instance the timing requests call."""
    layout: bool = False
    """A layout task: host copies in a timed call count as computing, as in a checked one (``run``)."""
    host_moves: int | None = None
    """The most host copies and fills per timed call, as in a checked one (``run``)."""


class TimeBlockRequest(Message):
    """One side of a paired timing round: ``calls`` timed calls of the entrypoint (after ``warmup_calls``,
    and more warm-up until ``warmup_seconds`` have passed). The judge holds the GPU alone around the whole
    window (it times the baselines between these blocks), so the worker takes no GPU lock. The inputs are
    the sets staged last (``stage``), kept for the window's blocks until ``release``."""

    op: Literal["time_block"] = "time_block"
    calls: int = Field(ge=0)
    warmup_calls: int = Field(default=0, ge=0)
    warmup_seconds: float = Field(default=0.0, ge=0.0)
    start: int = Field(default=0, ge=0)
    """The position in the rotation over the seeds' input sets of the first timed call."""
    release: bool = False
    trace: bool = False
    """Run the block's calls under CUDA activity tracing (judge/timed_trace.py); sent only with the block
    it asks for, so no earlier request says which blocks will be traced."""
    sample_call: int | None = Field(default=None, ge=0)
    """Keep the outputs of this call of the block (its index in the block) and send back their values at
    ``sample_at`` (judge/timed_values.py); sent only with the block it samples, as ``trace`` is."""
    sample_at: list[float] = Field(default_factory=list)
    """Where to read each output, as fractions of its length: position ``int(f * numel)``."""

    @model_validator(mode="after")
    def _fractions(self) -> TimeBlockRequest:
        if not all(0.0 <= f < 1.0 for f in self.sample_at):
            raise ValueError("sample positions are fractions in [0, 1)")
        return self


class PingRequest(Message):
    op: Literal["ping"] = "ping"


Request = (LoadRequest | RunRequest | SpecsRequest | JitKernelsRequest | CompileRequest | ModulesRequest
           | DryRunRequest | StageRequest | TimeBlockRequest | PingRequest)


# ----------------------------------------------------------------------------------------- replies
class Reply(Message):
    """Every reply: ``ok``, and on failure the failure's ``kind`` and ``error`` text."""

    ok: bool
    kind: str | None = None
    error: str | None = None

    needed_when_ok: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="after")
    def _complete(self) -> Reply:
        if not self.ok and self.error is None:
            raise ValueError("a failed reply carries no error text")
        missing = [name for name in self.needed_when_ok if self.ok and getattr(self, name) is None]
        if missing:
            raise ValueError(f"a successful reply lacks {', '.join(missing)}")
        return self


class LoadReply(Reply):
    tampered: list[str] = Field(default_factory=list)
    forbidden_ops: dict[str, int] = Field(default_factory=dict)
    """What the run-time policy saw the module's own code run as it was imported."""
    extensions: list[str] = Field(default_factory=list)
    """The CUDA extensions (``load_inline``) the module built and loaded: native code now in the worker."""


class RunReply(Reply):
    outputs: list[torch.Tensor] | None = None
    launches: int = 0
    loader_launches: int = 0
    launch_names: list[str] | None = None
    """The call's launches in order by kernel name (Triton's and the loader's); None when there were too
    many to keep."""
    forbidden_ops: dict[str, int] = Field(default_factory=dict)
    mutated: list[str] = Field(default_factory=list)
    tampered: list[str] = Field(default_factory=list)
    seconds: float | None = None
    background: int = 0
    unwritten: list[int] = Field(default_factory=list)
    out_of_bounds: list[str] = Field(default_factory=list)
    scrub_error: str | None = None
    cuda_error: bool = False
    device_trace: dict[str, Any] | None = None
    """What the GPU ran during the call (env/worker/device_trace.py); None without a GPU."""
    interpreter_notes: list[str] = Field(default_factory=list)
    """Workarounds for Triton's interpreter that this call needed (env/worker/interpreter_compat.py)."""
    refused_launches: list[str] = Field(default_factory=list)
    """Kernel launches refused because the target's compile could not reproduce them."""
    races: list[str] = Field(default_factory=list)
    """Data races the interpreter saw in the call's launches (env/worker/interpreter_races.py), each naming
    its kernel; found even when the candidate caught the exception."""
    host_writes: list[str] = Field(default_factory=list)
    """Tensor memory the host wrote outside any kernel or PyTorch op, or of unknown origin, during the call
    (CPU only: env/worker/host_writes.py)."""

    needed_when_ok = ("outputs",)


class CompiledKernel(BaseModel):
    """One Triton kernel compiled offline (``compile``) or by the JIT (``jit_kernels``)."""

    model_config = ConfigDict(extra="allow")
    ok: bool
    kernel: str
    target: str | None = None
    name: str = ""
    ptx: str = ""
    cubin: str = ""
    shared: int | None = None
    error: str = ""


class SpecsReply(Reply):
    specs: list[dict[str, Any]] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    refused: list[str] = Field(default_factory=list)
    """Launched kernels the compile for the target would not find (``worker/launch_rules.py``)."""


class KernelsReply(Reply):
    kernels: list[CompiledKernel] = Field(default_factory=list)


class LoaderKernel(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    registers: int | None = None
    shared: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    ptx: dict[str, int] = Field(default_factory=dict)
    sass: dict[str, int] = Field(default_factory=dict)


class LoaderModule(BaseModel):
    """A module built through the loader, with its compiler's report (``toolchain.loader``)."""

    model_config = ConfigDict(extra="allow")
    name: str
    target: str
    warnings: list[str] = Field(default_factory=list)
    analysis_error: str | None = None
    kernels: list[LoaderKernel] = Field(default_factory=list)


class ModulesReply(Reply):
    modules: list[LoaderModule] = Field(default_factory=list)
    launches: int = 0


class DryRunReply(Reply):
    reached_launch: bool = False
    forbidden_ops: dict[str, int] = Field(default_factory=dict)


class SampledOutput(Message):
    """One output of a sampled timed call: its dtype and length, and its values at the asked positions."""

    dtype: str
    numel: int = Field(ge=0)
    values: list[float] = Field(default_factory=list)


class TimeBlockReply(Reply):
    event_ms: list[float] = Field(default_factory=list)
    wall_ms: list[float] = Field(default_factory=list)
    issue_ms: list[float] = Field(default_factory=list)
    starved: int = Field(default=0, ge=0)
    retimed: int = Field(default=0, ge=0)
    warmup_call_ms: float | None = None
    """Mean wall-clock milliseconds of one warm-up call (what sizes the blocks of a slow kernel)."""
    forbidden_ops: dict[str, int] = Field(default_factory=dict)
    tampered: list[str] = Field(default_factory=list)
    out_of_bounds: list[str] = Field(default_factory=list)
    """Staged inputs whose guards a timed call wrote over (they are guarded as a checked call's are)."""
    device_trace: dict[str, Any] | None = None
    """For a traced block on a GPU: what the device ran over its calls (with ``calls``, their number)."""
    sample: list[SampledOutput] | None = None
    """For a sampled block: the sampled call's outputs at the asked positions."""
    sample_error: str | None = None
    """Why the sampled call's outputs could not be read (not plain tensors, say)."""

    @model_validator(mode="after")
    def _one_figure_per_call(self) -> TimeBlockReply:
        if not len(self.event_ms) == len(self.wall_ms) == len(self.issue_ms):
            raise ValueError("a timed block needs one event, wall and issue time per call")
        if not all(math.isfinite(v) and v >= 0 for v in (*self.event_ms, *self.wall_ms, *self.issue_ms)):
            raise ValueError("a timed block's times are finite and not negative")
        return self


class StageReply(Reply):
    sets: int = 0


class PingReply(Reply):
    pid: int | None = None
    tampered: list[str] = Field(default_factory=list)
    changed_state: list[str] = Field(default_factory=list)
    """Process-wide state a candidate left changed (library functions, PyTorch's global settings): the next
    candidate would inherit it, so the judge replaces the worker."""


REPLIES: dict[str, type[Reply]] = {
    "load": LoadReply, "run": RunReply, "specs": SpecsReply, "jit_kernels": KernelsReply,
    "compile": KernelsReply, "modules": ModulesReply, "dry_run": DryRunReply,
    "time_block": TimeBlockReply, "ping": PingReply, "stage": StageReply,
}
REQUESTS: dict[str, type[Message]] = {
    "load": LoadRequest, "run": RunRequest, "specs": SpecsRequest, "jit_kernels": JitKernelsRequest,
    "compile": CompileRequest, "modules": ModulesRequest, "dry_run": DryRunRequest,
    "time_block": TimeBlockRequest, "ping": PingRequest, "stage": StageRequest,
}


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors()[:5])


def parse_request(data: Any) -> Message:
    """The worker's side: a request from the judge, typed (ProtocolError when it fits no operation)."""
    op = data.get("op") if isinstance(data, dict) else None
    if op not in REQUESTS:
        raise ProtocolError(f"no such worker operation: {op!r}")
    try:
        return REQUESTS[op].model_validate({k: v for k, v in data.items() if k != "id"})
    except ValidationError as exc:
        raise ProtocolError(f"malformed {op!r} request: {_problems(exc)}") from None


def parse_reply(op: str, data: Any) -> Reply:
    """The judge's side: the worker's reply to ``op``, validated before any field of it is read."""
    if isinstance(data, Reply):
        return data
    if not isinstance(data, dict):
        raise ProtocolError(f"the worker's reply to {op!r} is {type(data).__name__}, not a message")
    try:
        return REPLIES[op].model_validate(data)
    except ValidationError as exc:
        raise ProtocolError(f"the worker's reply to {op!r} is malformed: {_problems(exc)}") from None
