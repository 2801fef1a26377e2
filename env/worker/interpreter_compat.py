"""Where Triton's interpreter runs a kernel differently from the compiled kernel, made to run the same.

On a CPU the candidate's kernels run in Triton's interpreter (``TRITON_INTERPRET=1``), which executes
the kernel body as Python over NumPy. Real kernels that compile and run correctly on a GPU hit gaps
there (seen with Triton 3.9), and a gap must not read as a wrong kernel. Each gap with a sound
workaround is closed here, before any candidate is imported:

- float scalar arguments: the compiled kernel receives an ``fp32`` scalar (its launch signature says
  so); the interpreter passed a Python float, so ``eps.to(tl.float32)`` raised. They become fp32
  scalars, as compiled.
- ``triton.language.extra.libdevice``: stubs that the compiler maps to the backend's libdevice; in the
  interpreter they returned None. Each is routed through the CUDA backend's definition (its type checks,
  broadcasting and result type, as compiled) with the arithmetic done by NumPy.
- ``and``/``or`` on tensors: the compiler lowers them to element-wise ``logical_and``/``logical_or``;
  Python's ``and`` kept only the second block mask (and wrote out of bounds). They are rewritten so.
- ``@triton.autotune`` with several configurations: the interpreter cannot time them (it has no
  driver). Each call runs the next configuration in turn, so every one the GPU might pick is checked.
- ``tl.dot`` on float32 operands: compiled, the default ``input_precision="tf32"`` runs on TF32 tensor
  cores (Triton 3.9 hands them the float32 bits, and the hardware ignores the low 13 mantissa bits),
  and ``"tf32x3"`` splits each operand into two TF32 parts (``cvt.rna``) and sums three products; the
  interpreter multiplied in full float32 for both. Both are emulated, so a kernel that needs IEEE float32
  products and does not ask for them (``input_precision="ieee"``) fails here as on a GPU. The compiled
  PTX would show the TF32 instructions too, but only the task's tolerance says whether TF32 is good
  enough, and the values are what it judges.

What has no workaround (a libdevice function without a NumPy equivalent, any other error the
interpreter raises inside a kernel body) is a ``limitation``: the judge reports the case as not run on
the CPU, never as passed (the compiled kernel decides on a GPU).
"""

from __future__ import annotations

import ast
import functools
import itertools
import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

NOTES: list[str] = []
"""Workarounds applied during the current call that the verdict should mention (the worker clears it)."""


class InterpreterLimitation(Exception):
    """A construct that compiles for the target but that Triton's interpreter cannot run."""


# ----------------------------------------------------------------------------- libdevice through NumPy
def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _vectorised(fn: Callable[..., float]) -> Callable[..., np.ndarray]:
    return np.vectorize(fn, otypes=[np.float64])


_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "abs": np.abs, "fabs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "round": _round_half_away, "rint": np.rint, "nearbyint": np.rint,
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1,
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "cbrt": np.cbrt,
    "rcbrt": lambda x: 1.0 / np.cbrt(x),
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "sinpi": lambda x: np.sin(np.pi * x), "cospi": lambda x: np.cos(np.pi * x),
    "erf": _vectorised(math.erf), "erfc": _vectorised(math.erfc), "lgamma": _vectorised(math.lgamma),
    "tgamma": _vectorised(math.gamma), "saturatef": lambda x: np.clip(x, 0.0, 1.0),
    "isnan": np.isnan, "isinf": np.isinf, "isfinited": np.isfinite, "finitef": np.isfinite,
    "signbit": np.signbit, "rcp_rn": lambda x: 1.0 / x, "sqrt_rn": np.sqrt,
    "rsqrt_rn": lambda x: 1.0 / np.sqrt(x),
    "fast_expf": np.exp, "fast_exp10f": lambda x: np.power(10.0, x), "fast_logf": np.log,
    "fast_log2f": np.log2, "fast_log10f": np.log10, "fast_sinf": np.sin, "fast_cosf": np.cos,
    "fast_tanf": np.tan, "fast_tanhf": np.tanh,
    "normcdf": lambda x: 0.5 * _vectorised(math.erfc)(-x / math.sqrt(2)),
    "logb": lambda x: np.floor(np.log2(np.abs(x))), "llrint": np.rint,
}
_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "pow": np.power, "powf": np.power, "powi": np.power, "atan2": np.arctan2, "hypot": np.hypot,
    "fmin": np.fmin, "fmax": np.fmax, "fdim": lambda x, y: np.maximum(x - y, 0.0), "copysign": np.copysign,
    "fmod": np.fmod, "remainder": lambda x, y: x - y * np.rint(x / y), "nextafter": np.nextafter,
    "div_rn": np.divide, "fast_dividef": np.divide, "add_rn": np.add, "sub_rn": np.subtract,
    "mul_rn": np.multiply, "ldexp": lambda x, n: np.ldexp(x, n.astype(np.int32)),
    "fast_powf": np.power, "rhypot": lambda x, y: 1.0 / np.hypot(x, y),
    "scalbn": lambda x, n: np.ldexp(x, n.astype(np.int32)),
}
_TERNARY: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "fma": lambda x, y, z: x * y + z, "fma_rn": lambda x, y, z: x * y + z,
    "norm3d": lambda x, y, z: np.sqrt(x * x + y * y + z * z),
    "rnorm3d": lambda x, y, z: 1.0 / np.sqrt(x * x + y * y + z * z),
}


def _numpy_equivalent(name: str) -> Callable[..., np.ndarray] | None:
    return _UNARY.get(name) or _BINARY.get(name) or _TERNARY.get(name)


_CALLING: list[str] = []
"""The libdevice function whose CUDA definition is being dispatched (the builder sees only its symbol)."""


def _extern_elementwise(lib_name: str, lib_path: str, symbol: str, args: list[Any], ret_type: Any,
                        is_pure: bool) -> Any:
    from triton.runtime.interpreter import TensorHandle, _get_np_dtype

    name = _CALLING[-1] if _CALLING else symbol
    fn = _numpy_equivalent(name)
    if fn is None:
        raise InterpreterLimitation(f"libdevice.{name} ({symbol}) has no equivalent in Triton's interpreter")
    scalar = getattr(ret_type, "scalar", ret_type)
    wide = [a.data.astype(np.float64) if a.data.dtype.kind == "f" else a.data for a in args]
    with np.errstate(all="ignore"):  # NaN and inf are values here, as on the GPU
        out = np.asarray(fn(*wide)).astype(_get_np_dtype(scalar))
    return TensorHandle(out, scalar)


def _libdevice_wrapper(name: str, cuda_fn: Callable[..., Any]) -> Callable[..., Any]:
    from triton.runtime.interpreter import interpreter_semantic

    @functools.wraps(cuda_fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("_semantic", None)
        _CALLING.append(name)
        try:
            return cuda_fn(*args, _semantic=interpreter_semantic, **kwargs)
        finally:
            _CALLING.pop()

    call.__module__ = "triton.language.extra.libdevice"
    return call


def _install_libdevice() -> None:
    import triton.language.extra.libdevice as stubs
    from triton.language.extra.cuda import libdevice as cuda
    from triton.runtime.interpreter import InterpreterBuilder

    InterpreterBuilder.create_extern_elementwise = staticmethod(_extern_elementwise)  # type: ignore[assignment]
    for name in dir(stubs):
        cuda_fn = getattr(cuda, name, None)
        if name.startswith("_") or not callable(getattr(stubs, name)) or cuda_fn is None:
            continue
        wrapper = _libdevice_wrapper(name, cuda_fn)
        setattr(stubs, name, wrapper)
        setattr(cuda, name, wrapper)


# ----------------------------------------------------------------------------- float scalar arguments
def _install_scalars() -> None:
    import triton.language as tl
    from triton.runtime import interpreter
    from triton.runtime.jit import mangle_type

    original = interpreter._implicit_cvt
    if getattr(original, "_warpgym", False):
        return

    def implicit_cvt(arg: Any) -> Any:
        if isinstance(arg, float):
            ty = tl.str_to_ty(mangle_type(arg), None)  # what the compiled launch passes: fp32
            data = np.array([arg], dtype=interpreter._get_np_dtype(ty))
            return tl.tensor(interpreter.TensorHandle(data, ty), ty)
        return original(arg)

    implicit_cvt._warpgym = True  # type: ignore[attr-defined]
    interpreter._implicit_cvt = implicit_cvt


# ----------------------------------------------------------------------------- and / or on tensors
def bool_op(op: str, *operands: Callable[[], Any]) -> Any:
    """``a and b`` / ``a or b`` as the compiler lowers them: constexpr operands short-circuit as in Python,
    tensor operands combine element-wise (``logical_and`` / ``logical_or``)."""
    import triton.language as tl

    dynamic: list[Any] = []
    value: Any = None
    for thunk in operands:
        value = thunk()
        if isinstance(value, tl.tensor):
            dynamic.append(value)
        elif op == "and" and not value:
            return value
        elif op == "or" and value:
            return value
    if not dynamic:
        return value
    result = dynamic[0]
    for other in dynamic[1:]:
        result = result.logical_and(other) if op == "and" else result.logical_or(other)
    return result


BOOL_OP_NAME = "_warpgym_interpreter_bool_op"


def _bool_op_transformer(base: type) -> type:
    class BoolOpTransformer(base):  # type: ignore[misc, valid-type]
        def visit_Assign(self, node: ast.Assign) -> ast.AST:
            # Triton 3.8's own visit_Assign wraps the value without visiting it: visit it first.
            node.value = self.visit(node.value)
            own = getattr(super(), "visit_Assign", None)
            return own(node) if own is not None else node

        def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
            node = self.generic_visit(node)
            op = "and" if isinstance(node.op, ast.And) else "or"
            thunks = [ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                    defaults=[]), body=value) for value in node.values]
            call = ast.Call(func=ast.Name(BOOL_OP_NAME, ast.Load()), args=[ast.Constant(op), *thunks],
                            keywords=[])
            return ast.copy_location(call, node)

    return BoolOpTransformer


def _install_bool_ops() -> None:
    from triton.runtime import interpreter

    rewriter = interpreter.FunctionRewriter
    if getattr(rewriter.ast_transformer, "_warpgym", False):
        return
    transformer = _bool_op_transformer(type(rewriter.ast_transformer))()
    transformer._warpgym = True
    rewriter.ast_transformer = transformer
    # The rewritten kernel runs in its module's globals, which the rewriter fills from the interpreter's.
    setattr(interpreter, BOOL_OP_NAME, bool_op)


# ----------------------------------------------------------------------------- tl.dot on float32
_EXPONENT = np.uint32(0x7F800000)
_TF32_MASK = np.uint32(0xFFFFE000)


TF32_NOTE = ("tl.dot on float32 operands ran at TF32 precision (the default input_precision), as on an "
             "NVIDIA GPU's tensor cores: each operand keeps a 10-bit mantissa; pass input_precision=\"ieee\" "
             "(or \"tf32x3\") where the task needs float32 products")


def tf32_truncate(data: np.ndarray) -> np.ndarray:
    """What a TF32 tensor core reads of float32 bits: the low 13 mantissa bits dropped (inf, NaN kept)."""
    bits = np.ascontiguousarray(data, dtype=np.float32).view(np.uint32)
    special = (bits & _EXPONENT) == _EXPONENT
    return np.where(special, bits, bits & _TF32_MASK).view(np.float32)


def tf32_round(data: np.ndarray) -> np.ndarray:
    """``cvt.rna.tf32.f32``: to the nearest TF32 value, ties away from zero (inf, NaN kept)."""
    bits = np.ascontiguousarray(data, dtype=np.float32).view(np.uint32)
    special = (bits & _EXPONENT) == _EXPONENT
    return np.where(special, bits, (bits + np.uint32(0x1000)) & _TF32_MASK).view(np.float32)


def _install_tf32_dot() -> None:
    from triton._C.libtriton import ir
    from triton.runtime.interpreter import InterpreterBuilder, TensorHandle

    original = InterpreterBuilder.create_dot
    if getattr(original, "_warpgym_tf32", False):
        return

    @functools.wraps(original)
    def create_dot(self: Any, a: Any, b: Any, d: Any, precision: Any, imprecise: Any) -> Any:
        float32 = a.data.dtype == np.float32 and b.data.dtype == np.float32
        if not float32 or precision not in (ir.INPUT_PRECISION.TF32, ir.INPUT_PRECISION.TF32x3):
            return original(self, a, b, d, precision, imprecise)

        def handle(data: np.ndarray, like: Any) -> Any:
            return TensorHandle(data, like.dtype.scalar)

        if precision == ir.INPUT_PRECISION.TF32:
            if TF32_NOTE not in NOTES:
                NOTES.append(TF32_NOTE)
            return original(self, handle(tf32_truncate(a.data), a), handle(tf32_truncate(b.data), b), d,
                            precision, imprecise)
        with np.errstate(all="ignore"):
            a_big, b_big = tf32_round(a.data), tf32_round(b.data)
            a_small, b_small = tf32_round(a.data - a_big), tf32_round(b.data - b_big)
        acc = original(self, handle(a_small, a), handle(b_big, b), d, precision, imprecise)
        acc = original(self, handle(a_big, a), handle(b_small, b), acc, precision, imprecise)
        return original(self, handle(a_big, a), handle(b_big, b), acc, precision, imprecise)

    create_dot._warpgym_tf32 = True  # type: ignore[attr-defined]
    InterpreterBuilder.create_dot = create_dot  # type: ignore[method-assign]


# ----------------------------------------------------------------------------- autotune
def _install_autotune() -> None:
    from triton.runtime.autotuner import Autotuner

    original = Autotuner.run
    if getattr(original, "_warpgym_turns", False):
        return
    turns: dict[int, itertools.count[int]] = {}

    @functools.wraps(original)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if len(self.configs) <= 1:
            return original(self, *args, **kwargs)
        self.nargs = dict(zip(self.arg_names, args, strict=False))
        pruned = self.prune_configs(kwargs)
        turn = next(turns.setdefault(id(self), itertools.count()))
        chosen = pruned[turn % len(pruned)]
        note = (f"@triton.autotune on {self.base_fn.__name__}: the interpreter cannot time its "
                f"{len(pruned)} configurations, so each call ran the next in turn (on a GPU the fastest is "
                "chosen); every configuration must be right")
        if note not in NOTES:
            NOTES.append(note)
        configs = self.configs
        self.configs = [chosen]
        try:
            return original(self, *args, **kwargs)
        finally:
            self.configs = configs

    run._warpgym_turns = True  # type: ignore[attr-defined]
    Autotuner.run = run


SOURCES: dict[str, list[str]] = {}
"""Each candidate module's file and its lines, as the worker wrote them (``keep_source``)."""


def keep_source(path: str, source: str) -> None:
    """The candidate module written at ``path``: the interpreter reads its kernels' bodies from it."""
    lines = source.splitlines(keepends=True)
    for name in {path, os.path.realpath(path)}:
        SOURCES[name] = lines


def _install_true_sources() -> None:
    """The interpreter reads a kernel's body through ``inspect.getsourcelines``, that is from ``linecache``,
    and runs what it finds: a module that rewrote its own entry there (``linecache.cache[__file__]``) would
    run a body the static scan never read, and the target's compile another. The candidates' entries are
    put back as the worker wrote them before every rewrite, a kernel's ``__wrapped__`` (which ``inspect``
    follows to another function's lines) is dropped, and each kernel's rewrite is kept here, not in Triton's
    shared cache, which the candidate could fill with a function of its choosing."""
    import linecache

    from triton.runtime.interpreter import FunctionRewriter, InterpretedFunction

    original = FunctionRewriter.rewrite_ast
    if getattr(original, "_warpgym", False):
        return
    rewritten: dict[int, tuple[Any, Any]] = {}  # each kernel's rewrite, where the candidate cannot reach

    @functools.wraps(original)
    def rewrite_ast(self: Any) -> Any:
        for path, lines in SOURCES.items():
            linecache.cache[path] = (sum(map(len, lines)), None, list(lines), path)
        getattr(self.fn, "__dict__", {}).pop("__wrapped__", None)  # inspect reads what it names
        return original(self)

    def rewrite(self: Any) -> Any:
        """The kernel's own rewrite: Triton's shared cache (``rewritten_fn``) and the kernel's rewriter
        are within the candidate's reach, so neither is trusted."""
        kept = rewritten.get(id(self.fn))
        if kept is None or kept[0] is not self.fn:
            rewriter = self.rewriter
            if type(rewriter) is not FunctionRewriter or rewriter.fn is not self.fn:
                rewriter = FunctionRewriter(self.fn)
            kept = rewritten[id(self.fn)] = (self.fn, rewrite_ast(rewriter))
        return kept[1]

    rewrite_ast._warpgym = True  # type: ignore[attr-defined]
    FunctionRewriter.rewrite_ast = rewrite_ast
    InterpretedFunction.rewrite = rewrite


def install() -> list[str]:
    """Close the gaps above; returns those that could not be closed with this Triton (none on 3.9)."""
    missing = []
    for name, step in (("float scalars", _install_scalars), ("libdevice", _install_libdevice),
                       ("and/or on tensors", _install_bool_ops), ("autotune", _install_autotune),
                       ("tf32 dot", _install_tf32_dot), ("kernel sources", _install_true_sources)):
        try:
            step()
        except (ImportError, AttributeError) as exc:
            missing.append(f"{name}: {type(exc).__name__}: {exc}")
    return missing


# ----------------------------------------------------------------------------- what a failure was
def limitation(exc: BaseException) -> str | None:
    """What Triton's interpreter could not run, when ``exc`` is an error the interpreter raised inside a
    kernel body (the compiled kernel raises nothing there); None for any other failure.

    Only errors the interpreter wrapped itself count (``InterpreterError`` raised from its own frame
    with the kernel's error as the cause), and never a failed ``tl.device_assert`` (an AssertionError), an
    access outside every tensor of the launch (``interpreter_grid.OutOfBounds``) or a data race
    (``interpreter_races.Race``): real failures on a GPU too. A candidate can reach this on purpose; the
    judge never counts a case it covers as passed.
    """
    try:
        from triton.runtime.errors import InterpreterError
    except ImportError:  # pragma: no cover - Triton without an interpreter
        return None
    from warpgym.env.worker.interpreter_grid import OutOfBounds
    from warpgym.env.worker.interpreter_races import Race

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if type(current) is InterpreterLimitation:
            return str(current)
        if type(current) is InterpreterError and _raised_by_interpreter(current):
            cause = current.__cause__
            if cause is None or isinstance(cause, AssertionError | OutOfBounds | Race):
                return None
            inner = limitation(cause) if cause is not current else None
            return inner or f"{type(cause).__name__}: {str(cause)[:300]}"
        current = current.__cause__ or current.__context__
    return None


def _raised_by_interpreter(exc: BaseException) -> bool:
    """The innermost frame of the traceback is Triton's interpreter module, not candidate code."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename.replace("\\", "/").endswith(
        "triton/runtime/interpreter.py")
