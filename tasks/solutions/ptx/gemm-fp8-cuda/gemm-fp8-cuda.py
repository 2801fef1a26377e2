"""Reference solution for ptx/gemm-fp8 in hand-written CUDA C++ with inline PTX, built by the loader.

The same sources as ptx/gemm-bf16's hand-written reference, compiled with FP8=1: float8 e4m3 operands
(wgmma m64n256k32 .e4m3 on sm_90a, tcgen05.mma kind::f8f6f4 on sm_100a), fp32 accumulators scaled by
scale_a * scale_b in the epilogue and stored as bf16. A tile row is 128 e4m3 values, the 128 bytes of one
swizzle span, so the stages, descriptors and barriers are byte for byte those of the bf16 kernel.
"""

import torch

from warpgym import loader

BM, BK = 128, 128
CONFIGS = {
    "sm_90a": {"source": "gemm_wgmma.cu", "kernel": "gemm_fp8_wgmma", "threads": 384,
               "barriers": 0, "defines": {"FP8": 1, "BN": 256, "STAGES": 4, "INFLIGHT": 1, "GROUP_M": 16}},
    "sm_100a": {"source": "gemm_tcgen05.cu", "kernel": "gemm_fp8_tcgen05", "threads": 256,
                "barriers": 4, "defines": {"FP8": 1, "BN": 256, "STAGES": 4, "GROUP_M": 8}},
}
"""Per target: the attachment, its kernel, threads per block, the mbarriers beside the two per stage
(the tensor-memory accumulators' full and empty pairs) and the tile options."""


def shared_bytes(config: dict) -> int:
    """Dynamic shared memory: the stages (one byte per element), 1024 bytes to align them for the
    swizzle, then the mbarriers and the tensor-memory address slot."""
    d = config["defines"]
    return d["STAGES"] * (BM + d["BN"]) * BK + 1024 + 8 * (2 * d["STAGES"] + config["barriers"]) + 16


def build(target: str, defines: dict | None = None) -> tuple[dict, "loader.Kernel"]:
    """Compile the target's source with its tile options (or ``defines`` over them) and return the kernel."""
    config = dict(CONFIGS[target])
    config["defines"] = {**config["defines"], **(defines or {})}
    module = loader.load_cuda(loader.attachment(config["source"]), name=config["kernel"], target=target,
                              defines=config["defines"])
    config["shared"] = shared_bytes(config)
    return config, module.kernel(config["kernel"])


CONFIG, KERNEL = build(loader.default_target())
_SMS: dict = {}


def launch(config: dict, kernel: "loader.Kernel", a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor,
           scale_b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[0]
    bn = config["defines"]["BN"]
    c = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    tiles = -(-m // BM) * -(-n // bn)
    if a.device not in _SMS:
        _SMS[a.device] = torch.cuda.get_device_properties(a.device).multi_processor_count if a.is_cuda else 1
    a_map = loader.tensor_map(a, (BM, BK), swizzle=128)
    b_map = loader.tensor_map(b, (bn, BK), swizzle=128)
    kernel(a_map, b_map, c, m, n, k, scale_a, scale_b, grid=min(tiles, _SMS[a.device]),
           block=config["threads"], shared_mem=config["shared"])
    return c


def gemm_fp8(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor) -> torch.Tensor:
    return launch(CONFIG, KERNEL, a, b, scale_a, scale_b)
