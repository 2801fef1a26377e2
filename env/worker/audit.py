"""The worker's audit layer (PEP 578): what a candidate tries, turned into a clear verdict.

Sockets, processes, signals, ctypes, ``gc`` walks, frame introspection and writes outside the
private directory, when caused by the candidate's code, raise ``PermissionError`` and are recorded
as incidents the worker sends back with its reply, so a candidate that swallows the error is still
caught. The harness's own code (everything under ``env/``: Triton launches, the CUDA loader) acting
for the candidate is not refused. Threads the candidate starts are told apart from the pools torch
or Triton start.

The judge's side of the package (tasks and their solutions, the judge, agents, experiments) is not
importable: a finder first on ``sys.meta_path`` refuses it, for anyone (the worker's own code never
needs it), and records the refusal when the candidate asked; the folders themselves lie under an empty
tmpfs and are closed to reads, for a candidate that removes the finder.

``confine.py`` installs the hook before the package is imported, loading this file by path, so it
uses the standard library only. All the hook's state lives in closures, out of a candidate's reach
by attribute access.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

ENV_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # env: the harness's code
LAYER_FILES = ("/audit.py", "/confine.py")
"""The sandbox's own frames (the hook, the thread wrapper, the script below the worker) are neither the
candidate's nor the harness's: attribution looks past them."""
HANDLER_FILES = frozenset(p for f in ("worker/main.py", "worker/models.py")
                          for p in (os.path.join(ENV_DIR, f), os.path.realpath(os.path.join(ENV_DIR, f))))
"""The worker's request handlers and the model wrapper they call, as imported and as resolved: code that
calls the candidate's and computes nothing of its own, so what is reached with one of their frames nearest
(a finalizer's callback, PyTorch's own layers as a model's ``forward``) is the candidate's doing."""
CANDIDATE_STEM = "candidate_"
"""The worker writes each candidate module as ``candidate_N.py`` in its own directory, its cwd."""


def candidate_prefix(workdir: str | None = None) -> str:
    """The path every candidate module's file name starts with: attribution reads a frame as the candidate's
    by it. Without ``workdir``, the worker's directory as it was at the first call (the worker's start)."""
    if workdir is None:
        return _worker_candidate_prefix()
    return os.path.join(os.path.realpath(workdir), CANDIDATE_STEM)


@functools.cache
def _worker_candidate_prefix() -> str:
    return candidate_prefix(os.getcwd())


TOOLCHAIN_DIRS = tuple(dict.fromkeys(os.path.join(d, "toolchain") + os.sep
                                     for d in (ENV_DIR, os.path.realpath(ENV_DIR))))
"""The loader the candidate calls, walked through like any library: where it calls back into an object of
the candidate's (a box entry's ``__int__``), what runs is on the candidate's account."""


def runs_its_own_file(frame: Any) -> bool:
    """Whether ``frame`` runs in the globals of the module loaded from the file its code names. A code
    object's file name is whatever its builder chose (``CodeType.replace``, ``compile``), so a name alone
    does not make a frame the harness's, PyTorch's or Triton's; the module's own globals, which a function
    keeps for life, do."""
    globals_ = frame.f_globals
    name = dict.get(globals_, "__name__")
    module = sys.modules.get(name) if type(name) is str else None
    if module is None or getattr(module, "__dict__", None) is not globals_:
        return False
    file, claimed = getattr(module, "__file__", None), frame.f_code.co_filename
    return type(file) is str and (file == claimed or os.path.realpath(file) == os.path.realpath(claimed))


_STRICT = {
    # event -> (violation code, what it is, in words)
    "socket.__new__": ("sandbox-network", "network access (opening a socket)"),
    "socket.bind": ("sandbox-network", "network access (binding a socket)"),
    "socket.connect": ("sandbox-network", "network access (connecting a socket)"),
    "socket.getaddrinfo": ("sandbox-network", "network access (resolving a host name)"),
    "socket.gethostbyname": ("sandbox-network", "network access (resolving a host name)"),
    "socket.sendto": ("sandbox-network", "network access (sending on a socket)"),
    "subprocess.Popen": ("sandbox-process", "starting a process (subprocess)"),
    "os.system": ("sandbox-process", "running a shell command (os.system)"),
    "os.exec": ("sandbox-process", "replacing the process (os.exec*)"),
    "os.posix_spawn": ("sandbox-process", "starting a process (posix_spawn)"),
    "os.spawn": ("sandbox-process", "starting a process (os.spawn*)"),
    "os.fork": ("sandbox-process", "forking the process"),
    "os.forkpty": ("sandbox-process", "forking the process"),
    "os.chdir": ("sandbox-filesystem", "changing the working directory (the worker tells the candidate's "
                 "code from the harness's by the directory of its files)"),
    "os.kill": ("sandbox-signal", "sending a signal to a process"),
    "os.killpg": ("sandbox-signal", "sending a signal to a process group"),
    "signal.pthread_kill": ("sandbox-signal", "sending a signal to a thread"),
    "ctypes.dlopen": ("sandbox-native", "loading a native library with ctypes"),
    "ctypes.dlsym": ("sandbox-native", "looking up a native symbol with ctypes"),
    "ctypes.dlsym/handle": ("sandbox-native", "looking up a native symbol with ctypes"),
    "ctypes.call_function": ("sandbox-native", "calling a native function with ctypes"),
    "ctypes.string_at": ("sandbox-native", "reading raw memory with ctypes"),
    "ctypes.wstring_at": ("sandbox-native", "reading raw memory with ctypes"),
    "ctypes.cdata": ("sandbox-native", "reading raw memory with ctypes"),
    "ctypes.cdata/buffer": ("sandbox-native", "reading raw memory with ctypes"),
    "ctypes.addressof": ("sandbox-native", "taking raw addresses with ctypes"),
    "mmap.__new__": ("sandbox-native", "mapping memory (mmap)"),
    "gc.get_objects": ("introspection", "walking every object of the process (gc.get_objects)"),
    "gc.get_referrers": ("introspection", "walking the object graph (gc.get_referrers)"),
    "gc.get_referents": ("introspection", "walking the object graph (gc.get_referents)"),
    "sys._current_frames": ("introspection", "reading other threads' frames"),
    "sys.setprofile": ("introspection", "installing a profiler hook"),
    "sys.settrace": ("introspection", "installing a trace hook"),
    "sys.addaudithook": ("introspection", "installing an audit hook"),
}
_PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                             "os.fork", "os.forkpty"})
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "csh", "tcsh", "fish", "busybox", "env", "python",
                    "python3", "perl", "ruby", "node"})
"""Programs that run whatever command they are given: the harness's code never starts them."""
"""The programs the harness's own code runs while it acts for the candidate (the CUDA toolchain, Triton's
search for libcuda and its launcher build). Any other process, and any shell, is refused whoever's frame
is nearest: code that runs inside a launch (a grid value's ``__index__``) has no frame of its own."""
_IMMEDIATE = {
    # denied only when the candidate's own line makes the call (the standard library uses these freely)
    "sys._getframe": ("introspection", "reading the call stack (sys._getframe)"),
    "object.__getattr__": ("introspection", "reading interpreter internals"),
    "exec": ("dynamic-code", "running code built at run time (exec/eval)"),
    "compile": ("dynamic-code", "compiling code at run time"),
    "code.__new__": ("dynamic-code", "building a code object"),
    "function.__new__": ("dynamic-code", "building a function from a code object"),
}
CODE_EVENTS = frozenset({"code.__new__", "function.__new__", "marshal.loads", "marshal.load"})
"""Ways to build code under any file's name; refused on the candidate's behalf for a name not its own,
whichever helper is nearest (``code_object_problem``)."""
TRITON_INTERPRETER = "/triton/runtime/interpreter.py"
CODEGEN_MODULES = ("/dataclasses.py", "/collections/__init__.py")
"""Standard-library modules that build code from strings of their own making (a dataclass's ``__init__``,
a named tuple's ``__new__``); with Triton's and PyTorch's own code generation, the only ones that may run
code built from a string on the candidate's behalf."""
CODEGEN_PACKAGES = ("/triton/", "/torch/")
_PATH_EVENTS = {
    "open",
    "os.remove",
    "os.rename",
    "os.rmdir",
    "os.symlink",
    "os.link",
    "os.truncate",
    "os.chmod",
    "os.chown",
    "os.mkdir",
    "shutil.rmtree",
    "os.listdir",
    "os.scandir",
    "os.utime",
}
CLOSED_PACKAGES = ("warpgym.tasks", "warpgym.env.judge", "warpgym.agents", "warpgym.experiments",
                   "warpgym.prompts")
"""What the worker never imports: tasks (references, cases, held-out shapes), reference solutions, the
judge, and the packages above it."""
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_DEVICE_WRITES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/nvidia", "/dev/dri/", "/dev/tty", "/dev/pts/")

_drain: Any = None
_report: Any = None


def snapshot(spaces: dict[str, Any]) -> Any:
    """Remember every function, class, descriptor and module in these namespaces (a namespace given as
    ``(namespace, names)``: only those names); the returned function
    names those replaced or removed since. Its state lives in the closure, out of a candidate's reach
    by attribute access."""
    import types

    def code_like(value: Any) -> bool:
        return callable(value) or hasattr(value, "__get__") or isinstance(value, types.ModuleType)

    saved = []
    for label, space in spaces.items():
        space, names = space if isinstance(space, tuple) else (space, None)
        mapping = space if isinstance(space, dict) else vars(space)
        saved.append(
            (
                label,
                mapping,
                {k: v for k, v in list(mapping.items()) if code_like(v) and (names is None or k in names)},
                isinstance(space, type) and names is None,
            )
        )
    missing = object()

    def changed() -> list[str]:
        replaced = [
            f"{label}.{key}"
            for label, mapping, entries, _ in saved
            for key, value in entries.items()
            if mapping.get(key, missing) is not value
        ]
        # On a class, a method added later shadows one its base class defines (``torch.Tensor.to`` over the
        # C type's): every instance then runs it.
        added = [
            f"{label}.{key} (added)"
            for label, mapping, entries, whole_class in saved if whole_class
            for key, value in list(mapping.items())
            if key not in entries and code_like(value)
        ]
        return replaced + added

    return changed


def drain() -> list[list[str]]:
    """Incidents since the last call: [code, message] pairs (empty when no audit layer runs here)."""
    return _drain() if _drain is not None else []


def report(code: str, what: str) -> None:
    """Record an attempt the worker's own guards refused (``dispatch_guard``) as an incident, like the
    hook's own: the verdict shows it even if the candidate caught the error."""
    if _report is not None:
        _report(code, what)


def _package_homes(names: tuple[str, ...]) -> list[str]:
    """The folders the installed packages ``names`` were found in (their site-packages), without importing
    them."""
    import importlib.util

    homes = []
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            homes.append(os.path.dirname(os.path.dirname(os.path.realpath(spec.origin))) + "/")
    return homes


def site_dirs() -> tuple[str, ...]:
    """Where packages live, each ending in "/": sysconfig's site-packages, and where Triton and PyTorch are
    installed, too: a virtual environment may take them from the system's site-packages, which sysconfig
    does not name (and which lies beneath the standard library's folder)."""
    import sysconfig

    return tuple({os.path.realpath(sysconfig.get_paths()[k]) + "/" for k in ("purelib", "platlib")}
                 | set(_package_homes(("triton", "torch"))))


def install_audit(workdir: str, protected: list[str], includes: list[str]) -> None:
    """Install the audit hook (it cannot be removed). All its state lives in this closure."""
    global _drain, _report
    import _thread
    import sysconfig

    candidate_files = candidate_prefix(workdir)
    workdir_prefix = os.path.realpath(workdir) + "/"
    harness_prefix = ENV_DIR + "/"
    stdlib = tuple({os.path.realpath(sysconfig.get_paths()[k]) + "/" for k in ("stdlib", "platstdlib")})
    site = site_dirs()
    closed = tuple(p.rstrip("/") + "/" for p in protected)
    reopened = tuple(p.rstrip("/") + "/" for p in includes)
    me = str(os.getpid())
    strict, immediate, path_events = dict(_STRICT), dict(_IMMEDIATE), frozenset(_PATH_EVENTS)
    watched = frozenset(strict) | frozenset(immediate) | path_events | CODE_EVENTS
    incidents: list[list[str]] = []
    busy: set[int] = set()
    getframe, get_ident, realpath, fsdecode = sys._getframe, _thread.get_ident, os.path.realpath, os.fsdecode
    process_events, shells = _PROCESS_EVENTS, SHELLS
    own_task = os.path.exists

    def is_stdlib(filename: str) -> bool:
        return filename.startswith("<frozen") or (
            filename.startswith(stdlib) and not filename.startswith(site)
        )

    def program_of(event: str, args: tuple[Any, ...]) -> str:
        if event in ("os.system", "os.fork", "os.forkpty") or not args:
            return "sh" if event == "os.system" else ""
        program = args[0]
        if event == "subprocess.Popen" and program is None and len(args) > 1:  # (executable, args, ...)
            argv = args[1]
            program = argv[0] if isinstance(argv, list | tuple) and argv else argv
        if isinstance(program, bytes):
            program = fsdecode(program)
        return os.path.basename(program) if isinstance(program, str) else ""

    def harness_tool(event: str, args: tuple[Any, ...]) -> bool:
        """A process the harness's own code may start: any program but a shell, never a fork; a shell, a
        fork or ``os.system`` reached without a candidate frame is a launch running candidate code (a
        grid value's ``__index__``)."""
        name = program_of(event, args)
        return bool(name) and name.split(" ")[0] not in shells

    def origin(frame: Any, direct: bool) -> bool:
        """True when the candidate's code caused the event: candidate frames reached before any harness
        frame (and, for ``direct``, with nothing but the standard library in between)."""
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith(candidate_files):
                return True
            if name.startswith(harness_prefix) and not name.endswith(LAYER_FILES):
                return not runs_its_own_file(frame)  # a code object of the candidate's under our name
            if direct and not is_stdlib(name):
                return False
            frame = frame.f_back
        return False

    def path_problem(event: str, args: tuple[Any, ...]) -> str | None:
        if event in ("os.rename", "os.link", "os.symlink") and len(args) > 1:  # (source, destination, ...)
            destination = path_problem("os.mkdir", args[1:2])
            if destination or event == "os.symlink":
                return destination
        target = args[0] if args else None
        if isinstance(target, int):
            return f"opening file descriptor {target} directly (the worker's channels are not for candidates)"
        try:
            path = realpath(fsdecode(target))
        except (TypeError, ValueError):
            return None
        writing = (
            event != "open"
            or (isinstance(args[1], str) and any(c in args[1] for c in "wax+"))
            or (isinstance(args[2], int) and args[2] & _WRITE_FLAGS)
        )
        if event in ("os.listdir", "os.scandir"):
            writing = False
        if path.startswith("/proc/"):
            pid = path.split("/")[2]
            if pid.isdigit() and pid != me and not own_task(f"/proc/{me}/task/{pid}"):
                return f"reading {path}, another process's entry"
            if path.endswith("/mem"):
                return f"reading the worker's memory through {path}"
        if writing:
            if (
                path.startswith(workdir_prefix)
                or path == workdir_prefix[:-1]
                or path.startswith(_DEVICE_WRITES)
            ):
                return None
            return f"writing {path}, outside the worker's private directory"
        inside = path + "/"
        if inside.startswith(closed) and not inside.startswith(reopened):
            return (f"reading {path} (home directories, secrets, the judge's code and the reference "
                    "solutions are closed to candidates)")
        return None

    def built_code_problem(event: str, args: tuple[Any, ...], caller: Any) -> str | None:
        """Code run from a file the candidate wrote (a helper module, a zip) or, on the candidate's behalf,
        from a string by anything but a known code generator (``typing``'s annotations, ``timeit``,
        ``zipimport``): code the static scan never read."""
        if event == "exec":
            filename = getattr(args[0], "co_filename", "") if args else ""
        else:
            filename = args[1] if len(args) > 1 and isinstance(args[1], str) else ""
        if filename.startswith(workdir_prefix) and not filename.startswith(candidate_files):
            return f"running {os.path.basename(filename)}, code it wrote at run time"
        if not filename.startswith("<"):
            return foreign_name_problem(filename, caller)
        if filename.startswith("<frozen"):
            return None
        frame, via = caller, ""
        while frame is not None:  # the nearest code that asked for it: a code generator, or the candidate
            name = frame.f_code.co_filename
            if name.startswith(candidate_files):
                return f"running code built from a string at run time (through {via or 'exec'})"
            if name.endswith(CODEGEN_MODULES) and is_stdlib(name) or name.startswith(harness_prefix) or (
                    name.startswith(site) and any(p in name for p in CODEGEN_PACKAGES)):
                return None
            via = via or os.path.basename(name)
            frame = frame.f_back
        return None

    def importing(caller: Any) -> bool:
        """The import system is the nearest frame: it compiles and unmarshals modules' own files."""
        return caller is not None and caller.f_code.co_filename.startswith("<frozen importlib")

    def foreign_name_problem(filename: Any, caller: Any) -> str | None:
        """Code built under the name of a file that is not the candidate's, on the candidate's behalf: a
        frame of it would pass for the harness's, PyTorch's or Triton's wherever a frame's file decides. An
        import (the import system compiling or unmarshalling a module's own file) and Triton's interpreter
        rebuilding one of Triton's kernels under its file are what legitimately do it."""
        if type(filename) is str and (filename.startswith(candidate_files) or filename.startswith("<")):
            return None
        if importing(caller):
            return None
        nearest = caller.f_code.co_filename if caller is not None else ""
        if nearest.endswith(TRITON_INTERPRETER) and type(filename) is str and runs_its_own_file(caller) \
                and (filename == "" or filename.startswith(site) and "/triton/" in filename):
            return None  # Triton's own helpers (tl.zeros, tl.sum's combine) rebuilt for interpretation
        if not origin(caller, direct=False):
            return None
        return f"building code under another file's name ({os.path.basename(str(filename))})"

    def code_object_problem(event: str, args: tuple[Any, ...], caller: Any) -> str | None:
        """A code object or function built under another file's name (``code.__new__`` and ``replace``,
        ``function.__new__``, ``marshal.loads``), through any helper: the standard library never needs to."""
        if event == "code.__new__":
            return foreign_name_problem(args[1] if len(args) > 1 else None, caller)
        if event == "function.__new__":
            return foreign_name_problem(getattr(args[0], "co_filename", None) if args else None, caller)
        if importing(caller) or not origin(caller, direct=False):
            return None
        return "building code objects from marshalled bytes"

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event not in watched:
            return
        ident = get_ident()
        if ident in busy:
            return
        busy.add(ident)
        try:
            caller = getframe(1)
            built = built_code_problem(event, args, caller) if event in ("exec", "compile") else (
                code_object_problem(event, args, caller) if event in CODE_EVENTS else None)
            if built is not None:
                code, what = "dynamic-code", built
            elif event in CODE_EVENTS and event not in immediate:
                return
            elif event in immediate:
                name = caller.f_code.co_filename if caller is not None else ""
                if not name.startswith(candidate_files):
                    return
                code, what = immediate[event]
                if event == "object.__getattr__" and len(args) > 1:
                    what = f"reading {args[1]} (interpreter internals)"
            elif event in strict:
                if not origin(caller, direct=False) and not (event in process_events
                                                              and not harness_tool(event, args)):
                    return
                code, what = strict[event]
                if event in process_events and program_of(event, args):
                    what = f"{what}: {program_of(event, args)}"
            else:
                problem = path_problem(event, args)
                if problem is None or not origin(caller, direct=False):
                    return
                code = "sandbox-filesystem"
                what = problem
            message = f"the candidate tried {what}; the sandbox refused it"
            if len(incidents) < 50 and [code, message] not in incidents:
                incidents.append([code, message])
        finally:
            busy.discard(ident)
        raise PermissionError(f"warpgym sandbox: {what} is not allowed in a candidate")

    def take() -> list[list[str]]:
        out = list(incidents)
        incidents.clear()
        return out

    def refuse_import(name: str) -> None:
        what = (f"importing {name} (tasks, their reference solutions and the judge are not importable in "
                "the worker)")
        if origin(getframe(1), direct=False):
            message = f"the candidate tried {what}; the sandbox refused it"
            if len(incidents) < 50 and ["forbidden-import", message] not in incidents:
                incidents.append(["forbidden-import", message])
        raise ImportError(f"warpgym sandbox: {what} is not allowed in a candidate", name=name)

    def record(code: str, what: str) -> None:
        message = f"the candidate tried {what}; the sandbox refused it"
        if len(incidents) < 50 and [code, message] not in incidents:
            incidents.append([code, message])

    sys.meta_path.insert(0, _ClosedPackages(CLOSED_PACKAGES, refuse_import))
    sys.addaudithook(hook)
    _drain, _report = take, record
    def thread_origin(frame: Any) -> bool:
        """As ``origin``, and also yes where a request handler's frame comes first (a finalizer's callback
        as the entrypoint's frame is torn down starts the thread) and through the loader's frames (a
        callback from the loader into an object of the candidate's), as the run-time policy counts ops."""
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith(candidate_files) or name in HANDLER_FILES:
                return True
            if name.startswith(harness_prefix) and not name.endswith(LAYER_FILES) \
                    and not name.startswith(TOOLCHAIN_DIRS):
                return not runs_its_own_file(frame)
            frame = frame.f_back
        return False

    _track_threads(lambda: thread_origin(getframe(2)))


class _ClosedPackages:
    """A meta path finder that refuses the closed packages and finds nothing else."""

    def __init__(self, closed: tuple[str, ...], refuse: Any) -> None:
        self._closed = closed
        self._inside = tuple(name + "." for name in closed)
        self._refuse = refuse

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name in self._closed or name.startswith(self._inside):
            self._refuse(name)
        return None


_threads: Any = None
_thread_watch: list[Any] = []


def watch_threads(wrap: Any) -> None:
    """Run every thread the candidate starts as ``wrap(body)``: the worker's run-time policy, which is per
    thread, then sees what the thread computes (``policy.thread_watch``)."""
    _thread_watch[:] = [wrap]


def candidate_threads() -> set[int] | None:
    """Idents of live threads that the candidate's code started; None where this is not tracked."""
    return _threads() if _threads is not None else None


def _track_threads(caused_by_candidate: Any) -> None:
    """Wrap the one primitive every Python thread starts through, so a thread the candidate started
    (however: threading, a Timer, _thread) is told apart from the pools torch or Triton start on the
    harness's behalf. Python 3.11 raises no audit event for threads."""
    global _threads
    import _thread
    import threading

    original = _thread.start_new_thread
    live: set[int] = set()
    get_ident = _thread.get_ident

    def start_new_thread(function: Any, args: Any, kwargs: Any = None) -> int:
        if not caused_by_candidate():
            return original(function, args, kwargs or {})
        body = _thread_watch[0](function) if _thread_watch else function

        def run(*a: Any, **k: Any) -> Any:
            live.add(get_ident())
            try:
                return body(*a, **k)
            finally:
                live.discard(get_ident())

        ident = original(run, args, kwargs or {})
        live.add(ident)  # counted from the start, not from when the new thread first runs
        return ident

    _thread.start_new_thread = start_new_thread  # type: ignore[assignment]
    _thread.start_new = start_new_thread  # type: ignore[attr-defined]
    threading._start_new_thread = start_new_thread  # type: ignore[attr-defined]
    _threads = lambda: set(live)  # noqa: E731
