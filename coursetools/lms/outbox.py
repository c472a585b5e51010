"""Grades on their way to the LMS: recorded first, posted when the platform answers.

One job: turn a graded hand-in (or a final grade from the gradebook) into a score in the LMS,
and never lose one. :meth:`GradeOutbox.add` writes the score to the outbox of
:mod:`coursetools.lms.store` (durable before anything is sent; the same hand-in twice is one
row); :meth:`GradeOutbox.post_due` sends what is due through :mod:`coursetools.lms.ags`:

- the score goes to the activity's own line item when the launch named one (the platform made a
  column for the link, AGS 2.0 section 3.1), else to the assignment's line item in the context,
  found by its ``resourceId`` or created once and remembered;
- a platform that does not answer (down, 5xx, 429) leaves the score pending, tried again after
  2, 4, 8, ... seconds, at most :data:`MAX_BACKOFF` apart, for as long as it takes;
- a platform that refuses (a 4xx: an unknown user, a bad payload) marks it ``refused`` with the
  platform's reason, shown by ``handin status`` and on the class page; a 409 (the platform has a
  newer score) marks it ``superseded``;
- a student who never launched from the LMS has no LMS identity: refused, saying so.

Whose score it is comes from the hand-in (the exchange's name for the student), and which LMS
user that is from the signed launch (:class:`coursetools.lms.store.LmsStore`); nothing a student
sends names the LMS user a score goes to. :class:`Poster` runs :meth:`post_due` in a thread of
the hand-in service, woken as soon as a score is added.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable

from coursetools.lms.ags import (
    LINEITEM_SCOPE,
    SCORE_SCOPE,
    GradeService,
    PlatformRefused,
    PlatformUnavailable,
)
from coursetools.lms.store import Grade, LmsStore

__all__ = ["GradeOutbox", "MAX_BACKOFF", "Poster", "iso_timestamp"]

#: The longest wait between two tries of a pending score, in seconds.
MAX_BACKOFF = 600.0
#: AGS ``activityProgress`` and ``gradingProgress`` values the tool sends (AGS 2.0, 3.4.5-3.4.6).
ACTIVITY = ("Submitted", "Completed")
GRADING = ("FullyGraded", "PendingManual")
#: The comment of a score whose written answers are still to grade, marked FullyGraded.
PARTIAL_COMMENT = "Autograded points; the written answers are graded later."


def iso_timestamp(seconds: float) -> str:
    """ISO 8601 with milliseconds and the UTC offset, as AGS wants a score's timestamp."""
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds")


def backoff(tries: int) -> float:
    """Seconds before try ``tries + 1`` of a pending score: 2, 4, 8, ..., at most MAX_BACKOFF."""
    return min(MAX_BACKOFF, 2.0 ** max(1, tries))


class GradeOutbox:
    """The scores to post, and posting them.

    Parameters
    ----------
    store
        The tool's records (launches, line items, the outbox).
    service
        The platform's grade service.
    issuer
        The platform the service speaks to (a score goes only to a user of that platform).
    partial
        ``"fully-graded"`` (default) or ``"pending-manual"``: how a score whose written answers
        are still to grade is marked. AGS's own ``PendingManual`` says exactly that, but Moodle
        4.5 keeps no score marked so (it answers 200 and records nothing:
        ``mod/lti/service/gradebookservices/classes/local/resources/scores.php``); a
        ``FullyGraded`` score with :data:`PARTIAL_COMMENT` is recorded by every platform, and the
        final grade replaces it.
    clock
        Seconds since the epoch.
    """

    def __init__(
        self,
        store: LmsStore,
        service: GradeService,
        issuer: str,
        *,
        partial: str = "fully-graded",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store, self.service, self.issuer, self.clock = store, service, issuer, clock
        self.partial = partial

    def add(
        self,
        *,
        course: str,
        student: str,
        assignment: str,
        score: float,
        max_score: float,
        pending_manual: bool,
        final: bool = False,
        handed_in: str = "",
    ) -> bool:
        """Put a score in the outbox; False if this hand-in's score is there already, or (a
        hand-in's) once the instructor sent the final grade: a later hand-in does not replace it.

        Raises
        ------
        ValueError
            If the score is not a finite number between 0 and ``max_score`` (> 0).
        """
        if not (max_score > 0 and 0 <= score <= max_score) or max_score == float("inf"):
            raise ValueError(
                f"a score must be within [0, max_score] and max_score > 0, got {score}/{max_score}"
            )
        now = self.clock()
        key = "|".join(
            (
                course,
                student,
                assignment,
                handed_in or iso_timestamp(now),
                "final" if final else "hand-in",
            )
        )
        if not final and self.store.has_final(course, student, assignment):
            return False
        marked_partial = pending_manual and self.partial == "fully-graded"
        return self.store.add_grade(
            course=course,
            student=student,
            assignment=assignment,
            score=score,
            max_score=max_score,
            activity=ACTIVITY[1] if final else ACTIVITY[0],
            grading=GRADING[1] if pending_manual and not marked_partial else GRADING[0],
            timestamp=iso_timestamp(now),
            comment=PARTIAL_COMMENT if marked_partial else "",
            key=key,
            now=now,
        )

    def post_due(self) -> int:
        """Try every score that is due; how many were settled (posted, refused or superseded)."""
        settled = 0
        for grade in self.store.due(now=self.clock()):
            settled += self._post(grade)
        return settled

    def _post(self, grade: Grade) -> int:
        now = self.clock()
        target = self.store.destination(grade.course, grade.student, grade.assignment)
        if target is None or target.issuer != self.issuer:
            self.store.settle(grade.id, "refused", now=now, reason=(
                "no LMS account is known for this student: they have not opened the course from the "
                "LMS yet (make export LTI=1 sends it once they have)"))  # fmt: skip
            return 1
        if SCORE_SCOPE not in target.scopes or LINEITEM_SCOPE not in target.scopes:
            self.store.settle(grade.id, "refused", now=now, reason=(
                "the LMS did not grant this course the scopes to create columns and post scores "
                "(turn on its grade service for the tool)"))  # fmt: skip
            return 1
        try:
            # the activity's own column when the platform made one (Moodle, Canvas assignments),
            # else the course's column for the assignment, found or made once
            url = (
                target.link_lineitem_url
                or self.store.line_item(target.context_pk, grade.assignment)
                or None
            )
            if url is None:
                url = self.service.line_item(
                    target.lineitems_url,
                    resource_id=grade.assignment,
                    label=target.link_title or grade.assignment,
                    score_maximum=grade.max_score,
                    resource_link_id=target.link_id,
                )
                self.store.keep_line_item(target.context_pk, grade.assignment, url)
            self.service.post_score(
                url,
                user_id=target.sub,
                score_given=grade.score,
                score_maximum=grade.max_score,
                activity=grade.activity,
                grading=grade.grading,
                timestamp=grade.timestamp,
                comment=grade.comment,
            )
        except PlatformUnavailable as exc:
            self.store.settle(
                grade.id,
                "pending",
                reason=str(exc),
                next_try=now + backoff(grade.tries + 1),
                now=now,
            )
            return 0
        except PlatformRefused as exc:
            if exc.status == 409:
                self.store.settle(grade.id, "superseded", reason=str(exc), now=now)
            elif exc.status in (404, 410) and url is not None and url != target.link_lineitem_url:
                # the column was deleted in the LMS: make it again at the next try
                self.store.keep_line_item(target.context_pk, grade.assignment, "")
                self.store.settle(grade.id, "pending", reason=str(exc), next_try=now, now=now)
                return 0
            else:
                self.store.settle(grade.id, "refused", reason=str(exc), now=now)
            return 1
        self.store.settle(grade.id, "posted", now=now)
        return 1


class Poster:
    """:meth:`GradeOutbox.post_due` in a background thread, every ``interval`` seconds and at
    once after :meth:`wake`; ``on_settled()`` after a round that settled a score (the class page
    is written again); :meth:`stop` ends it after the round in progress."""

    def __init__(
        self,
        outbox: GradeOutbox,
        *,
        interval: float = 2.0,
        log: Callable[[str], None] = print,
        on_settled: Callable[[], None] | None = None,
    ) -> None:
        self.outbox, self.interval, self.log, self.on_settled = outbox, interval, log, on_settled
        self._wake, self._stop = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run, name="lti-grades", daemon=True)

    def start(self) -> Poster:
        self._thread.start()
        return self

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            try:
                if self.outbox.post_due() and self.on_settled is not None:
                    self.on_settled()
            except Exception as exc:  # noqa: BLE001 - the database away for a moment: next round
                self.log(f"lti: grades not posted this round ({type(exc).__name__}: {exc})")
