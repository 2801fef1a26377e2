"""Nsight Compute and compute-sanitizer on a GPU, running the candidate in the confined worker: the
profiled call returns, the tool's report is read from its own log file, the sandbox's layers are
applied as for any CUDA worker, and host compute under the profiler is flagged. Skipped without CUDA
(conftest) or without the tool."""

from __future__ import annotations

import pytest
from warpgym.env.judge import profile
from warpgym.tasks import get_task

pytestmark = pytest.mark.gpu

HOST_COMPUTE = """
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offsets, tl.load(src + offsets, mask=offsets < n), mask=offsets < n)


def add(x, y):
    total = x + y
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](total, out, x.numel(), BLOCK=1024)
    return out
"""


def _case():
    task = get_task("math/add")
    return task, task.cases("dev")[0]


def test_ncu_profiles_the_confined_worker():
    if profile.ncu_path() is None:
        pytest.skip("ncu is not installed")
    task, case = _case()
    prof = profile.profile_candidate(task.id, task.solution_source(), case, timeout=600)
    assert prof.run is not None and prof.run.returned, prof.run.error if prof.run else None
    assert prof.kernels, prof.log[-2000:]
    applied = (prof.run.sandbox or {}).get("applied", {})
    assert {"audit", "hidden", "environment"} <= set(applied), prof.run.sandbox
    assert not prof.run.findings(), prof.run


def test_host_compute_under_ncu_is_flagged():
    if profile.ncu_path() is None:
        pytest.skip("ncu is not installed")
    task, case = _case()
    prof = profile.profile_candidate(task.id, HOST_COMPUTE, case, timeout=600)
    assert prof.run is not None and prof.run.findings(), prof.run
    assert any("add" in op for op in prof.run.forbidden_ops), prof.run.forbidden_ops


def test_memcheck_reports_from_the_confined_worker():
    if profile.sanitizer_path() is None:
        pytest.skip("compute-sanitizer is not installed")
    task, case = _case()
    # 15 s on the H200 without a network namespace; inside one it never finished
    report = profile.memcheck_candidate(task.id, task.solution_source(), case, timeout=120)
    assert report.ok and report.errors == 0, report.text
    assert report.run is not None and report.run.returned and not report.run.findings(), report.run
    assert report.run.sandbox["not_applied"].get("network") == profile.SANITIZER_NETWORK, report.run.sandbox
