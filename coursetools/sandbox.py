"""Run a grading kernel in a sandbox: a throw-away user, resource limits, a private workspace.

This module has one job: build the command line that launches a Jupyter kernel inside a sandbox,
and be that launcher. It uses the standard library only, because the kernel manager runs it as a
script (``python /path/to/sandbox.py ...``) before anything is imported.

Modes, strongest first (:func:`detect_mode` picks the first that works here):

``bwrap``
    Root prepares a private mount namespace without network (below), then runs the kernel as a
    fresh unprivileged uid inside bubblewrap: new user, mount, pid, ipc and uts namespaces; the
    file system shows only the system directories, the Python installation, the virtualenv and
    dplib read-only, a read-only ``/dev``, a private size-limited ``/tmp``, the run directory
    (connection file and sockets) and the workspace.
``setuid``
    Root without bubblewrap: the same private mount namespace, the instructor's directories
    (``solutions/``, the submissions, the gradebook...) and the shared temporary directories
    covered with empty tmpfs, then a fresh unprivileged uid.
``rlimit``
    Not root (e.g. a Dask worker run by a normal user): resource limits only. Say so in the
    report; do not grade a hostile class this way.

As root, before dropping privileges, the launcher joins the submission's control group
(``--cgroup-procs``), mounts a size-limited tmpfs as the workspace and copies the stage into it
(the student's notebook and the assignment's data, nothing else), binds the grading copy of dplib
over the real one (``--overlay``, bans by absence), and gives the kernel its own copy of the
connection file in a run directory root made outside the workspace, which then becomes sticky so
the kernel can add sockets but never replace root's files. Every mode sets the same rlimits in the
kernel's process (address space, CPU time, file size, processes, open files, no core dumps),
clears the environment and ``chdir``s into the workspace.
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
KERNEL_CONNECTION = "kernel.json"  # the kernel's copy of the connection file, in the run directory

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_REMOUNT = 32


@dataclass(frozen=True)
class Limits:
    """Resource limits applied in the kernel's process (``resource.setrlimit``)."""

    memory_bytes: int = 3 * 1024**3  # RLIMIT_AS: a runaway allocation gets a MemoryError
    cpu_seconds: int = 900  # RLIMIT_CPU: backstop behind the grader's wall-clock timeouts
    file_bytes: int = 64 * 1024**2  # RLIMIT_FSIZE
    processes: int = 512  # RLIMIT_NPROC, per (fresh) uid: stops fork bombs
    open_files: int = 512  # RLIMIT_NOFILE
    workspace_bytes: int = 128 * 1024**2  # the workspace: a tmpfs of this size
    tmp_bytes: int = 256 * 1024**2  # the kernel's private /tmp


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
    *,
    mode: str,
    uid: int,
    limits: Limits,
    run_dir: str,
    workspace: str,
    stage: str | None = None,
    config: str | None = None,
    overlays: list[tuple[str, str]] = (),  # type: ignore[assignment]
    cgroup_procs: list[str] = (),  # type: ignore[assignment]
    hide: list[str] = (),  # type: ignore[assignment]
    readonly: list[str] = (),  # type: ignore[assignment]
) -> list[str]:
    """The kernel's command line: this launcher, its options, then the real kernel command.

    ``run_dir`` is a fresh directory made by the grader (root) outside the workspace, holding
    jupyter_client's ``connection.json``; the kernel reads a copy the launcher makes and binds its
    sockets there. ``stage`` holds the files copied into the new workspace (the notebook and the
    assignment's data). ``overlays`` are ``(source, target)`` directories bound read-only over
    ``target`` (the grading copy of dplib over the real one). ``cgroup_procs`` are the
    ``cgroup.procs`` files the launcher joins before anything else.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    argv = [
        sys.executable,
        "-I",
        os.path.abspath(__file__),
        "--mode",
        mode,
        "--uid",
        str(uid),
        "--run-dir",
        run_dir,
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
        "--workspace-bytes",
        str(limits.workspace_bytes),
        "--tmp-bytes",
        str(limits.tmp_bytes),
    ]
    if stage:
        argv += ["--stage", stage]
    if config:
        argv += ["--config", config]
    for source, target in overlays:
        argv += ["--overlay", f"{source}:{target}"]
    for path in cgroup_procs:
        argv += ["--cgroup-procs", path]
    for path in hide:
        argv += ["--hide", path]
    for path in readonly:
        argv += ["--ro", path]
    kernel = [
        sys.executable,
        "-I",  # isolated: no cwd or PYTHON* variables, no user site: nothing handed in is imported
        "-B",
        "-m",
        "ipykernel_launcher",
        "-f",
        os.path.join(run_dir, KERNEL_CONNECTION),
        "--HistoryManager.enabled=False",
        "--InteractiveShellApp.exec_files=[]",
        "--InteractiveShellApp.exec_lines=[]",
    ]
    return argv + ["--", *kernel]


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
    replaced by an empty tmpfs with just the needed paths bound back.
    """
    _check(_libc().unshare(CLONE_NEWNS | CLONE_NEWNET), "unshare")
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    needed = [p for p in args.ro if os.path.exists(p)]
    blockers = sorted({b for b in map(_blocker, needed) if b})
    if blockers:
        _cover(blockers, [p for p in needed if any(p.startswith(b + "/") for b in blockers)])


def _overlay(pairs: list[str]) -> None:
    """Bind each ``source:target`` directory read-only over ``target`` (the grading dplib)."""
    for pair in pairs:
        source, _, target = pair.partition(":")
        if os.path.isdir(source) and os.path.isdir(target):
            _mount(source, target, None, MS_BIND | MS_REC)
            _mount("none", target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC)


def _workspace(args: argparse.Namespace) -> None:
    """A fresh tmpfs of a fixed size as the workspace, filled from the stage, owned by the uid.

    Mounted in the kernel's private mount namespace: nobody outside ever sees what the student
    writes there, and it vanishes with the kernel. Root writes into it only before any student
    process exists.
    """
    _mount(
        "tmpfs",
        args.workspace,
        "tmpfs",
        MS_NOSUID | MS_NODEV,
        f"size={args.workspace_bytes},mode=700,nr_inodes=4096",
    )
    _copy_stage(args)
    for dirpath, dirnames, filenames in os.walk(args.workspace):
        for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
            os.lchown(name, args.uid, args.uid)


def _copy_stage(args: argparse.Namespace) -> None:
    if not args.stage:
        return
    for dirpath, _dirnames, filenames in os.walk(args.stage):
        relative = os.path.relpath(dirpath, args.stage)
        target_dir = os.path.normpath(os.path.join(args.workspace, relative))
        os.makedirs(target_dir, exist_ok=True)
        for name in filenames:
            source = os.path.join(dirpath, name)
            if os.path.islink(source) or not os.path.isfile(source):
                continue
            shutil.copyfile(source, os.path.join(target_dir, name), follow_symlinks=False)


def _connection(args: argparse.Namespace) -> None:
    """The kernel's copy of the connection file, then a run directory it can bind sockets in.

    The run directory was made by the grader and holds root's ``connection.json`` (mode 0600).
    The copy is created exclusively (no link is followed) and given to the kernel's uid; then the
    directory becomes sticky and world-writable, so the kernel can create its sockets but cannot
    remove or replace anything root put there.
    """
    with open(os.path.join(args.run_dir, "connection.json"), "rb") as fh:
        data = fh.read(1 << 16)
    path = os.path.join(args.run_dir, KERNEL_CONNECTION)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o400)
    try:
        os.write(fd, data)
        if os.geteuid() == 0:
            os.fchown(fd, args.uid, args.uid)
    finally:
        os.close(fd)
    if os.geteuid() == 0:
        os.chmod(args.run_dir, 0o1733)


def _hide_for_setuid(args: argparse.Namespace) -> None:
    """setuid mode: cover the instructor's directories and the shared temporary directories."""
    tmp = [d for d in ("/tmp", "/dev/shm", "/var/tmp") if os.path.isdir(d)]
    hidden = [p for p in args.hide if os.path.isdir(p)] + tmp
    keep = [args.workspace, args.run_dir, *([args.config] if args.config else [])]
    needed = [p for p in args.ro if os.path.exists(p)]
    inside = [p for p in needed + keep if any(p.startswith(h + "/") for h in hidden)]
    _cover(hidden, inside)


def _bwrap_argv(args: argparse.Namespace, command: list[str]) -> list[str]:
    argv = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--die-with-parent", "--new-session"]
    for path in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc"):
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    # /dev holds only the standard devices and is read-only (no tmpfs to fill outside the
    # limits); the private /tmp comes before the binds: bwrap applies them in order, so a
    # virtualenv or a checkout that lives under /tmp (a CI clone) is bound back on top of it.
    argv += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
    argv += ["--size", str(args.tmp_bytes), "--tmpfs", "/tmp"]
    for path in args.ro:
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    if args.config:
        argv += ["--ro-bind", args.config, args.config]
    argv += ["--bind", args.run_dir, args.run_dir]
    argv += ["--bind", args.workspace, args.workspace, "--chdir", args.workspace]
    return argv + ["--", *command]


def _environment(args: argparse.Namespace) -> dict[str, str]:
    workspace, config = args.workspace, args.config or args.workspace
    tmp = "/tmp" if args.mode == "bwrap" else workspace
    return {
        "PATH": os.path.dirname(sys.executable) + ":/usr/local/bin:/usr/bin:/bin",
        "HOME": workspace,
        "TMPDIR": tmp,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        # Read-only and empty: no profile, startup file or extension a student could plant.
        "IPYTHONDIR": os.path.join(config, "ipython"),
        "JUPYTER_CONFIG_DIR": os.path.join(config, "jupyter"),
        "JUPYTER_DATA_DIR": os.path.join(config, "jupyter-data"),
        "JUPYTER_RUNTIME_DIR": args.run_dir,
        "MPLCONFIGDIR": os.path.join(tmp, ".matplotlib"),
        "MPLBACKEND": "agg",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def _join_cgroups(paths: list[str]) -> None:
    for path in paths:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)


def main(argv: list[str] | None = None) -> None:
    """Launcher: ``sandbox.py --mode M --uid U --run-dir D --workspace W [...] -- kernel argv``."""
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="sandbox")
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--uid", type=int, required=True)
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--stage", default=None)
    parser.add_argument("--config", default=None)
    for name in ("memory", "cpu", "fsize", "nproc", "nofile", "workspace-bytes", "tmp-bytes"):
        parser.add_argument(f"--{name}", type=int, required=True)
    for name in ("hide", "ro", "overlay", "cgroup-procs"):
        parser.add_argument(f"--{name}", action="append", default=[])
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]

    root = os.geteuid() == 0
    if args.mode != "rlimit" and not root:
        raise SystemExit(f"sandbox mode {args.mode} needs root")
    _join_cgroups(args.cgroup_procs)
    if root:
        _namespace_jail(args)
        _overlay(args.overlay)
        _workspace(args)
    else:
        _copy_stage(args)
    _connection(args)
    if root and args.mode == "setuid":
        _hide_for_setuid(args)
    if args.mode == "bwrap":
        command = _bwrap_argv(args, command)
    _set_limits(args)
    os.chdir(args.workspace)
    os.umask(0o077)
    if root:
        _drop_privileges(args.uid)
    os.execve(command[0], command, _environment(args))


if __name__ == "__main__":
    main()
