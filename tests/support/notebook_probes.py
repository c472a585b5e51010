"""Plausible wrong answers and correct alternatives of one notebook, graded by the trusted grader.

Shared by ``tests/test_notebook0N_exercises.py``. Each of those files writes, per exercise, three
or more wrong answers a real student would hand in and two correct alternatives; a
:class:`Probe` grades them as submissions (the solution as ``examples/make_class.py``'s
``ada_full`` hands it in, with the answer cells replaced) with ``coursetools.grading.grade_job``
and :func:`install` adds the tests: every wrong answer scores 0 on its exercise, every
alternative gets full marks under five seeds (a ``{burn}`` in an alternative's text is replaced
by the seed, so its random draws differ from run to run).

A run grades only the exercises it is about: a wrong-answer run drops the test cells of the
exercises that have no wrong answer of that index (their answer is the solution's), and a run of
seed 1 to 4 drops those whose alternative has no ``{burn}`` (its draws, and so its grade, are the
same under every seed: the hidden tests seed their own generators, so seed 0's grade is its grade
under all five). Test cells run in the trusted runner, never in the kernel, so dropping one
changes nothing the other cells see. The read-only setup cell loses what only figures use
(``%matplotlib``, matplotlib's and scikit-learn's imports and the statements that use them) unless
a kept cell, a wrong answer or an alternative names one of them.

Up to :data:`SEGMENTS` runs are graded in one kernel (:meth:`Probe.grade_segments`: the wrong
answers together, each alternative's seeds together), each run a segment of its own with the setup
cell first, so a kernel's start is paid once a batch (``tests/notebooks/test_notebook_probes.py``
shows a batch gives each segment the verdicts of its own grading). :func:`without_figures` is the
trim ``tests/coursetools/authoring/test_release.py``'s Validator run uses.
"""

from __future__ import annotations

import ast
import concurrent.futures as cf
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from coursetools.authoring.release import notebook_bytes, release_notebook
from coursetools.authoring.rules import _imported_names, _scope_names

ROOT = Path(__file__).resolve().parents[2]


def _gid(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


#: What only the figures use: a read-only cell's imports of these, the statements that use them and
#: ``%matplotlib`` are left out of a probe's runs (a kernel's second of imports, 160 times a run).
FIGURE_MODULES = ("matplotlib", "sklearn")
WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def _figure_setup(source: str) -> tuple[list[bool], set[str]]:
    """(which lines of a read-only cell to keep, the names the left-out lines bound)."""
    lines = source.splitlines()
    keep = [not line.lstrip().startswith("%matplotlib") for line in lines]
    try:
        tree = ast.parse("\n".join(line if k else "" for line, k in zip(lines, keep, strict=True)))
    except SyntaxError:
        return [True] * len(lines), set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            drop = any(m.split(".")[0] in FIGURE_MODULES for m in modules)
            if drop:
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            drop = any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))
            if drop:  # what it binds is gone too: a kept cell or answer that reads it keeps the cell whole
                names |= {
                    n.id
                    for n in ast.walk(node)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                }
        if drop:
            keep[node.lineno - 1 : node.end_lineno] = [False] * (node.end_lineno - node.lineno + 1)
    return keep, names


def _parsed(source: str) -> ast.AST | None:
    """A cell's syntax tree, its magics (``%``, ``!``) as blank lines; None if it does not parse."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _needs(source: str) -> set[str]:
    """The names a cell reads that it does not bind itself (every word, if it does not parse)."""
    tree = _parsed(source)
    if tree is None:
        return set(WORD.findall(source))
    bound, loads = _scope_names(tree)  # bound: parameters too, which are no global reads
    return {name for name, _ in loads} - bound


def _defines(tree: ast.AST) -> set[str]:
    """The names a cell surely binds: plain names assigned, defined or imported at its top level
    (not in a branch or a loop, which may not run)."""
    names: set[str] = set()
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for leaf in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(leaf, ast.Name):
                        names.add(leaf.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= _imported_names([node])
    return names


def without_figures(nb):
    """``nb`` without its figures and experiments: the cells no graded cell needs.

    Every markdown cell, answer cell and test cell stays; any other code cell (read-only or
    not) stays only when a later kept cell reads a name it binds (read backwards, so what a
    kept one needs stays too, and a name a kept cell surely binds first is not needed from
    before it). Kept cells are unchanged (nbgrader's checksums of read-only cells still hold). A
    cell that only changes an object in place (no name bound) is left out: such a dependency is
    checked where the whole notebook runs (``tests/notebooks/test_solutions_run.py``).
    """
    nb = nbformat.from_dict(nb)
    kept, needed = [], set()
    for cell in reversed(nb.cells):
        meta = cell.metadata.get("nbgrader") or {}
        if cell.cell_type == "code" and not meta.get("grade") and not meta.get("solution"):
            tree = _parsed(cell.source)
            if tree is not None and not _scope_names(tree)[0] & needed:
                continue
        kept.append(cell)
        if cell.cell_type == "code":  # what it surely binds, an earlier cell need not
            tree = _parsed(cell.source)
            needed = (needed - (_defines(tree) if tree is not None else set())) | _needs(
                cell.source
            )
    nb.cells = kept[::-1]
    return nb


def _make_class():
    from coursetools.authoring import example_class

    return example_class


@dataclass(frozen=True)
class Probe:
    """One notebook's wrong answers and alternatives (plain data, so it crosses to a worker).

    ``exercises`` maps an answer cell's grade_id to its test cell's; ``wrong`` maps it to
    ``(what is wrong, source)`` pairs and ``alternatives`` to two sources. Before grading, the
    notebook loses every ungraded code cell (figures and experiments, kept only when their cell
    id is in ``kept_code``) and the cells whose grade_id is in ``dropped``.
    """

    name: str
    exercises: dict[str, str]
    wrong: dict[str, list[tuple[str, str]]]
    alternatives: dict[str, list[str]]
    seeds: range = range(5)
    dropped: frozenset[str] = field(default_factory=frozenset)
    kept_code: frozenset[str] = field(default_factory=frozenset)

    @property
    def source(self) -> Path:
        return ROOT / "solutions" / self.name / f"{self.name}.ipynb"

    def trim(self, nb, tests_dropped: frozenset[str] = frozenset()):
        nb = nbformat.from_dict(nb)
        dropped = self.dropped | tests_dropped
        nb.cells = [
            c
            for c in nb.cells
            if _gid(c) not in dropped
            and (c.cell_type != "code" or _gid(c) or c.get("id") in self.kept_code)
        ]
        used = self._words_used(nb)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code" or meta.get("grade") or meta.get("solution"):
                continue
            keep, names = _figure_setup(cell.source)
            if names and not names & used:  # nothing kept, and no answer of the probe, uses them
                cell.source = "\n".join(
                    line for line, k in zip(cell.source.splitlines(), keep, strict=True) if k
                )
        return nb

    def _words_used(self, nb) -> set[str]:
        """Every identifier-like word of the answer and test cells kept and of every wrong answer and
        alternative: a figure import any of them might read stays."""
        texts = [
            c.source
            for c in nb.cells
            if c.cell_type == "code"
            and (
                c.metadata.get("nbgrader", {}).get("grade")
                or c.metadata.get("nbgrader", {}).get("solution")
                or c.get("id") in self.kept_code
            )
        ]
        texts += [source for variants in self.wrong.values() for _, source in variants]
        texts += [source for variants in self.alternatives.values() for source in variants]
        return set(WORD.findall("\n".join(texts)))

    def submission(
        self, answers: dict[str, str], tests_dropped: frozenset[str] = frozenset()
    ) -> bytes:
        """The solution as handed in (``ada_full``), ``answers`` in place, trimmed."""
        handed_in = _make_class().student_notebooks(self.source)["ada_full"].decode()
        nb = nbformat.reads(handed_in, as_version=4)
        for cell in nb.cells:
            if _gid(cell) in answers:
                cell.source = answers[_gid(cell)]
        return nbformat.writes(self.trim(nb, tests_dropped)).encode()

    def _tests_dropped(self, only: frozenset[str] | None) -> frozenset[str]:
        return frozenset(
            test
            for answer, test in self.exercises.items()
            if only is not None and answer not in only
        )

    def grade(self, answers: dict[str, str], only: frozenset[str] | None = None) -> dict[str, str]:
        """grade_id of each test cell -> 'passed', 'failed' or 'partial', by the trusted grader.

        ``only``: the exercises (answer grade_ids) whose test cells are graded; None for all.
        """
        return self.grade_segments([(answers, only)])[0]

    def grade_segments(
        self, segments: list[tuple[dict[str, str], frozenset[str] | None]]
    ) -> list[dict[str, str]]:
        """Several submissions graded as one: the verdicts of each, as :meth:`grade` gives them.

        Segment k is the trimmed notebook with its ``answers`` in place and only the test cells of
        its exercises (``only``), every grade_id and cell id suffixed ``__seg<k>`` (k > 0) and, after
        the first, its code cells only: the read-only setup cell runs again at the start of every
        segment (its data made afresh, its imports already loaded), then every answer cell (the
        segment's own, the solution's for the other exercises) and its test cells. One kernel and
        one trusted runner serve all of them: a probe pays their start once, not once a
        submission. A segment sees nothing of an earlier one that its own cells do not redefine
        but names an earlier answer left behind, which can only make a wrong answer look right
        (a failure of the wrong-answer test, never a false pass); any kernel death, restart or
        timeout is a problem, and a problem fails the probe (as for a single submission).
        """
        from coursetools.grading.grade import grade_job
        from coursetools.grading.job import Job, Options

        base = nbformat.read(self.source, as_version=4)
        sources, submissions = [], []
        for k, (answers, only) in enumerate(segments):
            dropped = self._tests_dropped(only)
            sources.append(_segment(self.trim(base, dropped), k))
            submissions.append(
                _segment(
                    nbformat.reads(self.submission(answers, dropped).decode(), as_version=4), k
                )
            )
        source, submission = _concatenated(sources), _concatenated(submissions)
        job = Job(
            student="probe",
            assignment=self.name,
            source=nbformat.writes(source),
            release=notebook_bytes(release_notebook(source, self.name)).decode(),
            submission=nbformat.writes(submission).encode(),
            notebook_name=f"{self.name}.ipynb",
            files={},
            options=Options(cell_timeout=300.0, notebook_timeout=900.0 * len(segments)),
        )
        result = grade_job(job)
        assert not result["problems"], result["problems"]
        verdicts: list[dict[str, str]] = [{} for _ in segments]
        for c in result["cells"]:
            if c["kind"] != "auto":
                continue
            gid, k = _unsegmented(c["grade_id"])
            verdicts[k][gid] = (
                "passed"
                if c["points"] == c["max_points"] > 0
                else "failed"
                if c["points"] == 0
                else "partial"
            )
        return verdicts

    @property
    def runs(self) -> list[tuple]:
        """One submission per index of wrong answers, and one per alternative and seed."""
        wrong = [("wrong", i) for i in range(max(len(v) for v in self.wrong.values()))]
        alternatives = [("alternative", (w, s)) for w in (0, 1) for s in self.seeds]
        return wrong + [
            run for run in alternatives if self.graded_in(run)
        ]  # a run that grades nothing is not run

    def seeded(self, which: int) -> frozenset[str]:
        """The exercises whose alternative ``which`` draws differently under each seed."""
        return frozenset(g for g, a in self.alternatives.items() if "{burn}" in a[which])

    def graded_in(self, run: tuple) -> frozenset[str]:
        """The exercises a run grades (see the module's docstring)."""
        kind, arg = run
        if kind == "wrong":
            return frozenset(g for g, v in self.wrong.items() if arg < len(v))
        which, burn = arg
        return frozenset(self.exercises) if burn == self.seeds[0] else self.seeded(which)

    def answers(self, run: tuple) -> dict[str, str]:
        """The answer cells a run hands in (the solution's for every other exercise)."""
        kind, arg = run
        if kind == "wrong":
            return {gid: v[arg][1] for gid, v in self.wrong.items() if arg < len(v)}
        which, burn = arg
        return {g: a[which].replace("{burn}", str(burn)) for g, a in self.alternatives.items()}

    def run_together(self, runs: tuple[tuple, ...]) -> list[dict[str, str]]:
        return self.grade_segments([(self.answers(run), self.graded_in(run)) for run in runs])

    @property
    def batches(self) -> list[tuple[tuple, ...]]:
        """The runs in gradings of at most :data:`SEGMENTS` submissions each: the wrong answers
        together, each alternative's seeds together."""
        wrong = [run for run in self.runs if run[0] == "wrong"]
        groups = [wrong] + [
            [run for run in self.runs if run[0] == "alternative" and run[1][0] == which]
            for which in (0, 1)
        ]
        return [
            tuple(group[i : i + SEGMENTS])
            for group in groups
            for i in range(0, len(group), SEGMENTS)
        ]

    def graded(self) -> dict[tuple, dict[str, str]]:
        batches = self.batches
        with cf.ProcessPoolExecutor(max_workers=2) as pool:
            graded = list(pool.map(self.run_together, batches))
        return {
            run: verdicts
            for batch, results in zip(batches, graded, strict=True)
            for run, verdicts in zip(batch, results, strict=True)
        }


#: Submissions graded in one kernel (:meth:`Probe.grade_segments`): a kernel's and a runner's start
#: and the setup cell's imports (about 1.3 s together) are paid once per batch.
SEGMENTS = 5
SEGMENT = re.compile(r"(.+)__seg([0-9]+)")


def _segment(nb, k: int):
    """``nb`` as segment ``k`` of a batch: ids suffixed and, after the first, code cells only."""
    if k == 0:
        return nb
    nb = nbformat.from_dict(nb)
    nb.cells = [c for c in nb.cells if c.cell_type == "code"]
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade_id"):
            meta["grade_id"] = f"{meta['grade_id']}__seg{k}"
        if cell.get("id"):
            cell["id"] = f"{cell['id']}__seg{k}"
    return nb


def _concatenated(notebooks):
    out = nbformat.from_dict(notebooks[0])
    out.cells = [cell for nb in notebooks for cell in nb.cells]
    ids = [c.get("id") for c in out.cells]
    assert len(set(ids)) == len(ids) and all(len(i) <= 64 for i in ids), "cell ids of a batch"
    return out


def _unsegmented(grade_id: str) -> tuple[str, int]:
    match = SEGMENT.fullmatch(grade_id)
    return (match.group(1), int(match.group(2))) if match else (grade_id, 0)


def install(probe: Probe, namespace: dict) -> None:
    """Add the fixture and the three tests of ``probe`` to a test module's ``namespace``."""

    @pytest.fixture(scope="module")
    def graded():
        return probe.graded()

    def test_every_exercise_has_three_wrong_answers_and_two_alternatives():
        assert set(probe.wrong) == set(probe.exercises) == set(probe.alternatives)
        assert all(len(v) >= 3 for v in probe.wrong.values())
        assert all(len(v) == 2 for v in probe.alternatives.values())
        nb = nbformat.read(probe.source, as_version=4)
        ids = {_gid(c) for c in nb.cells}
        assert set(probe.exercises) | set(probe.exercises.values()) | probe.dropped <= ids
        assert probe.kept_code <= {c.get("id") for c in nb.cells}

    @pytest.mark.slow
    @pytest.mark.parametrize(
        ("answer", "index"),
        [(gid, i) for gid, variants in probe.wrong.items() for i in range(len(variants))],
        ids=[f"{gid}:{what}" for gid, variants in probe.wrong.items() for what, _ in variants],
    )
    def test_plausible_wrong_answer_scores_zero(graded, answer, index):
        verdict = graded[("wrong", index)][probe.exercises[answer]]
        assert verdict == "failed", probe.wrong[answer][index][0]

    @pytest.mark.slow
    @pytest.mark.parametrize("which", [0, 1])
    @pytest.mark.parametrize("burn", list(probe.seeds))
    def test_correct_alternatives_get_full_marks_under_five_seeds(graded, which, burn):
        scores = graded.get(("alternative", (which, burn)), {})
        first = graded[("alternative", (which, probe.seeds[0]))]
        run = probe.graded_in(("alternative", (which, burn)))
        assert set(scores) == {probe.exercises[g] for g in run}, (
            "a run graded other tests than it is about"
        )
        for answer, test in probe.exercises.items():
            # an alternative without {burn} draws the same under every seed: seed 0's grade is its grade
            assert (scores if answer in run else first)[test] == "passed", (answer, scores)

    namespace.update(
        graded=graded,
        test_every_exercise_has_three_wrong_answers_and_two_alternatives=(
            test_every_exercise_has_three_wrong_answers_and_two_alternatives
        ),
        test_plausible_wrong_answer_scores_zero=test_plausible_wrong_answer_scores_zero,
        test_correct_alternatives_get_full_marks_under_five_seeds=(
            test_correct_alternatives_get_full_marks_under_five_seeds
        ),
    )
