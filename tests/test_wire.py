"""The worker protocol's encoding: tensors cross whole and exact, and a reply whose bytes lie is refused."""

from __future__ import annotations

import socket
import threading
from multiprocessing.connection import Connection

import pytest
import torch
from warpgym.env.protocol import wire


@pytest.fixture
def channel():
    a, b = socket.socketpair()
    left, right = Connection(a.detach()), Connection(b.detach())
    yield left, right
    left.close()
    right.close()


def _send_in_thread(conn, obj):
    thread = threading.Thread(target=wire.send, args=(conn, obj), daemon=True)
    thread.start()
    return thread


def test_tensors_of_every_kind_cross_bit_for_bit(channel):
    sender, receiver = channel
    big = torch.randn(3 * wire.CHUNK_BYTES // 4 + 7)  # several chunks, not a whole number of them
    message = {"op": "run", "inputs": {
        "big": big, "half": torch.randn(5, 3).half(), "mask": torch.rand(17) > 0.5,
        "ints": torch.arange(-4, 9, dtype=torch.int64), "empty": torch.empty(0, 4),
        "strided": torch.randn(6, 8).t(), "scalar": torch.tensor(2.5), "nan": float("nan"),
        "dtype": torch.bfloat16, "nested": [torch.ones(2), (3, "x")]}}
    thread = _send_in_thread(sender, message)
    got = wire.recv(receiver)["inputs"]
    thread.join(10)
    for name in ("big", "half", "mask", "ints", "empty", "strided", "scalar"):
        sent = message["inputs"][name]
        assert got[name].dtype == sent.dtype and got[name].shape == sent.shape, name
        assert torch.equal(got[name], sent), name
    assert got["nan"] != got["nan"] and got["dtype"] is torch.bfloat16
    assert torch.equal(got["nested"][0], torch.ones(2)) and got["nested"][1] == [3, "x"]


def test_a_payload_of_another_size_than_its_header_says_is_refused(channel):
    sender, receiver = channel
    sender.send_bytes(b'{"x": {"__tensor__": 0, "dtype": "float32", "shape": [4]}}')
    promised = (20).to_bytes(8, "little") + b"\0" * 20  # 20 bytes where 16 are due
    wire._write_all(sender.fileno(), memoryview(promised))
    with pytest.raises(wire.FramingError, match="20 bytes where its header says 16"):
        wire.recv(receiver)


def test_bytes_framed_the_way_a_plain_connection_frames_them_are_refused(channel):
    """What a candidate writing to the worker's socket with ``Connection.send_bytes`` framing sends."""
    sender, receiver = channel
    sender.send_bytes(b'{"x": {"__tensor__": 0, "dtype": "float32", "shape": [4]}}')
    sender.send_bytes(b"\0" * 16)
    with pytest.raises(wire.FramingError):
        wire.recv(receiver)


@pytest.mark.parametrize("header", [
    b'{"x": {"__tensor__": 0, "dtype": "float32", "shape": [1099511627776]}}',  # 4 TiB, nothing allocated
    b'{"x": {"__tensor__": 0, "dtype": "float32", "shape": [-4]}}',
    b'{"x": {"__tensor__": 0, "dtype": "not_a_dtype", "shape": [4]}}',
    b'{"x": {"__tensor__": "zero", "dtype": "float32", "shape": [4]}}',
    b'{"x": {"__tensor__": 0, "dtype": "float32"}}',
    b"\xff\xfe not json",
])
def test_a_header_out_of_the_protocol_is_refused_before_anything_is_read_or_allocated(channel, header):
    sender, receiver = channel
    sender.send_bytes(header)
    with pytest.raises(wire.FramingError):
        wire.recv(receiver)


def test_a_channel_closed_inside_a_tensor_s_bytes_ends_the_read(channel):
    sender, receiver = channel
    sender.send_bytes(b'{"x": {"__tensor__": 0, "dtype": "float32", "shape": [1024]}}')
    wire._write_all(sender.fileno(), memoryview((4096).to_bytes(8, "little") + b"\0" * 100))
    sender.close()
    with pytest.raises(EOFError):
        wire.recv(receiver)
