"""A folder as one gzip'd tar, and back, safely.

One job: what travels between a student's server and the exchange service. :func:`pack` makes the
archive of a folder (regular files only, sorted, with fixed times and owners, so the same folder
always gives the same bytes); :func:`unpack` writes one back into a folder, refusing anything a
hostile archive could do: absolute paths, ``..``, links, devices, more members or more bytes than
allowed. :func:`members` lists an archive's files without writing anything.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import zlib
from pathlib import Path, PurePosixPath

__all__ = ["ArchiveError", "MAX_MEMBERS", "members", "pack", "pack_files", "read_member", "unpack"]

#: Files an archive may hold (a notebook, its data files and nbgrader's two text files).
MAX_MEMBERS = 1000


class ArchiveError(ValueError):
    """An archive that is not a folder's safe, bounded gzip'd tar."""


def pack(folder: Path, *, max_bytes: int, skip: tuple[str, ...] = (".ipynb_checkpoints",)) -> bytes:
    """The gzip'd tar of ``folder``'s regular files, paths relative to it, deterministic.

    Symbolic links and anything that is not a regular file or a folder are left out (a student's
    folder may hold a link to another's files); so are the folders named in ``skip``.

    Raises
    ------
    ArchiveError
        If the files add up to more than ``max_bytes`` or number more than :data:`MAX_MEMBERS`.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ArchiveError(f"{folder} is not a folder")
    entries: list[tuple[str, Path]] = []
    total = 0
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(
            d for d in dirs if d not in skip and not os.path.islink(os.path.join(root, d))
        )
        for name in sorted(files):
            path = Path(root, name)
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):
                continue
            total += info.st_size
            if total > max_bytes:
                raise ArchiveError(f"{folder} holds more than {max_bytes} bytes, the limit")
            entries.append((path.relative_to(folder).as_posix(), path))
            if len(entries) > MAX_MEMBERS:
                raise ArchiveError(f"{folder} holds more than {MAX_MEMBERS} files, the limit")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, path in entries:
            data = path.read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def _checked(data: bytes, max_bytes: int) -> list[tuple[str, bytes]]:
    """The archive's files as (relative path, bytes), every rule checked before any is written."""
    if len(data) > max_bytes:
        raise ArchiveError(f"the archive is larger than {max_bytes} bytes, the limit")
    # the files plus tar's headers (a PAX header and a member header of 512 bytes each, per file)
    limit = max_bytes + 4 * 512 * (MAX_MEMBERS + 2)
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip, decompressed no further than limit
    try:
        raw = inflate.decompress(data, limit + 1)
    except zlib.error as exc:
        raise ArchiveError(f"not a gzip'd tar ({exc})") from None
    if len(raw) > limit or inflate.unconsumed_tail:
        raise ArchiveError(f"the archive unpacks to more than {max_bytes} bytes, the limit")
    if not inflate.eof or inflate.unused_data:
        raise ArchiveError("not one whole gzip'd tar")
    files: list[tuple[str, bytes]] = []
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
            for info in tar:
                if len(files) >= MAX_MEMBERS:
                    raise ArchiveError(f"more than {MAX_MEMBERS} files, the limit")
                path = PurePosixPath(info.name)
                if (
                    path.is_absolute()
                    or not path.parts
                    or any(p in ("", ".", "..") for p in path.parts)
                ):
                    raise ArchiveError(f"a path out of the folder: {info.name!r}")
                if info.isdir():
                    continue
                if not info.isreg():
                    raise ArchiveError(f"not a regular file: {info.name!r}")
                total += info.size
                if total > max_bytes:
                    raise ArchiveError(
                        f"the files add up to more than {max_bytes} bytes, the limit"
                    )
                handle = tar.extractfile(info)
                files.append((path.as_posix(), handle.read() if handle else b""))
    except tarfile.TarError as exc:
        raise ArchiveError(f"not a gzip'd tar ({exc})") from None
    names = [name for name, _ in files]
    if len(set(names)) != len(names):
        raise ArchiveError("a file appears twice")
    prefixes = {
        "/".join(PurePosixPath(n).parts[:i])
        for n in names
        for i in range(1, len(PurePosixPath(n).parts))
    }
    if prefixes & set(names):
        raise ArchiveError("a file and a folder share a name")
    return files


def pack_files(files: dict[str, bytes], *, max_bytes: int) -> bytes:
    """The gzip'd tar of ``files`` (relative path -> bytes), as :func:`pack` makes a folder's."""
    total = sum(len(v) for v in files.values())
    if total > max_bytes or len(files) > MAX_MEMBERS:
        raise ArchiveError(f"more than {max_bytes} bytes or {MAX_MEMBERS} files, the limit")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(files[name]))
    data = gzip.compress(raw.getvalue(), mtime=0)
    _checked(data, max_bytes)  # a name that unpack would refuse is refused here
    return data


def read_member(data: bytes, name: str, *, max_bytes: int) -> bytes | None:
    """The bytes of the archive's file ``name`` (a relative path), or None if it has none.

    Raises
    ------
    ArchiveError
        If the archive breaks a rule of :func:`unpack`.
    """
    return dict(_checked(data, max_bytes)).get(name)


def members(data: bytes, *, max_bytes: int) -> list[str]:
    """The relative paths of the archive's files, sorted; nothing is written.

    Raises
    ------
    ArchiveError
        If the archive breaks a rule of :func:`unpack`.
    """
    return sorted(name for name, _ in _checked(data, max_bytes))


def unpack(data: bytes, folder: Path, *, max_bytes: int) -> list[Path]:
    """Write the archive's files under ``folder`` (created if missing); the paths written.

    Every rule is checked before the first file is written: a refused archive writes nothing.
    Existing files are replaced; nothing outside ``folder`` is ever touched (no link is followed:
    a folder on the way that is a link is refused).

    Raises
    ------
    ArchiveError
        For absolute paths, ``..``, links, devices, a file twice, more than :data:`MAX_MEMBERS`
        files or more than ``max_bytes`` bytes, packed or unpacked.
    """
    files = _checked(data, max_bytes)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, content in files:
        target = folder.joinpath(*PurePosixPath(name).parts)
        for parent in reversed(target.relative_to(folder).parents):
            where = folder / parent
            if where.is_symlink():
                raise ArchiveError(f"{where} is a link: not followed")
            where.mkdir(exist_ok=True)
        if target.is_symlink():
            target.unlink()
        tmp = target.with_name(f".{target.name}.part")
        tmp.write_bytes(content)
        os.replace(tmp, target)
        written.append(target)
    return written
