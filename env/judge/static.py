"""Stage 1: parse the candidate and apply the language and policy rules without running it.

These checks give early, line-numbered feedback. They are not the last word on host code:
``policy.py`` watches every ATen op at run time, which catches what a scan cannot
(``getattr`` tricks, ``importlib``, string ``eval``).
"""

from __future__ import annotations

import ast
import re
import threading
import warnings
from dataclasses import dataclass, field

from warpgym.env.judge.result import Violation
from warpgym.env.judge.static_branches import always_true, never_true
from warpgym.env.judge.static_strings import literal_string

ALLOWED_TORCH_CALLS = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "full", "full_like", "ones", "ones_like",
    "tensor", "as_strided", "device", "Size", "finfo", "iinfo", "is_tensor", "get_default_dtype", "Generator",
    "is_floating_point", "promote_types", "result_type", "broadcast_shapes", "dtype", "is_complex",
    "get_device_module", "get_default_device",
    # torch.cuda.* and torch.backends.* calls are device queries, allowed by prefix below.
})
TORCH_VIEWS = frozenset({
    "view_as_real", "view_as_complex", "unflatten", "flatten", "reshape", "narrow", "select", "squeeze",
    "unsqueeze", "transpose", "swapaxes", "swapdims", "permute", "movedim", "moveaxis", "t", "chunk", "split",
    "tensor_split", "unbind", "broadcast_to", "diagonal",
})
"""Functions that return a view (or, for reshape and flatten of a non-contiguous input, a layout copy) of
their input: what the run-time policy allows host code as views, reached as ``torch.f(x)``."""
DEVICE_MODULES = ("cuda", "xpu", "mps", "mtia", "accelerator")
"""torch's per-backend modules: ``torch.xpu.is_available()`` asks about a device and computes nothing."""
ALLOWED_TORCH_PREFIXES = ("torch.backends.", "torch.version.", *(f"torch.{m}." for m in DEVICE_MODULES))
EXTENSION_BUILDERS = frozenset({"torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension"})
"""A CUDA extension's build (the harness's own, env/worker/extensions.py): its kernels are the candidate's."""

FORBIDDEN_MODULES = frozenset({
    "subprocess", "socket", "multiprocessing", "threading", "_thread", "concurrent", "asyncio", "signal",
    "gc", "importlib", "ctypes", "cffi", "shutil", "urllib", "http", "ssl", "requests", "httpx", "pty",
    "resource", "sysconfig", "code", "codeop", "runpy", "builtins", "pickle", "marshal",
})
FORBIDDEN_MODULES = FORBIDDEN_MODULES | {"inspect", "traceback", "__main__", "mmap"}
DEVICE_TOOLCHAINS = frozenset({"cuda", "cupy", "cupyx", "pycuda", "numba", "nvmath", "cutlass"})
"""Other ways to build and launch device code (cuda-python's driver and NVRTC, CuPy, PyCUDA, Numba, CUTLASS's
DSL): a module loaded through them never reaches the loader's record, so its instructions go uncounted and a
kernel it launches under an own kernel's name passes for that one. Device code comes through the loader."""
HARNESS_MODULES_ALLOWED = ("warpgym.loader",)
"""The only part of warpgym a candidate may import: the CUDA/PTX loader. The rest is the judge."""
FORBIDDEN_BUILTINS = frozenset({"eval", "exec", "compile", "__import__", "globals", "breakpoint", "input"})
INTROSPECTION = frozenset({
    "__globals__", "__subclasses__", "__builtins__", "__code__", "__closure__", "__base__", "__bases__",
    "__mro__", "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "tb_frame", "tb_next", "gi_frame",
    "gi_code", "cr_frame", "ag_frame", "_current_frames", "settrace", "setprofile", "addaudithook",
})
"""Attributes that lead from any object to the interpreter's internals: other modules' globals, the
call stack, every class. A kernel wrapper needs none of them; a candidate hunting the harness's
objects needs one (``().__class__.__base__.__subclasses__()`` needs no import at all)."""
FORBIDDEN_OS = frozenset({"system", "popen", "fork", "forkpty", "kill", "killpg", "execv", "execve", "execvp",
                          "execl", "execlp", "spawnl", "spawnv", "posix_spawn", "_exit", "setsid", "remove",
                          "unlink", "rmdir", "chdir"})
TRITON_DECORATORS = ("jit", "autotune", "heuristics")
TORCH_INTERNALS = ("torch._", "torch.ops", "torch.library", "torch.utils", "torch.autograd", "torch.profiler",
                   "torch.from_dlpack", "torch.frombuffer", "torch.from_numpy", "torch.save", "torch.load",
                   "torch.compile", "torch.jit", "torch.fx", "torch.export")
"""Parts of torch a kernel wrapper never needs, named even without a call (``f = torch._C...`` then
``f()``): custom operators, the profiler's switches, zero-copy and serialisation routes, compilers."""
DISPATCH_SWITCHES = frozenset({
    "_C", "redispatch", "redispatch_boxed", "_handle", "_op_dk", "_disable_current_modes", "_pop_mode",
    "_pop_mode_temporarily", "_push_mode", "no_dispatch", "_DisableTorchDispatch", "DisableTorchFunction",
    "DisableTorchFunctionSubclass", "_ExcludeDispatchKeyGuard", "ExcludeDispatchKeyGuard",
    "_ForceDispatchKeyGuard", "_SetExcludeDispatchKeyGuard", "_IncludeDispatchKeyGuard", "DispatchKeySet",
    "DispatchKey", "_python_dispatch", "_mode_utils", "_disabled_torch_function_impl",
    "_disabled_torch_dispatch_impl", "_pop_torch_dispatch_stack", "_pop_torch_function_stack",
})
"""Names of PyTorch's switches that hide ops from a dispatch or torch-function mode (the run-time policy's
eyes), and of ways to run an op below them: refused by name, whatever object they are read from, since
any module's own ``torch`` attribute leads there (``F.torch._C``)."""
MODULE_DUNDERS = frozenset({"__file__", "__spec__", "__loader__", "__path__", "__package__", "__cached__"})
"""Where a module lives on disk: a way from ``warpgym.loader`` to the judge's files and solutions."""
HOST_VIEWS = frozenset({"__array_interface__", "__cuda_array_interface__", "__dlpack__", "__dlpack_device__",
                        "from_dlpack", "frombuffer", "ctypeslib", "untyped_storage", "_typed_storage"})
"""Zero-copy ways to hand tensor memory to NumPy or raw bytes, where host Python can compute on it."""
UNREACHED_LEFT_TO_RUN_TIME = frozenset({"torch-compute"})
"""Findings not made in a branch that never runs on the devices judged here: what runs there, the
run-time policy sees (and it watches the module's import too). Every other rule holds in every branch."""
DYNAMIC_ACCESS = frozenset({"getattr", "setattr", "delattr", "hasattr", "vars", "dir"})
NOT_IN_KERNELS = frozenset({"open", "getattr", "setattr", "delattr", "vars", "locals"}) | FORBIDDEN_BUILTINS
"""Builtins a @triton.jit body cannot mean: in the interpreter they would run as Python."""
KERNEL_PRINTS = frozenset({"device_print", "create_print", "static_print"})
"""Printing from a kernel: in the interpreter a Python print of the values (``static_print`` too, which a
compile prints once with the values' types), on a GPU the process's standard output."""
VALUE_INTERNALS = frozenset({"handle"})
"""Fields of a Triton value that hold the backend's object (the interpreter's NumPy array), not a value."""
GETATTR_LIKE = ("getattr", "hasattr", "setattr", "delattr")
"""Builtins that name an attribute by a string: with a literal, judged as the attribute itself would be."""
NAMESPACE_READS = ("get", "__getitem__", "pop", "setdefault", "__contains__")
"""Methods of an object's ``__dict__`` (or ``vars()``) that name an attribute by a string key."""
ATTRIBUTE_GETTERS = ("operator.attrgetter", "operator.methodcaller")
"""``attrgetter("a.b")`` reads ``.a.b`` off whatever it is given, ``methodcaller("m")`` calls ``.m()``."""
SYS_REACH = frozenset({"modules", "meta_path", "path_hooks", "path_importer_cache", "monitoring"})
"""What of ``sys`` leads to every loaded module (the harness's among them) or to the import machinery;
with ``sys._*`` (frames, exceptions of other threads), refused however ``sys`` is reached."""
BUILTIN_REACH = frozenset({"__self__", "__import__"})
"""``print.__self__`` is the builtins module (``eval``, ``exec``, ``__import__``): never needed by a kernel
wrapper, refused as an attribute wherever it is read."""
RNG_ATTRIBUTES = frozenset({
    "manual_seed", "manual_seed_all", "seed_all", "set_rng_state", "set_rng_state_all", "fork_rng",
    "default_generator", "default_generators", "set_state", "graphsafe_set_state",
})
"""Ways to seed or set PyTorch's random generators (``torch.manual_seed``, ``Generator.manual_seed``,
``torch.cuda.manual_seed_all``, ``torch.random.fork_rng``, the default generators themselves): refused on
any object, since a generator object can come from anywhere."""
RNG_SEEDS = ("torch.seed", "torch.random.seed", "random.seed", "numpy.random.seed")
"""Seeding functions named ``seed`` (too common a word to refuse on every object)."""
DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.:][A-Za-z_][A-Za-z0-9_]*)+")
"""A string that reads as an attribute path (``"torch._C._DisableTorchDispatch"``, ``"pkg.mod:attr"``): what
``operator.attrgetter``, ``pkgutil.resolve_name`` and the like follow."""
INTERPRETER_MARKERS = ("TRITON_INTERPRET", "triton.runtime.interpreter", "interpreter_builder",
                       "InterpretedFunction")
"""Strings that only code asking "am I in Triton's interpreter?" needs: code that branches on the answer
runs one thing in the CPU check and another on the GPU."""


def _namespace_of(node: ast.AST) -> ast.AST | None:
    """``x`` for ``x.__dict__`` or ``vars(x)``: a namespace whose keys are ``x``'s attributes."""
    if isinstance(node, ast.Attribute) and node.attr == "__dict__":
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" \
            and len(node.args) == 1:
        return node.args[0]
    return None


def _named_attribute(node: ast.AST) -> tuple[ast.AST, str, ast.AST] | None:
    """(object, attribute name, the name's node) where ``node`` reads, tests, sets or deletes an attribute
    named by a literal string: ``getattr(x, "a")`` (and ``hasattr``, ``setattr``, ``delattr``),
    ``object.__getattribute__(x, "a")``, ``x.__getattribute__("a")``, ``x.__dict__["a"]``, ``vars(x)["a"]``,
    ``vars(x).get("a")``. Each is judged as ``x.a`` would be."""
    if isinstance(node, ast.Subscript):
        owner = _namespace_of(node.value)
        name = None if owner is None else literal_string(node.slice)
        return None if owner is None or name is None else (owner, name, node.slice)
    if not isinstance(node, ast.Call):
        return None
    func, args = node.func, node.args
    if isinstance(func, ast.Name) and func.id in GETATTR_LIKE and len(args) >= 2:
        target, named = args[0], args[1]
    elif isinstance(func, ast.Attribute) and func.attr == "__getattribute__" and args:
        target, named = (args[0], args[1]) if len(args) >= 2 else (func.value, args[0])
    elif isinstance(func, ast.Attribute) and func.attr in NAMESPACE_READS and args \
            and _namespace_of(func.value) is not None:
        target, named = _namespace_of(func.value), args[0]
    else:
        return None
    name = literal_string(named)
    return None if name is None else (target, name, named)  # type: ignore[return-value]


@dataclass
class StaticReport:
    ok: bool
    violations: list[Violation] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)
    tree: ast.Module | None = None


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _is_triton_kernel(fn: ast.FunctionDef, aliases: dict[str, str]) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = _dotted(target) or ""
        head, _, tail = name.partition(".")
        resolved = f"{aliases.get(head, head)}.{tail}" if tail else aliases.get(head, head)
        if resolved.startswith("triton.") and resolved.rsplit(".", 1)[-1] in TRITON_DECORATORS:
            return True
    return False


def _import_aliases(node: ast.Import | ast.ImportFrom) -> dict[str, str]:
    """The names an import binds, each to the dotted module or object it stands for."""
    if isinstance(node, ast.Import):
        return {(a.asname or a.name).split(".")[0]: a.name if a.asname else a.name.split(".")[0]
                for a in node.names}
    return {a.asname or a.name: f"{node.module or ''}.{a.name}" for a in node.names}


class _Scanner(ast.NodeVisitor):
    def __init__(self, language: str) -> None:
        self.language = language
        self.aliases: dict[str, str] = {}
        self.violations: list[Violation] = []
        self.kernels: list[str] = []
        self._in_kernel = 0
        self.modules: set[str] = {"__builtins__"}
        """Names bound to modules (``import x``, ``import x.y as z``)."""
        self.docstrings: set[int] = set()
        """Docstring nodes: prose, which may name anything without doing it."""
        self.plain_functions: set[str] = set()
        """Module-level functions that are not Triton kernels (filled before the scan)."""
        self._unreached = 0
        """Depth of branches that never run on the devices judged here (see static_branches)."""
        self._flagged: set[tuple[str, int | None, int | None]] = set()
        self._attribute_bases: set[int] = set()
        """Name nodes read only as the object of an attribute (``sys.stdout``), not passed on as values."""

    def _import_roots(self) -> set[str]:
        """The first names of dotted paths that imports bind (``torch``, ``triton``, ``sys``, ``os``...)."""
        return self.modules | set(self.aliases) | {v.split(".")[0] for v in self.aliases.values()}

    def _flag_harness_reach(self, full: str, node: ast.AST) -> None:
        self.flag("forbidden-call", f"{full} reaches into the harness (other modules' state, the caller's "
                  "frames); a candidate may use only what it imports, and warpgym's loader alone", node)

    def flag(self, code: str, message: str, node: ast.AST) -> None:
        """One finding per rule and expression: a call and its callee start at the same place, so the call's
        rule and the attribute's rule for ``sys._getframe()`` are one finding, not two."""
        if self._unreached and code in UNREACHED_LEFT_TO_RUN_TIME:
            return
        where = (code, getattr(node, "lineno", None), getattr(node, "col_offset", None))
        if where in self._flagged:
            return
        self._flagged.add(where)
        self.violations.append(Violation(code, message, where[1]))

    def _visit_unreached(self, nodes: list[ast.stmt] | ast.AST) -> None:
        self._unreached += 1
        for node in nodes if isinstance(nodes, list) else [nodes]:
            self.visit(node)
        self._unreached -= 1

    def _visit_branches(self, node: ast.If | ast.IfExp | ast.While) -> None:
        self.visit(node.test)
        body_unreached = never_true(node.test, self._resolve)
        else_unreached = not isinstance(node, ast.While) and always_true(node.test, self._resolve)
        for part, unreached in ((node.body, body_unreached), (node.orelse, else_unreached)):
            if unreached:
                self._visit_unreached(part)
            else:
                for child in part if isinstance(part, list) else [part]:
                    self.visit(child)

    visit_If = visit_IfExp = visit_While = _visit_branches  # type: ignore[assignment]

    def _check_module(self, module: str, node: ast.AST) -> None:
        root = module.split(".")[0]
        if root == "warpgym" and not module.startswith(HARNESS_MODULES_ALLOWED):
            self.flag("forbidden-import", f"importing {module!r}: the harness is not the candidate's to use "
                      f"(only {', '.join(HARNESS_MODULES_ALLOWED)} is)", node)
            return
        if root in DEVICE_TOOLCHAINS:
            self.flag("forbidden-import", f"importing {module!r}: device code is built and launched through "
                      "warpgym.loader (load_cuda, load_ptx), whose modules the judge reads", node)
            return
        if root in FORBIDDEN_MODULES and not (root == "ctypes" and self.language == "cuda"):
            self.flag("forbidden-import", f"importing {module!r} is not allowed in a candidate (no "
                      "processes, threads, sockets, dynamic imports or introspection of the harness)", node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.modules.add(alias.asname or alias.name.split(".")[0])
            self._check_module(alias.name, node)
            self._judge_path(alias.name, node)
        self.aliases.update(_import_aliases(node))

    def _judge_path(self, full: str, node: ast.AST) -> None:
        """An imported dotted path judged as the attribute chain it names: ``from sys import modules`` is
        ``sys.modules``, ``from torch._C import X`` is ``torch._C.X``, ``from os import sys`` is ``os.sys``.
        The harness's own extension builder (``torch.utils.cpp_extension.load_inline``) is the exception."""
        if full in EXTENSION_BUILDERS or full.startswith(tuple(f"{b}." for b in EXTENSION_BUILDERS)):
            return
        parts = full.split(".")
        for i in range(1, len(parts)):
            if self._judge_attribute(".".join(parts[: i + 1]), parts[i], node):
                return

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if module == "warpgym":  # `from warpgym import loader` imports the submodule: judge each name
            for alias in node.names:
                self._check_module(f"warpgym.{alias.name}", node)
        else:
            self._check_module(module, node)
        self.aliases.update(_import_aliases(node))
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if module and alias.name != "*":
                self._judge_path(full, node)
            elif module.split(".")[0] in ("sys", "torch"):  # binds sys.modules, or torch.manual_seed unseen
                self._judge_path(module, node)
                self.flag("obfuscated-access", f"from {module} import * binds names the scan cannot see "
                          "(sys.modules, torch.manual_seed, compute ops); import the names you use", node)
            compute = not self._torch_call_allowed(full) and not self._is_namespace(full)
            if module.startswith("torch") and compute:
                self.flag("torch-compute", f"importing {full} brings a PyTorch compute op into the "
                          "candidate; do the arithmetic in a kernel", node)

    @staticmethod
    def _is_namespace(full: str) -> bool:
        return full in ("torch.nn.functional", "torch.nn", "torch.Tensor", "torch.dtype", "torch.device") \
            or full.startswith(("torch.backends", *(f"torch.{m}" for m in DEVICE_MODULES)))

    @staticmethod
    def _torch_call_allowed(full: str) -> bool:
        if full.startswith(ALLOWED_TORCH_PREFIXES) or full in EXTENSION_BUILDERS:
            return True
        return full.count(".") == 1 and full.split(".")[1] in ALLOWED_TORCH_CALLS | TORCH_VIEWS

    def _resolve(self, node: ast.AST) -> str | None:
        name = _dotted(node)
        if name is None:
            return None
        head, _, tail = name.partition(".")
        base = self.aliases.get(head, head)
        return f"{base}.{tail}" if tail else base

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if _is_triton_kernel(node, self.aliases):
            self.kernels.append(node.name)
            self._in_kernel += 1
            self.generic_visit(node)
            self._in_kernel -= 1
        else:
            self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def _check_kernel_call(self, node: ast.Call) -> None:
        """Inside a @triton.jit body only Triton runs: ``tl.*``, other kernels, folded builtins, and
        methods of Triton values. A call out to a module (math, numpy, torch) or to a plain Python function
        of the module would run Python in the interpreter that the compiled kernel never runs."""
        name = _dotted(node.func)
        if name is None:
            return
        head = name.split(".")[0]
        resolved = self._resolve(node.func) or name
        if head in self.modules or head in self.aliases:
            if not resolved.startswith("triton"):
                self.flag("kernel-body", f"the kernel calls {resolved}(): a @triton.jit body may use only "
                          "Triton (triton.language, other @triton.jit functions)", node)
        elif "." not in name and name in self.plain_functions:
            self.flag("kernel-body", f"the kernel calls the Python function {name}(): a @triton.jit body may "
                      "call only other @triton.jit functions", node)
        elif name == "print":
            self.flag("kernel-print", "the kernel calls print(): Triton compiles it to a device print, and "
                      "what a kernel prints reaches host code, which could read it back; kernels may not "
                      "print", node)
        elif "." not in name and name in NOT_IN_KERNELS:
            self.flag("kernel-body", f"the kernel calls {name}(): not Triton", node)

    def visit_Call(self, node: ast.Call) -> None:
        if self._in_kernel:
            self._check_kernel_call(node)
        if not self._in_kernel:
            full = self._resolve(node.func)
            named = _named_attribute(node.func)  # getattr(os, "system")(...) is os.system(...)
            if full is None and named is not None and isinstance(node.func, ast.Call) \
                    and isinstance(node.func.func, ast.Name) and node.func.func.id == "getattr":
                base = self._resolve(named[0])
                full = f"{base}.{named[1]}" if base and not base.startswith("torch") else None
            if full:
                if full.startswith("torch.") and not self._torch_call_allowed(full):
                    self.flag("torch-compute", f"{full}() is a PyTorch compute op; host code may only "
                              "allocate, take views and launch kernels", node)
                elif full in FORBIDDEN_BUILTINS or full.startswith("os.") and full[3:] in FORBIDDEN_OS:
                    self.flag("forbidden-call", f"{full}() is not allowed in a candidate (no code built at "
                              "run time, processes, signals or file removal)", node)
                elif full.startswith(("sys._getframe", "sys.modules")):
                    self._flag_harness_reach(full, node)
                elif full in DYNAMIC_ACCESS and node.args:
                    self._check_dynamic_access(full, node)
                if full in ATTRIBUTE_GETTERS:
                    self._check_attribute_getter(full, node)
            self._judge_named_attribute(node)
            built = literal_string(node)  # "".join((...)), "{}".format(...) of literals
            if built is not None:
                self._check_string(built, node)
        self.generic_visit(node)

    def _judge_named_attribute(self, node: ast.Call | ast.Subscript) -> None:
        """``getattr(x, "a")``, ``x.__dict__["a"]``, ``vars(x).get("a")`` and the like: every rule that holds
        for ``x.a`` holds for them (``getattr(sys, "modules")`` is ``sys.modules``)."""
        named = _named_attribute(node)
        if named is None:
            return
        target, attr, where = named
        if isinstance(target, ast.Name):
            self._attribute_bases.add(id(target))
        base = self._resolve(target)
        self._judge_attribute(f"{base}.{attr}" if base else None, attr, where)

    def _check_attribute_getter(self, full: str, node: ast.Call) -> None:
        """``operator.attrgetter("_C._DisableTorchDispatch")`` reads that chain off whatever object it is
        given later, ``methodcaller("manual_seed", 0)`` calls that method: each name is judged as an attribute
        of an object the scan cannot see, so the rules that hold on any object apply."""
        names = node.args if full.endswith("attrgetter") else node.args[:1]
        for arg in names:
            value = literal_string(arg)
            for part in (value or "").split("."):
                if part and self._judge_attribute(None, part, arg):
                    break

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if not self._in_kernel:
            self._judge_named_attribute(node)
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        """An f-string whose every part is a literal (``f"{'_'}C"``) is read as the string it makes."""
        built = literal_string(node)
        if built is not None and len(node.values) > 1:
            self._check_string(built, node)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        """The ``sys`` module passed on as a value (``s = sys``, ``getattr(sys, name)``, ``f(sys)``) hides
        which of its attributes is read; ``__builtins__`` holds ``eval``, ``exec`` and ``__import__``."""
        if self._in_kernel or not isinstance(node.ctx, ast.Load):
            return
        if node.id == "__builtins__":
            self.flag("introspection", "__builtins__ holds eval, exec and __import__; candidates may not "
                      "reach the builtins module or introspect the harness", node)
        elif self.aliases.get(node.id) == "sys" and id(node) not in self._attribute_bases:
            self.flag("forbidden-call", f"{node.id} (the sys module) passed on as a value hides which of its "
                      "attributes is read (sys.modules reaches the harness); name sys.stdout and the like "
                      "directly", node)

    def _check_dynamic_access(self, name: str, node: ast.Call) -> None:
        """``getattr(torch, "softmax")``, ``getattr(module, computed)`` or ``vars(module)``: a function
        nobody can read off the source. One rule, so one finding per call. ``getattr(torch, x.device.type)``
        is the device's module (``torch.cuda``), a device query: left to the run-time policy, which sees any
        compute reached through it."""
        target = node.args[0]
        resolved = self._resolve(target) or ""
        on_module = isinstance(target, ast.Name) and target.id in self.modules
        named = node.args[1] if len(node.args) > 1 else None
        literal = isinstance(named, ast.Constant) and isinstance(named.value, str)
        device_module = name == "getattr" and isinstance(named, ast.Attribute) and named.attr == "type"
        if device_module and resolved == "torch":
            return
        if name in ("getattr", "setattr") and (resolved.startswith("torch") or resolved in ("F", "time")):
            self.flag("obfuscated-access", f"{name}() on {resolved} hides which function is called; name it "
                      "directly", node)
        elif on_module and (name in ("vars", "dir") or not literal):
            self.flag("obfuscated-access", f"{name}() on the module {target.id!r} with a computed name hides "
                      "which function is called; name it directly", node)
        elif name == "vars" and resolved and resolved.split(".")[0] in self._import_roots():
            self.flag("obfuscated-access", f"vars() on {resolved} reads an imported module's (or class's) "
                      "namespace as a dict, past the attribute rules; name the attribute directly", node)
        elif name in ("getattr", "setattr", "delattr") and not literal and isinstance(target, ast.Attribute) \
                and resolved.split(".")[0] in self._import_roots():
            self.flag("obfuscated-access", f"{name}() on {resolved} with a computed name hides which "
                      "attribute of an imported module is reached (triton.runtime.jit.sys); name it directly",
                      node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if id(node) in self.docstrings:
            return
        if isinstance(node.value, str):
            self._check_string(node.value, node)
        self.generic_visit(node)

    def _check_string(self, value: str, node: ast.AST) -> None:
        if any(marker in value for marker in INTERPRETER_MARKERS):
            self.flag("interpreter-detection", f"the string {value[:60]!r} asks whether Triton's "
                      "interpreter runs the kernel; a candidate must compute the same way everywhere", node)
        if value in HOST_VIEWS and not self._in_kernel:
            self.flag("host-compute", f"the string {value!r} names a way to hand tensor memory to host "
                      "Python; the arithmetic must run in a kernel", node)
        if value in DISPATCH_SWITCHES and not self._in_kernel:
            self.flag("torch-internals", f"the string {value!r} names a way past the run-time policy; "
                      "host code may allocate, take views and launch kernels", node)
        if value in INTROSPECTION and not self._in_kernel:
            self.flag("introspection", f"the string {value!r} names interpreter internals (frames, "
                      "globals, every class); candidates may not introspect the harness", node)
        if value == "sys" and not self._in_kernel:  # pkgutil.resolve_name("sys"), pydoc.locate("sys")
            self._flag_harness_reach("the string 'sys' (naming the sys module)", node)
        if not self._in_kernel and DOTTED_NAME.fullmatch(value):
            # an attribute path (attrgetter, pkgutil.resolve_name): each part judged as an attribute would be
            parts = re.split("[.:]", value)
            for i in range(1, len(parts)):
                if self._judge_attribute(".".join(parts[: i + 1]), parts[i], node):
                    break
            self._check_string(parts[0], node)

    def _judge_attribute(self, full: str | None, attr: str, node: ast.AST) -> bool:
        """Every rule on reading ``.attr`` off an object (``full``: the dotted path it resolves to, None where
        the object is no name). It holds for ``x.attr`` in the source and for each way of naming ``attr`` by a
        string (``getattr(x, "attr")``, ``x.__dict__["attr"]``, ``attrgetter``, ``from x import attr``, a
        dotted string). True when a rule on the reference itself fired (a chain's inner attributes are then
        not looked at again)."""
        referenced = not self._in_kernel and self._check_reference(full or "", attr, node)
        if attr in KERNEL_PRINTS:
            self.flag("kernel-print", f".{attr} prints a kernel's values: what a kernel prints reaches host "
                      "code, which could read it back and compute the answer; kernels may not print", node)
        if self._in_kernel and (attr.startswith("_") or attr in VALUE_INTERNALS):
            self.flag("kernel-body", f".{attr} reads Triton's own representation of a value (the "
                      "interpreter's NumPy handle, a private field), which the compiled kernel does not "
                      "have; a @triton.jit body may use only Triton's language", node)
        if attr in ("interpreter", "InterpretedFunction", "interpreter_builder"):
            self.flag("interpreter-detection", f".{attr} asks whether Triton's interpreter runs the "
                      "kernel; a candidate must compute the same way everywhere", node)
        if self._in_kernel:
            return referenced
        if attr in INTROSPECTION:
            self.flag("introspection", f".{attr} reaches into the interpreter's internals (frames, "
                      "other modules' globals, every class); candidates may not introspect the harness", node)
        if attr in BUILTIN_REACH:
            self.flag("introspection", f".{attr} leads to the builtins module (eval, exec, __import__); "
                      "candidates may not reach it or introspect the harness", node)
        head, _, rest = (full or "").partition(".")
        if attr == "__dict__" and head in self._import_roots():
            self.flag("introspection", f"{full} reads an imported module's (or class's) namespace as a dict, "
                      "past the attribute rules; name the attribute directly", node)
        if attr == "sys" or head == "sys" and (rest.split(".")[0] in SYS_REACH or rest.startswith("_")):
            self._flag_harness_reach(full or f".{attr}", node)
        if attr in RNG_ATTRIBUTES or full in RNG_SEEDS or head == "torch" and attr == "seed":
            self.flag("rng-seeded", f"{full or '.' + attr} seeds or sets a random generator: the harness "
                      "seeds every run, and a candidate that reseeds could rebuild the reference's "
                      "parameters (drawn from a known seed) and compute on them unwatched", node)
        return referenced

    def _check_reference(self, full: str, attr: str, node: ast.AST) -> bool:
        """Flag a reference to the harness or to torch's internals; True when flagged."""
        if full.startswith("warpgym.") and not full.startswith("warpgym.loader") or \
                full.startswith("warpgym.loader.") and attr.startswith("_"):
            self.flag("forbidden-import", f"{full} reaches into the harness; a candidate may use only "
                      "warpgym.loader's functions", node)
            return True
        if attr in HOST_VIEWS:
            self.flag("host-compute", f".{attr} hands tensor memory to host Python; the arithmetic must "
                      "run in a kernel", node)
            return True
        if attr in MODULE_DUNDERS:
            self.flag("introspection", f".{attr} looks up where a module's files are; candidates may "
                      "not read the harness's files", node)
            return True
        if attr in DISPATCH_SWITCHES or attr == "torch":
            self.flag("torch-internals", f".{attr} reaches PyTorch's internals (the dispatcher, its "
                      "modes, or torch through another module's attribute); host code may allocate, take "
                      "views and launch kernels, naming torch directly", node)
            return True
        private = full.startswith("torch.") and any(
            part.startswith("_") and not part.endswith("__") for part in full.split(".")[1:])
        if full.startswith(TORCH_INTERNALS) or private:
            self.flag("torch-internals", f"{full} is not for a candidate (custom operators, the profiler, "
                      "zero-copy and serialisation routes, compilers); host code may allocate, take views "
                      "and launch kernels", node)
            return True
        return False

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name):
            self._attribute_bases.add(id(node.value))
        if self._judge_attribute(self._resolve(node), node.attr, node):
            return
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        """``@`` in host code; and a string spelled in pieces (``"TRITON_" + "INTERPRET"``), read as the whole
        it makes."""
        if isinstance(node.op, ast.MatMult) and not self._in_kernel:
            self.flag("torch-compute", "the @ operator in host code runs a PyTorch matmul; use a kernel",
                      node)
        joined = literal_string(node)
        if joined is None:
            self.generic_visit(node)
        else:
            self._check_string(joined, node)


_PARSING = threading.Lock()


def parse(source: str) -> ast.Module:
    """``ast.parse``, one thread at a time: CPython 3.11's parser keeps its recursion depth in shared state,
    so two evaluations parsing at once in one judge can fail with "AST constructor recursion depth
    mismatch"."""
    with _PARSING:
        return ast.parse(source)


def names_load_inline(source: str) -> bool:
    """Whether the module's code (not a string or comment) names ``load_inline``. A mention in a comment or
    a string builds nothing, so it may neither excuse a module from holding a kernel nor make a worker's
    "needs a GPU" record, which is in the candidate's reach, count as a skip."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any((isinstance(node, ast.Attribute) and node.attr == "load_inline")
               or (isinstance(node, ast.Name) and node.id == "load_inline")
               or (isinstance(node, ast.alias) and node.name.rsplit(".", 1)[-1] == "load_inline")
               for node in ast.walk(tree))


def check_source(source: str, entrypoint: str, params: list[str], language: str = "triton") -> StaticReport:
    """Parse, find the entrypoint with the task's parameters, and scan host code."""
    if "\x00" in source:  # the parser's own message for this names no line ("line None")
        line = source.count("\n", 0, source.index("\x00")) + 1
        return StaticReport(False, [Violation("syntax", f"the source contains a NUL byte (first on line "
                                              f"{line}); a module is text: remove it", line)])
    try:
        with warnings.catch_warnings():  # a candidate's invalid escape ("\\d") warns nobody in the judge
            warnings.simplefilter("ignore", SyntaxWarning)  # Python 3.12 on
            warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.11
            tree = parse(source)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        text = (exc.text or "").rstrip()
        return StaticReport(False, [Violation("syntax", f"syntax error at {where}: {exc.msg}"
                                              + (f"\n    {text}" if text else ""), exc.lineno)])
    except ValueError as exc:  # null bytes and the like
        return StaticReport(False, [Violation("syntax", f"the source cannot be parsed: {exc}")])
    except (RecursionError, MemoryError):
        return StaticReport(False, [Violation("syntax", "the source is nested too deeply to parse")])
    scanner = _Scanner(language)
    try:
        for node in tree.body:  # imports first, so decorators resolve; then which functions are kernels
            if isinstance(node, ast.Import | ast.ImportFrom):
                scanner.aliases.update(_import_aliases(node))
        scanner.docstrings = {
            id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)
            and isinstance(n.body[0].value.value, str)
        }
        functions = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        scanner.plain_functions = {n.name for n in functions if not _is_triton_kernel(n, scanner.aliases)}
        scanner.visit(tree)
    except RecursionError:
        return StaticReport(False, [Violation("syntax", "the source is nested too deeply to check")])
    violations = list(scanner.violations)
    entry = next((n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                  and n.name == entrypoint), None)
    assigned = any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == entrypoint
                                                     for t in n.targets) for n in tree.body)
    if entry is None and not assigned:
        violations.append(Violation("missing-entrypoint", f"the module defines no top-level function "
                                    f"{entrypoint!r}; define def {entrypoint}({', '.join(params)})"))
    elif entry is not None:
        got = [a.arg for a in entry.args.posonlyargs + entry.args.args]
        if got[: len(params)] != params:
            violations.append(Violation("signature", f"{entrypoint}({', '.join(got)}) does not match the "
                                        f"task's parameters ({', '.join(params)})", entry.lineno))
    if language == "triton" and not scanner.kernels:
        violations.append(Violation("no-kernel", "no @triton.jit kernel is defined; a Triton task's "
                                    "arithmetic must run in Triton kernels"))
    return StaticReport(not violations, violations, scanner.kernels, tree)
