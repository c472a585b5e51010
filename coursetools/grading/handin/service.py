"""Feedback at hand-in: grade each submission as it arrives in nbgrader's exchange.

One job: watch ``<exchange>/<course>/inbound/`` and, for each new submission folder, decide
(:mod:`coursetools.grading.handin.queue`, by the assignment's
:mod:`~coursetools.grading.handin.policy`), grade it in the sandbox with the trusted runner (the
grading function is handed in: the local pool or a Dask scheduler, as ``make grade`` uses), hand
the results to the caller (the command line records them in nbgrader's gradebook, the grades
files and the class page), and put the student's feedback page where nbgrader's *Fetch
Feedback* looks: ``<exchange>/<course>/feedback/<hash>.html``, the hash being nbgrader's
``notebook_hash`` of the submission's secret and notebook name, so only the student who handed it
in can fetch it. A submission that is not graded (past the attempts, within the cool-down, after
the deadline) gets a page that says why and when the next attempt counts.

What the page shows before the deadline: per exercise, passed or failed, and the visible tests'
messages; a failing hidden test's message only as the assignment's ``hidden_messages`` allows
(otherwise "a hidden test failed"). Never a hidden test's source (the feedback renderer never
shows one).

Trust: the exchange's ``inbound/`` is written by students. A folder is read as ``make grade``
reads a student's folder (:func:`coursetools.grading.classroom.collect.inbound_job`: no link
followed, regular files only, capped). The folder's name says whose it is; with ``check_owner``
(the default, as nbgrader's own collect) the folder must belong to the operating-system user of
that name, or it is refused unread (one student could otherwise hand in under another's name and
spend their attempts). On a one-account demo hub every folder is the hub's: the check is off there.
"""

from __future__ import annotations

import copy
import os
import pwd
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from coursetools.authoring.release import find_assignments
from coursetools.grading.classroom import collect, feedback
from coursetools.grading.grade import Job, Options
from coursetools.grading.handin.policy import Policies, Policy, load_policies
from coursetools.grading.handin.queue import HandinQueue, Row, format_time

__all__ = ["ServiceConfig", "HandinService", "WITHHELD"]

WITHHELD = "a hidden test failed"


@dataclass(frozen=True)
class ServiceConfig:
    """Where the service reads and writes, and its rules."""

    exchange_root: Path
    course_id: str
    source_root: Path
    state_dir: Path
    policies: Policies = Policies()
    options: Options = Options()
    check_owner: bool = True
    batch: int = 1  # submissions graded at once (the grading function's workers)
    settings_path: Path | None = None  # read again whenever it changes (a bad edit is logged, not used)

    @property
    def inbound(self) -> Path:
        return Path(self.exchange_root) / self.course_id / "inbound"

    @property
    def outbound_feedback(self) -> Path:
        return Path(self.exchange_root) / self.course_id / "feedback"


class HandinService:
    """The service: :meth:`run_once` does one round, :meth:`serve` loops until stopped.

    Parameters
    ----------
    config : ServiceConfig
    grade_batch : callable
        ``grade_batch(jobs) -> results``, one result per job (``coursetools.cli.grade_class``).
    on_graded : callable, optional
        ``on_graded(jobs, results)``, called before a submission is marked graded (it records
        the results: gradebook, grades, class page). It must be idempotent: after a restart a
        submission whose run was interrupted is graded again and handed over again.
    clock : callable
        POSIX time (tests pass their own).
    """

    def __init__(
        self,
        config: ServiceConfig,
        *,
        grade_batch: Callable[[list[Job]], list[dict]],
        on_graded: Callable[[list[Job], list[dict]], None] | None = None,
        clock: Callable[[], float] = time.time,
        log: Callable[[str], None] = print,
    ):
        self.config = config
        self.grade_batch = grade_batch
        self.on_graded = on_graded
        self.clock = clock
        self.log = log
        state = Path(config.state_dir)
        state.mkdir(parents=True, exist_ok=True)
        os.chmod(state, 0o700)  # the queue names every student: the service's alone
        self.queue = HandinQueue(state / "queue.sqlite", clock=clock)
        self.assignments = set(find_assignments(Path(config.source_root)))
        self._settings_mtime = self._mtime()

    def _mtime(self) -> float | None:
        try:
            return os.stat(self.config.settings_path).st_mtime if self.config.settings_path else None
        except OSError:
            return None

    def reload_settings(self) -> bool:
        """Read the settings file again if it changed; True if new rules are in force."""
        mtime = self._mtime()
        if mtime is None or mtime == self._settings_mtime:
            return False
        self._settings_mtime = mtime
        try:
            policies = load_policies(self.config.settings_path)
        except ValueError as exc:
            self.log(f"handin: {exc}; the previous rules stay in force")
            return False
        self.config = replace(self.config, policies=policies)
        self.log(f"handin: rules read again from {self.config.settings_path}")
        return True

    # ------------------------------------------------------------------------------ a round

    def scan(self) -> list[Row]:
        """Record every new submission folder (admitted or refused); returns the new rows."""
        new = []
        now = self.clock()
        for entry in collect.list_inbound(self.config.inbound):
            if self.queue.known(entry.folder):
                continue
            policy = self.config.policies[entry.assignment]
            arrived = min(entry.changed, now)
            if entry.assignment not in self.assignments:
                row = self.queue.add_refused(entry.folder, entry.student, entry.assignment, arrived,
                                             "unknown assignment")
            elif self.config.check_owner and not _owned_by(entry):
                # never a page: the secret inside belongs to whoever made the folder
                row = self.queue.add_refused(entry.folder, entry.student, entry.assignment, arrived, "owner")
            else:
                row = self.queue.add(entry.folder, entry.student, entry.assignment, arrived, policy)
            if row is not None:
                new.append(row)
                self.log(
                    f"handin: {feedback.display_name(row.student)}/{feedback.display_name(row.assignment)}"
                    f" {row.state}{' (' + row.reason + ')' if row.reason else ''}"
                )
        return new

    def publish_refusals(self) -> int:
        """A page for every refused submission that has none yet; returns how many."""
        done = 0
        for row in self.queue.unpublished_refusals():
            # the secret only: a refused submission's notebook is never read (a flood costs nothing)
            job = Job(row.student, row.assignment, "", "", None, f"{row.assignment}.ipynb",
                      exchange=collect.inbound_metadata(self.config.inbound, _entry(row)))
            lines = self._refusal_lines(row)
            self._publish(job, feedback.render_notice(row.student, row.assignment, lines))
            self.queue.mark_published(row.folder)
            done += 1
        return done

    def grade_some(self) -> int:
        """Grade up to ``batch`` pending submissions in the fair order; returns how many."""
        rows = self.queue.claim(self.config.batch)
        if not rows:
            return 0
        jobs = [
            collect.inbound_job(self.config.inbound, _entry(r), self.config.source_root, self.config.options)
            for r in rows
        ]
        results = self.grade_batch(jobs)
        for row, job, result in zip(rows, jobs, results, strict=True):
            if result.get("grader_error"):
                again = self.queue.give_back(row.folder)
                self.log(f"handin: grader error on {feedback.display_name(row.student)}: {again.state}")
                continue
            try:
                if self.on_graded is not None:
                    self.on_graded([job], [result])
                self._publish(job, self.page(row, result))
            except Exception as exc:  # noqa: BLE001 - a full disk, a locked gradebook: try again later
                again = self.queue.give_back(row.folder)  # "failed" after MAX_TRIES, never a loop
                self.log(f"handin: could not record {feedback.display_name(row.student)}"
                         f"/{feedback.display_name(row.assignment)} ({type(exc).__name__}: {exc}): {again.state}")
                continue
            self.queue.finish(row.folder, float(result["score"]), float(result["max_score"]))
            self.log(
                f"handin: graded {feedback.display_name(row.student)}/{feedback.display_name(row.assignment)}"
                f" {result['score']:g}/{result['max_score']:g} in {result.get('seconds', 0):.1f} s"
            )
        return len(rows)

    def run_once(self) -> int:
        """Scan, queue the deadline's last submissions, publish refusals, grade (unless paused)."""
        self.reload_settings()
        self.scan()
        self.queue.final_candidates(self.config.policies)
        self.publish_refusals()
        if self.queue.paused:
            return 0
        return self.grade_some()

    def serve(self, poll_seconds: float = 2.0, should_stop: Callable[[], bool] = lambda: False) -> None:
        """Until ``should_stop()``: a round, then a pause of ``poll_seconds`` when it graded nothing."""
        recovered = self.queue.recover()
        if recovered:
            self.log(f"handin: {recovered} submission(s) were being graded when the service stopped: graded again")
        self.log(f"handin: watching {self.config.inbound}")
        while not should_stop():
            if self.run_once() == 0:
                time.sleep(poll_seconds)

    # ------------------------------------------------------------------------------ the pages

    def page(self, row: Row, result: dict) -> str:
        """The student's page for a graded submission, with the policy's notice and withholding."""
        policy = self.config.policies[row.assignment]
        shown = withhold_hidden(result) if not policy.shows_hidden_messages(self.clock()) else result
        return feedback.render_html(shown, notice=self._graded_lines(row, policy))

    def _graded_lines(self, row: Row, policy: Policy) -> list[str]:
        if row.final:
            lines = ["Graded at the deadline: your last submission before it is the one that counts."]
        else:
            of = f" of {policy.attempts}" if policy.attempts else ""
            lines = [f"Graded when you handed it in: attempt {row.attempt}{of}. Your last graded attempt counts."]
            nxt = self.queue.next_attempt_at(row.student, row.assignment, policy)
            if policy.attempts and self.queue.attempts_used(row.student, row.assignment) >= policy.attempts:
                lines.append("You have used every graded attempt of this assignment.")
            elif nxt is not None and nxt > self.clock():
                lines.append(f"Your next submission is graded if you hand it in after {format_time(nxt)}.")
        if policy.hidden_messages == "never":
            lines.append("Hidden tests say only that they failed, not why.")
        elif policy.hidden_messages == "after_deadline" and not policy.shows_hidden_messages(self.clock()):
            when = f" ({format_time(policy.deadline.timestamp())})" if policy.deadline else ""
            lines.append(f"Hidden tests say only that they failed until the deadline{when}; then why.")
        return lines

    def _refusal_lines(self, row: Row) -> list[str]:
        policy = self.config.policies[row.assignment]
        first = f"This submission (handed in {format_time(row.arrived)}) was not graded: "
        if row.reason == "deadline":  # (the rules may have changed since: say only what is sure)
            when = f" ({format_time(policy.deadline.timestamp())})" if policy.deadline else ""
            return [first + f"the deadline{when} had passed.",
                    "Your last submission before the deadline is the one that counts."]
        if row.reason == "attempts":
            return [first + "you had used every graded attempt of this assignment.",
                    "Your last graded attempt counts; at the deadline your last submission is graded if it was not."]
        nxt = self.queue.next_attempt_at(row.student, row.assignment, policy)
        when = f" Hand in again after {format_time(nxt)}." if nxt is not None else ""
        return [first + f"it came less than {policy.cooldown_minutes:g} minute(s) after your previous "
                f"graded attempt.{when}",
                "Your last graded attempt counts; at the deadline your last submission is graded if it was not."]

    def _publish(self, job: Job, page: str) -> Path | None:
        """Write ``page`` where ``nbgrader fetch_feedback`` finds it for this submission."""
        from nbgrader.utils import notebook_hash

        meta = job.exchange or {}
        if not meta.get("secret"):
            self.log(f"handin: {feedback.display_name(job.student)}: no submission secret, page not released")
            return None
        out = self.config.outbound_feedback
        out.mkdir(parents=True, exist_ok=True)
        os.chmod(out, 0o755)  # as nbgrader's release_feedback makes it: readable, not writable
        name = notebook_hash(secret=meta["secret"], notebook_id=Path(job.notebook_name).stem or job.assignment)
        tmp = out / f".{name}.tmp"
        tmp.write_text(page, encoding="utf-8", errors="backslashreplace")
        os.chmod(tmp, 0o644)
        tmp.replace(out / f"{name}.html")
        return out / f"{name}.html"


def _entry(row: Row) -> collect.InboundEntry:
    return collect.InboundEntry(row.folder, row.student, row.assignment, row.arrived, -1)


def _owned_by(entry: collect.InboundEntry) -> bool:
    try:
        return pwd.getpwuid(entry.owner).pw_name == entry.student
    except KeyError:
        return False


def withhold_hidden(result: dict) -> dict:
    """A copy of ``result`` in which a failing hidden test's message is only :data:`WITHHELD`."""
    shown = copy.deepcopy(result)
    for cell in list(shown.get("cells", [])) + list(shown.get("feedback", [])):
        if cell.get("hidden"):
            cell["message"] = WITHHELD
    return shown


def summarize_rows(rows: Sequence[Row]) -> str:
    """The queue as the instructor's ``handin status`` prints it."""
    lines = []
    for r in rows:
        what = f"{r.score:g}/{r.max_score:g}" if r.score is not None else r.reason
        lines.append(
            f"{format_time(r.arrived)}  {feedback.display_name(r.student):<20} "
            f"{feedback.display_name(r.assignment):<28} {r.state:<8} {what}"
        )
    return "\n".join(lines)
