"""KernelBench's CUDA candidates (``load_inline``): what is checked without a GPU, and the screen every
built object passes before it is loaded. The build, the run and the device evidence are on the GPU
(tests/gpu/test_kernelbench_gpu.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from warpgym.env import EvalOptions, Evaluator
from warpgym.env.candidate import Candidate
from warpgym.env.toolchain.extension_screen import raw_system_calls, refused_symbols, screen
from warpgym.env.worker import extensions
from warpgym.tasks.importers import import_suite

FIXTURES = Path(__file__).parent / "fixtures" / "kernelbench"
HONEST_IMPORTS = [
    "_ZN2at4_ops10empty_like4callERKNS_6TensorE",
    "_ZN3c104impl23ExcludeDispatchKeyGuardC1ENS_14DispatchKeySetE",
    "_ZN8pybind116detail11get_internalsEv", "PyErr_SetString", "__cudaRegisterFatBinary",
    "__cudaLaunchKernel", "cudaLaunchKernel", "cudaGetLastError", "cudaFuncSetAttribute",
    "cuTensorMapEncodeTiled", "memcpy", "_Znwm", "_ZdlPvm", "__cxa_throw", "__tls_get_addr",
    "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE",
    "_ZN6caffe28TypeMeta26error_unsupported_typemetaES0_", "expf", "__stack_chk_fail",
]


@pytest.mark.parametrize("symbol", [
    "dlopen", "dlsym", "syscall", "mprotect", "fork", "execve", "system", "pthread_create", "fopen", "open64",
    "cudaHostAlloc", "cudaMallocHost", "cudaHostRegister", "cudaMallocManaged", "cuMemHostAlloc",
    "cudaEventElapsedTime", "cudaEventRecord", "cudaGraphLaunch", "cudaStreamBeginCapture",
    "cuGetProcAddress_v2",
    "cuptiActivityFlushAll", "_ZN8libkineto9api_shimEv", "_ZN5torch8autograd8profiler11RecordProfileC1Ev",
    "_ZN3c104impl25_force_tls_local_dispatch_key_setENS0_21PODLocalDispatchKeySetE",
    "_ZN3c104impl20tls_set_dispatch_key_excludedENS_11DispatchKeyEb",
    "_ZNSt14basic_ifstreamIcSt11char_traitsIcEEC1EPKcSt13_Ios_Openmode",
    "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE",
    "PyEval_SetTrace", "PyImport_ImportModule", "ptrace", "process_vm_writev", "getpid_unknown_helper",
])
def test_the_screen_refuses_what_reaches_past_a_kernel(symbol: str) -> None:
    assert len(refused_symbols([*HONEST_IMPORTS, symbol])) == 1


def test_the_screen_accepts_what_a_kernel_wrapper_imports() -> None:
    assert refused_symbols(HONEST_IMPORTS) == []


needs_cc = pytest.mark.skipif(
    not (shutil.which("cc") and shutil.which("nm") and shutil.which("objdump")),
    reason="needs a C compiler and binutils")


def _shared_object(tmp_path: Path, body: str) -> str:
    src, lib = tmp_path / "x.c", tmp_path / "x.so"
    src.write_text(body)
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True)
    return str(lib)


@needs_cc
def test_the_screen_reads_a_real_objects_imports_and_system_calls(tmp_path: Path) -> None:
    honest = _shared_object(tmp_path, "#include <string.h>\n"
                            "void f(char *d, const char *s, unsigned long n) { memcpy(d, s, n); }")
    assert screen(honest) == []
    loads = _shared_object(tmp_path, "#include <dlfcn.h>\nvoid *f(void) { return dlopen(\"libc.so.6\", 1); }")
    assert any(p.startswith("dlopen") for p in screen(loads))
    raw = _shared_object(tmp_path, 'long f(void) { long r; __asm__ volatile("syscall" : "=a"(r) : "a"(39)); '
                                   "return r; }")
    assert raw_system_calls(raw) == 1 and "system-call" in screen(raw)[-1]


@pytest.mark.parametrize(("kind", "flags", "ok"), [
    ("extra_cuda_cflags", ["-O3", "--use_fast_math", "-Xptxas", "-v", "--maxrregcount=64", "-DT=16"], True),
    ("extra_cuda_cflags", ["-gencode=arch=compute_80,code=sm_80"], False),
    ("extra_cuda_cflags", ["-ccbin=/tmp/evil"], False),
    ("extra_cuda_cflags", ["-Xcompiler", "-fplugin=/tmp/p.so"], False),
    ("extra_cflags", ["-O2", "-std=c++17", "-ffast-math"], True),
    ("extra_cflags", ["-I/etc"], False),
    ("extra_cflags", ["-include/work/tasks/solutions/x.py"], False),
    ("extra_ldflags", ["-lcublas"], True),
    ("extra_ldflags", ["-L/tmp", "-lfoo"], False),
    ("extra_ldflags", ["-Wl,-rpath,/tmp"], False),
])
def test_only_flags_that_change_code_generation_pass(kind: str, flags: list[str], ok: bool) -> None:
    allowed = {"extra_cflags": extensions.CFLAGS, "extra_cuda_cflags": extensions.CUDA_CFLAGS,
               "extra_ldflags": extensions.LDFLAGS}[kind]
    if ok:
        extensions._flags(kind, flags, allowed)
    else:
        with pytest.raises(extensions.ExtensionError, match="is not allowed"):
            extensions._flags(kind, flags, allowed)


@pytest.fixture(scope="module")
def scale_rows():  # noqa: ANN201
    tasks = {t.id: t for t in import_suite("kernelbench", FIXTURES).tasks}
    return tasks["kernelbench/level1/1_Scale_rows"]


@pytest.fixture(scope="module")
def evaluator():  # noqa: ANN201
    with Evaluator(device="cpu") as ev:
        yield ev


def _judge(evaluator: Evaluator, task, source: str):  # noqa: ANN001, ANN202
    return evaluator.evaluate(task, Candidate(source), EvalOptions(device="cpu", shape_sets=("dev",)))


def test_a_cuda_extension_is_not_checked_without_a_gpu(scale_rows, evaluator) -> None:  # noqa: ANN001
    result = _judge(evaluator, scale_rows, (FIXTURES / "candidates" / "scale_rows_cuda.py").read_text())
    assert result.correct is None and not result.violations, result.feedback
    assert any(extensions.NEEDS_GPU in s for s in result.skipped_checks), result.skipped_checks


def test_an_error_that_only_says_it_needs_a_gpu_is_a_failed_import(scale_rows, evaluator) -> None:  # noqa: ANN001
    """Only a ``load_inline`` call the harness refused for want of a GPU makes the verdict a skip: a candidate
    raising the same words itself would otherwise turn every failure it cannot fix into "not checked"."""
    honest = (FIXTURES / "candidates" / "scale_rows_ok.py").read_text()
    result = _judge(evaluator, scale_rows, honest + f"\nraise RuntimeError({extensions.NEEDS_GPU!r})\n")
    assert result.compiled is False and not any(extensions.NEEDS_GPU in s for s in result.skipped_checks)
    assert any(extensions.NEEDS_GPU in e for e in result.compile_errors), result.compile_errors


@pytest.mark.parametrize(("change", "says"), [
    (('extra_cuda_cflags=["-O3", "--use_fast_math"]', 'extra_cuda_cflags=["-Xcompiler=-fplugin=/x.so"]'),
     "is not allowed"),
    (("cuda_sources=CUDA,", "cuda_sources=None,"), "host code only"),
    (("extra_cuda_cflags=[", "extra_include_paths=[\"/etc\"], extra_cuda_cflags=["), "extra_include_paths"),
])
def test_a_refused_build_says_why_before_the_gpu_question(scale_rows, evaluator, change,  # noqa: ANN001
                                                          says: str) -> None:
    source = (FIXTURES / "candidates" / "scale_rows_cuda.py").read_text().replace(*change)
    result = _judge(evaluator, scale_rows, source)
    assert result.correct is not True and says in " ".join(result.compile_errors), result.feedback


def test_a_candidate_calling_the_compiler_itself_is_refused(scale_rows, evaluator) -> None:  # noqa: ANN001
    source = (FIXTURES / "candidates" / "scale_rows_ok.py").read_text().replace(
        "import torch\n", "import subprocess\nimport torch\nsubprocess.run(['nvcc', '--version'])\n", 1)
    result = _judge(evaluator, scale_rows, source)
    assert result.correct is not True
    codes = {v.code for v in result.violations}
    assert codes & {"sandbox-process", "forbidden-import", "process"}, result.feedback


def test_a_needs_gpu_reply_counts_only_for_a_module_whose_code_names_load_inline():
    """The worker's record of a refused build is in the candidate's reach; its source is not."""
    from warpgym.env.judge.static import names_load_inline as _names_load_inline

    assert _names_load_inline("from torch.utils.cpp_extension import load_inline\nmod = load_inline('m', '')")
    assert _names_load_inline("import torch.utils.cpp_extension as ext\next.load_inline('m', cpp_sources='')")
    assert not _names_load_inline('"""load_inline, mentioned"""\nraise RuntimeError("x")  # load_inline')
    assert not _names_load_inline("def broken(:")
