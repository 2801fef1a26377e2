"""Scrubbing GPU shared memory before a checked run (a result that depends on
uninitialised shared memory must fail every time).

Shared memory is not cleared between kernels: a kernel that reads shared memory it never wrote sees
what the last kernel on that SM left there, which can be zero, or a previous launch's right answer,
and so pass by chance. Before each correctness run the worker fills the shared memory of every SM
with NaN (``0x7fc0`` in each half-word: NaN as fp32, fp16 and bf16), so such a read is wrong every
time, not sometimes. The kernel declares its own static shared array in inline PTX (Triton has no
raw shared-memory API) and is launched with several blocks per SM so that the blocks land in
different slots of each SM's shared memory.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

WORDS = 12288
"""32-bit words per block: 48 KiB, the most a block may declare statically."""
BLOCKS_PER_SM = 4
NAN_WORD = 0x7FC07FC0

_ASM = """{
    .shared .align 16 .b32 kg_scrub[WORDS];
    .reg .u32 base, idx, addr, step;
    .reg .pred done;
    mov.u32 base, kg_scrub;
    mov.u32 idx, %tid.x;
    mov.u32 step, %ntid.x;
    KG_LOOP_${:uid}:
    setp.ge.u32 done, idx, WORDS;
    @done bra KG_DONE_${:uid};
    shl.b32 addr, idx, 2;
    add.u32 addr, addr, base;
    st.volatile.shared.b32 [addr], NAN_WORD;
    add.u32 idx, idx, step;
    bra KG_LOOP_${:uid};
    KG_DONE_${:uid}:
    mov.b32 $0, 0;
}""".replace("NAN_WORD", str(NAN_WORD)).replace("WORDS", str(WORDS))


@triton.jit
def scrub_kernel(out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    flag = tl.inline_asm_elementwise(_ASM_TEXT, "=r,r", [offsets], dtype=tl.int32, is_pure=False, pack=1)
    tl.store(out_ptr + tl.program_id(0) * BLOCK + offsets, flag)


_ASM_TEXT: tl.constexpr = tl.constexpr(_ASM)
_state: dict[str, Any] = {}


def scrub_shared_memory(device: Any = None) -> str | None:
    """Fill every SM's shared memory with NaN; returns None, or why it could not (then never tried again)."""
    if "error" in _state:
        return _state["error"]
    import torch

    try:
        props = torch.cuda.get_device_properties(device or torch.cuda.current_device())
        blocks = props.multi_processor_count * BLOCKS_PER_SM
        sink = _state.get("sink")
        if sink is None or sink.numel() < blocks * 128:
            sink = _state["sink"] = torch.empty(blocks * 128, dtype=torch.int32, device="cuda")
        scrub_kernel[(blocks,)](sink, BLOCK=128, num_warps=4)
    except Exception as exc:  # noqa: BLE001 - a missing scrub is reported, never fatal
        _state["error"] = f"shared memory could not be scrubbed before runs: {type(exc).__name__}: {exc}"[
            :500
        ]
        return _state["error"]
    return None


def failure() -> str | None:
    """Why the scrub is unavailable in this process, if it is."""
    return _state.get("error")
