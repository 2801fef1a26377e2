"""The worker protocol's encoding: JSON plus raw tensor bytes, never pickle.

The worker runs untrusted code, so nothing it sends may execute on the harness's side when
decoded; a pickle would. Tensors travel in both directions (a call's inputs to the worker, its outputs
back): each is moved to the host only when its bytes are sent, so a request holding several bench-sized
input sets never has all of them on the host at once. A tensor's bytes go straight between its memory
and the socket (a length frame, then the raw bytes): ``Connection.recv_bytes_into`` gathers a large
message in chunks before copying it, ten times slower for a gigabyte, which bench-sized inputs and
outputs cross on every evaluation.
"""

from __future__ import annotations

import json
import math
import os
from multiprocessing.connection import Connection
from typing import Any

import torch

MAX_MESSAGE_BYTES = 1 << 34
"""The most a header or one tensor's bytes may hold."""
CHUNK_BYTES = 1 << 24
"""At most this much per read or write system call (a socket moves less than that per call anyway)."""


class FramingError(ValueError):
    """A message that is not the protocol's: the worker's own code never sends one, so whatever wrote it
    (a candidate writing to the worker's socket) forged it."""


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, str(name), None)
    if not isinstance(dtype, torch.dtype):
        raise FramingError(f"bad dtype in message: {name!r}")
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
        payload = memoryview(host.reshape(-1).view(torch.uint8).numpy()) if host.numel() else memoryview(b"")
        _write_all(conn.fileno(), memoryview(len(payload).to_bytes(8, "little")))
        _write_all(conn.fileno(), payload)
        del host, payload


def _write_all(fd: int, data: memoryview) -> None:
    sent = 0
    while sent < len(data):
        sent += os.write(fd, data[sent:sent + CHUNK_BYTES])


def _read_into(fd: int, buffer: memoryview) -> None:
    got = 0
    while got < len(buffer):
        n = os.readv(fd, [buffer[got:got + CHUNK_BYTES]])
        if n == 0:
            raise EOFError("the channel closed inside a tensor's bytes")
        got += n


def _receive_tensor(conn: Connection, dtype: torch.dtype, shape: list[int]) -> torch.Tensor:
    """The next payload read straight into a tensor of the header's size (no second copy of gigabytes);
    a payload of any other size, or a size past MAX_MESSAGE_BYTES, is refused before anything is allocated."""
    if any(s < 0 for s in shape):
        raise FramingError(f"a tensor of shape {shape}")
    expected = math.prod(shape) * dtype.itemsize
    if expected > MAX_MESSAGE_BYTES:
        raise FramingError(f"a tensor of {expected} bytes, past the protocol's {MAX_MESSAGE_BYTES}")
    frame = bytearray(8)
    _read_into(conn.fileno(), memoryview(frame))
    got = int.from_bytes(frame, "little")
    if got != expected:
        raise FramingError(f"a tensor payload of {got} bytes where its header says {expected}")
    out = torch.empty(shape, dtype=dtype)
    if expected:
        _read_into(conn.fileno(), memoryview(out.reshape(-1).view(torch.uint8).numpy()))
    return out


def recv(conn: Connection) -> Any:
    try:
        header = json.loads(conn.recv_bytes(MAX_MESSAGE_BYTES).decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FramingError(f"a header that is not JSON: {exc}") from exc
    payloads: dict[int, torch.Tensor] = {}

    def decode(value: Any) -> Any:
        if isinstance(value, dict):
            if "__tensor__" in value:
                try:
                    index = int(value["__tensor__"])
                    dtype, shape = _dtype(value["dtype"]), [int(s) for s in value["shape"]]
                except (KeyError, TypeError, ValueError) as exc:
                    raise FramingError(f"a tensor entry {str(value)[:200]}") from exc
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
