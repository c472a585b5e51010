"""Length-prefixed JSON frames: how the grader, the trusted runner and its fork server talk.

One job: a message is ``json.dumps`` (no NaN), UTF-8, prefixed by its length as 4 big-endian
bytes. A reader states the largest frame it accepts and checks the length *before* reading the
body, so a peer announcing gigabytes costs nothing (:class:`FrameError`). The three transports
the grader uses each get one reader: a blocking stream (the runner's pipe), an asyncio stream
(the grader's end), and a Unix socket that may carry file descriptors with the first bytes (the
fork server's channel).

A leaf: imports nothing of the course (the trusted runner may import it).
"""

from __future__ import annotations

import json
import os
import socket
import struct

__all__ = ["FrameError", "encode", "read", "read_async", "receive", "send"]

_HEADER = struct.Struct(">I")


class FrameError(EOFError):
    """The channel closed mid-frame, or a frame announced more than the reader accepts."""


def encode(message: dict) -> bytes:
    """The frame of ``message``: its compact JSON (NaN refused), length-prefixed."""
    data = json.dumps(message, allow_nan=False, separators=(",", ":")).encode("utf-8")
    return _HEADER.pack(len(data)) + data


def _size(header: bytes, limit: int, peer: str) -> int:
    if len(header) < _HEADER.size:
        raise FrameError(f"{peer} closed the channel")
    (size,) = _HEADER.unpack(header)
    if size > limit:
        raise FrameError(f"oversized frame from {peer}: {size} bytes announced, at most {limit}")
    return size


def read(stream, limit: int, peer: str = "the peer") -> dict:
    """One message from a blocking binary stream; the size is checked before the body is read."""
    size = _size(stream.read(_HEADER.size), limit, peer)
    data = stream.read(size)
    if len(data) < size:
        raise FrameError(f"{peer} closed the channel mid-frame")
    return json.loads(data)


async def read_async(reader, limit: int, peer: str = "the peer") -> dict:
    """One message from an :class:`asyncio.StreamReader`; the size is checked before the body."""
    import asyncio  # noqa: PLC0415 - only the grader's end is asynchronous

    try:
        size = _size(await reader.readexactly(_HEADER.size), limit, peer)
        return json.loads(await reader.readexactly(size))
    except asyncio.IncompleteReadError:
        raise FrameError(f"{peer} closed the channel") from None


def send(sock: socket.socket, message: dict, fds: tuple[int, ...] = ()) -> None:
    """One message on a Unix socket, with ``fds`` passed along its first bytes."""
    frame = encode(message)
    if fds:
        socket.send_fds(sock, [frame], list(fds))
    else:
        sock.sendall(frame)


def receive(sock: socket.socket, limit: int, max_fds: int = 0, peer: str = "the peer") -> tuple[dict, list[int]]:
    """One message from a Unix socket, and the descriptors that came with its first bytes.

    The length is checked as soon as its 4 bytes are in, before the rest is read; descriptors
    received with a refused or broken frame are closed.
    """
    data, fds, _flags, _addr = socket.recv_fds(sock, _HEADER.size, max_fds)
    try:
        while len(data) < _HEADER.size:
            more = sock.recv(_HEADER.size - len(data))
            if not more:
                break
            data += more
        size = _size(data, limit, peer)
        body = bytearray()
        while len(body) < size:
            more = sock.recv(min(size - len(body), 1 << 20))
            if not more:
                raise FrameError(f"{peer} closed the channel mid-frame")
            body += more
        return json.loads(body), fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
