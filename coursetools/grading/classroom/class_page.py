"""The instructor's class page: one static HTML page with the state of every assignment.

One job: turn a class's grading results (dicts from :func:`coursetools.grading.grade.grade_job`,
as ``make grade`` writes them to ``grades.json``) into what an instructor looks at on Monday
morning, per assignment:

- the distribution of autograded scores (a histogram, a PNG drawn by matplotlib);
- per exercise (autograded test cell), how many of the students who handed in got full marks,
  and its most frequent failing messages (first line, cut at :data:`MESSAGE_CHARS`);
- who has not handed in (the roster: nbgrader's gradebook when there is one, otherwise everyone
  who handed in anything), the attempts each student used (submissions counted in nbgrader's
  exchange inbound), and the written answers waiting in the formgrader (from the gradebook, or
  estimated as the submissions with a hand-graded cell when there is none).

The page sits beside the feedback pages (``class.html``) under the same Content-Security-Policy
(:data:`coursetools.rendering.CONTENT_SECURITY_POLICY`: nothing runs or loads; images are
``data:`` PNGs). Names and messages can carry a student's text (a message may quote their value):
they are escaped, and shown as text.
"""

from __future__ import annotations

import base64
import html
import io
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coursetools.grading.classroom.feedback import CSS
from coursetools.rendering import (
    CONTENT_SECURITY_POLICY,
    accessible_page,
    display_name,
    format_number,
)

__all__ = [
    "MESSAGE_CHARS",
    "ExerciseSummary",
    "AssignmentSummary",
    "LmsGrade",
    "summarize",
    "render_class_page",
    "write_class_page",
    "count_attempts",
    "written_waiting_from_gradebook",
]

MESSAGE_CHARS = 200  # a failing message's first line is cut there (and gets an ellipsis)
TOP_MESSAGES = 3  # the most frequent failing messages shown per exercise
_REQUIRED = ("student", "assignment", "score", "max_score")

PAGE_CSS = CSS + """
.assignment{border-top:2px solid #ccc;margin-top:2rem}
.figure{max-width:100%;height:auto}
td.num{text-align:right;font-variant-numeric:tabular-nums}
ul.msgs{margin:.2rem 0;padding-left:1.2rem}
.wide{overflow-x:auto;max-width:100%}
"""


@dataclass
class ExerciseSummary:
    """One autograded test cell across the class."""

    grade_id: str
    max_points: float
    handed_in: int = 0
    full_marks: int = 0
    failing: list[tuple[str, int]] = field(default_factory=list)

    @property
    def share(self) -> float:
        """The share of the students who handed in that got full marks."""
        return self.full_marks / self.handed_in if self.handed_in else 0.0


@dataclass
class AssignmentSummary:
    """One assignment across the class."""

    assignment: str
    max_score: float
    scores: list[float]
    handed_in: list[str]
    missing: list[str]
    attempts: dict[str, int]
    exercises: list[ExerciseSummary]
    written_waiting: int
    problems: int


def _first_line(message: str) -> str:
    line = str(message).strip().splitlines()[0] if str(message).strip() else ""
    return line if len(line) <= MESSAGE_CHARS else line[:MESSAGE_CHARS] + "…"


def summarize(
    results: Iterable[Mapping],
    *,
    roster: Sequence[str] | None = None,
    attempts: Mapping[tuple[str, str], int] | None = None,
    written_waiting: Mapping[str, int] | None = None,
) -> list[AssignmentSummary]:
    """The class's state per assignment, sorted by assignment name.

    Parameters
    ----------
    results : iterable of dict
        Grading results, one per (student, assignment): at least ``student``, ``assignment``,
        ``score``, ``max_score``, and ``cells`` (each with ``grade_id``, ``kind``, ``points``,
        ``max_points``, ``message``).
    roster : sequence of str, optional
        Every student of the class. Default: everyone with at least one result.
    attempts : mapping, optional
        ``(student, assignment) -> submissions made`` (see :func:`count_attempts`). A student
        with a result and no count has used one attempt.
    written_waiting : mapping, optional
        ``assignment -> submissions whose written answers are not graded yet`` (see
        :func:`written_waiting_from_gradebook`). Default: the submissions that have a cell graded
        by hand.

    Raises
    ------
    ValueError
        A result lacks one of ``student``, ``assignment``, ``score``, ``max_score``.
    TypeError
        ``roster`` is a string (a list of names is expected).
    """
    if isinstance(roster, (str, bytes)):
        raise TypeError("roster must be a sequence of student names, not one string")
    rows = list(results)
    for r in rows:
        missing = [k for k in _REQUIRED if k not in r]
        if missing:
            raise ValueError(f"a result needs {', '.join(_REQUIRED)}; this one lacks {', '.join(missing)}")
    everyone = sorted(set(roster) if roster is not None else {r["student"] for r in rows})
    attempts = dict(attempts or {})
    by_assignment: dict[str, list[Mapping]] = {}
    for r in rows:
        by_assignment.setdefault(r["assignment"], []).append(r)
    summaries = []
    for name in sorted(by_assignment):
        group = sorted(by_assignment[name], key=lambda r: r["student"])
        handed_in = [r["student"] for r in group]
        exercises: dict[str, ExerciseSummary] = {}
        messages: dict[str, Counter] = {}
        for r in group:
            for cell in r.get("cells", []):
                if cell.get("kind") != "auto":
                    continue
                gid = str(cell["grade_id"])
                ex = exercises.setdefault(gid, ExerciseSummary(gid, float(cell["max_points"])))
                ex.handed_in += 1
                if cell.get("points") is not None and cell["points"] >= cell["max_points"]:
                    ex.full_marks += 1
                else:
                    messages.setdefault(gid, Counter())[_first_line(cell.get("message", "")) or
                                                        f"({cell.get('status', 'failed')}, no message)"] += 1
        for gid, ex in exercises.items():
            ranked = sorted(messages.get(gid, Counter()).items(), key=lambda kv: (-kv[1], kv[0]))
            ex.failing = ranked[:TOP_MESSAGES]
        if written_waiting is not None:
            waiting = int(written_waiting.get(name, 0))
        else:
            waiting = sum(any(c.get("kind") == "manual" for c in r.get("cells", [])) for r in group)
        summaries.append(
            AssignmentSummary(
                assignment=name,
                max_score=max(float(r["max_score"]) for r in group),
                scores=[float(r["score"]) for r in group],
                handed_in=handed_in,
                missing=[s for s in everyone if s not in set(handed_in)],
                attempts={s: int(attempts.get((s, name), 1)) for s in handed_in},
                exercises=list(exercises.values()),
                written_waiting=waiting,
                problems=sum(bool(r.get("problems")) for r in group),
            )
        )
    return summaries


def _histogram_png(scores: Sequence[float], max_score: float, title: str) -> bytes:
    """A histogram of scores from 0 to ``max_score``, one bar per point (PNG bytes)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 2.2), dpi=80)
    ax = fig.add_subplot()
    top = max(max_score, max(scores, default=0.0), 1.0)
    bins = min(int(top) + 1, 60)
    ax.hist(scores, bins=bins, range=(-0.5, top + 0.5), color="#4878a8", edgecolor="white")
    ax.set_xlim(-0.5, top + 0.5)
    ax.set_xlabel(f"autograded score (out of {format_number(max_score)})")
    ax.set_ylabel("students")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _percent(x: float) -> str:
    return f"{round(100 * x)}%"


@dataclass(frozen=True)
class LmsGrade:
    """A score on its way to the LMS (:mod:`coursetools.lms.outbox`), as the class page lists it."""

    student: str
    assignment: str
    score: float
    max_score: float
    state: str  # pending, posted, refused, superseded
    reason: str = ""


def _lms_section(grades: Sequence[LmsGrade]) -> str:
    """Counts of the scores sent to the LMS, and every one not (yet) there with the reason."""
    esc = html.escape
    counts = {state: sum(g.state == state for g in grades) for state in ("posted", "pending", "refused")}
    parts = [
        "<section id='lms'><h2>Grades sent to the LMS</h2>",
        f"<p>{counts['posted']} posted, {counts['pending']} waiting for the LMS to answer, "
        f"{counts['refused']} refused by the LMS.</p>",
    ]
    open_ = [g for g in grades if g.state in ("refused", "pending")]
    if open_:
        parts.append("<table><tr><th>student</th><th>assignment</th><th>score</th><th>state</th>"
                     "<th>what the LMS said</th></tr>")
        for g in open_:
            parts.append(
                f"<tr><td>{esc(display_name(g.student))}</td><td>{esc(display_name(g.assignment))}</td>"
                f"<td class='num'>{format_number(g.score)} / {format_number(g.max_score)}</td>"
                f"<td>{esc(g.state)}</td><td>{esc(_first_line(g.reason))}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</section>")
    return "".join(parts)


def render_class_page(
    summaries: Sequence[AssignmentSummary], *, title: str = "Class", lms: Sequence[LmsGrade] | None = None
) -> str:
    """The class page's HTML (no script, no request: see the module's docstring); ``lms``: the
    scores sent to the LMS, when the course posts them (a section of their own)."""
    esc = html.escape
    students = sorted({s for a in summaries for s in a.handed_in + a.missing})
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<meta http-equiv='Content-Security-Policy' content=\"{CONTENT_SECURITY_POLICY}\">",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{esc(title)}: the class</title><style>{PAGE_CSS}</style></head><body>",
        f"<h1>{esc(title)}: the class</h1>",
        f"<p>{len(students)} student(s), {len(summaries)} assignment(s).</p>",
        "<table><tr><th>assignment</th><th>handed in</th><th>median score</th>"
        "<th>with problems</th><th>written answers waiting</th></tr>",
    ]
    for a in summaries:
        median = sorted(a.scores)[len(a.scores) // 2] if a.scores else 0.0
        parts.append(
            f"<tr><td><a href='#{esc(_anchor(a.assignment))}'>{esc(display_name(a.assignment))}</a></td>"
            f"<td class='num'>{len(a.handed_in)} of {len(a.handed_in) + len(a.missing)}</td>"
            f"<td class='num'>{format_number(median)} / {format_number(a.max_score)}</td>"
            f"<td class='num'>{a.problems}</td><td class='num'>{a.written_waiting}</td></tr>"
        )
    parts.append("</table><p><a href='#students'>Every student's scores</a> are at the end.</p>")
    for a in summaries:
        name = display_name(a.assignment)
        total = len(a.handed_in) + len(a.missing)
        png = base64.b64encode(_histogram_png(a.scores, a.max_score, name)).decode("ascii")
        parts += [
            f"<section class='assignment' id='{esc(_anchor(a.assignment))}'>",
            f"<h2>{esc(name)}</h2>",
            f"<p>{len(a.handed_in)} of {total} handed in; written answers waiting in the "
            f"formgrader: {a.written_waiting}; submissions with problems: {a.problems}.</p>",
            f"<img class='figure' alt='distribution of the scores of {esc(name)}' "
            f"src='data:image/png;base64,{png}'>",
            "<h3>Exercises</h3><table><tr><th>test</th><th>full marks</th>"
            "<th>most frequent failing messages</th></tr>",
        ]
        for ex in a.exercises:
            msgs = "".join(f"<li>{esc(m)} ({n})</li>" for m, n in ex.failing)
            parts.append(
                f"<tr><td>{esc(display_name(ex.grade_id))}</td>"
                f"<td class='num'>{ex.full_marks} of {ex.handed_in} ({_percent(ex.share)})</td>"
                f"<td>{'<ul class=msgs>' + msgs + '</ul>' if msgs else ''}</td></tr>"
            )
        parts.append("</table>")
        missing = ", ".join(esc(display_name(s)) for s in a.missing) or "nobody"
        parts.append(f"<p>not handed in: {missing}</p>")
        used = ", ".join(
            f"{esc(display_name(s))} {n}" for s, n in sorted(a.attempts.items(), key=lambda kv: (-kv[1], kv[0]))
            if n > 1
        )
        parts.append(f"<p>attempts used: {used or 'one each'}</p></section>")
    parts.append(_student_table(summaries, students))
    if lms is not None:
        parts.append(_lms_section(lms))
    parts.append("</body></html>\n")
    return accessible_page("".join(parts))


def _student_table(summaries: Sequence[AssignmentSummary], students: Sequence[str]) -> str:
    """One row per student, one column per assignment: the score, or a dash if not handed in."""
    esc = html.escape
    score = {(s, a.assignment): x for a in summaries for s, x in zip(a.handed_in, a.scores, strict=True)}
    head = "".join(f"<th>{esc(display_name(a.assignment))}</th>" for a in summaries)
    rows = [f"<h2 id='students'>Students</h2><div class='wide'><table><tr><th>student</th>{head}</tr>"]
    for s in students:
        cells = "".join(
            f"<td class='num'>{format_number(score[(s, a.assignment)]) if (s, a.assignment) in score else '&mdash;'}</td>"
            for a in summaries
        )
        rows.append(f"<tr><td>{esc(display_name(s))}</td>{cells}</tr>")
    rows.append("</table></div>")
    return "".join(rows)


def _anchor(name: str) -> str:
    return "a-" + "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)[:80]


def write_class_page(
    results: Iterable[Mapping],
    directory: Path,
    *,
    roster: Sequence[str] | None = None,
    attempts: Mapping[tuple[str, str], int] | None = None,
    written_waiting: Mapping[str, int] | None = None,
    title: str = "Class",
    lms: Sequence[LmsGrade] | None = None,
) -> Path:
    """Write ``directory/class.html`` and return its path."""
    page = render_class_page(
        summarize(results, roster=roster, attempts=attempts, written_waiting=written_waiting),
        title=title,
        lms=lms,
    )
    path = Path(directory) / "class.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8", errors="backslashreplace")
    return path


def count_attempts(inbound: Path) -> dict[tuple[str, str], int]:
    """Submissions per ``(student, assignment)`` in nbgrader's exchange ``inbound`` folder.

    nbgrader's ``submit`` makes one folder per submission, named
    ``<student>+<assignment>+<timestamp>`` (with ``+<random>`` after it in nbgrader 0.7 and
    later); anything else there (a file, a name without two ``+``) is not counted. A missing
    folder counts nothing.
    """
    counts: Counter = Counter()
    try:
        entries = list(os.scandir(inbound))
    except OSError:
        return {}
    for entry in entries:
        parts = entry.name.split("+")
        if len(parts) < 3 or not parts[0] or not parts[1]:
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
        except OSError:
            continue
        counts[(parts[0], parts[1])] += 1
    return dict(counts)


def written_waiting_from_gradebook(db_url: str) -> tuple[list[str], dict[str, int]]:
    """The roster and, per assignment, the submissions that still need grading by hand.

    Read from nbgrader's gradebook (``Gradebook.students`` and each submission's
    ``needs_manual_grade``).
    """
    from coursetools.grading.classroom.gradebook import open_gradebook

    with open_gradebook(db_url) as gb:
        roster = sorted(s.id for s in gb.students)
        waiting = {
            a.name: sum(bool(sub.needs_manual_grade) for sub in gb.assignment_submissions(a.name))
            for a in gb.assignments
        }
    return roster, waiting
