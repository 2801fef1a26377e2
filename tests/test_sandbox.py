"""The worker's sandbox (env/worker/confine.py, env/worker/audit.py, env/judge/sandbox.py): what it reports,
and that each protection it reports as applied really holds, with the audit layer off (the operating system
alone) and on (clear verdicts).

Code runs in the worker through the protocol's ``load`` op, past the static scan: these tests are
about what the process itself can do. A protection this machine cannot apply is skipped with the
report's reason, never silently passed.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from warpgym.env.judge import sandbox
from warpgym.env.judge.pool import Worker
from warpgym.env.worker import confine

NAMES = {
    "no-new-privileges",
    "network",
    "disk",
    "processes",
    "file-size",
    "cpu-time",
    "core-dumps",
    "open-files",
    "memory",
    "filesystem",
    "signals",
    "user",
    "environment",
    "audit",
}


def run_module(worker: Worker, source: str) -> dict[str, Any]:
    """Import ``source`` as a candidate module in the worker; the reply says how the import ended."""
    return worker.request(
        {"op": "load", "source": source + "\n\ndef f():\n    pass\n", "entrypoint": "f", "params": []},
        timeout=120,
    )


def require(worker: Worker, name: str) -> None:
    report = worker.sandbox_report or {}
    if name not in report.get("applied", {}):
        pytest.skip(f"{name} not applied on this machine: {report.get('not_applied', {}).get(name)}")


@pytest.fixture(scope="module")
def bare() -> Iterator[Worker]:
    """The operating-system layers only (audit off), with small limits so the tests are quick."""
    worker = Worker(
        "cpu",
        "run",
        sandbox={
            "audit": False,
            "tasks": 96,
            "file_bytes": 2 << 20,
            "disk_bytes": 6 << 20,
            "memory_bytes": 6 << 30,
        },
    )
    worker.request({"op": "ping"}, timeout=120)
    yield worker
    worker.stop()


@pytest.fixture(scope="module")
def audited() -> Iterator[Worker]:
    worker = Worker("cpu", "run")
    worker.request({"op": "ping"}, timeout=120)
    yield worker
    worker.stop()


# ----------------------------------------------------------------------------------------------- the report
def test_report_names_every_protection_and_why_one_is_missing(audited):
    report = audited.sandbox_report
    assert report is not None
    applied, missing = report["applied"], report["not_applied"]
    assert NAMES <= set(applied) | set(missing), NAMES - set(applied) - set(missing)
    assert not set(applied) & set(missing)
    assert all(isinstance(why, str) and len(why) > 10 for why in [*applied.values(), *missing.values()])
    assert {"audit", "environment", "file-size", "core-dumps"} <= set(applied)  # possible everywhere
    assert "memory" in applied  # a CPU worker always gets RLIMIT_AS
    lines = sandbox.not_applied(report)
    assert len(lines) == len(missing) and all(line.startswith("sandbox: ") for line in lines)


def test_a_cuda_worker_gets_no_address_space_limit():
    config = sandbox.defaults("cuda", "run")
    assert config["memory_bytes"] is None and sandbox.defaults("cpu", "run")["memory_bytes"] >= 8 << 30


def test_without_a_sandbox_the_worker_still_runs_and_says_so():
    worker = Worker("cpu", "run", sandbox=False)
    try:
        assert worker.request({"op": "ping"}, timeout=120)["ok"]
        assert worker.sandbox_report is None
        assert sandbox.not_applied(None) == ["sandbox: the worker ran without a sandbox"]
    finally:
        worker.stop()


def test_readable_paths_close_home_directories_but_keep_python(tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    paths = confine.readable_paths(str(tmp_path / "work"), ["/root", "/home", str(home)])
    assert "/root" not in paths and "/home" not in paths and str(home) not in paths
    assert not any(p.startswith(str(home) + "/") or p == str(tmp_path) for p in paths)
    assert os.path.realpath(sys.prefix) in paths or any(
        os.path.realpath(sys.prefix).startswith(p + "/") for p in paths
    )
    assert f"/proc/{os.getpid()}" in paths and "/proc/1" not in paths


def test_the_confinement_and_every_file_it_loads_import_only_the_standard_library():
    """They run before the package: anything that starts threads (torch, Triton) would escape Landlock
    and no_new_privs, so every import in confine.py and in each file it loads by path (the layers, the
    audit hook), at any depth, must be the standard library's."""
    import ast

    script = Path(confine.__file__)
    calls = [node for node in ast.walk(ast.parse(script.read_text())) if isinstance(node, ast.Call)]
    loaded = {c.args[0].value for c in calls if getattr(c.func, "id", "") == "_load" and c.args
              and isinstance(c.args[0], ast.Constant)}
    assert loaded == set(confine.BY_PATH)  # nothing is loaded that the list (and so this test) misses
    for path in [script, *(script.with_name(f"{stem}.py") for stem in confine.BY_PATH)]:
        nodes = list(ast.walk(ast.parse(path.read_text())))
        names = {alias.name for node in nodes if isinstance(node, ast.Import) for alias in node.names}
        names |= {node.module for node in nodes if isinstance(node, ast.ImportFrom) and node.module}
        relative = [node.lineno for node in nodes if isinstance(node, ast.ImportFrom) and node.level]
        outside = {name.split(".")[0] for name in names} - set(sys.stdlib_module_names) - {"__future__"}
        assert names and not outside and not relative, (path.name, outside, relative)


def test_the_layers_are_loaded_by_path_once_under_the_package_names():
    """confine.py, the audit hook and the package's own imports share one copy of each layer module."""
    from warpgym.env.worker import audit, landlock

    assert confine._load("landlock") is landlock and confine._load("audit") is audit
    assert confine.Sandbox.landlock is landlock.LandlockLayer.landlock
    assert confine.readable_paths is landlock.readable_paths and confine.SECRET_DIRS == landlock.SECRET_DIRS


# ----------------------------------------------------------------------------------------------- OS layers
def test_no_network(bare):
    require(bare, "network")
    reply = run_module(bare, "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=3)\n")
    assert not reply["ok"]
    assert any(w in reply["error"] for w in ("unreachable", "Permission denied", "not permitted")), reply[
        "error"
    ]


PORT_PROBE = """
import socket

def tries(what, port):
    s = socket.socket()
    try:
        s.bind(('127.0.0.1', port)) if what == 'bind' else s.connect(('127.0.0.1', port))
        return 'ok'
    except OSError as exc:
        return type(exc).__name__
    finally:
        s.close()

said = [tries('bind', ALLOWED), tries('bind', ALLOWED + 1), tries('connect', LISTENING)]
raise RuntimeError("RESULT " + " ".join(said))
"""


def test_under_a_profiler_tcp_is_open_on_its_ports_only():
    """A profiler (ncu) reaches its target over loopback TCP, which a network namespace cuts off: the worker
    then gets Landlock's port rules, and may bind only there, and connect to nothing else on the host."""
    import socket

    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        allowed = probe.getsockname()[1]
    worker = Worker("cpu", "run", sandbox={"audit": False, "tcp_ports": [allowed, allowed]})
    try:
        worker.request({"op": "ping"}, timeout=120)
        applied = (worker.sandbox_report or {}).get("applied", {})
        abi = re.search(r"Landlock ABI (\d+)", applied.get("filesystem", ""))
        if abi is None or int(abi.group(1)) < 4:
            pytest.skip(f"no Landlock TCP rules here (ABI 4): {worker.sandbox_report}")
        assert f"only on ports {allowed}-{allowed}" in applied["network"], applied
        listening_port = str(listening.getsockname()[1])
        source = PORT_PROBE.replace("ALLOWED", str(allowed)).replace("LISTENING", listening_port)
        reply = run_module(worker, source)
    finally:
        worker.stop()
        listening.close()
    assert "RESULT ok PermissionError PermissionError" in reply["error"], reply


def test_under_a_profiler_without_landlock_the_report_says_the_network_is_open():
    """No namespace (the profiler needs loopback) and no Landlock: the network layer is reported as not
    applied, with the reason, never as applied."""
    worker = Worker("cpu", "run", sandbox={"audit": False, "landlock": False, "tcp_ports": [40000, 40003]})
    try:
        worker.request({"op": "ping"}, timeout=120)
        report = worker.sandbox_report or {}
    finally:
        worker.stop()
    assert "network" not in report.get("applied", {}), report
    assert "under a profiler" in report.get("not_applied", {}).get("network", ""), report


def test_writes_only_in_the_private_directory(bare):
    require(bare, "filesystem")
    outside = Path("/tmp") / f"warpgym-sandbox-probe-{os.getpid()}"
    reply = run_module(bare, f"open({str(outside)!r}, 'w').write('x')\n")
    assert not reply["ok"] and "Permission denied" in reply["error"], reply
    assert not outside.exists()
    assert run_module(bare, "open('inside.txt', 'w').write('x')\n")["ok"]


def test_a_cuda_worker_gets_landlock_with_writes_in_its_own_proc_entry():
    config = sandbox.defaults("cuda", "run")
    assert config["landlock"] and config["own_proc_writes"]
    assert not sandbox.defaults("cpu", "run").get("own_proc_writes")


def _own_comm(name: str) -> str:
    return f"open('/proc/self/comm', 'w').write({name!r})\nprint('comm', open('/proc/self/comm').read())\n"


def test_landlock_refuses_writes_in_the_own_proc_entry_unless_granted(bare):
    require(bare, "filesystem")
    reply = run_module(bare, _own_comm("ungranted"))
    assert not reply["ok"] and "Permission denied" in reply["error"], reply


def test_the_own_proc_grant_opens_that_entry_and_nothing_else():
    worker = Worker("cpu", "run", sandbox={"audit": False, "own_proc_writes": True})
    try:
        worker.request({"op": "ping"}, timeout=120)
        require(worker, "filesystem")
        assert "own /proc entry" in worker.sandbox_report["applied"]["filesystem"]
        assert run_module(worker, _own_comm("granted"))["ok"]
        outside = Path("/tmp") / f"warpgym-sandbox-proc-{os.getpid()}"
        reply = run_module(worker, f"open({str(outside)!r}, 'w').write('x')\n")
        assert not reply["ok"] and "Permission denied" in reply["error"], reply
        parent = f"/proc/{os.getpid()}/comm"
        reply = run_module(worker, f"open({parent!r}, 'w').write('x')\n")
        assert not reply["ok"], reply
    finally:
        worker.stop()


def test_with_the_own_proc_grant_the_audit_layer_still_refuses_the_memory_file():
    worker = Worker("cpu", "run", sandbox={"own_proc_writes": True})
    try:
        worker.request({"op": "ping"}, timeout=120)
        reply = run_module(worker, "open('/proc/self/mem', 'r+b')\n")
        assert not reply["ok"] and "memory" in str(reply.get("error", "")) + str(reply), reply
    finally:
        worker.stop()


def test_without_landlock_a_mount_namespace_makes_the_rest_read_only():
    worker = Worker("cpu", "run", sandbox={"audit": False, "landlock": False})
    try:
        worker.request({"op": "ping"}, timeout=120)
        require(worker, "filesystem")
        assert "read-only" in worker.sandbox_report["applied"]["filesystem"]
        outside = Path("/tmp") / f"warpgym-sandbox-ro-{os.getpid()}"
        reply = run_module(worker, f"open({str(outside)!r}, 'w').write('x')\n")
        assert not reply["ok"] and "Read-only file system" in reply["error"], reply
        assert not outside.exists()
        assert run_module(worker, "open('inside.txt', 'w').write('x')\n")["ok"]
    finally:
        worker.stop()


def test_home_directories_cannot_be_read(tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("SECRET-KEY-MATERIAL")
    worker = Worker("cpu", "run", sandbox={"audit": False, "protect": [str(home)]})
    try:
        worker.request({"op": "ping"}, timeout=120)
        require(worker, "filesystem")
        reply = run_module(worker, f"print(open({str(home / '.ssh' / 'id_rsa')!r}).read())\n")
        assert not reply["ok"] and "Permission denied" in reply["error"], reply
        assert "SECRET-KEY-MATERIAL" not in worker.log_tail()
    finally:
        worker.stop()


def test_a_file_cannot_outgrow_the_limit(bare):
    reply = run_module(bare, "open('big.bin', 'wb').write(b'0' * (3 << 20))\n")
    assert not reply["ok"] and "File too large" in reply["error"], reply


def test_the_private_directory_is_a_bounded_disk(bare):
    require(bare, "disk")
    reply = run_module(
        bare, "for i in range(5):\n    open(f'part{i}.bin', 'wb').write(b'0' * (1900 << 10))\n"
    )
    assert not reply["ok"] and "No space left" in reply["error"], reply
    assert run_module(bare, "import os\nassert not os.path.exists('part0.bin')\n")[
        "ok"
    ]  # the next one starts clean


def test_memory_is_bounded_on_a_cpu_worker(bare):
    require(bare, "memory")
    reply = run_module(bare, "block = bytearray(8 << 30)\n")
    assert not reply["ok"] and "MemoryError" in reply["error"], reply


def test_a_fork_bomb_stops_at_the_limit_and_dies_with_the_worker():
    worker = Worker("cpu", "run", sandbox={"audit": False, "tasks": 64})
    try:
        worker.request({"op": "ping"}, timeout=120)
        require(worker, "processes")
        source = (
            "import os, time\nmade = 0\ntry:\n    for _ in range(1000):\n        if os.fork() == 0:\n"
            "            time.sleep(600)\n            os._exit(0)\n        made += 1\n"
            "finally:\n    print('FORKED', made)\n"
        )
        reply = run_module(worker, source)
        assert not reply["ok"] and "Resource temporarily unavailable" in reply["error"], reply
        made = int(worker.log_tail().split("FORKED")[-1].split()[0])
        assert made < 64
        group = worker.proc.pid
    finally:
        worker.stop()
    assert not _members_of_group(group), "children outlived the worker"
    fresh = Worker("cpu", "run")
    try:
        assert fresh.request({"op": "ping"}, timeout=120)["ok"]  # the machine is fine
    finally:
        fresh.stop()


def _members_of_group(pgid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(name))
    return found


def test_the_harness_cannot_be_signalled(bare):
    require(bare, "signals")
    reply = run_module(bare, f"import os\nos.kill({os.getpid()}, 0)\n")
    assert not reply["ok"] and "not permitted" in reply["error"], reply


def test_no_secrets_in_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-should-not-leak")
    worker = Worker("cpu", "run")
    try:
        reply = run_module(
            worker, "import os\nraise RuntimeError('ENV=' + repr(sorted(os.environ.items())))\n"
        )
        assert "should-not-leak" not in reply["error"]
        assert "ENV=" in reply["error"]
        assert "secrets removed" in worker.sandbox_report["applied"]["environment"]
    finally:
        worker.stop()


def test_root_is_dropped_where_python_allows(bare):
    if os.geteuid() != 0:
        pytest.skip("not running as root: nothing to drop")
    reply = run_module(bare, "import os\nraise RuntimeError(f'UID={os.getuid()}')\n")
    if "user" in bare.sandbox_report["applied"]:
        assert "UID=0" not in reply["error"]
    else:
        assert "UID=0" in reply["error"] and "not readable" in bare.sandbox_report["not_applied"]["user"]


def test_the_dropped_uid_has_a_user_name(bare):
    """The unused uid has no passwd entry; getpass.getuser() (torch calls it on import) must still answer."""
    require(bare, "user")
    reply = run_module(bare, "import getpass\nraise RuntimeError(f'NAME={getpass.getuser()}')\n")
    assert "NAME=warpgym-" in reply["error"], reply["error"]


# ----------------------------------------------------------------------------------------------- audit layer
AUDITED = [
    ("import ftplib\nftplib.socket.socket()\n", "sandbox-network"),
    ("import os\nf = object.__getattribute__(os, 'sys' + 'tem')\nf('true')\n", "sandbox-process"),
    ("import queue\nqueue.threading.Thread.__init__.__globals__['_os'].fork()\n", "sandbox-process"),
    ("import ctypes\nctypes.CDLL(None)\n", "sandbox-native"),
    ("import ctypes\nctypes.string_at(id(object), 8)\n", "sandbox-native"),
    ("import gc\ngc.get_objects()\n", "introspection"),
    ("import sys\nsys._getframe(0)\n", "introspection"),
    ("try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    e.__traceback__.tb_frame\n", "introspection"),
    ("open('/etc/warpgym-probe', 'w')\n", "sandbox-filesystem"),
    ("open(3, 'wb')\n", "sandbox-filesystem"),
    ("import os\nopen(f'/proc/{os.getppid()}/environ').read()\n", "sandbox-filesystem"),
    ("open('/root/.ssh/id_rsa')\n", "sandbox-filesystem"),
    ("import os\nos.kill(os.getppid(), 0)\n", "sandbox-signal"),
    ("__builtins__['exec']('x = 1')\n", "dynamic-code"),
]


@pytest.mark.parametrize(("source", "code"), AUDITED, ids=[c + f"-{i}" for i, (_, c) in enumerate(AUDITED)])
def test_the_audit_layer_refuses_and_reports(audited, source, code):
    audited.take_incidents()
    reply = run_module(audited, source)
    assert not reply["ok"] and "warpgym sandbox" in reply["error"], reply
    incidents = audited.take_incidents()
    assert [code, incidents[0][1]] in incidents and "the sandbox refused it" in incidents[0][1], incidents


def test_the_audit_layer_still_reports_a_refusal_the_candidate_swallowed(audited):
    audited.take_incidents()
    reply = run_module(
        audited, "try:\n    import gc\n    gc.get_objects()\nexcept PermissionError:\n    pass\n"
    )
    assert reply["ok"]  # the candidate carried on...
    assert audited.take_incidents()[0][0] == "introspection"  # ...and is caught all the same


def test_harness_work_on_the_candidates_behalf_is_not_refused(audited):
    """Writing inside the private directory, reading the Python installation and lazy imports pass."""
    audited.take_incidents()
    source = (
        "import json, os\nopen('scratch.txt', 'w').write('ok')\nopen(json.__file__).read()\nimport colorsys\n"
    )
    assert run_module(audited, source)["ok"]
    assert audited.take_incidents() == []
