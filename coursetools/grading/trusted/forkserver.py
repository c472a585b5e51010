"""A warm parent for the trusted test runners: import once, fork a runner per submission.

One job: hand the grader a fresh trusted runner (:mod:`coursetools.grading.trusted.runner`) without paying for
its imports every time. Starting ``python -I -m coursetools.grading.trusted.runner`` costs about one CPU-second a
submission, nearly all of it importing numpy, scipy and dplib before the first test can run; on
two cores that was a fifth of the CPU a class takes to grade. The fork server is started once per
grading process as ``python -I -m coursetools.grading.trusted.forkserver`` (same interpreter, same environment as a
runner), imports :data:`WARM_MODULES`, and then forks one runner per request, the way
:mod:`multiprocessing`'s ``forkserver`` start method does.

What a runner gets is what a fresh process would have: the server never runs instructor or
student code, never reads a submission, and only forks while it has a single thread (checked
before it serves, else it refuses and the grader starts runners the slow way). A child re-seeds
numpy's legacy global generator (Python's :mod:`random` re-seeds itself after ``fork``), so no two
runners share a random stream. The child ``chdir``\\ s to the submission's directory, takes the
channel the grader passed it as stdin and stdout and the grader's log file as stderr, and runs
:func:`coursetools.grading.trusted.runner.main`.

The protocol, on a Unix socket the server inherits (its descriptor is the one argument; one
request at a time):

- ``{"op": "spawn", "cwd": path}`` with two file descriptors attached (``SCM_RIGHTS``: the
  runner's end of its channel, and its log): the reply is ``{"pid": n}``;
- ``{"op": "kill", "pid": n}``: SIGKILL and reap, but only a child the server has not reaped
  yet, so a pid the kernel has since recycled is never signalled; the reply is ``{}``.

Children that ended by themselves are reaped before each request. The server exits, killing its
children, when its socket closes, which is when the grading process that started it ends.

Each runner's memory is its own: the server makes a control group for every child it forks
(:mod:`coursetools.grading.sandboxed.limits`, cgroup v2 or v1 as for the kernels, :data:`RUNNER_LIMITS`), the child
enters it before it reads anything, and the group is removed when the child is reaped or killed.
Where no group can be made (no cgroups, not root), the runner caps its own address space instead
(``RLIMIT_AS``, :func:`coursetools.grading.trusted.runner.limit_memory`). Either way a test whose replies or
computations grow past :data:`coursetools.grading.trusted.runner.RUNNER_MEMORY_BYTES` ends that runner, not the
grading process.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import traceback

from coursetools.grading import framing

__all__ = ["ForkServer", "WARM_MODULES", "shared", "serve"]

#: Imported once by the server: what the test cells' imports (their "prelude") and the runner use.
WARM_MODULES = (
    "coursetools.grading.trusted.runner",
    "numpy",
    "scipy.stats",
    "scipy.special",
    "scipy.optimize",
    "dplib",
    "dplib.testing",
    "dplib.auditing",
    "dplib.attacks",
)
MAX_FRAME = 1 << 16
#: A trusted runner's control group: its memory (what it forks with is charged to the server), a
#: few tasks (it is single-threaded), one core.
RUNNER_LIMITS = dict(max_pids=32, cpus=1.0)


def _send(sock: socket.socket, message: dict, fds: tuple[int, ...] = ()) -> None:
    framing.send(sock, message, fds)


def _receive(sock: socket.socket, max_fds: int = 0) -> tuple[dict, list[int]]:
    """One frame (and the descriptors that came with its first bytes); EOFError when closed."""
    return framing.receive(sock, MAX_FRAME, max_fds, "the fork server's channel")


# ------------------------------------------------------------------------------ the server


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:  # pragma: no cover - not Linux
        return threading.active_count()


def _runner_group():
    """A control group for the next runner, or None (no cgroups here, or not allowed)."""
    try:
        from coursetools.grading.sandboxed import limits
        from coursetools.grading.trusted.runner import RUNNER_MEMORY_BYTES

        return limits.SubmissionGroup.create(
            "runner", limits.GroupLimits(memory_bytes=RUNNER_MEMORY_BYTES, **RUNNER_LIMITS)
        )
    except (OSError, ValueError, RuntimeError):
        return None


def _remove_group(group) -> None:
    if group is not None:
        try:
            group.remove()
        except OSError:  # pragma: no cover - a process stuck in the kernel: left to the host
            pass


def _child(channel: int, log: int, cwd: str, procs_files: list[str] | None = None) -> None:
    """In the forked child: become a trusted runner; never returns.

    ``procs_files``: the runner's control group, entered first; without one the runner limits
    its own address space.
    """
    code = 0
    try:
        from coursetools.grading.sandboxed import limits
        from coursetools.grading.trusted import runner

        try:
            limits.enter_procs_files(procs_files or ())
        except OSError:  # the group went away: the backstop below
            procs_files = None
        if not procs_files:
            runner.limit_memory()
        os.chdir(cwd)
        os.dup2(channel, 0)
        os.dup2(channel, 1)
        os.dup2(log, 2)
        for fd in (channel, log):
            if fd > 2:
                os.close(fd)
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed()  # from the OS's entropy, as at a fresh import
        runner.main(limit=False)
    except BaseException:  # noqa: BLE001 - reported on the runner's log, then exit
        code = 1
        try:
            traceback.print_exc()
            sys.stderr.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(code)


def _kill(pid: int) -> None:
    """SIGKILL one of the server's own unreaped children and reap it."""
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def serve(control: socket.socket) -> None:
    """Answer spawn and kill requests on ``control`` until it closes; kill the children then."""
    children: dict[int, object] = {}  # pid -> its control group (or None)

    def reap() -> None:
        for pid in list(children):
            try:
                done, _status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done == pid:
                _remove_group(children.pop(pid))

    try:
        while True:
            try:
                request, fds = _receive(control, max_fds=2)
            except (EOFError, OSError, ValueError):
                return
            reap()
            if request.get("op") == "spawn" and len(fds) == 2:
                group = _runner_group()
                pid = os.fork()
                if pid == 0:
                    control.close()
                    procs = group.procs_files() if group is not None else None
                    _child(fds[0], fds[1], str(request.get("cwd", "/")), procs)
                for fd in fds:
                    os.close(fd)
                children[pid] = group
                _send(control, {"pid": pid, "cgroup": group is not None})
            elif request.get("op") == "kill":
                for fd in fds:
                    os.close(fd)
                pid = request.get("pid")
                if pid in children:
                    _kill(pid)
                    _remove_group(children.pop(pid))
                _send(control, {})
            else:
                for fd in fds:
                    os.close(fd)
                _send(control, {"error": "unknown request"})
    finally:
        for pid, group in children.items():
            _kill(pid)
            _remove_group(group)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    control = socket.socket(fileno=int(argv[0]))
    for name in WARM_MODULES:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - a runner imports what is missing itself
            pass
    if _threads() != 1:  # forking a threaded process could copy a held lock: refuse
        _send(control, {"ready": False, "why": f"{_threads()} threads after the imports"})
        return
    _send(control, {"ready": True})
    serve(control)


# ------------------------------------------------------------------------------ the client


class ForkServer:
    """The grader's handle on one fork server process (see the module docstring)."""

    def __init__(self, env: dict[str, str], startup_timeout: float = 60.0) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.lock = threading.Lock()
        self.owner = os.getpid()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-m", "coursetools.grading.trusted.forkserver", str(theirs.fileno())],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                cwd="/",
                pass_fds=(theirs.fileno(),),
            )
        finally:
            theirs.close()
        self.sock = ours
        self.sock.settimeout(startup_timeout)
        try:
            hello, _ = _receive(self.sock)
        except (EOFError, OSError, ValueError) as exc:
            self.close()
            raise OSError(f"the fork server did not start ({exc})") from exc
        if not hello.get("ready"):
            self.close()
            raise OSError(f"the fork server refused to serve: {hello.get('why')}")
        self.sock.settimeout(30)

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None

    def spawn(self, cwd: str, log_fd: int) -> tuple[socket.socket, int]:
        """A new runner working in ``cwd`` with stderr on ``log_fd``: (its channel, its pid)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self.lock:
                _send(self.sock, {"op": "spawn", "cwd": str(cwd)}, (theirs.fileno(), log_fd))
                reply, _ = _receive(self.sock)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return ours, int(reply["pid"])

    def kill(self, pid: int) -> None:
        with self.lock:
            _send(self.sock, {"op": "kill", "pid": int(pid)})
            _receive(self.sock)

    def close(self) -> None:
        self.sock.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover - it exits when its socket closes
            self.proc.kill()
            self.proc.wait()


_SHARED: ForkServer | None = None
_SHARED_LOCK = threading.Lock()


def shared(env: dict[str, str]) -> ForkServer:
    """This process's fork server, started on first use (and again if it died)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or not _SHARED.alive():  # none yet, dead, or a forked parent's
            _SHARED = ForkServer(env)
        return _SHARED


if __name__ == "__main__":
    main()
