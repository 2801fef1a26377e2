"""TMA tensor maps: the 128-byte CUtensorMap a kernel takes by value, checked before it is encoded so a
bad descriptor is a clear error rather than a fault at run time."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from warpgym.env.toolchain import driver
from warpgym.env.toolchain.errors import LaunchError

_TMA_DTYPES = {
    "uint8": 0,
    "float8_e4m3fn": 0,
    "float8_e5m2": 0,
    "int8": 0,
    "uint16": 1,
    "int16": 1,
    "int32": 3,
    "uint32": 2,
    "int64": 5,
    "uint64": 4,
    "float16": 6,
    "float32": 7,
    "float64": 8,
    "bfloat16": 9,
}
_SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}


@dataclass
class TensorMap:
    """A TMA descriptor (CUtensorMap, 128 bytes) passed by value as a ``__grid_constant__`` parameter.

    ``placeholder`` is True where no GPU driver could encode it (it was checked, not encoded).
    """

    data: bytes
    shape: tuple[int, ...]
    box: tuple[int, ...]
    dtype: str
    swizzle: int
    placeholder: bool = False


def tensor_map(
    tensor: Any,
    box: Sequence[int],
    *,
    swizzle: int = 128,
    oob_nan: bool = False,
    l2_promotion: int = 256,
    element_strides: Sequence[int] | None = None,
) -> TensorMap:
    """The TMA descriptor for a tiled view of ``tensor`` (dims outermost first, as torch orders them).

    Checked here, so a bad descriptor is a clear error rather than a fault at run time: the base
    is 16-byte aligned, the innermost dim contiguous, other strides multiples of 16 bytes, each box
    dim 1..256, and the inner box row at most the swizzle span.
    """
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor_map needs a torch.Tensor, got {type(tensor).__name__}")
    # Encoding costs tens of microseconds of host time per call, paid again on every launch of a
    # kernel that builds its descriptors per call; the descriptor depends only on this key.
    key = (tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype, tuple(box), swizzle,
           oob_nan, l2_promotion, tuple(element_strides or ()))
    cached = _TENSOR_MAPS.get(key)
    if cached is not None:
        return cached
    made = _tensor_map(tensor, box, swizzle, oob_nan, l2_promotion, element_strides)
    if len(_TENSOR_MAPS) >= _TENSOR_MAP_CACHE_SIZE:
        _TENSOR_MAPS.clear()
    _TENSOR_MAPS[key] = made
    return made


_TENSOR_MAPS: dict[tuple, TensorMap] = {}
_TENSOR_MAP_CACHE_SIZE = 4096


def _tensor_map(tensor: Any, box: Sequence[int], swizzle: int, oob_nan: bool, l2_promotion: int,
                element_strides: Sequence[int] | None) -> TensorMap:
    dtype = str(tensor.dtype).removeprefix("torch.")
    if dtype not in _TMA_DTYPES:
        raise LaunchError(f"tensor_map: dtype {dtype} has no TMA element type")
    rank, elem = tensor.dim(), tensor.element_size()
    box = tuple(int(b) for b in box)
    problems = []
    if not 1 <= rank <= 5:
        problems.append(f"rank {rank} (TMA handles 1 to 5 dims)")
    if len(box) != rank:
        problems.append(f"box has {len(box)} dims, the tensor {rank}")
    if swizzle not in _SWIZZLES:
        problems.append(f"swizzle {swizzle} (use 0, 32, 64 or 128 bytes)")
    if tensor.data_ptr() % 16:
        problems.append("the base address is not 16-byte aligned")
    if rank and tensor.stride(-1) != 1:
        problems.append("the innermost dim is not contiguous (stride 1)")
    for d in range(rank - 1):
        if (tensor.stride(d) * elem) % 16:
            problems.append(f"dim {d} stride {tensor.stride(d) * elem} bytes is not a multiple of 16")
    for d, b in enumerate(box):
        if not 1 <= b <= 256:
            problems.append(f"box dim {d} = {b} (must be 1..256)")
    if box and (box[-1] * elem) % 16:
        problems.append(f"the inner box row is {box[-1] * elem} bytes, not a multiple of 16")
    if box and swizzle and box[-1] * elem > swizzle:
        problems.append(
            f"the inner box row is {box[-1] * elem} bytes, more than the {swizzle}-byte swizzle span"
        )
    if problems:
        raise LaunchError("tensor_map: " + "; ".join(problems))
    shape = tuple(int(s) for s in tensor.shape)
    if not driver.gpu_available():
        return TensorMap(b"\0" * 128, shape, box, dtype, swizzle, placeholder=True)
    from cuda.bindings import driver as cu

    driver.init()
    dims = [cu.cuuint64_t(s) for s in reversed(shape)]
    strides = [cu.cuuint64_t(tensor.stride(d) * elem) for d in reversed(range(rank - 1))]
    boxes = [cu.cuuint32_t(b) for b in reversed(box)]
    estr = [cu.cuuint32_t(e) for e in reversed(element_strides or [1] * rank)]
    promo = {
        0: cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
        64: cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
        128: cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        256: cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
    }[l2_promotion]
    fill = (
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
        if oob_nan
        else cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
    )
    err, tmap = cu.cuTensorMapEncodeTiled(
        cu.CUtensorMapDataType(_TMA_DTYPES[dtype]),
        rank,
        tensor.data_ptr(),
        dims,
        strides,
        boxes,
        estr,
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        cu.CUtensorMapSwizzle(_SWIZZLES[swizzle]),
        promo,
        fill,
    )
    if int(err) != 0:
        raise LaunchError(
            f"cuTensorMapEncodeTiled refused shape {shape}, box {box}, swizzle {swizzle}: {err!r}"
        )
    return TensorMap(ctypes.string_at(tmap.getPtr(), 128), shape, box, dtype, swizzle)
