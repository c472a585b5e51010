"""The grader's one framing (length-prefixed JSON): the size is checked before the body is read."""

from __future__ import annotations

import asyncio
import io
import os
import socket
import struct

import pytest

from coursetools.grading import framing


class HeaderOnly(io.RawIOBase):
    """A stream that announces a huge frame and fails the test if the body is ever read."""

    def __init__(self, size: int) -> None:
        self.header = struct.pack(">I", size)
        self.reads = 0

    def read(self, n=-1):
        self.reads += 1
        if self.reads > 1:
            raise AssertionError("the body of an oversized frame was read")
        return self.header


def test_a_message_goes_through_each_transport():
    message = {"op": "test", "n": [1, 2.5, "x"]}
    assert framing.read(io.BytesIO(framing.encode(message)), 1000) == message

    async def via_asyncio():
        reader = asyncio.StreamReader()
        reader.feed_data(framing.encode(message))
        reader.feed_eof()
        return await framing.read_async(reader, 1000)

    assert asyncio.run(via_asyncio()) == message
    left, right = socket.socketpair(socket.AF_UNIX)
    r, w = os.pipe()
    try:
        framing.send(left, message, (r,))
        got, fds = framing.receive(right, 1000, max_fds=1)
        assert got == message and len(fds) == 1
        os.close(fds[0])
    finally:
        for s in (left, right):
            s.close()
        os.close(r)
        os.close(w)


def test_an_oversized_frame_is_refused_before_its_body_is_read():
    stream = HeaderOnly(2**31)
    with pytest.raises(framing.FrameError, match="oversized frame .* 2147483648 bytes announced, at most 1000"):
        framing.read(stream, 1000)
    assert stream.reads == 1
    left, right = socket.socketpair(socket.AF_UNIX)
    try:
        left.sendall(struct.pack(">I", 2**31))  # and nothing else: reading the body would block
        right.settimeout(5)
        with pytest.raises(framing.FrameError, match="oversized"):
            framing.receive(right, 1 << 16)
    finally:
        left.close()
        right.close()


def test_a_channel_closed_mid_frame_is_an_eof_and_nan_is_never_sent():
    frame = framing.encode({"a": 1})
    with pytest.raises(EOFError, match="mid-frame"):
        framing.read(io.BytesIO(frame[:-1]), 1000)
    with pytest.raises(EOFError, match="closed"):
        framing.read(io.BytesIO(b""), 1000)
    with pytest.raises(ValueError):
        framing.encode({"x": float("nan")})
