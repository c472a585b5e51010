"""coursetools.grading.sandboxed.limits: one control group per submission, limiting memory (tmpfs too), pids and CPU.

Two kinds of test:

- against a fake cgroup tree in ``tmp_path`` (any machine, any user): which files get which
  values for v2 and v1, how the layout is chosen, the kill loop and the clean-up. The fake kernel
  (:class:`FakeKernel`) creates the interface files a real one would on ``mkdir`` and enforces the
  v2 *no internal process* rule;
- against the real cgroups of this machine (skipped, with the reason, when
  ``cgroup_support() == "none"``, e.g. not root): each asserts what a missing limit would violate.
  Limits are generous and timing tolerances wide so that a loaded machine does not make them fail.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from coursetools.grading.sandboxed import limits
from coursetools.grading.sandboxed.limits import GroupLimits, Layout, SubmissionGroup

MiB = 1024**2
SMALL = GroupLimits(memory_bytes=64 * MiB, max_pids=16, cpus=0.25)

# ------------------------------------------------------------------------------ the fake kernel

V2_FILES = {
    "cgroup.procs": "",
    "cgroup.events": "populated 0\nfrozen 0\n",
    "cgroup.kill": "",
    "cgroup.controllers": "",
    "cgroup.subtree_control": "",
    "memory.max": "max\n",
    "memory.swap.max": "max\n",
    "memory.current": "4096\n",
    "memory.peak": "8192\n",
    "memory.events": "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n",
    "pids.max": "max\n",
    "pids.current": "2\n",
    "pids.peak": "16\n",
    "pids.events": "max 48\n",
    "cpu.max": "max 100000\n",
    "cpu.stat": "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nthrottled_usec 750000\n",
}
V1_FILES = {
    "memory": {
        "memory.limit_in_bytes": "9223372036854771712\n",
        "memory.memsw.limit_in_bytes": "9223372036854771712\n",
        "memory.usage_in_bytes": "4096\n",
        "memory.max_usage_in_bytes": "67108864\n",
        "memory.failcnt": "2\n",
        "memory.memsw.failcnt": "10\n",
        "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
    },
    "pids": {
        "pids.max": "max\n",
        "pids.current": "3\n",
        "pids.peak": "16\n",
        "pids.events": "max 48\n",
    },
    "cpu,cpuacct": {
        "cpu.cfs_period_us": "100000\n",
        "cpu.cfs_quota_us": "-1\n",
        "cpu.stat": "nr_periods 15\nnr_throttled 11\nthrottled_time 1100000000\n",
        "cpuacct.usage": "375000000\n",
    },
}


class FakeKernel:
    """What the kernel does to a cgroup file system, done to a folder (with every write logged).

    ``mkdir`` creates the interface files of the hierarchy the folder is in; ``rmdir`` removes
    them; a v2 ``cgroup.subtree_control`` refuses ``+controller`` with EBUSY in a non-root group
    that has processes, and anything not in ``cgroup.controllers`` with ENOENT.
    """

    def __init__(self, root: Path, v2_mount: Path | None = None):
        self.root = root
        self.v2_mount = v2_mount
        self.writes: list[tuple[str, str]] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeKernel:
        monkeypatch.setattr(limits, "_write", self.write)
        monkeypatch.setattr(limits, "_mkdir", self.mkdir)
        monkeypatch.setattr(limits, "_rmdir", self.rmdir)
        return self

    def relative(self, path: str) -> str:
        return os.path.relpath(path, self.root)

    def write(self, path: str, value: str) -> None:
        if not os.path.isfile(path):  # cgroupfs files cannot be created
            raise FileNotFoundError(errno.ENOENT, "no such control file", path)
        if path.endswith("cgroup.subtree_control"):
            self._check_subtree_control(Path(path).parent, value)
        self.writes.append((self.relative(path), value))
        if path.endswith("cgroup.subtree_control"):
            enabled = set(Path(path).read_text().split()) | {value.lstrip("+")}
            value = " ".join(sorted(enabled))
        Path(path).write_text(value)

    def _check_subtree_control(self, group: Path, value: str) -> None:
        available = (group / "cgroup.controllers").read_text().split()
        if value.lstrip("+") not in available:
            raise FileNotFoundError(errno.ENOENT, "controller not available", str(group))
        if group != self.v2_mount and (group / "cgroup.procs").read_text().strip():
            raise OSError(errno.EBUSY, "no internal processes", str(group))

    def mkdir(self, path: str) -> None:
        os.mkdir(path)
        parent = Path(path).parent
        if self.v2_mount is not None and Path(path).is_relative_to(self.v2_mount):
            enabled = (parent / "cgroup.subtree_control").read_text().split()
            for name, text in V2_FILES.items():
                if name.startswith("cgroup.") or name.split(".")[0] in enabled:
                    Path(path, name).write_text(text)
            Path(path, "cgroup.controllers").write_text(" ".join(enabled))
            return
        hierarchy = Path(path).relative_to(self.root / "cgroup").parts[0]
        for name in ("cgroup.procs", "tasks", *V1_FILES[hierarchy]):
            Path(path, name).write_text(V1_FILES[hierarchy].get(name, ""))

    def rmdir(self, path: str) -> None:
        if Path(path, "cgroup.procs").read_text().strip():
            raise OSError(errno.EBUSY, "cgroup busy", path)
        shutil.rmtree(path)


def fake_v2(tmp_path: Path, own: str = "/", available: str = "cpuset cpu io memory pids") -> Path:
    """A pure v2 tree: the grader in ``own`` (a process in its cgroup.procs)."""
    root = tmp_path / "cgroup"
    group = root / own.strip("/")
    group.mkdir(parents=True)
    for directory in [root, *[p for p in group.parents if root in p.parents], group]:
        (directory / "cgroup.controllers").write_text(available)
        (directory / "cgroup.subtree_control").write_text("")
        (directory / "cgroup.procs").write_text("")
    (group / "cgroup.procs").write_text("4242\n")
    (tmp_path / "proc_cgroup").write_text(f"0::{own}\n")
    return root


def fake_v1(tmp_path: Path) -> Path:
    """A hybrid tree like this VM's, with cpu co-mounted with cpuacct and an empty v2 unified."""
    root = tmp_path / "cgroup"
    own = {"memory": "process_api/abc", "pids": "", "cpu,cpuacct": "grader"}
    for hierarchy, path in own.items():
        directory = root / hierarchy / path
        directory.mkdir(parents=True)
        for name in ("cgroup.procs", "tasks"):
            (root / hierarchy / name).write_text("")
            (directory / name).write_text("4242\n")
    (root / "cpu").symlink_to("cpu,cpuacct")
    (root / "unified").mkdir()
    for name in ("cgroup.controllers", "cgroup.subtree_control", "cgroup.procs"):
        (root / "unified" / name).write_text("")
    (tmp_path / "proc_cgroup").write_text(
        "12:pids:/\n5:cpu,cpuacct:/grader\n4:memory:/process_api/abc\n1:name=systemd:/\n0::/\n"
    )
    return root


def probe_fake(tmp_path: Path, root: Path, **kwargs) -> Layout:
    return limits.probe(
        str(root),
        proc_cgroup=str(tmp_path / "proc_cgroup"),
        mountinfo=str(tmp_path / "no-mountinfo"),
        **kwargs,
    )


def limit_writes(kernel: FakeKernel, group: SubmissionGroup) -> list[tuple[str, str]]:
    """The writes into the group's own directories, with the group's name replaced by LEAF."""
    return [(p.replace(group.name, "LEAF"), v) for p, v in kernel.writes if group.name in p]


# ------------------------------------------------------------------------- fake v2 tree tests


def test_v2_enables_controllers_and_writes_each_limit(tmp_path, monkeypatch):
    root = fake_v2(tmp_path)
    kernel = FakeKernel(tmp_path, v2_mount=root).install(monkeypatch)
    layout = probe_fake(tmp_path, root)
    assert layout.version == "v2" and layout.controllers == ("memory", "pids", "cpu")
    probe_writes = [w for w in kernel.writes if "probe" in w[0]]
    assert kernel.writes[:3] == [
        ("cgroup/cgroup.subtree_control", f"+{c}") for c in limits.CONTROLLERS
    ]
    assert [(Path(p).name, v) for p, v in probe_writes] == [
        ("memory.max", "max"),
        ("pids.max", "max"),
        ("cpu.max", "max"),
    ]
    kernel.writes.clear()

    group = SubmissionGroup.create("ada/01", SMALL, layout=layout)
    assert group is not None and group.version == "v2"
    assert kernel.writes == [
        (f"cgroup/{group.name}/memory.max", str(64 * MiB)),
        (f"cgroup/{group.name}/memory.swap.max", "0"),
        (f"cgroup/{group.name}/pids.max", "16"),
        (f"cgroup/{group.name}/cpu.max", "25000 100000"),
    ]
    assert group.procs_files() == [str(root / group.name / "cgroup.procs")]
    assert (
        group.describe() == "cgroup v2: memory 64 MiB (tmpfs counted, no swap), pids 16, cpu 0.25"
    )
    assert group.usage() == {
        "memory_bytes": 4096,
        "memory_peak_bytes": 8192,
        "pids": 2,
        "pids_peak": 16,
        "memory_limit_hits": 5,
        "oom_kills": 1,
        "pids_limit_hits": 48,
        "cpu_seconds": 2.5,
        "cpu_throttled_seconds": 0.75,
    }
    group.enter(1234)
    assert (root / group.name / "cgroup.procs").read_text() == "1234"


def test_v2_kill_uses_cgroup_kill_and_remove_deletes_the_group(tmp_path, monkeypatch):
    root = fake_v2(tmp_path)
    kernel = FakeKernel(tmp_path, v2_mount=root).install(monkeypatch)
    group = SubmissionGroup.create("ada", SMALL, layout=probe_fake(tmp_path, root))
    procs = root / group.name / "cgroup.procs"
    procs.write_text("101\n102\n")
    kernel.writes.clear()

    def kernel_kills(path, value):  # the kernel empties the group when "1" is written
        kernel.write(path, value)
        if path.endswith("cgroup.kill"):
            procs.write_text("")

    monkeypatch.setattr(limits, "_write", kernel_kills)
    monkeypatch.setattr(limits, "_kill_member", lambda pid, m: pytest.fail("loop not needed"))
    with group:
        pass
    assert kernel.writes == [(f"cgroup/{group.name}/cgroup.kill", "1")]
    assert not (root / group.name).exists() and group.directories == []
    group.remove()  # idempotent
    assert group.usage()["oom_kills"] == 1  # the figures read just before the removal


def test_v2_without_cgroup_kill_loops_over_cgroup_procs(tmp_path, monkeypatch):
    root = fake_v2(tmp_path)
    FakeKernel(tmp_path, v2_mount=root).install(monkeypatch)
    group = SubmissionGroup.create("ada", SMALL, layout=probe_fake(tmp_path, root))
    (root / group.name / "cgroup.kill").unlink()  # a kernel before 5.14
    procs = root / group.name / "cgroup.procs"
    procs.write_text("101\n102\n")
    killed = []

    def kill_member(pid, memberships):  # 101 forks 103 before dying: a second round is needed
        killed.append(pid)
        alive = [p for p in procs.read_text().split() if p != str(pid)]
        procs.write_text("\n".join(alive + (["103"] if pid == 101 else [])))
        assert memberships == (("", f"/{group.name}"),)

    monkeypatch.setattr(limits, "_kill_member", kill_member)
    assert group.kill(timeout=2.0)
    assert sorted(killed) == [101, 102, 103]
    group.remove()
    assert not (root / group.name).exists()


def test_v2_is_unusable_in_a_non_root_cgroup_with_processes_unless_given_a_parent(
    tmp_path, monkeypatch
):
    # The grader runs in /grading/supervisor (systemd's DelegateSubgroup=); /grading has no process.
    root = fake_v2(tmp_path, own="/grading/supervisor")
    (root / "cgroup.subtree_control").write_text("cpu memory pids")
    (root / "grading" / "supervisor" / "cgroup.procs").write_text("4242\n")
    kernel = FakeKernel(tmp_path, v2_mount=root).install(monkeypatch)
    assert probe_fake(tmp_path, root) == limits.NO_CGROUPS  # EBUSY: the grader's own cgroup
    assert not [w for w in kernel.writes if "probe" in w[0]]
    assert SubmissionGroup.create("ada", SMALL, layout=limits.NO_CGROUPS) is None

    layout = probe_fake(tmp_path, root, v2_parent="/grading")
    assert layout.version == "v2" and layout.hierarchies[0].directory == str(root / "grading")
    group = SubmissionGroup.create("ada", SMALL, layout=layout)
    assert group.directories == [str(root / "grading" / group.name)]
    assert (root / "grading" / "supervisor" / "cgroup.procs").read_text() == "4242\n"  # not moved
    group.remove()


def test_v2_partial_support_uses_what_is_there_and_says_what_is_missing(tmp_path, monkeypatch):
    root = fake_v2(tmp_path, available="memory pids io")
    kernel = FakeKernel(tmp_path, v2_mount=root).install(monkeypatch)
    layout = probe_fake(tmp_path, root)
    assert layout.version == "v2" and layout.controllers == ("memory", "pids")
    kernel.writes.clear()
    group = SubmissionGroup.create("ada", SMALL, layout=layout)
    assert [Path(p).name for p, _ in kernel.writes] == ["memory.max", "memory.swap.max", "pids.max"]
    assert group.describe().endswith("pids 16; no cpu controller (not limited by the group)")
    assert not (root / group.name / "cpu.max").exists()
    group.remove()


# ------------------------------------------------------------------------- fake v1 tree tests


def test_v1_creates_one_directory_per_hierarchy_under_the_graders_own_path(tmp_path, monkeypatch):
    root = fake_v1(tmp_path)
    kernel = FakeKernel(tmp_path).install(monkeypatch)
    layout = probe_fake(tmp_path, root)
    assert layout.version == "v1" and layout.controllers == ("memory", "pids", "cpu")
    assert [h.proc_key for h in layout.hierarchies] == ["memory", "pids", "cpu,cpuacct"]
    assert [(Path(p).name, v) for p, v in kernel.writes] == [
        ("memory.limit_in_bytes", "-1"),
        ("pids.max", "max"),
        ("cpu.cfs_quota_us", "-1"),
    ]
    kernel.writes.clear()

    group = SubmissionGroup.create("ada", SMALL, layout=layout)
    assert limit_writes(kernel, group) == [
        ("cgroup/memory/process_api/abc/LEAF/memory.limit_in_bytes", str(64 * MiB)),
        ("cgroup/memory/process_api/abc/LEAF/memory.memsw.limit_in_bytes", str(64 * MiB)),
        ("cgroup/pids/LEAF/pids.max", "16"),
        ("cgroup/cpu,cpuacct/grader/LEAF/cpu.cfs_period_us", "100000"),
        ("cgroup/cpu,cpuacct/grader/LEAF/cpu.cfs_quota_us", "25000"),
    ]
    assert group.procs_files() == [
        str(root / "memory/process_api/abc" / group.name / "cgroup.procs"),
        str(root / "pids" / group.name / "cgroup.procs"),
        str(root / "cpu,cpuacct/grader" / group.name / "cgroup.procs"),
    ]
    assert (
        group.describe() == "cgroup v1: memory 64 MiB (tmpfs counted, no swap), pids 16, cpu 0.25"
    )
    assert group.usage() == {
        "memory_bytes": 4096,
        "memory_peak_bytes": 64 * MiB,
        "memory_limit_hits": 12,
        "oom_kills": 1,
        "pids": 3,
        "pids_peak": 16,
        "pids_limit_hits": 48,
        "cpu_seconds": 0.375,
        "cpu_throttled_seconds": 1.1,
    }
    assert group._memberships() == (
        ("memory", f"/process_api/abc/{group.name}"),
        ("pids", f"/{group.name}"),
        ("cpu,cpuacct", f"/grader/{group.name}"),
    )
    group.enter(1234)
    assert all(Path(p).read_text() == "1234" for p in group.procs_files())
    for procs in group.procs_files():  # the process exited
        Path(procs).write_text("")
    directories = group.directories
    group.remove()
    assert group.directories == [] and not any(os.path.exists(d) for d in directories)
    assert sorted(p.name for p in (root / "pids").iterdir()) == ["cgroup.procs", "tasks"]


def test_v1_without_swap_accounting_sets_swappiness_zero(tmp_path, monkeypatch):
    root = fake_v1(tmp_path)
    monkeypatch.setitem(
        V1_FILES, "memory", {"memory.limit_in_bytes": "0", "memory.swappiness": "60"}
    )
    kernel = FakeKernel(tmp_path).install(monkeypatch)
    group = SubmissionGroup.create("ada", SMALL, layout=probe_fake(tmp_path, root))
    assert limit_writes(kernel, group)[:2] == [
        ("cgroup/memory/process_api/abc/LEAF/memory.limit_in_bytes", str(64 * MiB)),
        ("cgroup/memory/process_api/abc/LEAF/memory.swappiness", "0"),
    ]
    assert group.describe().startswith("cgroup v1: memory 64 MiB (tmpfs counted, swappiness 0)")
    group.remove()
    with pytest.raises(RuntimeError, match="removed"):
        group.enter(1234)


def test_a_failing_limit_removes_what_was_created_and_raises(tmp_path, monkeypatch):
    root = fake_v1(tmp_path)
    kernel = FakeKernel(tmp_path).install(monkeypatch)
    layout = probe_fake(tmp_path, root)

    def refuse_cpu(path, value):
        if path.endswith("cpu.cfs_quota_us"):
            raise OSError(errno.EINVAL, "invalid", path)
        kernel.write(path, value)

    monkeypatch.setattr(limits, "_write", refuse_cpu)
    with pytest.raises(OSError, match="invalid"):
        SubmissionGroup.create("ada", SMALL, layout=layout)
    assert not list(root.glob("**/coursetools-ada-*"))


def test_no_cgroup_file_system_means_none(tmp_path):
    (tmp_path / "proc_cgroup").write_text("0::/\n")
    (tmp_path / "cgroup").mkdir()
    layout = probe_fake(tmp_path, tmp_path / "cgroup")
    assert layout == limits.NO_CGROUPS and layout.controllers == ()
    assert SubmissionGroup.create("ada", layout=layout) is None


def test_not_root_means_none_without_touching_cgroups(monkeypatch):
    monkeypatch.setattr(limits.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(limits, "probe", lambda *a, **k: pytest.fail("probed as a normal user"))
    assert limits.default_layout.__wrapped__() == limits.NO_CGROUPS


def test_mount_of_a_sub_directory_is_resolved_with_mountinfo(tmp_path):
    root = fake_v1(tmp_path)
    info = (
        "35 31 0:32 /process_api {m} rw,relatime - cgroup cgroup rw,memory\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    ).format(m=os.path.realpath(root / "memory"))
    roots = limits._mount_roots(info)
    assert roots[os.path.realpath(root / "memory")] == "/process_api"
    assert limits._directory(str(root / "memory"), "/process_api", roots) == str(root / "memory")
    assert limits._directory(str(root / "memory"), "/elsewhere", roots) is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ada_full/01_randomized_response", "ada_full_01_randomized_response"),
        ("../../etc", "etc"),
        ("..", "submission"),
        ("a\nb\x00c/../d", "a_b_c_.._d"),
        ("", "submission"),
        ("é" * 10, "submission"),
    ],
)
def test_safe_name_is_one_harmless_path_component(name, expected):
    assert limits.safe_name(name) == expected


def test_limits_are_validated():
    for bad in ({"memory_bytes": 0}, {"max_pids": 0}, {"cpus": 0}, {"cpus": float("nan")}):
        with pytest.raises(ValueError):
            GroupLimits(**bad)
    assert GroupLimits(cpus=0.001).cpu_quota_us() == 1000  # the kernel's minimum quota
    assert GroupLimits(cpus=2).cpu_quota_us() == 200_000


# ---------------------------------------------------------------------- this machine's cgroups

real = pytest.mark.skipif(
    limits.cgroup_support() == "none",
    reason="no usable cgroups here (needs root and a writable memory/pids/cpu hierarchy, v1 or v2)",
)


def needs(*controllers: str) -> None:
    missing = set(controllers) - set(limits.default_layout().controllers)
    if missing:
        pytest.skip(f"this machine's cgroups lack the {', '.join(sorted(missing))} controller")


def in_group(group: SubmissionGroup):
    return lambda: group.enter(os.getpid())


def gone(pidfd: int, timeout: float) -> bool:
    """Whether the process behind ``pidfd`` has exited (works for processes that are not ours)."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(timeout * 1000))


@pytest.fixture
def group_factory():
    made: list[SubmissionGroup] = []

    def make(name: str = "test", group_limits: GroupLimits = SMALL) -> SubmissionGroup:
        group = SubmissionGroup.create(name, group_limits)
        assert group is not None
        made.append(group)
        return group

    yield make
    for group in made:
        group.remove()
        assert group.directories == []


TMPFS_WRITER = textwrap.dedent(
    """
    import os, sys
    fd = os.open(os.path.join(sys.argv[1], "blob"), os.O_WRONLY | os.O_CREAT, 0o600)
    block = b"x" * 2**20
    for mib in range(1, int(sys.argv[2]) + 1):
        os.write(fd, block)
        print(mib, flush=True)
    """
)


def write_tmpfs(mountpoint: Path, mib: int, preexec_fn=None) -> tuple[int, int, str]:
    """Mount a tmpfs in a private mount namespace and write ``mib`` MiB into it.

    Returns the exit status, the MiB written before it ended and its stderr.
    """
    mountpoint.mkdir(exist_ok=True)
    script = 'mount -t tmpfs -o size=1g none "$0" && exec "$1" -c "$2" "$0" "$3"'
    command = ["unshare", "-m", "sh", "-c", script, str(mountpoint), sys.executable]
    result = subprocess.run(
        [*command, TMPFS_WRITER, str(mib)],
        preexec_fn=preexec_fn,
        capture_output=True,
        text=True,
        timeout=60,
    )
    written = int(result.stdout.split()[-1]) if result.stdout.split() else 0
    return result.returncode, written, result.stderr


@real
def test_memory_limit_counts_tmpfs_pages(tmp_path, group_factory):
    needs("memory")
    if not shutil.which("unshare"):
        pytest.skip("unshare (util-linux) is needed for a private tmpfs")
    status, written, stderr = write_tmpfs(tmp_path / "free", 128)
    assert (status, written) == (0, 128), stderr  # the same writer outside any group succeeds

    group = group_factory("memory")
    status, written, _ = write_tmpfs(tmp_path / "limited", 128, in_group(group))
    usage = group.usage()
    print(f"64 MiB group: tmpfs writer ended with status {status} after {written} MiB; {usage}")
    assert status != 0 and written < 64
    assert usage.get("memory_peak_bytes", 0) <= 64 * MiB
    if status == -signal.SIGKILL and "oom_kills" in usage:  # killed, not refused: by the OOM killer
        assert usage["oom_kills"] >= 1


@real
def test_pids_limit_caps_the_processes_of_the_whole_group(group_factory):
    needs("pids")
    group = group_factory("pids")
    spawner = textwrap.dedent(
        """
        import os, time
        started = 0
        for _ in range(64):
            try:
                pid = os.fork()
            except OSError:
                continue
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            started += 1
        print(started, flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", spawner],
        preexec_fn=in_group(group),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        started = int(proc.stdout.readline())
        members = group.pids()
        usage = group.usage()
        print(f"max_pids 16: {started} of 64 children started, {len(members)} in group; {usage}")
        assert started <= 15 and len(members) <= 16
        assert usage.get("pids", 0) <= 16 and usage.get("pids_limit_hits", 64 - started) >= 1
        assert group.kill()
        assert proc.wait(timeout=5) == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


BUSY = "import time\nend = time.monotonic() + 1.5\nwhile time.monotonic() < end:\n    pass\n"


def cpu_seconds_of(preexec_fn=None) -> float:
    """CPU time (user + system) of a busy loop that runs for 1.5 s of wall-clock time."""
    proc = subprocess.Popen([sys.executable, "-c", BUSY], preexec_fn=preexec_fn)
    _, status, rusage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0
    return rusage.ru_utime + rusage.ru_stime


@real
def test_cpu_quota_limits_the_share_of_a_busy_loop(group_factory):
    needs("cpu")
    group = group_factory("cpu")
    limited = cpu_seconds_of(in_group(group))
    free = cpu_seconds_of()
    if free < 1.2:  # another job took a core for a moment: one more try
        free = max(free, cpu_seconds_of())
    load = os.getloadavg()
    print(
        f"1.5 s busy loop: {limited:.2f} CPU s with cpus=0.25, {free:.2f} CPU s without; "
        f"load {load}; {group.usage()}"
    )
    assert limited <= 0.25 * 1.5 + 0.6
    if free < 1.2:
        pytest.skip(
            f"machine overloaded: an unlimited busy loop got only {free:.2f} CPU s of 1.5 s "
            f"(load {load[0]:.1f}), too little to compare with; the limited bound held"
        )
    # The same loop outside the group: the group, not the loop, limited it.
    assert free > 2 * limited


DAEMON = textwrap.dedent(
    """
    import os, sys
    read, write = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(write, str(os.getpid()).encode())
            for fd in (0, 1, 2):
                os.close(fd)
            while True:
                pass
        os._exit(0)
    os.wait()
    os.close(write)
    print(os.read(read, 32).decode(), flush=True)
    """
)


@real
def test_kill_reaches_a_setsid_double_forked_daemon(group_factory):
    group = group_factory("kill")
    result = subprocess.run(
        [sys.executable, "-c", DAEMON],
        preexec_fn=in_group(group),
        capture_output=True,
        text=True,
        timeout=30,
    )
    daemon = int(result.stdout)
    pidfd = os.pidfd_open(daemon)
    try:
        assert not gone(pidfd, 0.1) and group.pids() == [daemon]  # it outlived its parents
        assert os.getsid(daemon) != os.getsid(0)  # in a session of its own
        assert group.kill()
        assert gone(pidfd, 5.0)
        assert group.pids() == []
    finally:
        os.close(pidfd)
    directories = group.directories
    group.remove()
    assert group.directories == [] and not any(os.path.exists(d) for d in directories)


@real
def test_remove_kills_running_processes_and_leaves_no_directory(group_factory):
    group = group_factory("remove")
    procs = [
        subprocess.Popen(["sleep", "60"], preexec_fn=in_group(group), start_new_session=True)
        for _ in range(3)
    ]
    directories = group.directories
    assert len(group.pids()) == 3
    group.remove()
    assert [p.wait(timeout=5) for p in procs] == [-signal.SIGKILL] * 3
    assert not any(os.path.exists(d) for d in directories)
    group.remove()  # idempotent


@real
def test_a_group_whose_processes_exited_is_removed_at_once(group_factory):
    group = group_factory("done")
    subprocess.run(["true"], preexec_fn=in_group(group), check=True)
    directories = group.directories
    start = time.monotonic()
    with group:
        pass
    assert time.monotonic() - start < 1.0
    assert not any(os.path.exists(d) for d in directories)


@real
def test_a_hostile_name_stays_inside_the_parent_group(group_factory):
    parents = [h.directory for h in limits.default_layout().hierarchies]
    before = {p: set(os.listdir(p)) for p in parents}
    group = group_factory("../../../evil\n/..\x00/x")
    for parent, directory in zip(parents, group.directories, strict=True):
        assert os.path.dirname(directory) == parent
        assert os.path.basename(directory).startswith("coursetools-evil_.._x-")
        assert set(os.listdir(parent)) - before[parent] == {os.path.basename(directory)}
    for parent in {os.path.dirname(os.path.dirname(p)) for p in parents}:
        assert not os.path.exists(os.path.join(parent, "evil"))


def unified_group() -> SubmissionGroup | None:
    """A v2 group without controllers in this machine's unified hierarchy (None if there is none).

    On a hybrid system like this VM's, the unified hierarchy has no memory, pids or cpu
    controller, but it has ``cgroup.kill`` and ``cgroup.procs``: enough to run the v2 kill and
    clean-up code for real, which the fake tree can only imitate.
    """
    mount = limits._v2_mount(limits.CGROUP_ROOT)
    own = limits._proc_cgroups(limits._read_or("/proc/self/cgroup")).get("")
    if os.geteuid() != 0 or mount is None or own is None:
        return None
    roots = limits._mount_roots(limits._read_or("/proc/self/mountinfo"))
    directory = limits._directory(mount, own, roots)
    if directory is None:
        return None
    layout = Layout("v2", (limits.Hierarchy(directory, own, "", ()),))
    group = SubmissionGroup(layout, SMALL, f"coursetools-test-{os.getpid()}-{time.time_ns()}", ())
    try:
        group._make_directories()
    except OSError:
        return None
    if not os.path.exists(os.path.join(group.directories[0], "cgroup.kill")):
        group.remove()
        return None
    return group


def start_daemon(group: SubmissionGroup) -> int:
    """Run DAEMON in the group; return the pid of the setsid'd grandchild left spinning there."""
    result = subprocess.run(
        [sys.executable, "-c", DAEMON],
        preexec_fn=in_group(group),
        capture_output=True,
        text=True,
        timeout=30,
    )
    return int(result.stdout)


@pytest.mark.parametrize("with_cgroup_kill", [True, False])
def test_v2_kill_and_remove_in_a_real_unified_hierarchy(with_cgroup_kill, monkeypatch):
    group = unified_group()
    if group is None:
        pytest.skip("no writable cgroup v2 hierarchy with cgroup.kill (needs root, Linux 5.14+)")
    write, kill_member = limits._write, limits._kill_member
    kill_writes, signalled = [], []

    def write_or_refuse_cgroup_kill(path, value):
        if path.endswith("cgroup.kill"):
            kill_writes.append(value)
            if not with_cgroup_kill:  # a kernel before 5.14: the loop over cgroup.procs
                raise OSError(errno.EINVAL, "no cgroup.kill", path)
        write(path, value)

    def record_kill_member(pid, memberships):
        signalled.append(pid)
        kill_member(pid, memberships)

    monkeypatch.setattr(limits, "_write", write_or_refuse_cgroup_kill)
    monkeypatch.setattr(limits, "_kill_member", record_kill_member)
    try:
        daemon = start_daemon(group)
        pidfd = os.pidfd_open(daemon)
        try:
            assert group.pids() == [daemon]
            assert group.kill()
            assert gone(pidfd, 5.0) and group.pids() == []
        finally:
            os.close(pidfd)
        assert kill_writes == ["1"]
        # The loop may signal a dying process twice (it is listed until it has exited).
        assert set(signalled) == (set() if with_cgroup_kill else {daemon})
    finally:
        directories = group.directories
        group.remove()
    assert not any(os.path.exists(d) for d in directories)


ORPHAN_MAKER = textwrap.dedent(
    """
    import subprocess, sys
    from coursetools.grading.sandboxed.limits import GroupLimits, SubmissionGroup
    group = SubmissionGroup.create("orphan", GroupLimits())
    sleeper = subprocess.Popen(["sleep", "600"], preexec_fn=lambda: group.enter(0), start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(group.name, sleeper.pid, flush=True)
    # exits without removing its group: a grader killed while it graded
    """
)


@real
def test_the_groups_of_a_grader_that_is_gone_are_swept_and_a_live_graders_are_kept(group_factory):
    """A grader killed mid-grading (the hand-in service restarted with SIGKILL) left its
    submission's kernel running in its group (one was still there 13 minutes after the hub test).
    The sweep the service makes at start stops it and removes the group; a group whose grader is
    alive (this process's) is untouched."""
    mine = group_factory("live")
    out = subprocess.run(
        [sys.executable, "-c", ORPHAN_MAKER], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    name, sleeper = out[0], int(out[1])
    pidfd = os.pidfd_open(sleeper)
    try:
        assert not gone(pidfd, 0.1)  # the orphan's process still runs
        swept = SubmissionGroup.sweep_orphans()
        assert name in swept and mine.name not in swept
        assert gone(pidfd, 10)
        for hierarchy in limits.default_layout().hierarchies:
            assert not os.path.exists(os.path.join(hierarchy.directory, name))
        assert mine.directories and all(os.path.isdir(d) for d in mine.directories)
    finally:
        os.close(pidfd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(sleeper, signal.SIGKILL)


def _files(folder, **contents):
    for name, text in contents.items():
        (folder / name.replace("__", ".")).write_text(text)
    return str(folder)


def test_the_counters_of_both_versions_are_read_from_one_table(tmp_path):
    v2 = tmp_path / "v2"
    v2.mkdir()
    path = _files(
        v2,
        memory__current="1000\n",
        memory__peak="2000\n",
        pids__current="3\n",
        memory__events="low 0\nhigh 0\nmax 2\noom 1\noom_kill 1\n",
        pids__events="max 4\n",
        cpu__stat="usage_usec 1500000\nuser_usec 1\nthrottled_usec 250000\n",
    )
    assert limits._usage(path, "v2") == {
        "memory_bytes": 1000,
        "memory_peak_bytes": 2000,
        "pids": 3,
        "memory_limit_hits": 2,
        "oom_kills": 1,
        "pids_limit_hits": 4,
        "cpu_seconds": 1.5,
        "cpu_throttled_seconds": 0.25,
    }  # pids.peak is missing: left out, not 0
    v1 = tmp_path / "v1"
    v1.mkdir()
    path = _files(
        v1,
        memory__usage_in_bytes="10\n",
        memory__failcnt="1\n",
        memory__memsw__failcnt="2\n",
        memory__oom_control="oom_kill_disable 0\nunder_oom 0\noom_kill 5\n",
        cpuacct__usage="2000000000\n",
        cpu__stat="nr_periods 1\nthrottled_time 500000000\n",
    )
    assert limits._usage(path, "v1") == {
        "memory_bytes": 10,
        "memory_limit_hits": 3,  # the memory and memory+swap counters add up
        "oom_kills": 5,
        "cpu_seconds": 2.0,
        "cpu_throttled_seconds": 0.5,
    }
    assert limits._usage(str(tmp_path / "gone"), "v1") == {}
