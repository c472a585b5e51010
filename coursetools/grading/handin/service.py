"""Feedback at hand-in: grade each submission as it arrives in nbgrader's exchange.

One job: watch ``<exchange>/<course>/inbound/`` and, for each new submission folder, decide
(:mod:`coursetools.grading.handin.queue`, by the assignment's
:mod:`~coursetools.grading.handin.policy`), grade it in the sandbox with the trusted runner (the
grading function is handed in: the local pool or a Dask scheduler, as ``make grade`` uses),
record the results through the class pipeline (``on_graded``, which
:func:`coursetools.grading.classroom.pipeline.recorder` makes: nbgrader's gradebook, the grades
files and the class page), and put the student's feedback page where nbgrader's *Fetch Feedback*
looks: ``<exchange>/<course>/feedback/<hash>.html``, the hash being nbgrader's ``notebook_hash``
of the submission's secret and notebook name, so only the student who handed it
in can fetch it. A submission that is not graded (past the attempts, within the cool-down, after
the deadline) gets a page that says why and when the next attempt counts.

What the page shows before the deadline: per exercise, passed or failed, and the visible tests'
messages; a failing hidden test's message only as the assignment's ``hidden_messages`` allows
(otherwise "a hidden test failed"). Never a hidden test's source (the feedback renderer never
shows one).

Trust: the exchange's ``inbound/`` is written by students, so every folder is hostile ground:

- **Any name** (not UTF-8, too long, a control character, no ``+``) is refused with a row, never
  an exception; the name is never shown unescaped.
- **Whose it is**: with ``check_owner`` (the default, as nbgrader's own collect) the folder must
  belong to the operating-system user it names, or it is refused unread; such a folder never
  stands for that student's submission (:data:`~coursetools.grading.handin.queue.NOT_THEIRS`).
  On a one-account demo hub every folder is the hub's: the check is off there.
- **Nothing rests on a secret name**: an ``inbound/`` every user can list is made unlistable (as
  nbgrader's release makes it, ``2733``, with the sticky bit:
  :func:`~coursetools.grading.classroom.collect.guard_inbound`); a folder the service is about to
  read loses group and other write at once (nbgrader's submit leaves it ``0777``:
  :func:`~coursetools.grading.classroom.collect.lock_inbound`), so no classmate can touch it or
  swap its files afterwards; the notebook and metadata must belong to the folder's owner and be
  writable by nobody else, or the folder is refused ``owner``.
- **What arrived is what is graded**: a folder is taken once it has settled (nothing in it
  changed for ``settle_seconds``: nbgrader's submit fills it file by file), read as ``make
  grade`` reads a student's folder (:func:`coursetools.grading.classroom.collect.snapshot_inbound`:
  no link followed, regular files only, capped), and its notebook copied into the service's
  private state with its SHA-256 recorded; the copy is graded. Read once, then checked: the
  notebook is opened and read, and only then are the times taken (``fstat`` on the open files and
  the folder); a change during the read leaves the folder for a later round. Its arrival is the
  latest inode change time of the folder (the service's own ``chmod`` undone) and of the files
  read, so a notebook edited, or renamed into place, after the deadline arrives after it.
- **A flood costs its author**: per round, only the newest new folder of each student and
  assignment is read (older ones are refused unread, ``superseded``, with no page), and a newer
  admitted submission replaces one still waiting: a student's 3,000 folders cost one read and
  one grading.
- **A stalled notebook holds one worker**: submissions are graded by a pool of ``workers`` and
  each is recorded the moment it finishes; the hand-in service's jobs carry a wall-clock budget
  (``Options.notebook_wall``) well below the notebook's own limit. One cut by it while it waited
  for a CPU (``starved``: :mod:`coursetools.grading.sandboxed.budget`) is graded once more, by one
  worker, with the same wall: at most two walls of one worker, never the class's time.
- **Private**: the feedback folder is ``0711`` as nbgrader's ``release_feedback`` makes it (a page
  is fetched by its hash, nobody lists the folder), pages ``0644``; the state folder ``0700``.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import copy
import hashlib
import json
import os
import pwd
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from coursetools import rendering
from coursetools.authoring.release import find_assignments
from coursetools.grading.classroom import collect, executors, feedback, pipeline
from coursetools.grading.handin import exchange_inbox
from coursetools.grading.handin.policy import Policies, Policy, load_policies
from coursetools.grading.handin.queue import HandinQueue, Row, format_time
from coursetools.grading.job import Job, Options
from coursetools.grading.sandboxed import limits

__all__ = ["ServiceConfig", "HandinService", "WITHHELD"]

WITHHELD = "a hidden test failed"
GRADABLE_REFUSALS = ("attempts", "cooldown")  # may still be graded at the deadline


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
    workers: int = 1  # submissions graded at once (the pool's workers)
    settings_path: Path | None = None  # read again whenever it changes (a bad edit is logged, not used)
    settle_seconds: float = 2.0  # a folder is taken once nothing in it changed for this long
    # The HTTP exchange (coursetools/exchange/: no shared disk) instead of nbgrader's folder: the
    # database URL and volume its service writes; hand-ins are read from there, pages put back.
    http_database: str | None = None
    http_volume: Path | None = None

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
    grade : callable
        ``grade(job) -> result`` (:func:`coursetools.grading.grade.grade_job`), run in ``pool``.
    pool : executors.Pool, optional
        Where ``grade`` runs (``config.workers`` processes, or a Dask cluster); by default in this
        process, one at a time.
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
        grade: Callable[[Job], dict],
        pool: executors.Pool | None = None,
        on_graded: Callable[[list[Job], list[dict]], None] | None = None,
        clock: Callable[[], float] = time.time,
        log: Callable[[str], None] = print,
    ):
        self.config = config
        self.grade = grade
        self.pool = pool if pool is not None else executors.Pool(workers=1)
        self.on_graded = on_graded
        self.clock = clock
        self.log = log
        state = Path(config.state_dir)
        state.mkdir(parents=True, exist_ok=True)
        os.chmod(state, 0o700)  # the queue names every student, the copies hold their work
        self.copies = state / "copies"
        self.copies.mkdir(exist_ok=True)
        os.chmod(self.copies, 0o700)
        self.queue = HandinQueue(state / "queue.sqlite", clock=clock)
        self.assignments = set(find_assignments(Path(config.source_root)))
        self._settings_mtime = self._mtime()
        self.in_flight: dict[cf.Future, tuple[Row, Job]] = {}
        self._owners: dict[int, str] = {}
        self.store = None
        if config.http_database:
            from coursetools.exchange.storage import ExchangeStore  # noqa: PLC0415 - HTTP mode only

            self.store = ExchangeStore(config.http_database, Path(config.http_volume or state / "exchange"))

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

    def _owner(self, uid: int) -> str:
        if uid not in self._owners:
            try:
                self._owners[uid] = pwd.getpwuid(uid).pw_name
            except KeyError:
                self._owners[uid] = f"uid {uid}"
        return self._owners[uid]

    def scan(self) -> list[Row]:
        """Record every new submission folder (admitted or refused); returns the new rows read.

        Folders that cannot be the student's own submission are recorded refused, unread, in one
        transaction; of each student's and assignment's new folders only the newest is read (the
        module docstring).
        """
        now = self.clock()
        if self.store is not None:
            return self._scan_exchange(now)
        changed = collect.guard_inbound(self.config.inbound)
        if changed:
            self.log(f"handin: {self.config.inbound} could be listed by every user: mode {changed} "
                     "(as nbgrader's release makes it: students hand in, nobody lists the names)")
        known = self.queue.folders()
        sightings = self.queue.sightings()
        unread: list[tuple[str, str, str, float, str]] = []
        newest: dict[tuple[str, str], collect.InboundEntry] = {}
        entries = []
        for entry in collect.list_inbound(self.config.inbound):
            if entry.key in known:
                continue
            seen = sightings.get(entry.key)
            if seen is not None and seen.after_ns and entry.changed_ns == seen.after_ns:
                entry = replace(entry, changed=seen.before_ns / 1e9)  # the service's own chmod undone
            entries.append(entry)
        entries.sort(key=lambda e: (e.changed, e.key))  # oldest first, as the students made them
        for entry in entries:
            arrived = min(entry.changed, now)
            if entry.problem:
                unread.append((entry.key, self._owner(entry.owner), "", arrived, "name"))
            elif entry.assignment not in self.assignments:
                unread.append((entry.key, entry.student, entry.assignment, arrived, "unknown assignment"))
            elif self.config.check_owner and self._owner(entry.owner) != entry.student:
                # never a page: the secret inside belongs to whoever made the folder
                unread.append((entry.key, entry.student, entry.assignment, arrived, "owner"))
            else:
                older = newest.get((entry.student, entry.assignment))
                if older is not None:  # listed oldest first: the older one is never read
                    unread.append((older.key, older.student, older.assignment, min(older.changed, now),
                                   "superseded"))
                newest[(entry.student, entry.assignment)] = entry
        if unread:
            self.queue.add_unread(unread)
            for key, *_ in unread:
                if key in sightings:  # seen, locked, then superseded: never read again
                    self.queue.forget_sighting(key)
            self.log(f"handin: {len(unread)} folder(s) refused unread (odd name, unknown assignment, "
                     "someone else's, or superseded by a newer one)")
        new = []
        for entry in newest.values():
            # Nothing rests on a secret name: group and other write off the folder first, then
            # read once and check (collect.snapshot_inbound).
            seen = collect.lock_inbound(self.config.inbound, entry, sightings.get(entry.key))
            if seen is not None and seen != sightings.get(entry.key):
                self.queue.record_sighting(entry.key, seen)
            snap = collect.snapshot_inbound(self.config.inbound, entry, seen)
            if snap.unsettled or (self.config.settle_seconds > 0 and snap.changed > now - self.config.settle_seconds):
                continue  # still being copied in (or edited, or changed while read): a later round
            arrived = min(snap.changed, now)
            if snap.foreign and self.config.check_owner:  # never read for its page: not the student's alone
                self.queue.add_refused(entry.key, entry.student, entry.assignment, arrived, "owner")
                self.queue.forget_sighting(entry.key)
                self.log(f"handin: {rendering.display_name(entry.student)}/{rendering.display_name(entry.assignment)}"
                         f" refused: {snap.foreign}")
                continue
            policy = self.config.policies[entry.assignment]
            row = self.queue.add(entry.key, entry.student, entry.assignment, arrived, policy)
            self.queue.forget_sighting(entry.key)
            if row is None:
                continue
            self._keep(row, snap)
            row = self.queue.get(row.folder)
            new.append(row)
            self.log(
                f"handin: {rendering.display_name(row.student)}/{rendering.display_name(row.assignment)}"
                f" {row.state}{' (' + row.reason + ')' if row.reason else ''}"
            )
        return new

    def _scan_exchange(self, now: float) -> list[Row]:
        """:meth:`scan` on the HTTP exchange: the store's new hand-ins, by the same rules."""
        read, unread = exchange_inbox.arrivals(self.store, self.config.course_id, self.queue.folders(), self.assignments)
        if unread:
            self.queue.add_unread([(a.key, a.student, a.assignment, min(a.arrived, now), a.problems[0]) for a in unread])
        new = []
        for arrival in read:
            policy = self.config.policies[arrival.assignment]
            row = self.queue.add(arrival.key, arrival.student, arrival.assignment, min(arrival.arrived, now), policy)
            if row is None:
                continue
            snap = collect.InboundSnapshot(
                submission=arrival.submission,
                notebook_name=f"{arrival.assignment}.ipynb",
                exchange=dict(arrival.exchange),
                problems=list(arrival.problems),
                changed=arrival.arrived,
            )
            self._keep(row, snap)
            row = self.queue.get(row.folder)
            new.append(row)
            self.log(
                f"handin: {rendering.display_name(row.student)}/{rendering.display_name(row.assignment)}"
                f" {row.state}{' (' + row.reason + ')' if row.reason else ''}"
            )
        return new

    def _copy_path(self, row: Row) -> Path:
        return self.copies / f"{row.seq}.ipynb"

    def _keep(self, row: Row, snap: collect.InboundSnapshot) -> None:
        """Record what the folder held; keep a copy of its notebook if it may be graded."""
        digest = ""
        gradable = row.state == "pending" or row.reason in GRADABLE_REFUSALS
        if snap.submission is not None and gradable:
            digest = hashlib.sha256(snap.submission).hexdigest()
            path = self._copy_path(row)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(snap.submission)
        self.queue.record_snapshot(row.folder, digest, snap.exchange.get("secret", ""),
                                   snap.exchange.get("timestamp", ""), snap.problems)
        self._prune(row.student, row.assignment)

    def _prune(self, student: str, assignment: str) -> None:
        """Delete the copies no rule can grade any more (only the newest refusal may be final)."""
        rows = [r for r in self.queue.rows_of(student, assignment) if r.digest]
        last_refusal = max((r.seq for r in rows if r.state == "refused" and r.reason in GRADABLE_REFUSALS),
                           default=None)
        for r in rows:
            if r.state in ("pending", "grading") or r.seq == last_refusal:
                continue
            self._copy_path(r).unlink(missing_ok=True)

    def job(self, row: Row) -> Job:
        """The grading job of a queued submission: the copy taken when it arrived."""
        source, release, assets = collect.source_texts(Path(self.config.source_root), row.assignment)
        problems = list(json.loads(row.problems or "[]"))
        data = None
        if row.digest:
            try:
                data = self._copy_path(row).read_bytes()
            except OSError:
                data = None
            if data is None or hashlib.sha256(data).hexdigest() != row.digest:
                data, problems = None, [*problems, "grader error: the copy taken at hand-in is lost, grade again"]
        elif not problems:
            problems = ["no notebook handed in"]
        options = self.config.options  # a second pass keeps the hand-in wall (queue: "Again")
        return Job(
            student=row.student,
            assignment=row.assignment,
            source=source,
            release=release,
            submission=data,
            notebook_name=f"{row.assignment}.ipynb",
            files=dict(assets),
            problems=problems,
            options=options,
            exchange={"secret": row.secret, "timestamp": row.stamp} if row.secret else {},
        )

    def publish_refusals(self) -> int:
        """A page for the newest unpublished refusal of each student; returns how many.

        One page per student per round, whatever they sent; the others are marked published
        without one. A refused submission's notebook is never read for its page.
        """
        newest: dict[str, Row] = {}
        for row in self.queue.unpublished_refusals():
            if row.student in newest:
                self.queue.mark_published(newest[row.student].folder)
            newest[row.student] = row
        for row in newest.values():
            job = Job(row.student, row.assignment, "", "", None, f"{row.assignment}.ipynb",
                      exchange={"secret": row.secret, "timestamp": row.stamp} if row.secret else {})
            self._publish(job, feedback.render_notice(row.student, row.assignment, self._refusal_lines(row)))
            self.queue.mark_published(row.folder)
        return len(newest)

    def start_some(self) -> int:
        """Start grading as many pending submissions as there are free workers; how many."""
        free = self.config.workers - len(self.in_flight)
        if free <= 0:
            return 0
        rows = self.queue.claim(free)
        for row in rows:
            job = self.job(row)
            try:
                future = self.pool.submit(self.grade, job)
            except Exception as exc:  # noqa: BLE001 - a broken pool: a new one, the row back
                self.pool.renew()
                again = self.queue.give_back(row.folder)
                self.log(f"handin: could not start grading ({type(exc).__name__}): {again.state}")
                continue
            self.in_flight[future] = (row, job)
        return len(rows)

    def finish_some(self, timeout: float = 0.0) -> int:
        """Record each submission whose grading has finished (waiting up to ``timeout`` s for one)."""
        if not self.in_flight:
            return 0
        done, _ = cf.wait(list(self.in_flight), timeout=timeout, return_when=cf.FIRST_COMPLETED)
        for future in done:
            row, job = self.in_flight.pop(future)
            try:
                result = future.result()
            except Exception as exc:  # noqa: BLE001 - a worker lost: its row goes back
                if isinstance(exc, cf.BrokenExecutor):
                    self.pool.renew()
                again = self.queue.give_back(row.folder)
                self.log(f"handin: grader error on {rendering.display_name(row.student)} "
                         f"({type(exc).__name__}): {again.state}")
                continue
            self._record(row, job, result)
        return len(done)

    def _record(self, row: Row, job: Job, result: dict) -> None:
        who = f"{rendering.display_name(row.student)}/{rendering.display_name(row.assignment)}"
        why = pipeline.grade_again(result)  # the class pipeline's one rule
        if why == "lost":
            again = self.queue.give_back(row.folder)
            self.log(f"handin: grader error on {who}: {again.state}")
            return
        if why == "starved" and not row.alone:
            self.queue.give_back(row.folder, alone=True)
            cut = result.get("wall_cut") or {}
            self.log(f"handin: {who} was cut by the wall clock while waiting for a CPU (waited "
                     f"{cut.get('waited', 0):.1f} s of {cut.get('wall', 0):.1f} s, computed "
                     f"{cut.get('cpu', 0):.1f} s): graded once more before it counts")
            return
        try:
            if self.on_graded is not None:
                with _private_files():
                    self.on_graded([job], [result])
            self._publish(job, self.page(row, result))
        except Exception as exc:  # noqa: BLE001 - a full disk, a locked gradebook: try again later
            again = self.queue.give_back(row.folder)  # "failed" after MAX_TRIES, never a loop
            self.log(f"handin: could not record {who} ({type(exc).__name__}: {exc}): {again.state}")
            return
        self.queue.finish(row.folder, float(result["score"]), float(result["max_score"]))
        self._prune(row.student, row.assignment)
        self.log(f"handin: graded {who} {result['score']:g}/{result['max_score']:g} in "
                 f"{result.get('seconds', 0):.1f} s")

    def run_once(self, wait: float = 0.0) -> int:
        """Scan, queue the deadline's last submissions, publish refusals, start grading (unless
        paused) and record what finished (waiting up to ``wait`` s); how many were recorded."""
        self.reload_settings()
        self.scan()
        self.queue.final_candidates(self.config.policies)
        self.publish_refusals()
        if not self.queue.paused:
            self.start_some()
        return self.finish_some(wait)

    def drain(self, poll_seconds: float = 0.5) -> None:
        """Rounds until nothing is pending (or the service is paused) and nothing is in flight."""
        while self.run_once(wait=poll_seconds) or self.in_flight or (
            not self.queue.paused and self.queue.counts()["pending"]
        ):
            pass

    def serve(self, poll_seconds: float = 2.0, should_stop: Callable[[], bool] = lambda: False) -> None:
        """Until ``should_stop()``: a round; a pause of ``poll_seconds`` when nothing happened."""
        recovered = self.queue.recover()
        if recovered:
            self.log(f"handin: {recovered} submission(s) were being graded when the service stopped: graded again")
        orphans = limits.SubmissionGroup.sweep_orphans()  # kernels left running by a killed grader
        if orphans:
            self.log(f"handin: {len(orphans)} control group(s) of a grader that is gone removed, "
                     "and what ran in them stopped")
        self.log(f"handin: watching {self.config.inbound}")
        while not should_stop():
            recorded = self.run_once(wait=poll_seconds if self.in_flight else 0.0)
            if recorded == 0 and not self.in_flight:
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
            self.log(f"handin: {rendering.display_name(job.student)}: no submission secret, page not released")
            return None
        if self.store is not None:  # the hand-in's feedback on the HTTP exchange
            exchange_inbox.publish(self.store, self.config.course_id, job.student, job.assignment,
                                   meta.get("timestamp", ""), page)
            return None
        out = self.config.outbound_feedback
        out.mkdir(parents=True, exist_ok=True)
        os.chmod(out, 0o711)  # as nbgrader's release_feedback: a page is fetched by its hash, never listed
        name = notebook_hash(secret=meta["secret"], notebook_id=Path(job.notebook_name).stem or job.assignment)
        tmp = out / f".{name}.tmp"
        tmp.write_text(page, encoding="utf-8", errors="backslashreplace")
        os.chmod(tmp, 0o644)
        tmp.replace(out / f"{name}.html")
        return out / f"{name}.html"


@contextlib.contextmanager
def _private_files():
    """What the results are recorded in (grades, the gradebook, pages, the class page) is made
    readable by the service's group at most (umask 027), only while they are written: the
    grading processes, which the sandbox needs world-readable files from, keep the usual umask."""
    old = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(old)


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
            f"{format_time(r.arrived)}  {rendering.display_name(r.student):<20} "
            f"{rendering.display_name(r.assignment):<28} {r.state:<8} {what}"
        )
    return "\n".join(lines)
