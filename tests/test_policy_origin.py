"""The run-time policy counts an op by where it came from: the candidate's code (also inside a kernel
launch: grid callables, hooks), not the harness's or Triton's runtime; and it sees through renamed
custom operators, replaced kernels of allowed ops and rebinding of its own state."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import os, sys
    os.chdir(sys.argv[1])
    sys.path.insert(0, os.getcwd())
    import torch
    from warpgym.env.worker import policy
    policy.freeze_dispatch_tables()
    open("candidate_1.py", "w").write(
        "import torch\\n"
        "def direct(x):\\n    return x.softmax(-1)\\n"
        "def grid(meta):\\n    torch.ones(3).softmax(-1)\\n    return (1,)\\n")
    import candidate_1
    x = torch.randn(4, 4)
    results = {}
    with policy.watching() as mode:
        candidate_1.direct(x)
    results["direct"] = mode.forbidden()
    with policy.watching() as mode, policy.paused():  # inside a launch: the grid callable is the candidate's
        candidate_1.grid({})
    results["grid"] = mode.forbidden()
    with policy.watching() as mode, policy.paused():  # inside a launch: the harness's own op is not
        x.softmax(-1)
    results["launch_other"] = mode.forbidden()
    lib = torch.library.Library("redteam", "DEF")
    lib.define("empty_like(Tensor x) -> Tensor")
    lib.impl("empty_like", lambda t: t.exp(), "CPU")
    with policy.watching() as mode:
        exec(compile("torch.ops.redteam.empty_like(x)", "candidate_2.py", "exec"))
    results["custom"] = mode.forbidden()
    over = torch.library.Library("aten", "IMPL")
    over.impl("zero_", lambda t: t, "CPU")
    with policy.watching() as mode:
        exec(compile("x.zero_()", "candidate_3.py", "exec"))
    results["override"] = mode.forbidden()
    before = policy.state()
    policy.ALLOWED_OPS = policy.ALLOWED_OPS | {"softmax"}
    results["state_changed"] = policy.state() != before
    print(repr(results))
''')


def test_ops_are_counted_by_origin_and_tricks_are_named(tmp_path):
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    results = eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 - our own script's repr
    assert "_softmax" in results["direct"]
    assert "_softmax" in results["grid"], "an op in a grid callable is the candidate's"
    assert results["launch_other"] == {}, "ops of nobody's code inside a launch are the harness's"
    assert any(k.startswith("redteam::") for k in results["custom"]), results["custom"]
    assert any("replaced" in k for k in results["override"]), results["override"]
    assert results["state_changed"] is True


def test_a_folder_reached_through_a_link_is_known_by_both_names(tmp_path):
    """Frames name their files as imported; an install reached through a symbolic link must still be told
    apart from the candidate's code (or the harness's own ops would be counted against honest kernels)."""
    import os

    from warpgym.env.worker.policy import _folders

    real = tmp_path / "real" / "env"
    (real / "worker").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "real")
    folders = _folders(str(link / "env" / "worker"))
    assert folders == (str(link / "env") + os.sep, str(real) + os.sep)
    assert _folders(str(real / "worker")) == (str(real) + os.sep,)


SPOOF = textwrap.dedent('''
    import os, sys, json
    os.chdir(sys.argv[1])
    import torch
    from warpgym.env.worker import policy, scrub
    policy.freeze_dispatch_tables()

    def helper(x):
        return x.softmax(-1)

    def claiming(fn, filename):
        fn.__code__ = fn.__code__.replace(co_filename=filename)
        return fn

    x = torch.randn(4, 4)
    results = {}
    spoofed = claiming(helper, scrub.__file__)  # a harness file's name, this module's globals
    with policy.watching() as mode:
        spoofed(x)
    results["spoofed"] = mode.forbidden()
    with policy.watching() as mode:
        x.softmax(-1)  # the control: this script's frames are nobody's, so the op counts
    results["control"] = mode.forbidden()
    print(json.dumps(results))
''')


def test_a_frame_under_a_harness_file_name_is_the_harness_only_in_that_module_globals(tmp_path):
    """A code object's file name is its builder's choice (``CodeType.replace``); the policy takes a frame
    for the harness's only where it runs in the globals of the module loaded from that file."""
    import json
    from types import SimpleNamespace

    from warpgym.env.worker import audit, scrub

    def frame(globals_: dict, filename: str) -> SimpleNamespace:
        return SimpleNamespace(f_globals=globals_, f_code=SimpleNamespace(co_filename=filename))

    assert audit.runs_its_own_file(frame(vars(scrub), scrub.__file__))
    assert not audit.runs_its_own_file(frame(globals(), scrub.__file__))
    forged = {"__name__": scrub.__name__, "__file__": scrub.__file__}
    assert not audit.runs_its_own_file(frame(forged, scrub.__file__))
    assert not audit.runs_its_own_file(frame(vars(scrub), audit.__file__))

    out = subprocess.run([sys.executable, "-c", SPOOF, str(tmp_path)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])
    assert results["control"], results
    assert results["spoofed"], results


ROUTES = textwrap.dedent('''
    import os, sys, json
    os.chdir(sys.argv[1])
    sys.path.insert(0, os.getcwd())
    import numpy as np
    import torch
    from warpgym.env.worker import host_routes, policy
    replaced = host_routes.install()
    policy.freeze_dispatch_tables()
    open("candidate_1.py", "w").write(
        "import torch\\n"
        "def export(x):\\n    return torch.utils.dlpack.to_dlpack(x)\\n"
        "def build(n):\\n    return torch.frombuffer(bytearray(4 * n), dtype=torch.float32)\\n"
        "def show(x):\\n    return repr(x)\\n"
        "def each(x):\\n    return x.clone().apply_(float)\\n")
    import candidate_1
    import triton.language as tl
    from triton.runtime.interpreter import InterpreterBuilder, TensorHandle
    x = torch.randn(4096)
    results = {"replaced": replaced}

    def kernel_print():  # what the interpreter does for a kernel's device_print, from Triton's frames
        builder = InterpreterBuilder()
        builder.grid_idx = (0, 0, 0)
        builder.create_print("V", False, [TensorHandle(np.zeros(2000, np.float32), tl.float32)], False)

    calls = {"export": lambda: candidate_1.export(x), "build": lambda: candidate_1.build(3000),
             "show": lambda: candidate_1.show(x[:500]), "show_big": lambda: candidate_1.show(x),
             "each": lambda: candidate_1.each(x[:1500]), "kernel_print": kernel_print}
    for name, call in calls.items():
        with policy.watching() as mode:
            call()
        results[name] = dict(mode.host)
    print(json.dumps(results))
''')


def test_host_routes_no_mode_sees_are_counted_where_the_candidate_takes_them(tmp_path):
    """DLPack's exporter and ``frombuffer`` are C functions no mode is told of, and PyTorch prints with every
    mode popped: the worker counts each, by the candidate's frames, as the host-read budget counts
    ``numpy()`` and ``torch.tensor``."""
    import json

    out = subprocess.run([sys.executable, "-c", ROUTES, str(tmp_path)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])
    assert "torch.utils.dlpack.to_dlpack" in results["replaced"] and "torch.frombuffer" in results["replaced"]
    assert sum(results["export"].values()) == 4096, results["export"]
    assert sum(results["build"].values()) == 3000, results["build"]
    assert sum(results["show"].values()) == 500, results["show"]
    assert 0 < sum(results["show_big"].values()) <= 6, results["show_big"]  # three at each end
    assert sum(results["each"].values()) == 1500, results["each"]  # apply_ calls Python on each element
    assert "triton.runtime.interpreter.InterpreterBuilder.create_print" in results["replaced"]
    assert results["kernel_print"] == {"device_print() in a kernel (its printed values)": 2000}
