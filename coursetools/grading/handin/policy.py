"""What the hand-in service allows per assignment: attempts, cool-down, deadline, hidden messages.

One job: read the instructor's settings (``deploy/handin.toml``: a ``[default]`` table and one
``[assignments."<name>"]`` table per assignment that differs) into :class:`Policy` objects, and
refuse a bad value with what is allowed. The admission rules themselves live in
:mod:`coursetools.grading.handin.queue`; how a feedback page withholds messages, in
:mod:`coursetools.grading.handin.service`.
"""

from __future__ import annotations

import datetime as dt
import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

__all__ = ["HIDDEN_MESSAGES", "Policy", "Policies", "load_policies"]

#: When a failing hidden test's message is shown to the student: never (only "a hidden test
#: failed"), after the assignment's deadline, or always.
HIDDEN_MESSAGES = ("never", "after_deadline", "always")
_KEYS = {"attempts", "cooldown_minutes", "hidden_messages", "deadline", "accept_late"}


@dataclass(frozen=True)
class Policy:
    """The rules for one assignment.

    Attributes
    ----------
    attempts : int
        Graded attempts per student (0: no limit). A submission past it is not graded and the
        student is told so; the last graded one stands.
    cooldown_minutes : float
        The least time between two graded attempts of one student (0: none), measured on the
        service's clock from the arrival of the previous graded attempt.
    hidden_messages : str
        One of :data:`HIDDEN_MESSAGES`.
    deadline : datetime or None
        Timezone-aware. A submission arriving after it is not graded unless ``accept_late``;
        at the deadline, each student's last submission before it is graded if it was not (so
        the last submission counts).
    accept_late : bool
        Grade submissions after the deadline (nbgrader's late penalty, if configured, applies in
        the gradebook).
    """

    attempts: int = 0
    cooldown_minutes: float = 0.0
    hidden_messages: str = "after_deadline"
    deadline: dt.datetime | None = None
    accept_late: bool = False

    def __post_init__(self):
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int) or self.attempts < 0:
            raise ValueError(f"attempts must be an integer >= 0 (0: no limit), got {self.attempts!r}")
        c = self.cooldown_minutes
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c) or c < 0:
            raise ValueError(f"cooldown_minutes must be a finite number >= 0, got {c!r}")
        if self.hidden_messages not in HIDDEN_MESSAGES:
            raise ValueError(
                f"hidden_messages must be one of {', '.join(HIDDEN_MESSAGES)}, got {self.hidden_messages!r}"
            )
        if self.deadline is not None:
            if not isinstance(self.deadline, dt.datetime) or self.deadline.tzinfo is None:
                raise ValueError(
                    "deadline must be a date and time with a time zone, e.g. 2026-12-01T23:59:00Z, "
                    f"got {self.deadline!r}"
                )
        if not isinstance(self.accept_late, bool):
            raise ValueError(f"accept_late must be true or false, got {self.accept_late!r}")

    def past_deadline(self, when: float) -> bool:
        """Whether the POSIX time ``when`` is after the deadline (never, without one)."""
        return self.deadline is not None and when > self.deadline.timestamp()

    def shows_hidden_messages(self, now: float) -> bool:
        return self.hidden_messages == "always" or (
            self.hidden_messages == "after_deadline" and self.past_deadline(now)
        )


@dataclass(frozen=True)
class Policies:
    """The default policy and the assignments that differ from it."""

    default: Policy = field(default_factory=Policy)
    per_assignment: dict[str, Policy] = field(default_factory=dict)

    def __getitem__(self, assignment: str) -> Policy:
        return self.per_assignment.get(assignment, self.default)


def _policy(table: dict, base: Policy, where: str) -> Policy:
    unknown = set(table) - _KEYS
    if unknown:
        raise ValueError(
            f"{where}: unknown setting(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(_KEYS))}"
        )
    try:
        return replace(base, **table)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def load_policies(path: Path | None) -> Policies:
    """The policies in the TOML file at ``path`` (``None``: the defaults for every assignment)."""
    if path is None:
        return Policies()
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no hand-in settings file {path} (leave it out for the defaults)")
    with open(path, "rb") as f:
        try:
            data = tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{path} is not valid TOML: {exc}") from None
    unknown = set(data) - {"default", "assignments"}
    if unknown:
        raise ValueError(f"{path}: unknown table(s) {', '.join(sorted(unknown))}; use [default] and [assignments.\"name\"]")
    default = _policy(data.get("default", {}), Policy(), f"{path} [default]")
    per = {
        name: _policy(table, default, f"{path} [assignments.{name!r}]")
        for name, table in data.get("assignments", {}).items()
    }
    return Policies(default, per)
