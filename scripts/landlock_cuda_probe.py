"""Which filesystem rights CUDA needs under Landlock (run on a GPU machine).

The worker's Landlock rules (env/worker/landlock.py) let a process write only in its own directory and
to device files, and read everything but the protected trees and other processes' /proc entries. On an
H200 CUDA failed to initialise under those rules. Each variant below starts a fresh process, applies the
worker's rules plus one extra grant, then initialises CUDA and runs a kernel; the variants that pass say
which access CUDA needs.

    python scripts/landlock_cuda_probe.py --out landlock.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

CHILD = r"""
import ctypes, json, os, sys
sys.path.insert(0, sys.argv[1])
import landlock as c
variant, workdir = sys.argv[2], sys.argv[3]
libc = ctypes.CDLL(None, use_errno=True)
abi = libc.syscall(c._LL_CREATE, None, 0, c._LL_VERSION)
handled = c._FS_WRITE_FILE | c._READ | c._FS_REMOVE_DIR | c._FS_REMOVE_FILE | c._MAKE | c._FS_REFER
handled |= c._FS_TRUNCATE if abi >= 3 else 0
IOCTL_DEV = 1 << 15
if variant == "ioctl-handled" and abi >= 5:
    handled |= IOCTL_DEV
class Attr(ctypes.Structure):
    _fields_ = [("handled", ctypes.c_uint64)]
class Beneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]
ruleset = libc.syscall(c._LL_CREATE, ctypes.byref(Attr(handled)), ctypes.sizeof(Attr), 0)
def rule(path, access):
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    if not os.path.isdir(path):
        access &= c._FILE_RIGHTS
    if access:
        libc.syscall(c._LL_ADD_RULE, ruleset, 1, ctypes.byref(Beneath(access, fd)), 0)
    os.close(fd)
protected = [p for p in c.SECRET_DIRS if os.path.exists(p)]
rule(workdir, handled)
rule("/dev", c._READ | c._FS_WRITE_FILE | (c._FS_TRUNCATE if abi >= 3 else 0))
for path in c.readable_paths(workdir, protected):
    rule(path, c._READ)
RIGHTS = {"write": c._FS_WRITE_FILE, "truncate": c._FS_TRUNCATE, "refer": c._FS_REFER,
          "remove": c._FS_REMOVE_DIR | c._FS_REMOVE_FILE, "make-reg": c._FS_MAKE_REG,
          "make-dir": c._FS_MAKE_DIR, "make-sock": c._FS_MAKE_SOCK, "make-fifo": c._FS_MAKE_FIFO,
          "make-sym": c._FS_MAKE_SYM, "make-dev": c._FS_MAKE_CHAR | c._FS_MAKE_BLOCK}
me = f"/proc/{os.getpid()}"
extra = {"dev-all": [("/dev", handled)], "dev-shm": [("/dev/shm", handled)], "tmp": [("/tmp", handled)],
         "proc-all": [("/proc", c._READ)], "read-all": [("/", c._READ)], "everything": [("/", handled)],
         "ioctl-handled": [("/dev", c._READ | c._FS_WRITE_FILE | IOCTL_DEV)],
         "proc-me-write": [(me, c._READ | c._FS_WRITE_FILE | c._FS_TRUNCATE)],
         "proc-write": [("/proc", c._READ | c._FS_WRITE_FILE | c._FS_TRUNCATE)],
         "proc-me-task": [(me + "/task", c._READ | c._FS_WRITE_FILE)],
         "proc-me-not-task": [(os.path.join(me, n), c._READ | c._FS_WRITE_FILE) for n in os.listdir(me)
                              if n != "task"],
         "sys-write": [("/sys", c._READ | c._FS_WRITE_FILE | c._FS_TRUNCATE)]}
if variant.startswith("root-") and variant[5:] in RIGHTS:
    extra[variant] = [("/", RIGHTS[variant[5:]])]
if variant.startswith("all-in-"):
    extra[variant] = [("/" + variant[7:], handled)]
if variant.startswith("proc-me-file-"):
    extra[variant] = [(os.path.join(me, variant[13:]), c._FS_WRITE_FILE)]
if variant.startswith("but-"):
    extra[variant] = [("/", handled & ~RIGHTS[variant[4:]])]
extra = extra.get(variant, [])
for path, access in extra:
    rule(path, access)
libc.prctl(38, 1, 0, 0, 0)
if variant != "no-landlock" and libc.syscall(c._LL_RESTRICT, ruleset, 0) != 0:
    print(json.dumps({"ok": False, "error": "restrict failed"})); sys.exit()
try:
    import torch
    x = torch.ones(1 << 20, device="cuda")
    torch.cuda.synchronize()
    print(json.dumps({"ok": float((x * 2).sum()) == 2 * (1 << 20), "abi": abi}))
except Exception as exc:
    print(json.dumps({"ok": False, "abi": abi, "error": f"{type(exc).__name__}: {exc}"[-400:]}))
"""

_RIGHT_NAMES = ("write", "truncate", "refer", "remove", "make-reg", "make-dir", "make-sock", "make-fifo",
                "make-sym", "make-dev")
_TOP = ("proc", "sys", "run", "var", "etc", "usr", "opt", "tmp", "dev", "home", "root")
_PROC_FILES = ("comm", "oom_score_adj", "oom_adj", "coredump_filter", "mem", "attr", "timerslack_ns",
               "autogroup", "clear_refs", "loginuid", "sched")
VARIANTS = ("no-landlock", "base", "everything", "proc-me-write", "proc-me-task", "proc-me-not-task",
            *(f"proc-me-file-{n}" for n in _PROC_FILES))
WIDER = ("proc-write", "sys-write", *(f"root-{r}" for r in _RIGHT_NAMES), *(f"but-{r}" for r in _RIGHT_NAMES),
         *(f"all-in-{d}" for d in _TOP))
"""Measured on an H200 (docs/benchmarks.md): of these only proc-write, the but-* variants that keep write
and truncate, and all-in-proc pass: CUDA writes in the process's own /proc entry."""


def _denials(command: list[str], env: dict[str, str]) -> list[str]:
    """The calls refused with EACCES/EPERM when the base variant runs under strace."""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as log:
        subprocess.run(["strace", "-f", "-qq", "-o", log.name, *command], env=env, capture_output=True,
                       timeout=300)
        lines = [line.strip() for line in log if "EACCES" in line or "EPERM" in line]
    return lines[:200]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="landlock.json")
    parser.add_argument("--wide", action="store_true", help="also the grants beyond /proc")
    args = parser.parse_args()
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "env", "worker")
    results = {}
    for variant in (*VARIANTS, *WIDER) if args.wide else VARIANTS:
        with tempfile.TemporaryDirectory() as workdir:
            env = {**os.environ, "HOME": workdir, "TMPDIR": workdir}
            proc = subprocess.run([sys.executable, "-c", CHILD, here, variant, workdir], env=env,
                                  capture_output=True, text=True, timeout=120)
        line = (proc.stdout.strip().splitlines() or [""])[-1]
        try:
            results[variant] = json.loads(line)
        except json.JSONDecodeError:
            results[variant] = {"ok": False, "error": (proc.stderr or proc.stdout)[-400:]}
            if variant == "base" and shutil.which("strace"):
                results["base-denials"] = _denials([sys.executable, "-c", CHILD, here, variant, workdir], env)
        print(f"{variant:14} {results[variant]}")
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
