"""axe-core in Chromium: the WCAG 2.1 A and AA rules, run on a page the way a test opens it.

axe-core's own script (``axe.min.js``, shipped by the ``axe-playwright-python`` wheel, so no
download at test time) is added to the page (the context bypasses the page's
Content-Security-Policy for that one script, which the course's pages would otherwise refuse, as
they should) and ``axe.run`` is asked for the rules tagged ``wcag2a``, ``wcag2aa``, ``wcag21a``
and ``wcag21aa``. :func:`violations` returns one line per rule and node, readable in a failure.
"""

from __future__ import annotations

from pathlib import Path

WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def axe_script() -> Path | None:
    try:
        import axe_playwright_python
    except ImportError:
        return None
    path = Path(axe_playwright_python.__file__).parent / "axe.min.js"
    return path if path.is_file() else None


def run_axe(tab) -> list[dict]:
    """axe's violations on ``tab``'s current page (WCAG 2.1 A and AA rules)."""
    script = axe_script()
    if script is None:
        raise RuntimeError("axe-core is not installed: pip install axe-playwright-python (make test-browser does)")
    tab.add_script_tag(path=str(script))
    result = tab.evaluate(
        "async (tags) => await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})",
        WCAG_TAGS,
    )
    return result["violations"]


def violations(tab) -> list[str]:
    """One line per violated rule and node: ``rule (impact): selector: what to fix``."""
    lines = []
    for rule in run_axe(tab):
        for node in rule["nodes"]:
            target = " ".join(str(t) for t in node.get("target", []))
            summary = (node.get("failureSummary") or "").replace("\n", " ")[:200]
            lines.append(f"{rule['id']} ({rule.get('impact')}): {target}: {summary}")
    return lines
