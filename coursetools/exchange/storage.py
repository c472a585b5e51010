"""What the exchange holds: releases, hand-ins and feedback, in a database and on a volume.

One job: keep the exchange's state durable and consistent across restarts, for one hub machine
(SQLite, the default) or a cluster (PostgreSQL). The rows (who, which course and assignment,
when, which notebooks, the archive's SHA-256 and size) live in the database through SQLAlchemy;
the archives themselves live on the service's own volume, named by their SHA-256 (written to a
temporary name, synced and renamed before the row that names them is committed, so a row never
names a file that is not whole). The time of a hand-in is this store's clock, never the
student's.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import (
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    select,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from coursetools.databases import open_engine
from coursetools.exchange import archive

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ExchangeStore",
    "NotFound",
    "ReleaseRecord",
    "Conflict",
    "SubmissionRecord",
    "TIMESTAMP_FORMAT",
    "valid_name",
]

#: A hand-in's size limit: its archive, packed and unpacked (the service's setting overrides it).
DEFAULT_MAX_BYTES = 20 * 1024 * 1024
#: nbgrader's timestamp format (``timestamp.txt``), in UTC.
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"
_NAME_MAX = 100
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def valid_name(value: object) -> bool:
    """A course, assignment or student name the exchange accepts: 1 to 100 printable characters,
    none of ``/ \\ + *`` (nbgrader's separators and wildcard), not ``.`` or ``..``."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= _NAME_MAX
        and value.isprintable()
        and not any(c in value for c in "/\\+*")
        and value not in (".", "..")
        and value.strip() == value
    )


class NotFound(LookupError):
    """Nothing of that name in the exchange."""


class Conflict(RuntimeError):
    """The request would replace what may only be replaced on purpose (a release, without force)."""


class _Base(DeclarativeBase):
    pass


class _Release(_Base):
    __tablename__ = "releases"
    __table_args__ = (UniqueConstraint("course", "assignment"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    course: Mapped[str] = mapped_column(String(_NAME_MAX))
    assignment: Mapped[str] = mapped_column(String(_NAME_MAX))
    digest: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    files: Mapped[str] = mapped_column(Text)  # JSON list of relative paths
    released_at: Mapped[float] = mapped_column(Float)


class _Submission(_Base):
    __tablename__ = "submissions"
    __table_args__ = (UniqueConstraint("course", "assignment", "student", "timestamp"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    course: Mapped[str] = mapped_column(String(_NAME_MAX), index=True)
    assignment: Mapped[str] = mapped_column(String(_NAME_MAX))
    student: Mapped[str] = mapped_column(String(_NAME_MAX), index=True)
    timestamp: Mapped[str] = mapped_column(String(64))
    arrived_at: Mapped[float] = mapped_column(Float)
    digest: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    files: Mapped[str] = mapped_column(Text)
    secret: Mapped[str] = mapped_column(String(128))


class _Feedback(_Base):
    __tablename__ = "feedback"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id"), unique=True)
    digest: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    files: Mapped[str] = mapped_column(Text)
    released_at: Mapped[float] = mapped_column(Float)


@dataclass(frozen=True)
class ReleaseRecord:
    """A released assignment: its files and when."""

    course: str
    assignment: str
    digest: str
    size: int
    files: tuple[str, ...]
    released_at: float


@dataclass(frozen=True)
class SubmissionRecord:
    """One hand-in: whose (the hub's name), when (the store's clock), which files."""

    course: str
    assignment: str
    student: str
    timestamp: str
    arrived_at: float
    digest: str
    size: int
    files: tuple[str, ...]
    secret: str
    feedback: tuple[str, ...] | None  # the feedback's files, None before any is released
    feedback_digest: str | None


class ExchangeStore:
    """The exchange's database and volume.

    Parameters
    ----------
    url : str
        An SQLAlchemy database URL: ``sqlite:///path/exchange.sqlite`` (one machine) or
        ``postgresql+psycopg://user@host/db`` (a real hub). Tables are created if missing.
    volume : Path
        The service's own folder for the archives (created if missing).
    max_bytes : int
        The size limit of one archive, packed and unpacked.
    clock : callable
        Seconds since the epoch; the time of every hand-in and release.
    """

    def __init__(
        self,
        url: str,
        volume: Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes <= 0:
            raise ValueError(f"max_bytes must be a positive int, got {max_bytes!r}")
        self.volume = Path(volume)
        (self.volume / "blobs").mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.clock = clock
        self.engine = open_engine(url)
        _Base.metadata.create_all(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    # ---------------------------------------------------------------------------------- files

    def _blob(self, digest: str) -> Path:
        return self.volume / "blobs" / digest[:2] / digest

    def _keep(self, data: bytes) -> tuple[str, int, tuple[str, ...]]:
        """Check ``data`` as an archive and keep it on the volume: (SHA-256, size, files)."""
        files = tuple(archive.members(data, max_bytes=self.max_bytes))
        digest = hashlib.sha256(data).hexdigest()
        path = self._blob(digest)
        if not path.is_file():
            path.parent.mkdir(exist_ok=True)
            tmp = path.with_name(f".{digest}.{secrets.token_hex(4)}.part")
            with open(tmp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        return digest, len(data), files

    def _read(self, digest: str) -> bytes:
        data = self._blob(digest).read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise OSError(f"the archive {digest} on the volume is damaged")
        return data

    # ------------------------------------------------------------------------------- releases

    def release(
        self, course: str, assignment: str, data: bytes, *, force: bool = False
    ) -> ReleaseRecord:
        """Release ``assignment`` of ``course`` (an archive of its folder).

        Raises
        ------
        Conflict
            If it is released already and ``force`` is false.
        archive.ArchiveError
            If ``data`` is not a safe archive within the size limit.
        """
        _check_names(course=course, assignment=assignment)
        digest, size, files = self._keep(data)
        with Session(self.engine) as session, session.begin():
            row = session.scalars(
                select(_Release).where(_Release.course == course, _Release.assignment == assignment)
            ).one_or_none()
            if row is not None and not force:
                raise Conflict(
                    f"{course}/{assignment} is released already (release again with force)"
                )
            if row is None:
                row = _Release(course=course, assignment=assignment)
                session.add(row)
            row.digest, row.size, row.files, row.released_at = (
                digest,
                size,
                json.dumps(files),
                self.clock(),
            )
            session.flush()
            return _release_record(row)

    def unrelease(self, course: str, assignment: str) -> bool:
        """Withdraw a release (hand-ins stay); whether there was one."""
        _check_names(course=course, assignment=assignment)
        with Session(self.engine) as session, session.begin():
            row = session.scalars(
                select(_Release).where(_Release.course == course, _Release.assignment == assignment)
            ).one_or_none()
            if row is None:
                return False
            session.delete(row)
            return True

    def courses(self) -> list[str]:
        """Every course with a release, by name."""
        with Session(self.engine) as session:
            return list(
                session.scalars(select(_Release.course).distinct().order_by(_Release.course))
            )

    def releases(self, course: str) -> list[ReleaseRecord]:
        """The assignments of ``course`` released now, by name."""
        _check_names(course=course)
        with Session(self.engine) as session:
            rows = session.scalars(
                select(_Release).where(_Release.course == course).order_by(_Release.assignment)
            )
            return [_release_record(r) for r in rows]

    def released(self, course: str, assignment: str) -> tuple[ReleaseRecord, bytes]:
        """The release and its archive; NotFound if it is not released."""
        _check_names(course=course, assignment=assignment)
        with Session(self.engine) as session:
            row = session.scalars(
                select(_Release).where(_Release.course == course, _Release.assignment == assignment)
            ).one_or_none()
            if row is None:
                raise NotFound(f"{course}/{assignment} is not released")
            record = _release_record(row)
        return record, self._read(record.digest)

    # ------------------------------------------------------------------------------- hand-ins

    def submit(self, course: str, assignment: str, student: str, data: bytes) -> SubmissionRecord:
        """Keep a hand-in of ``student`` (the hub's name), timed by this store's clock.

        Raises
        ------
        NotFound
            If the assignment is not released.
        archive.ArchiveError
            If ``data`` is not a safe archive within the size limit.
        """
        _check_names(course=course, assignment=assignment, student=student)
        self.released(course, assignment)  # NotFound before anything is kept
        digest, size, files = self._keep(data)
        for _ in range(5):  # a hand-in racing another of the same student: the next microsecond
            with Session(self.engine) as session:
                latest = session.scalars(
                    select(_Submission.arrived_at)
                    .where(
                        _Submission.course == course,
                        _Submission.assignment == assignment,
                        _Submission.student == student,
                    )
                    .order_by(_Submission.arrived_at.desc())
                    .limit(1)
                ).first()
            # each hand-in of a student a microsecond after the previous at least: timestamps
            # are unique and in order even if the clock stands still or steps back
            micros = round(self.clock() * 1_000_000)
            if latest is not None:
                micros = max(micros, round(latest * 1_000_000) + 1)
            now = micros / 1_000_000
            stamp = (_EPOCH + datetime.timedelta(microseconds=micros)).strftime(TIMESTAMP_FORMAT)
            row = _Submission(
                course=course,
                assignment=assignment,
                student=student,
                timestamp=stamp,
                arrived_at=now,
                digest=digest,
                size=size,
                files=json.dumps(files),
                secret=secrets.token_hex(32),
            )
            try:
                with Session(self.engine) as session, session.begin():
                    session.add(row)
                    session.flush()
                    return _submission_record(row, None)
            except IntegrityError:
                continue
        raise Conflict("could not give the hand-in a timestamp of its own; try again")

    def submissions(
        self, course: str, *, assignment: str | None = None, student: str | None = None
    ) -> list[SubmissionRecord]:
        """The hand-ins of ``course`` (of one assignment, of one student), oldest first."""
        _check_names(
            course=course,
            **({"assignment": assignment} if assignment is not None else {}),
            **({"student": student} if student is not None else {}),
        )
        query = select(_Submission, _Feedback).outerjoin(
            _Feedback, _Feedback.submission_id == _Submission.id
        )
        query = query.where(_Submission.course == course)
        if assignment is not None:
            query = query.where(_Submission.assignment == assignment)
        if student is not None:
            query = query.where(_Submission.student == student)
        query = query.order_by(
            _Submission.assignment, _Submission.student, _Submission.arrived_at, _Submission.id
        )
        with Session(self.engine) as session:
            return [_submission_record(s, f) for s, f in session.execute(query)]

    def _submission(
        self, session: Session, course: str, assignment: str, student: str, timestamp: str
    ):
        row = session.scalars(
            select(_Submission).where(
                _Submission.course == course,
                _Submission.assignment == assignment,
                _Submission.student == student,
                _Submission.timestamp == timestamp,
            )
        ).one_or_none()
        if row is None:
            raise NotFound(f"no hand-in {course}/{assignment} of {student} at {timestamp}")
        return row

    def submission(
        self, course: str, assignment: str, student: str, timestamp: str
    ) -> tuple[SubmissionRecord, bytes]:
        """One hand-in and its archive; NotFound if there is none."""
        _check_names(course=course, assignment=assignment, student=student, timestamp=timestamp)
        with Session(self.engine) as session:
            row = self._submission(session, course, assignment, student, timestamp)
            feedback = session.scalars(
                select(_Feedback).where(_Feedback.submission_id == row.id)
            ).one_or_none()
            record = _submission_record(row, feedback)
        return record, self._read(record.digest)

    # ------------------------------------------------------------------------------- feedback

    def put_feedback(
        self, course: str, assignment: str, student: str, timestamp: str, data: bytes
    ) -> SubmissionRecord:
        """Release (or replace) the feedback of one hand-in: an archive of its pages."""
        _check_names(course=course, assignment=assignment, student=student, timestamp=timestamp)
        digest, size, files = self._keep(data)
        with Session(self.engine) as session, session.begin():
            row = self._submission(session, course, assignment, student, timestamp)
            feedback = session.scalars(
                select(_Feedback).where(_Feedback.submission_id == row.id)
            ).one_or_none()
            if feedback is None:
                feedback = _Feedback(submission_id=row.id)
                session.add(feedback)
            feedback.digest, feedback.size, feedback.files = digest, size, json.dumps(files)
            feedback.released_at = self.clock()
            session.flush()
            return _submission_record(row, feedback)

    def feedback(self, course: str, assignment: str, student: str, timestamp: str) -> bytes:
        """The feedback archive of one hand-in; NotFound before it is released."""
        record, _ = self.submission(course, assignment, student, timestamp)
        if record.feedback_digest is None:
            raise NotFound(f"no feedback yet for {course}/{assignment} of {student} at {timestamp}")
        return self._read(record.feedback_digest)


def _check_names(**names: object) -> None:
    stamp = names.pop("timestamp", "given by the exchange")  # checked only where one is passed
    if not (isinstance(stamp, str) and 0 < len(stamp) <= 64 and stamp.isprintable()):
        raise ValueError(
            f"timestamp must be 1 to 64 printable characters (as the exchange gives them), got {stamp!r}"
        )
    for what, value in names.items():
        if not valid_name(value):
            raise ValueError(
                f"{what} must be 1 to {_NAME_MAX} printable characters without / \\ + * "
                f"(and not . or ..), got {value!r}"
            )


def _release_record(row: _Release) -> ReleaseRecord:
    return ReleaseRecord(
        row.course,
        row.assignment,
        row.digest,
        row.size,
        tuple(json.loads(row.files)),
        row.released_at,
    )


def _submission_record(row: _Submission, feedback: _Feedback | None) -> SubmissionRecord:
    return SubmissionRecord(
        course=row.course,
        assignment=row.assignment,
        student=row.student,
        timestamp=row.timestamp,
        arrived_at=row.arrived_at,
        digest=row.digest,
        size=row.size,
        files=tuple(json.loads(row.files)),
        secret=row.secret,
        feedback=None if feedback is None else tuple(json.loads(feedback.files)),
        feedback_digest=None if feedback is None else feedback.digest,
    )
