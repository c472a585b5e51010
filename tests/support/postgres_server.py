"""A PostgreSQL server from Debian's package, started by the test that needs it.

:func:`postgres_cluster` makes a throwaway cluster (``initdb``) in a folder of its own, starts it
on a Unix socket only (no TCP port, nothing reachable from the network), and yields a
:class:`Postgres` that can stop and start it again (the "the database went away" tests). As
root the server runs as the ``postgres`` user (PostgreSQL refuses root); otherwise as the test's
own user. Without the binaries (``/usr/lib/postgresql/<version>/bin``, Debian's ``postgresql``
package) the test is skipped, saying how to install them.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def _binaries() -> Path | None:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[4])
    )
    if found:
        return Path(found[-1]).parent
    which = shutil.which("pg_ctl")
    return Path(which).parent if which else None


class Postgres:
    """A running throwaway cluster: its SQLAlchemy URL, and stop/start."""

    def __init__(self, bin_dir: Path, data: Path, socket_dir: Path, as_user: list[str]) -> None:
        self.bin_dir, self.data, self.socket_dir, self.as_user = bin_dir, data, socket_dir, as_user
        self.url = f"postgresql+psycopg://postgres@/exchange?host={socket_dir}"

    def _run(self, *argv: str) -> None:
        subprocess.run([*self.as_user, *argv], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-c listen_addresses='' -k {self.socket_dir} -c fsync=on"
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(self.data),
            "-w",
            "-o",
            options,
            "-l",
            str(self.data / "log"),
            "start",
        )

    def stop(self) -> None:
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-w", "-m", "fast", "stop")


@contextlib.contextmanager
def postgres_cluster() -> Iterator[Postgres]:
    bin_dir = _binaries()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    pytest.importorskip(
        "psycopg", reason="the PostgreSQL driver: pip install 'psycopg[binary]' (make installs it)"
    )
    root = Path(tempfile.mkdtemp(prefix="pg-"))
    data, sockets = root / "data", root / "run"
    sockets.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(root)
            pytest.skip("running as root and there is no postgres user to run PostgreSQL as")
        for path in (root, sockets):
            os.chown(path, account.pw_uid, account.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    try:
        subprocess.run(
            [
                *as_user,
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        server = Postgres(bin_dir, data, sockets, as_user)
        server.start()
        try:
            subprocess.run(
                [
                    *as_user,
                    str(bin_dir / "createdb"),
                    "-h",
                    str(sockets),
                    "-U",
                    "postgres",
                    "exchange",
                ],
                check=True,
                capture_output=True,
                timeout=60,
            )
            yield server
        finally:
            with contextlib.suppress(subprocess.CalledProcessError):
                server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
