"""The student's own outputs and figures on the feedback page (``grade --with-outputs``).

They come from a second, ungraded *display run* with no hidden test in it: a student whose
answer records what it is called with, and a later cell that prints the record, must show only
what the visible tests passed in. Every output is bounded and inert
(:mod:`coursetools.grading.sandboxed.outputs`): text capped and escaped, figures kept only as real PNG/JPEG bytes,
nothing that can run or load anything.
"""

from __future__ import annotations

import base64
import copy
import re

import nbformat
import pytest
from pilot_course import PILOT, fill_answers

from coursetools.authoring import rules as authoring
from coursetools.authoring.release import release_notebook
from coursetools.grading.classroom.feedback import render_html
from coursetools.grading.grade import display_cells, grade_job, merge
from coursetools.grading.job import Job, Options
from coursetools.grading.sandboxed.outputs import OutputCollector, OutputLimits

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
PNG64 = base64.b64encode(PNG).decode()


def _collect(*messages, limits=None) -> list[dict]:
    collector = OutputCollector(limits)
    collector.new_cell()
    for kind, content in messages:
        collector.add(kind, content)
    return collector.outputs


# ------------------------------------------------------------------------------ the collector


def test_text_is_joined_stripped_of_ansi_and_capped():
    out = _collect(
        ("stream", {"name": "stdout", "text": "\x1b[31mred\x1b[0m\n"}),
        ("execute_result", {"data": {"text/plain": "42"}}),
        ("stream", {"name": "stdout", "text": "x" * 50}),
        limits=OutputLimits(text_chars=20),
    )
    assert len(out) == 1 and out[0]["kind"] == "text"
    assert out[0]["text"].startswith("red\n42\n") and "\x1b" not in out[0]["text"]
    assert out[0]["text"].count("x") == 20 - len("red\n42\n")
    assert "output cut at 20 characters" in out[0]["text"]


def test_only_real_png_and_jpeg_bytes_are_kept_as_figures():
    out = _collect(
        ("display_data", {"data": {"image/png": PNG64, "text/plain": "<Figure>"}}),
        ("display_data", {"data": {"image/png": base64.b64encode(b"<svg onload=x>").decode(), "text/plain": "fake"}}),
        ("display_data", {"data": {"image/png": "not base64 !!", "text/plain": "broken"}}),
        ("display_data", {"data": {"image/svg+xml": "<svg><script>x()</script></svg>", "text/plain": "svg"}}),
        ("display_data", {"data": {"text/html": "<script>x()</script>", "application/javascript": "x()", "text/plain": "html"}}),
    )
    images = [o for o in out if o["kind"] == "image"]
    assert images == [{"kind": "image", "mime": "image/png", "data": PNG64}]
    text = "".join(o["text"] for o in out if o["kind"] == "text")
    assert text == "fake\nbroken\nsvg\nhtml\n"  # the plain-text form of everything not kept
    assert "<script" not in repr(out) and "<svg" not in repr(out)


def test_an_image_over_its_cap_is_not_kept():
    big = base64.b64encode(PNG + b"\0" * 2000).decode()
    out = _collect(("display_data", {"data": {"image/png": big}}), limits=OutputLimits(image_bytes=1000))
    assert out == []


def test_the_notebook_budget_is_shared_and_says_when_it_is_spent():
    collector = OutputCollector(OutputLimits(text_chars=1000, notebook_bytes=1500))
    kept = []
    for _ in range(3):
        collector.new_cell()
        collector.add("stream", {"text": "y" * 1000})
        kept.append(collector.outputs)
    assert kept[0] == [{"kind": "text", "text": "y" * 1000}]
    assert [o["kind"] for o in kept[1]] == ["note"] and "limit" in kept[1][0]["text"]
    assert kept[2] == []
    assert collector.used <= 1500


def test_clear_output_forgets_and_refunds():
    collector = OutputCollector(OutputLimits(notebook_bytes=100))
    collector.new_cell()
    for _ in range(5):  # a progress bar: print, clear, print ...
        collector.add("stream", {"text": "z" * 60})
        collector.add("clear_output", {"wait": False})
    collector.add("stream", {"text": "done\n"})
    assert collector.outputs == [{"kind": "text", "text": "done\n"}]
    assert collector.used == 5


@pytest.mark.parametrize(
    "content",
    [None, [], "text", {"data": "x"}, {"data": {"image/png": 5}}, {"text": 7}, {"traceback": [1]}],
)
def test_malformed_messages_are_ignored_or_shown_as_text(content):
    for kind in ("stream", "display_data", "execute_result", "error", "update_display_data"):
        for output in _collect((kind, content)):
            assert output["kind"] == "text" and isinstance(output["text"], str)


# --------------------------------------------------------------------- what the display run runs


def _pilot():
    source = nbformat.read(PILOT / "pilot.ipynb", as_version=4)
    return source, release_notebook(source, "pilot")


def test_the_display_run_has_no_hidden_test_in_it():
    source, release = _pilot()
    nb, _ = merge(source, release, fill_answers(copy.deepcopy(release)))
    code = "\n".join(text for _, text in display_cells(nb, release))
    hidden = [
        line.strip()
        for cell in source.cells
        for number, line in enumerate(cell.source.splitlines(), start=1)
        if number in authoring.split_hidden(cell.source) and len(line.strip()) > 10
    ]
    assert len(hidden) >= 6
    for line in hidden:
        assert line not in code
    assert "assert clamp(5.0, 0.0, 1.0) == 1.0" in code  # the visible test is run


# ------------------------------------------------------------------------- through the sandbox

SPY = "SEEN = []\n"
FIGURE = (
    "print('sizes seen:', SEEN)\n"
    "import matplotlib.pyplot as plt\n"
    "fig, ax = plt.subplots(figsize=(3, 2)); ax.plot([1, 2, 3])\n"
    "from IPython.display import HTML, display\n"
    "display(HTML('<script>alert(1)</script>'))\n"
)


def _spy_submission() -> tuple[Job, Job]:
    """A correct answer that records the size of every input; a last cell prints the record."""
    source, release = _pilot()
    nb = fill_answers(copy.deepcopy(release))
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "rr_estimate":
            cell.source = SPY + cell.source.replace(
                "def rr_estimate(answers, p):\n",
                "def rr_estimate(answers, p):\n    SEEN.append(len(answers))\n",
            )
    nb.cells.append(nbformat.v4.new_code_cell(FIGURE))
    # Floods: many small messages (the first 20,000 characters shown), one over the size cap.
    nb.cells.append(nbformat.v4.new_code_cell("for _ in range(2000):\n    print('w' * 5000, flush=True)"))
    nb.cells.append(nbformat.v4.new_code_cell("print('v' * 50_000_000)\nprint('after')"))
    nb.cells.append(nbformat.v4.new_code_cell("print('the last cell')"))
    job = Job(
        "ada",
        "pilot",
        nbformat.writes(source),
        nbformat.writes(release),
        nbformat.writes(nb).encode(),
        "pilot.ipynb",
        options=Options(cell_timeout=60, notebook_timeout=240, with_outputs=True),
    )
    plain = copy.copy(job)
    plain.options = Options(cell_timeout=60, notebook_timeout=240)
    return job, plain


@pytest.fixture(scope="module")
def graded():
    job, plain = _spy_submission()
    return grade_job(job), grade_job(plain)


def test_outputs_do_not_change_the_grade(graded):
    shown, plain = graded
    assert shown["score"] == plain["score"] == 7
    assert [c["status"] for c in shown["cells"]] == [c["status"] for c in plain["cells"]]
    assert not shown["problems"], shown["problems"]
    assert all("outputs" not in c for c in plain["feedback"])  # without the flag: none at all


def test_a_later_cell_shows_only_what_the_visible_tests_passed_in(graded):
    shown, _ = graded
    texts = [o["text"] for c in shown["feedback"] for o in c.get("outputs", ()) if o["kind"] == "text"]
    seen = next(t for t in texts if "sizes seen:" in t)
    # The visible test calls rr_estimate on 4 answers; the hidden ones on 1000 and on 10.
    assert re.search(r"sizes seen: \[4\]\n", seen), seen


def test_the_page_shows_text_and_figure_and_nothing_that_runs(graded):
    shown, _ = graded
    page = render_html(shown)
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert len(images) == 1 and base64.b64decode(images[0]).startswith(b"\x89PNG")
    assert "sizes seen: [4]" in page
    assert "<script" not in page and "&lt;IPython.core.display.HTML object&gt;" in page
    assert len(page) < 400_000


def test_floods_are_cut_and_the_run_goes_on(graded):
    shown, _ = graded
    *_, many, huge, last = [c.get("outputs", []) for c in shown["feedback"]]
    flood = many[0]["text"]  # many small messages: the first 20,000 characters, then a note
    assert flood.startswith(("w" * 5000 + "\n") * 3) and flood.count("w") == 20_000 - 3
    assert flood.endswith("[... output cut at 20,000 characters]\n")
    # One message over the cap is lost, and said to be; the next cell's outputs come through.
    assert huge == [{"kind": "note", "text": "some output of this cell was lost (too much of it, "
                     "or one piece over 2 MiB)"}]
    assert last == [{"kind": "text", "text": "the last cell\n"}]


def test_a_failed_display_run_never_costs_the_grade(monkeypatch):
    import coursetools.grading.grade as grade

    def broken(*args, **kwargs):
        raise OSError("no control group for the display run")

    monkeypatch.setattr(grade, "display_run", broken)
    job, _ = _spy_submission()
    result = grade_job(job)
    assert result["score"] == 7
    assert result["problems"] == ["display run: OSError: no control group for the display run"]
    assert all("outputs" not in c for c in result["feedback"])


# ------------------------------------------------------ a slow kernel is waited for, not "lost"


def _display(source, release, nb):
    """The display run of ``nb`` handed in for the pilot (outputs shown, generous timeouts)."""
    from coursetools.grading.grade import display_run
    from coursetools.grading.sandboxed import sandbox

    merged, _ = merge(source, release, nb)
    job = Job(
        "ada", "pilot", nbformat.writes(source), nbformat.writes(release),
        nbformat.writes(nb).encode(), "pilot.ipynb",
        options=Options(cell_timeout=60, notebook_timeout=240, with_outputs=True),
    )
    return display_run(job, merged, release, sandbox.detect()[0])


def test_a_cell_whose_last_outputs_come_late_is_not_said_to_have_lost_any():
    """The kernel's IOPub thread is held for 4 s after a cell (as on a machine at load 15): the
    cell's "idle" comes late, and nothing was cut, so no page may say "output lost"."""
    source, release = _pilot()
    nb = fill_answers(copy.deepcopy(release))
    hold = "import time\nget_ipython().kernel.iopub_thread.schedule(lambda: time.sleep(4))\n"
    nb.cells.append(nbformat.v4.new_code_cell(hold + "print('before the hold')"))
    nb.cells.append(nbformat.v4.new_code_cell("x = 1  # prints nothing"))
    nb.cells.append(nbformat.v4.new_code_cell("print('after the hold')"))
    shown, problems = _display(source, release, nb)
    assert not problems, problems
    outputs = [o for _, outs in sorted(shown.items()) for o in outs]
    assert [o for o in outputs if o["kind"] == "note"] == [], sorted(shown.items())[-4:]
    texts = [o["text"] for o in outputs if o["kind"] == "text"]
    assert texts[-2:] == ["before the hold\n", "after the hold\n"], texts


def test_no_cell_runs_before_the_subscription_carries_a_probe(monkeypatch):
    """ZeroMQ's slow joiner: a SUB socket hears nothing published before its subscription takes
    effect. Seen in CI: the first cell's outputs and "idle" were all lost, and after a 60 s wait
    the page said "some output of this cell was lost". So no cell of the display run may be sent
    until a probe's status has come through the subscription."""
    from coursetools.grading.sandboxed.kernel import KernelSession

    sent_unconfirmed = []
    original = KernelSession._request

    async def watched(self, msg_type, content, timeout, **kwargs):
        if self.iopub is not None and msg_type == "execute_request" and not content.get("silent"):
            if not self.subscription_confirmed:
                sent_unconfirmed.append(content.get("code", "")[:40])
        return await original(self, msg_type, content, timeout, **kwargs)

    monkeypatch.setattr(KernelSession, "_request", watched)
    source, release = _pilot()
    nb = fill_answers(copy.deepcopy(release))
    shown, problems = _display(source, release, nb)
    assert not problems, problems
    assert shown, "the display run showed nothing"
    assert sent_unconfirmed == []
