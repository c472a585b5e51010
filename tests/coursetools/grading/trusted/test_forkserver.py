"""The fork server that starts the trusted test runners warm (coursetools/grading/trusted/forkserver.py).

A forked runner must be indistinguishable from ``python -I -m coursetools.grading.trusted.runner`` started
afresh: it runs tests over its channel, in the submission's directory, logs to the grader's file,
and has a random stream of its own. The server must never signal a process that is not one of
its live children, and must take its children with it when the grader goes away.
"""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
import time

import pytest

from coursetools.grading import grade
from coursetools.grading.trusted import forkserver

SETUP = {"prelude": ["import numpy as np", "import os"], "answers": []}


def _run_tests(runner: grade.TrustedRunner, sources: list[str]) -> list[dict]:
    """Start ``runner``, run each test source in it, stop it: the results."""

    async def go() -> list[dict]:
        await runner.start()
        results = []
        try:
            for i, source in enumerate(sources):
                await runner.send(
                    {"op": "test", "test": {"grade_id": f"t{i}", "points": 1.0,
                                            "source": source, "hidden_lines": []}}
                )
                message = await runner.receive(30)
                assert message["op"] == "result"
                results.append(message["result"])
        finally:
            await runner.stop()
        return results

    return asyncio.run(go())


@pytest.fixture
def home(tmp_path):
    return tmp_path


def test_a_forked_runner_grades_in_the_submissions_directory_and_logs_to_the_graders_file(home):
    runner = grade.TrustedRunner(home, SETUP)
    passed, failed, where = _run_tests(
        runner,
        [
            "assert np.sqrt(4.0) == 2.0, 'numpy works'\nprint('to the log')",
            "assert 1 + 1 == 3, 'the instructor message'",
            "assert False, os.getcwd()",
        ],
    )
    assert runner.server is not None  # it came from the fork server, not a fresh interpreter
    assert passed["points"] == 1.0
    assert failed["points"] == 0.0 and "the instructor message" in failed["message"]
    assert where["message"] == str(home)
    runner.log.seek(0)
    assert b"to the log" in runner.log.read()


def test_runners_do_not_share_numpys_global_random_stream(home):
    # Forked children would inherit the server's legacy numpy state; each must re-seed.
    draws = set()
    for _ in range(3):
        (result,) = _run_tests(grade.TrustedRunner(home, SETUP),
                               ["assert False, repr(np.random.random())"])
        draws.add(result["message"])
    assert len(draws) == 3


def test_without_a_fork_server_the_runner_starts_the_slow_way(home, monkeypatch):
    def broken(env):
        raise OSError("no fork server here")

    monkeypatch.setattr(forkserver, "shared", broken)
    runner = grade.TrustedRunner(home, SETUP)
    (result,) = _run_tests(runner, ["assert False, os.getcwd()"])
    assert runner.server is None and result["message"] == str(home)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_kill_signals_only_the_servers_own_live_children():
    server = forkserver.ForkServer(grade.TrustedRunner.environment())
    try:
        with tempfile.TemporaryFile() as log:
            channel, pid = server.spawn("/", log.fileno())
            assert _alive(pid)
            server.kill(os.getpid())  # not its child: ignored (we are still here)
            server.kill(1)
            server.kill(pid)
            assert not _alive(pid)
            assert channel.recv(1) == b""  # the grader sees the runner's channel close
            server.kill(pid)  # reaped already: a no-op, even if the pid were recycled
            channel.close()
            # The server still serves after all that.
            channel, pid = server.spawn("/", log.fileno())
            assert _alive(pid)
            server.kill(pid)
            channel.close()
    finally:
        server.close()


def test_the_server_takes_its_runners_with_it_when_the_grader_goes():
    server = forkserver.ForkServer(grade.TrustedRunner.environment())
    with tempfile.TemporaryFile() as log:
        channel, pid = server.spawn("/", log.fileno())
        assert _alive(pid)
        server.close()  # as when the grading process exits: its end of the socket closes
        assert server.proc.returncode is not None
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid)
        channel.close()


def test_the_shared_server_is_per_process_and_restarted_when_dead():
    env = grade.TrustedRunner.environment()
    first = forkserver.shared(env)
    assert forkserver.shared(env) is first
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait()
    second = forkserver.shared(env)
    assert second is not first and second.alive()
    first.owner = -1  # as a forked grading process sees its parent's server
    assert not first.alive()
