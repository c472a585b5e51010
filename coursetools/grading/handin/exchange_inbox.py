"""The hand-in service's inbox on the HTTP exchange: hand-ins from its store, pages back to it.

One job: what the service reads from nbgrader's inbound folder on one machine, read from the
exchange's store instead (:class:`coursetools.exchange.storage.ExchangeStore`, the same database
and volume the exchange service writes), and the feedback page put back as the hand-in's
feedback, which the student's Fetch Feedback gets through the service. Who handed in is the
store's record (the hub user the exchange knew by their token), when is the exchange's clock at
receipt, and what is graded is the notebook of the archive it kept: nothing a student can touch
after the hand-in.
"""

from __future__ import annotations

from dataclasses import dataclass

from coursetools.exchange import archive
from coursetools.exchange.storage import ExchangeStore, SubmissionRecord

__all__ = ["Arrival", "arrivals", "key_of", "publish"]


@dataclass(frozen=True)
class Arrival:
    """One hand-in the queue has not seen: its key, who, what, when, and the notebook's bytes."""

    key: str
    student: str
    assignment: str
    arrived: float
    submission: bytes | None
    exchange: dict[str, str]
    problems: tuple[str, ...]


def key_of(record: SubmissionRecord) -> str:
    """The queue's key for a hand-in: unique per (student, assignment, exchange timestamp)."""
    return f"http+{record.student}+{record.assignment}+{record.timestamp}"


def arrivals(
    store: ExchangeStore, course: str, known: set[str], assignments: set[str]
) -> tuple[list[Arrival], list[Arrival]]:
    """``(to read, refused unread)``: the new hand-ins of ``course``, oldest first.

    Of each student's and assignment's new hand-ins only the newest is read (the others are
    ``superseded``, as on one machine); a hand-in of an assignment the course does not have is
    ``unknown assignment``.
    """
    new = [r for r in store.submissions(course) if key_of(r) not in known]
    new.sort(key=lambda r: (r.arrived_at, key_of(r)))
    newest: dict[tuple[str, str], SubmissionRecord] = {}
    unread: list[Arrival] = []
    for record in new:
        if record.assignment not in assignments:
            unread.append(_arrival(record, None, ("unknown assignment",)))
            continue
        older = newest.get((record.student, record.assignment))
        if older is not None:
            unread.append(_arrival(older, None, ("superseded",)))
        newest[(record.student, record.assignment)] = record
    read = []
    for record in newest.values():
        _, data = store.submission(course, record.assignment, record.student, record.timestamp)
        name = f"{record.assignment}.ipynb"
        try:
            notebook = archive.read_member(data, name, max_bytes=store.max_bytes)
            problems = () if notebook is not None else (f"no {name} in the hand-in",)
        except (
            archive.ArchiveError
        ) as exc:  # the store checked it on arrival: damage, not the student
            notebook, problems = (
                None,
                (f"grader error: the hand-in's archive is unreadable ({exc})",),
            )
        read.append(_arrival(record, notebook, problems))
    return read, unread


def _arrival(
    record: SubmissionRecord, notebook: bytes | None, problems: tuple[str, ...]
) -> Arrival:
    return Arrival(
        key=key_of(record),
        student=record.student,
        assignment=record.assignment,
        arrived=record.arrived_at,
        submission=notebook,
        exchange={"secret": record.secret, "timestamp": record.timestamp},
        problems=problems,
    )


def publish(
    store: ExchangeStore, course: str, student: str, assignment: str, timestamp: str, page: str
) -> None:
    """Put ``page`` as the feedback of that hand-in (replacing an earlier page of it)."""
    data = archive.pack_files(
        {f"{assignment}.html": page.encode("utf-8", "backslashreplace")}, max_bytes=store.max_bytes
    )
    store.put_feedback(course, assignment, student, timestamp, data)
