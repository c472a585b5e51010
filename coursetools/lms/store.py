"""What the tool remembers of the LMS: who launched, from where, and the grades still to send.

One job: keep, in one database the hub and the hand-in service share (SQLAlchemy: SQLite on one
machine, PostgreSQL on a cluster),

- each **launch's facts** the platform signed: the LMS user (issuer and ``sub``) behind a hub
  name, the course context with its AGS endpoint (the line-items URL and the scopes granted), and
  the resource link with the assignment it opens;
- the **nonces** of accepted launches, each accepted once (a replayed launch is refused even
  with the browser's cookies; IMS Security Framework 1.0, section 5.1.3, step 9);
- the **line item** of each assignment in each context, once created;
- the **grade outbox**: every score to post, with its state (``pending``, ``posted``,
  ``refused`` with the platform's reason, ``superseded`` by a newer one), its tries and when to
  try again. A score is written here before anything is sent, so nothing is lost while the LMS
  is down; a score's key (student, assignment, the hand-in's time) makes recording it twice
  a no-op.

A hub name maps to exactly one LMS user, fixed at its first launch: a launch of another LMS user
that would take an existing hub name is refused (:class:`IdentityConflict`), so no launch can
make grades go to someone else.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import Float, Integer, String, Text, UniqueConstraint, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from coursetools.databases import open_engine

__all__ = ["GRADE_STATES", "Destination", "Grade", "IdentityConflict", "LmsStore", "Launch"]

#: A grade's states in the outbox.
GRADE_STATES = ("pending", "posted", "refused", "superseded")
_URL = 2048
#: Seconds a poster holds a grade it claimed before another may try it.
LEASE = 120.0
_ID = 255


class IdentityConflict(PermissionError):
    """A launch whose LMS user differs from the one this hub name belongs to."""


class _Base(DeclarativeBase):
    pass


class _User(_Base):
    __tablename__ = "lti_users"
    __table_args__ = (UniqueConstraint("issuer", "sub"),)
    hub_name: Mapped[str] = mapped_column(String(_ID), primary_key=True)
    issuer: Mapped[str] = mapped_column(String(_URL))
    sub: Mapped[str] = mapped_column(String(_ID))
    display: Mapped[str] = mapped_column(Text, default="")
    last_launch: Mapped[float] = mapped_column(Float)


class _Context(_Base):
    __tablename__ = "lti_contexts"
    __table_args__ = (UniqueConstraint("issuer", "deployment_id", "context_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    issuer: Mapped[str] = mapped_column(String(_URL))
    deployment_id: Mapped[str] = mapped_column(String(_ID))
    context_id: Mapped[str] = mapped_column(String(_ID))
    course: Mapped[str] = mapped_column(String(_ID), index=True)
    lineitems_url: Mapped[str] = mapped_column(String(_URL), default="")
    scopes: Mapped[str] = mapped_column(Text, default="[]")
    updated: Mapped[float] = mapped_column(Float)


class _Link(_Base):
    __tablename__ = "lti_links"
    __table_args__ = (UniqueConstraint("context_pk", "link_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    context_pk: Mapped[int] = mapped_column(Integer, index=True)
    link_id: Mapped[str] = mapped_column(String(_ID))
    assignment: Mapped[str] = mapped_column(String(_ID), default="")
    title: Mapped[str] = mapped_column(Text, default="")
    # the link's own line item, when the platform made one for it (AGS 2.0, section 3.1: the
    # launch's endpoint claim carries it as "lineitem"): its scores go there
    lineitem_url: Mapped[str] = mapped_column(String(_URL), default="")


class _Nonce(_Base):
    __tablename__ = "lti_nonces"
    nonce: Mapped[str] = mapped_column(String(_ID), primary_key=True)
    expires: Mapped[float] = mapped_column(Float, index=True)


class _LineItem(_Base):
    __tablename__ = "lti_line_items"
    __table_args__ = (UniqueConstraint("context_pk", "assignment"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    context_pk: Mapped[int] = mapped_column(Integer)
    assignment: Mapped[str] = mapped_column(String(_ID))
    url: Mapped[str] = mapped_column(String(_URL))


class _Grade(_Base):
    __tablename__ = "lti_grades"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(3 * _ID + 70), unique=True)
    course: Mapped[str] = mapped_column(String(_ID), index=True)
    student: Mapped[str] = mapped_column(String(_ID), index=True)
    assignment: Mapped[str] = mapped_column(String(_ID))
    score: Mapped[float] = mapped_column(Float)
    max_score: Mapped[float] = mapped_column(Float)
    activity: Mapped[str] = mapped_column(String(32))
    grading: Mapped[str] = mapped_column(String(32))
    timestamp: Mapped[str] = mapped_column(String(64))  # ISO 8601, the service's clock
    comment: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[str] = mapped_column(String(16), index=True, default="pending")
    tries: Mapped[int] = mapped_column(Integer, default=0)
    next_try: Mapped[float] = mapped_column(Float, default=0.0)
    reason: Mapped[str] = mapped_column(Text, default="")
    created: Mapped[float] = mapped_column(Float)
    done_at: Mapped[float | None] = mapped_column(Float, nullable=True)


@dataclass(frozen=True)
class Launch:
    """What one verified launch says, as the tool keeps it."""

    issuer: str
    deployment_id: str
    sub: str
    hub_name: str
    context_id: str
    course: str
    link_id: str
    assignment: str = ""
    link_title: str = ""
    display: str = ""
    lineitems_url: str = ""
    scopes: tuple[str, ...] = ()
    lineitem_url: str = ""  # the link's own line item, if the platform made one


@dataclass(frozen=True)
class Grade:
    """A row of the outbox."""

    id: int
    course: str
    student: str
    assignment: str
    score: float
    max_score: float
    activity: str
    grading: str
    timestamp: str
    state: str
    tries: int
    next_try: float
    comment: str
    reason: str
    created: float
    done_at: float | None


@dataclass(frozen=True)
class Destination:
    """Where a student's score for an assignment goes: the LMS user and the context's AGS."""

    issuer: str
    sub: str
    context_pk: int
    context_id: str
    lineitems_url: str
    scopes: tuple[str, ...]
    link_id: str
    link_title: str
    link_lineitem_url: str = ""


class LmsStore:
    """The tool's records in the database at ``url`` (tables made on first use)."""

    def __init__(self, url: str) -> None:
        self.engine = open_engine(url)
        _Base.metadata.create_all(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------------------------- launches

    def use_nonce(self, nonce: str, expires: float, *, now: float | None = None) -> bool:
        """Record ``nonce`` as used until ``expires``; False if it was used already."""
        now = time.time() if now is None else now
        if not isinstance(nonce, str) or not 0 < len(nonce) <= _ID:
            return False
        with Session(self.engine) as session:
            session.execute(delete(_Nonce).where(_Nonce.expires < now))
            session.add(_Nonce(nonce=nonce, expires=expires))
            try:
                session.commit()
            except IntegrityError:
                return False
        return True

    def record_launch(self, launch: Launch, *, now: float | None = None) -> None:
        """Keep a verified launch's facts.

        Raises
        ------
        IdentityConflict
            If ``launch.hub_name`` belongs to another LMS user, or that LMS user to another
            hub name (nothing is written).
        """
        now = time.time() if now is None else now
        with Session(self.engine) as session:
            user = session.get(_User, launch.hub_name)
            other = session.scalar(
                select(_User).where(_User.issuer == launch.issuer, _User.sub == launch.sub)
            )
            if (user is not None and (user.issuer, user.sub) != (launch.issuer, launch.sub)) or (
                other is not None and other.hub_name != launch.hub_name
            ):
                raise IdentityConflict(
                    "this LMS account does not match the hub account it would sign in as"
                )
            if user is None:
                user = _User(hub_name=launch.hub_name, issuer=launch.issuer, sub=launch.sub)
                session.add(user)
            user.display, user.last_launch = launch.display, now
            context = session.scalar(
                select(_Context).where(
                    _Context.issuer == launch.issuer,
                    _Context.deployment_id == launch.deployment_id,
                    _Context.context_id == launch.context_id,
                )
            )
            if context is None:
                context = _Context(
                    issuer=launch.issuer,
                    deployment_id=launch.deployment_id,
                    context_id=launch.context_id,
                    course=launch.course,
                )
                session.add(context)
            context.course, context.updated = launch.course, now
            if launch.lineitems_url:  # AGS granted in this launch: the latest endpoint wins
                context.lineitems_url = launch.lineitems_url
                context.scopes = json.dumps(sorted(launch.scopes))
            session.flush()
            link = session.scalar(
                select(_Link).where(_Link.context_pk == context.id, _Link.link_id == launch.link_id)
            )
            if link is None:
                link = _Link(context_pk=context.id, link_id=launch.link_id)
                session.add(link)
            link.assignment, link.title = launch.assignment, launch.link_title
            if launch.lineitem_url:
                link.lineitem_url = launch.lineitem_url
            session.commit()

    def lms_user(self, hub_name: str) -> tuple[str, str] | None:
        """``(issuer, sub)`` of the LMS user behind a hub name, or None."""
        with Session(self.engine) as session:
            user = session.get(_User, hub_name)
            return (user.issuer, user.sub) if user else None

    def destination(self, course: str, student: str, assignment: str) -> Destination | None:
        """Where ``student``'s score for ``assignment`` goes: None when the student never
        launched, or the course's context has no grade service."""
        with Session(self.engine) as session:
            user = session.get(_User, student)
            if user is None:
                return None
            contexts = session.scalars(
                select(_Context)
                .where(_Context.course == course, _Context.issuer == user.issuer)
                .where(_Context.lineitems_url != "")
                .order_by(_Context.updated.desc())
            ).all()
            if not contexts:
                return None
            context = contexts[0]
            link = session.scalar(
                select(_Link).where(_Link.context_pk == context.id, _Link.assignment == assignment)
            )
            return Destination(
                issuer=user.issuer,
                sub=user.sub,
                context_pk=context.id,
                context_id=context.context_id,
                lineitems_url=context.lineitems_url,
                scopes=tuple(json.loads(context.scopes)),
                link_id=link.link_id if link else "",
                link_title=link.title if link else "",
                link_lineitem_url=link.lineitem_url if link else "",
            )

    def assignment_of_link(self, issuer: str, context_id: str, link_id: str) -> str:
        with Session(self.engine) as session:
            row = session.execute(
                select(_Link.assignment)
                .join(_Context, _Context.id == _Link.context_pk)
                .where(_Context.issuer == issuer, _Context.context_id == context_id)
                .where(_Link.link_id == link_id)
            ).first()
            return row[0] if row else ""

    # ----------------------------------------------------------------------------- line items

    def line_item(self, context_pk: int, assignment: str) -> str | None:
        with Session(self.engine) as session:
            return session.scalar(
                select(_LineItem.url).where(
                    _LineItem.context_pk == context_pk, _LineItem.assignment == assignment
                )
            )

    def keep_line_item(self, context_pk: int, assignment: str, url: str) -> None:
        with Session(self.engine) as session:
            row = session.scalar(
                select(_LineItem).where(
                    _LineItem.context_pk == context_pk, _LineItem.assignment == assignment
                )
            )
            if row is None:
                session.add(_LineItem(context_pk=context_pk, assignment=assignment, url=url))
            else:
                row.url = url
            session.commit()

    # --------------------------------------------------------------------------------- grades

    def add_grade(
        self,
        *,
        course: str,
        student: str,
        assignment: str,
        score: float,
        max_score: float,
        activity: str,
        grading: str,
        timestamp: str,
        key: str,
        comment: str = "",
        now: float | None = None,
    ) -> bool:
        """Put a score in the outbox; False if one with the same ``key`` is there already.

        An older pending score of the same student and assignment is marked ``superseded``: only
        the latest is sent (the platform keeps the latest by its timestamp anyway).
        """
        now = time.time() if now is None else now
        with Session(self.engine) as session:
            session.add(
                _Grade(
                    key=key,
                    course=course,
                    student=student,
                    assignment=assignment,
                    score=float(score),
                    max_score=float(max_score),
                    activity=activity,
                    grading=grading,
                    timestamp=timestamp,
                    comment=comment,
                    state="pending",
                    created=now,
                )
            )
            try:
                session.flush()
            except IntegrityError:
                session.rollback()
                return False
            for older in session.scalars(
                select(_Grade).where(
                    _Grade.course == course,
                    _Grade.student == student,
                    _Grade.assignment == assignment,
                    _Grade.state == "pending",
                    _Grade.key != key,
                    _Grade.timestamp < timestamp,
                )
            ):
                older.state, older.done_at, older.reason = "superseded", now, "a newer score"
            session.commit()
        return True

    def has_final(self, course: str, student: str, assignment: str) -> bool:
        """Whether a final grade (``make export LTI=``) was sent or is on its way."""
        with Session(self.engine) as session:
            found = session.scalar(
                select(_Grade.id).where(
                    _Grade.course == course,
                    _Grade.student == student,
                    _Grade.assignment == assignment,
                    _Grade.activity == "Completed",
                    _Grade.state.in_(("pending", "posted")),
                )
            )
            return found is not None

    def due(
        self, *, now: float | None = None, limit: int = 100, lease: float = LEASE
    ) -> list[Grade]:
        """Pending grades whose next try is due, oldest first, each claimed for ``lease`` seconds.

        Claiming moves a grade's next try ``lease`` seconds on, in one conditional update per
        grade: two posters (the hand-in service's thread and ``make export LTI=``) never send the
        same grade at once, and a poster that dies mid-post leaves it to be tried again when the
        lease ends.
        """
        now = time.time() if now is None else now
        with Session(self.engine) as session:
            ids = session.scalars(
                select(_Grade.id)
                .where(_Grade.state == "pending", _Grade.next_try <= now)
                .order_by(_Grade.id)
                .limit(limit)
            ).all()
            claimed = []
            for grade_id in ids:
                done = session.execute(
                    update(_Grade)
                    .where(_Grade.id == grade_id, _Grade.state == "pending", _Grade.next_try <= now)
                    .values(next_try=now + lease)
                )
                if done.rowcount == 1:
                    claimed.append(grade_id)
            session.commit()
            rows = session.scalars(
                select(_Grade).where(_Grade.id.in_(claimed)).order_by(_Grade.id)
            ).all()
            return [_grade(r) for r in rows]

    def waiting(self, *, course: str | None = None) -> list[Grade]:
        """Pending grades (claimed or not), oldest first, without claiming them."""
        return [g for g in self.grades(course=course) if g.state == "pending"]

    def settle(
        self,
        grade_id: int,
        state: str,
        *,
        reason: str = "",
        next_try: float | None = None,
        now: float | None = None,
    ) -> None:
        """Record a try's outcome: ``state`` final (posted, refused, superseded), or
        ``pending`` again with ``next_try``."""
        if state not in GRADE_STATES:
            raise ValueError(f"state must be one of {GRADE_STATES}, got {state!r}")
        now = time.time() if now is None else now
        with Session(self.engine) as session:
            row = session.get(_Grade, grade_id)
            if row is None or row.state != "pending":
                return  # settled already (by another poster): a final state stays
            row.tries += 1
            row.state, row.reason = state, reason[:2000]
            if state == "pending":
                row.next_try = now if next_try is None else next_try
            else:
                row.done_at = now
            session.commit()

    def grades(self, *, course: str | None = None) -> list[Grade]:
        with Session(self.engine) as session:
            query = select(_Grade).order_by(_Grade.id)
            if course is not None:
                query = query.where(_Grade.course == course)
            return [_grade(r) for r in session.scalars(query)]

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(GRADE_STATES, 0)
        for grade in self.grades():
            counts[grade.state] += 1
        return counts

    def iter_users(self) -> Iterator[tuple[str, str, str]]:
        """``(hub name, issuer, sub)`` of every LMS user seen."""
        with Session(self.engine) as session:
            for user in session.scalars(select(_User).order_by(_User.hub_name)):
                yield user.hub_name, user.issuer, user.sub


def _grade(row: _Grade) -> Grade:
    return Grade(
        id=row.id,
        course=row.course,
        student=row.student,
        assignment=row.assignment,
        score=row.score,
        max_score=row.max_score,
        activity=row.activity,
        grading=row.grading,
        timestamp=row.timestamp,
        comment=row.comment,
        state=row.state,
        tries=row.tries,
        next_try=row.next_try,
        reason=row.reason,
        created=row.created,
        done_at=row.done_at,
    )
