"""Fuzzing the harness: random and hostile sources must each get a verdict, and the harness must live on.

Hypothesis draws garbage text, broken UTF-8, deeply nested code, huge outputs, modules that print
megabytes or never return, and candidates assembled from hostile pieces. Every draw is judged by the
real CPU Evaluator; the properties are that ``evaluate`` returns an ``EvalResult`` (never raises), the
result is well formed, a hostile candidate is never judged correct, and afterwards the reference
solution still passes in the same evaluator. Example counts are small and derandomized (CI has two
cores).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from warpgym.env import STAGES, EvalOptions, EvalResult, Evaluator, Limits
from warpgym.tasks import get_task

ADD = get_task("math/add")
QUICK = EvalOptions(device="cpu", shape_sets=("dev",), limits=Limits(load=15, run=6, compile=60, timing=10))
FUZZ = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n\n"
KERNEL = """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


"""
LAUNCH = "    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)\n"


def well_formed(result: EvalResult) -> None:
    """What every verdict must be, whatever went in."""
    assert isinstance(result, EvalResult)
    assert result.stage in STAGES
    assert result.correct in (True, False, None)
    assert result.feedback.startswith("Verdict: ")
    json.dumps(result.to_dict())  # serialisable for the experiment store
    assert len(result.stdout) <= 5000 and len(result.feedback) <= 40000


def rejected(result: EvalResult) -> None:
    well_formed(result)
    assert result.correct is not True, result.feedback[:2000]


@pytest.fixture(scope="module")
def evaluator(cpu_evaluator: Evaluator) -> Evaluator:
    return cpu_evaluator


@FUZZ
@given(text=st.text(max_size=400))
def test_garbage_text(evaluator, text):
    rejected(evaluator.evaluate(ADD, text, QUICK))


@FUZZ
@given(raw=st.binary(max_size=300))
def test_bytes_that_are_not_utf8(evaluator, raw):
    """What a client that reads a file as bytes and decodes it leniently would send: lone surrogates."""
    rejected(evaluator.evaluate(ADD, raw.decode("utf-8", "surrogateescape"), QUICK))


@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    body=st.text(
        alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters(),
        min_size=1,
        max_size=40,
    )
)
def test_surrogates_inside_a_valid_module(evaluator, body):
    source = (
        HEADER + KERNEL + f"NOTE = {body!r}\n\n\ndef add(x, y):\n    out = torch.empty_like(x)\n{LAUNCH}"
        "    return out\n"
    )
    well_formed(evaluator.evaluate(ADD, source, QUICK))


@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    depth=st.integers(min_value=1_000, max_value=200_000),
    piece=st.sampled_from(["-", "(", "[", "not ", "lambda: ", "+1"]),
)
def test_deeply_nested_sources(evaluator, depth, piece):
    source = f"x = {piece * depth}1" if piece != "+1" else "x = 1" + piece * depth
    rejected(evaluator.evaluate(ADD, source, QUICK))


HOSTILE_BODIES = {
    "recursion": "    def deeper(k):\n        return deeper(k + 1)\n    deeper(0)\n",
    "huge output": "    out = torch.empty(1 << 27, dtype=torch.float32)\n",
    "wrong shape": "    out = torch.empty(3, 5, dtype=x.dtype)\n",
    "wrong type": "    out = {'x': 1}\n",
    "none": "    out = None\n",
    "endless loop": "    while True:\n        pass\n",
    "raises BaseException": "    raise SystemExit(3)\n",
    "keyboard interrupt": "    raise KeyboardInterrupt\n",
    "exit the process": "    import os\n    object.__getattribute__(os, '_ex' + 'it')(0)\n",
    "closes stdout": "    import sys\n    sys.stdout.close()\n",
    "nan": "    out = torch.full_like(x, float('nan'))\n",
}
AT_IMPORT = {
    "import loops forever": "while True:\n    pass\n",
    "import recursion": "def f(k):\n    return f(k + 1)\n\n\nf(0)\n",
    "import raises": "raise ImportError('no')\n",
}


@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    pieces=st.lists(st.sampled_from(sorted(HOSTILE_BODIES)), min_size=1, max_size=3, unique=True),
    launch=st.booleans(),
)
def test_hostile_entrypoints(evaluator, pieces, launch):
    body = "    out = torch.empty_like(x)\n" + (LAUNCH if launch else "")
    body += "".join(HOSTILE_BODIES[p] for p in pieces)
    source = HEADER + KERNEL + "def add(x, y):\n" + body + "    return out\n"
    rejected(evaluator.evaluate(ADD, source, QUICK))


@settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(piece=st.sampled_from(sorted(AT_IMPORT)))
def test_hostile_imports(evaluator, piece):
    source = (
        HEADER
        + KERNEL
        + AT_IMPORT[piece]
        + "\n\ndef add(x, y):\n    out = torch.empty_like(x)\n"
        + LAUNCH
        + "    return out\n"
    )
    rejected(evaluator.evaluate(ADD, source, QUICK))


@pytest.mark.parametrize("where", ["import", "entrypoint"])
def test_a_module_that_prints_megabytes_gets_its_verdict_and_a_bounded_log(evaluator, where):
    flood = "print('y' * (8 << 20))\n"
    source = (
        HEADER
        + KERNEL
        + (flood if where == "import" else "")
        + "def add(x, y):\n"
        + ("    " + flood if where == "entrypoint" else "")
        + "    out = torch.empty_like(x)\n"
        + LAUNCH
        + "    return out\n"
    )
    result = evaluator.evaluate(ADD, source, QUICK)
    well_formed(result)
    assert result.correct, result.feedback[:1000]  # printing is no crime; the log is trimmed to its tail
    assert result.stdout.endswith("y" * 100)


def test_a_kernel_that_never_returns(evaluator):
    source = (
        HEADER
        + """@triton.jit
def spin_kernel(out_ptr, n, BLOCK: tl.constexpr):
    i = 0
    while i >= 0:
        i += 1
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32), mask=tl.arange(0, BLOCK) < n)


def add(x, y):
    out = torch.empty_like(x)
    spin_kernel[(1,)](out, x.numel(), BLOCK=1024)
    return out
"""
    )
    result = evaluator.evaluate(ADD, source, QUICK)
    rejected(result)
    assert "no answer within" in (result.runtime_error or "") + " ".join(c.message for c in result.cases)


def test_the_harness_survives_it_all(evaluator):
    """Run last in this file: after every hostile draw above, the same evaluator still judges well."""
    result = evaluator.evaluate(ADD, ADD.solution_source(), EvalOptions(device="cpu", shape_sets=("dev",)))
    assert result.correct and not result.violations, result.feedback
