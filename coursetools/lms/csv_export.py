"""Final grades in the shape a learning management system's gradebook import expects.

One job: read the final grades from nbgrader's gradebook (autograded plus hand-graded points,
minus nbgrader's late penalty: the same figures as ``nbgrader export``) and write them as a CSV
for **Canvas** or **Moodle**, one row per student and one column per assignment.

- **Canvas** (Grades > Import): the columns ``Student``, ``ID``, ``SIS User ID``,
  ``SIS Login ID``, ``Section``, then one column per assignment, named as in Canvas (a
  ``Name (12345)`` title updates assignment 12345; a new title creates an assignment). The second
  row is ``Points Possible``. Canvas matches a student on one of the identifier columns: the
  mapping says which column holds which nbgrader field. A blank cell leaves Canvas's grade alone.
- **Moodle** (Grades > Import > CSV file): an identifier column (``Username``, ``Email address`` or
  ``ID number``, chosen again as "Map from" on import), then one column per grade item (mapped to
  items on import).

The mapping is an optional TOML file (``deploy/lms.toml`` by default; see its comments): per
system, which nbgrader field identifies a student (``student_id`` or ``email``) and in which
column, the assignment columns' titles, and what a missing submission is (``blank``: nothing
written, the LMS keeps what it has; ``zero``). A name a spreadsheet would read as a formula gets a
leading ``'`` (OWASP's advice on CSV injection), as in the grades CSV.
"""

from __future__ import annotations

import csv
import io
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coursetools.rendering import spreadsheet_text

__all__ = [
    "FinalGrade",
    "Mapping",
    "SYSTEMS",
    "final_grades",
    "load_mapping",
    "render_csv",
    "write_csv",
]

SYSTEMS = ("canvas", "moodle")
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_IDENTIFIERS = ("Username", "Email address", "ID number")
STUDENT_FIELDS = ("student_id", "email")


@dataclass(frozen=True)
class FinalGrade:
    """One student's final grade on one assignment (``score`` None: nothing handed in)."""

    student_id: str
    first_name: str
    last_name: str
    email: str
    assignment: str
    score: float | None
    max_score: float
    needs_manual: bool = False  # a written answer still to grade in the formgrader


@dataclass(frozen=True)
class Mapping:
    """How nbgrader's grades become one LMS's columns (see the module's docstring)."""

    system: str
    student_field: str = "student_id"
    identifier_column: str = "SIS Login ID"
    assignments: dict[str, str] = field(default_factory=dict)
    missing: str = "blank"

    def __post_init__(self):
        if self.system not in SYSTEMS:
            raise ValueError(f"system must be one of {', '.join(SYSTEMS)}, got {self.system!r}")
        if self.student_field not in STUDENT_FIELDS:
            raise ValueError(
                f"student_field must be one of {', '.join(STUDENT_FIELDS)}, got {self.student_field!r}"
            )
        allowed = CANVAS_COLUMNS[1:4] if self.system == "canvas" else MOODLE_IDENTIFIERS
        if self.identifier_column not in allowed:
            raise ValueError(
                f"{self.system}'s identifier_column must be one of {', '.join(allowed)}, "
                f"got {self.identifier_column!r}"
            )
        if self.missing not in ("blank", "zero"):
            raise ValueError(f"missing must be 'blank' or 'zero', got {self.missing!r}")
        for key, title in self.assignments.items():
            if not isinstance(title, str) or not title.strip():
                raise ValueError(
                    f"the column title of assignment {key!r} must be a non-empty string"
                )

    def column(self, assignment: str) -> str:
        return self.assignments.get(assignment, assignment)


DEFAULT_IDENTIFIER = {"canvas": "SIS Login ID", "moodle": "Username"}


def load_mapping(system: str, path: Path | None = None) -> Mapping:
    """The mapping for ``system`` from the TOML file at ``path`` (``None``: the defaults)."""
    table: dict = {}
    if path is not None:
        if not Path(path).is_file():
            raise ValueError(f"no mapping file {path} (leave it out for the defaults)")
        with open(path, "rb") as f:
            try:
                table = tomllib.load(f).get(system, {})
            except tomllib.TOMLDecodeError as exc:
                raise ValueError(f"{path} is not valid TOML: {exc}") from None
    unknown = set(table) - {"student_field", "identifier_column", "assignments", "missing"}
    if unknown:
        raise ValueError(f"[{system}] in {path}: unknown key(s) {', '.join(sorted(unknown))}")
    return Mapping(
        system=system,
        student_field=table.get("student_field", "student_id"),
        identifier_column=table.get("identifier_column", DEFAULT_IDENTIFIER.get(system, "")),
        assignments=dict(table.get("assignments", {})),
        missing=table.get("missing", "blank"),
    )


def final_grades(db_url: str) -> list[FinalGrade]:
    """Every (student, assignment) of nbgrader's gradebook, as ``nbgrader export`` computes it:
    the submission's score minus its late penalty, or None when nothing was handed in."""
    from nbgrader.api import MissingEntry

    from coursetools.grading.classroom.gradebook import open_gradebook

    rows = []
    with open_gradebook(db_url) as gb:
        for assignment in gb.assignments:
            for student in gb.students:
                try:
                    sub = gb.find_submission(assignment.name, student.id)
                except MissingEntry:
                    score, waiting = None, False
                else:
                    score = max(0.0, float(sub.score) - float(sub.late_submission_penalty or 0.0))
                    waiting = bool(sub.needs_manual_grade)
                rows.append(
                    FinalGrade(
                        student_id=student.id,
                        first_name=student.first_name or "",
                        last_name=student.last_name or "",
                        email=student.email or "",
                        assignment=assignment.name,
                        score=score,
                        max_score=float(assignment.max_score),
                        needs_manual=waiting,
                    )
                )
    return rows


def _number(x: float) -> str:
    return f"{x:g}"


def render_csv(grades: Sequence[FinalGrade], mapping: Mapping) -> str:
    """The CSV text for ``mapping.system`` (see the module's docstring for the columns)."""
    assignments = sorted({g.assignment for g in grades})
    columns = [mapping.column(a) for a in assignments]
    if len(set(columns)) != len(columns):
        raise ValueError("two assignments map to the same column title: " + ", ".join(columns))
    people: dict[str, FinalGrade] = {}
    cell: dict[tuple[str, str], FinalGrade] = {}
    for g in grades:
        people.setdefault(g.student_id, g)
        cell[(g.student_id, g.assignment)] = g
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    ident = mapping.identifier_column
    if mapping.system == "canvas":
        writer.writerow([*CANVAS_COLUMNS, *map(spreadsheet_text, columns)])
        top = {a: max(g.max_score for g in grades if g.assignment == a) for a in assignments}
        writer.writerow(
            ["Points Possible", "", "", "", "", *(_number(top[a]) for a in assignments)]
        )
    else:
        writer.writerow([ident, *map(spreadsheet_text, columns)])
    for sid in sorted(people):
        person = people[sid]
        key = person.student_id if mapping.student_field == "student_id" else person.email
        if not key:
            raise ValueError(f"student {sid!r} has no {mapping.student_field} in the gradebook")
        scores = []
        for a in assignments:
            g = cell.get((sid, a))
            if g is None or g.score is None:
                scores.append("0" if mapping.missing == "zero" else "")
            else:
                scores.append(_number(g.score))
        if mapping.system == "canvas":
            name = ", ".join(x for x in (person.last_name, person.first_name) if x) or sid
            ids = {c: (key if c == ident else "") for c in CANVAS_COLUMNS[1:4]}
            writer.writerow(
                [
                    spreadsheet_text(name),
                    *(spreadsheet_text(ids[c]) for c in CANVAS_COLUMNS[1:4]),
                    "",
                    *scores,
                ]
            )
        else:
            writer.writerow([spreadsheet_text(key), *scores])
    return out.getvalue()


def write_csv(grades: Sequence[FinalGrade], mapping: Mapping, path: Path) -> Path:
    """Write :func:`render_csv` to ``path`` (UTF-8 with a BOM: Excel and both LMSs read it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_csv(grades, mapping), encoding="utf-8-sig", newline="")
    return path
