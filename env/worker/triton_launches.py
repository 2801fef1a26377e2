"""Triton: recording the launches a candidate makes, and compiling them offline for a target.

On a CPU the candidate runs in Triton's interpreter, which compiles nothing; to see the PTX
and SASS a GPU would run, every launch is recorded with its arguments, specialised as
Triton's own launcher would for the target (``create_function_from_signature`` and
``_pack_args``, present in Triton 3.6 through 3.9), and compiled with ``triton.compile`` in
a process that never ran the interpreter (the interpreter patches ``triton.language``).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from warpgym.env.toolchain.registry import ORDER
from warpgym.env.toolchain.targets import TARGETS
from warpgym.env.worker import audit as sandbox_layer
from warpgym.env.worker import launch_rules, policy

LAUNCH_OPTION_KEYS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion")


def target_capability(target: str) -> int:
    """The capability Triton compiles ``target`` for (90 for sm_90a)."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; use one of {sorted(TARGETS)}")
    return TARGETS[target].triton_capability


@dataclass
class Launch:
    fn: Any
    """The Python function behind the @triton.jit kernel."""
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    failed: bool = False
    """The launch raised; its binding errors are the run's to report, its compile errors still count."""


@dataclass
class LaunchRecorder:
    launches: list[Launch] = field(default_factory=list)
    count: int = 0
    keep: bool = True
    storages: set[int] = field(default_factory=set)
    """Storage addresses of every tensor a launch was given: an output must be among them (the worker
    clears it before each run)."""
    jit_kernels: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What Triton's JIT compiled for this GPU, by kernel hash: on a GPU whose architecture is the
    target, these are the kernels that ran, so no offline compilation is needed."""
    refused: list[str] = field(default_factory=list)
    """Launches refused because the target's compile could not reproduce them (``launch_rules``)."""
    keys: set[tuple[Any, ...]] = field(default_factory=set)
    """Each distinct (kernel, constexpr values) launched: every one is kept for compilation."""

    def record(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Launch | None:
        self.count += 1
        if self.keep:  # an unrecorded launch (the harness's, the timing loop's) is not named either
            ORDER.add(getattr(fn, "__name__", "?"))
        try:
            launch_rules.plain_arguments(fn, args, kwargs)
        except launch_rules.LaunchRefused as exc:
            self.refused.append(str(exc))
            raise
        self.storages.update(filter(None, map(_storage, (*args, *kwargs.values()))))
        if not self.keep:
            return None
        key = launch_rules.launch_key(fn, args, kwargs)
        if key in self.keys and len(self.launches) >= 256:
            return None
        if key not in self.keys and len(self.keys) >= launch_rules.MAX_DISTINCT:
            self.refused.append(f"more than {launch_rules.MAX_DISTINCT} distinct kernel specialisations were "
                                "launched; not all of them could be compiled for the target")
            raise launch_rules.LaunchRefused(self.refused[-1])
        self.keys.add(key)
        launch = Launch(fn, args, dict(kwargs))
        self.launches.append(launch)
        return launch

    @contextlib.contextmanager
    def unrecorded(self) -> Iterator[None]:
        """Launches made meanwhile are neither counted nor kept (the harness's own, or the timing loop's
        hundreds, whose bench-sized arguments a kept launch would hold alive)."""
        count, keep = self.count, self.keep
        self.keep = False
        try:
            yield
        finally:
            self.count, self.keep = count, keep

    def keep_compiled(self, fn: Any, kernel: Any) -> None:
        asm = getattr(kernel, "asm", None)
        metadata = getattr(kernel, "metadata", None)
        if not asm or metadata is None or len(self.jit_kernels) >= 256:
            return
        key = str(getattr(metadata, "hash", id(kernel)))
        if key not in self.jit_kernels:
            target = getattr(metadata, "target", None)
            arch = getattr(target, "arch", None)
            self.jit_kernels[key] = {
                "ok": True, "kernel": fn.__name__, "name": metadata.name, "arch": arch,
                "ptx": asm.get("ptx", ""), "cubin": base64.b64encode(asm.get("cubin", b"")).decode(),
                "shared": getattr(metadata, "shared", None),
            }


RECORDER = LaunchRecorder()


def _storage(value: Any) -> int:
    """The storage address behind a kernel argument (a tensor, or a descriptor's base tensor), else 0."""
    import torch

    value = getattr(value, "base", value) if not isinstance(value, torch.Tensor) else value
    if isinstance(value, torch.Tensor):
        return value.untyped_storage().data_ptr()
    return 0


@functools.cache
def _own_code() -> tuple[str, ...]:
    """Where code a launch may call lives: the candidate's module (in the worker's directory) and Triton."""
    import triton

    return (sandbox_layer.candidate_prefix(), os.path.dirname(os.path.realpath(triton.__file__)) + os.sep)


def install_recorder() -> None:
    """Wrap every way a Triton kernel is launched so the worker sees each launch."""
    from triton.runtime import autotuner, jit

    def wrap(cls: type, attr: str = "run") -> None:
        original = getattr(cls, attr)
        if getattr(original, "_warpgym", False):
            return

        @functools.wraps(original)
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            launch = None
            try:
                launch_rules.foreign_hooks(self, kwargs.get("grid"), _own_code())
            except launch_rules.LaunchRefused as exc:
                RECORDER.refused.append(str(exc))
                raise
            if sandbox_layer.candidate_threads():
                name = getattr(launch_rules.python_function(self), "__name__", "?")
                RECORDER.refused.append(
                    f"kernel {name} was launched while a thread the candidate started was running: a "
                    "thread can write the outputs while the programs run, and a launch that stores into an "
                    "output is trusted for all of it")
                raise launch_rules.LaunchRefused(RECORDER.refused[-1])
            if "grid" in kwargs:
                name = getattr(launch_rules.python_function(self), "__name__", "?")
                kwargs["grid"] = launch_rules.checked_grid(name, kwargs["grid"], RECORDER.refused)
            if cls.__name__ in ("JITFunction", "InterpretedFunction") and not kwargs.get("warmup"):
                given = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
                launch = RECORDER.record(self.fn, args, given)
            try:
                with policy.paused():
                    value = original(self, *args, **kwargs)
                if launch is not None:
                    RECORDER.keep_compiled(self.fn, value)
                return value
            except BaseException:
                if launch is not None:
                    launch.failed = True
                raise

        run._warpgym = True  # type: ignore[attr-defined]
        setattr(cls, attr, run)

    wrap(jit.JITFunction)
    wrap(autotuner.Autotuner)
    try:
        from triton.runtime.interpreter import InterpretedFunction

        wrap(InterpretedFunction)
    except ImportError:  # pragma: no cover
        pass


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    import triton.language as tl

    if isinstance(value, tl.dtype):
        return {"tl_dtype": value.name}
    if isinstance(value, tl.constexpr):
        return _encode(value.value)
    raise TypeError(f"cannot record a kernel argument of type {type(value).__name__} for offline compilation")


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and "tl_dtype" in value:
        import triton.language as tl

        name = value["tl_dtype"]
        return getattr(tl, name) if hasattr(tl, name) else tl.dtype(name)
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def specialise(launch: Launch, target: str) -> dict[str, Any]:
    """The (signature, constexprs, attrs, options) Triton would compile this launch with."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import JITFunction, create_function_from_signature

    jit_fn = JITFunction(launch.fn)
    backend = make_backend(GPUTarget("cuda", target_capability(target), 32))
    binder = create_function_from_signature(jit_fn.signature, jit_fn.params, backend)
    options = {k: v for k, v in launch.kwargs.items() if k in LAUNCH_OPTION_KEYS}
    params = {k: v for k, v in launch.kwargs.items() if k not in LAUNCH_OPTION_KEYS}
    bound, specialization, parsed = binder(*launch.args, **params, **options)
    _, signature, constexprs, attrs = jit_fn._pack_args(backend, options, bound, specialization, parsed)
    return {
        "kernel": launch.fn.__name__,
        "target": target,
        "signature": signature,
        "constexprs": [[list(path), _encode(v)] for path, v in constexprs.items()],
        "attrs": [[list(path), _encode(v)] for path, v in attrs.items()],
        "options": options,
        "globals": launch_rules.constexpr_globals(launch.fn),
    }


def unique_specs(launches: list[Launch], targets: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Specs for every distinct launch and target; errors say which kernel could not be specialised."""
    specs: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    for launch in launches:
        for target in targets:
            try:
                spec = specialise(launch, target)
            except Exception as exc:  # noqa: BLE001 - reported to the model as a compile problem
                if not launch.failed:
                    errors.append(f"{getattr(launch.fn, '__name__', '?')}: {type(exc).__name__}: {exc}")
                continue
            specs.setdefault(json.dumps(spec, sort_keys=True), spec)
    return list(specs.values()), sorted(set(errors))


def _unwrap_jit(obj: Any) -> Any:
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(obj, JITFunction) and hasattr(obj, "fn") and seen < 8:
        obj, seen = obj.fn, seen + 1
    return obj if isinstance(obj, JITFunction) else None


def find_kernel(module: Any, name: str) -> Any:
    for value in vars(module).values():
        kernel = _unwrap_jit(value)
        if kernel is not None and kernel.fn.__name__ == name:
            return kernel
    raise LookupError(
        f"kernel {name!r} is not defined at module level; define @triton.jit kernels at the top level "
        "so they can be compiled for the target"
    )


def compile_spec(module: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Compile one recorded launch for its target; returns PTX, cubin and metadata, or an error."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    started = time.perf_counter()
    try:
        kernel = find_kernel(module, spec["kernel"])
        launch_rules.check_globals(kernel.fn, spec.get("globals"))
        constexprs = {tuple(p): _decode(v) for p, v in spec["constexprs"]}
        attrs = {tuple(p): _decode(v) for p, v in spec["attrs"]}
        source = ASTSource(kernel, dict(spec["signature"]), constexprs, attrs)
        target = GPUTarget("cuda", target_capability(spec["target"]), 32)
        compiled = triton.compile(source, target=target, options=dict(spec["options"]))
    except Exception as exc:  # noqa: BLE001 - the compiler's message is the feedback
        return {"ok": False, "kernel": spec["kernel"], "target": spec["target"],
                "error": _compile_error_text(exc), "seconds": time.perf_counter() - started,
                "refused": isinstance(exc, launch_rules.LaunchRefused)}
    cubin = compiled.asm.get("cubin", b"")
    return {
        "ok": True, "kernel": spec["kernel"], "target": spec["target"], "name": compiled.metadata.name,
        "ptx": compiled.asm.get("ptx", ""), "cubin": base64.b64encode(cubin).decode(),
        "shared": getattr(compiled.metadata, "shared", None), "seconds": time.perf_counter() - started,
    }


def _compile_error_text(exc: BaseException) -> str:
    """The error and what caused it: Triton's CompilationError shows where, its cause says why."""
    text = f"{type(exc).__name__}: {str(exc).strip() or type(exc).__name__}"
    seen = {id(exc)}
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if repr(cause) not in text:  # newer Triton puts the cause in its message already
            text += f"\n{type(cause).__name__}: {str(cause).strip()}"
        cause = cause.__cause__ or cause.__context__
    return text[-4000:] if len(text) > 4000 else text


def ensure_not_interpreting() -> None:
    if os.environ.get("TRITON_INTERPRET") == "1":
        raise RuntimeError("offline compilation must run in a process without TRITON_INTERPRET=1")
