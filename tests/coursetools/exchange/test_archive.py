"""Tests of coursetools.exchange.archive: a folder as a gzip'd tar, and back, refusing what a
hostile archive or folder could do."""

from __future__ import annotations

import gzip
import io
import os
import tarfile

import pytest

from coursetools.exchange import archive

LIMIT = 64 * 1024


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return gzip.compress(raw.getvalue(), mtime=0)


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def test_a_folder_round_trips_and_packs_to_the_same_bytes_every_time(tmp_path):
    src = tmp_path / "a1"
    (src / "data").mkdir(parents=True)
    (src / "a1.ipynb").write_text('{"cells": []}')
    (src / "data" / "t.csv").write_bytes(b"1,2\n")
    (src / ".ipynb_checkpoints").mkdir()
    (src / ".ipynb_checkpoints" / "a1-checkpoint.ipynb").write_text("old")
    first = archive.pack(src, max_bytes=LIMIT)
    os.utime(src / "a1.ipynb", (1, 1))  # times are not part of the archive
    assert archive.pack(src, max_bytes=LIMIT) == first
    assert archive.members(first, max_bytes=LIMIT) == ["a1.ipynb", "data/t.csv"]
    written = archive.unpack(first, tmp_path / "out", max_bytes=LIMIT)
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in written) == [
        "a1.ipynb",
        "data/t.csv",
    ]
    assert (tmp_path / "out" / "data" / "t.csv").read_bytes() == b"1,2\n"


def test_links_in_a_folder_are_not_followed_into_the_archive(tmp_path):
    secret = tmp_path / "classmate.ipynb"
    secret.write_text("someone else's answers")
    src = tmp_path / "a1"
    src.mkdir()
    (src / "a1.ipynb").write_text("mine")
    (src / "theirs.ipynb").symlink_to(secret)
    (src / "dir").symlink_to(tmp_path)
    assert archive.members(archive.pack(src, max_bytes=LIMIT), max_bytes=LIMIT) == ["a1.ipynb"]


def test_a_folder_over_the_limit_is_refused(tmp_path):
    src = tmp_path / "big"
    src.mkdir()
    (src / "x.bin").write_bytes(b"\0" * (LIMIT + 1))
    with pytest.raises(archive.ArchiveError, match="limit"):
        archive.pack(src, max_bytes=LIMIT)


def _link(name: str, target: str, kind=tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def _device(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.CHRTYPE
    return info, None


@pytest.mark.parametrize(
    ("members", "why"),
    [
        ([_file("/etc/cron.d/x")], "out of the folder"),
        ([_file("../x")], "out of the folder"),
        ([_file("a/../../x")], "out of the folder"),
        ([_link("a1.ipynb", "/etc/passwd")], "not a regular file"),
        ([_link("a1.ipynb", "x", tarfile.LNKTYPE)], "not a regular file"),
        ([_device("dev")], "not a regular file"),
        ([_file("a.ipynb"), _file("a.ipynb")], "twice"),
        ([_file("a"), _file("a/b")], "share a name"),
        ([_file(f"f{i}") for i in range(archive.MAX_MEMBERS + 1)], "more than"),
        ([_file("big", b"\0" * (LIMIT + 1))], "limit"),
    ],
)
def test_a_hostile_archive_is_refused_and_writes_nothing(tmp_path, members, why):
    data = _tar(members)
    with pytest.raises(archive.ArchiveError, match=why):
        archive.unpack(data, tmp_path / "out", max_bytes=LIMIT)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    assert not (tmp_path.parent / "x").exists()


def test_a_decompression_bomb_is_refused_without_inflating_it(tmp_path):
    bomb = gzip.compress(b"\0" * (50 * 1024 * 1024))  # 50 MB of zeros in about 50 kB
    assert len(bomb) < LIMIT
    with pytest.raises(archive.ArchiveError, match="unpacks to more"):
        archive.members(bomb, max_bytes=LIMIT)


@pytest.mark.parametrize(
    "data",
    [b"", b"not gzip", gzip.compress(b"not a tar" * 100, mtime=0), _tar([]) + b"trailing"],
    ids=["empty", "not gzip", "gzip of no tar", "trailing bytes"],
)
def test_what_is_not_one_gzipd_tar_is_refused(data):
    with pytest.raises(archive.ArchiveError):
        archive.members(data, max_bytes=LIMIT)


def test_unpacking_never_writes_through_a_link_already_in_the_folder(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "sub").symlink_to(outside)
    with pytest.raises(archive.ArchiveError, match="link"):
        archive.unpack(_tar([_file("sub/x.ipynb")]), dest, max_bytes=LIMIT)
    assert list(outside.iterdir()) == []
