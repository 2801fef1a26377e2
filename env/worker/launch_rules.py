"""What the CPU interpreter may run: only kernels compiled for the target, with the same constexpr values.

On a CPU the worker interprets each launched Triton kernel and compiles the recorded launch for the target
in another process. The two run the same code only when:
- every argument is a plain value (tensor or a module's parameter, number, boolean, string, None, a Triton
  dtype or descriptor): the interpreter hands the argument object itself to the kernel body, the compile
  only its recorded value, so an ``int`` subclass whose ``__bool__`` disagrees with its value runs one
  path here and another there;
- the launched kernel is the one defined at module level under its name when the module was imported
  (the compile imports the module afresh and finds kernels by name): a kernel built inside a function,
  or rebound at call time, is never compiled;
- the module globals the kernel body reads as constexprs hold the same values where it is compiled (a
  global that depends on which worker imports the module would not).
Each problem is a refusal with the kernel's name and the reason, reported as a violation.
"""

from __future__ import annotations

from typing import Any

from warpgym.env.worker import audit

MAX_DISTINCT = 1024
"""Distinct (kernel, constexpr values) launches kept for compilation; more is refused, not left out."""
_PLAIN = (int, float, bool, str, type(None))


class LaunchRefused(RuntimeError):
    """A launch the target's compile could not reproduce; the reason is the message."""


def _kind(value: Any) -> str:
    base = next((b.__name__ for b in type(value).__mro__[1:] if b in _PLAIN), None)
    return f"a {type(value).__name__}" + (f" (a subclass of {base})" if base else "")


def _argument_problem(value: Any, depth: int = 0) -> str | None:
    import torch

    # A module's own parameter is a tensor as the compile sees it (its subclasses are not: they may override)
    if type(value) is torch.Tensor or type(value) is torch.nn.Parameter:
        from warpgym.env.worker.tensor_objects import foreign_tensor

        return foreign_tensor(value)  # Triton's runtime calls its methods (storage_offset, data_ptr)
    if type(value) in _PLAIN:
        return None
    if (type(value) in (tuple, list) or type(value) is torch.Size) and depth < 4:
        return next(filter(None, (_argument_problem(v, depth + 1) for v in value)), None)
    if isinstance(value, type) and _triton_class(value):  # an enum member's own class, say
        return None
    if _triton_class(type(value)) and depth < 4:
        held = vars(value).values() if hasattr(value, "__dict__") else ()
        return next(filter(None, (_argument_problem(v, depth + 1) for v in held)), None)
    return _kind(value)


def _triton_class(cls: type, depth: int = 0) -> bool:
    """Whether ``cls`` is a class Triton defines, found under its name in the module it names: a class of
    the candidate's that only claims Triton's module (``__module__ = "triton.language"``) is not."""
    import sys

    if cls.__module__.split(".")[0] != "triton":
        return False
    found: Any = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is cls and all(_triton_code(v, depth) for c in cls.__mro__ if c.__module__ != "builtins"
                                for v in vars(c).values())


def _triton_code(value: Any, depth: int = 0) -> bool:
    """Whether a class attribute runs no code of the candidate's: a class it made and set into one of
    Triton's modules under its own name (``setattr(tl, "Block", Block)``) still carries its methods, and a
    builtin there (a partial as ``__repr__``) has no frame the policy could attribute."""
    import functools
    import types

    if isinstance(value, type):
        return True  # a nested class: its own methods run only where code calls it
    if isinstance(value, staticmethod | classmethod):
        return _triton_code(value.__func__, depth)
    if isinstance(value, property):
        return all(_triton_code(f, depth) for f in (value.fget, value.fset, value.fdel) if f is not None)
    if isinstance(value, functools.cached_property):
        return _triton_code(value.func, depth)
    if isinstance(value, types.FunctionType):
        return not value.__code__.co_filename.startswith(audit.candidate_prefix())
    if isinstance(value, types.BuiltinMethodType):  # a builtin type's constructor, as an enum keeps it
        owner = getattr(value, "__self__", None)
        return isinstance(owner, type) and owner.__module__ == "builtins" and value.__name__ == "__new__"
    if isinstance(value, types.GetSetDescriptorType | types.MemberDescriptorType):
        return True
    if isinstance(value, type(functools.cache(len))):  # functools.cache over a function
        return _triton_code(value.__wrapped__, depth)
    if not callable(value) and type(value).__module__ in ("enum", "types"):  # an enum's name and value
        return all(_triton_code(getattr(value, f, None), depth) for f in ("fget", "fset", "fdel")
                   if getattr(value, f, None) is not None)
    if callable(value) or hasattr(type(value), "__get__"):  # a descriptor or a callable object: its class
        return depth < 2 and _triton_class(type(value), depth + 1)
    return True


def _numpy_integers() -> tuple[type, ...]:
    import numpy

    return tuple({numpy.dtype(c).type for c in numpy.typecodes["AllInteger"]})


def grid_problem(grid: Any) -> str | None:
    """What is wrong with a launch grid's value: it must be a tuple or list of up to three ``int``s.
    Triton calls ``__index__`` and compares each entry inside the launch, so an entry of the candidate's
    class would run its methods there, unseen by the policy."""
    if type(grid) not in (tuple, list):
        return f"a {type(grid).__name__}"
    if not 1 <= len(grid) <= 3:
        return f"a {type(grid).__name__} of {len(grid)} entries"
    odd = next((e for e in grid if type(e) is not int and type(e) not in _numpy_integers()), None)
    return None if odd is None else f"a {type(grid).__name__} holding {_kind(odd)}"


def checked_grid(kernel_name: str, grid: Any, refused: list[str]) -> Any:
    """The launch's grid, or for a grid function one that checks what it returns: a bad grid raises
    LaunchRefused (its reason also appended to ``refused``) before Triton reads any entry."""
    def check(value: Any) -> Any:
        problem = grid_problem(value)
        if problem:
            refused.append(f"kernel {kernel_name} was launched with a grid that is {problem}: a grid is a "
                           "tuple of one to three ints (Triton calls each entry's methods inside the launch)")
            raise LaunchRefused(refused[-1])
        return value

    if isinstance(grid, CheckedGrid):
        return grid
    if not callable(grid):
        return check(grid)
    return CheckedGrid(grid, check)


class CheckedGrid:
    """A grid function whose every answer is checked (``checked_grid``); ``grid`` is the launch's own, which
    the rules on code a launch calls judge (an autotuner hands the checked one on to its kernel's launch)."""

    __slots__ = ("grid", "_check")

    def __init__(self, grid: Any, check: Any) -> None:
        self.grid, self._check = grid, check

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._check(self.grid(*args, **kwargs))


def plain_arguments(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Raise LaunchRefused when an argument of this launch is not a plain value."""
    import inspect

    names = list(inspect.signature(fn).parameters)
    given = [*zip(names, args, strict=False), *kwargs.items()]
    for name, value in given:
        problem = _argument_problem(value)
        if problem:
            raise LaunchRefused(
                f"kernel {fn.__name__} was launched with {name} = {problem}: the interpreter runs the object "
                "itself, the compile for the target only its value, so the two could differ; pass plain "
                "tensors, numbers, booleans and strings")


def constexpr_names(fn: Any) -> tuple[str, ...]:
    """The parameters annotated ``tl.constexpr``."""
    import inspect

    out = []
    for name, param in inspect.signature(fn).parameters.items():
        note = param.annotation
        label = note if isinstance(note, str) else getattr(note, "__name__", "")
        if label.split(".")[-1] == "constexpr":
            out.append(name)
    return tuple(out)


def launch_key(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """The kernel and its constexpr values (and launch options): launches with equal keys compile alike."""
    import inspect

    names = list(inspect.signature(fn).parameters)
    bound = {**dict(zip(names, args, strict=False)), **kwargs}
    wanted = set(constexpr_names(fn)) | {k for k in kwargs if k not in names}
    return (id(fn), tuple(sorted((k, repr(bound[k])) for k in wanted if k in bound)))


def python_function(value: Any) -> Any:
    """The Python function behind a Triton kernel object (jit, interpreted, autotuned, heuristics), else
    None."""
    import types

    depth = 0
    while not isinstance(value, types.FunctionType) and depth < 8:
        if type(value).__module__.split(".")[0] != "triton":
            return None
        value, depth = getattr(value, "fn", None), depth + 1
    return value if depth and isinstance(value, types.FunctionType) else None


def kernels_of(module: Any) -> dict[str, Any]:
    """Each module-level Triton kernel's Python function by name, as the module defines them now."""
    found: dict[str, Any] = {}
    for value in list(vars(module).values()):
        fn = python_function(value)
        if fn is not None:
            found.setdefault(fn.__name__, fn)
    return found


def not_compiled(launched: list[Any], at_import: dict[str, Any]) -> list[str]:
    """Launched kernels the compile for the target would not find: not the module-level kernel of their name
    as the module was imported."""
    problems = []
    for fn in {id(f): f for f in launched}.values():
        name = getattr(fn, "__name__", "?")
        if at_import.get(name) is not fn:
            where = "a different function" if name in at_import else "no module-level kernel"
            problems.append(
                f"kernel {name} ran, but the module's {name} when imported is {where}: only kernels defined "
                "at module level are compiled for the target, and the interpreter may run only those")
    return sorted(problems)


def constexpr_globals(fn: Any) -> dict[str, Any]:
    """The module globals the kernel reads that are constexpr values or plain numbers, by name."""
    import triton.language as tl

    namespace = getattr(fn, "__globals__", {})
    code = getattr(fn, "__code__", None)
    out: dict[str, Any] = {}
    for name in getattr(code, "co_names", ()):
        value = namespace.get(name)
        if isinstance(value, tl.constexpr):
            value = value.value
        if type(value) in _PLAIN and value is not None:
            out[name] = value
    return out


def check_globals(fn: Any, expected: dict[str, Any] | None) -> None:
    """Raise LaunchRefused when the kernel's constexpr globals here differ from those it ran with."""
    if not expected:
        return
    here = constexpr_globals(fn)
    changed = sorted(k for k, v in expected.items() if here.get(k) != v or type(here.get(k)) is not type(v))
    if changed:
        detail = ", ".join(f"{k} = {expected[k]!r} when run, {here.get(k)!r} here" for k in changed)
        raise LaunchRefused(f"kernel {fn.__name__} reads globals that differ where it is compiled "
                            f"({detail}): a kernel must compute the same way in every process")


HOOK_ATTRIBUTES = ("pre_run_hooks", "pre_hook", "post_hook", "early_config_prune", "perf_model", "values",
                   "user_defined_pre_hook", "user_defined_post_hook", "do_bench", "_do_bench")
"""Where Triton's kernel objects keep Python it calls during a launch (JIT pre-run hooks, the autotuner's
hooks, pruning and benchmark functions, heuristics' values)."""


def _called_code(value: Any) -> Any:
    """The Python function a launch would run for ``value`` (through partials, bound methods and callable
    objects), or None for a builtin: C code has no frame, so the run-time policy cannot tell whose it is."""
    import functools
    import types

    for _ in range(8):
        if isinstance(value, functools.partial):
            value = value.func
        elif isinstance(value, types.MethodType):
            value = value.__func__
        elif isinstance(value, types.FunctionType):
            return value
        elif isinstance(value, type) or not callable(value):
            return None
        else:
            call = next((vars(c)["__call__"] for c in type(value).__mro__ if "__call__" in vars(c)), None)
            if not isinstance(call, types.FunctionType):
                return None
            value = call
    return None


def _callables(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [v for v in value.values() if callable(v)]
    if isinstance(value, list | tuple):
        return [v for v in value if callable(v)]
    return [value] if callable(value) else []


def _held(value: Any) -> list[Any]:
    """What a partial, a bound method or a callable object carries into the code it calls: the partial's
    arguments, or the fields of the object (one level into their lists and dicts)."""
    import functools
    import types

    if isinstance(value, functools.partial):
        return [*value.args, *value.keywords.values(), *_held(value.func)]
    owner = value.__self__ if isinstance(value, types.MethodType) else value
    if hasattr(owner, "__dict__") and not isinstance(owner, types.FunctionType | type):
        fields = list(vars(owner).values())  # a bound method's object, or a callable object itself
        return [*fields, *(v for f in fields for v in _callables(f) if isinstance(f, dict | list | tuple))]
    return []


def foreign_hooks(kernel: Any, grid: Any, own: tuple[str, ...]) -> None:
    """Raise LaunchRefused when a launch would call something that is not Python of the candidate's module
    or of Triton (``own``: their file prefixes). The policy pauses for a launch and counts an op by the
    nearest frame that is the candidate's; a builtin registered as a hook (``torch.Tensor.add_``) runs with
    none, so it would compute unseen."""
    def problem(value: Any, depth: int = 0) -> str | None:
        code = _called_code(value)
        name = getattr(value, "__qualname__", None) or type(value).__name__
        if code is None or not code.__code__.co_filename.startswith(own):
            return name
        if depth < 3 and code.__code__.co_filename.startswith(own[1:]):
            # Triton's code calls what its object or partial holds: that must pass too
            held = [v for v in _held(value) if callable(v)]
            inner = next(filter(None, (problem(v, depth + 1) for v in held)), None)
            return f"{name} holding {inner}" if inner else None
        return None

    found = []
    grid = grid.grid if isinstance(grid, CheckedGrid) else grid
    if callable(grid) and problem(grid):
        found.append(f"the grid is {problem(grid)}")
    obj = kernel
    for _ in range(8):
        if obj is None or type(obj).__module__.split(".")[0] != "triton":
            break
        settings = vars(obj)  # the object's own: a class property may need a GPU driver to answer
        for attr in HOOK_ATTRIBUTES:
            found += [f"{attr} {problem(v)}" for v in _callables(settings.get(attr)) if problem(v)]
        for config in settings.get("configs") or ():
            hook = getattr(config, "pre_hook", None)
            if callable(hook) and problem(hook):
                found.append(f"a config's pre_hook {problem(hook)}")
        obj = settings.get("fn")
    if found:
        raise LaunchRefused(
            f"kernel {getattr(python_function(kernel), '__name__', '?')} would call {found[0]} during its "
            "launch: code a launch runs must be Python of the module (a function, a lambda), where the "
            "run-time policy sees what it computes")
