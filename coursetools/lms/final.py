"""Final grades to the LMS when the instructor says so: ``make export LTI=deploy/lti.toml``.

One job: after the written answers are graded in the formgrader, send every student's final
grade (autograded plus hand-graded points, minus nbgrader's late penalty: the figures of
``nbgrader export`` and of the CSV exports, :func:`coursetools.lms.csv_export.final_grades`) to
the LMS's gradebook through the outbox (:mod:`coursetools.lms.outbox`), as ``Completed`` and
``FullyGraded`` (while an answer still waits: marked as ``[grades] partial`` says). Once sent, a
later hand-in's score does not replace it. A grade already sent with the
same figures is not sent again; a changed one is. Students who never opened the course from the
LMS, and grades the LMS refuses, are listed with the reason; a platform that does not answer
keeps them pending for the next run or the hand-in service's poster.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from coursetools.lms import keys
from coursetools.lms.ags import GradeService
from coursetools.lms.csv_export import final_grades
from coursetools.lms.outbox import GradeOutbox
from coursetools.lms.settings import LtiSettings
from coursetools.lms.store import LmsStore

__all__ = ["Sent", "send_final_grades"]


@dataclass(frozen=True)
class Sent:
    """What one run sent: counts by state after it, and the grades not posted, with reasons."""

    queued: int
    posted: int
    pending: int
    refused: list[tuple[str, str, str]]  # (student, assignment, reason)


def send_final_grades(
    settings: LtiSettings,
    db_url: str,
    course: str,
    *,
    wait: float = 60.0,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> Sent:
    """Queue every handed-in final grade of the gradebook at ``db_url``, then post for up to
    ``wait`` seconds (what is still pending then stays in the outbox)."""
    store = LmsStore(settings.database)
    try:
        service = GradeService(
            settings.client_id, settings.token_url, keys.load_or_create(settings.key_file)
        )
        outbox = GradeOutbox(store, service, settings.issuer, partial=settings.partial, clock=clock)
        queued, ours = 0, set()
        for grade in final_grades(db_url):
            if grade.score is None or grade.max_score <= 0:
                continue  # nothing handed in: the LMS keeps what it has
            ours.add((grade.student_id, grade.assignment))
            queued += outbox.add(
                course=course,
                student=grade.student_id,
                assignment=grade.assignment,
                score=min(grade.score, grade.max_score),
                max_score=grade.max_score,
                pending_manual=grade.needs_manual,
                final=True,
                handed_in=f"final {grade.score:.6g}/{grade.max_score:.6g} {'waiting' if grade.needs_manual else 'graded'}",
            )
        deadline = clock() + wait
        while clock() < deadline:
            outbox.post_due()
            waiting = store.waiting(course=course)
            if not waiting:
                break
            first = min(g.next_try for g in waiting) - clock()
            sleep(max(0.2, min(first, deadline - clock(), 5.0)))
        mine = [g for g in store.grades(course=course) if g.activity == "Completed"]
        latest = {(g.student, g.assignment): g for g in mine if (g.student, g.assignment) in ours}
        return Sent(
            queued=queued,
            posted=sum(g.state == "posted" for g in latest.values()),
            pending=sum(g.state == "pending" for g in latest.values()),
            refused=[
                (g.student, g.assignment, g.reason) for g in latest.values() if g.state == "refused"
            ],
        )
    finally:
        store.close()
