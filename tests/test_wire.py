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
    sender.send_bytes((20).to_bytes(8, "little"))  # 20 bytes promised where 16 are due
    sender.send_bytes(b"\0" * 20)
    with pytest.raises(ValueError, match="20 bytes where its header says 16"):
        wire.recv(receiver)


def test_a_length_frame_that_is_not_one_is_refused(channel):
    sender, receiver = channel
    sender.send_bytes(b'{"x": {"__tensor__": 0, "dtype": "float32", "shape": [4]}}')
    sender.send_bytes(b"\0" * 16)  # the bytes without their length frame
    with pytest.raises(OSError):
        wire.recv(receiver)


def test_a_channel_closed_inside_a_tensor_s_bytes_ends_the_read(channel):
    sender, receiver = channel
    sender.send_bytes(b'{"x": {"__tensor__": 0, "dtype": "float32", "shape": [1024]}}')
    sender.send_bytes((4096).to_bytes(8, "little"))
    wire._write_all(sender.fileno(), memoryview(b"\0" * 100))
    sender.close()
    with pytest.raises(EOFError):
        wire.recv(receiver)
