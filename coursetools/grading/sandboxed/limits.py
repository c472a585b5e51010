"""Per-submission resource limits with control groups: one group holds all of a submission's processes.

Resource limits (``setrlimit``) are per process: a submission that forks many ``setsid`` CPU hogs
slows the honest submission graded beside it, its 3 GiB memory limit is per process, and the pages
it writes into a tmpfs are outside any limit. A control group fixes all three: every process a
submission starts (however it daemonises) stays in its group, and the group's limits cover their
sum. This module makes one group per submission with three controllers:

``memory``
    all memory of the group, including tmpfs and shared memory pages (the memory controller
    charges them to the group that first touched them), without swap. Past the limit the kernel's
    OOM killer kills a process *of this group*.
``pids``
    the number of tasks (processes *and threads*) in the group: a fork bomb stops at the limit.
``cpu``
    a bandwidth quota: at most ``cpus`` cores' worth of CPU time per period, however many
    processes share it.

Both cgroup versions are handled. :func:`cgroup_support` says which one this machine offers
(``"v2"``, ``"v1"`` or ``"none"``); :meth:`SubmissionGroup.create` returns ``None`` when there is
none, so callers fall back to rlimits alone. If a version offers only some of the controllers,
those are used (partial support is better than none) and :meth:`SubmissionGroup.describe` names
the ones missing.

This module uses the standard library only and imports nothing else from ``coursetools``: the
sandbox launcher script imports it to put itself into the group (:func:`enter_procs_files`)
before it drops privileges and ``exec``\\ s the kernel.

Where the groups go
-------------------
v2 (unified hierarchy at ``/sys/fs/cgroup``, or ``/sys/fs/cgroup/unified`` on a hybrid system):
under the grader's own cgroup (``0::/path`` in ``/proc/self/cgroup``), whose
``cgroup.subtree_control`` must enable the controllers. The *no internal process* rule allows that
only in the root cgroup or in a cgroup without processes, and the grader itself is never moved;
so on a machine where the grader runs in a non-root cgroup, give :func:`probe` a ``v2_parent``
without processes that is delegated to the grader (e.g. systemd's ``Delegate=yes`` with
``DelegateSubgroup=``), or v2 is unusable and v1 (if mounted) or nothing is used.

v1: one directory per hierarchy (``memory``, ``pids``, ``cpu``, which may be co-mounted, e.g.
``cpu,cpuacct``), each under the grader's own path in that hierarchy.

References
----------
Linux kernel documentation: ``Documentation/admin-guide/cgroup-v2.rst`` ("Controlling
Controllers", "No Internal Process Constraint", "Core Interface Files", "CPU", "Memory", "PID");
``Documentation/admin-guide/cgroup-v1/memory.rst``, ``cgroup-v1/pids.rst``;
``Documentation/scheduler/sched-bwc.rst`` (CFS bandwidth control).
"""

from __future__ import annotations

import errno
import functools
import os
import posixpath
import re
import secrets
import signal
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType

__all__ = [
    "CGROUP_ROOT",
    "CONTROLLERS",
    "GroupLimits",
    "Hierarchy",
    "KILL_TIMEOUT",
    "Layout",
    "NO_CGROUPS",
    "SubmissionGroup",
    "cgroup_support",
    "default_layout",
    "enter_procs_files",
    "probe",
    "safe_name",
]

CGROUP_ROOT = "/sys/fs/cgroup"
CONTROLLERS = ("memory", "pids", "cpu")
#: v1 only: CPU *accounting* in a hierarchy of its own when it is not mounted with cpu (the
#: grader's time limits count a submission's CPU seconds, coursetools.grading.sandboxed.budget)
ACCOUNTING = "cpuacct"
CPU_PERIOD_US = 100_000  # the kernel's default CFS period (cpu.max "max 100000")
CPU_MIN_QUOTA_US = 1_000  # the smallest quota the kernel accepts (sched-bwc.rst)
KILL_TIMEOUT = 5.0  # seconds kill()/remove() keep trying before giving up
NAME_PREFIX = "coursetools-"

#: a group's directory name: the prefix, the safe name, the creating grader's pid, a random suffix
_LEAF = re.compile(re.escape(NAME_PREFIX) + r"[A-Za-z0-9_.-]*-([0-9]+)-[0-9a-f]{8}")


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# The file a probe writes (with a value that changes nothing) to check a controller is usable.
_PROBE_FILES = {
    "v2": {"memory": ("memory.max", "max"), "pids": ("pids.max", "max"), "cpu": ("cpu.max", "max")},
    "v1": {
        "memory": ("memory.limit_in_bytes", "-1"),
        "pids": ("pids.max", "max"),
        "cpu": ("cpu.cfs_quota_us", "-1"),
        ACCOUNTING: ("cpuacct.usage", "0"),  # writing 0 resets the (new, empty) child's counter
    },
}


@dataclass(frozen=True)
class GroupLimits:
    """Limits for one submission's group (all its processes together).

    Attributes
    ----------
    memory_bytes
        Memory of the whole submission, tmpfs and shared memory included; no swap.
    max_pids
        Tasks in the group: processes and threads (the pids controller counts threads).
    cpus
        CPU share: at most this many cores' worth of CPU time, whatever the number of processes.
    """

    memory_bytes: int = 3 * 1024**3
    max_pids: int = 256
    cpus: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.memory_bytes, int) or self.memory_bytes < 1024**2:
            raise ValueError(f"memory_bytes must be an integer >= 1 MiB, got {self.memory_bytes!r}")
        if not isinstance(self.max_pids, int) or self.max_pids < 1:
            raise ValueError(f"max_pids must be an integer >= 1, got {self.max_pids!r}")
        if not self.cpus > 0 or self.cpus == float("inf"):
            raise ValueError(f"cpus must be a finite number > 0, got {self.cpus!r}")

    def cpu_quota_us(self, period_us: int = CPU_PERIOD_US) -> int:
        """The CFS quota per ``period_us`` for ``cpus`` cores (at least the kernel's 1 ms)."""
        return max(CPU_MIN_QUOTA_US, round(self.cpus * period_us))


@dataclass(frozen=True)
class Hierarchy:
    """One cgroup hierarchy in which submission groups are created.

    Attributes
    ----------
    directory
        Where the groups are created (a directory in the mounted hierarchy).
    cgroup_path
        The same place as ``/proc/<pid>/cgroup`` names it (e.g. ``/process_api/abc``).
    proc_key
        The controller field of that hierarchy's line in ``/proc/<pid>/cgroup``: ``""`` for v2,
        ``"memory"`` or ``"cpu,cpuacct"`` for v1.
    controllers
        The controllers (of :data:`CONTROLLERS`) this hierarchy limits.
    """

    directory: str
    cgroup_path: str
    proc_key: str
    controllers: tuple[str, ...]


@dataclass(frozen=True)
class Layout:
    """What :func:`probe` found: the cgroup version to use and its hierarchies."""

    version: str  # "v2", "v1" or "none"
    hierarchies: tuple[Hierarchy, ...] = ()

    @property
    def controllers(self) -> tuple[str, ...]:
        """The usable controllers, in :data:`CONTROLLERS` order."""
        found = {c for h in self.hierarchies for c in h.controllers}
        return tuple(c for c in CONTROLLERS if c in found)


NO_CGROUPS = Layout("none")


# ------------------------------------------------------------------------ file system primitives
# Small functions so that the tests can run everything against a fake tree in a temporary folder.


def _read(path: str) -> str:
    with open(path) as file:
        return file.read()


def _write(path: str, value: str) -> None:
    """Write one value to a control file (never creating it: cgroupfs files are the kernel's)."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _mkdir(path: str) -> None:
    os.mkdir(path, 0o755)


def _rmdir(path: str) -> None:
    os.rmdir(path)


def _read_or(path: str, default: str = "") -> str:
    try:
        return _read(path)
    except OSError:
        return default


def _keyed(text: str) -> dict[str, str]:
    """A flat-keyed control file (``key value`` per line) as a dict."""
    pairs = (line.split(None, 1) for line in text.splitlines())
    return {p[0]: p[1].strip() for p in pairs if len(p) == 2}


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


# ------------------------------------------------------------------------------------ probing


def _proc_cgroups(text: str) -> dict[str, str]:
    """``/proc/<pid>/cgroup`` as ``{controller field: path}`` (``""`` is the v2 line ``0::/p``)."""
    entries = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            entries[parts[1]] = parts[2]
    return entries


def _mount_roots(text: str) -> dict[str, str]:
    """For each cgroup mount in ``/proc/self/mountinfo``: mount point -> root of the mount.

    A hierarchy mounted from a sub-directory (a container's bind mount) shows the grader's path
    in ``/proc/self/cgroup`` relative to the hierarchy's root, not to the mount.
    """
    roots = {}
    for line in text.splitlines():
        mount, _, filesystem = line.partition(" - ")
        fields = mount.split()
        if len(fields) >= 5 and filesystem.split()[:1] in (["cgroup"], ["cgroup2"]):
            roots[fields[4].replace("\\040", " ")] = fields[3].replace("\\040", " ")
    return roots


def _directory(mount: str, cgroup_path: str, mount_roots: dict[str, str]) -> str | None:
    """The directory of ``cgroup_path`` in the hierarchy mounted at ``mount`` (None if hidden)."""
    root = mount_roots.get(os.path.realpath(mount), "/").rstrip("/")
    path = posixpath.normpath(cgroup_path)
    if root and path != root and not path.startswith(root + "/"):
        return None
    relative = path[len(root) :].lstrip("/")
    if relative.split("/")[0] == "..":
        return None
    directory = os.path.join(mount, relative) if relative else mount
    return directory if os.path.isdir(directory) else None


def _probe_child(directory: str, version: str, controllers: Iterable[str]) -> tuple[str, ...]:
    """The controllers whose limit file can be written in a new child of ``directory``."""
    child = os.path.join(directory, f"{NAME_PREFIX}probe-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        _mkdir(child)
    except OSError:
        return ()
    usable = []
    try:
        for controller in controllers:
            name, neutral = _PROBE_FILES[version][controller]
            try:
                _write(os.path.join(child, name), neutral)
            except OSError:
                continue
            usable.append(controller)
    finally:
        try:
            _rmdir(child)
        except OSError:
            pass
    return tuple(usable)


def _v2_mount(root: str) -> str | None:
    for mount in (root, os.path.join(root, "unified")):
        if os.path.isfile(os.path.join(mount, "cgroup.controllers")):
            return mount
    return None


def _probe_v2(
    root: str, entries: dict[str, str], mount_roots: dict[str, str], parent: str | None
) -> Hierarchy | None:
    """The unified hierarchy, if a child of the grader's cgroup (or ``parent``) gets controllers.

    A child has a controller's interface files when its parent lists the controller in
    ``cgroup.subtree_control``; writing ``+memory`` there succeeds only if the controller is in
    the parent's ``cgroup.controllers`` and the parent is the root cgroup or has no processes
    (cgroup-v2.rst, "Top-down Constraint" and "No Internal Process Constraint": EBUSY otherwise).
    Controllers enabled here stay enabled.
    """
    mount = _v2_mount(root)
    cgroup_path = parent if parent is not None else entries.get("")
    if mount is None or cgroup_path is None:
        return None
    directory = _directory(mount, cgroup_path, mount_roots)
    if directory is None:
        return None
    available = _read_or(os.path.join(directory, "cgroup.controllers")).split()
    subtree_control = os.path.join(directory, "cgroup.subtree_control")
    enabled = _read_or(subtree_control).split()
    controllers = []
    for controller in CONTROLLERS:
        if controller not in available:
            continue
        if controller not in enabled:
            try:  # one write per controller: a multi-controller write fails as a whole
                _write(subtree_control, f"+{controller}")
            except OSError:
                continue
        controllers.append(controller)
    usable = _probe_child(directory, "v2", controllers) if controllers else ()
    return Hierarchy(directory, cgroup_path, "", usable) if usable else None


def _probe_v1(
    root: str, entries: dict[str, str], mount_roots: dict[str, str]
) -> tuple[Hierarchy, ...]:
    """The v1 hierarchies carrying memory, pids and cpu in which a child can be limited, and
    cpuacct's when it is a hierarchy of its own (to count the group's CPU time)."""
    wanted: dict[str, list[str]] = {}  # controller field of /proc/self/cgroup -> our controllers
    for controller in (*CONTROLLERS, ACCOUNTING):
        key = next((k for k in entries if k and controller in k.split(",")), None)
        if controller == ACCOUNTING and key is not None and "cpu" in key.split(","):
            continue  # mounted with cpu ("cpu,cpuacct"): the cpu group is counted already
        if key is not None:
            wanted.setdefault(key, []).append(controller)
    found = []
    for key, controllers in wanted.items():
        mounts = [os.path.join(root, key), *(os.path.join(root, c) for c in controllers)]
        mount = next((m for m in mounts if os.path.isfile(os.path.join(m, "tasks"))), None)
        if mount is None:
            continue
        directory = _directory(mount, entries[key], mount_roots)
        usable = _probe_child(directory, "v1", controllers) if directory else ()
        if usable:
            found.append(Hierarchy(directory, entries[key], key, usable))
    return tuple(found)


def probe(
    root: str = CGROUP_ROOT,
    *,
    proc_cgroup: str = "/proc/self/cgroup",
    mountinfo: str = "/proc/self/mountinfo",
    v2_parent: str | None = None,
) -> Layout:
    """Find where this process can create limited groups (never raises for lack of support).

    v2 is preferred when it offers all of memory, pids and cpu; else v1 when it does; else the
    version offering the most controllers (memory first), or ``"none"``.

    Parameters
    ----------
    root
        Where the cgroup file systems are mounted (a fake tree in the tests).
    proc_cgroup, mountinfo
        This process's ``/proc/self/cgroup`` and ``/proc/self/mountinfo``.
    v2_parent
        A v2 cgroup path (as ``/proc/self/cgroup`` writes it) without processes, delegated to the
        grader, to create the groups under instead of the grader's own cgroup.

    Returns
    -------
    Layout
        The version and the hierarchies to create groups in.

    Notes
    -----
    Probing creates and removes one child per hierarchy and, in v2, may enable the controllers in
    the parent's ``cgroup.subtree_control`` (which is required to create limited children at all).
    """
    entries = _proc_cgroups(_read_or(proc_cgroup))
    mount_roots = _mount_roots(_read_or(mountinfo))
    v2 = _probe_v2(root, entries, mount_roots, v2_parent)
    v2_layout = Layout("v2", (v2,)) if v2 else NO_CGROUPS
    if len(v2_layout.controllers) == len(CONTROLLERS):
        return v2_layout
    v1_layout = Layout("v1", _probe_v1(root, entries, mount_roots))
    if len(v1_layout.controllers) == len(CONTROLLERS):
        return v1_layout
    ranked = [
        (len(layout.controllers), "memory" in layout.controllers, layout.version == "v2", layout)
        for layout in (v2_layout, v1_layout)
        if layout.controllers
    ]
    return max(ranked, key=lambda r: r[:3])[3] if ranked else NO_CGROUPS


@functools.cache
def default_layout() -> Layout:
    """This machine's layout (probed once per process); no cgroups unless root on Linux."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return NO_CGROUPS
    try:
        return probe()
    except OSError:  # pragma: no cover - probe already tolerates every expected failure
        return NO_CGROUPS


def cgroup_support() -> str:
    """``"v2"``, ``"v1"`` or ``"none"``: the cgroup version submission groups use here.

    Probed once and cached. ``"none"`` when not root, or when no hierarchy lets this process
    create a child with a limit. With partial support (some controllers only) the version is
    still returned; :attr:`Layout.controllers` of :func:`default_layout` lists the controllers.
    """
    return default_layout().version


# ------------------------------------------------------------------------------ the groups


def safe_name(name: str, max_length: int = 48) -> str:
    """``name`` reduced to ``[A-Za-z0-9_.-]`` (a single harmless path component, never empty).

    Runs of other characters (``/``, newlines, NUL...) become one ``_``; leading and trailing
    ``.``, ``_`` and ``-`` are dropped, so the result is never ``.`` or ``..``.
    """
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)).strip("._-")[:max_length].strip("._-")
    return cleaned or "submission"


def enter_procs_files(procs_files: Iterable[str], pid: int | None = None) -> None:
    """Move process ``pid`` (default: this one) into a group, given its ``cgroup.procs`` files.

    For the sandbox launcher, which gets :meth:`SubmissionGroup.procs_files` on its command line
    and writes its own pid before anything else: its descendants are then born in the group.
    """
    value = str(os.getpid() if pid is None else pid)
    for path in procs_files:
        _write(path, value)


def _is_member(pid: int, memberships: Iterable[tuple[str, str]]) -> bool:
    """Whether ``/proc/<pid>/cgroup`` puts ``pid`` in (or below) one of the groups' paths."""
    try:
        entries = _proc_cgroups(_read(f"/proc/{pid}/cgroup"))
    except OSError:
        return False
    for key, path in memberships:
        current = entries.get(key)
        if current is not None and (current == path or current.startswith(path + "/")):
            return True
    return False


def _kill_member(pid: int, memberships: tuple[tuple[str, str], ...]) -> None:
    """SIGKILL ``pid`` if it is (still) in the group.

    A pid read from ``cgroup.procs`` may exit and be reused by an unrelated process before the
    signal: the process is pinned with a pidfd, its membership checked, and the signal sent
    through the pidfd, which fails (ESRCH) rather than reach a new process with the same pid.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:  # pragma: no cover - kernels before 5.3
        pidfd = None
    try:
        if not _is_member(pid, memberships):
            return
        if pidfd is not None:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        else:  # pragma: no cover
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _format_bytes(value: int) -> str:
    if value >= 1024**3:
        return f"{value / 1024**3:.1f} GiB"
    return f"{value / 1024**2:.0f} MiB"


class SubmissionGroup:
    """All the processes of one submission, with limits on their memory, number and CPU share.

    Create with :meth:`create`; put processes in with :meth:`enter` (or have the launcher write
    its pid into :meth:`procs_files`); :meth:`remove` (or leaving the ``with`` block) kills what
    is left and deletes the group.

    Examples
    --------
    >>> group = SubmissionGroup.create("ada/01", GroupLimits())  # doctest: +SKIP
    >>> with group:  # doctest: +SKIP
    ...     subprocess.run(cmd, preexec_fn=lambda: group.enter(os.getpid()))
    """

    def __init__(
        self,
        layout: Layout,
        limits: GroupLimits,
        name: str,
        directories: tuple[tuple[Hierarchy, str], ...],
    ) -> None:
        self.layout = layout
        self.limits = limits
        self.name = name
        self._directories = directories
        self._swap = "swap not limited"  # what describe() says about swap
        self._last_usage: dict[str, float] = {}

    # -- creation

    @classmethod
    def create(
        cls, name: str, limits: GroupLimits | None = None, *, layout: Layout | None = None
    ) -> SubmissionGroup | None:
        """A new group with ``limits``, or None when this machine has no usable cgroups.

        Parameters
        ----------
        name
            Any text (a student and assignment); it is made safe (:func:`safe_name`) and unique
            (the grader's pid and a random suffix), so it cannot name a directory elsewhere.
        limits
            Default :class:`GroupLimits`.
        layout
            Default :func:`default_layout` (probed once per process).

        Returns
        -------
        SubmissionGroup or None
            None when ``layout`` has no usable controller.

        Raises
        ------
        OSError
            When a hierarchy the probe found usable refuses the group or one of its limits: the
            directories made so far are removed, and a submission never runs with fewer limits
            than :meth:`describe` announces.
        """
        limits = GroupLimits() if limits is None else limits
        layout = default_layout() if layout is None else layout
        if not layout.controllers:
            return None
        for _ in range(8):
            leaf = f"{NAME_PREFIX}{safe_name(name)}-{os.getpid()}-{secrets.token_hex(4)}"
            group = cls(layout, limits, leaf, ())
            try:
                group._make_directories()
            except FileExistsError:
                group.remove()
                continue
            except BaseException:
                group.remove()
                raise
            try:
                group._apply_limits()
            except BaseException:
                group.remove()
                raise
            return group
        raise FileExistsError(errno.EEXIST, "no unique cgroup name after 8 attempts", name)

    @classmethod
    def sweep_orphans(cls, *, layout: Layout | None = None) -> list[str]:
        """Remove the groups whose grader is gone, killing what still runs in them; their names.

        A grader killed while it graded (the hand-in service restarted with SIGKILL, a machine's
        OOM killer) leaves its submission's kernel running in its group. Each group's name holds
        the pid of the grader that made it (:meth:`create`): a group whose grader no longer exists
        is an orphan. A group of a grader still running (another ``make grade`` on the machine) is
        never touched; a pid reused since is taken as alive (the orphan is left, never a live
        group removed). Trouble with one group is skipped, never raised.
        """
        layout = default_layout() if layout is None else layout
        leaves: dict[str, list[tuple[Hierarchy, str]]] = {}
        for hierarchy in layout.hierarchies:
            try:
                names = os.listdir(hierarchy.directory)
            except OSError:
                continue
            for leaf in names:
                match = _LEAF.fullmatch(leaf)
                if match is None or _alive(int(match.group(1))):
                    continue
                path = os.path.join(hierarchy.directory, leaf)
                if os.path.isdir(path):
                    leaves.setdefault(leaf, []).append((hierarchy, path))
        removed = []
        for leaf, directories in sorted(leaves.items()):
            group = cls(layout, GroupLimits(), leaf, tuple(directories))
            try:
                group.remove()
            except OSError:
                continue
            removed.append(leaf)
        return removed

    def _make_directories(self) -> None:
        for hierarchy in self.layout.hierarchies:
            path = os.path.join(hierarchy.directory, self.name)
            if os.path.dirname(path) != hierarchy.directory.rstrip("/"):  # pragma: no cover
                raise ValueError(f"unsafe cgroup name {self.name!r}")
            _mkdir(path)
            self._directories += ((hierarchy, path),)

    def _apply_limits(self) -> None:
        """Write every limit (the files and values are in the module's references).

        v2: ``memory.max``, ``memory.swap.max`` = 0 (when swap is accounted), ``pids.max``,
        ``cpu.max`` = ``"$QUOTA $PERIOD"``. v1: ``memory.limit_in_bytes``, then
        ``memory.memsw.limit_in_bytes`` equal to it (memory + swap: no swap), or if the kernel
        does not account swap ``memory.swappiness`` = 0 (memory.rst: under the group's limit,
        swappiness 0 prevents any swapping); ``pids.max``; ``cpu.cfs_period_us`` then
        ``cpu.cfs_quota_us``.
        """
        limits = self.limits
        for hierarchy, path in self._directories:
            for controller in hierarchy.controllers:
                if self.layout.version == "v2":
                    self._apply_v2(controller, path, limits)
                else:
                    self._apply_v1(controller, path, limits)

    def _apply_v2(self, controller: str, path: str, limits: GroupLimits) -> None:
        if controller == "memory":
            _write(os.path.join(path, "memory.max"), str(limits.memory_bytes))
            swap = os.path.join(path, "memory.swap.max")
            if os.path.exists(swap):
                _write(swap, "0")
                self._swap = "no swap"
        elif controller == "pids":
            _write(os.path.join(path, "pids.max"), str(limits.max_pids))
        elif controller == "cpu":
            _write(os.path.join(path, "cpu.max"), f"{limits.cpu_quota_us()} {CPU_PERIOD_US}")

    def _apply_v1(self, controller: str, path: str, limits: GroupLimits) -> None:
        if controller == "memory":
            memory = str(limits.memory_bytes)
            _write(os.path.join(path, "memory.limit_in_bytes"), memory)
            memsw = os.path.join(path, "memory.memsw.limit_in_bytes")
            swappiness = os.path.join(path, "memory.swappiness")
            if os.path.exists(memsw):  # must be >= limit_in_bytes: written after it
                _write(memsw, memory)
                self._swap = "no swap"
            elif os.path.exists(swappiness):  # global reclaim may still swap a little
                _write(swappiness, "0")
                self._swap = "swappiness 0"
        elif controller == "pids":
            _write(os.path.join(path, "pids.max"), str(limits.max_pids))
        elif controller == "cpu":
            _write(os.path.join(path, "cpu.cfs_period_us"), str(CPU_PERIOD_US))
            _write(os.path.join(path, "cpu.cfs_quota_us"), str(limits.cpu_quota_us()))
        # ACCOUNTING limits nothing: the group is only counted there

    # -- membership

    @property
    def version(self) -> str:
        """``"v2"`` or ``"v1"``."""
        return self.layout.version

    @property
    def directories(self) -> list[str]:
        """The group's directories (one per hierarchy); empty once removed."""
        return [path for _, path in self._directories]

    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files to write a pid into (one per v1 hierarchy, one for v2).

        A process written into all of them is in the group, and so is every process it starts
        afterwards, whatever it does (``setsid``, double fork): membership is inherited on fork
        and only root can move a process out.
        """
        return [os.path.join(path, "cgroup.procs") for path in self.directories]

    def enter(self, pid: int) -> None:
        """Move process ``pid`` into the group (e.g. ``preexec_fn=lambda: g.enter(os.getpid())``).

        Raises
        ------
        RuntimeError
            If the group was removed (a process must never run unlimited by mistake).
        OSError
            If the kernel refuses (e.g. ESRCH: no such process).
        """
        if not self._directories:
            raise RuntimeError(f"cgroup {self.name} was removed")
        enter_procs_files(self.procs_files(), pid)

    def pids(self) -> list[int]:
        """The processes in the group now (tgids, as this process's pid namespace sees them)."""
        found: set[int] = set()
        for procs in self.procs_files():
            found.update(int(p) for p in _read_or(procs).split() if p.isdigit())
        return sorted(found)

    def _memberships(self) -> tuple[tuple[str, str], ...]:
        return tuple(
            (h.proc_key, posixpath.join(h.cgroup_path, self.name)) for h, _ in self._directories
        )

    # -- ending

    def kill(self, timeout: float = KILL_TIMEOUT) -> bool:
        """SIGKILL every process in the group, daemonised descendants included.

        v2 writes ``1`` to ``cgroup.kill`` when the kernel has it (5.14+; it "deals with
        concurrent forks appropriately", cgroup-v2.rst "Core Interface Files"). Otherwise, and in
        v1, it reads ``cgroup.procs`` and kills every process listed, until the group is empty or
        ``timeout`` seconds have passed: a process killed cannot fork any more, and the pids limit
        bounds how many can be born between two rounds.

        Returns
        -------
        bool
            True when the group is empty (exited processes that are not reaped yet are not
            members any more).
        """
        deadline = time.monotonic() + timeout
        if not self._directories:
            return True
        if self.version == "v2":
            kill_file = os.path.join(self._directories[0][1], "cgroup.kill")
            if os.path.exists(kill_file):
                try:
                    _write(kill_file, "1")
                except OSError:
                    pass
                else:
                    if self._wait_empty(min(deadline, time.monotonic() + timeout / 2)):
                        return True
        return self._kill_loop(deadline)

    def _wait_empty(self, deadline: float) -> bool:
        delay = 0.001
        while self.pids():
            if time.monotonic() >= deadline:
                return False
            time.sleep(delay)
            delay = min(2 * delay, 0.05)
        return True

    def _kill_loop(self, deadline: float) -> bool:
        memberships = self._memberships()
        delay = 0.001
        while True:
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                if pid != os.getpid():  # the grader never enters a group; never kill it
                    _kill_member(pid, memberships)
            if time.monotonic() >= deadline:
                return not self.pids()
            time.sleep(delay)
            delay = min(2 * delay, 0.05)

    def remove(self, timeout: float = KILL_TIMEOUT) -> None:
        """Kill the group's processes, then delete every directory created (idempotent).

        A group whose processes have all exited is removed at once. A process that does not die
        within ``timeout`` (stuck in an uninterruptible sleep with its SIGKILL pending) is moved
        to the parent group, so that no directory is left behind; it dies when it wakes.
        :meth:`usage` keeps returning the figures read just before the removal.

        Raises
        ------
        OSError
            If a directory still cannot be removed after that.
        """
        if not self._directories:
            return
        if self.pids() and not self.kill(timeout):
            self._evict()
        self._last_usage = self.usage()
        deadline = time.monotonic() + timeout
        left = []
        for hierarchy, path in reversed(self._directories):
            if not self._rmdir(path, deadline):
                left.append((hierarchy, path))
        self._directories = tuple(reversed(left))
        if left:
            raise OSError(errno.EBUSY, "cgroup still busy after SIGKILL", left[0][1])

    def _evict(self) -> None:
        for hierarchy, path in self._directories:
            for pid in _read_or(os.path.join(path, "cgroup.procs")).split():
                try:
                    _write(os.path.join(hierarchy.directory, "cgroup.procs"), pid)
                except OSError:
                    pass

    @staticmethod
    def _rmdir(path: str, deadline: float) -> bool:
        """Remove one group directory, retrying while the kernel still reports it busy."""
        delay = 0.001
        while True:
            try:
                _rmdir(path)
                return True
            except FileNotFoundError:
                return True
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() >= deadline:
                    return False
            time.sleep(delay)
            delay = min(2 * delay, 0.05)

    def __enter__(self) -> SubmissionGroup:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.remove()

    # -- reporting

    def usage(self) -> dict[str, float]:
        """What the kernel reports, for the figures it has (keys absent otherwise).

        ``memory_bytes`` and ``memory_peak_bytes`` (v1 ``memory.usage_in_bytes``,
        ``memory.max_usage_in_bytes``; v2 ``memory.current``, ``memory.peak``, 5.19+),
        ``memory_limit_hits`` (v1 ``memory.failcnt``; v2 ``max`` in ``memory.events``),
        ``oom_kills`` (``oom_kill`` in v1 ``memory.oom_control``, 4.13+, or v2
        ``memory.events``), ``pids``, ``pids_peak`` and ``pids_limit_hits`` (``pids.current``,
        ``pids.peak``, ``max`` in ``pids.events``), ``cpu_seconds`` (v2 ``usage_usec`` in
        ``cpu.stat``; v1 ``cpuacct.usage`` when cpuacct is co-mounted with cpu) and
        ``cpu_throttled_seconds`` (``throttled_usec``, v1 ``throttled_time`` in ``cpu.stat``).
        After :meth:`remove`, the figures read just before. ``oom_kills`` is the reliable sign
        that the memory limit was hit: v1's ``failcnt`` counters stayed at 0 on Linux 6.18 while
        the OOM killer acted.
        """
        if not self._directories:
            return dict(self._last_usage)
        result: dict[str, float] = {}
        for _, path in self._directories:
            result.update(_usage(path, self.version))
        return result

    def cpu_seconds(self) -> float | None:
        """CPU seconds the group's processes used so far (None where the kernel does not count
        them: v1 without ``cpuacct``); one small file read, cheap enough to poll."""
        for _, path in self._directories:
            if self.version == "v2":
                stat_text = _keyed(_read_or(os.path.join(path, "cpu.stat")))
                if "usage_usec" in stat_text:
                    return int(stat_text["usage_usec"]) / 1e6
            else:
                value = _int(_read_or(os.path.join(path, "cpuacct.usage"), "-"))
                if value is not None:
                    return value / 1e9
        return None

    def describe(self) -> str:
        """One line for the grading report, naming the controllers that are missing.

        E.g. ``cgroup v1: memory 3.0 GiB (tmpfs counted, no swap), pids 256, cpu 1``, or with
        partial support ``cgroup v2: memory 3.0 GiB (tmpfs counted, no swap), pids 256; no cpu
        controller (not limited by the group)``.
        """
        controllers = self.layout.controllers
        parts = []
        if "memory" in controllers:
            memory = _format_bytes(self.limits.memory_bytes)
            parts.append(f"memory {memory} (tmpfs counted, {self._swap})")
        if "pids" in controllers:
            parts.append(f"pids {self.limits.max_pids}")
        if "cpu" in controllers:
            parts.append(f"cpu {self.limits.cpus:g}")
        text = f"cgroup {self.version}: " + ", ".join(parts)
        missing = [c for c in CONTROLLERS if c not in controllers]
        if missing:
            text += f"; no {' or '.join(missing)} controller (not limited by the group)"
        return text

    def __repr__(self) -> str:
        return f"<SubmissionGroup {self.name} {self.describe()!r}>"


#: (result key, file, field of a keyed file or None for a file holding one number, divisor) of
#: each control-group version, in the order the result lists them.
_COUNTERS = {
    "v2": (
        ("memory_bytes", "memory.current", None, 1),
        ("memory_peak_bytes", "memory.peak", None, 1),
        ("pids", "pids.current", None, 1),
        ("pids_peak", "pids.peak", None, 1),
        ("memory_limit_hits", "memory.events", "max", 1),
        ("oom_kills", "memory.events", "oom_kill", 1),
        ("pids_limit_hits", "pids.events", "max", 1),
        ("cpu_seconds", "cpu.stat", "usage_usec", 1e6),
        ("cpu_throttled_seconds", "cpu.stat", "throttled_usec", 1e6),
    ),
    "v1": (
        ("memory_bytes", "memory.usage_in_bytes", None, 1),
        ("memory_peak_bytes", "memory.max_usage_in_bytes", None, 1),
        ("memory_limit_hits", "memory.failcnt", None, 1),
        ("pids", "pids.current", None, 1),
        ("pids_peak", "pids.peak", None, 1),
        ("oom_kills", "memory.oom_control", "oom_kill", 1),
        ("pids_limit_hits", "pids.events", "max", 1),
        ("cpu_seconds", "cpuacct.usage", None, 1e9),
        ("cpu_throttled_seconds", "cpu.stat", "throttled_time", 1e9),
    ),
}


def _usage(path: str, version: str) -> dict[str, float]:
    """The group's counters (:data:`_COUNTERS`), each file read once; a missing one is left out."""
    result: dict[str, float] = {}
    texts: dict[str, str] = {}
    for key, name, field, divisor in _COUNTERS[version]:
        if name not in texts:
            texts[name] = _read_or(os.path.join(path, name), "-" if field is None else "")
        if field is None:
            value = _int(texts[name])
        else:
            found = _keyed(texts[name]).get(field)
            value = None if found is None else int(found)
        if value is not None:
            result[key] = value if divisor == 1 else value / divisor
    if version == "v1":
        # A charge over the limit fails on exactly one counter: memory+swap first when it is limited.
        memsw_failures = _int(_read_or(os.path.join(path, "memory.memsw.failcnt"), "-"))
        if memsw_failures is not None and "memory_limit_hits" in result:
            result["memory_limit_hits"] += memsw_failures
    return result
