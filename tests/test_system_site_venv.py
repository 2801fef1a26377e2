"""The judge run from a virtual environment that takes PyTorch and Triton from the system's site-packages
(``python -m venv --system-site-packages``): PyTorch's own use of the switches the worker guards (a Tensor
method written in Python pops the policy's torch-function mode while it runs it) is PyTorch's, not the
candidate's, though PyTorch then lies under the standard library's folder and outside the environment's
site-packages."""

from __future__ import annotations

import json
import subprocess
import venv
from pathlib import Path

CANDIDATE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    (out,) = torch.empty_like(x).split(x.numel())  # Tensor.split is Python: it goes through the modes
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
'''


def test_torch_from_the_system_site_packages_is_not_taken_for_the_candidate(tmp_path: Path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, system_site_packages=True, with_pip=False)
    python = env_dir / "bin" / "python"
    probe = "import sys, torch; print(sys.prefix != sys.base_prefix, torch.__file__.startswith(sys.prefix))"
    base = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=True)
    assert base.stdout.split() == ["True", "False"], base.stdout  # a venv; torch from outside it
    candidate = tmp_path / "candidate.py"
    candidate.write_text(CANDIDATE)
    run = subprocess.run([str(python), "-c", "import sys; from warpgym.experiments.cli import main; "
                          "sys.exit(main())", "eval", "math/add", str(candidate), "--device", "cpu",
                          "--shapes", "dev", "--json"], capture_output=True, text=True, timeout=600,
                         cwd=tmp_path)
    assert run.stdout.strip(), run.stderr[-3000:]
    result = json.loads(run.stdout)
    codes = [v["code"] for v in result.get("violations", [])]
    assert "torch-internals" not in codes, run.stdout[-3000:]
    assert result["correct"] is True, run.stdout[-3000:]
