"""Reference solution for ptx/attention-bwd (CAUSAL False) and ptx/attention-bwd-causal (CAUSAL True) in
hand-written CUDA C++ with inline PTX, built by the loader: the two modules differ in that line alone.

``attention_bwd_wgmma.cu`` (its attachment, compiled with NVRTC for sm_90a) holds three kernels: a pass
that computes delta = rowsum(o * do), lse in base 2 and zeroes an fp32 dQ accumulator; the backward proper,
one block per head and 128-key block (one producer warpgroup issuing TMA loads of K and V once and of the Q,
dO, lse and delta tiles of each 64-query block into mbarrier-guarded stages; two consumer warpgroups of 64
keys each running the five products S^T = K Q^T, dP^T = V dO^T, dV += P^T dO, dK += dS^T Q on wgmma with
P^T and dS^T taken from registers, and dQ = dS K with dS read back from shared memory through a transposed
descriptor, staged in shared memory and added into the accumulator by TMA reduce-adds; registers moved to
the consumers with setmaxnreg); and a pass that writes dq = accumulator / sqrt(D) as bf16. dV is issued
with dK (EARLY_DV 0) and the two passes beside the backward read their operands by ordinary loads (AUX_BULK
0): on an H100, side by side in one process, 7.7% faster than EARLY_DV 1 with bulk copies (3.9% causal). No
sm_100a (tcgen05) version yet.
"""

import math

import torch

from warpgym import loader

CAUSAL = False
BM, BN, HEAD_DIM = 64, 128, 128
THREADS = 384
LOG2E = 1.4426950408889634
DEFINES = {"STAGES": 2, "EARLY_DV": 0, "DQ_RED": 1, "DS_KMAJOR": 0, "DQ_TMA": 1, "AUX_BULK": 0}
"""The pipeline options (the attachment's header says what each does)."""
ENTRIES = ("bwd_preprocess", "attention_bwd_wgmma", "bwd_convert_dq")


def shared_bytes(defines: dict) -> int:
    """Dynamic shared memory as the kernel lays it out (it traps when given less): K and V, the stages of
    Q, dO, lse and delta, dS^T for both consumers, with DQ_TMA their fp32 dQ staging, the mbarriers, and 1024
    bytes to align for the swizzle."""
    stages = defines["STAGES"]
    staging = 2 * 16384 if defines["DQ_TMA"] else 0
    return 2 * 32768 + stages * 32768 + 2 * 16384 + staging + stages * 512 + 8 * (1 + 2 * stages) + 1024


def build(target: str, defines: dict | None = None) -> tuple[dict, dict]:
    """Compile the attachment with DEFINES (or ``defines`` over them); the config and the kernels by name."""
    if target != "sm_90a":
        raise loader.LoaderError(f"this backward is written for Hopper's wgmma (sm_90a); {target} has no "
                                 "version of it")
    config = {"defines": {**DEFINES, **(defines or {}), "CAUSAL": int(CAUSAL)}}
    module = loader.load_cuda(loader.attachment("attention_bwd_wgmma.cu"), name="attention_bwd_wgmma",
                              target=target, defines=config["defines"])
    config["shared"] = shared_bytes(config["defines"])
    return config, {name: module.kernel(name) for name in ENTRIES}


CONFIG, KERNELS = build(loader.default_target())


def launch(config: dict, kernels: dict, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
           lse: torch.Tensor, do: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    b, h, s, d = q.shape
    if d != HEAD_DIM or s % BN or any(t.shape != q.shape for t in (k, v, o, do)):
        raise ValueError(f"q, k, v, o, do must share a shape (B, H, S, {HEAD_DIM}) with S a multiple of "
                         f"{BN}; got {[tuple(t.shape) for t in (q, k, v, o, do)]}")
    rows = b * h * s
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    dq_accum = torch.empty((rows, d), dtype=torch.float32, device=q.device)
    delta = torch.empty((rows,), dtype=torch.float32, device=q.device)
    lse2 = torch.empty((rows,), dtype=torch.float32, device=q.device)
    scale = 1.0 / math.sqrt(d)
    kernels["bwd_preprocess"](o.view(rows, d), do.view(rows, d), lse.view(rows), delta, lse2, dq_accum, rows,
                              grid=rows // 8, block=256)
    maps = [loader.tensor_map(t.view(rows, d), (box, 64), swizzle=128)
            for t, box in ((q, BM), (k, BN), (v, BN), (do, BM))]
    if config["defines"]["DQ_TMA"]:  # where TMA adds dQ: fp32 rows, boxes of 64 rows x 32 columns (128 bytes)
        maps.append(loader.tensor_map(dq_accum, (BM, 32), swizzle=128))
    kernels["attention_bwd_wgmma"](*maps, lse2, delta, dq_accum, dk.view(rows, d), dv.view(rows, d), s,
                                   scale * LOG2E, scale, grid=b * h * (s // BN), block=THREADS,
                                   shared_mem=config["shared"])
    kernels["bwd_convert_dq"](dq_accum, dq.view(rows, d), rows * d, scale, grid=(rows * d + 1023) // 1024,
                              block=256)
    return dq, dk, dv


def attention_bwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, lse: torch.Tensor,
                  do: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return launch(CONFIG, KERNELS, q, k, v, o, lse, do)
