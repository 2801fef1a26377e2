"""``torch.utils.cpp_extension.load_inline`` for candidates: KernelBench's CUDA format, built in the worker.

A candidate's own call to the compiler would be a process its code starts (refused by the audit layer);
this function is the harness's, so the build runs here, inside the worker's sandbox (no network, writes
only in its private directory, the task folders hidden from the compiler as from the candidate). The
build is PyTorch's own (nvcc, the C++ compiler, ninja) with the evaluation's target as the only
architecture; flags are limited to those that change code generation. Before the object is loaded its
imports and host code are screened (env/toolchain/extension_screen.py), and its kernels are recorded with
their SASS and PTX like a loader module's, so the judge counts instructions and names them as the
candidate's own in the device trace. Without a GPU nothing is built: the verdict says it was not checked.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Sequence
from typing import Any

from warpgym.env.toolchain.errors import LoaderError
from warpgym.env.toolchain.registry import REGISTRY, KernelInfo, ModuleRecord

NEEDS_GPU = "a CUDA extension (load_inline) is built and run on a GPU only"
"""The error the worker turns into a 'not checked here' reply."""

ARCH_LISTS = {"sm_90a": "9.0a+PTX", "sm_100a": "10.0a+PTX"}
_OPT = r"-O[0-3s]|-Ofast"
_DEFINE = r"-D[A-Za-z_]\w*(=[\w.+-]*)?"
_STD = r"-std=c\+\+(14|17|20)"
CFLAGS = re.compile(rf"^({_OPT}|{_DEFINE}|{_STD}|-w|-W[\w-]*|-ffast-math|-funroll-loops|-fno-math-errno)$")
CUDA_CFLAGS = re.compile(
    rf"^({_OPT}|{_DEFINE}|{_STD}|-w|--?use_fast_math|-lineinfo|--expt-relaxed-constexpr|"
    r"--expt-extended-lambda|--extended-lambda|-res-usage|--resource-usage|--?maxrregcount=\d+|"
    r"-Xptxas=-v|-Xptxas=-O[0-3]|--ptxas-options=-v|--ptxas-options=-O[0-3]|-Xptxas=--verbose|"
    r"-U__CUDA_NO_HALF_OPERATORS__|-U__CUDA_NO_HALF_CONVERSIONS__|-U__CUDA_NO_HALF2_OPERATORS__|"
    r"-U__CUDA_NO_BFLOAT16_CONVERSIONS__|-U__CUDA_NO_BFLOAT16_OPERATORS__|--ftz=(true|false)|"
    r"--prec-div=(true|false)|--prec-sqrt=(true|false)|--fmad=(true|false))$")
LDFLAGS = frozenset({"-lcuda", "-lcudart", "-lcublas", "-lcublasLt"})
MAX_BUILDS = 4
"""Extensions one candidate may build (each costs the compiler a minute)."""

_built: list[str] = []
_refused_for_gpu: list[str] = []
"""The builds refused for want of a GPU, by name: set here, so that a candidate raising an error with the same
words is not taken for one that needs a GPU (which is a skip, not a failure)."""


def reset() -> None:
    """A new candidate: forget the last one's builds."""
    _built.clear()
    _refused_for_gpu.clear()


def built() -> list[str]:
    return list(_built)


def needed_gpu() -> bool:
    """Whether this candidate called ``load_inline`` where no GPU is."""
    return bool(_refused_for_gpu)


class ExtensionError(LoaderError):
    """A ``load_inline`` call the harness will not build, or whose object it will not load."""


def _flags(kind: str, flags: Sequence[str] | None, allowed: Any) -> list[str]:
    flags = list(flags or [])
    # "-Xptxas -v" as two items is one flag for nvcc: judge it as one.
    joined: list[str] = []
    for flag in flags:
        if joined and joined[-1] in ("-Xptxas", "--ptxas-options"):
            joined[-1] = f"{joined[-1]}={flag}"
        else:
            joined.append(flag)
    bad = [f for f in joined if not isinstance(f, str) or not (
        allowed.match(f) if hasattr(allowed, "match") else f in allowed)]
    if bad:
        raise ExtensionError(
            f"{kind} {bad[0]!r} is not allowed: the evaluation sets the architecture ({_target_name()}), the "
            "include paths and the libraries; optimisation levels, -D defines, -std, fast-math, "
            "maxrregcount and the ptxas -v/-O options are accepted")
    return [part for f in joined for part in (f.split("=", 1) if f.startswith("-Xptxas=") else [f])]


def _target_name() -> str:
    """The evaluation's target, as the loader holds it (the worker sets it for each candidate)."""
    from warpgym.env.toolchain.loader import default_target

    return default_target()


def _sources(value: str | Sequence[str] | None, what: str) -> list[str]:
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(s, str) for s in items):
        raise ExtensionError(f"{what} must be a string or a list of strings")
    return items


def load_inline(
    name: str,
    cpp_sources: str | Sequence[str],
    cuda_sources: str | Sequence[str] | None = None,
    functions: str | Sequence[str] | dict[str, str] | None = None,
    extra_cflags: Sequence[str] | None = None,
    extra_cuda_cflags: Sequence[str] | None = None,
    extra_ldflags: Sequence[str] | None = None,
    extra_include_paths: Sequence[str] | None = None,
    build_directory: str | None = None,
    verbose: bool = False,
    with_cuda: bool | None = None,
    is_python_module: bool = True,
    with_pytorch_error_handling: bool = True,
    keep_intermediates: bool = True,
    use_pch: bool = False,
    **unsupported: Any,
) -> Any:
    """Build and load the extension as PyTorch's ``load_inline`` does, within the evaluation's rules."""
    import torch
    from torch.utils import cpp_extension

    if unsupported:
        raise ExtensionError(f"load_inline: {', '.join(sorted(unsupported))} not supported here")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w{0,63}", name):
        raise ExtensionError("load_inline: name must be a Python identifier (at most 64 characters)")
    cpp, cuda = _sources(cpp_sources, "cpp_sources"), _sources(cuda_sources, "cuda_sources")
    if not cuda or with_cuda is False:
        raise ExtensionError("load_inline without cuda_sources builds host code only: C++ on the host is not "
                             "a GPU kernel (write the kernel in cuda_sources)")
    if extra_include_paths:
        raise ExtensionError("load_inline: extra_include_paths are not allowed (PyTorch's and CUDA's headers "
                             "are on the path already)")
    if not is_python_module:
        raise ExtensionError("load_inline: is_python_module=False is not supported (use functions=[...])")
    cflags = _flags("extra_cflags", extra_cflags, CFLAGS)
    cuda_flags = _flags("extra_cuda_cflags", extra_cuda_cflags, CUDA_CFLAGS)
    ldflags = _flags("extra_ldflags", extra_ldflags, LDFLAGS)
    if not torch.cuda.is_available():
        _refused_for_gpu.append(name)
        raise ExtensionError(NEEDS_GPU)
    if len(_built) >= MAX_BUILDS:
        raise ExtensionError(f"load_inline: at most {MAX_BUILDS} extensions per candidate")
    target = _target_name()
    digest = hashlib.sha256(repr((name, cpp, cuda, functions, cflags, cuda_flags, ldflags,
                                  target)).encode()).hexdigest()[:12]
    unique = f"{name}_{digest}"
    directory = os.path.join(os.getcwd(), "extensions", unique)
    os.makedirs(directory, exist_ok=True)
    started = time.perf_counter()
    previous = os.environ.get("TORCH_CUDA_ARCH_LIST")
    os.environ["TORCH_CUDA_ARCH_LIST"] = ARCH_LISTS.get(target, ARCH_LISTS["sm_90a"])
    os.environ.setdefault("MAX_JOBS", str(min(8, os.cpu_count() or 1)))
    try:
        # Built but not imported: the object is screened first.
        _build_only(cpp_extension, unique, cpp, cuda, functions, cflags, cuda_flags, ldflags, directory)
    except ExtensionError:
        raise
    except Exception as exc:  # noqa: BLE001 - the compiler's message is the candidate's feedback
        raise ExtensionError(f"building the extension failed:\n{_compiler_log(exc)}") from None
    finally:
        if previous is None:
            os.environ.pop("TORCH_CUDA_ARCH_LIST", None)
        else:
            os.environ["TORCH_CUDA_ARCH_LIST"] = previous
    library = os.path.join(directory, f"{unique}.so")
    if not os.path.isfile(library):
        raise ExtensionError(f"building the extension left no {unique}.so")
    from warpgym.env.toolchain.extension_screen import screen

    try:
        problems = screen(library)
    except RuntimeError as exc:
        raise ExtensionError(f"the extension could not be screened: {exc}") from None
    if problems:
        more = f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        raise ExtensionError("the extension's host code imports what a kernel wrapper may not use: "
                             + "; ".join(problems[:5]) + more)
    record = _record(unique, library, target, cuda_flags)
    record.seconds = time.perf_counter() - started
    REGISTRY.add(record)
    _built.append(unique)
    return cpp_extension._import_module_from_library(unique, directory, True)


def _build_only(cpp_extension: Any, name: str, cpp: list[str], cuda: list[str], functions: Any,
                cflags: list[str], cuda_flags: list[str], ldflags: list[str], directory: str) -> None:
    """PyTorch's own build of ``load_inline``'s sources into ``directory``, without importing the object."""
    import inspect

    cpp = ["#include <torch/extension.h>", *cpp]
    if functions is not None:
        if isinstance(functions, str):
            functions = [functions]
        if isinstance(functions, list):
            functions = {f: f"{f}" for f in functions}
        if not isinstance(functions, dict):
            raise ExtensionError("load_inline: functions must be a name, a list of names or a dict")
        binds = [f'm.def("{f}", torch::wrap_pybind_function({f}), "{doc}");' for f, doc in functions.items()
                 if re.fullmatch(r"[A-Za-z_]\w*", f) and '"' not in str(doc) and "\\" not in str(doc)]
        if len(binds) != len(functions):
            raise ExtensionError("load_inline: each function must be a C++ identifier, its doc plain text")
        cpp.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n" + "\n".join(binds) + "\n}")
    cuda = ["#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>", *cuda]
    sources = []
    for file, parts in ((f"{name}_main.cpp", cpp), (f"{name}_cuda.cu", cuda)):
        path = os.path.join(directory, file)
        with open(path, "w") as f:
            f.write("\n".join(parts))
        sources.append(path)
    if getattr(cpp_extension, "CUDA_HOME", None) is None:
        home = _cuda_home()
        if home is None:
            raise ExtensionError("no CUDA toolkit (nvcc) on this machine: the extension cannot be built")
        cpp_extension.CUDA_HOME = home
    build = cpp_extension._write_ninja_file_and_build_library
    params = inspect.signature(build).parameters
    kwargs: dict[str, Any] = {
        "name": name, "sources": sources, "extra_cflags": cflags, "extra_cuda_cflags": cuda_flags,
        "extra_sycl_cflags": [], "extra_ldflags": ldflags, "extra_include_paths": [],
        "build_directory": directory, "verbose": False, "with_cuda": True, "with_sycl": False,
        "is_standalone": False,
    }
    build(**{k: v for k, v in kwargs.items() if k in params})


def _cuda_home() -> str | None:
    """The toolkit whose ``bin/nvcc`` is a real compiler (a ``/usr/local/bin/nvcc`` wrapper script points
    elsewhere)."""
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.path.isfile(os.path.join(home, "bin", "nvcc")):
            return home
    return None


def _compiler_log(exc: BaseException) -> str:
    text = str(exc)
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-40:])[-6000:]


def _record(name: str, library: str, target: str, flags: list[str]) -> ModuleRecord:
    """The object's kernels with their SASS and PTX opcode counts, as a loader module's are."""
    import subprocess

    from warpgym.env.toolchain.disassemble import sass_opcodes
    from warpgym.env.toolchain.families import count_ptx, count_sass_opcodes
    from warpgym.env.toolchain.ptx import split_ptx_functions
    from warpgym.env.toolchain.tools import tool

    cuobjdump = tool("cuobjdump")
    record = ModuleRecord(name, "cuda-extension", target, "", None,
                          compiler="nvcc (torch.utils.cpp_extension)",
                          options=flags)
    if cuobjdump is None:
        record.analysis_error = "cuobjdump not found: the extension's kernels were not disassembled"
        return record
    sass = subprocess.run([cuobjdump, "-sass", library], capture_output=True, text=True, timeout=300)
    ptx = subprocess.run([cuobjdump, "-ptx", library], capture_output=True, text=True, timeout=300)
    if sass.returncode != 0:
        record.analysis_error = f"cuobjdump failed: {sass.stderr.strip()[:300]}"
        return record
    record.sass = sass.stdout
    record.ptx = ptx.stdout if ptx.returncode == 0 else ""
    for fn, ops in sass_opcodes(record.sass).items():
        if fn:
            record.kernels[fn] = KernelInfo(fn, sass_counts=count_sass_opcodes(ops))
    for fn, body in split_ptx_functions(record.ptx).items():
        if fn in record.kernels:
            record.kernels[fn].ptx_counts = count_ptx(body)
    return record


def install() -> None:
    """Candidates that call ``torch.utils.cpp_extension.load_inline`` get this one; ``load`` (sources
    from files) is refused with the reason."""
    from torch.utils import cpp_extension

    def load(*args: Any, **kwargs: Any) -> Any:
        raise ExtensionError("torch.utils.cpp_extension.load is not supported here: pass the sources "
                             "as strings to load_inline")

    cpp_extension.load_inline = load_inline
    cpp_extension.load = load
