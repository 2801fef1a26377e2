"""The typed requests and replies of each worker operation.

The worker builds its replies with these types and the judge validates every reply it receives
(``parse_reply``) before reading a field: a reply that does not fit its type, forged or broken, is a
``ProtocolError`` with the field that is wrong, never a KeyError deep inside a stage. The wire
below them stays JSON and raw tensor bytes (``wire``).
"""

from __future__ import annotations

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
    """For a task whose candidate is a module class (an imported ``ModelNew``): how the worker builds it.
    The worker keeps one instance per ``key`` until the next load."""

    key: str
    init_inputs: list[Any] = Field(default_factory=list)
    """The constructor's arguments (numbers, lists), as the problem's ``get_init_inputs()`` returns them."""
    state: dict[str, torch.Tensor] = Field(default_factory=dict)
    """The reference model's parameters and buffers, loaded by name (``load_state_dict``)."""


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


class RunRequest(Message):
    op: Literal["run"] = "run"
    task: str
    case: dict[str, Any]
    seed: int
    distribution: str
    poison_bytes: int = 1 << 24
    max_output_bytes: int | None = None
    contiguous_outputs: bool = True
    """The statement promises contiguous outputs (every task unless its declaration says otherwise)."""
    layout: bool = False
    """A layout task: host copies (clone, copy_) count as computing its answer."""
    inputs: dict[str, Any] | None = None
    """The inputs themselves, for tasks the worker cannot rebuild (imported problems, whose input builders
    are the user's code and run in the judge only); None: built from ``task``, ``case`` and the seed."""
    model: ModelCall | None = None


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
    task: str
    case: dict[str, Any]
    seed: int
    distribution: str


class TimeRequest(Message):
    op: Literal["time"] = "time"
    task: str
    case: dict[str, Any]
    seeds: list[int]
    warmup: int
    reps: int
    input_sets: list[dict[str, Any]] | None = None
    """As ``RunRequest.inputs``, one set per seed."""
    model: ModelCall | None = None


class PingRequest(Message):
    op: Literal["ping"] = "ping"


Request = (LoadRequest | RunRequest | SpecsRequest | JitKernelsRequest | CompileRequest | ModulesRequest
           | DryRunRequest | TimeRequest | PingRequest)


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


class RunReply(Reply):
    outputs: list[torch.Tensor] | None = None
    launches: int = 0
    loader_launches: int = 0
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


class TimeReply(Reply):
    median_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    runs: int | None = None
    event_median_ms: float | None = None
    wall_median_ms: float | None = None
    hidden_work: bool = False
    issue_median_ms: float | None = None
    event_ms: list[float] = Field(default_factory=list)
    forbidden_ops: dict[str, int] = Field(default_factory=dict)
    tampered: list[str] = Field(default_factory=list)

    needed_when_ok = ("median_ms", "min_ms", "max_ms", "runs")


class PingReply(Reply):
    pid: int | None = None
    tampered: list[str] = Field(default_factory=list)


REPLIES: dict[str, type[Reply]] = {
    "load": LoadReply, "run": RunReply, "specs": SpecsReply, "jit_kernels": KernelsReply,
    "compile": KernelsReply, "modules": ModulesReply, "dry_run": DryRunReply, "time": TimeReply,
    "ping": PingReply,
}
REQUESTS: dict[str, type[Message]] = {
    "load": LoadRequest, "run": RunRequest, "specs": SpecsRequest, "jit_kernels": JitKernelsRequest,
    "compile": CompileRequest, "modules": ModulesRequest, "dry_run": DryRunRequest, "time": TimeRequest,
    "ping": PingRequest,
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
