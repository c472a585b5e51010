"""Grade one submission: merge the hidden tests back in, run it sandboxed, score it.

One job, done by :func:`grade_job`, a plain picklable function of a :class:`Job` (bytes in, a
result dict out) so that any executor can run it: this process, a process pool, or a Dask
cluster on other machines. Nothing here reads ``solutions/`` or writes a grade: the caller puts
the source notebook's text in the job and writes the results.

Steps, each robust to a hostile submission:

1. **Parse** the submission; invalid JSON or a missing notebook scores 0 with the reason.
2. **Merge** (:func:`merge`): every cell that carries nbgrader metadata in the *source* is found in
   the submission by ``grade_id`` and replaced by the source's version (tests with their hidden
   part, locked cells, points); solution cells keep the student's text but take the source's
   metadata. A test cell that was deleted is put back after the nearest preceding graded cell; a
   second copy of a ``grade_id`` (pasted twice) is dropped (a solution copy stays as plain code); a
   ``grade_id`` unknown to the source loses its metadata. So nbgrader's duplicate-id failures
   (#1083, #1933) cannot happen and no test can be edited away.
3. **Execute** in a fresh workspace holding only this submission, with a sandboxed kernel
   (:mod:`coursetools.sandbox`). Before any student code runs, a guard snapshots pristine
   references (builtins, numpy, numpy.testing, math, dplib and IPython's own classes, function
   code objects and defaults, ``sys.modules``, IPython's traceback/transformer hooks); before each
   autograded test cell it restores them, stops threads and child processes the student started,
   and rebinds ``np``/``numpy``/``dplib``/``math``. Per-cell and per-notebook time limits; when a
   cell hangs or kills the kernel, that cell fails, the kernel is restarted, the cells before it
   are replayed and grading goes on after it.
4. **Score**: an autograded test cell passes when it ran and raised no error (output on stderr,
   e.g. a warning, does not count against it, unlike raw nbgrader); an ``execute_result`` that is
   a number in [0, 1] x points gives partial credit, as nbgrader does. Points come from the source,
   never from the submission. Cells graded by hand are listed, not scored.
5. **Feedback data**: test cells are shown as the student had them (the release version, hidden
   tests removed) with the verdict and the last line of the error, scrubbed of any hidden-test
   line; no outputs are returned, so hidden code printed by student code cannot leak.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode

from coursetools import sandbox as sbx

__all__ = ["Options", "Job", "grade_job", "merge", "is_test_cell", "is_manual_cell", "max_points"]

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class Options:
    """How to run one submission."""

    cell_timeout: float = 60.0  # seconds for one cell
    notebook_timeout: float = 600.0  # seconds for the whole notebook, restarts included
    startup_timeout: float = 60.0
    max_restarts: int = 3  # kernel deaths/hangs tolerated before the rest is not run
    sandbox: str = "auto"  # auto | bwrap | setuid | rlimit
    memory_bytes: int = sbx.Limits.memory_bytes
    hide: tuple[str, ...] = ()  # directories to cover in setuid mode (instructor files)


@dataclass
class Job:
    """Everything needed to grade one (student, assignment): texts and bytes, no paths."""

    student: str
    assignment: str
    source: str  # the source notebook's JSON (solutions + hidden tests)
    release: str  # the release notebook's JSON (what the student got)
    submission: bytes | None  # None: nothing handed in
    notebook_name: str = ""
    files: dict[str, bytes] = field(default_factory=dict)  # other files handed in
    problems: list[str] = field(default_factory=list)  # found while collecting
    options: Options = field(default_factory=Options)


# ------------------------------------------------------------------------------------ cell kinds


def _nbg(cell: NotebookNode) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def is_test_cell(cell: NotebookNode) -> bool:
    """An autograder test cell: a graded code cell that is not an answer."""
    meta = _nbg(cell)
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def is_manual_cell(cell: NotebookNode) -> bool:
    """A cell graded by hand: a graded answer (code or markdown) or a task."""
    meta = _nbg(cell)
    return bool(meta.get("task")) or (bool(meta.get("grade")) and bool(meta.get("solution")))


def max_points(source: NotebookNode) -> tuple[float, float]:
    """(autograded points, points graded by hand) of a source notebook."""
    auto = sum(float(_nbg(c).get("points", 0)) for c in source.cells if is_test_cell(c))
    manual = sum(float(_nbg(c).get("points", 0)) for c in source.cells if is_manual_cell(c))
    return auto, manual


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


# ------------------------------------------------------------------------- the guard (in kernel)

GUARD_SNAPSHOT = r"""
def __coursetools_guard(token, trusted_modules, trusted_names):
    import builtins, ctypes, importlib, os, signal, sys, threading, types
    prefixes = {"builtins", "math", "cmath", "operator", "functools", "statistics", "numpy",
                "scipy", "dplib", "IPython", "ipykernel", "unittest"}
    for name in ["numpy", "numpy.testing", "math", "dplib", "dplib.grading", *trusted_modules]:
        try:
            module = importlib.import_module(name)
        except Exception:
            continue
        prefixes.add(name.split(".")[0])
        for attr in set(getattr(module, "__all__", ())) & trusted_names:
            try:
                getattr(module, attr)  # resolve lazy (PEP 562) attributes the tests use
            except Exception:
                pass
    kinds = (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type,
             classmethod, staticmethod, property)
    modules = {n: m for n, m in list(sys.modules.items())
               if isinstance(m, types.ModuleType) and n.split(".")[0] in prefixes}
    entries, classes, functions = [], [], []
    for name, module in modules.items():
        saved = {k: v for k, v in vars(module).items() if isinstance(v, kinds) or callable(v)}
        entries.append((module, saved))
        for value in saved.values():
            if isinstance(value, types.FunctionType):
                functions.append((value, value.__code__, value.__defaults__, value.__kwdefaults__))
            elif isinstance(value, type) and getattr(value, "__module__", "") == name:
                attrs = {k: v for k, v in vars(value).items()
                         if isinstance(v, (types.FunctionType, classmethod, staticmethod, property))}
                classes.append((value, attrs))
                for v in attrs.values():
                    f = v.__func__ if isinstance(v, (classmethod, staticmethod)) else v
                    if isinstance(f, types.FunctionType):
                        functions.append((f, f.__code__, f.__defaults__, f.__kwdefaults__))
    shell = get_ipython()
    shell_lists = {a: list(getattr(shell, a)) for a in (
        "input_transformers_cleanup", "input_transformers_post", "ast_transformers")}
    events = {k: list(v) for k, v in shell.events.callbacks.items()}
    system = dict(excepthook=sys.excepthook, displayhook=sys.displayhook, stdout=sys.stdout,
                  stderr=sys.stderr, meta_path=list(sys.meta_path), path_hooks=list(sys.path_hooks))
    threads = {t.ident for t in threading.enumerate()}
    pinned = {}  # names bound by the instructor's read-only cells
    before = {}
    pid = os.getpid()

    def stop_background():
        for t in threading.enumerate():
            if t.ident not in threads and t.is_alive():
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(t.ident), ctypes.py_object(SystemExit))
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != pid:
                try:
                    with open(f"/proc/{entry}/stat") as fh:
                        ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
                    if ppid == pid:
                        os.kill(int(entry), signal.SIGKILL)
                except (OSError, ValueError, IndexError):
                    pass

    def restore():
        stop_background()
        sys.settrace(None); sys.setprofile(None); threading.settrace(None); threading.setprofile(None)
        for module, saved in entries:
            vars(module).update(saved)
        sys.modules.update(modules)
        for cls, attrs in classes:
            for k, v in attrs.items():
                try:
                    if vars(cls).get(k) is not v:
                        setattr(cls, k, v)
                except (TypeError, AttributeError):
                    pass
        for f, code, defaults, kwdefaults in functions:
            try:
                if f.__code__ is not code:
                    f.__code__ = code
                if f.__defaults__ is not defaults:
                    f.__defaults__ = defaults
                if f.__kwdefaults__ is not kwdefaults:
                    f.__kwdefaults__ = kwdefaults
            except (TypeError, ValueError, AttributeError):
                pass
        for a, items in shell_lists.items():
            getattr(shell, a)[:] = items
        for k, v in events.items():
            shell.events.callbacks[k] = list(v)
        for a in ("showtraceback", "showsyntaxerror", "_showtraceback", "run_cell", "run_ast_nodes",
                  "run_code", "run_cell_async", "transform_cell", "get_exception_only"):
            vars(shell).pop(a, None)
        shell.set_custom_exc((), None)
        sys.excepthook, sys.displayhook = system["excepthook"], system["displayhook"]
        sys.stdout, sys.stderr = system["stdout"], system["stderr"]
        sys.meta_path[:], sys.path_hooks[:] = system["meta_path"], system["path_hooks"]
        ns = shell.user_ns
        ns["__builtins__"] = builtins
        ns.update(pinned)
        before.clear()
        before.update(ns)

    def record():
        ns = shell.user_ns
        pinned.update({k: v for k, v in ns.items()
                       if not k.startswith("_") and (k not in before or before[k] is not v)})

    holder = types.ModuleType("_coursetools_" + token)
    holder.restore, holder.record = restore, record
    sys.modules[holder.__name__] = holder

__coursetools_guard("{token}", {modules}, set({names}))
del __coursetools_guard
"""

GUARD_RESTORE = '__import__("sys").modules["_coursetools_{token}"].restore()'
GUARD_RECORD = '__import__("sys").modules["_coursetools_{token}"].record()'

IMPORT = re.compile(
    r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*))",
    re.M,
)


def trusted_imports(source: NotebookNode) -> tuple[list[str], list[str]]:
    # Modules imported by the instructor's own cells (read-only and test cells) and the names
    # those cells use: the guard imports them before any student code, so their snapshot is clean.
    modules, names = set(), set()
    for cell in source.cells:
        if cell.cell_type != "code" or _nbg(cell).get("solution"):
            continue
        for match in IMPORT.finditer(cell.source):
            if match.group(1):
                modules.add(match.group(1))
            else:
                for part in match.group(2).split(","):
                    modules.add(part.split()[0])
        names.update(re.findall(r"\.\s*([A-Za-z_]\w*)", cell.source))  # module.attribute
        for imported in re.findall(
            r"^\s*from\s+[\w.]+\s+import\s+\(?([\w\s,]+)", cell.source, re.M
        ):
            names.update(re.findall(r"[A-Za-z_]\w*", imported))
    return sorted(m for m in modules if not m.startswith(".")), sorted(names)


def guard_source(token: str, source: NotebookNode) -> str:
    modules, names = trusted_imports(source)
    return (
        GUARD_SNAPSHOT.replace("{token}", token)
        .replace("{modules}", json.dumps(modules))
        .replace("{names}", json.dumps(names))
    )


def is_locked_cell(cell: NotebookNode) -> bool:
    # A read-only instructor cell that is not a test (setup, data loading).
    meta = _nbg(cell)
    return (
        cell.cell_type == "code"
        and bool(meta.get("locked"))
        and not meta.get("solution")
        and not meta.get("grade")
    )


# ------------------------------------------------------------------------------------- execution


def _new_cell(source: str) -> NotebookNode:
    return nbformat.v4.new_code_cell(source)


def _error_output(ename: str, evalue: str) -> NotebookNode:
    return nbformat.v4.new_output(
        "error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"]
    )


class _Runner:
    """Runs the code cells of one notebook in a sandboxed kernel, surviving hangs and crashes."""

    def __init__(self, nb: NotebookNode, workspace: str, options: Options, mode: str, guard: str):
        self.nb, self.ws, self.options, self.mode = nb, workspace, options, mode
        self.token = guard_token = secrets.token_hex(8)
        self.guard = guard.replace("{token}", guard_token)
        self.uid = sbx.new_uid()
        self.status: dict[
            int, str
        ] = {}  # cell index -> "ok" | "error" | "timeout" | "died" | "not run"
        self.restarts = 0
        self.problems: list[str] = []
        self.client = None
        self.log = tempfile.TemporaryFile()  # the kernel's stderr, outside its workspace

    def _kernel_manager(self):
        from jupyter_client.kernelspec import KernelSpec
        from jupyter_client.manager import AsyncKernelManager

        argv = sbx.kernel_argv(
            self.ws,
            mode=self.mode,
            uid=self.uid,
            limits=sbx.Limits(
                memory_bytes=self.options.memory_bytes,
                cpu_seconds=int(self.options.notebook_timeout) + 60,
            ),
            hide=list(self.options.hide),
            readonly=sbx.readonly_paths(),
        )

        class SandboxKernelManager(AsyncKernelManager):
            @property
            def kernel_spec(self):  # noqa: D401 - the sandbox launcher, not a named kernelspec
                return KernelSpec(argv=argv, display_name="sandbox", language="python")

        kernel_dir = os.path.join(self.ws, ".kernel")
        os.makedirs(kernel_dir, exist_ok=True)
        return SandboxKernelManager(
            kernel_name="python3",
            transport="ipc",
            ip=os.path.join(kernel_dir, "k"),
            connection_file=os.path.join(kernel_dir, "connection.json"),
        )

    async def _start(self) -> None:
        self.client = _capped_client_class()(
            self.nb,
            km=self._kernel_manager(),
            timeout=self.options.cell_timeout,
            startup_timeout=self.options.startup_timeout,
            allow_errors=True,
            interrupt_on_timeout=False,
            record_timing=False,
            shutdown_kernel="immediate",
            resources={"metadata": {"path": self.ws}},
            iopub_timeout=5,
        )
        self.log.seek(0)
        self.log.truncate()
        try:
            await self.client.async_start_new_kernel(
                cwd=self.ws, stdout=subprocess.DEVNULL, stderr=self.log
            )
            await self.client.async_start_new_kernel_client()
        except Exception as exc:
            self.log.seek(0)
            lines = [
                line
                for line in self.log.read().decode(errors="replace").splitlines()
                if line.strip()
            ]
            raise RuntimeError(
                f"the kernel did not start ({exc}): {lines[-1] if lines else ''}"[:300]
            ) from exc
        await self._run(_new_cell(self.guard), -1, quiet=True)

    async def _stop(self) -> None:
        if self.client is not None and self.client.km is not None:
            try:
                await self.client._async_cleanup_kernel()
            except Exception:  # noqa: BLE001 - the kernel may be long gone
                pass
        self.client = None
        _kill_uid(self.uid)

    async def _run(
        self, cell: NotebookNode, index: int, quiet: bool = False, timeout: float | None = None
    ) -> str:
        client = self.client
        # nbclient stores the executed cell back at nb.cells[index]: run each cell in a scratch
        # notebook of its own, so injected and replayed cells never overwrite a graded one (the
        # cell object itself is filled in place).
        saved_nb, client.nb = client.nb, nbformat.v4.new_notebook(cells=[cell])
        if timeout is not None:
            client.timeout = timeout
        try:
            await client.async_execute_cell(cell, 0, store_history=not quiet)
        finally:
            client.timeout = self.options.cell_timeout
            client.nb = saved_nb
        cell.metadata.pop("execution", None)
        return (
            "error"
            if any(o.get("output_type") == "error" for o in cell.get("outputs", []))
            else "ok"
        )

    async def run(self) -> None:
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        deadline = time.monotonic() + self.options.notebook_timeout
        code = [
            i for i, c in enumerate(self.nb.cells) if c.cell_type == "code" and c.source.strip()
        ]
        done: list[int] = []  # cells run in the current kernel, replayed after a restart
        await self._start()
        for position, index in enumerate(code):
            cell = self.nb.cells[index]
            left = deadline - time.monotonic()
            if left <= 1:
                for rest in code[position:]:
                    self.status[rest] = "not run"
                self.problems.append(
                    f"notebook time limit ({self.options.notebook_timeout:.0f} s) reached: "
                    f"{len(code) - position} cell(s) not run"
                )
                break
            try:
                trusted = is_test_cell(cell) or is_locked_cell(cell)
                if trusted:
                    await self._run(
                        _new_cell(GUARD_RESTORE.format(token=self.token)), -1, quiet=True
                    )
                self.status[index] = await self._run(
                    cell, index, timeout=min(self.options.cell_timeout, left)
                )
                if is_locked_cell(cell):
                    await self._run(
                        _new_cell(GUARD_RECORD.format(token=self.token)), -1, quiet=True
                    )
                done.append(index)
                continue
            except CellTimeoutError:
                self.status[index] = "timeout"
                cell.outputs = [
                    _error_output(
                        "TimeoutError",
                        f"cell did not finish within {min(self.options.cell_timeout, left):.0f} s",
                    )
                ]
                self.problems.append(f"cell {_label(cell, index)} timed out (endless loop?)")
            except (DeadKernelError, RuntimeError, ConnectionError) as exc:
                self.status[index] = "died"
                cell.outputs = [
                    _error_output(
                        "KernelDied",
                        "the kernel died while running this cell "
                        "(os._exit, a crash, or the memory limit)",
                    )
                ]
                self.problems.append(
                    f"kernel died in cell {_label(cell, index)} ({type(exc).__name__})"
                )
            # The kernel is hung or dead: start a new one, replay what ran, go on after this cell.
            await self._stop()
            self.restarts += 1
            if self.restarts > self.options.max_restarts or deadline - time.monotonic() < 2:
                for rest in code[position + 1 :]:
                    self.status[rest] = "not run"
                self.problems.append(
                    "too many kernel restarts: the rest of the notebook was not run"
                )
                return
            if not await self._replay(done, deadline):
                for rest in code[position + 1 :]:
                    self.status[rest] = "not run"
                self.problems.append("could not replay the notebook after a restart")
                return
        await self._stop()

    async def _replay(self, done: list[int], deadline: float) -> bool:
        try:
            await self._start()
            for index in done:
                if is_test_cell(self.nb.cells[index]):
                    continue  # tests define nothing later cells need; they ran already
                left = deadline - time.monotonic()
                if left <= 1:
                    return False
                locked = is_locked_cell(self.nb.cells[index])
                if locked:
                    await self._run(
                        _new_cell(GUARD_RESTORE.format(token=self.token)), -1, quiet=True
                    )
                await self._run(
                    copy.deepcopy(self.nb.cells[index]),
                    index,
                    timeout=min(self.options.cell_timeout, left),
                )
                if locked:
                    await self._run(
                        _new_cell(GUARD_RECORD.format(token=self.token)), -1, quiet=True
                    )
            return True
        except Exception:  # noqa: BLE001 - a replay that fails ends the run
            await self._stop()
            return False


MAX_OUTPUTS, MAX_TEXT = 100, 20_000  # per cell: a print loop must not fill the grader's memory


def _capped_client_class():
    from nbclient import NotebookClient

    class CappedClient(NotebookClient):
        def output(self, outs, msg, display_id, cell_index):
            if msg["msg_type"] != "error":
                if len(outs) >= MAX_OUTPUTS:
                    return None
                content = msg.get("content", {})
                if isinstance(content.get("text"), str) and len(content["text"]) > MAX_TEXT:
                    content["text"] = content["text"][:MAX_TEXT] + "\n[output truncated]\n"
            return super().output(outs, msg, display_id, cell_index)

    return CappedClient


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


def _partial(output: NotebookNode, points: float) -> float | None:
    if output.get("output_type") != "execute_result":
        return None
    try:
        value = float(output.get("data", {}).get("text/plain", ""))
    except ValueError:
        return None
    if value != value:  # NaN
        return 0.0
    return max(0.0, min(points, value * points if value <= 1 else value))


def _last_error_line(cell: NotebookNode, secrets_: list[str]) -> str:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            evalue = ANSI.sub("", str(output.get("evalue", ""))).strip().splitlines()
            text = f"{output.get('ename', 'Error')}: {evalue[0] if evalue else ''}".rstrip(": ")
            for line in secrets_:
                if line in text:
                    text = text.replace(line, "[hidden test]")
            return text[:300]
    return ""


def _hidden_lines(source: NotebookNode, release: NotebookNode) -> list[str]:
    shown = set()
    for cell in release.cells:
        shown.update(line.strip() for line in cell.source.splitlines())
    lines = set()
    for cell in source.cells:
        for line in cell.source.splitlines():
            line = line.strip()
            if len(line) >= 6 and line not in shown and not line.startswith("###"):
                lines.add(line)
    return sorted(lines, key=len, reverse=True)


def score(nb: NotebookNode, status: dict[int, str], source: NotebookNode, release: NotebookNode):
    """Per-cell results and the feedback cells (no outputs, no hidden code)."""
    rel = {_nbg(c)["grade_id"]: c for c in release.cells if _nbg(c).get("grade_id")}
    hidden = _hidden_lines(source, release)
    results, feedback = [], []
    for index, cell in enumerate(nb.cells):
        gid = _nbg(cell).get("grade_id")
        points = float(_nbg(cell).get("points", 0) or 0)
        entry = {"type": cell.cell_type, "source": cell.source, "grade_id": gid}
        if is_test_cell(cell):
            state = status.get(index, "not run")
            got, message = 0.0, ""
            if state == "ok":
                got = points
                for output in cell.outputs:
                    partial = _partial(output, points)
                    if partial is not None:
                        got = partial
                        break
            elif state == "not run":
                message = "not run (see the problems above)"
            else:
                message = _last_error_line(cell, hidden)
            verdict = "passed" if got == points else "partial" if got > 0 else "failed"
            results.append(
                {
                    "grade_id": gid,
                    "kind": "auto",
                    "points": got,
                    "max_points": points,
                    "status": verdict if state != "not run" else "not run",
                    "message": message,
                }
            )
            entry.update(
                source=rel[gid].source if gid in rel else "",
                kind="test",
                status=results[-1]["status"],
                points=got,
                max_points=points,
                message=message,
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
        elif cell.cell_type == "code" and status.get(index) in ("timeout", "died"):
            entry.update(kind="code", status=status[index], message=_last_error_line(cell, hidden))
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


def _empty_result(job: Job, source: NotebookNode, problems: list[str], mode: str) -> dict:
    auto, manual = max_points(source)
    cells = [
        {
            "grade_id": _nbg(c)["grade_id"],
            "kind": "auto",
            "points": 0.0,
            "max_points": float(_nbg(c).get("points", 0)),
            "status": "not run",
            "message": "",
        }
        for c in source.cells
        if is_test_cell(c)
    ]
    return {
        "student": job.student,
        "assignment": job.assignment,
        "score": 0.0,
        "max_score": auto,
        "manual_max": manual,
        "cells": cells,
        "problems": problems,
        "notes": [],
        "feedback": [],
        "sandbox": mode,
        "seconds": 0.0,
        "restarts": 0,
    }


def grade_job(job: Job) -> dict:
    """Grade one submission; never raises for anything the submission does."""
    started = time.monotonic()
    source = nbformat.reads(job.source, as_version=4)
    release = nbformat.reads(job.release, as_version=4)
    mode = sbx.detect_mode() if job.options.sandbox == "auto" else job.options.sandbox
    problems = list(job.problems)
    if job.submission is None:
        return _empty_result(job, source, problems or ["no notebook handed in"], mode)
    try:
        with _quiet_nbformat():
            submission = nbformat.reads(job.submission.decode("utf-8"), as_version=4)
        if not isinstance(submission.get("cells"), list):
            raise ValueError("no list of cells")
    except Exception as exc:  # noqa: BLE001 - any parse failure is the submission's
        message = ANSI.sub("", str(exc)).strip().splitlines()
        return _empty_result(
            job,
            source,
            problems
            + [
                f"not a valid notebook ({type(exc).__name__}: {message[0][:120] if message else ''})"
            ],
            mode,
        )

    nb, notes = merge(source, release, submission)
    workspace = tempfile.mkdtemp(prefix="grade-")
    runner = None
    try:
        os.chmod(workspace, 0o700)
        for name, data in job.files.items():
            target = Path(workspace, name)
            if Path(workspace) not in target.resolve().parents:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        Path(workspace, job.notebook_name or f"{job.assignment}.ipynb").write_text(
            nbformat.writes(nb)
        )
        runner = _Runner(nb, workspace, job.options, mode, guard_source("{token}", source))
        try:
            asyncio.run(asyncio.wait_for(runner.run(), job.options.notebook_timeout + 120))
        except Exception as exc:  # noqa: BLE001 - grader trouble is reported, never raised
            problems.append(f"grader error: {type(exc).__name__}: {exc}"[:300])
            try:
                asyncio.run(runner._stop())
            except Exception:  # noqa: BLE001
                pass
        problems += runner.problems
    finally:
        if runner is not None:
            _kill_uid(runner.uid)
        shutil.rmtree(workspace, ignore_errors=True)

    results, feedback = score(nb, runner.status, source, release)
    auto, manual = max_points(source)
    got = sum(r["points"] for r in results if r["kind"] == "auto")
    return {
        "student": job.student,
        "assignment": job.assignment,
        "score": round(got, 6),
        "max_score": auto,
        "manual_max": manual,
        "cells": results,
        "problems": problems,
        "notes": notes,
        "feedback": feedback,
        "sandbox": mode,
        "seconds": round(time.monotonic() - started, 2),
        "restarts": runner.restarts,
    }


class _quiet_nbformat:
    """nbformat warns (on stderr) about duplicate or missing cell ids; the merge fixes both."""

    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


def result_json(result: dict) -> str:
    """A result as JSON (for logs and the Dask path's tests)."""
    return json.dumps(result, sort_keys=True)


def job_dict(job: Job) -> dict:
    return asdict(job)
