"""bench/scaling.png: time against input size, log-log, one panel per kind of size.

Every :class:`~_harness.Series` is one line; series sharing an ``x_label`` ("values per call",
"DP-SGD steps", "students") share a panel. The legend gives each line's fitted exponent ``b``
of ``time ~ size**b``; a dotted slope-1 guide in each panel shows what linear cost looks like.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from _harness import Series

__all__ = ["panels", "draw_scaling"]


def panels(series: Sequence[Series]) -> dict[str, list[Series]]:
    """The series grouped by ``x_label``, in order of first appearance (empty ones dropped).

    >>> a = Series("a", "steps", [1, 10], [1, 10]); b = Series("b", "n", [1, 10], [1, 2])
    >>> list(panels([a, b, Series("c", "steps", [1, 10], [2, 4])]))
    ['steps', 'n']
    """
    out: dict[str, list[Series]] = {}
    for item in series:
        if len(item.sizes) >= 1:
            out.setdefault(item.x_label, []).append(item)
    return out


def label(item: Series) -> str:
    """Legend text: the name and the fitted exponent.

    >>> label(Series("dplib RDP", "steps", [1, 10, 100], [1.0, 1.0, 1.0]))
    'dplib RDP (b = 0.00)'
    """
    if item.exponent is None:
        return item.name
    return f"{item.name} (b = {item.exponent:.2f})"


#: The y axis of a panel whose series time something else than one call.
Y_LABELS = {"students": "seconds to grade the class"}


def draw_scaling(series: Sequence[Series], path: Path, *, title: str = "") -> Path:
    """Draw every series into ``path`` (PNG) with matplotlib's Agg backend; returns ``path``.

    Raises ``ValueError`` when there is no series to draw, ``ImportError`` without matplotlib.
    """
    groups = panels(series)
    if not groups:
        raise ValueError("draw_scaling needs at least one series with a size")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    figure, axes = plt.subplots(1, len(groups), figsize=(6.0 * len(groups), 4.8), squeeze=False)
    for axis, (x_label, members) in zip(axes[0], groups.items(), strict=True):
        for item in members:
            axis.loglog(item.sizes, item.seconds, marker="o", label=label(item))
        # Slope-1 guide through the first point of the first series.
        first = members[0]
        x0, y0 = first.sizes[0], first.seconds[0]
        xs = sorted({x for item in members for x in item.sizes})
        axis.loglog(xs, [y0 * x / x0 for x in xs], linestyle=":", color="grey",
                    label="linear (b = 1)")
        axis.set_xlabel(x_label)
        axis.set_ylabel(Y_LABELS.get(x_label, "seconds per call"))
        if max(xs) / min(xs) < 100:  # under two decades: plain numbers, not 2x10^1
            plain = matplotlib.ticker.FuncFormatter(lambda value, _position: f"{value:g}")
            for which in (axis.xaxis, axis.yaxis):
                which.set_major_formatter(plain)
                which.set_minor_formatter(plain)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=7)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
