"""Static rules (env/judge/static.py) on honest code in unusual styles, and the attacks each relaxation
must still leave to a check that catches them: the scan is early feedback, the run-time policy decides."""

from __future__ import annotations

import textwrap

import pytest
import torch
from warpgym.env import EvalOptions
from warpgym.env.judge.static import TORCH_VIEWS, check_source
from warpgym.env.worker import policy
from warpgym.tasks import get_task

HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x):\n    pass\n\n"


def scan(body: str) -> list[tuple[str, int | None]]:
    report = check_source(HEAD + textwrap.dedent(body), "f", ["x"])
    return [(v.code, v.line) for v in report.violations]


HONEST = {
    "device queries": """
        def f(x):
            backend = getattr(torch, x.device.type, None)
            if torch.xpu.is_available() or torch.mps.is_available():
                pass
            major, _ = torch.cuda.get_device_capability() if torch.cuda.is_available() else (0, 0)
            return x
        """,
    "views": """
        from torch import view_as_real
        def f(x):
            pairs = torch.view_as_complex(x.reshape(-1, 2))
            back = view_as_real(pairs).flatten()
            return torch.unflatten(back, 0, (1, -1)), torch.movedim(torch.unsqueeze(x, 0), 0, -1)
        """,
    "branches that never run here": """
        def f(x):
            if False:
                return torch.softmax(x, -1)
            if x.device.type == "xpu":
                x = torch.exp(x)
            elif x.device.type in ("mps", "hpu"):
                x = torch.exp(x)
            if not x.is_xpu:
                pass
            else:
                x = torch.exp(x)
            y = torch.tanh(x) if hasattr(torch, "xpu") and torch.xpu.is_available() else x
            return y
        """,
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_host_code_passes_the_scan(name):
    assert scan(HONEST[name]) == []


ATTACKS = {
    # compute in a branch that does run on a device judged here is still blamed at once
    "cuda branch": ("""
        def f(x):
            if x.device.type == "cuda":
                return torch.softmax(x, -1)
            return x
        """, ["torch-compute"]),
    "else of a never-taken test": ("""
        def f(x):
            if x.device.type == "xpu":
                pass
            else:
                return torch.softmax(x, -1)
        """, ["torch-compute"]),
    "not the other device": ("""
        def f(x):
            if x.device.type != "xpu":
                return torch.softmax(x, -1)
        """, ["torch-compute"]),
    "either device": ("""
        def f(x):
            if x.device.type == "xpu" or x.is_cuda:
                return torch.softmax(x, -1)
        """, ["torch-compute"]),
    # other rules hold in every branch, taken or not
    "introspection in a dead branch": ("""
        def f(x):
            if False:
                return ().__class__.__base__.__subclasses__()
        """, ["introspection"]),
    # one finding per call, however many rules see it
    "getattr with a literal": ("""
        def f(x):
            return getattr(torch, "softmax")(x, -1)
        """, ["obfuscated-access"]),
    "getattr with a computed name": ("""
        def f(x):
            return getattr(torch, "soft" + "max")(x, -1)
        """, ["obfuscated-access"]),
    "frame walk": ("""
        import sys
        def f(x):
            return sys._getframe(1)
        """, ["forbidden-call"]),
    "setattr through a device name": ("""
        def f(x):
            setattr(torch, x.device.type, None)
            return x
        """, ["obfuscated-access"]),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attacks_are_flagged_once_each(name):
    source, expected = ATTACKS[name]
    assert [code for code, _ in scan(source)] == expected


def test_every_view_the_scan_allows_runs_as_views_at_run_time():
    """The scan's list of views and the run-time policy agree: each runs only allowed ATen ops."""
    x = torch.randn(4, 6)
    calls = {"view_as_real": lambda: torch.view_as_real(torch.view_as_complex(x.reshape(4, 3, 2))),
             "view_as_complex": lambda: torch.view_as_complex(x.reshape(4, 3, 2)),
             "unflatten": lambda: torch.unflatten(x, 1, (2, 3)), "select": lambda: torch.select(x, 0, 1),
             "narrow": lambda: torch.narrow(x, 1, 0, 2), "split": lambda: torch.split(x, 2, 1),
             "tensor_split": lambda: torch.tensor_split(x, 2, 1), "chunk": lambda: torch.chunk(x, 2),
             "broadcast_to": lambda: torch.broadcast_to(x[:1], (4, 6)), "diagonal": lambda: torch.diagonal(x)}
    for name in TORCH_VIEWS:
        call = calls.get(name, lambda name=name: getattr(torch, name)(x, *_args(name)))
        with policy.watching() as mode:
            call()
        assert not mode.forbidden(), (name, mode.forbidden())


def _args(name: str) -> tuple[object, ...]:
    return {"transpose": (0, 1), "swapaxes": (0, 1), "swapdims": (0, 1), "permute": ((1, 0),),
            "movedim": (0, 1), "moveaxis": (0, 1), "reshape": ((-1,),), "unsqueeze": (0,)}.get(name, ())


ADD = """
import torch
import triton
{imports}

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: {tl}.constexpr):
    offsets = {tl}.program_id(0) * BLOCK + {tl}.arange(0, BLOCK)
    mask = offsets < n
    x = {tl}.load(x_ptr + offsets, mask=mask)
    y = {tl}.load(y_ptr + offsets, mask=mask)
    {tl}.store(out_ptr + offsets, x + y, mask=mask)
{extra}
def add(x, y):
    {body}
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
"""
DEV = EvalOptions(device="cpu", shape_sets=("dev",))


def _add(imports: str = "import triton.language as tl", tl: str = "tl", extra: str = "", body: str = "pass"):
    return ADD.format(imports=imports, tl=tl, extra=extra, body=body)


@pytest.mark.parametrize(("imports", "tl"), [("import triton.language as language", "language"),
                                             ("from triton import language as tlang", "tlang"),
                                             ("", "triton.language")])
def test_any_name_of_triton_language_works_on_the_cpu(cpu_evaluator, imports, tl):
    """The interpreter once took only ``tl.constexpr`` for a constexpr; the compiler takes any spelling."""
    result = cpu_evaluator.evaluate(get_task("math/add"), _add(imports, tl), DEV)
    assert result.correct and not result.violations, result.feedback
    assert result.kernels, "compiled for the target too"


def test_device_queries_views_and_dead_branches_pass_the_whole_evaluation(cpu_evaluator):
    body = """backend = getattr(torch, x.device.type, None)
    if x.device.type == "xpu" and torch.xpu.is_available():
        return torch.add(x, y)
    if x.numel() % 2 == 0:
        pairs = torch.view_as_complex(x.reshape(-1, 2))
        x = torch.view_as_real(pairs).flatten().unflatten(0, x.shape)"""
    result = cpu_evaluator.evaluate(get_task("math/add"), _add(body=body), DEV)
    assert result.correct and not result.violations, result.feedback


FAKE = "\nclass FakeDevice:\n    type = 'xpu'\n\n"


def test_a_faked_dead_branch_that_runs_is_caught_at_run_time(cpu_evaluator):
    body = "if FakeDevice.type == 'xpu':\n        return torch.add(x, y)"
    source = _add(extra=FAKE, body=body)
    assert check_source(source, "add", ["x", "y"]).ok, "the scan takes it for a branch that never runs"
    result = cpu_evaluator.evaluate(get_task("math/add"), source, DEV)
    assert result.correct is not True
    assert [v.code for v in result.violations][0] == "torch-op", result.feedback
    assert "add (x1)" in result.violations[0].message and "REJECTED (policy)" in result.feedback


def test_a_faked_dead_branch_run_at_import_is_caught_at_run_time(cpu_evaluator):
    extra = FAKE + "if FakeDevice.type == 'xpu':\n    TABLE = torch.exp(torch.zeros(8))\n"
    source = _add(extra=extra)
    assert check_source(source, "add", ["x", "y"]).ok
    result = cpu_evaluator.evaluate(get_task("math/add"), source, DEV)
    assert result.correct is not True and not result.compiled
    assert [v.code for v in result.violations] == ["torch-op"], result.feedback
    assert "while the module was imported" in result.violations[0].message
    assert "REJECTED (policy)" in result.feedback


def test_a_candidate_s_invalid_escape_warns_nobody_in_the_judge():
    """A model's "\\>" in a string warns at parse time (DeprecationWarning, SyntaxWarning from 3.12): the
    judge's process, and a Gymnasium env checker that records warnings while it steps with random text,
    should hear nothing of it."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = check_source(HEAD + 'def f(x):\n    return "a \\> b"\n', "f", ["x"])
    assert report.ok and [str(w.message) for w in caught] == []
