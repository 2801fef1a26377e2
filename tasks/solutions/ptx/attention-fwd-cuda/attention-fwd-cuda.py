"""Reference solution for ptx/attention-fwd (CAUSAL False) and ptx/attention-fwd-causal (CAUSAL True) in
hand-written CUDA C++ with inline PTX, built by the loader: the two modules differ in that line alone.

The CUDA sources beside this module (its attachments) are compiled with NVRTC for the evaluation's target:
``attention_fwd_wgmma.cu`` on sm_90a (a warp-specialised persistent flash-attention forward: one producer
warpgroup issuing TMA loads of Q and of K/V tiles into mbarrier-guarded stages, two consumer warpgroups of 64
query rows each running S = Q K^T and O += P V on wgmma m64n128k16 with P taken from registers, the online
softmax in registers, registers moved from producer to consumers with setmaxnreg) and
``attention_fwd_tcgen05.cu`` on sm_100a (TMA, tcgen05.mma with S and O in tensor memory, a softmax
warpgroup reading S with tcgen05.ld and handing P to the MMA through shared memory).
"""

import math

import torch

from warpgym import loader

CAUSAL = False
BM = BN = 128
HEAD_DIM = 128
LOG2E = 1.4426950408889634
CONFIGS = {
    "sm_90a": {"source": "attention_fwd_wgmma.cu", "kernel": "attention_fwd_wgmma", "threads": 384,
               "barriers": 2, "buffers": 1, "defines": {"STAGES": 2, "OVERLAP": 0, "PINGPONG": 0}},
    "sm_100a": {"source": "attention_fwd_tcgen05.cu", "kernel": "attention_fwd_tcgen05", "threads": 256,
                "barriers": 7, "buffers": 2, "defines": {"STAGES": 2}},
}
"""Per target: the attachment, its kernel, threads per block, the mbarriers beside the three per stage, the
128 x 128 tiles beside the stages (Q; on sm_100a also P) and the pipeline options."""


def shared_bytes(config: dict) -> int:
    """Dynamic shared memory: the tiles and stages, 1024 bytes to align them for the swizzle, the mbarriers
    (and on sm_100a the tensor-memory address slot); the kernels trap when given less than they lay out."""
    tile = BM * HEAD_DIM * 2
    stages = config["defines"]["STAGES"]
    slot = 16 if config["kernel"].endswith("tcgen05") else 0
    return config["buffers"] * tile + stages * 2 * tile + 1024 + 8 * (3 * stages + config["barriers"]) + slot


def build(target: str, defines: dict | None = None) -> tuple[dict, "loader.Kernel"]:
    """Compile the target's source with its options (or ``defines`` over them) and return the kernel."""
    config = dict(CONFIGS[target])
    config["defines"] = {**config["defines"], **(defines or {}), "CAUSAL": int(CAUSAL)}
    module = loader.load_cuda(loader.attachment(config["source"]), name=config["kernel"], target=target,
                              defines=config["defines"])
    config["shared"] = shared_bytes(config)
    return config, module.kernel(config["kernel"])


def schedule(heads: int, seq_len: int) -> list[tuple[int, int]]:
    """The (head, query block) items in the order the kernels walk them: pairs (nmb - 1 - p, p) of one head,
    whose causal work adds up to nmb + 1 key blocks for every pair; block b of the grid takes pairs b,
    b + grid, ..."""
    nmb = seq_len // BM
    per_head = (nmb + 1) // 2
    order = []
    for u in range(heads * per_head):
        bh, p = divmod(u, per_head)
        order.append((bh, nmb - 1 - p))
        if p != nmb - 1 - p:
            order.append((bh, p))
    return order


def pairs(heads: int, seq_len: int) -> int:
    return heads * ((seq_len // BM + 1) // 2)


CONFIG, KERNEL = build(loader.default_target())
_SMS: dict = {}


def launch(config: dict, kernel: "loader.Kernel", q: torch.Tensor, k: torch.Tensor,
           v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    b, h, s, d = q.shape
    if d != HEAD_DIM or s % BM or k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"q, k, v must share a shape (B, H, S, {HEAD_DIM}) with S a multiple of {BM}; got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if not all(t.dtype == torch.bfloat16 for t in (q, k, v)):
        raise ValueError("q, k, v must be bfloat16")
    o = torch.empty((b, h, s, d), dtype=torch.bfloat16, device=q.device)
    lse = torch.empty((b, h, s), dtype=torch.float32, device=q.device)
    if q.device not in _SMS:
        _SMS[q.device] = torch.cuda.get_device_properties(q.device).multi_processor_count if q.is_cuda else 1
    rows = (b * h * s, d)
    maps = [loader.tensor_map(t.contiguous().view(rows), (BM, 64), swizzle=128) for t in (q, k, v)]
    grid = min(pairs(b * h, s), _SMS[q.device])
    kernel(*maps, o, lse, s, b * h, LOG2E / math.sqrt(d), grid=grid, block=config["threads"],
           shared_mem=config["shared"])
    return o, lse


def attention_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return launch(CONFIG, KERNEL, q, k, v)
