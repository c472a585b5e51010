"""One sandboxed kernel for one submission: start it, run code in it, stop it.

One job: launch an IPython kernel through the sandbox launcher (:mod:`coursetools.grading.sandboxed.sandbox`) and
exchange execute requests with it over the shell channel only. The grader never subscribes to the
kernel's output broadcast (IOPub): nothing a student prints, displays or raises reaches the
grader's memory, and the only data that comes back is the execute reply, whose size ZeroMQ caps
(``MAXMSGSIZE``: a bigger message drops the connection, which the socket's monitor reports, and the
request ends at once as ``dropped`` once a small request shows the kernel alive): 4 MiB for a cell,
whose reply only needs its status, and the bridge's limit for the calls a test makes. The reply's HMAC
signature is checked by jupyter_client's ``Session``. Whatever the kernel says is treated as the
student's: it can decide what their code returns, never a grade.

Every start uses fresh directories made by root outside the workspace: a run directory for the
connection file and sockets (the kernel may add sockets but not replace root's files) and an empty
mount point on which the launcher mounts the private workspace. In bwrap and setuid modes the run
directory is a 1 MiB tmpfs of 64 inodes mounted for this start and detached when the kernel stops
(:func:`coursetools.grading.sandboxed.sandbox.mount_run_dir`): a kernel that fills it fills only its own, never the
host's ``TMPDIR``. In rlimit mode (not root) it is a plain directory, capped per file only. A hung
or dead kernel is reported as such; the caller restarts it.

The one exception is the *display run* (:func:`coursetools.grading.grade.display_run`), which runs no
test and exists to show the student their own outputs: a session made with an
:class:`~coursetools.grading.sandboxed.outputs.OutputCollector` also subscribes to IOPub, with each message capped by
ZeroMQ (``MAXMSGSIZE``) and the queue by its high-water mark, and hands every output of its cells
to the collector, which keeps a bounded, inert copy. A cell's outputs are complete when the
kernel's "idle" status for that request arrives on IOPub (the protocol publishes it after the
cell's last output and after its reply): the session waits for it, with no timer but the cell's
own deadline. Two things cut outputs, and only they make the page say "some output of this cell
was lost": a message over the size cap, which makes ZeroMQ drop the subscription (seen as a
``DISCONNECTED`` event on the socket's monitor), and a queue overflow, which drops messages,
possibly the "idle" itself: a ``kernel_info_request`` sent after the reply (a *probe*) is
handled after the cell, so its own status arriving before the cell's "idle" proves that idle was
dropped. A loaded machine only makes the wait longer. A subscription only takes effect some time
after it is made, so no cell runs until a probe's status has come through it.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from coursetools.grading import bridge
from coursetools.grading.sandboxed import sandbox as sbx
from coursetools.grading.sandboxed.budget import Budget
from coursetools.grading.sandboxed.outputs import OutputCollector

__all__ = ["Outcome", "KernelSession", "BRIDGE_MODULE", "MAX_CELL_REPLY_BYTES"]

BRIDGE_MODULE = "_coursetools_bridge"
MAX_REPLY_BYTES = bridge.MAX_BYTES * 4 // 3 + (1 << 20)  # a base64 reply plus its envelope
MAX_CELL_REPLY_BYTES = 4 * 1024**2  # a cell's reply: its status (and a traceback we never read)
# Every reply to a test's call is counted against one budget per submission (bridge.SUBMISSION_BYTES,
# all kernel restarts together): once it is spent, each further call fails at once ("budget"),
# without a request to the kernel. A message with more JSON values than bridge.MAX_PARTS is never
# parsed (counted on its raw frames first): "refused" for a call, "error" for a cell.
POLL_SECONDS = 0.2
CUT_PROBES = 5  # probes after a dropped connection, a pause apart (see KernelSession._after_cut)
IOPUB_QUEUE = 64  # messages queued for the display run: with the size cap, a bounded memory
# wall seconds for the probes after a cut, whatever is left of the cell's budget
CUT_PROBE_SECONDS = 10.0
# messages read after the budget ran out before the answer is "timeout" (a kernel flooding replies)
LATE_READS = 64
RESUBSCRIBE_SECONDS = 60.0  # after a cut, how long a fresh subscription may take to carry a probe


@dataclass
class Outcome:
    """What became of one execute request."""

    # "ok" | "error" | "timeout" | "died" | "dropped" (a reply over the cap) | "budget" | "refused"
    status: str
    expressions: dict = field(default_factory=dict)


WIDE_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u(?!00[0-9a-fA-F]{2})")  # a real \\uXXXX above U+00FF


def _unreadable(frames: list) -> bool:
    """Whether parsing a message's frames could cost far more memory than their size.

    Two bounds, on the raw bytes, before jupyter_client's ``Session`` parses anything (a forged
    reply may put its bulk anywhere in the message, not only in the bridge's reply text):

    - more JSON values than the bridge accepts (the count of
      :func:`coursetools.grading.bridge.count_parts`): ``[{},{},...]`` is 24 times its size as objects;
    - a frame over :data:`coursetools.grading.bridge.MAX_TEXT_BYTES` with a byte outside ASCII or a
      ``\\u`` escape above U+00FF: one character beyond Latin-1 makes its whole string 2 or 4
      bytes a character. An honest large reply is the bridge's ASCII text of an array.
    """
    total = 0
    for frame in frames:
        total += sum(frame.count(c) for c in (b"[", b"{", b",", b":"))
        if total > bridge.MAX_PARTS:
            return True
        if len(frame) > bridge.MAX_TEXT_BYTES:
            if not frame.isascii() or (b"\\u" in frame and WIDE_ESCAPE.search(frame)):
                return True
    return False


def _bridge_install() -> str:
    source = Path(bridge.__file__).read_text(encoding="utf-8")
    return (
        "def __coursetools_install(source):\n"
        "    import sys, types\n"
        f"    module = types.ModuleType({BRIDGE_MODULE!r})\n"
        "    sys.modules[module.__name__] = module\n"
        "    exec(compile(source, '<coursetools bridge>', 'exec'), module.__dict__)\n"
        "    module.server = module.Server(get_ipython().user_ns)\n"
        f"__coursetools_install({source!r})\n"
        "del __coursetools_install\n"
    )


@dataclass
class KernelSpecification:
    """Where and how the sandboxed kernel runs (everything the launcher needs)."""

    home: Path  # the submission's private grading directory (root, 0711)
    stage: Path  # files copied into each new workspace
    config: Path  # empty, read-only IPython and Jupyter directories
    mode: str
    uid: int
    limits: sbx.Limits
    overlays: list[tuple[str, str]] = field(default_factory=list)
    cgroup_procs: list[str] = field(default_factory=list)
    hide: list[str] = field(default_factory=list)
    startup_timeout: float = 60.0


class KernelSession:
    """A sandboxed kernel reached through its shell channel only."""

    reply_bytes = 0  # bytes of call replies read so far, over every kernel of this session

    def __init__(self, spec: KernelSpecification, collector: OutputCollector | None = None) -> None:
        self.spec = spec
        self.collector = collector  # None: IOPub is never read (every graded run)
        self.km = None
        self.sockets: dict[bool, object] = {}  # large replies allowed -> shell socket
        # the same -> its socket's monitor (DISCONNECTED: a reply over the cap, or a dead kernel)
        self.cuts: dict[bool, object] = {}
        self.iopub = None
        self.monitor = None  # the IOPub socket's DISCONNECTED events: a subscription cut
        self.subscription_confirmed = False  # a probe came through the current subscription
        self.context = None
        self.run_dir: str | None = None  # this start's run directory (a tmpfs when root)
        self.log = tempfile.TemporaryFile()  # the launcher's stderr (bounded by RLIMIT_FSIZE)

    def _manager(self, run_dir: str, workspace: str):
        from jupyter_client.kernelspec import KernelSpec
        from jupyter_client.manager import AsyncKernelManager

        argv = sbx.kernel_argv(
            mode=self.spec.mode,
            uid=self.spec.uid,
            limits=self.spec.limits,
            run_dir=run_dir,
            workspace=workspace,
            stage=str(self.spec.stage),
            config=str(self.spec.config),
            overlays=self.spec.overlays,
            cgroup_procs=self.spec.cgroup_procs,
            hide=self.spec.hide,
            readonly=sbx.readonly_paths(),
        )

        class SandboxKernelManager(AsyncKernelManager):
            @property
            def kernel_spec(self):  # noqa: D401 - the sandbox launcher, not a named kernelspec
                return KernelSpec(argv=argv, display_name="sandbox", language="python")

        return SandboxKernelManager(
            kernel_name="python3",
            transport="ipc",
            ip=os.path.join(run_dir, "k"),
            connection_file=os.path.join(run_dir, "connection.json"),
        )

    async def start(self) -> None:
        """Launch a fresh kernel and install the bridge server in it (before any student code)."""
        import zmq
        import zmq.asyncio

        run_dir = tempfile.mkdtemp(prefix="run-", dir=self.spec.home)
        self.run_dir = run_dir
        if self.spec.mode != "rlimit":
            sbx.mount_run_dir(run_dir)
        workspace = tempfile.mkdtemp(prefix="ws-", dir=self.spec.home)
        if self.spec.mode == "rlimit":
            os.chmod(workspace, 0o700)
        self.km = self._manager(run_dir, workspace)
        self.log.seek(0)
        self.log.truncate()
        try:
            await self.km.start_kernel(
                cwd=str(self.spec.home), stdout=subprocess.DEVNULL, stderr=self.log
            )
        except Exception as exc:
            await self.stop()
            raise RuntimeError(
                f"the kernel did not start ({exc}): {self._last_log_line()}"
            ) from exc
        self.context = zmq.asyncio.Context()
        for large in (False, True):
            self._connect_shell(large)
        info = await self._request(
            "kernel_info_request", {}, self.spec.startup_timeout, reply="kernel_info_reply"
        )
        if info.status != "ok":
            await self.stop()
            raise RuntimeError(
                f"the kernel did not answer ({info.status}): {self._last_log_line()}"
            )
        if self.collector is not None:
            # A subscription takes effect some time after connect (ZeroMQ's "slow joiner"): what
            # the kernel publishes before then is never seen. Seen in a full test run: the first
            # cell's outputs and "idle" all lost, and the page said "lost" after a 60 s wait.
            self._subscribe()
            await self._await_subscription(self.spec.startup_timeout)
        installed = await self.execute(_bridge_install(), self.spec.startup_timeout, silent=True)
        if installed.status != "ok":
            await self.stop()
            raise RuntimeError(f"the kernel could not be prepared ({installed.status})")

    def _connect_shell(self, large: bool) -> None:
        """A shell socket with its reply cap, and a monitor that reports when ZeroMQ drops it."""
        import zmq

        self._close_shell(large)
        socket = self.context.socket(zmq.DEALER)
        socket.setsockopt(zmq.MAXMSGSIZE, MAX_REPLY_BYTES if large else MAX_CELL_REPLY_BYTES)
        socket.setsockopt(zmq.RCVHWM, 64)
        socket.setsockopt(zmq.LINGER, 0)
        self.cuts[large] = socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        socket.connect(self.km._make_url("shell"))
        self.sockets[large] = socket

    def _close_shell(self, large: bool) -> None:
        socket, monitor = self.sockets.pop(large, None), self.cuts.pop(large, None)
        if socket is not None:
            try:
                socket.disable_monitor()
            except Exception:  # noqa: BLE001 - the socket may already be closed
                pass
            socket.close(linger=0)
        if monitor is not None:
            monitor.close(linger=0)

    async def _after_cut(self, large: bool, budget: Budget, probing: bool) -> Outcome:
        """The connection a reply was awaited on was dropped: a message over its cap (ZeroMQ does
        not reconnect after that) or the kernel's death. A fresh socket, and a small request on the
        cell socket tells which: answered, the reply was ``dropped`` and the kernel lives on. A
        dying kernel can cut the probe's connection too (once, as its sockets close), so a cut
        probe is tried again after a pause, :data:`CUT_PROBES` times at most: a kernel that cuts
        every one is alive and sending messages over the cap (``dropped``), and never makes the
        grader spin."""
        import asyncio

        self._connect_shell(large)
        if probing:
            return Outcome("cut")
        # The probes have their own few seconds: a reply dropped just as the cell's wall clock
        # ran out (a busy machine) is still reported as dropped, not as a timeout.
        probes = Budget(CUT_PROBE_SECONDS)
        for _ in range(CUT_PROBES):
            alive = await self._request(
                "kernel_info_request", {}, probes, reply="kernel_info_reply", probing=True
            )
            if alive.status != "cut":
                return Outcome("dropped") if alive.status in ("ok", "error") else alive
            await asyncio.sleep(POLL_SECONDS)
            if not await self.km.is_alive():
                return Outcome("died")
        return Outcome("dropped")

    def _last_log_line(self) -> str:
        self.log.seek(0)
        lines = [
            x for x in self.log.read(1 << 20).decode(errors="replace").splitlines() if x.strip()
        ]
        return lines[-1][:200] if lines else ""

    async def execute(
        self,
        code: str,
        timeout: float | Budget,
        *,
        silent: bool = False,
        user_expressions: dict | None = None,
        large_reply: bool = False,
    ) -> Outcome:
        """Run ``code``; ``ok``, ``error`` (it raised), ``timeout`` or ``died``.

        ``timeout`` is wall seconds, or a :class:`~coursetools.grading.sandboxed.budget.Budget`
        (CPU seconds with a wall-clock backstop), checked every :data:`POLL_SECONDS`.

        ``large_reply`` allows a reply up to the bridge's limit (a test's call); otherwise a reply
        over 4 MiB is dropped: ``dropped`` (the kernel lives on, its reply unread), at once.
        """
        content = {
            "code": code,
            "silent": silent,
            "store_history": not silent,
            "user_expressions": user_expressions or {},
            "allow_stdin": False,
            "stop_on_error": False,
        }
        return await self._request(
            "execute_request", content, timeout, reply="execute_reply", large=large_reply
        )

    async def _request(
        self,
        msg_type: str,
        content: dict,
        timeout: float | Budget,
        *,
        reply: str,
        large: bool = False,
        probing: bool = False,
    ) -> Outcome:
        import zmq

        if self.km is None or large not in self.sockets:
            return Outcome("died")
        if self.cuts[large].get(zmq.EVENTS) & zmq.POLLIN:  # dropped since the last request
            self._connect_shell(large)
        socket, cut = self.sockets[large], self.cuts[large]
        if large and self.reply_bytes >= bridge.SUBMISSION_BYTES:
            return Outcome("budget")
        session = self.km.session
        sent = session.msg(msg_type, content)
        session.send(socket, sent)
        msg_id = sent["header"]["msg_id"]
        budget = timeout if isinstance(timeout, Budget) else Budget(timeout)
        capture = (
            self.iopub is not None and msg_type == "execute_request" and not content.get("silent")
        )
        idle = False
        late = 0  # messages read after the budget ran out
        poller = zmq.asyncio.Poller()
        poller.register(socket, zmq.POLLIN)
        poller.register(cut, zmq.POLLIN)
        if capture:
            poller.register(self.iopub, zmq.POLLIN)
        while True:
            # What already came (a reply, a cut connection) is read before the clock is asked: a
            # grader that was itself kept off the CPU must not call a dropped reply a timeout.
            # The budget is always asked, so that one cut by the wall clock knows it (starved).
            expired = budget.expired()
            left = budget.wall_left()
            if expired:
                late += 1
                if late > LATE_READS:
                    return Outcome("timeout")
            try:
                wait_ms = 0 if expired else int(max(0.0, min(left, POLL_SECONDS)) * 1000)
                events = dict(await poller.poll(wait_ms))
                if capture and self.iopub in events and self._drain_iopub(msg_id) == "idle":
                    idle = True  # it may come before the reply is read: the cell is done
                ready = socket in events
            except zmq.ZMQError:
                return Outcome("died")
            if cut in events and not ready:  # dropped: a message over the cap, or a dead kernel
                return await self._after_cut(large, budget, probing)
            if not ready:
                if expired:
                    return Outcome("timeout")
                if not await self.km.is_alive():
                    return Outcome("died")
                continue
            try:
                frames = await socket.recv_multipart(copy=True)
            except zmq.ZMQError:
                return Outcome("died")
            if large:
                self.reply_bytes += sum(len(frame) for frame in frames)
            if _unreadable(frames):  # parsing it could take gigabytes: never parsed
                return Outcome("refused" if large else "error")
            try:
                _idents, parts = session.feed_identities(frames, copy=True)
                message = session.deserialize(parts, content=True, copy=True)
            except Exception:  # noqa: BLE001 - a malformed or unsigned message is ignored
                continue
            if (
                message.get("msg_type") != reply
                or message.get("parent_header", {}).get("msg_id") != msg_id
            ):
                continue
            body = message.get("content", {}) if isinstance(message.get("content"), dict) else {}
            status = "ok" if body.get("status") == "ok" else "error"
            expressions = body.get("user_expressions")
            if capture and not idle:  # "idle" follows the cell's last outputs
                await self._until_idle(msg_id, time.monotonic() + max(budget.wall_left(), 0.0))
            return Outcome(status, expressions if isinstance(expressions, dict) else {})

    def _subscribe(self) -> None:
        """A fresh IOPub subscription (size-capped, bounded queue) and its monitor."""
        import zmq

        self.subscription_confirmed = False  # until a probe's status comes through it
        self.iopub = self.context.socket(zmq.SUB)
        self.iopub.setsockopt(zmq.MAXMSGSIZE, self.collector.limits.message_bytes)
        self.iopub.setsockopt(zmq.RCVHWM, IOPUB_QUEUE)
        self.iopub.setsockopt(zmq.LINGER, 0)
        self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        self.monitor = self.iopub.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self.iopub.connect(self.km._make_url("iopub"))

    def _unsubscribe(self) -> None:
        if self.iopub is not None:
            try:
                self.iopub.disable_monitor()
            except Exception:  # noqa: BLE001 - the socket may already be closed
                pass
            self.iopub.close(linger=0)
            self.iopub = None
        if self.monitor is not None:
            self.monitor.close(linger=0)
            self.monitor = None

    def _cut(self) -> bool:
        """Whether the subscription was dropped (a message over the size cap) since it was made."""
        import zmq

        try:
            return self.monitor is not None and bool(self.monitor.get(zmq.EVENTS) & zmq.POLLIN)
        except zmq.ZMQError:
            return True

    def _drain_iopub(self, msg_id: str, probe: str | None = None) -> str | None:
        """Hand this cell's queued outputs to the collector.

        Returns ``"idle"`` once the kernel said idle for ``msg_id``, ``"probe"`` once a status
        for the request ``probe`` came first (so the cell's idle was dropped), else None.
        """
        import zmq

        session = self.km.session
        for _ in range(1000):  # a bounded batch; the poll loop comes back for more
            try:
                frames = self.iopub.recv_multipart(zmq.NOBLOCK, copy=True)
            except zmq.Again:
                break
            except zmq.ZMQError:
                break
            if hasattr(frames, "__await__"):  # the asyncio socket returns a done future
                try:
                    frames = frames.result()
                except Exception:  # noqa: BLE001 - nothing queued after all
                    break
            try:
                _idents, parts = session.feed_identities(frames, copy=True)
                message = session.deserialize(parts, content=True, copy=True)
            except Exception:  # noqa: BLE001 - a malformed or unsigned message is ignored
                continue
            parent = message.get("parent_header", {}).get("msg_id")
            kind, body = message.get("msg_type"), message.get("content")
            if probe is not None and parent == probe and kind == "status":
                return "probe"
            if parent != msg_id:
                continue
            if kind == "status":
                if isinstance(body, dict) and body.get("execution_state") == "idle":
                    return "idle"
            else:
                self.collector.add(kind, body)
        return None

    def _send_probe(self) -> str:
        """A ``kernel_info_request`` on the shell channel (its reply is skipped by the next read)."""
        probe = self.km.session.msg("kernel_info_request", {})
        self.km.session.send(self.sockets[False], probe)
        return probe["header"]["msg_id"]

    async def _until_idle(self, msg_id: str, deadline: float) -> None:
        """Wait for the cell's "idle" (its last outputs), until the cell's ``deadline``.

        "Lost" is said only when outputs were cut: the subscription dropped, or the cell's idle
        dropped (a probe's status came first), or no idle by the deadline.
        """
        import zmq

        probe = self._send_probe()
        poller = zmq.asyncio.Poller()
        poller.register(self.iopub, zmq.POLLIN)
        poller.register(self.monitor, zmq.POLLIN)
        while True:
            try:
                seen = self._drain_iopub(msg_id, probe)
            except zmq.ZMQError:
                seen = None
            if seen == "idle":
                return
            if seen == "probe" or self._cut():
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                await poller.poll(int(min(left, POLL_SECONDS) * 1000) + 1)
            except zmq.ZMQError:
                break
            if not await self.km.is_alive():
                return  # the next request reports the death
        self.collector.add_note(
            "some output of this cell was lost (too much of it, or one piece over "
            f"{self.collector.limits.message_bytes // 1024**2} MiB)"
        )
        await self._resubscribe()

    async def _resubscribe(self) -> None:
        """Subscribe afresh and wait until a probe's status comes through (the next cell's outputs
        then reach the new subscription), re-sending a probe every half second."""
        self._unsubscribe()
        self._subscribe()
        await self._await_subscription(RESUBSCRIBE_SECONDS)

    async def _await_subscription(self, timeout: float) -> None:
        """Wait until a probe's status comes through the subscription (so the next cell's outputs
        reach it), re-sending a probe every half second; give up after ``timeout`` seconds."""
        import zmq

        end = time.monotonic() + timeout
        probe, sent = self._send_probe(), time.monotonic()
        while time.monotonic() < end:
            try:
                if self._drain_iopub("", probe) == "probe":
                    self.subscription_confirmed = True
                    return
                await self.iopub.poll(int(POLL_SECONDS * 1000), zmq.POLLIN)
            except zmq.ZMQError:
                return
            if time.monotonic() - sent > 0.5:  # sent before the subscription was in place
                probe, sent = self._send_probe(), time.monotonic()
            if not await self.km.is_alive():
                return

    async def stop(self) -> None:
        for large in list(self.sockets):
            self._close_shell(large)
        self._unsubscribe()
        if self.context is not None:
            self.context.term()
            self.context = None
        if self.km is not None:
            try:
                await self.km.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001 - the kernel may be long gone
                pass
            self.km = None
        if self.run_dir is not None:
            try:
                sbx.release_run_dir(self.run_dir)
            except OSError:  # the grader's home is removed after the run anyway
                pass
            self.run_dir = None
