"""The worker protocol's encoding: JSON plus raw tensor bytes, never pickle.

The worker runs untrusted code, so nothing it sends may execute on the harness's side when
decoded; a pickle would. Tensors travel in both directions (a call's inputs to the worker, its outputs
back): each is moved to the host only when its bytes are sent, so a request holding several bench-sized
input sets never has all of them on the host at once.
"""

from __future__ import annotations

import json
import math
from multiprocessing import BufferTooShort
from multiprocessing.connection import Connection
from typing import Any

import torch

MAX_MESSAGE_BYTES = 1 << 34


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"bad dtype in message: {name!r}")
    return dtype


def send(conn: Connection, obj: Any) -> None:
    tensors: list[torch.Tensor] = []

    def encode(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            tensors.append(value)
            return {"__tensor__": len(tensors) - 1, "dtype": str(value.dtype).removeprefix("torch."),
                    "shape": list(value.shape)}
        if isinstance(value, torch.dtype):
            return {"__dtype__": str(value).removeprefix("torch.")}
        if isinstance(value, dict):
            return {str(k): encode(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [encode(v) for v in value]
        if isinstance(value, float) and not math.isfinite(value):
            return {"__float__": repr(value)}
        return value

    header = json.dumps(encode(obj))
    conn.send_bytes(header.encode())
    for t in tensors:
        host = t.detach().to("cpu").contiguous()
        conn.send_bytes(memoryview(host.reshape(-1).view(torch.uint8).numpy()) if host.numel() else b"")
        del host


def _receive_tensor(conn: Connection, dtype: torch.dtype, shape: list[int]) -> torch.Tensor:
    """The next payload read straight into a tensor of the header's size (no second copy of gigabytes);
    a payload of any other size is refused."""
    out = torch.empty(shape, dtype=dtype)
    expected = out.numel() * out.element_size()
    if expected == 0:
        if conn.recv_bytes(MAX_MESSAGE_BYTES):
            raise ValueError("a tensor payload larger than its header says")
        return out
    buffer = out.reshape(-1).view(torch.uint8).numpy()
    try:
        got = conn.recv_bytes_into(buffer)
    except BufferTooShort as exc:
        raise ValueError("a tensor payload larger than its header says") from exc
    if got != expected:
        raise ValueError(f"a tensor payload of {got} bytes where its header says {expected}")
    return out


def recv(conn: Connection) -> Any:
    header = json.loads(conn.recv_bytes(MAX_MESSAGE_BYTES).decode())
    payloads: dict[int, torch.Tensor] = {}

    def decode(value: Any) -> Any:
        if isinstance(value, dict):
            if "__tensor__" in value:
                index = int(value["__tensor__"])
                dtype, shape = _dtype(value["dtype"]), [int(s) for s in value["shape"]]
                if index not in payloads:
                    payloads[index] = _receive_tensor(conn, dtype, shape)
                return payloads[index]
            if "__float__" in value:
                return float(value["__float__"])
            if "__dtype__" in value:
                return _dtype(str(value["__dtype__"]))
            return {k: decode(v) for k, v in value.items()}
        if isinstance(value, list):
            return [decode(v) for v in value]
        return value

    return decode(header)
