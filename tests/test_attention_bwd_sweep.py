"""scripts/attention_bwd_sweep.py on a CPU: its variants compile for sm_90a with the instructions they are
meant to use, and every launch it would make on the H200 passes the loader's checks and packs its
arguments (counts, descriptor slots, shared memory), so a GPU call is not spent on a wrong launch."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch
from warpgym.env.toolchain import loader, runtime

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import attention_bwd_sweep as sweep  # noqa: E402

pytestmark = pytest.mark.skipif(loader.ptxas_path() is None, reason="ptxas not available")


@pytest.fixture(scope="module")
def emitted(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("sweep-bwd")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sweep, "ATOMIC", ((64, 128, 8, 2, True), (64, 128, 8, 2, False)))
        mp.setattr(sweep, "TWO_PASS", ((64, 128, 8, 3), (128, 128, 8, 2)))
        sweep.emit(folder)
    return folder


def test_the_variants_use_wgmma_and_sum_dq_by_tma_reduction_or_atomics(emitted):
    import json

    def ptx(name: str) -> str:
        return json.loads((emitted / f"{name}.json").read_text())["ptx"]

    for tag in ("full", "causal"):
        tma, red = ptx(f"atomic_{tag}_64x128_w8s2_tma"), ptx(f"atomic_{tag}_64x128_w8s2_red")
        assert "wgmma.mma_async" in tma and "wgmma.mma_async" in red
        assert re.search(r"cp\.reduce\.async\.bulk\.tensor.*add", tma)
        assert re.search(r"\b(red|atom)\.global\S*\.add\S*\.f32", red)
        assert not re.search(r"cp\.reduce\.async\.bulk", red)


def test_every_launch_passes_the_loader_s_checks(emitted, monkeypatch):
    launched: list[tuple[str, int]] = []

    def checked(self, *args, grid, block, shared_mem=0, cluster=None):
        self.check(grid, block, shared_mem, cluster)
        launched.append((self.name, len(self.pack(list(args)))))

    monkeypatch.setattr(runtime.Kernel, "__call__", checked)
    b, h, s, d = 1, 2, 256, sweep.D
    q, k, v, o, do = (torch.zeros(b, h, s, d, dtype=torch.bfloat16) for _ in range(5))
    lse = torch.zeros(b, h, s)
    variants = sweep._launchers(emitted)
    assert len(variants) == 8  # two two-pass tilings and two atomic variants, each full and causal
    for _, run in variants.values():
        run(q, k, v, o, lse, do)
    names = [name for name, _ in launched]
    assert names.count("attn_bwd_delta") == 8 and names.count("attn_bwd_dq") == 4
    assert names.count("attn_bwd") == 4 and names.count("attn_bwd_atomic") == 4
