"""Limits in the submission's own CPU time: load cannot cost a correct answer points.

Unit tests of :mod:`coursetools.grading.sandboxed.budget` with a meter the test drives, then the
real grader: a correct notebook whose kernel gets a quarter of a core (the control group's quota
standing for a machine four times too busy) keeps its points under a cell limit shorter than the
wall-clock time its cells need, while an endless loop still times out and a sleeping cell is
cut by the backstop without being called starved.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import time

import nbformat
import pytest
from pilot_course import PILOT, fill_answers

from coursetools.authoring.release import notebook_bytes, release_notebook
from coursetools.grading.sandboxed import budget as bud
from coursetools.grading.sandboxed import limits
from coursetools.grading.sandboxed import sandbox as sbx


class FakeCpu:
    def __init__(self):
        self.seconds = 0.0

    def __call__(self):
        return self.seconds


def test_a_cpu_budget_ends_on_cpu_time_not_on_the_wall_clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(bud.time, "monotonic", lambda: now[0])
    cpu = FakeCpu()
    b = bud.Budget(10, bud.CpuMeter(cpu), wall_factor=3)
    assert b.backstop == 3 * 10 + bud.WALL_SLACK
    now[0] += 25  # a busy machine: 25 s of wall time, 9 s of CPU
    cpu.seconds = 9
    assert not b.expired()
    cpu.seconds = 10
    assert b.expired() and b.ended == "cpu" and not b.starved


class FakeWaits:
    """Run-queue seconds per task, as task_waits reads them from /proc."""

    def __init__(self):
        self.tasks = {}

    def __call__(self, pids):
        return dict(self.tasks)


def _metered(monkeypatch, cores=1.0):
    cpu, waits = FakeCpu(), FakeWaits()
    monkeypatch.setattr(bud, "task_waits", waits)
    return cpu, waits, bud.CpuMeter(cpu, lambda: [4242], cores=cores)


def test_starved_is_decided_by_waiting_for_a_cpu_not_by_a_share_of_a_core(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(bud.time, "monotonic", lambda: now[0])
    cpu, waits, meter = _metered(monkeypatch)
    waits.tasks = {(4242, 1): 3.0}  # waited before the budget began: not counted
    sleeping, bursts, starved = (bud.Budget(10, meter) for _ in range(3))
    now[0] = 40.0  # every one cut by the backstop, 3 x 10 + 10 s
    assert sleeping.expired() and sleeping.ended == "wall" and not sleeping.starved  # no CPU, no wait
    # 20 ms of work, 80 ms of sleep: a fifth of a core (the old rule, a tenth of a core, called this
    # starved), and it hardly waited: never starved
    cpu.seconds, waits.tasks = 8.0, {(4242, 1): 3.0 + 1.5}
    assert bursts.expired() and not bursts.starved
    assert bursts.figures() == {"wall": 40.0, "cpu": 8.0, "waited": 1.5}
    # a quarter of a core on a machine four times too busy: it waited 30 of 40 s
    cpu.seconds, waits.tasks = 9.0, {(4242, 1): 3.0 + 30.0, (4242, 2): 0.0}
    assert starved.expired() and starved.starved and starved.figures()["waited"] == 30.0
    # under a hand-in wall below the CPU limit: threads sharing the submission's own one-core quota
    # wait for each other (25 of 40 s), and less than they compute (30 s): not the machine's doing
    handin = bud.Budget(100, meter, wall=40)
    now[0] = 80.0
    cpu.seconds, waits.tasks = 9.0 + 30.0, {(4242, 1): 3.0 + 25.0, (4242, 2): 25.0}
    assert handin.expired() and handin.ended == "wall" and not handin.starved


def test_the_boundary_is_half_the_wall_time_and_a_quota_under_one_core_is_its_own_waiting(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(bud.time, "monotonic", lambda: now[0])
    cpu, waits, meter = _metered(monkeypatch)
    below, at = bud.Budget(10, meter), bud.Budget(10, meter)
    now[0] = 40.0
    cpu.seconds, waits.tasks = 5.0, {(1, 1): 19.99}
    assert below.expired() and not below.starved
    waits.tasks = {(1, 1): 20.0}
    assert at.expired() and at.starved
    # held to a quarter of a core by its own quota: 10 s of CPU means 30 s throttled, its own doing
    cpu, waits, quarter = _metered(monkeypatch, cores=0.25)
    throttled = bud.Budget(10, quarter)
    now[0] = 80.0
    cpu.seconds, waits.tasks = 9.0, {(1, 1): 27.0}
    assert throttled.expired() and not throttled.starved


def test_a_budget_ended_on_cpu_time_is_never_starved_however_long_it_waited(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(bud.time, "monotonic", lambda: now[0])
    cpu, waits, meter = _metered(monkeypatch)
    b = bud.Budget(10, meter)
    now[0], cpu.seconds, waits.tasks = 39.0, 10.0, {(1, 1): 29.0}
    assert b.expired() and b.ended == "cpu" and not b.starved


def test_without_a_wait_meter_nothing_is_starved(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(bud.time, "monotonic", lambda: now[0])
    cpu = FakeCpu()
    b = bud.Budget(10, bud.CpuMeter(cpu))
    now[0], cpu.seconds = 40.0, 9.0
    assert b.expired() and b.ended == "wall" and not b.starved


def test_run_queue_waiting_is_read_from_proc_for_every_thread():
    """A busy loop pinned to one CPU beside another busy loop waits about half the time; one that
    sleeps waits for (almost) nothing."""
    cpu = sorted(os.sched_getaffinity(0))[0]
    spin = f"import os, time\nos.sched_setaffinity(0, {{{cpu}}})\nt = time.monotonic()\nwhile time.monotonic() - t < 30: pass\n"
    hog = subprocess.Popen([sys.executable, "-c", spin])
    busy = subprocess.Popen([sys.executable, "-c", spin])
    asleep = subprocess.Popen([sys.executable, "-c", "import time\ntime.sleep(30)"])
    try:
        time.sleep(0.3)
        start = {p.pid: bud.task_waits([p.pid]) for p in (busy, asleep)}
        time.sleep(2.0)
        waited = {
            pid: max(s - start[pid].get(task, 0.0) for task, s in bud.task_waits([pid]).items())
            for pid in start
        }
    finally:
        for p in (hog, busy, asleep):
            p.kill()
            p.wait()
    # CFS shares one CPU between two busy loops: each waits about 1 s of the 2 (more on a busy machine)
    assert waited[busy.pid] >= 0.5, waited
    assert waited[asleep.pid] < 0.2, waited  # one wake-up at most
    assert bud.task_waits([busy.pid]) == {}  # gone


def test_without_a_meter_the_limit_is_wall_time_and_a_cell_budget_stays_inside_the_notebooks(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(bud.time, "monotonic", lambda: now[0])
    assert not bud.CpuMeter(lambda: None).measurable
    wall = bud.Budget(10, bud.CpuMeter(lambda: None))
    assert wall.backstop == 10 and wall.meter is None
    now[0] = 10
    assert wall.expired() and wall.ended == "wall" and not wall.starved
    cpu = FakeCpu()
    notebook = bud.Budget(100, bud.CpuMeter(cpu), wall=50)
    cpu.seconds = 95
    cell = notebook.within(60)
    assert cell.seconds == pytest.approx(5) and cell.backstop <= 50 - 10  # what is left of both


def test_a_process_cpu_time_is_read_from_proc():
    busy = subprocess.Popen([sys.executable, "-c", "import time\nt=time.process_time()\nwhile time.process_time()-t<0.6: pass\ntime.sleep(30)"])
    try:
        deadline = time.monotonic() + 30
        while bud.process_cpu_seconds(busy.pid) < 0.5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert bud.process_cpu_seconds(busy.pid) >= 0.5
    finally:
        busy.kill()
        busy.wait()
    assert bud.process_cpu_seconds(busy.pid) == 0.0  # gone


# ------------------------------------------------------------------------------ the real grader

SOURCE = nbformat.read(PILOT / "pilot.ipynb", as_version=4)
RELEASE = release_notebook(copy.deepcopy(SOURCE), "pilot")
BURN = "import time\n_t = time.process_time()\nwhile time.process_time() - _t < {seconds}:\n    pass\n"


def _with_first_cell(code: str):
    nb = fill_answers(copy.deepcopy(RELEASE))
    nb.cells.insert(0, nbformat.v4.new_code_cell(code))
    return nb


def _grade(nb, **options):
    from coursetools.grading.classroom.pipeline import hide_list
    from coursetools.grading.grade import grade_job
    from coursetools.grading.job import Job, Options

    opts = Options(hide=hide_list(), **options)
    job = Job("ada", "pilot", nbformat.writes(SOURCE), nbformat.writes(RELEASE), notebook_bytes(nb),
              "pilot.ipynb", options=opts)
    return grade_job(job)


def _cpu_limited_groups() -> bool:
    if sbx.detect()[0] == "rlimit":
        return False
    try:
        group = limits.SubmissionGroup.create("budget-probe", limits.GroupLimits())
    except OSError:
        return False
    if group is None:
        return False
    with group:
        return "cpu" in group.layout.controllers and group.cpu_seconds() is not None


needs_cpu_groups = pytest.mark.skipif(
    not _cpu_limited_groups(), reason="needs control groups that limit and count CPU (root, cgroup cpu+cpuacct)"
)


@needs_cpu_groups
@pytest.mark.parametrize("mode", ["bwrap", "setuid"])
def test_a_correct_notebook_slowed_fourfold_keeps_every_point(mode):
    """A quarter of a core: the first cell's 1.5 s of CPU takes about 6 s of wall time, past the
    3 s cell limit that a wall clock would have enforced; counted in CPU it is well inside."""
    if mode == "bwrap" and sbx.detect()[0] != "bwrap":
        pytest.skip(f"bwrap does not start here ({sbx.detect()[1]})")
    started = time.monotonic()
    result = _grade(_with_first_cell(BURN.format(seconds=1.5)), cell_timeout=3.0, notebook_timeout=120.0,
                    cpus=0.25, sandbox=mode)
    wall = time.monotonic() - started
    assert result["score"] == result["max_score"] == 7, result["problems"]
    assert not any("timed out" in p for p in result["problems"])
    assert result["starved"] is False
    assert wall > 5.0  # the quota really slowed it past the 3 s a wall clock would allow


@needs_cpu_groups
def test_an_endless_loop_still_times_out_and_a_sleeping_cell_is_cut_by_the_backstop_not_starved():
    loop = _grade(_with_first_cell("while True:\n    pass\n"), cell_timeout=2.0, notebook_timeout=120.0)
    assert any("timed out" in p for p in loop["problems"]) and loop["starved"] is False
    assert loop["score"] == 7  # the loop costs that cell only; the kernel is restarted
    started = time.monotonic()
    asleep = _grade(_with_first_cell("import time\ntime.sleep(600)\n"), cell_timeout=2.0, notebook_timeout=120.0,
                    wall_factor=1.0)
    assert any("timed out" in p for p in asleep["problems"]) and asleep["starved"] is False
    assert time.monotonic() - started < 120  # cut at the backstop, 1 x 2 s + 10 s, not 600 s


# --------------------------------------------------- starved: waiting for a CPU, not a share of a core

#: about 20 ms of work then 80 ms of sleep, for ever: a fifth of a core, and (on a quiet core) no wait
BURSTS = ("import time\nwhile True:\n    _t = time.process_time()\n    while time.process_time() - _t < 0.02:\n"
          "        pass\n    time.sleep(0.08)\n")


class _Hogs:
    """``n`` busy loops pinned, with this process, to one CPU: the grader's children (the kernel, the
    trusted runner) inherit the pin, and the kernel's control group gets a share 1/(n+1) of it."""

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        self.before = os.sched_getaffinity(0)
        self.cpu = min(self.before)
        spin = f"import os\nos.sched_setaffinity(0, {{{self.cpu}}})\nwhile True: pass\n"
        # each in a session of its own: Linux's autogroup shares a CPU between sessions first
        self.procs = [subprocess.Popen([sys.executable, "-c", spin], start_new_session=True) for _ in range(self.n)]
        os.sched_setaffinity(0, {self.cpu})
        return self

    def __exit__(self, *exc):
        os.sched_setaffinity(0, self.before)
        for p in self.procs:
            p.kill()
            p.wait()


@needs_cpu_groups
def test_a_notebook_that_computes_in_bursts_between_sleeps_is_cut_by_the_wall_and_not_starved():
    """The review's attack: bursts of 20 ms between 80 ms of sleep used a fifth of a core, over the
    old threshold (a tenth), so every wall cut was "starved" and graded again alone. Its threads
    wait for next to nothing: the wall cut counts (the notebook's first cell times out), once."""
    started = time.monotonic()
    result = _grade(_with_first_cell(BURSTS), cell_timeout=60.0, notebook_timeout=120.0, notebook_wall=8.0)
    cut = result["wall_cut"]
    assert result["starved"] is False, cut
    assert any("timed out" in p for p in result["problems"])
    assert cut["wall"] >= 7.9 and cut["cpu"] >= 0.05 * cut["wall"]  # it did compute, and was cut
    assert cut["waited"] < 0.5 * cut["wall"], cut
    assert time.monotonic() - started < 60  # the hand-in wall held it, not the notebook's limits


@needs_cpu_groups
@pytest.mark.parametrize("mode", ["bwrap", "setuid"])
def test_a_correct_notebook_given_a_quarter_of_a_core_by_real_hogs_is_starved_and_graded_again_in_full(mode):
    """Three busy loops share the kernel's CPU: its first cell's 2.5 s of CPU needs about 10 s of
    wall time, past the 6 s hand-in wall, so the wall clock runs out inside the cell. The cell
    budget knows it (it used to return "timeout" before asking the budget: not starved, and the
    honest student was not graded again); its threads waited most of the wall: starved. Graded
    again on a quiet machine, the same notebook keeps full marks."""
    if mode == "bwrap" and sbx.detect()[0] != "bwrap":
        pytest.skip(f"bwrap does not start here ({sbx.detect()[1]})")
    nb = _with_first_cell(BURN.format(seconds=2.5))
    with _Hogs(3):
        first = _grade(nb, cell_timeout=60.0, notebook_timeout=120.0, notebook_wall=6.0, sandbox=mode)
    cut = first["wall_cut"]
    assert first["starved"] is True, (cut, first["problems"])
    assert cut["waited"] >= 0.5 * cut["wall"] and cut["waited"] >= cut["cpu"], cut
    again = _grade(nb, cell_timeout=60.0, notebook_timeout=120.0, notebook_wall=60.0, sandbox=mode)
    assert again["score"] == again["max_score"] == 7 and again["starved"] is False, again["problems"]
