"""The `ptx` suite on a CPU: task declarations, the shipped PTX (HGMMA + UTMALDG + SYNCS in its
SASS for sm_90a, tcgen05 for sm_100a), the references' math, the Triton sources' arithmetic in the
interpreter, and the static half of the verdict through the evaluator."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from kernelgym.env import EvalOptions, loader
from kernelgym.tasks import Sampler, all_tasks, get_task
from kernelgym.tasks.ptx.attention import attention_backward, attention_forward

IDS = ["ptx/attention-bwd", "ptx/attention-bwd-causal", "ptx/attention-fwd", "ptx/attention-fwd-causal",
       "ptx/gemm-bf16", "ptx/gemm-fp8"]
SOLUTIONS = Path(get_task("ptx/gemm-bf16").solution_path).parent
KERNELS = SOLUTIONS / "kernels"
INDEX = json.loads((KERNELS / "index.json").read_text())
needs_tools = pytest.mark.skipif(loader.nvrtc_version() is None or loader.ptxas_path() is None,
                                 reason="NVRTC (pip install nvidia-cuda-nvrtc) or ptxas not available")


def _variant(task_id: str) -> str:
    source = get_task(task_id).solution_source()
    return next(line.split('"')[1] for line in source.splitlines() if line.startswith("VARIANT = "))


def test_suite_declarations():
    tasks = all_tasks(suite="ptx")
    assert [t.id for t in tasks] == IDS
    for t in tasks:
        assert t.language == "cuda" and t.vendor is not None
        assert t.required_features == {"sm_90a": ("wgmma", "tma"), "sm_100a": ("tcgen05", "tma")}
        assert t.solution_path.is_file()
        assert "kernelgym.env.loader" in t.statement()
    assert get_task("ptx/gemm-bf16").cases("bench") == [{"m": 8192, "n": 7168, "k": 5120}]
    assert get_task("ptx/attention-fwd").cases("bench") == [{"b": 4, "h": 32, "s": 4096, "d": 128}]
    fwd = get_task("ptx/attention-fwd").flops({"b": 1, "h": 1, "s": 128, "d": 128})
    assert get_task("ptx/attention-fwd-causal").flops({"b": 1, "h": 1, "s": 128, "d": 128}) * 2 == fwd
    assert get_task("ptx/attention-bwd").flops({"b": 1, "h": 1, "s": 128, "d": 128}) == int(2.5 * fwd)


def test_every_solution_ships_ptx_for_both_targets():
    for task_id in IDS:
        variant = _variant(task_id)
        for target in ("sm_90a", "sm_100a"):
            entry = INDEX[f"{variant}.{target}"]
            text = (KERNELS / entry["file"]).read_text()
            assert f".target {target}" in text and ".version 8.7" in text
            assert entry["descriptors"] and all(d["swizzle"] == 128 for d in entry["descriptors"])
            assert entry["shared"] <= loader.MAX_SHARED_PER_BLOCK[target]


@needs_tools
@pytest.mark.parametrize("task_id", ["ptx/gemm-bf16", "ptx/gemm-fp8", "ptx/attention-fwd-causal",
                                     "ptx/attention-bwd"])
def test_shipped_ptx_uses_wgmma_tma_and_mbarriers_on_sm90a(task_id):
    entry = INDEX[f"{_variant(task_id)}.sm_90a"]
    module = loader.load_ptx((KERNELS / entry["file"]).read_text(), name=task_id, target="sm_90a")
    opcodes = loader.sass_opcodes(module.record.sass)[entry["entry"]]
    mma = "QGMMA" if task_id == "ptx/gemm-fp8" else "HGMMA"
    for opcode in (mma, "UTMALDG", "SYNCS", "WARPGROUP"):
        assert any(op.startswith(opcode) for op in opcodes), f"{opcode} missing from {task_id}'s SASS"
    info = module.record.kernels[entry["entry"]]
    assert info.spills == 0 and info.registers <= 255
    assert len(info.params) == len(module.kernel(entry["entry"]).info.params)


@needs_tools
def test_shipped_ptx_uses_tcgen05_and_tma_on_sm100a():
    entry = INDEX[f"{_variant('ptx/gemm-bf16')}.sm_100a"]
    module = loader.load_ptx((KERNELS / entry["file"]).read_text(), name="gemm", target="sm_100a")
    counts = module.record.kernels[entry["entry"]].sass_counts
    assert counts["tcgen05"] > 0 and counts["tma"] > 0 and counts["wgmma"] == 0
    opcodes = loader.sass_opcodes(module.record.sass)[entry["entry"]]
    assert any(op.startswith("UTCHMMA") for op in opcodes)


def _sdpa(q, k, v, causal):
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(~torch.ones(s.shape[-1], s.shape[-1], dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_references_match_autograd(causal):
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(1, 2, 48, 16, dtype=torch.float64) for _ in range(4))
    o, lse = attention_forward(q, k, v, causal)
    o_ref, lse_ref = _sdpa(q, k, v, causal)
    torch.testing.assert_close(o, o_ref)
    torch.testing.assert_close(lse, lse_ref)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    _sdpa(*leaves, causal)[0].backward(do)
    for got, leaf in zip(attention_backward(q, k, v, o, lse, do, causal), leaves, strict=True):
        torch.testing.assert_close(got, leaf.grad)


def test_reference_output_types_for_the_harness():
    task = get_task("ptx/attention-fwd")
    inputs = task.make_inputs(task.cases("dev")[0], Sampler(0, "normal", "cpu"))
    o, lse = task.reference(**{k: v.to("meta") for k, v in inputs.items()})
    assert (o.dtype, lse.dtype, tuple(lse.shape)) == (torch.bfloat16, torch.float32, (1, 2, 128))
    fp8 = get_task("ptx/gemm-fp8")
    inputs = fp8.make_inputs(fp8.cases("dev")[0], Sampler(0, "normal", "cpu"))
    assert inputs["a"].dtype == torch.float8_e4m3fn and inputs["scale_a"].shape == (1,)
    assert fp8.reference(**{k: v.to("meta") for k, v in inputs.items()}).dtype == torch.bfloat16
    bwd = get_task("ptx/attention-bwd-causal")
    inputs = bwd.make_inputs(bwd.cases("dev")[0], Sampler(0, "normal", "cpu"))
    assert set(inputs) == {"q", "k", "v", "o", "lse", "do"} and inputs["lse"].dtype == torch.float32


INTERPRETED = textwrap.dedent('''
    import math, sys
    import torch, triton
    sys.path.insert(0, sys.argv[1])
    import triton_kernels as tk
    from triton.tools.tensor_descriptor import TensorDescriptor as TD
    torch.manual_seed(0)
    dt = torch.float16  # the interpreter gets bf16 wrong; the arithmetic is what is checked here
    a, b, c = torch.randn(96, 160, dtype=dt), torch.randn(80, 160, dtype=dt), torch.empty(96, 80, dtype=dt)
    tk.gemm_bf16[(4,)](TD.from_tensor(a, [64, 32]), TD.from_tensor(b, [64, 32]), TD.from_tensor(c, [64, 64]),
                       96, 80, 160, BM=64, BN=64, BK=32, GROUP_M=8)
    assert (c.double() - a.double() @ b.double().T).abs().max() < 0.05
    B, H, S, D = 1, 2, 128, 32
    q, k, v, do = (torch.randn(B, H, S, D, dtype=dt) for _ in range(4))
    flat = lambda t, rows: TD.from_tensor(t.view(B * H * S, D), [rows, D])
    scale = 1 / math.sqrt(D)
    for causal in (False, True):
        o, lse = torch.empty_like(q), torch.empty(B, H, S)
        tk.attn_fwd[(S // 64, B * H)](flat(q, 64), flat(k, 32), flat(v, 32), flat(o, 64), lse, S,
                                      scale * 1.4426950408889634, D=D, BM=64, BN=32, CAUSAL=causal)
        s = (q.double() @ k.double().transpose(-1, -2)) * scale
        if causal:
            s = s.masked_fill(~torch.ones(S, S, dtype=torch.bool).tril(), float("-inf"))
        assert (o.double() - torch.softmax(s, -1) @ v.double()).abs().max() < 5e-3
        assert (lse.double() - torch.logsumexp(s, -1)).abs().max() < 1e-4
        delta = torch.empty(B * H * S)
        tk.attn_bwd_delta[(B * H * S // 32,)](o, do, delta, D=D, BM=32)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(q), torch.empty_like(q)
        tk.attn_bwd[(S // 64, B * H)](flat(q, 32), flat(do, 32), flat(k, 32), flat(v, 32), flat(q, 64),
                                      flat(do, 64), flat(k, 64), flat(v, 64), flat(dq, 64), flat(dk, 64),
                                      flat(dv, 64), lse, delta, S, scale, scale * 1.4426950408889634, D=D,
                                      SMALL=32, BIG=64, CAUSAL=causal)
        leaves = [x.double().requires_grad_() for x in (q, k, v)]
        s = (leaves[0] @ leaves[1].transpose(-1, -2)) * scale
        if causal:
            s = s.masked_fill(~torch.ones(S, S, dtype=torch.bool).tril(), float("-inf"))
        (torch.softmax(s, -1) @ leaves[2]).backward(do.double())
        for got, leaf in zip((dq, dk, dv), leaves):
            err = (got.double() - leaf.grad).norm() / leaf.grad.norm()
            assert err < 2e-3, (causal, float(err))
    print("ok")
''')


def test_triton_sources_compute_the_right_thing_in_the_interpreter(tmp_path):
    script = tmp_path / "interp.py"
    script.write_text(INTERPRETED)
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, str(script), str(SOLUTIONS)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


@needs_tools
def test_static_half_of_the_verdict_on_a_cpu(cpu_evaluator):
    task = get_task("ptx/gemm-bf16")
    result = cpu_evaluator.evaluate(task, task.solution_source(), EvalOptions(shape_sets=("dev",)))
    assert result.compiled and result.correct is None and not result.violations
    assert result.stage == "instructions"
    assert result.required_features_met is True
    assert result.instructions["wgmma"]["sass"] > 0 and result.instructions["tma"]["sass"] > 0
    assert result.instructions["wgmma"]["executed"] is None
    assert any("need a GPU" in s for s in result.skipped_checks)
    (kernel,) = result.kernels
    assert kernel.name == "gemm_bf16" and kernel.registers and kernel.spills == 0
    assert "NOT CHECKED" in result.feedback


@needs_tools
def test_dry_run_catches_a_launch_that_cannot_work(cpu_evaluator):
    task = get_task("ptx/gemm-bf16")
    source = task.solution_source().replace('shared_mem=META["shared"]', "shared_mem=300000")
    result = cpu_evaluator.evaluate(task, source, EvalOptions(shape_sets=("dev",)))
    assert not result.compiled
    assert any("300000 bytes of shared memory" in e for e in result.compile_errors)


@needs_tools
def test_candidate_without_required_instructions_fails_statically(cpu_evaluator):
    source = textwrap.dedent('''
        import torch
        from kernelgym.env import loader

        MODULE = loader.load_cuda(r"""
        #include <cuda_bf16.h>
        extern "C" __global__ void naive(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c,
                                         int m, int n, int k) {
          int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
          if (row >= m || col >= n) return;
          float acc = 0.f;
          for (int i = 0; i < k; ++i) acc += __bfloat162float(a[row * k + i]) * __bfloat162float(b[col * k + i]);
          c[row * n + col] = __float2bfloat16(acc);
        }
        """, name="naive")

        def gemm(a, b):
            m, k = a.shape
            n = b.shape[0]
            c = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
            MODULE.kernel("naive")(a, b, c, m, n, k, grid=((n + 15) // 16, (m + 15) // 16), block=(16, 16))
            return c
    ''')
    task = get_task("ptx/gemm-bf16")
    result = cpu_evaluator.evaluate(task, source, EvalOptions(shape_sets=("dev",)))
    assert result.compiled and result.required_features_met is False
    assert set(result.missing_features) == {"wgmma", "tma"}
    assert "no wgmma instruction" in result.missing_features["wgmma"]


def test_candidate_that_builds_nothing_through_the_loader(cpu_evaluator):
    source = "import torch\n\ndef gemm(a, b):\n    return torch.empty((a.shape[0], b.shape[0]), dtype=a.dtype)\n"
    task = get_task("ptx/gemm-bf16")
    result = cpu_evaluator.evaluate(task, source, EvalOptions(shape_sets=("dev",)))
    assert any(v.code == "no-loader-module" for v in result.violations)
