"""Spatial transforms of NCHW images: resampling, shuffles, padding, patch extraction, layouts."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..registry import register
from ..spec import Task, Tolerance, elem_size

_EXACT = {d: Tolerance(0.0, 0.0, 0.0, "output elements are copies of input elements (or the pad value)")
          for d in ("float32", "float16", "bfloat16")}
_INTERP_TOL = {
    "float32": Tolerance(1e-4, 1e-4, 3e-5, "source coordinates in fp32 are off by ~1e-5 pixels; times "
                         "neighbour differences of a few units"),
    "float16": Tolerance(2e-3, 1e-2, 2e-3, "fp16 output rounding (4.9e-4 relative) of values up to ~5"),
    "bfloat16": Tolerance(1.6e-2, 3e-2, 1e-2, "bf16 output rounding (3.9e-3 relative) of values up to ~5"),
}
_DTYPES = ("float32", "float16", "bfloat16")
_DISTS = ("normal", "uniform")


def _img(n: int, c: int, h: int, w: int, dtype: str, **extra) -> dict:
    return {"n": n, "c": c, "h": h, "w": w, "dtype": dtype, **extra}


def _numel(c) -> int:
    return c["n"] * c["c"] * c["h"] * c["w"]


def _x(case, s):
    return s.tensor((case["n"], case["c"], case["h"], case["w"]), case["dtype"])


# --------------------------------------------------------------------------------------- nearest
def _nearest_ref(x: torch.Tensor, out_h: int, out_w: int) -> torch.Tensor:
    h, w = x.shape[-2:]
    ih = torch.arange(out_h, device=x.device) * h // out_h
    iw = torch.arange(out_w, device=x.device) * w // out_w
    return x[:, :, ih[:, None], iw[None, :]]


register(Task(
    id="spatial/upsample-nearest",
    layout=True,
    entrypoint="upsample_nearest",
    signature="def upsample_nearest(x: torch.Tensor, out_h: int, out_w: int) -> torch.Tensor",
    description="""
Nearest-neighbour resize of a contiguous (N, C, H, W) tensor x (float32, float16 or bfloat16) to
(N, C, out_h, out_w): out[n, c, i, j] = x[n, c, (i * H) // out_h, (j * W) // out_w] with integer
division (the legacy 'nearest' mode of torch.nn.functional.interpolate, computed exactly). out_h and
out_w may be larger or smaller than H and W and need not be multiples of them. Return a new contiguous
tensor of x's dtype.
""",
    reference=_nearest_ref,
    make_inputs=lambda case, s: {"x": _x(case, s), "out_h": case["oh"], "out_w": case["ow"]},
    shapes={
        "dev": [_img(2, 3, 5, 7, "float32", oh=10, ow=14), _img(1, 4, 16, 16, "float16", oh=32, ow=48),
                _img(1, 2, 9, 9, "bfloat16", oh=4, ow=20)],
        "heldout": [_img(1, 1, 1, 1, "float32", oh=3, ow=2), _img(2, 3, 17, 13, "float32", oh=50, ow=7),
                    _img(3, 5, 32, 31, "float16", oh=64, ow=62), _img(1, 3, 8, 8, "bfloat16", oh=24, ow=24)],
        "bench": [_img(16, 64, 256, 256, "float16", oh=512, ow=512),
                  _img(8, 64, 256, 256, "float32", oh=512, ow=512)],
    },
    dtypes=_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: (_numel(c) + c["n"] * c["c"] * c["oh"] * c["ow"]) * elem_size(c["dtype"]),
    distributions=_DISTS,
))


# -------------------------------------------------------------------------------------- bilinear
register(Task(
    id="spatial/upsample-bilinear",
    entrypoint="upsample_bilinear",
    signature="def upsample_bilinear(x: torch.Tensor, out_h: int, out_w: int) -> torch.Tensor",
    description="""
Bilinear resize, as torch.nn.functional.interpolate(x, size=(out_h, out_w), mode="bilinear",
align_corners=False) without antialiasing: x is a contiguous (N, C, H, W) tensor (float32, float16 or
bfloat16). For output row i the source coordinate is y = max((i + 0.5) * H / out_h - 0.5, 0); rows
floor(y) and min(floor(y) + 1, H - 1) are blended with weights 1 - frac(y) and frac(y); columns likewise.
out_h and out_w may be larger or smaller than H and W. Compute in float32; return a new contiguous
(N, C, out_h, out_w) tensor of x's dtype.
""",
    reference=lambda x, out_h, out_w: F.interpolate(x, size=(out_h, out_w), mode="bilinear",
                                                    align_corners=False),
    make_inputs=lambda case, s: {"x": _x(case, s), "out_h": case["oh"], "out_w": case["ow"]},
    shapes={
        "dev": [_img(2, 3, 5, 7, "float32", oh=10, ow=14), _img(1, 4, 16, 16, "float16", oh=32, ow=48),
                _img(1, 2, 9, 9, "bfloat16", oh=4, ow=20)],
        "heldout": [_img(1, 1, 1, 1, "float32", oh=3, ow=2), _img(2, 3, 17, 13, "float32", oh=50, ow=7),
                    _img(3, 5, 32, 31, "float16", oh=64, ow=62), _img(1, 3, 100, 80, "float32", oh=37,
                                                                      ow=41)],
        "bench": [_img(16, 64, 256, 256, "float16", oh=512, ow=512),
                  _img(8, 64, 512, 512, "float32", oh=300, ow=300)],
    },
    dtypes=_DTYPES,
    tolerances=_INTERP_TOL,
    flops=lambda c: 8 * c["n"] * c["c"] * c["oh"] * c["ow"],
    bytes=lambda c: (_numel(c) + c["n"] * c["c"] * c["oh"] * c["ow"]) * elem_size(c["dtype"]),
    distributions=_DISTS,
))


# ---------------------------------------------------------------------------------- pixel shuffle
register(Task(
    id="spatial/pixel-shuffle",
    layout=True,
    entrypoint="pixel_shuffle",
    signature="def pixel_shuffle(x: torch.Tensor, upscale_factor: int) -> torch.Tensor",
    description="""
Pixel shuffle (sub-pixel convolution's rearrangement), as torch.nn.functional.pixel_shuffle(x, r):
x is a contiguous (N, C * r * r, H, W) tensor (float32, float16 or bfloat16) and r = upscale_factor;
out is a new contiguous (N, C, H * r, W * r) tensor with
out[n, c, h * r + i, w * r + j] = x[n, c * r * r + i * r + j, h, w].
""",
    reference=lambda x, upscale_factor: F.pixel_shuffle(x, upscale_factor),
    make_inputs=lambda case, s: {"x": _x(case, s), "upscale_factor": case["r"]},
    shapes={
        "dev": [_img(2, 4, 5, 7, "float32", r=2), _img(1, 27, 16, 16, "float16", r=3),
                _img(1, 16, 8, 8, "bfloat16", r=4)],
        "heldout": [_img(1, 1, 1, 1, "float32", r=1), _img(2, 12, 17, 13, "float32", r=2),
                    _img(3, 18, 31, 33, "float16", r=3), _img(1, 8, 9, 9, "bfloat16", r=2)],
        "bench": [_img(16, 256, 256, 256, "float16", r=2), _img(8, 144, 256, 256, "float32", r=3)],
    },
    dtypes=_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: 2 * _numel(c) * elem_size(c["dtype"]),
    distributions=_DISTS,
))

register(Task(
    id="spatial/pixel-unshuffle",
    layout=True,
    entrypoint="pixel_unshuffle",
    signature="def pixel_unshuffle(x: torch.Tensor, downscale_factor: int) -> torch.Tensor",
    description="""
Pixel unshuffle, the inverse of pixel shuffle, as torch.nn.functional.pixel_unshuffle(x, r): x is a
contiguous (N, C, H, W) tensor (float32, float16 or bfloat16) with H and W divisible by r =
downscale_factor; out is a new contiguous (N, C * r * r, H / r, W / r) tensor with
out[n, c * r * r + i * r + j, h, w] = x[n, c, h * r + i, w * r + j].
""",
    reference=lambda x, downscale_factor: F.pixel_unshuffle(x, downscale_factor),
    make_inputs=lambda case, s: {"x": _x(case, s), "downscale_factor": case["r"]},
    shapes={
        "dev": [_img(2, 3, 10, 14, "float32", r=2), _img(1, 4, 48, 48, "float16", r=3),
                _img(1, 2, 32, 32, "bfloat16", r=4)],
        "heldout": [_img(1, 1, 1, 1, "float32", r=1), _img(2, 3, 34, 26, "float32", r=2),
                    _img(3, 2, 93, 99, "float16", r=3), _img(1, 2, 18, 18, "bfloat16", r=2)],
        "bench": [_img(16, 64, 512, 512, "float16", r=2), _img(8, 16, 768, 768, "float32", r=3)],
    },
    dtypes=_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: 2 * _numel(c) * elem_size(c["dtype"]),
    distributions=_DISTS,
))


# ------------------------------------------------------------------------------------ grid sample
def _grid_inputs(case, s):
    return {"x": _x(case, s),
            "grid": s.uniform((case["n"], case["oh"], case["ow"], 2), -1.1, 1.1, case["dtype"])}


register(Task(
    id="spatial/grid-sample",
    entrypoint="grid_sample",
    signature="def grid_sample(x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor",
    description="""
Bilinear sampling at given coordinates, as torch.nn.functional.grid_sample(x, grid, mode="bilinear",
padding_mode="zeros", align_corners=False): x is a contiguous (N, C, H, W) tensor and grid a contiguous
(N, OH, OW, 2) tensor of the same dtype (float32 or float16) holding normalized (gx, gy) in about
[-1.1, 1.1]. The source position is ix = ((gx + 1) * W - 1) / 2, iy = ((gy + 1) * H - 1) / 2; out[n, c,
i, j] blends the four pixels around (iy, ix) with bilinear weights, a pixel outside the image
counting as 0. Compute in float32; return a new contiguous (N, C, OH, OW) tensor of x's dtype.
""",
    reference=lambda x, grid: F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros",
                                            align_corners=False),
    make_inputs=_grid_inputs,
    shapes={
        "dev": [_img(2, 3, 5, 7, "float32", oh=6, ow=6), _img(1, 4, 16, 16, "float16", oh=20, ow=12),
                _img(1, 8, 9, 9, "float32", oh=9, ow=9)],
        "heldout": [_img(1, 1, 1, 1, "float32", oh=2, ow=3), _img(2, 3, 17, 13, "float32", oh=31, ow=7),
                    _img(3, 5, 32, 31, "float16", oh=16, ow=40)],
        "bench": [_img(16, 64, 256, 256, "float16", oh=256, ow=256),
                  _img(8, 64, 256, 256, "float32", oh=256, ow=256)],
    },
    dtypes=("float32", "float16"),
    tolerances=_INTERP_TOL,
    flops=lambda c: c["n"] * c["oh"] * c["ow"] * (10 + 8 * c["c"]),
    bytes=lambda c: (_numel(c) + c["n"] * c["oh"] * c["ow"] * (2 + c["c"])) * elem_size(c["dtype"]),
    distributions=_DISTS,
))


# -------------------------------------------------------------------------------------------- pad
def _pad_inputs(case, s):
    return {"x": _x(case, s), "pad_left": case["pl"], "pad_right": case["pr"], "pad_top": case["pt"],
            "pad_bottom": case["pb"]}


def _pad_numel(c) -> int:
    return c["n"] * c["c"] * (c["h"] + c["pt"] + c["pb"]) * (c["w"] + c["pl"] + c["pr"])


def _pd(n, c, h, w, pl, pr, pt, pb, dtype, **extra) -> dict:
    return _img(n, c, h, w, dtype, pl=pl, pr=pr, pt=pt, pb=pb, **extra)


register(Task(
    id="spatial/pad-constant",
    layout=True,
    entrypoint="pad_constant",
    signature=(
        "def pad_constant(x: torch.Tensor, pad_left: int, pad_right: int, pad_top: int, pad_bottom: int, "
        "value: float) -> torch.Tensor"
    ),
    description="""
Constant padding of the last two dimensions, as torch.nn.functional.pad(x, (pad_left, pad_right, pad_top,
pad_bottom), mode="constant", value=value): x is a contiguous (N, C, H, W) tensor (float32, float16 or
bfloat16), the pads are non-negative ints (possibly larger than H or W), value a Python float
representable in x's dtype. Return a new contiguous (N, C, H + pad_top + pad_bottom, W + pad_left +
pad_right) tensor: x placed at offset (pad_top, pad_left), every other element equal to value.
""",
    reference=lambda x, pad_left, pad_right, pad_top, pad_bottom, value: F.pad(
        x, (pad_left, pad_right, pad_top, pad_bottom), mode="constant", value=value),
    make_inputs=lambda case, s: {**_pad_inputs(case, s), "value": case["value"]},
    shapes={
        "dev": [_pd(2, 3, 5, 7, 1, 1, 1, 1, "float32", value=0.0),
                _pd(1, 4, 16, 16, 3, 0, 2, 5, "float16", value=-1.5),
                _pd(1, 2, 9, 9, 0, 4, 4, 0, "bfloat16", value=2.0)],
        "heldout": [_pd(1, 1, 1, 1, 2, 3, 4, 5, "float32", value=7.0),
                    _pd(2, 3, 17, 13, 20, 1, 0, 33, "float32",
                                                                           value=-0.25),
                    _pd(3, 5, 32, 31, 1, 2, 3, 4, "float16", value=0.0),
                    _pd(1, 3, 8, 8, 1, 1, 1, 1, "bfloat16", value=1.0)],
        "bench": [_pd(16, 64, 256, 256, 3, 3, 3, 3, "float16", value=0.0),
                  _pd(8, 64, 256, 256, 1, 2, 1, 2, "float32", value=-1.0)],
    },
    dtypes=_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: (_numel(c) + _pad_numel(c)) * elem_size(c["dtype"]),
    distributions=_DISTS,
))

register(Task(
    id="spatial/pad-reflect",
    layout=True,
    entrypoint="pad_reflect",
    signature=(
        "def pad_reflect(x: torch.Tensor, pad_left: int, pad_right: int, pad_top: int, pad_bottom: int"
        ") -> torch.Tensor"
    ),
    description="""
Reflection padding of the last two dimensions, as torch.nn.functional.pad(x, (pad_left, pad_right,
pad_top, pad_bottom), mode="reflect"): x is a contiguous (N, C, H, W) tensor (float32, float16 or
bfloat16); every pad is non-negative and smaller than the dimension it pads (pad_top, pad_bottom < H;
pad_left, pad_right < W). The image is mirrored about its edge rows and columns without repeating them:
output row r reads input row |r - pad_top| reflected, i.e. for i = r - pad_top, i < 0 reads -i and
i >= H reads 2 * (H - 1) - i; columns likewise. Return a new contiguous (N, C, H + pad_top +
pad_bottom, W + pad_left + pad_right) tensor.
""",
    reference=lambda x, pad_left, pad_right, pad_top, pad_bottom: F.pad(
        x, (pad_left, pad_right, pad_top, pad_bottom), mode="reflect"),
    make_inputs=_pad_inputs,
    shapes={
        "dev": [_pd(2, 3, 5, 7, 1, 1, 1, 1, "float32"), _pd(1, 4, 16, 16, 3, 0, 2, 5, "float16"),
                _pd(1, 2, 9, 9, 0, 4, 4, 0, "bfloat16")],
        "heldout": [_pd(1, 1, 2, 2, 1, 1, 1, 1, "float32"), _pd(2, 3, 17, 13, 12, 1, 0, 16, "float32"),
                    _pd(3, 5, 32, 31, 1, 2, 3, 4, "float16"), _pd(1, 3, 8, 8, 1, 1, 1, 1, "bfloat16")],
        "bench": [_pd(16, 64, 256, 256, 3, 3, 3, 3, "float16"), _pd(8, 64, 256, 256, 1, 2, 1, 2, "float32")],
    },
    dtypes=_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: (_numel(c) + _pad_numel(c)) * elem_size(c["dtype"]),
    distributions=_DISTS,
))


# ----------------------------------------------------------------------------------------- im2col
def _conv_out(size: int, k: int, s: int, p: int, d: int) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _im2col_numel(c) -> int:
    oh = _conv_out(c["h"], c["k"], c["s"], c["p"], c["d"])
    ow = _conv_out(c["w"], c["k"], c["s"], c["p"], c["d"])
    return c["n"] * c["c"] * c["k"] * c["k"] * oh * ow


def _u(n, c, h, w, k, s, p, d, dtype) -> dict:
    return _img(n, c, h, w, dtype, k=k, s=s, p=p, d=d)


register(Task(
    id="spatial/im2col",
    layout=True,
    entrypoint="im2col",
    signature=(
        "def im2col(x: torch.Tensor, kernel_size: int, stride: int, padding: int, dilation: int"
        ") -> torch.Tensor"
    ),
    description="""
Patch extraction (im2col), as torch.nn.functional.unfold(x, kernel_size, dilation=dilation,
padding=padding, stride=stride): x is a contiguous (N, C, H, W) tensor (float32, float16 or bfloat16).
With K = kernel_size, OH = (H + 2 * padding - dilation * (K - 1) - 1) // stride + 1 and likewise OW,
out is a new contiguous (N, C * K * K, OH * OW) tensor with
out[n, (c * K + kh) * K + kw, oh * OW + ow] = x[n, c, oh * stride - padding + kh * dilation,
ow * stride - padding + kw * dilation], and 0 where that position falls in the padding.
""",
    reference=lambda x, kernel_size, stride, padding, dilation: F.unfold(
        x, kernel_size, dilation=dilation, padding=padding, stride=stride),
    make_inputs=lambda case, s: {"x": _x(case, s), "kernel_size": case["k"], "stride": case["s"],
                                 "padding": case["p"], "dilation": case["d"]},
    shapes={
        "dev": [_u(2, 3, 5, 7, 3, 1, 1, 1, "float32"), _u(1, 4, 16, 16, 3, 2, 1, 1, "float16"),
                _u(1, 2, 9, 9, 2, 2, 0, 1, "bfloat16")],
        "heldout": [_u(1, 1, 1, 1, 1, 1, 0, 1, "float32"), _u(2, 3, 17, 13, 3, 1, 2, 2, "float32"),
                    _u(3, 5, 32, 31, 5, 3, 2, 1, "float16"), _u(1, 3, 8, 8, 3, 1, 1, 1, "bfloat16")],
        "bench": [_u(64, 128, 56, 56, 3, 1, 1, 1, "float16"), _u(64, 128, 112, 112, 3, 2, 1, 1, "float32")],
    },
    dtypes=_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: (_numel(c) + _im2col_numel(c)) * elem_size(c["dtype"]),
    distributions=_DISTS,
))


# -------------------------------------------------------------------------------- channel shuffle
def _channel_shuffle_ref(x: torch.Tensor, groups: int) -> torch.Tensor:
    n, c, h, w = x.shape
    return x.reshape(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)


register(Task(
    id="spatial/channel-shuffle",
    layout=True,
    entrypoint="channel_shuffle",
    signature="def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor",
    description="""
Channel shuffle (ShuffleNet), as torch.nn.functional.channel_shuffle(x, groups): x is a contiguous
(N, C, H, W) tensor (float32, float16 or bfloat16) with C divisible by groups; with G = groups and
Cg = C / G, out[n, i * G + g] = x[n, g * Cg + i] for g < G and i < Cg (the (G, Cg) channel grid is
transposed). Return a new contiguous (N, C, H, W) tensor.
""",
    reference=_channel_shuffle_ref,
    make_inputs=lambda case, s: {"x": _x(case, s), "groups": case["g"]},
    shapes={
        "dev": [_img(2, 6, 5, 7, "float32", g=2), _img(1, 12, 16, 16, "float16", g=3),
                _img(1, 8, 8, 8, "bfloat16", g=4)],
        "heldout": [_img(1, 2, 1, 1, "float32", g=2), _img(2, 15, 17, 13, "float32", g=5),
                    _img(3, 24, 31, 33, "float16", g=8), _img(1, 4, 9, 9, "bfloat16", g=2)],
        "bench": [_img(128, 232, 56, 56, "float16", g=2), _img(128, 464, 28, 28, "float32", g=4)],
    },
    dtypes=_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: 2 * _numel(c) * elem_size(c["dtype"]),
    distributions=_DISTS,
))


# -------------------------------------------------------------------------------------- NCHW->NHWC
register(Task(
    id="spatial/nchw-to-nhwc",
    layout=True,
    entrypoint="nchw_to_nhwc",
    signature="def nchw_to_nhwc(x: torch.Tensor) -> torch.Tensor",
    description="""
Layout change from channels-first to channels-last, as x.permute(0, 2, 3, 1).contiguous(): x is a
contiguous (N, C, H, W) tensor (float32, float16 or bfloat16); return a new contiguous (N, H, W, C)
tensor with out[n, h, w, c] = x[n, c, h, w]. Per image this is a (C, H * W) transpose: move tiles so
that both reads and writes are coalesced.
""",
    reference=lambda x: x.permute(0, 2, 3, 1).contiguous(),
    make_inputs=lambda case, s: {"x": _x(case, s)},
    shapes={
        "dev": [_img(2, 3, 5, 7, "float32"), _img(1, 64, 16, 16, "float16"), _img(1, 8, 9, 9, "bfloat16")],
        "heldout": [_img(1, 1, 1, 1, "float32"), _img(2, 3, 17, 13, "float32"),
                    _img(3, 65, 31, 33, "float16"),
                    _img(1, 4, 9, 9, "bfloat16")],
        "bench": [_img(64, 256, 56, 56, "float16"), _img(32, 64, 112, 112, "float32")],
    },
    dtypes=_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: 2 * _numel(c) * elem_size(c["dtype"]),
    distributions=_DISTS,
))
