"""The benchmarks' one table, the exponents and ``bench/results.json`` (no timing here).

:func:`format_table` prints every :class:`~_harness.Row` of every section in the columns of
issue 18 (group, task, peer, dplib, peer, unit, ratio, goal, met?, spread, note); a failed
section is one line with its error. :func:`results_document` is what ``results.json`` holds and
:func:`sections_from_document` reads it back.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from _harness import Row, Section, Series, machine, versions

__all__ = [
    "SCHEMA",
    "VERSIONED",
    "SUPERLINEAR",
    "format_number",
    "format_table",
    "format_exponents",
    "segment_slopes",
    "results_document",
    "write_results",
    "read_results",
    "sections_from_document",
]

#: Version of the layout of results.json; bump it when a key changes meaning.
SCHEMA = 1
#: The distributions whose versions every results.json records.
VERSIONED = (
    "dplib", "numpy", "scipy", "opendp", "diffprivlib", "dp-accounting", "prv-accountant",
    "opacus", "torch", "scikit-learn", "matplotlib",
)
#: A fitted exponent above this is flagged as superlinear (cost growing faster than the input).
SUPERLINEAR = 1.1
COLUMNS = ("group", "task", "peer", "dplib", "peer", "unit", "ratio", "goal", "met?", "spread",
           "note")


def format_number(value: float | None) -> str:
    """Four significant digits, "-" for a missing value.

    >>> format_number(None), format_number(1234567.0), format_number(0.000123456)
    ('-', '1.235e+06', '0.0001235')
    """
    if value is None:
        return "-"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return f"{value:.4g}"


def _ratio(row: Row) -> str:
    if row.ratio is None:
        return "-"
    if row.unit == "epsilon":
        return f"{row.ratio:+.2%}"
    return f"{row.ratio:.3g}x"


def _spread(row: Row) -> str:
    parts = [f"±{s:.0%}" if s is not None else "-" for s in (row.spread_ours, row.spread_theirs)]
    return "-" if parts == ["-", "-"] else "/".join(parts)


def _verdict(row: Row) -> str:
    if not row.goal:
        return ""
    return {True: "yes", False: "NO", None: "n/a"}[row.goal_met]


def table_lines(sections: Sequence[Section]) -> list[list[str]]:
    """The table's cells, one list per row (a failed section gives one row with its error)."""
    lines = []
    for section in sections:
        if section.error:
            lines.append([section.name, "(benchmark failed)", "", "", "", "", "", "", "NO", "",
                          section.error])
        for row in section.rows:
            lines.append([
                row.group, row.task, row.peer, format_number(row.ours), format_number(row.theirs),
                row.unit, _ratio(row), row.goal, _verdict(row), _spread(row), row.note,
            ])
    return lines


def format_table(sections: Sequence[Section]) -> str:
    """Every row of every section as one aligned plain-text table (the note column unpadded)."""
    lines = [list(COLUMNS)] + table_lines(sections)
    widths = [max(len(line[i]) for line in lines) for i in range(len(COLUMNS) - 1)]
    numeric = {3, 4, 6}
    out = []
    for index, line in enumerate(lines):
        cells = [
            cell.rjust(widths[i]) if i in numeric and index else cell.ljust(widths[i])
            for i, cell in enumerate(line[:-1])
        ]
        out.append("  ".join(cells + [line[-1]]).rstrip())
        if index == 0:
            out.append("-" * len(out[0]))
    goals = [row for s in sections for row in s.rows if row.goal]
    met = sum(row.goal_met is True for row in goals)
    missed = sum(row.goal_met is False for row in goals)
    failed = [s.name for s in sections if s.error]
    out.append(
        f"goals: {met} met, {missed} not met, {len(goals) - met - missed} not measured"
        + (f"; failed sections: {', '.join(failed)}" if failed else "")
    )
    return "\n".join(out)


def format_exponents(sections: Sequence[Section]) -> str:
    """One line per scaling series: its fitted exponent, flagged when it, or the slope between
    two consecutive sizes, is above :data:`SUPERLINEAR` (fixed costs can hide a steep tail)."""
    out = []
    for section in sections:
        for series in section.series:
            if series.exponent is None:
                out.append(f"{series.name}: too few sizes to fit an exponent")
                continue
            flag = ""
            slopes = segment_slopes(series)
            steepest = max((float(x) for x in slopes.split(", ") if x), default=series.exponent)
            if series.exponent > SUPERLINEAR:
                flag = f"  <- superlinear (segment slopes {slopes}): see the notes"
            elif steepest > SUPERLINEAR:
                flag = f"  <- superlinear segment (slopes {slopes}): see the notes"
            span = f"{series.sizes[0]:g}..{series.sizes[-1]:g} {series.x_label}"
            out.append(f"{series.name}: time ~ size^{series.exponent:.2f} ({span}){flag}")
    return "\n".join(out) if out else "(no scaling series)"


def segment_slopes(series: Series) -> str:
    """The exponent between each pair of consecutive sizes, to show where a curve bends.

    >>> segment_slopes(Series("s", "n", [1, 10, 100], [1, 10, 1000]))
    '1.00, 2.00'
    """
    pairs = zip(series.sizes, series.seconds, strict=True)
    points = [(math.log(x), math.log(t)) for x, t in pairs if x > 0 and 0 < t < math.inf]
    slopes = [
        (y1 - y0) / (x1 - x0)
        for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False)
        if x1 != x0
    ]
    return ", ".join(f"{slope:.2f}" for slope in slopes)


def results_document(sections: Sequence[Section], *, args: dict | None = None,
                     timestamp: str | None = None) -> dict:
    """What results.json holds: schema, timestamp, machine, versions, run arguments, sections."""
    stamp = timestamp or _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    return {
        "schema": SCHEMA,
        "timestamp": stamp,
        "machine": machine(),
        "versions": versions(*VERSIONED),
        "args": dict(args or {}),
        "sections": [section.as_dict() for section in sections],
        "exponents": {
            series.name: series.exponent for section in sections for series in section.series
        },
    }


def _finite(value: object) -> object:
    """JSON has no inf or nan: write them as strings a reader can still parse with float()."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


#: Keys whose values are text: a note that reads "inf" stays a string.
_TEXT_KEYS = frozenset({"group", "task", "peer", "unit", "ratio_kind", "goal", "note", "name",
                        "x_label", "error", "notes", "timestamp", "machine", "versions", "args"})


def _restore(value: object) -> object:
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    if isinstance(value, dict):
        return {key: item if key in _TEXT_KEYS else _restore(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_restore(item) for item in value]
    return value


def write_results(document: dict, path: Path) -> None:
    """Write ``document`` as strict JSON (inf and nan as strings)."""
    path.write_text(json.dumps(_finite(document), indent=1, allow_nan=False) + "\n",
                    encoding="utf-8")


def read_results(path: Path) -> dict:
    """Read a results.json written by :func:`write_results` (inf and nan restored)."""
    document = _restore(json.loads(path.read_text(encoding="utf-8")))
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise ValueError(f"{path} is not a results.json of schema {SCHEMA}")
    return document


def sections_from_document(document: dict) -> list[Section]:
    """The :class:`Section` objects a results document holds."""
    return [Section.from_dict(item) for item in document["sections"]]


def goal_rows(sections: Iterable[Section]) -> list[Row]:
    """The rows that carry a goal (the claims), in order."""
    return [row for section in sections for row in section.rows if row.goal]
