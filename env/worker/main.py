"""The worker process: the only place candidate code runs.

Started by ``pool.Worker`` as ``python -m warpgym.env.worker.main FD`` in a fresh session (its
own process group), a private temporary directory and an environment without secrets. It
answers requests on the socket FD; the candidate's stdout and stderr go to a log file the
parent reads. It never sees reference outputs, nor tasks at all: each request carries the inputs of
one call, built by the judge; the worker runs the candidate on them and sends the outputs back.
``warpgym.tasks`` and the judge are neither loaded here nor importable (``audit.py``).
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import importlib.util
import inspect
import math
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

MODE = os.environ.get("WARPGYM_WORKER_MODE", "run")
""""run" or "compile". A CPU's run worker is started with TRITON_INTERPRET=1 (judge/pool.py)."""

import torch  # noqa: E402
from warpgym.env.common.bits import flat_positions, same_bits, take_bits  # noqa: E402
from warpgym.env.common.device import release_cached_memory  # noqa: E402
from warpgym.env.protocol import messages as m  # noqa: E402
from warpgym.env.protocol import wire  # noqa: E402
from warpgym.env.protocol.violations import message  # noqa: E402
from warpgym.env.toolchain import loader  # noqa: E402
from warpgym.env.toolchain.registry import ORDER  # noqa: E402
from warpgym.env.worker import audit as sandbox_layer  # noqa: E402
from warpgym.env.worker import (  # noqa: E402
    device_trace,
    dispatch_guard,
    extensions,
    host_routes,
    host_writes,
    interpreter_compat,
    interpreter_constexpr,
    interpreter_grid,
    interpreter_races,
    launch_rules,
    models,
    policy,
)
from warpgym.env.worker import triton_launches as triton_support  # noqa: E402

# Captured before any candidate runs, so a candidate that patches them is caught and
# the harness's own timing keeps working.
_PRISTINE = {
    "torch.cuda.Event": getattr(torch.cuda, "Event", None),
    "torch.cuda.synchronize": getattr(torch.cuda, "synchronize", None),
    "torch.cuda.Event.elapsed_time": getattr(getattr(torch.cuda, "Event", None), "elapsed_time", None),
    "torch.cuda.Event.query": getattr(getattr(torch.cuda, "Event", None), "query", None),
    "torch.cuda._sleep": getattr(torch.cuda, "_sleep", None),
    "time.perf_counter": time.perf_counter,
    "torch.Tensor.__eq__": torch.Tensor.__eq__,
    "torch.take": torch.take,
}


_DETACH, _TO = torch.Tensor.detach, torch.Tensor.to
"""Taken before any candidate runs, like ``_PRISTINE``: the worker makes its own tensor objects and copies
the outputs back with them, whatever the candidate does to the class."""


def _own(value: Any) -> Any:
    """For a plain tensor, a new tensor object over the same memory (shape, strides and offset unchanged);
    anything else as it is. The worker hands the candidate such objects and reads its outputs through them:
    an attribute set on an object (``out.detach = ...``) shadows the class's method for everyone who calls it
    there, so the worker calls methods only on objects the candidate never held."""
    return _DETACH(value) if type(value) is torch.Tensor else value


@contextlib.contextmanager
def _collection_held() -> Iterator[None]:
    """No automatic garbage collection from a checked call to the copy of its outputs: a finalizer the
    candidate left on cyclic garbage would run wherever a collection happened to start, watched or not, and
    could write the outputs before they are copied. The call's garbage is collected inside the watch instead
    (``_collect``)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


GC_TURNED_ON = "gc.enable() (when garbage is collected during a call is the worker's to decide)"


def _collect() -> bool:
    """Inside the watch, once the call's objects are dropped: the finalizers its garbage holds run now, on the
    candidate's account (the policy counts ops reached from the handler's frames). Collection stays off during
    the call, so the call's garbage is all young. True when the candidate turned collection back on: one could
    then have started inside a kernel launch, where the policy gives ops to Triton's runtime; a full
    collection follows, and the call is reported as tampering."""
    if gc.isenabled():
        gc.disable()
        gc.collect()
        return True
    gc.collect(0)
    return False


def _resolve(path: str) -> Any:
    obj: Any = {"torch": torch, "time": time}[path.split(".")[0]]
    for part in path.split(".")[1:]:
        obj = getattr(obj, part, None)
    return obj


def tampered() -> list[str]:
    replaced = {name for name, original in _PRISTINE.items() if _resolve(name) is not original}
    if _POLICY_STATE and policy.state() != _POLICY_STATE[0]:
        replaced.add("the run-time policy's state")
    return sorted(replaced | set(_changed()))


def _changed() -> list[str]:
    """Functions and classes of the harness's namespaces replaced since the worker started (see main)."""
    return _SNAPSHOT[0]() if _SNAPSHOT else []


_SNAPSHOT: list[Any] = []
_POLICY_STATE: list[Any] = []
"""The run-time policy's state (data included) as the worker started, before any candidate."""


class State:
    def __init__(self) -> None:
        self.module: Any = None
        self.module_path: Path | None = None
        self.entry: Any = None
        self.loads = 0
        self.device = os.environ.get("WARPGYM_DEVICE", "cpu")
        self.kernels: dict[str, Any] = {}
        """The module's Triton kernels by name as imported: the ones the target's compile finds."""
        self.staged: list[dict[str, Any]] = []
        """Input sets for the next timing requests (``op_stage``), each guarded as a checked call's is."""
        self.guards: list[dict[str, Any]] = []
        """The guard buffers around each staged set's inputs (``_guarded``)."""
        self.poison_bytes = 0
        """Memory poisoned before each timed call, as much as before a checked call of the case."""
        self.output_bytes: list[int] = []
        """The sizes of the case's outputs, each poisoned on its own too (``poison``)."""
        self.spin_cycles = 0
        """The GPU spin queued before each timed call (common/timing.time_calls), kept from block to block."""
        self.staged_entry: Any = None
        """What the timing requests call: the entrypoint, or the model instance staged with the inputs."""
        self.params: list[str] = []
        self.models: dict[str, tuple[Any, dict[str, int]]] = {}
        """Instances of a module-class candidate by ``ModelCall.key`` with the ops refused while each
        loaded its parameters (cleared at each load)."""
        self.earlier_outputs: list[torch.Tensor] = []
        """The last checked call's outputs, held until the next call returns (up to ``HELD_OUTPUT_BYTES``):
        no fresh allocation can land in their memory, so an output there is one returned twice."""
        self.layout = False
        """The staged case is a layout task's (its host copies count as computing when timed too)."""
        self.host_moves: int | None = None
        """The staged case's task limits its host copies and fills per call (``Task.host_moves``)."""


def _on_device(inputs: dict[str, Any], device: str) -> dict[str, Any]:
    """A call's inputs as the judge sent them, each tensor in memory of its own on the worker's device."""
    return {k: v.to(device, copy=True) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def _outputs(result: Any) -> list[Any]:
    """Exactly a tuple, a list or a tensor, unpacked (inside the watch): anything else is one output, whose
    type is then refused without its iteration ever running."""
    if type(result) in (tuple, list):
        return list(result)
    return [result]


def _trim_traceback(exc: BaseException, candidate: Path | None) -> str:
    """The exception and the candidate's own frames, which is what a model can act on."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if candidate is not None and f.filename == str(candidate)]
    lines = [f'  File "candidate.py", line {f.lineno}, in {f.name}\n    {f.line}' for f in mine[-6:]]
    message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if len(message) > 3000:
        message = message[:1500] + "\n...\n" + message[-1500:]
    return ("Traceback (candidate frames):\n" + "\n".join(lines) + "\n" if lines else "") + message


def _is_compile_error(exc: BaseException) -> bool:
    return type(exc).__name__ in ("CompilationError", "CompileTimeAssertionFailure",
                                  "UnsupportedLanguageConstruct")


def _fresh_directory() -> None:
    """Empty the private directory of what earlier candidates left (files that fill the disk, or answers
    saved for later), keeping only the compile cache and the log."""
    import shutil

    for entry in Path.cwd().iterdir():
        if entry.name in ("triton-cache", "output.log"):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _install_attachments(attachments: dict[str, str]) -> None:
    """The candidate's attachments, readable by name (``warpgym.loader.attachment``) once it imports."""
    try:
        from warpgym.env.toolchain import attachments as store
    except ImportError:  # a toolchain without attachments: a candidate that carries none loses nothing
        if attachments:
            raise
        return
    store.install(attachments)


def op_load(state: State, msg: m.LoadRequest) -> m.LoadReply:
    _fresh_directory()
    state.loads += 1
    path = Path.cwd() / f"{sandbox_layer.CANDIDATE_STEM}{state.loads}.py"
    path.write_text(msg.source)
    interpreter_compat.keep_source(str(path), msg.source)
    _install_attachments(msg.attachments)
    name = f"warpgym_candidate_{state.loads}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    state.module_path = path
    state.earlier_outputs = []  # the last candidate's
    loader.REGISTRY.clear()  # the modules this candidate builds, not the last one's
    loader.set_default_target(msg.target)
    extensions.reset()
    # Watched like a call: what the module computes as it is imported (a table built at import time, in a
    # branch the static scan took for one that never runs) is host compute too.
    with _memory_watch(state, strict=False), policy.watching() as mode:
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:  # noqa: BLE001 - the candidate's failure is the answer
            needs_gpu = extensions.needed_gpu()
            return m.LoadReply(ok=False, kind="needs-gpu" if needs_gpu else "import",
                               error=extensions.NEEDS_GPU if needs_gpu else _trim_traceback(exc, path),
                               extensions=extensions.built())
    forbidden = mode.forbidden()
    state.module = module
    state.kernels = launch_rules.kernels_of(module)
    entry = getattr(module, msg.entrypoint, None)
    if msg.mode == "compile":
        return m.LoadReply(ok=True)
    if entry is None or not callable(entry):
        return m.LoadReply(ok=False, kind="missing-entrypoint",
                           error=message("missing-entrypoint", name=msg.entrypoint))
    state.models.clear()
    state.staged_entry, state.staged, state.guards = None, [], []  # an earlier window's sets, if it broke off
    state.params = list(msg.params)
    if msg.model:
        problem = models.check_class(entry, msg.params, msg.entrypoint)
        if problem:
            return m.LoadReply(ok=False, kind="signature", error=problem)
    else:
        try:
            params = list(inspect.signature(entry).parameters)
        except (TypeError, ValueError):
            params = []
        if params[: len(msg.params)] != msg.params:
            return m.LoadReply(ok=False, kind="signature", error=message(
                "signature", name=msg.entrypoint, got=", ".join(params), expected=", ".join(msg.params)))
    state.entry = entry
    triton_support.RECORDER.launches.clear()
    triton_support.RECORDER.jit_kernels.clear()
    triton_support.RECORDER.keys.clear()
    triton_support.RECORDER.count = 0
    return m.LoadReply(ok=True, tampered=[*tampered(), *mode.left_modes], forbidden_ops=forbidden,
                       extensions=extensions.built())


def _snapshot(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in inputs.items() if isinstance(v, torch.Tensor)}


POISON_WORD = -1
"""Every bit set: NaN in each floating dtype (float64, float32, and float16 and bfloat16 in each half)."""


def poison(device: str, nbytes: int, outputs: Sequence[int] = ()) -> None:
    """Fill memory the allocator will hand out next with NaN, so reading an output never written gives NaN
    rather than a stale answer. A block of each of ``outputs``' sizes comes first: the caching allocator
    hands out the best-fitting free block, which, between calls with no cache release (the timing loop's),
    is the previous call's output of that size, holding its answer; these take it and leave it NaN (whole:
    the call's outputs take that memory anyway). The block after them is at most a GiB."""
    sizes = [*outputs, min(nbytes, 1 << 30)]
    blocks = [torch.full((max(1, -(-n // 4)),), POISON_WORD, dtype=torch.int32, device=device) for n in sizes]
    del blocks
    if device.startswith("cuda"):
        _scrub_shared_memory()


def _scrub_error(device: str) -> str | None:
    if not device.startswith("cuda"):
        return None
    from warpgym.env.worker import scrub

    return scrub.failure()


def _scrub_shared_memory() -> str | None:
    """NaN into every SM's shared memory (env/worker/scrub.py), outside the launch recorder: the
    harness's kernel is not the candidate's."""
    from warpgym.env.worker.scrub import scrub_shared_memory

    with triton_support.RECORDER.unrecorded():
        return scrub_shared_memory()


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        _PRISTINE["torch.cuda.synchronize"]()


def _l2_flush(device: str) -> torch.Tensor | None:
    """The buffer whose zeroing before a call empties the L2 cache: a checked call starts on a cold cache,
    as every timed call does (common/timing.time_calls), not on its inputs just copied in. Allocated before
    the poison, so the poisoned memory is what the call's outputs get."""
    if not device.startswith("cuda"):
        return None
    from warpgym.env.common.timing import L2_FLUSH_BYTES

    return torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=device)


def _entry(state: State, call: m.ModelCall | None) -> tuple[Any, dict[str, int]]:
    """What to call, and the ops refused while building it: the entrypoint, or the model instance for
    ``call`` (built when the call carries parameters, reused by key when it does not)."""
    if call is None:
        return state.entry, {}
    if call.state is not None:
        with _memory_watch(state, strict=False):
            state.models[call.key] = models.build(state.entry, call, state.device)
        call.state = None  # the received copy: the instance holds its own
    elif call.key not in state.models:
        raise models.ModelBuildError(f"no model was built for {call.key} since the candidate was loaded")
    model, refused = state.models[call.key]
    return models.bound(model, state.params), refused


def _memory_watch(state: State, strict: bool) -> Any:
    """On the CPU, in Triton's interpreter: fresh memory poisoned and host writes watched
    (``host_writes``); on a GPU fresh memory poisoned (a GPU's memory is not the host's to write)."""
    if state.device == "cpu" and os.environ.get("TRITON_INTERPRET") == "1":
        return host_writes.HostWrites(strict=strict)
    if state.device.startswith("cuda"):
        return host_writes.FreshPoison()
    return contextlib.nullcontext()


def op_run(state: State, msg: m.RunRequest) -> m.RunReply:
    with _collection_held():
        return _run(state, msg)


def _run(state: State, msg: m.RunRequest) -> m.RunReply:
    device = state.device
    try:
        entry, refused = _entry(state, msg.model)
    except models.ModelBuildError as exc:
        return m.RunReply(ok=False, kind="runtime", error=str(exc))
    inputs = _on_device(msg.inputs, device)
    msg.inputs = {}  # the received copy: only the worker's own, guarded one stays
    inputs, guards = _guarded(inputs)
    before = _snapshot(inputs)
    flush = _l2_flush(device)
    poison(device, msg.poison_bytes, msg.output_bytes)
    if msg.settle_ms > 0 and device.startswith("cuda"):
        from warpgym.env.common import timing

        _PRISTINE["torch.cuda._sleep"](timing.spin_cycles_of(msg.settle_ms))
    launches_before = triton_support.RECORDER.count
    loader_before = loader.REGISTRY.launch_count
    order_before = ORDER.total
    triton_support.RECORDER.storages.clear()
    triton_support.RECORDER.refused.clear()
    threads_before = _python_threads()
    tracer = device_trace.traced(str(Path.cwd())) if device.startswith("cuda") else contextlib.nullcontext()
    interpreter_compat.NOTES.clear()
    interpreter_grid.RACES.clear()
    memory = _memory_watch(state, strict=True)
    host_writes.trust_inputs(inputs)
    started = time.perf_counter()
    if flush is not None:
        flush.zero_()  # outside the trace (the tracer waits for it): what the trace shows is the call's
    # The memory watch lies under the policy: the policy sees each op first, from the candidate's frames.
    given = {name: _own(value) for name, value in inputs.items()}
    with memory, tracer, policy.watching() as mode:
        try:
            result = entry(**given)
            outputs = [_own(o) for o in _outputs(result)]
            del result, given
            collection_turned_on = _collect()
            _synchronize(device)
            lingering = _lingering(threads_before)
        except BaseException as exc:  # noqa: BLE001
            kind = "compile" if _is_compile_error(exc) else "runtime"
            text = _trim_traceback(exc, state.module_path)
            gap = interpreter_compat.limitation(exc) if state.device == "cpu" else None
            if gap is not None:
                kind, text = "interpreter", gap
            forbidden = mode.forbidden(msg.layout, moves=msg.host_moves)
            return m.RunReply(ok=False, kind=kind, error=text, forbidden_ops=forbidden,
                              cuda_error="CUDA" in text or "cuda" in type(exc).__name__.lower(),
                              refused_launches=list(triton_support.RECORDER.refused),
                              races=list(interpreter_grid.RACES), host_writes=_host_findings(memory),
                              background=_lingering(threads_before))
    del flush
    seconds = time.perf_counter() - started
    trace = tracer.trace.to_wire() if isinstance(tracer, device_trace.traced) else None
    mutated = [k for k, v in before.items() if not same_bits(v, inputs[k])]
    forbidden = {**refused, **mode.forbidden(msg.layout, moves=msg.host_moves)}
    bad_types = [type(o).__name__ for o in outputs if type(o) is not torch.Tensor]
    if bad_types:
        return m.RunReply(ok=False, kind="output", forbidden_ops=forbidden, device_trace=trace,
                          error=message("output-type", types=", ".join(bad_types)))
    if isinstance(memory, host_writes.HostWrites):
        memory.check_outputs(outputs)  # plain tensors only: a subclass's methods are candidate code
    layout = _layout_problem(outputs, device, msg.contiguous_outputs)
    if layout:
        return m.RunReply(ok=False, kind="output-layout", forbidden_ops=forbidden, device_trace=trace,
                          error=layout, host_writes=_host_findings(memory), mutated=mutated)
    aliased = _aliased(outputs, inputs)
    if aliased:
        return m.RunReply(ok=False, kind="output-alias", forbidden_ops=forbidden, device_trace=trace,
                          error=aliased, host_writes=_host_findings(memory), mutated=mutated)
    reused = _reused(outputs, state.earlier_outputs)
    state.earlier_outputs = _held(outputs)
    if reused:
        return m.RunReply(ok=False, kind="output-reused", forbidden_ops=forbidden, device_trace=trace,
                          error=reused, host_writes=_host_findings(memory), mutated=mutated)
    size = sum(o.numel() * o.element_size() for o in outputs)
    if size > (msg.max_output_bytes if msg.max_output_bytes is not None else math.inf):
        return m.RunReply(ok=False, kind="runtime", forbidden_ops=forbidden, device_trace=trace,
                          error=f"the entrypoint returned {size} bytes of outputs, far more than the task's "
                                "outputs hold; they were not sent back")
    return m.RunReply(
        ok=True,
        outputs=[_TO(o, "cpu", copy=True) for o in outputs],
        launches=triton_support.RECORDER.count - launches_before,
        loader_launches=loader.REGISTRY.launch_count - loader_before,
        launch_names=ORDER.since(order_before),
        forbidden_ops=forbidden,
        mutated=mutated,
        tampered=[*tampered(), *([GC_TURNED_ON] if collection_turned_on else []), *mode.left_modes],
        device_trace=trace,
        seconds=seconds,
        background=lingering,
        unwritten=_unwritten(outputs),
        out_of_bounds=[name for name, (buf, lo, hi) in guards.items() if not _guard_intact(buf, lo, hi)],
        scrub_error=_scrub_error(device),
        interpreter_notes=list(interpreter_compat.NOTES),
        refused_launches=list(triton_support.RECORDER.refused),
        races=list(interpreter_grid.RACES),
        host_writes=_host_findings(memory),
    )


def _host_findings(memory: Any) -> list[str]:
    return list(memory.findings) if isinstance(memory, host_writes.HostWrites) else []


def _aliased(outputs: list[torch.Tensor], inputs: dict[str, Any]) -> str | None:
    """An output whose memory overlaps an input's: the caller's result would change with its input (and
    the other way round), and a call that returns its input computed nothing."""
    found = _overlap(outputs, {name: v for name, v in inputs.items() if isinstance(v, torch.Tensor)})
    return message("output-aliases-input", index=found[0], name=found[1]) if found else None


def _overlap(outputs: list[torch.Tensor], others: dict[Any, torch.Tensor]) -> tuple[int, Any] | None:
    """The first output whose storage overlaps one of ``others``' (empty tensors overlap nothing): its
    index and that other's key."""
    spans = {key: _span(t) for key, t in others.items() if t.numel()}
    for i, out in enumerate(outputs):
        if not out.numel():
            continue
        start, end = _span(out)
        for key, (lo, hi) in spans.items():
            if start < hi and end > lo:
                return i, key
    return None


HELD_OUTPUT_BYTES = 1 << 28
"""The most output memory held from one checked call to the next (bench-size outputs are not held)."""


def _span(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def _held(outputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """The outputs kept until the next call (none past ``HELD_OUTPUT_BYTES``, and none empty)."""
    kept = [o for o in outputs if o.numel()]
    return kept if sum(o.untyped_storage().nbytes() for o in kept) <= HELD_OUTPUT_BYTES else []


def _reused(outputs: list[torch.Tensor], earlier: list[torch.Tensor]) -> str | None:
    """An output in the memory of the previous call's outputs, which this process still holds: the
    candidate returned the same buffer twice (a cache of outputs by shape, a CUDA graph's static output)."""
    found = _overlap(outputs, dict(enumerate(earlier)))
    return message("output-reused", index=found[0]) if found else None


def _layout_problem(outputs: list[torch.Tensor], device: str, contiguous: bool) -> str | None:
    """The output contract beyond values: on the inputs' device, and contiguous where promised."""
    for i, out in enumerate(outputs):
        if out.device.type != torch.device(device).type:
            return f"output {i} is on {out.device}; the task's outputs live on {device}, like its inputs"
        if contiguous and not out.is_contiguous():
            return (f"output {i} is not contiguous (strides {tuple(out.stride())} for shape "
                    f"{tuple(out.shape)}); the statement promises a contiguous tensor: write it in that "
                    "layout with your kernel")
    return None


GUARD_BYTES = 4096


def _guarded(inputs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each contiguous floating input moved into the middle of a NaN-filled buffer, so a kernel that reads
    past an input's end reads NaN (not whatever happened to lie there, right only by chance), and a
    write past it shows in the guard."""
    out, guards = dict(inputs), {}
    storages = [v.untyped_storage().data_ptr() for v in inputs.values() if isinstance(v, torch.Tensor)]
    for name, t in inputs.items():
        plain = isinstance(t, torch.Tensor) and t.is_floating_point() and t.is_contiguous() and t.numel() > 0
        if not plain or storages.count(t.untyped_storage().data_ptr()) > 1:
            continue  # shared storages are part of the task's contract; leave them be
        pad = max(1, GUARD_BYTES // t.element_size())
        buf = torch.full((pad + t.numel() + pad,), math.nan, dtype=t.dtype, device=t.device)
        view = buf[pad:pad + t.numel()].view(t.shape)
        view.copy_(t)
        out[name], guards[name] = view, (buf, pad, pad + t.numel())
        interpreter_grid.guard(buf, view)
    return out, guards


def _guard_intact(buf: torch.Tensor, lo: int, hi: int) -> bool:
    return bool(torch.isnan(buf[:lo]).all()) and bool(torch.isnan(buf[hi:]).all())


def _lingering(before: set[int]) -> int:
    """Threads of the candidate's alive at the end of a call: those it started during the call and, where
    the sandbox tracks them, any it started earlier (at import) that still run."""
    tracked = sandbox_layer.candidate_threads()
    return len(tracked) if tracked is not None else len(_python_threads() - before)


def _python_threads() -> set[int]:
    """Threads the candidate started that are alive now (the sandbox tracks them); without the sandbox,
    every thread running Python."""
    tracked = sandbox_layer.candidate_threads()
    return tracked if tracked is not None else set(sys._current_frames())


def _unwritten(outputs: Any) -> list[int]:
    """Outputs whose storage no Triton launch of this call was given: their values came from elsewhere."""
    seen = triton_support.RECORDER.storages
    return [i for i, o in enumerate(outputs) if isinstance(o, torch.Tensor) and o.numel()
            and o.untyped_storage().data_ptr() not in seen]


def op_specs(state: State, msg: m.SpecsRequest) -> m.SpecsReply:
    launches = triton_support.RECORDER.launches
    specs, errors = triton_support.unique_specs(launches, msg.targets)
    refused = launch_rules.not_compiled([launch.fn for launch in launches], state.kernels)
    return m.SpecsReply(ok=True, specs=specs, errors=errors, refused=refused)


def op_jit_kernels(state: State, msg: m.JitKernelsRequest) -> m.KernelsReply:
    """The kernels Triton's JIT compiled for this GPU since the candidate was loaded."""
    kernels = list(triton_support.RECORDER.jit_kernels.values())
    return m.KernelsReply.model_validate({"ok": True, "kernels": kernels})


def op_compile(state: State, msg: m.CompileRequest) -> m.KernelsReply:
    triton_support.ensure_not_interpreting()
    kernels = [triton_support.compile_spec(state.module, s) for s in msg.specs]
    return m.KernelsReply.model_validate({"ok": True, "kernels": kernels})


def op_modules(state: State, msg: m.ModulesRequest) -> m.ModulesReply:
    """Every module the candidate built through the loader, with its compiler report and counts."""
    return m.ModulesReply.model_validate({"ok": True, "modules": loader.modules_report(),
                                          "launches": loader.REGISTRY.launch_count})


def op_dry_run(state: State, msg: m.DryRunRequest) -> m.DryRunReply:
    """Without a GPU: call the entrypoint on CPU tensors until its first kernel launch.

    Modules the candidate builds lazily get compiled and reported, and that launch is checked
    (arguments, block, shared memory, cluster) before the loader refuses it (NoDeviceError).
    """
    inputs = _on_device(msg.inputs, "cpu")
    with policy.watching() as mode:
        try:
            state.entry(**inputs)
        except loader.NoDeviceError:
            return m.DryRunReply(ok=True, reached_launch=True, forbidden_ops=mode.forbidden())
        except loader.LoaderError as exc:
            kind = "compile" if isinstance(exc, loader.CompileError) else "launch"
            return m.DryRunReply(ok=False, kind=kind, error=_trim_traceback(exc, state.module_path),
                                 forbidden_ops=mode.forbidden())
        except BaseException as exc:  # noqa: BLE001 - reported, not fatal: CPU tensors may be the cause
            return m.DryRunReply(ok=False, kind="host", error=_trim_traceback(exc, state.module_path),
                                 forbidden_ops=mode.forbidden())
    return m.DryRunReply(ok=True, reached_launch=False, forbidden_ops=mode.forbidden())


def op_stage(state: State, msg: m.StageRequest) -> m.StageReply:
    """The window's input sets, laid out as a checked call's inputs are (each floating input inside its
    NaN guards), so an input's storage, offset and neighbours tell a timed call from a checked one no more
    than its values do."""
    state.spin_cycles, state.poison_bytes, state.output_bytes = 0, msg.poison_bytes, list(msg.output_bytes)
    state.layout, state.host_moves = msg.layout, msg.host_moves
    try:
        state.staged_entry, _ = _entry(state, msg.model)
    except models.ModelBuildError as exc:
        return m.StageReply(ok=False, kind="runtime", error=str(exc))
    state.staged, state.guards, state.earlier_outputs = [], [], []
    for inputs in msg.input_sets:
        guarded, guards = _guarded(_on_device(inputs, state.device))
        state.staged.append(guarded)
        state.guards.append(guards)
    msg.input_sets = []
    return m.StageReply(ok=True, sets=len(state.staged))


def _overrun_inputs(state: State) -> list[str]:
    """Staged inputs whose guards no longer hold NaN: a timed call wrote past an input."""
    return sorted({name for guards in state.guards for name, (buf, lo, hi) in guards.items()
                   if not _guard_intact(buf, lo, hi)})


def op_time_block(state: State, msg: m.TimeBlockRequest) -> m.TimeBlockReply:
    """One candidate block of a paired timing round (judge/bench.py alternates it with the baselines').

    Collection is held through the block, as through a checked call; what the block left to collect (and the
    outputs it kept, or the inputs a release drops) is finalized before the reply, and the device is waited
    for: work a finalizer starts on a stream of its own would otherwise still run while the judge times the
    baselines' next blocks, and slow them."""
    with _collection_held():
        reply = _time_block(state, msg)
        if _collect():
            reply.tampered = [*reply.tampered, GC_TURNED_ON]
        _synchronize(state.device)
    return reply


def _time_block(state: State, msg: m.TimeBlockRequest) -> m.TimeBlockReply:
    from warpgym.env.common import timing

    if msg.release and not (msg.calls or msg.warmup_calls or msg.warmup_seconds):
        state.staged, state.guards = [], []  # the end of a window: only drop its inputs
        return m.TimeBlockReply(ok=True, tampered=tampered())
    if not state.staged:
        return m.TimeBlockReply(ok=False, kind="internal", error="no input sets were staged for timing")
    input_sets, entry, device = state.staged, state.staged_entry or state.entry, state.device
    event_cls = _PRISTINE["torch.cuda.Event"]
    traced = msg.trace and device.startswith("cuda")
    tracer = device_trace.traced(str(Path.cwd())) if traced else contextlib.nullcontext()

    def synchronize() -> None:
        _synchronize(device)

    def prepare() -> None:
        poison(device, state.poison_bytes, state.output_bytes)

    def read_sample(kept: Any) -> tuple[list[m.SampledOutput] | None, str | None]:
        """The sampled call's values, read as soon as it is done: no later call of the block can rewrite
        its outputs first. The harness's frames call it, so the policy counts none of its ops."""
        return _sample(kept, msg.sample_at)

    try:
        with triton_support.RECORDER.unrecorded(), policy.watching() as mode:
            started = time.perf_counter()
            warmed = timing.warm_up(entry, input_sets, msg.warmup_calls, msg.warmup_seconds, synchronize)
            warmup_ms = (time.perf_counter() - started) * 1e3 / warmed if warmed else None
            calls = timing.Calls()
            if msg.calls:
                if not state.spin_cycles:
                    first = timing.issue_ms(entry, input_sets[0], synchronize)
                    state.spin_cycles = timing.spin_cycles_of(timing.preroll_ms([first]))
                flush = torch.empty(timing.L2_FLUSH_BYTES, dtype=torch.uint8, device=device)
                # One trace over the block: its calls follow each other as untraced ones do, each after
                # the same spin, so work a call leaves unordered on another stream (which would run under
                # the spin and escape the events) shows in the trace as a kernel beside a spin.
                with tracer:
                    calls = timing.time_calls(entry, input_sets, msg.calls, event_cls=event_cls,
                                              synchronize=synchronize, flush=flush, start=msg.start,
                                              spin_cycles=state.spin_cycles,
                                              sleep=_PRISTINE["torch.cuda._sleep"], before=prepare,
                                              keep=msg.sample_call, read=read_sample)
                del flush
                if not msg.trace:  # a traced call's times carry the tracer's overhead
                    state.spin_cycles = calls.spin_cycles
        sample, sample_error = None, None
        if msg.sample_call is not None:
            sample, sample_error = calls.kept or (None, "the sampled call did not run")
        calls.kept = None
        overrun = _overrun_inputs(state) if msg.calls or warmed else []
    finally:
        if msg.release:
            state.staged, state.guards = [], []
            state.spin_cycles = 0
    trace = None
    if isinstance(tracer, device_trace.traced):
        # a starved call is timed again under the same trace: its kernels ran once per attempt
        trace = {**tracer.trace.to_wire(), "calls": msg.calls + calls.retimed}
    calls_made = warmed + len(calls.event_ms) + calls.retimed
    return m.TimeBlockReply(ok=True, event_ms=calls.event_ms, wall_ms=calls.wall_ms, issue_ms=calls.issue_ms,
                            starved=calls.starved, retimed=calls.retimed, warmup_call_ms=warmup_ms,
                            forbidden_ops=mode.forbidden(state.layout, calls_made, state.host_moves),
                            tampered=[*tampered(), *mode.left_modes], out_of_bounds=overrun,
                            device_trace=trace, sample=sample, sample_error=sample_error)


def _sample(kept: Any, at: list[float]) -> tuple[list[m.SampledOutput] | None, str | None]:
    """A timed call's outputs at the fractions ``at`` of each one's length (judge/timed_values.py), read with
    the harness's own gather so a candidate's patched tensor methods never see the positions."""
    if kept is None:
        return None, "the sampled call did not run"
    outputs = [_own(o) for o in _outputs(kept)]
    foreign = [type(o).__name__ for o in outputs if type(o) is not torch.Tensor]
    if foreign:
        return None, f"the sampled call returned {', '.join(foreign)}, not plain tensors"
    if left := policy.foreign_modes():
        return None, (f"a PyTorch mode the candidate entered ({', '.join(left)}) was still active when the "
                      "sampled call's outputs were read, so they were not read through it")
    take = _PRISTINE["torch.take"]
    sampled = []
    try:
        for out in outputs:
            numel = out.numel()
            values: list[float] = []
            if numel:
                values = take_bits(out, flat_positions(at, numel), take).tolist()
            sampled.append(m.SampledOutput(dtype=str(out.dtype).removeprefix("torch."), numel=numel,
                                           values=values))
    except Exception as exc:  # noqa: BLE001 - an output that cannot be read is the judge's finding
        return None, f"the sampled call's outputs could not be read: {type(exc).__name__}: {exc}"[:300]
    return sampled, None


def op_ping(state: State, msg: m.PingRequest) -> m.PingReply:
    changed = _STARTED_WITH[0]() if _STARTED_WITH else []
    threads = sandbox_layer.candidate_threads()
    if threads:  # a thread a candidate left would run on beside the next one's launches
        changed = [*changed, f"{len(threads)} thread(s) a candidate started, still running"]
    return m.PingReply(ok=True, pid=os.getpid(), tampered=tampered(), changed_state=changed)


def _process_state() -> Callable[[], list[str]]:
    """What one candidate could leave behind for the next in a reused worker: the libraries' functions
    (``triton.cdiv`` replaced) and PyTorch's and the process's global settings. The returned function names
    what changed since."""
    import numpy
    import triton

    spaces = {"torch": torch, "torch.nn.functional": torch.nn.functional, "torch.nn.init": torch.nn.init,
              "numpy": numpy, "triton": triton, "math": math}
    # Triton's interpreter swaps triton.language's functions for its own at every launch: there they are
    # the interpreter's, not a candidate's, to change.
    language = () if os.environ.get("TRITON_INTERPRET") == "1" else (
        "triton.language", "triton.language.core", "triton.language.math", "triton.language.standard")
    for name in (*language, "triton.runtime.jit", "triton.runtime.autotuner", "triton.runtime.interpreter"):
        if name in sys.modules:
            spaces[name] = sys.modules[name]
    functions = sandbox_layer.snapshot(spaces)

    def settings() -> dict[str, Any]:
        return {
            "torch.get_default_dtype()": torch.get_default_dtype(),
            "torch.is_grad_enabled()": torch.is_grad_enabled(),
            "torch.are_deterministic_algorithms_enabled()": torch.are_deterministic_algorithms_enabled(),
            "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision(),
            "torch.get_num_threads()": torch.get_num_threads(),
            "torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "torch.backends.cudnn.deterministic": torch.backends.cudnn.deterministic,
            "numpy.geterr()": numpy.geterr(),
            "sys.getrecursionlimit()": sys.getrecursionlimit(),
            "os.environ": dict(os.environ),
            "sys.path": list(sys.path),
            "sys.meta_path": [id(f) for f in sys.meta_path],
        }

    first = settings()

    def changed() -> list[str]:
        now = settings()
        return functions() + sorted(k for k in first if now[k] != first[k])

    return changed


_STARTED_WITH: list[Callable[[], list[str]]] = []


HANDLERS: dict[str, Callable[[State, Any], m.Reply]] = {
    "jit_kernels": op_jit_kernels, "load": op_load, "run": op_run, "specs": op_specs, "compile": op_compile,
    "time_block": op_time_block, "modules": op_modules, "dry_run": op_dry_run,
    "ping": op_ping, "stage": op_stage}


def main() -> None:
    conn = Connection(int(sys.argv[1]))
    faulthandler.enable(all_threads=False)  # a crash leaves the Python frames it happened in in the log
    if MODE == "run" and os.environ.get("TRITON_INTERPRET") == "1":
        interpreter_compat.install()  # before any candidate imports Triton's libdevice or launches
    if MODE == "run":
        triton_support.install_recorder()
        extensions.install()
        if os.environ.get("TRITON_INTERPRET") == "1":
            interpreter_grid.install()
            interpreter_constexpr.install()
    dispatch_guard.install()
    host_routes.install()
    sandbox_layer.watch_threads(policy.thread_watch)
    device = os.environ.get("WARPGYM_DEVICE", "cpu") if MODE == "run" else "cpu"
    if device.startswith("cuda"):
        torch.cuda.init()  # CUDA's start sets process state (CUDA_MODULE_LOADING) the snapshot must include
        host_writes.poison_storage(torch.empty(1, device=device).untyped_storage())  # loads the driver API
    with policy.watching():  # the first watched op imports torch._dynamo, which rewraps torch functions:
        torch.empty(1, device=device).add_(1)  # before the snapshots: no candidate's first call is a change
    _SNAPSHOT.append(sandbox_layer.snapshot(_guarded_namespaces()))
    policy.freeze_dispatch_tables()  # before any candidate: what PyTorch's allowed ops run as shipped
    _POLICY_STATE.append(policy.state())
    _STARTED_WITH.append(_process_state())
    state = State()
    while True:
        try:
            msg = wire.recv(conn)
        except (EOFError, OSError):
            return
        try:
            request = m.parse_request(msg)
            msg = {"id": msg.get("id")}  # the request holds the inputs now; the raw copy goes
            reply = HANDLERS[request.op](state, request).wire()
        except BaseException as exc:  # noqa: BLE001 - never let one request kill the loop silently
            reply = {"ok": False, "kind": "internal", "error": _trim_traceback(exc, state.module_path)}
        if not isinstance(msg, dict):
            msg = {}
        request = None
        # Not while a timing window holds staged inputs: the judge times a baseline right after each of the
        # candidate's blocks, and memory freed (unmapped) here as it starts would fall in its window. After
        # the window's last block the staged sets are dropped and the cache goes with them.
        if not state.staged:
            release_cached_memory(state.device)  # before the reply: done when the judge reads it
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            wire.send(conn, _seal(reply, msg))
        except (TypeError, ValueError) as exc:
            failure = {"ok": False, "kind": "internal", "error": f"unencodable reply: {exc}"}
            wire.send(conn, _seal(failure, msg))
        del reply


def _guarded_namespaces() -> dict[str, Any]:
    """What a candidate could patch to fake a verdict: clocks, synchronisation, the channel, the checks."""
    import builtins
    import json
    import statistics
    from multiprocessing import connection

    from warpgym.env.common import timing

    spaces: dict[str, Any] = {
        "builtins": builtins, "time": time, "statistics": statistics, "json": json, "math": math, "os": os,
        "sys": sys, "torch.Tensor": torch.Tensor, "torch.UntypedStorage": torch.UntypedStorage,
        "torch.cuda": torch.cuda,
        # torch only where the harness calls it (torch._dynamo rewraps others, e.g. manual_seed, on import)
        "torch": (torch, {"equal", "full", "empty", "frombuffer", "Generator", "randn", "rand", "randint",
                          "randperm", "where", "device", "dtype", "Tensor", "cuda"}),
        "torch.cuda.Event": torch.cuda.Event, "torch.cuda.Stream": torch.cuda.Stream,
        "Connection": connection.Connection, "warpgym.env.worker.main": sys.modules[__name__],
        "warpgym.env.worker.main.HANDLERS": HANDLERS, "warpgym.env.worker.main._PRISTINE": _PRISTINE,
        "warpgym.env.protocol.wire": wire, "warpgym.env.protocol.messages": m,
        "warpgym.env.worker.policy": policy, "warpgym.env.worker.interpreter_compat": interpreter_compat,
        "warpgym.env.common.timing": timing,
        "warpgym.env.worker.triton_launches": triton_support, "warpgym.env.worker.sandbox": sandbox_layer,
        "LaunchRecorder": triton_support.LaunchRecorder, "PolicyMode": policy.PolicyMode,
        "warpgym.env.worker.extensions": extensions,
        "warpgym.env.worker.interpreter_grid": interpreter_grid,
        "warpgym.env.worker.interpreter_races": interpreter_races,
        "LaunchRaces": interpreter_races.LaunchRaces,
        "warpgym.env.worker.host_writes": host_writes, "HostWrites": host_writes.HostWrites,
    }
    if "torch.utils.cpp_extension" in sys.modules:
        builders = (sys.modules["torch.utils.cpp_extension"], {"load_inline", "load"})
        spaces["torch.utils.cpp_extension"] = builders
    return spaces


def _seal(reply: dict[str, Any], msg: dict[str, Any]) -> dict[str, Any]:
    """Answer the request by its id (the parent refuses any other reply) and pass on what the sandbox
    refused since the last reply."""
    denied = sandbox_layer.drain()
    if denied:
        reply["sandbox_denied"] = denied
    reply["id"] = msg.get("id")
    return reply


if __name__ == "__main__":
    main()
