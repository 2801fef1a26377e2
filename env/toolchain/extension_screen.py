"""What a built CUDA extension (``load_inline``) may reach from its host code, read off the shared object.

A candidate's Python runs under audit hooks and the run-time policy; its C++ host code does not, and runs
in the worker's process beside the harness's evidence (the device trace, the timing events). The object
is screened before it is loaded: every symbol it imports from elsewhere must come from a family a kernel
wrapper needs (the tensor API, pybind11, the C++ runtime, CUDA's launch and memory calls), and none may
reach what could forge evidence or leave the sandbox's rules behind: dynamic loading, processes, files,
threads, raw system calls, host-mapped or managed memory, CUDA events and graphs, profilers, or the
dispatcher's thread-local state (which is how the policy watches PyTorch calls). The screen is static and
has limits (docs/threat-model.md): it bounds what the code imports, not what pointer arithmetic reaches.
"""

from __future__ import annotations

import re
import shutil
import subprocess

DENIED_SYMBOLS = frozenset({
    "dlopen", "dlmopen", "dlsym", "dlvsym", "syscall", "mprotect", "pkey_mprotect", "mmap", "mmap64",
    "ptrace", "fork", "vfork", "clone", "clone3", "execve", "execv", "execvp", "execvpe", "execl", "execlp",
    "execle", "system", "popen", "posix_spawn", "posix_spawnp", "process_vm_readv", "process_vm_writev",
    "prctl", "pthread_create", "signal", "sigaction", "kill", "tgkill", "open", "open64", "openat",
    "openat64", "fopen", "fopen64", "freopen", "creat", "socket", "connect", "setenv", "putenv",
    "unsetenv", "cuGetProcAddress", "cuGetProcAddress_v2", "cudaGetDriverEntryPoint",
    "cudaGetDriverEntryPointByVersion", "PyEval_SetTrace", "PyEval_SetProfile", "PySys_AddAuditHook",
    "PyRun_SimpleString", "PyRun_String", "Py_CompileString", "PyEval_EvalCode", "PyImport_ImportModule",
    "PyImport_Import", "PyImport_ImportModuleLevel", "PyImport_ImportModuleLevelObject",
    "PyImport_AddModule", "PyImport_ExecCodeModule",
})
DENIED_PARTS = (
    "cupti", "kineto", "rofiler", "cudaHostAlloc", "cudaMallocHost", "cudaHostRegister", "cudaMallocManaged",
    "cuMemHostAlloc", "cuMemHostRegister", "cuMemAllocManaged", "cudaEvent", "cuEvent", "cudaGraph",
    "cuGraph", "BeginCapture", "tls_local", "tls_set", "_force_tls", "ThreadLocal", "PythonDispatcher",
    "TorchDispatchMode", "PythonTLS", "basic_ifstream", "basic_ofstream", "basic_fstream", "basic_filebuf",
    "_M_start_thread", "cudaSetDevice", "cudaDeviceReset", "cudaDeviceSetLimit", "cudaIpc", "cuIpc",
)
"""Anywhere in a (mangled) name: ``rofiler`` is Profiler and profiler alike."""

ALLOWED_PREFIXES = (
    "_ZN2at", "_ZNK2at", "_ZN3c10", "_ZNK3c10", "_ZN5torch", "_ZNK5torch", "_ZN8pybind11", "_ZNK8pybind11",
    "Py", "_Py", "_ZNSt", "_ZNKSt", "_ZSt", "_ZNSo", "_ZNSi", "_ZNKSo", "_ZNKRSt", "_ZNSa", "_ZNKSa", "_ZTT",
    "_ZN6caffe2", "_ZTV", "_ZTI", "_ZTS", "_Znw", "_Zna",
    "_Zdl", "_Zda", "__cxa_", "__gxx_", "_Unwind_", "__cuda", "cuda", "cu", "__nv", "_ITM_", "__gmon_start__",
    "__stack_chk_fail", "__assert_fail", "__errno_location", "__tls_get_addr", "__dso_handle",
)
ALLOWED_LIBC = frozenset({
    "memcpy", "memmove", "memset", "memcmp", "strlen", "strcmp", "strncmp", "strcpy", "strncpy", "strchr",
    "strstr", "strerror", "malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc", "abort",
    "printf", "fprintf", "sprintf", "snprintf", "vsnprintf", "vfprintf", "puts", "fputs", "fputc", "putchar",
    "fflush", "fwrite", "stdout", "stderr", "exit", "atexit", "__cxa_atexit", "sqrt", "sqrtf", "exp", "expf",
    "log", "logf", "pow", "powf", "ceil", "ceilf", "floor", "floorf", "fabs", "fabsf", "fmax", "fmaxf",
    "fmin", "fminf", "tanh", "tanhf", "erf", "erff", "sin", "cos", "sinf", "cosf", "round", "roundf",
    "log2", "log2f", "exp2", "exp2f", "fmod", "fmodf", "frexp", "ldexp", "lround", "llround",
    "__printf_chk", "__fprintf_chk", "__sprintf_chk", "__snprintf_chk", "__vsnprintf_chk", "__memcpy_chk",
    "__memset_chk", "__memmove_chk", "__strcpy_chk", "pthread_once", "pthread_mutex_lock",
    "pthread_mutex_unlock", "pthread_key_create", "pthread_getspecific", "pthread_setspecific",
    "__pthread_key_create", "__libc_single_threaded", "__dynamic_cast", "memchr", "strdup", "strrchr",
    "strtol", "strtoul", "strtod", "strtof", "atoi", "atof", "_GLOBAL_OFFSET_TABLE_", "__cxa_finalize",
})
_SYSCALL = re.compile(r"\t(syscall|sysenter|int\s+\$0x80|svc\s+#?0)\b")


def imported_symbols(path: str) -> list[str]:
    """The symbols the object needs from other objects (``nm -D --undefined-only``), versions stripped."""
    nm = shutil.which("nm")
    if nm is None:
        raise RuntimeError("nm (binutils) is not installed: the extension's imports cannot be read")
    proc = subprocess.run([nm, "-D", "--undefined-only", path], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"nm failed on the extension: {proc.stderr.strip()[:300]}")
    return sorted({line.split()[-1].split("@")[0] for line in proc.stdout.splitlines() if line.split()})


def refused_symbols(symbols: list[str]) -> list[str]:
    """The imports a kernel wrapper has no business with (each with why), in order."""
    refused = []
    for name in symbols:
        if name in DENIED_SYMBOLS or any(part in name for part in DENIED_PARTS):
            refused.append(f"{name} (reaches past the kernel: processes, files, dynamic loading, host-mapped "
                           "memory, events, graphs, profilers or the dispatcher's state)")
        elif not (name in ALLOWED_LIBC or name.startswith(ALLOWED_PREFIXES)):
            refused.append(f"{name} (not in the families a kernel wrapper needs)")
    return refused


def raw_system_calls(path: str) -> int:
    """System-call instructions in the object's host code (``objdump -d``): launching kernels needs none."""
    objdump = shutil.which("objdump")
    if objdump is None:
        raise RuntimeError("objdump (binutils) is not installed: the extension's host code cannot be read")
    proc = subprocess.run([objdump, "-d", "--no-show-raw-insn", path], capture_output=True, text=True,
                          timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"objdump failed on the extension: {proc.stderr.strip()[:300]}")
    return len(_SYSCALL.findall(proc.stdout))


def screen(path: str) -> list[str]:
    """Why the object may not be loaded (empty when it may)."""
    problems = refused_symbols(imported_symbols(path))
    calls = raw_system_calls(path)
    if calls:
        problems.append(f"{calls} raw system-call instruction(s) in the host code")
    return problems
