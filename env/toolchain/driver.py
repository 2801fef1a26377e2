"""The CUDA driver through cuda-python: is there a GPU, errors as LaunchError, the current context.

Imported lazily by callers: on a machine without a GPU nothing here touches the driver, so modules
still compile and launches are still checked.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from warpgym.env.toolchain.errors import LaunchError


@cache
def gpu_available() -> bool:
    """Whether PyTorch sees a CUDA GPU (asked once: the answer does not change in a process)."""
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def check(result: Any, what: str) -> Any:
    """The value of a cuda-python driver call, or a LaunchError with the driver's name for the error."""
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        from cuda.bindings import driver as cu

        _, name = cu.cuGetErrorName(err)
        _, text = cu.cuGetErrorString(err)
        name = name.decode() if isinstance(name, bytes) else name
        text = text.decode() if isinstance(text, bytes) else text
        raise LaunchError(f"{what} failed: {name}: {text}")
    if isinstance(result, tuple):
        return result[1] if len(result) == 2 else result[1:]
    return None


_initialised: list[bool] = []


def init() -> None:
    """cuInit, once per process."""
    if _initialised:
        return
    from cuda.bindings import driver as cu

    check(cu.cuInit(0), "cuInit")
    _initialised.append(True)


def current_context() -> Any:
    """The context PyTorch uses for its current device (the device's primary context)."""
    import torch
    from cuda.bindings import driver as cu

    init()
    torch.cuda.init()
    dev_index = torch.cuda.current_device()
    ctx = check(cu.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if ctx is None or int(ctx) == 0:
        dev = check(cu.cuDeviceGet(dev_index), "cuDeviceGet")
        ctx = check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx
