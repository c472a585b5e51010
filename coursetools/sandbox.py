"""Run a grading kernel in a sandbox: a throw-away user, resource limits, a private workspace.

This module has one job: build the command line that launches a Jupyter kernel inside a sandbox,
and be that launcher. It uses the standard library only, because the kernel manager runs it as a
script (``python /path/to/sandbox.py ...``) before anything is imported.

Modes, strongest first (:func:`detect_mode` picks the first that works here):

``bwrap``
    Root launches the kernel as a fresh unprivileged uid inside bubblewrap: new user, mount, pid,
    network, ipc and uts namespaces; the file system shows only the system directories, the Python
    installation, the virtualenv and ``dplib`` read-only, and the submission's workspace
    read-write. No network at all (the kernel talks to the grader over Unix sockets in the
    workspace).
``setuid``
    Root without bubblewrap: new mount and network namespaces (``unshare``), the instructor's
    directories (``solutions/``, the submissions, the gradebook...) covered with empty tmpfs,
    a private ``/tmp``, then a fresh unprivileged uid.
``rlimit``
    Not root (e.g. a Dask worker run by a normal user): resource limits and the private workspace
    only. Say so in the report; do not grade a hostile class this way.

Every mode sets the same resource limits in the kernel's process (address space, CPU time, file
size, processes, open files, no core dumps), clears the environment and ``chdir``s into the
workspace.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import functools
import os
import resource
import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass

__all__ = ["Limits", "detect_mode", "kernel_argv", "new_uid", "MODES"]

MODES = ("bwrap", "setuid", "rlimit")

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18


@dataclass(frozen=True)
class Limits:
    """Resource limits applied in the kernel's process (``resource.setrlimit``)."""

    memory_bytes: int = 3 * 1024**3  # RLIMIT_AS: a runaway allocation gets a MemoryError
    cpu_seconds: int = 900  # RLIMIT_CPU: backstop behind the grader's wall-clock timeouts
    file_bytes: int = 64 * 1024**2  # RLIMIT_FSIZE
    processes: int = 512  # RLIMIT_NPROC, per (fresh) uid: stops fork bombs
    open_files: int = 512  # RLIMIT_NOFILE


def new_uid() -> int:
    """A fresh uid for one kernel: no file on the machine belongs to it, no other kernel shares it."""
    return 200_000 + secrets.randbelow(800_000)


@functools.cache
def detect_mode() -> str:
    """The strongest sandbox mode that works on this machine (probed once per process)."""
    if os.geteuid() != 0:
        return "rlimit"
    bwrap = shutil.which("bwrap")
    if bwrap:
        probe = [bwrap, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"]
        try:
            ok = (
                subprocess.run(
                    probe,
                    preexec_fn=functools.partial(_drop_privileges, new_uid()),
                    timeout=30,
                    capture_output=True,
                ).returncode
                == 0
            )
        except (OSError, subprocess.SubprocessError):
            ok = False
        if ok:
            return "bwrap"
    try:
        ok = (
            subprocess.run(
                ["unshare", "-m", "-n", "true"], timeout=30, capture_output=True
            ).returncode
            == 0
        )
    except (OSError, subprocess.SubprocessError):
        ok = False
    return "setuid" if ok else "rlimit"


def kernel_argv(
    workspace: str,
    *,
    mode: str,
    uid: int,
    limits: Limits,
    hide: list[str] = (),  # type: ignore[assignment]
    readonly: list[str] = (),  # type: ignore[assignment]
) -> list[str]:
    """The kernel spec's argv: this launcher, its options, then the real kernel command."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    argv = [
        sys.executable,
        os.path.abspath(__file__),
        "--mode",
        mode,
        "--uid",
        str(uid),
        "--workspace",
        workspace,
        "--memory",
        str(limits.memory_bytes),
        "--cpu",
        str(limits.cpu_seconds),
        "--fsize",
        str(limits.file_bytes),
        "--nproc",
        str(limits.processes),
        "--nofile",
        str(limits.open_files),
    ]
    for path in hide:
        argv += ["--hide", path]
    for path in readonly:
        argv += ["--ro", path]
    return argv + ["--", sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]


def readonly_paths() -> list[str]:
    """What a kernel needs to read: the Python installation, the virtualenv, dplib's source."""
    paths = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}
    try:
        import dplib  # noqa: PLC0415 - only where dplib is installed editable outside the venv

        paths.add(os.path.dirname(os.path.realpath(dplib.__file__)))
    except ImportError:
        pass
    return sorted(paths)


# --------------------------------------------------------------------------- the launcher itself


def _set_limits(args: argparse.Namespace) -> None:
    for name, value in (
        ("RLIMIT_AS", args.memory),
        ("RLIMIT_CPU", args.cpu),
        ("RLIMIT_FSIZE", args.fsize),
        ("RLIMIT_NPROC", args.nproc),
        ("RLIMIT_NOFILE", args.nofile),
        ("RLIMIT_CORE", 0),
    ):
        resource.setrlimit(getattr(resource, name), (value, value))


def _drop_privileges(uid: int) -> None:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    if os.geteuid() == 0 or os.getuid() == 0:  # pragma: no cover - setuid must never fail open
        os._exit(97)


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(
    source: str, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    _check(
        _libc().mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _blocker(path: str) -> str | None:
    """The outermost ancestor of ``path`` that other users cannot enter (e.g. ``/root``)."""
    current = "/"
    for part in os.path.abspath(path).strip("/").split("/"):
        current = os.path.join(current, part)
        try:
            if not os.stat(current).st_mode & 0o001:
                return current
        except OSError:
            return None
    return None


def _cover(directories: list[str], keep: list[str]) -> None:
    """Mount an empty tmpfs on each directory, then bind the ``keep`` paths under it back."""
    fds = {path: os.open(path, os.O_PATH) for path in keep if os.path.exists(path)}
    for directory in directories:
        if os.path.isdir(directory):
            _mount("tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=755")
    for path, fd in fds.items():
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "a").close()
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        os.close(fd)


def _namespace_jail(args: argparse.Namespace) -> None:
    """As root, before dropping privileges: a private mount namespace without network.

    Directories the kernel's uid could not enter (the Python installation under ``/root``) are
    replaced by an empty tmpfs with just the needed paths bound back. In ``setuid`` mode the
    instructor's directories (``--hide``) are covered too and ``/tmp`` is private.
    """
    _check(_libc().unshare(CLONE_NEWNS | CLONE_NEWNET), "unshare")
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    needed = [p for p in args.ro if os.path.exists(p)]
    blockers = sorted({b for b in map(_blocker, needed) if b})
    if blockers:
        _cover(blockers, [p for p in needed if any(p.startswith(b + "/") for b in blockers)])
    if args.mode == "setuid":
        tmp = [d for d in ("/tmp", "/dev/shm", "/var/tmp") if os.path.isdir(d)]
        hidden = [p for p in args.hide if os.path.isdir(p)] + tmp
        inside = [p for p in needed if any(p.startswith(h + "/") for h in hidden)]
        _cover(hidden, [args.workspace, *inside])


def _bwrap_argv(args: argparse.Namespace, command: list[str]) -> list[str]:
    argv = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--die-with-parent", "--new-session"]
    for path in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc"):
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    # The private /tmp comes before the binds: bwrap applies them in order, so a virtualenv or a
    # checkout that lives under /tmp (a CI clone) is bound back on top of the empty tmpfs.
    argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(256 * 1024**2), "--tmpfs", "/tmp"]
    for path in args.ro:
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    argv += ["--bind", args.workspace, args.workspace, "--chdir", args.workspace]
    return argv + ["--", *command]


def _environment(workspace: str) -> dict[str, str]:
    env = {
        "PATH": os.path.dirname(sys.executable) + ":/usr/local/bin:/usr/bin:/bin",
        "HOME": workspace,
        "TMPDIR": workspace,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "IPYTHONDIR": os.path.join(workspace, ".ipython"),
        "JUPYTER_CONFIG_DIR": os.path.join(workspace, ".jupyter"),
        "JUPYTER_DATA_DIR": os.path.join(workspace, ".jupyter-data"),
        "JUPYTER_RUNTIME_DIR": os.path.join(workspace, ".jupyter-runtime"),
        "MPLCONFIGDIR": os.path.join(workspace, ".matplotlib"),
        "MPLBACKEND": "agg",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    return env


def main(argv: list[str] | None = None) -> None:
    """Launcher: ``sandbox.py --mode M --uid U --workspace W [limits] -- kernel argv``."""
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="sandbox")
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--uid", type=int, required=True)
    parser.add_argument("--workspace", required=True)
    for name in ("memory", "cpu", "fsize", "nproc", "nofile"):
        parser.add_argument(f"--{name}", type=int, required=True)
    parser.add_argument("--hide", action="append", default=[])
    parser.add_argument("--ro", action="append", default=[])
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    workspace = args.workspace

    root = os.geteuid() == 0
    if args.mode != "rlimit" and not root:
        raise SystemExit(f"sandbox mode {args.mode} needs root")
    if root:
        for dirpath, dirnames, filenames in os.walk(workspace):
            for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
                os.lchown(name, args.uid, args.uid)
    if root:
        _namespace_jail(args)
    if args.mode == "bwrap":
        command = _bwrap_argv(args, command)
    _set_limits(args)
    os.chdir(workspace)
    os.umask(0o077)
    if root:
        _drop_privileges(args.uid)
    os.execve(command[0], command, _environment(workspace))


if __name__ == "__main__":
    main()
