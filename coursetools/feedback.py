"""Per-student feedback pages and the class's grade table.

One job: turn grading results (dicts from :func:`coursetools.grade.grade_job`) into files a
person reads: one HTML page per (student, assignment), the grades CSV, and the text summary.

The feedback page shows the student's own cells, and for each autograded test cell the version
the student had (hidden tests already removed by the grader), its points and, when it failed, the
last line of the error. It never shows a hidden test's source or any cell output (a student's
code could print hidden code from inside a test), unlike nbgrader's feedback (#917, #1363).
"""

from __future__ import annotations

import csv
import html
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["render_html", "write_feedback", "write_grades", "summary_table", "problem_report"]

GRADE_COLUMNS = ("student", "assignment", "score", "max_score")

CSS = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;border-radius:4px}
.cell{margin:1rem 0}.md{white-space:pre-wrap}
.verdict{padding:.3rem .6rem;border-radius:4px;font-weight:600}
.passed{background:#dcf5dc}.failed,.timeout,.died{background:#fde0e0}.partial{background:#fff3c4}
.notrun{background:#eee}.manual{background:#e0ecff}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .6rem;text-align:left}
"""


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:g}"


def render_html(result: dict) -> str:
    """The feedback page of one graded submission."""
    esc = html.escape
    title = f"{result['assignment']}: feedback for {result['student']}"
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f"<p><strong>Autograded score: {_fmt(result['score'])} / {_fmt(result['max_score'])}</strong>",
    ]
    if result.get("manual_max"):
        parts.append(f" &mdash; plus up to {_fmt(result['manual_max'])} point(s) graded by hand")
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
        parts.append(
            f"<tr><td>{esc(str(cell['grade_id']))}</td>"
            f"<td>{_fmt(cell['points'])} / {_fmt(cell['max_points'])}</td>"
            f"<td><span class='verdict {css}'>{esc(cell['status'])}</span>{message}</td></tr>"
        )
    parts.append("</table><h2>Your notebook</h2>")
    for cell in result.get("feedback", []):
        parts.append("<div class='cell'>")
        if cell["type"] == "markdown" or cell["type"] == "raw":
            parts.append(f"<div class='md'>{esc(cell['source'])}</div>")
        else:
            parts.append(f"<pre>{esc(cell['source'])}</pre>")
        if cell.get("kind") == "test":
            status = cell["status"]
            message = f": {esc(cell['message'])}" if cell.get("message") else ""
            parts.append(
                f"<div class='verdict {status.replace(' ', '')}'>{esc(str(cell['grade_id']))} "
                f"{esc(status)} ({_fmt(cell['points'])} / {_fmt(cell['max_points'])}){message}</div>"
            )
        elif cell.get("kind") == "manual":
            parts.append(
                f"<div class='verdict manual'>graded by hand ({_fmt(cell['max_points'])} point(s))</div>"
            )
        elif cell.get("status") in ("timeout", "died"):
            parts.append(
                f"<div class='verdict {cell['status']}'>{esc(cell.get('message', ''))}</div>"
            )
        parts.append("</div>")
    parts.append("</body></html>\n")
    return "".join(parts)


def write_feedback(results: Iterable[dict], directory: Path) -> list[Path]:
    """``directory/<student>/<assignment>.html`` for every result; returns the paths."""
    written = []
    for result in results:
        path = Path(directory) / result["student"] / f"{result['assignment']}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_html(result), encoding="utf-8")
        written.append(path)
    return written


def write_grades(results: Sequence[dict], path: Path) -> None:
    """The grades CSV: ``student,assignment,score,max_score``, sorted, autograded points."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(GRADE_COLUMNS)
        for r in sorted(results, key=lambda r: (r["student"], r["assignment"])):
            writer.writerow([r["student"], r["assignment"], _fmt(r["score"]), _fmt(r["max_score"])])


def summary_table(results: Sequence[dict]) -> str:
    """A text table: one row per student, one column per assignment, and the total."""
    assignments = sorted({r["assignment"] for r in results})
    students = sorted({r["student"] for r in results})
    cell = {(r["student"], r["assignment"]): r for r in results}
    header = ["student", *assignments, "total"]
    rows = []
    for s in students:
        row, got, out_of = [s], 0.0, 0.0
        for a in assignments:
            r = cell.get((s, a))
            if r is None:
                row.append("")
                continue
            got, out_of = got + r["score"], out_of + r["max_score"]
            flag = " !" if r.get("problems") else ""
            row.append(f"{_fmt(r['score'])}/{_fmt(r['max_score'])}{flag}")
        row.append(f"{_fmt(got)}/{_fmt(out_of)}")
        rows.append(row)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    line = lambda row: "  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=False))  # noqa: E731
    out = [line(header), "  ".join("-" * w for w in widths), *map(line, rows)]
    return "\n".join(out) + "\n(! = a problem, listed below; written answers are graded by hand)\n"


def problem_report(results: Sequence[dict]) -> str:
    """Every submission that had a problem, and why."""
    lines = []
    for r in sorted(results, key=lambda r: (r["student"], r["assignment"])):
        for p in r.get("problems", []) + r.get("notes", []):
            lines.append(f"  {r['student']}/{r['assignment']}: {p}")
    return ("Submissions with problems:\n" + "\n".join(lines) + "\n") if lines else "No problems.\n"
