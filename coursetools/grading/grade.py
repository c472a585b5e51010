"""Grade one submission: run the student's cells in a sandboxed kernel, the tests in a trusted process.

One job, done by :func:`grade_job`, a plain picklable function of a :class:`Job` (bytes in, a
result dict out) so that any executor can run it: this process, a process pool, or a Dask
cluster on other machines. Nothing here reads ``solutions/`` or writes a grade: the caller puts
the source notebook's text in the job and writes the results.

Steps, each robust to a hostile submission:

1. **Parse** the submission; invalid JSON or a missing notebook scores 0 with the reason.
2. **Merge** (:func:`merge`): every cell that carries nbgrader metadata in the *source* is found in
   the submission by ``grade_id``; test cells and read-only cells come from the source, answer
   cells keep the student's text with the source's metadata; deleted cells are put back,
   duplicates are not graded. The merged notebook stays in this process's memory.
3. **Run the student's cells** (answers, read-only cells, cells the student added; never a test
   cell) in order in a sandboxed kernel (:mod:`coursetools.grading.sandboxed.kernel`, :mod:`coursetools.grading.sandboxed.sandbox`):
   a fresh uid, a private tmpfs workspace holding only the student's notebook and the
   assignment's data files, read-only configuration, the grading copy of dplib without the
   functions the exercises ask the student to write (:mod:`coursetools.grading.sandboxed.bans`), and one control
   group per submission (:mod:`coursetools.grading.sandboxed.limits`). A cell that hangs or kills the kernel fails;
   the kernel is restarted, the cells before it are replayed, and grading goes on.
4. **Run each test cell in the trusted process** (:mod:`coursetools.grading.trusted.runner`) when the notebook
   reaches it. The test's code never enters the kernel: the student's answers are proxies whose
   calls cross the boundary as plain data (:mod:`coursetools.grading.bridge`), relayed here, each under the
   test's time limit. Pass, fail and partial credit are the trusted process's verdict.
5. **Score and feedback data**: points from the source; for each test the version the student had
   (the release text), the verdict and the grader's message; no kernel output is ever kept.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import os
import re
import shutil
import signal
import struct
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode

from coursetools.authoring import rules
from coursetools.cells import (
    figure_descriptions,
    is_manual_cell,
    is_test_cell,
    max_points,
    nbgrader,
)
from coursetools.grading import bridge, framing
from coursetools.grading.job import (
    Job,
    Options,
    Result,
    empty_result,
    resolve_sandbox,
    sandbox_fields,
    sandbox_summary,
)
from coursetools.grading.sandboxed import bans, limits
from coursetools.grading.sandboxed import sandbox as sbx
from coursetools.grading.sandboxed.budget import Budget, CpuMeter
from coursetools.grading.sandboxed.kernel import (
    BRIDGE_MODULE,
    MAX_CELL_REPLY_BYTES,
    KernelSession,
    KernelSpecification,
)
from coursetools.grading.trusted import forkserver

__all__ = [
    "grade_job",
    "display_run",
    "display_cells",
    "merge",
    "is_test_cell",
    "is_manual_cell",
    "max_points",
]

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


# ------------------------------------------------------------------------------------ cell kinds


# nbgrader's cell kinds have one home, coursetools.cells (re-exported here for the grader's users)
_nbg = nbgrader


# ----------------------------------------------------------------------------------------- merge


def merge(source: NotebookNode, release: NotebookNode, submission: NotebookNode):
    """The notebook to run: the submission with every source-owned cell taken from the source.

    Returns ``(notebook, notes)``; ``notes`` says what was repaired (edited, deleted or duplicated
    test cells, foreign metadata).
    """
    src = {_nbg(c)["grade_id"]: c for c in source.cells if _nbg(c).get("grade_id")}
    rel = {_nbg(c)["grade_id"]: c for c in release.cells if _nbg(c).get("grade_id")}
    notes: list[str] = []
    out: list[NotebookNode] = []
    seen: set[str] = set()

    for cell in submission.cells:
        cell = copy.deepcopy(cell)
        gid = _nbg(cell).get("grade_id")
        if gid is None or gid not in src:
            if "nbgrader" in cell.get("metadata", {}):
                del cell.metadata["nbgrader"]
                if gid is not None:
                    notes.append(f"cell {gid!r} is not in the assignment: graded as plain code")
            out.append(cell)
            continue
        original = src[gid]
        if gid in seen:
            if _nbg(original).get("solution"):
                del cell.metadata["nbgrader"]
                out.append(cell)  # the student's code still runs, but earns nothing by itself
            notes.append(f"cell {gid!r} appears more than once: the extra copy was not graded")
            continue
        seen.add(gid)
        new = copy.deepcopy(original)
        if _nbg(original).get("solution"):
            new.source = cell.get("source", "")
            if cell.cell_type != original.cell_type:
                notes.append(f"cell {gid!r} changed type: graded as {original.cell_type}")
        else:
            shown = rel.get(gid, original)
            if cell.cell_type != shown.cell_type or cell.get("source", "") != shown.source:
                notes.append(f"read-only cell {gid!r} was edited: the original was restored")
        out.append(new)

    # Put back what was deleted, after the nearest preceding source cell that is present.
    for index, cell in enumerate(source.cells):
        gid = _nbg(cell).get("grade_id")
        if not gid or gid in seen:
            continue
        position = 0
        for prev in reversed(source.cells[:index]):
            pid = _nbg(prev).get("grade_id")
            if pid and pid in seen:
                position = next(i for i, c in enumerate(out) if _nbg(c).get("grade_id") == pid) + 1
                break
        new = copy.deepcopy(cell)
        if _nbg(cell).get("solution"):
            new.source = rel.get(gid, cell).source  # the stub: the answer was deleted
        out.insert(position, new)
        seen.add(gid)
        kind = (
            "test"
            if is_test_cell(cell)
            else "answer"
            if _nbg(cell).get("solution")
            else "read-only"
        )
        notes.append(f"{kind} cell {gid!r} was deleted: the original was put back")

    nb = nbformat.v4.new_notebook(cells=out, metadata=copy.deepcopy(source.metadata))
    for index, cell in enumerate(nb.cells):
        cell.id = f"cell-{index:04d}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        else:
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
    return nb, notes


# ------------------------------------------------------------------------------------- execution


class TrustedRunner:
    """The trusted test process (:mod:`coursetools.grading.trusted.runner`), seen from the grader.

    It is forked from this process's warm fork server (:mod:`coursetools.grading.trusted.forkserver`), which has
    numpy, scipy and dplib imported already; if that server cannot run, it is started as
    ``python -I -m coursetools.grading.trusted.runner``, which behaves the same and costs a second more.
    """

    def __init__(self, home: Path, setup: dict) -> None:
        self.home, self.setup = home, setup
        self.proc: asyncio.subprocess.Process | None = None
        self.server: forkserver.ForkServer | None = None
        self.pid: int | None = None  # a runner forked by ``server``
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.log = tempfile.TemporaryFile()
        self._read: asyncio.Task | None = None  # a frame being read survives a wait that ends

    @staticmethod
    def environment() -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env.update(MPLBACKEND="agg", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        return env

    async def start(self) -> None:
        try:
            self.server = forkserver.shared(self.environment())
            channel, self.pid = self.server.spawn(str(self.home), self.log.fileno())
            self.reader, self.writer = await asyncio.open_unix_connection(sock=channel)
        except (OSError, EOFError, ValueError, KeyError):  # no fork server here: the slow way
            self.pid = None
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                "-m",
                "coursetools.grading.trusted.runner",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=self.log,
                cwd=str(self.home),
                env=self.environment(),
            )
            self.reader, self.writer = self.proc.stdout, self.proc.stdin
        await self.send(self.setup)

    async def send(self, message: dict) -> None:
        self.writer.write(framing.encode(message))
        await self.writer.drain()

    @property
    def process_id(self) -> int | None:
        return (
            self.pid if self.pid is not None else (self.proc.pid if self.proc is not None else None)
        )

    async def receive(self, timeout: float) -> dict:
        """The next message; :class:`TimeoutError` if none came within ``timeout`` seconds (a
        frame half read then is finished by the next call, never lost)."""

        if self._read is None:
            self._read = asyncio.ensure_future(
                framing.read_async(self.reader, bridge.MAX_BYTES * 2, "the test runner")
            )
        done, _ = await asyncio.wait({self._read}, timeout=max(timeout, 0.01))
        if not done:
            raise TimeoutError
        task, self._read = self._read, None
        return task.result()

    async def stop(self) -> None:
        if self._read is not None:
            self._read.cancel()
            self._read = None
        if self.pid is not None:
            try:
                self.server.kill(self.pid)
            except (OSError, EOFError, ValueError):
                pass  # the server is gone, and its children with it
            self.pid = None
            if self.writer is not None:
                self.writer.close()
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except Exception:  # noqa: BLE001
                pass
        self.proc = None
        self.reader = self.writer = None


class _Grader:
    """Runs one merged notebook: student cells in the kernel, test cells in the trusted runner."""

    def __init__(
        self,
        nb: NotebookNode,
        plan: rules.GradingPlan,
        spec,
        options: Options,
        meter: CpuMeter | None = None,
    ):
        self.nb, self.plan, self.options = nb, plan, options
        self.meter = meter
        self.budget = Budget(
            options.notebook_timeout,
            meter,
            wall_factor=options.wall_factor,
            wall=options.notebook_wall,
        )
        # a limit reached on the wall clock while waiting for a CPU (budget module), and the
        # figures of a budget cut by the wall clock (the starved one's, when one was)
        self.starved = False
        self.wall_cut: dict[str, float] = {}
        self.kernel = KernelSession(spec)
        self.runner: TrustedRunner | None = None
        self.home = spec.home
        self.status: dict[int, str] = {}  # cell index -> ok | error | timeout | died | not run
        self.results: dict[int, dict] = {}  # test cell index -> verdict from the trusted runner
        self.restarts = 0
        self.problems: list[str] = []
        self.done: list[int] = []  # student cells run in the current kernel, replayed on restart
        self.kernel_calls = 0

    # ---- the kernel

    async def _restart(self) -> bool:
        """A new kernel with every cell that ran replayed; False if that is not possible."""
        await self.kernel.stop()
        self.restarts += 1
        if self.restarts > self.options.max_restarts:
            self.problems.append("too many kernel restarts: the rest of the notebook was not run")
            return False
        try:
            await self.kernel.start()
            for index in self.done:
                if self.budget.expired():
                    return False
                budget = self.budget.within(self.options.cell_timeout)
                await self.kernel.execute(self.nb.cells[index].source, budget)
                self._note(budget)
            return True
        except Exception:  # noqa: BLE001 - a replay that fails ends the run
            self.problems.append("could not replay the notebook after a restart")
            return False

    async def _run_cell(self, index: int) -> bool:
        """Run one student cell; False when grading cannot go on."""
        cell = self.nb.cells[index]
        budget = self.budget.within(self.options.cell_timeout)
        outcome = await self.kernel.execute(cell.source, budget)
        self._note(budget)
        self.status[index] = outcome.status
        if outcome.status in ("ok", "error", "dropped"):
            self.done.append(index)
            if outcome.status == "dropped":
                self.problems.append(
                    f"the reply to cell {_label(cell, index)} was over "
                    f"{MAX_CELL_REPLY_BYTES // 1024**2} MiB and was not read (a huge error message?)"
                )
            return True
        if outcome.status == "timeout":
            self.problems.append(f"cell {_label(cell, index)} timed out (endless loop?)")
        else:
            self.problems.append(
                f"kernel died in cell {_label(cell, index)} (os._exit, a crash, or the memory limit)"
            )
        return await self._restart()

    async def _kernel_request(self, request: dict) -> dict | str:
        """Relay one bridge request from the trusted runner to the kernel.

        The kernel's reply comes back as its text, checked (:func:`bridge.check_message`) but not
        parsed: the trusted runner parses it once (a reply of thousands of results cost the grader a
        parse and a re-serialisation of every value before). A dict is a reply the grader wrote
        (a timeout, a dead kernel, a refused message)."""
        self.kernel_calls += 1
        if self.test_budget.expired():
            return {"ok": False, "error": {"timeout": True, "seconds": self._test_seconds}}
        try:
            payload = base64.b64encode(bridge.dumps(request).encode("utf-8")).decode("ascii")
        except (bridge.BoundaryError, TypeError, ValueError):
            return {"ok": False, "error": {"boundary": True}}
        # The request rides in a user expression, which IPython only eval()s (C parser), not in
        # the cell's code, which its input transformers tokenize in Python (about 10x slower).
        module = f'__import__("sys").modules[{BRIDGE_MODULE!r}].server'
        outcome = await self.kernel.execute(
            "",
            self.test_budget,
            silent=True,
            user_expressions={"r": f'{module}.serve("{payload}") or {module}.reply()'},
            large_reply=True,
        )
        if outcome.status == "ok":
            data = outcome.expressions.get("r", {})
            text = data.get("data", {}).get(bridge.MIME) if isinstance(data, dict) else None
            try:
                bridge.check_message(text)
            except bridge.BoundaryError:
                return {"ok": False, "error": {"boundary": True}}
            return text
        if outcome.status in (
            "budget",
            "refused",
            "dropped",
        ):  # over budget, too big to parse or to read
            return {
                "ok": False,
                "error": {"budget" if outcome.status == "budget" else "boundary": True},
            }
        if outcome.status == "error":
            return {"ok": False, "error": {"classes": []}}
        what = "timed out" if outcome.status == "timeout" else "died"
        self.problems.append(f"the kernel {what} in a call from test {self._test_label}")
        if not await self._restart():
            self.kernel_lost = True
        if outcome.status == "timeout":
            return {"ok": False, "error": {"timeout": True, "seconds": self._test_seconds}}
        return {"ok": False, "error": {"died": True}}

    # ---- the trusted runner

    async def _run_test(self, index: int) -> None:
        cell = self.nb.cells[index]
        gid = _nbg(cell).get("grade_id")
        test = self.plan.tests.get(gid)
        if test is None:  # not a test of the source (cannot happen after merge): no points
            return
        self._test_label = repr(gid)
        self._test_seconds = round(self.options.cell_timeout)
        if self.runner is None:
            await self._start_runner()
        runner_pid = self.runner.process_id
        self.test_budget = self.budget.within(
            self.options.cell_timeout, pids=(runner_pid,) if runner_pid is not None else ()
        )
        try:
            await self._test_exchange(index, gid, test)
        finally:
            self._note(self.test_budget)
            if (
                index in self.results
            ):  # what the test cost, counted by the grader (the slow-test report)
                self.results[index]["cpu_seconds"] = round(self.test_budget.used(), 2)

    async def _test_exchange(self, index: int, gid: str, test) -> None:
        await self.runner.send(
            {
                "op": "test",
                "test": {
                    "grade_id": gid,
                    "points": test.points,
                    "source": test.source,
                    "hidden_lines": sorted(test.hidden_lines),
                },
            }
        )
        while True:
            try:
                message = await self.runner.receive(min(0.5, self.test_budget.wall_left()))
            except TimeoutError:
                if not self.test_budget.expired():
                    continue
                self.results[index] = _verdict(
                    "failed", f"the test did not finish within {self._test_seconds} s"
                )
                if test.hidden_lines:  # where it stopped is not known: the hand-in policy applies
                    self.results[index]["hidden"] = True
                await self._drop_runner()
                return
            except (EOFError, asyncio.IncompleteReadError, ValueError, struct.error):
                self.results[index] = _verdict("failed", "the grader could not run this test")
                self.problems.append(f"the test runner stopped during test {gid!r}")
                await self._drop_runner()
                return
            if message.get("op") == "kernel":
                reply = await self._kernel_request(message.get("request", {}))
                if isinstance(
                    reply, str
                ):  # the kernel's text, for the runner to parse (base64: 4/3 its size)
                    await self.runner.send(
                        {
                            "op": "reply",
                            "text": base64.b64encode(reply.encode("ascii")).decode("ascii"),
                        }
                    )
                else:
                    await self.runner.send({"op": "reply", "reply": reply})
            elif message.get("op") == "result":
                self.results[index] = message.get("result", {})
                return

    async def _start_runner(self) -> None:
        self.runner = TrustedRunner(
            self.home, {"prelude": self.plan.prelude, "answers": self.plan.answers}
        )
        await self.runner.start()

    async def _drop_runner(self) -> None:
        if self.runner is not None:
            await self.runner.stop()
            self.runner = None

    # ---- the notebook

    async def run(self) -> None:
        self.kernel_lost = False
        code = [
            i
            for i, c in enumerate(self.nb.cells)
            if c.cell_type == "code" and (c.source.strip() or is_test_cell(c))
        ]
        try:
            # The trusted process imports the prelude while the kernel runs the student's cells.
            await self._start_runner()
            await self.kernel.start()
            for position, index in enumerate(code):
                if self.budget.expired():
                    self._note(self.budget)
                    self.problems.append(
                        f"notebook time limit ({self._notebook_limit()}) reached: "
                        f"{len(code) - position} cell(s) not run"
                    )
                    break
                if self.kernel_lost:
                    break
                if is_test_cell(self.nb.cells[index]):
                    await self._run_test(index)
                elif not await self._run_cell(index):
                    break
        finally:
            await self._drop_runner()
            await self.kernel.stop()
            self._note(self.budget)

    def _note(self, budget: Budget) -> None:
        """Keep what a budget cut by the wall clock says: starved (budget module), and its figures."""
        if (
            budget.ended == "wall"
            and budget.meter is not None
            and (budget.starved or not self.starved)
        ):
            self.wall_cut = budget.figures()  # the starved budget's figures, when one was
            self.starved |= budget.starved

    def _notebook_limit(self) -> str:
        if self.budget.ended == "wall" and self.budget.meter is not None:
            return f"{self.budget.backstop:.0f} s of wall-clock time"
        return f"{self.options.notebook_timeout:.0f} s"


def _verdict(status: str, message: str) -> dict:
    return {"status": status, "points": 0.0, "message": message}


def _label(cell: NotebookNode, index: int) -> str:
    gid = _nbg(cell).get("grade_id")
    return repr(gid) if gid else f"#{index + 1}"


def _kill_uid(uid: int) -> None:
    """Kill every process left running as the kernel's throw-away uid (escaped daemons)."""
    if os.geteuid() != 0:
        return
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                for line in fh:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            os.kill(int(entry), signal.SIGKILL)
                        break
        except (OSError, ValueError):
            pass


# --------------------------------------------------------------------------------------- scoring


def score(nb: NotebookNode, grader: _Grader | None, release: NotebookNode):
    """Per-cell results and the feedback cells (the release text of tests, no outputs)."""
    rel = {_nbg(c)["grade_id"]: c for c in release.cells if _nbg(c).get("grade_id")}
    results, feedback = [], []
    status = grader.status if grader else {}
    verdicts = grader.results if grader else {}
    for index, cell in enumerate(nb.cells):
        gid = _nbg(cell).get("grade_id")
        points = float(_nbg(cell).get("points", 0) or 0)
        entry = {"type": cell.cell_type, "source": cell.source, "grade_id": gid}
        # the author's figure descriptions (alt text on the page), never the student's text
        author = rel[gid].source if gid in rel else (cell.source if _nbg(cell) else "")
        if cell.cell_type == "code" and figure_descriptions(author):
            entry["figures"] = figure_descriptions(author)
        if is_test_cell(cell):
            verdict = verdicts.get(index)
            hidden = False
            if verdict is None:
                got, state, message = 0.0, "not run", "not run (see the problems above)"
            else:
                got = min(points, max(0.0, float(verdict.get("points", 0.0) or 0.0)))
                state = verdict.get("status", "failed")
                message = str(verdict.get("message", ""))[:400]
                if state not in ("passed", "partial", "failed"):
                    state = "failed"
                hidden = state == "failed" and verdict.get("hidden") is True
            results.append(
                {
                    "grade_id": gid,
                    "kind": "auto",
                    "points": got,
                    "max_points": points,
                    "status": state,
                    "message": message,
                    **({"hidden": True} if hidden else {}),  # a hidden test's message
                    **(
                        {"cpu_seconds": float(verdict["cpu_seconds"])}
                        if verdict and "cpu_seconds" in verdict
                        else {}
                    ),
                }
            )
            entry.update(
                source=rel[gid].source if gid in rel else "",
                kind="test",
                status=state,
                points=got,
                max_points=points,
                message=message,
                **({"hidden": True} if hidden else {}),
            )
        elif is_manual_cell(cell):
            results.append(
                {
                    "grade_id": gid,
                    "kind": "manual",
                    "points": None,
                    "max_points": points,
                    "status": "graded by hand",
                    "message": "",
                }
            )
            entry.update(kind="manual", max_points=points, status="graded by hand")
        elif cell.cell_type == "code" and status.get(index) in ("timeout", "died", "dropped"):
            message = {
                "timeout": "this cell did not finish within the time limit",
                "died": "the kernel died while running this cell (os._exit, a crash, or the memory limit)",
                "dropped": "this cell's reply was too large to read (a huge error message?): "
                "its outcome is unknown",
            }[status[index]]
            entry.update(kind="code", status=status[index], message=message)
        else:
            entry.update(
                kind="answer"
                if _nbg(cell).get("solution")
                else "text"
                if cell.cell_type != "code"
                else "code"
            )
        feedback.append(entry)
    return results, feedback


# ------------------------------------------------------------------------------------ entry point


def _prepare_home(job: Job, nb_bytes: bytes) -> tuple[Path, Path, Path]:
    """The submission's private directory: stage (files for the workspace), config, dplib copy."""
    home = Path(tempfile.mkdtemp(prefix="grade-"))
    os.chmod(home, 0o711)
    stage = home / "stage"
    stage.mkdir(mode=0o700)
    for name, data in job.files.items():  # the assignment's data files, from the source
        target = (stage / name).resolve()
        if stage.resolve() not in target.parents:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (stage / (job.notebook_name or f"{job.assignment}.ipynb")).write_bytes(nb_bytes)
    config = home / "config"
    for sub in ("ipython", "jupyter", "jupyter-data"):
        (config / sub).mkdir(parents=True, mode=0o755)
    config.chmod(0o755)
    return home, stage, config


@contextlib.contextmanager
def _sandboxed(job: Job, mode: str, banned: Sequence[str], problems: list[str], usage: dict):
    """A kernel specification for one run of ``job``: a private home, a fresh uid, a control group.

    ``banned`` names the dplib functions the kernel's copy of dplib lacks (none for a display
    run). On exit every process of the uid is killed, the group removed (its usage copied into
    ``usage``) and the home deleted; trouble there is appended to ``problems``, never raised.
    """
    home, stage, config = _prepare_home(job, job.submission)
    uid = sbx.new_uid()
    group = None
    try:
        overlays = []
        copy_dir = bans.grading_dplib(list(banned), home / "dplib-copy") if banned else None
        if copy_dir is not None and mode != "rlimit":
            overlays.append((str(copy_dir), str(bans.real_dplib_dir())))
        if mode != "rlimit":
            group = limits.SubmissionGroup.create(
                f"{job.student}-{job.assignment}",
                limits.GroupLimits(
                    memory_bytes=job.options.memory_bytes,
                    max_pids=job.options.max_pids,
                    cpus=job.options.cpus,
                ),
            )
        yield (
            KernelSpecification(
                home=home,
                stage=stage,
                config=config,
                mode=mode,
                uid=uid,
                limits=sbx.Limits(
                    memory_bytes=job.options.memory_bytes,
                    cpu_seconds=int(job.options.notebook_timeout) + 60,
                ),
                overlays=overlays,
                cgroup_procs=group.procs_files() if group is not None else [],
                hide=list(job.options.hide),
                startup_timeout=job.options.startup_timeout,
            ),
            group,
        )
    finally:
        if group is not None:
            try:
                usage.update(group.usage())
                group.remove()
            except OSError as exc:  # the grader's trouble, reported; the grade stands
                problems.append(f"grader: could not remove the control group ({exc})"[:200])
        _kill_uid(uid)
        shutil.rmtree(home, ignore_errors=True)


# ----------------------------------------------------------------------------------- display run


INLINE_FIGURES = (
    'import os\nos.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"\n'
)


def display_cells(nb: NotebookNode, release: NotebookNode) -> list[tuple[int, str]]:
    """(index, code) of every cell the display run executes, in order.

    The student's own cells as handed in, and each test cell as the *release* has it (the
    visible tests the student ran in JupyterLab): never a hidden test, so nothing a hidden test
    passed to the student's code can reach an output.
    """
    visible = {_nbg(c)["grade_id"]: c.source for c in release.cells if _nbg(c).get("grade_id")}
    cells = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        code = visible.get(_nbg(cell).get("grade_id"), "") if is_test_cell(cell) else cell.source
        if code.strip():
            cells.append((index, code))
    return cells


async def _display(
    spec, cells: list[tuple[int, str]], options: Options, collector
) -> tuple[dict, list]:
    shown: dict[int, list[dict]] = {}
    problems: list[str] = []
    kernel = KernelSession(spec, collector)
    deadline = time.monotonic() + options.notebook_timeout
    try:
        await kernel.start()
        # Graded kernels draw on Agg (no figure is ever shown); here figures are the point.
        await kernel.execute(INLINE_FIGURES, options.startup_timeout, silent=True)
        for index, code in cells:
            left = deadline - time.monotonic()
            if left <= 1:
                problems.append("display run: notebook time limit reached, later outputs not shown")
                break
            collector.new_cell()
            outcome = await kernel.execute(code, min(options.cell_timeout, left))
            shown[index] = collector.outputs
            if outcome.status == "dropped":
                shown[index].append(
                    {"kind": "note", "text": "this cell's reply was too large to read"}
                )
            if outcome.status in ("timeout", "died"):
                what = "timed out" if outcome.status == "timeout" else "the kernel died"
                shown[index].append(
                    {"kind": "note", "text": f"{what} here: later outputs not shown"}
                )
                break
    finally:
        await kernel.stop()
    return shown, problems


def display_run(
    job: Job, nb: NotebookNode, release: NotebookNode, mode: str
) -> tuple[dict[int, list[dict]], list[str]]:
    """The student's outputs and figures, from a run of their notebook that has no test in it.

    A separate, ungraded run in a fresh sandbox (same isolation and limits as grading, the full
    dplib since nothing is graded): the graded run's outputs are never kept, because after a
    hidden test has called the student's code, a later cell could print what the test passed in.
    Returns outputs (:mod:`coursetools.grading.sandboxed.outputs`) by cell index, and problems met.
    """
    from coursetools.grading.sandboxed.outputs import OutputCollector

    problems: list[str] = []
    shown: dict[int, list[dict]] = {}
    with _sandboxed(job, mode, (), problems, {}) as (spec, _group):
        try:
            shown, trouble = asyncio.run(
                asyncio.wait_for(
                    _display(spec, display_cells(nb, release), job.options, OutputCollector()),
                    job.options.notebook_timeout + 120,
                )
            )
            problems += trouble
        except Exception as exc:  # noqa: BLE001 - outputs are a courtesy: never cost a grade
            problems.append(f"display run: {type(exc).__name__}: {exc}"[:300])
    return shown, problems


def grade_job(job: Job) -> Result:
    """Grade one submission; never raises for anything the submission does."""
    started = time.monotonic()
    source = nbformat.reads(job.source, as_version=4)
    release = nbformat.reads(job.release, as_version=4)
    mode, why = resolve_sandbox(job.options)
    problems = list(job.problems)
    if job.submission is None:
        return empty_result(job, source, problems or ["no notebook handed in"], mode, why)
    try:
        with _quiet_nbformat():
            submission = nbformat.reads(job.submission.decode("utf-8"), as_version=4)
        if not isinstance(submission.get("cells"), list):
            raise ValueError("no list of cells")
    except Exception as exc:  # noqa: BLE001 - any parse failure is the submission's
        message = ANSI.sub("", str(exc)).strip().splitlines()
        return empty_result(
            job,
            source,
            problems
            + [
                f"not a valid notebook ({type(exc).__name__}: {message[0][:120] if message else ''})"
            ],
            mode,
            why,
        )

    nb, notes = merge(source, release, submission)
    plan = rules.plan(source)
    grader = None
    usage: dict = {}
    described = ""
    with _sandboxed(job, mode, plan.bans, problems, usage) as (spec, group):
        described = f" + {group.describe()}" if group is not None else ""
        meter = (
            CpuMeter(group.cpu_seconds, group.pids, cores=job.options.cpus)
            if group is not None
            else CpuMeter(None)
        )
        grader = _Grader(nb, plan, spec, job.options, meter)
        try:
            asyncio.run(asyncio.wait_for(grader.run(), grader.budget.backstop + 120))
        except Exception as exc:  # noqa: BLE001 - grader trouble is reported, never raised
            problems.append(f"grader error: {type(exc).__name__}: {exc}"[:300])
        problems += grader.problems

    results, feedback = score(nb, grader, release)
    if job.options.with_outputs:
        try:
            shown, trouble = display_run(job, nb, release, mode)
        except Exception as exc:  # noqa: BLE001 - e.g. no control group: the grade stands
            shown, trouble = {}, [f"display run: {type(exc).__name__}: {exc}"[:300]]
        for index, outputs in shown.items():
            feedback[index]["outputs"] = outputs
        problems += trouble
    auto, manual = max_points(source)
    got = sum(r["points"] for r in results if r["kind"] == "auto")
    return Result(
        {
            "student": job.student,
            "assignment": job.assignment,
            "score": round(got, 6),
            "max_score": auto,
            "manual_max": manual,
            "cells": results,
            "problems": problems,
            "notes": notes,
            "feedback": feedback,
            "sandbox": sandbox_summary(mode, described),
            **sandbox_fields(mode, why),
            "seconds": round(time.monotonic() - started, 2),
            "restarts": grader.restarts if grader else 0,
            "kernel_calls": grader.kernel_calls if grader else 0,
            "usage": usage,
            # cut by the wall clock while waiting for a CPU: graded once more before it counts
            "starved": bool(grader and grader.starved),
            "wall_cut": dict(grader.wall_cut) if grader else {},
        }
    )


class _quiet_nbformat:
    """nbformat warns (on stderr) about duplicate or missing cell ids; the merge fixes both."""

    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)
