"""The rooms of ``coursetools`` and ``dplib`` and who may import whom.

Every import statement of both packages is read with :mod:`ast` (lazy imports inside functions
included, relative imports resolved) and checked against the rules below, each with its reason.
The grader's trust boundary is the main one: the trusted runner, which runs the instructor's test
cells, reaches no code that launches or talks to the kernel running student code. The unit tests
at the end feed the checker synthetic violating imports, so a checker that no longer sees an
import, or a rule that no longer bites, fails here too.

What it does not see: modules named in strings (``importlib.import_module(name)``, ``python -m
name``, the fork server's ``WARM_MODULES``); those are covered by the grading tests themselves.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from coursetools.grading.classroom.regrade import imports_in

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("coursetools", "dplib")

SANDBOXED = "coursetools.grading.sandboxed"
TRUSTED = "coursetools.grading.trusted"
BRIDGE = "coursetools.grading.bridge"
LIMITS = "coursetools.grading.sandboxed.limits"
FRAMING = "coursetools.grading.framing"

#: (importer, imported, reason): no module under ``importer`` imports anything under ``imported``.
FORBIDDEN = (
    (
        "coursetools.exchange",
        "coursetools.grading",
        "the hand-in service uses the exchange, not the reverse",
    ),
    ("coursetools.exchange", "coursetools.cli", "the command line runs the exchange service"),
    ("coursetools.exchange", "coursetools.book", "the exchange moves files; it renders nothing"),
    (
        "coursetools.lms",
        "coursetools.grading.handin",
        "the hand-in service posts grades through the LMS room, not the reverse",
    ),
    ("coursetools.lms", "coursetools.cli", "the command line drives the LMS room"),
    ("coursetools.lms", "coursetools.exchange", "launches and grades know no exchange"),
    ("coursetools.exchange", "coursetools.lms", "the exchange knows users by the hub, not the LMS"),
    ("coursetools.databases", "coursetools", "opening a database: a leaf every service may use"),
    ("dplib", "coursetools", "dplib is a DP library a reader can use outside the course"),
    ("coursetools.book", "coursetools.grading", "the book does not import the grader"),
    ("coursetools.book", "coursetools.cli", "the command line drives the book, not the reverse"),
    (
        "coursetools.authoring",
        "coursetools.grading",
        "authoring is read by the grader, not the reverse",
    ),
    ("coursetools.authoring", "coursetools.book", "authoring is read by the book, not the reverse"),
    ("coursetools.authoring", "coursetools.cli", "the command line drives release"),
    ("coursetools.rendering", "coursetools", "the shared renderer is a leaf every product may use"),
    ("coursetools.grading", "coursetools.book", "the grader does not import the book"),
    (SANDBOXED, TRUSTED, "the student's side never reaches the instructor's runner"),
    (
        SANDBOXED,
        "coursetools.grading.grade",
        "the sandboxed side is driven by grade, not the reverse",
    ),
    (SANDBOXED, "coursetools.grading.classroom", "the sandboxed side knows nothing of a class"),
    (SANDBOXED, "coursetools.cli", "the sandboxed side is driven, it drives nothing"),
    ("coursetools.grading.grade", "coursetools.grading.classroom", "one submission, not a class"),
    ("coursetools.grading.grade", "coursetools.cli", "the command line drives grade"),
    (
        "coursetools.grading",
        "coursetools.cli",
        "the command line drives the grader; the grader's front doors share the class pipeline, never the command line",
    ),
    (
        LIMITS,
        "coursetools",
        "the runner's own control group: a leaf, so trusted -> limits stays safe",
    ),
    (FRAMING, "coursetools", "the channels' frames: a leaf, so trusted -> framing stays safe"),
    ("coursetools.cells", "coursetools", "nbgrader's cell kinds: a leaf every product may use"),
    (
        "coursetools.paths",
        "coursetools",
        "where the course's folders are: a leaf every product may use",
    ),
    (
        "coursetools.grading.job",
        "coursetools.grading.grade",
        "the data types, not the grader that fills them",
    ),
    (
        "coursetools.grading.job",
        "coursetools.grading.classroom",
        "one submission's types know no class",
    ),
)

#: importer -> the only course modules (``coursetools.*``) it may import, and why.
ONLY = {
    "coursetools.exchange.client": (
        ("coursetools.exchange.client", "coursetools.exchange.archive"),
        "nbgrader's exchange classes run in every student's server: the archive format and no more",
    ),
    "coursetools.lms.open_assignment": (
        ("coursetools.lms.open_assignment", "coursetools.lms.settings"),
        "it runs in every student's server: the names it accepts and nothing of the tool's keys or records",
    ),
    TRUSTED: (
        (TRUSTED, BRIDGE, LIMITS, FRAMING),
        "the trusted runner imports no code that launches or talks to the student's kernel",
    ),
}

#: module -> the only top-level packages it may import besides the standard library, and why.
STANDALONE = {
    "coursetools.grading.sandboxed.sandbox": (
        ("dplib",),  # readonly_paths, called in the grader, finds an editable dplib if importable
        "the launcher runs as a script by absolute path before anything else is importable",
    ),
    BRIDGE: (("numpy",), "its source text also runs alone inside the student's kernel"),
    "coursetools.authoring.hidden_tests": (
        ("numpy", "dplib"),  # forbid() resolves dplib names by importlib, dplib's public paths
        "hidden tests load it in the trusted runner, which must reach no code that runs student work",
    ),
}

#: The modules dplib may keep at its root, beside the chapter subpackages, and why. A module that
#: belongs to one chapter (a mechanism, a query, a release, a model) lives in its subpackage.
DPLIB_ROOT = {
    "dplib.__main__": "the entry point of ``python -m dplib`` (the tour)",
    "dplib.tour": "the two-minute tour across every chapter that ``python -m dplib`` prints",
    "dplib.errors": "the library-wide exceptions and warnings, raised by every subpackage",
    "dplib.datasets": "seeded data for the notebooks of every chapter (as ``sklearn.datasets``)",
    "dplib._validation": "private argument checks shared by every subpackage",
    "dplib._estimator": "private scikit-learn protocol shared by dplib.learning and dplib.dpsgd",
}

#: dplib's subpackages, each a chapter's (or chapters') room.
DPLIB_PACKAGES = {
    "dplib.attacks": "00: why anonymization fails",
    "dplib.mechanisms": "01-05, 07: the mechanisms (and randomized response's intervals)",
    "dplib.queries": "02-03: private counts, sums, means, histograms, medians, modes",
    "dplib.accounting": "04-07: composition, RDP, PLD, shuffling",
    "dplib.learning": "02, 06: private models (naive Bayes)",
    "dplib.dpsgd": "06: DP-SGD",
    "dplib.auditing": "06: auditing a trained model",
    "dplib.views": "08: hierarchies and PrivTree for range queries",
    "dplib.synthesis": "08: MWEM and marginal synthesis",
    "dplib.testing": "statistical assertions the tests of every chapter use",
}


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def module_of(path: Path, root: Path = ROOT) -> str:
    """The dotted name of the module in ``path`` (a package's ``__init__.py`` is the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path = ROOT) -> dict[str, list[tuple[int, str]]]:
    """Module -> its imports, for every module of :data:`PACKAGES` under ``root``."""
    paths = {
        module_of(path, root): path
        for package in PACKAGES
        for path in sorted((root / package).rglob("*.py"))
        if "__pycache__" not in path.parts
    }
    known = frozenset(paths)
    return {
        name: imports_in(
            path.read_text(encoding="utf-8"),
            name,
            is_package=path.name == "__init__.py",
            known=known,
        )
        for name, path in paths.items()
    }


def violations(graph: dict[str, list[tuple[int, str]]]) -> list[str]:
    """Every import in ``graph`` that breaks :data:`FORBIDDEN`, :data:`ONLY` or :data:`STANDALONE`."""
    stdlib = sys.stdlib_module_names | {"__future__"}
    found = []
    for module, imports in sorted(graph.items()):
        for line, target in imports:
            where = f"{module} (line {line}) imports {target}"
            for importer, imported, reason in FORBIDDEN:
                if (
                    _under(module, importer)
                    and _under(target, imported)
                    and not _under(target, module)
                ):
                    found.append(f"{where}: {reason}")
            for importer, (allowed, reason) in ONLY.items():
                if (
                    _under(module, importer)
                    and _under(target, "coursetools")
                    and not any(_under(target, a) for a in allowed)
                ):
                    found.append(f"{where}: {reason}")
            if module in STANDALONE:
                allowed, reason = STANDALONE[module]
                top = target.split(".")[0]
                if top not in stdlib and top not in allowed:
                    found.append(f"{where}: {reason}")
    return found


def reachable(graph: dict[str, list[tuple[int, str]]], start: str) -> set[str]:
    """The course modules ``start`` imports, directly or through others."""
    seen, todo = set(), [m for m in graph if _under(m, start)]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo += [t for _, t in graph.get(module, ()) if t in graph]
    return seen


# ------------------------------------------------------------------------------- the real tree


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_the_tree_has_the_three_products_and_the_grader_two_sides(graph):
    for package in (
        "coursetools.grading",
        SANDBOXED,
        TRUSTED,
        "coursetools.grading.classroom",
        "coursetools.book",
        "coursetools.authoring",
    ):
        assert package in graph, f"{package} is not a package"
    assert "coursetools.grading.sandboxed.sandbox" in graph and f"{TRUSTED}.runner" in graph
    # no module left loose at the root beside the products, but the shared and entry modules
    loose = {m for m in graph if m.count(".") == 1 and m.startswith("coursetools.")}
    assert loose == {
        "coursetools.cli",
        "coursetools.rendering",
        "coursetools.cells",
        "coursetools.paths",
        "coursetools.databases",
        "coursetools.__main__",
    } | {
        "coursetools.grading",
        "coursetools.exchange",
        "coursetools.lms",
        "coursetools.book",
        "coursetools.authoring",
    }


def test_dplib_keeps_no_chapter_module_loose_at_its_root(graph):
    root = {m for m in graph if m.count(".") == 1 and m.startswith("dplib.")}
    assert root == set(DPLIB_ROOT) | set(DPLIB_PACKAGES), root ^ (
        set(DPLIB_ROOT) | set(DPLIB_PACKAGES)
    )
    packages = {m for m in root if (ROOT / m.replace(".", "/") / "__init__.py").is_file()}
    assert packages == set(DPLIB_PACKAGES)


def test_dplib_lists_its_subpackages_and_keeps_the_course_helpers_out():
    import dplib

    assert {f"dplib.{name}" for name in dplib._SUBMODULES} == set(DPLIB_PACKAGES) | {
        "dplib.datasets"
    }
    assert not (ROOT / "dplib" / "grading.py").exists()  # hidden tests' helpers: the course's


def test_no_import_crosses_a_boundary_the_wrong_way(graph):
    assert violations(graph) == []


def test_the_launcher_script_imports_only_the_standard_library_at_module_level():
    path = ROOT / "coursetools" / "grading" / "sandboxed" / "sandbox.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = [a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in tree.body if isinstance(n, ast.ImportFrom)]
    assert names and all(n.split(".")[0] in sys.stdlib_module_names | {"__future__"} for n in names)


def test_the_trusted_runner_reaches_no_code_that_runs_student_work(graph):
    reached = reachable(graph, TRUSTED)
    assert f"{TRUSTED}.runner" in reached and BRIDGE in reached  # the walk really follows imports
    assert {m for m in reached if _under(m, SANDBOXED)} <= {LIMITS}, reached
    assert not any(_under(m, "coursetools.grading.classroom") for m in reached)
    assert "coursetools.grading.grade" not in reached


def test_every_package_opens_with_what_it_holds_and_who_may_import_it_and_imports_nothing():
    for init in sorted((ROOT / "coursetools").rglob("__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        doc = ast.get_docstring(tree, clean=False) or ""
        first, second = ([*doc.splitlines(), "", ""])[:2]
        assert first.strip() and second.strip(), f"{init}: two opening lines expected"
        assert "import" in second.lower(), f"{init}: the second line says who may import it"
        # ``python -I -m coursetools.grading.trusted.runner`` imports every package on the way
        assert not [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)], init


def test_the_regrade_key_covers_every_module_of_the_grader_and_nothing_missing():
    from coursetools.grading.classroom import regrade

    listed = set(regrade.grader_modules())  # found from the grader's imports
    assert all((ROOT / name).is_file() for name in listed), "a moved module hashes as (missing)"
    assert "coursetools/authoring/rules.py" in listed  # picks tests, bans, prelude
    assert not any(name.startswith(("coursetools/book/", "coursetools/cli")) for name in listed)
    grader = ROOT / "coursetools" / "grading"
    sides = [grader / "grade.py", grader / "bridge.py"]
    sides += [p for d in ("sandboxed", "trusted") for p in (grader / d).glob("*.py")]
    expected = {str(p.relative_to(ROOT)) for p in sides if p.name != "__init__.py"}
    expected.add("coursetools/authoring/hidden_tests.py")  # the hidden tests' helpers grade too
    assert expected <= listed, expected - listed


# ------------------------------------------------------------------ the checker can fail


def _check(module: str, source: str, *, also=()) -> list[str]:
    known = {
        "coursetools.grading.sandboxed.kernel",
        "coursetools.grading.sandboxed.sandbox",
        "coursetools.grading.sandboxed.limits",
        "coursetools.grading.bridge",
        "coursetools.grading.trusted.runner",
        *also,
    }
    return violations({module: imports_in(source, module, known=frozenset(known))})


def test_a_trusted_module_importing_the_kernel_session_is_refused():
    found = _check(f"{TRUSTED}.runner", "from coursetools.grading.sandboxed import kernel\n")
    assert len(found) == 1 and "grading.sandboxed.kernel" in found[0]
    # imported lazily, inside a function, and relatively: still seen
    lazy = "def f():\n    from ..sandboxed import kernel\n    return kernel\n"
    assert _check(f"{TRUSTED}.forkserver", lazy)
    # what the runner really imports passes
    assert (
        _check(f"{TRUSTED}.runner", "from coursetools.grading import bridge\nimport numpy\n") == []
    )
    assert (
        _check(f"{TRUSTED}.forkserver", "from coursetools.grading.sandboxed import limits\n") == []
    )


def test_dplib_importing_coursetools_is_refused():
    assert _check("dplib.queries.aggregates", "import coursetools.cli\n")
    assert _check("dplib.mechanisms.laplace", "from coursetools import rendering\n")
    lazy = "def f():\n    from coursetools.authoring.hidden_tests import forbid\n"
    assert _check("dplib.views.hierarchy", lazy)
    assert _check("dplib.queries.aggregates", "import numpy\nfrom dplib.errors import X\n") == []


def test_the_hidden_tests_helpers_importing_the_grader_are_refused():
    helpers = "coursetools.authoring.hidden_tests"
    assert _check(helpers, "import numpy as np\nimport importlib\n") == []
    assert _check(helpers, "from coursetools.grading.sandboxed import kernel\n")
    assert _check(helpers, "from coursetools.authoring import rules\n")


def test_the_book_importing_the_grader_is_refused_and_the_renderer_is_allowed():
    assert _check(
        "coursetools.book.pages", "from coursetools.grading.sandboxed.outputs import ANSI\n"
    )
    assert _check("coursetools.book.pages", "from coursetools.rendering import ANSI\n") == []


def test_the_sandboxed_side_importing_the_trusted_runner_or_the_class_is_refused():
    assert _check(f"{SANDBOXED}.kernel", "from coursetools.grading.trusted import runner\n")
    assert _check(f"{SANDBOXED}.bans", "import coursetools.grading.classroom.feedback\n")


def test_the_launcher_and_the_bridge_stay_standalone():
    launcher = "coursetools.grading.sandboxed.sandbox"
    assert _check(launcher, "import os, ctypes\nfrom dataclasses import dataclass\n") == []
    assert _check(launcher, "import numpy\n")
    assert _check(launcher, "from coursetools.grading import bridge\n")
    assert _check(BRIDGE, "import numpy as np\nimport json\n") == []
    assert _check(BRIDGE, "from coursetools.rendering import ANSI\n")


def test_a_control_group_module_that_reaches_the_kernel_is_refused_through_the_leaf_rule():
    # trusted -> limits is allowed only because limits imports nothing of the course's
    assert _check(LIMITS, "from coursetools.grading.sandboxed import kernel\n")
    graph = {
        f"{TRUSTED}.forkserver": [(1, LIMITS)],
        LIMITS: [(1, f"{SANDBOXED}.kernel")],
        f"{SANDBOXED}.kernel": [],
    }
    assert f"{SANDBOXED}.kernel" in reachable(graph, TRUSTED)


# ------------------------------------------------------------------ no private name across rooms

#: (importer, module, name) -> why a private name may cross from ``module`` into ``importer``.
#: Empty: what crosses a module's border has a public name (in a private module, ``_x.py``, when
#: it is no reader's API; a helper in a public module that another module uses is public but left
#: out of ``__all__``, so neither the book nor ``help()`` lists it).
PRIVATE_CROSSINGS: dict[tuple[str, str, str], str] = {}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_names_crossing(
    source: str, module: str, *, is_package: bool = False, known=frozenset()
) -> list:
    """``(line, other module, name)`` for every private name of another course module that
    ``source`` reaches: ``from other import _name`` and ``other._name`` (``other`` bound by an
    import of a course module)."""
    found, aliases = [], {}
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    aliases[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                anchor = package[: len(package) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:
                    aliases[alias.asname or alias.name] = full
                elif _private(alias.name) and base != module:
                    found.append((node.lineno, base, alias.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in aliases:
                target = ".".join([aliases[value.id], *reversed(chain[1:])])
                if target != module:
                    found.append((node.lineno, target, node.attr))
    return found


def private_crossings(root: Path = ROOT) -> list[str]:
    """Every private name that crosses a module border in :data:`PACKAGES`, but the listed ones."""
    paths = {
        module_of(path, root): path
        for package in PACKAGES
        for path in sorted((root / package).rglob("*.py"))
        if "__pycache__" not in path.parts
    }
    known = frozenset(paths)
    out = []
    for name, path in paths.items():
        text = path.read_text(encoding="utf-8")
        for line, other, private in private_names_crossing(
            text, name, is_package=path.name == "__init__.py", known=known
        ):
            if (name, other, private) not in PRIVATE_CROSSINGS:
                out.append(f"{name}:{line} uses {other}.{private}")
    return out


def test_no_private_name_crosses_a_module_border():
    assert private_crossings() == []


def test_every_listed_private_crossing_still_exists():
    # an exception whose import is gone is a stale map
    present = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            name = module_of(path)
            present |= {
                (name, o, p)
                for _, o, p in private_names_crossing(path.read_text(encoding="utf-8"), name)
            }
    assert set(PRIVATE_CROSSINGS) <= present


def test_a_private_import_or_attribute_of_another_module_is_found():
    known = frozenset(
        {"dplib.mechanisms.discrete_laplace", "coursetools.grading.sandboxed.outputs"}
    )
    source = (
        "from dplib.mechanisms.discrete_laplace import _noise\n"
        "from coursetools.grading.sandboxed import outputs\n"
        "import dplib.mechanisms.discrete_laplace as dl\n"
        "x = outputs._image(1)\n"
        "y = dl._noise\n"
        "from . import _sibling\n"
    )
    found = private_names_crossing(source, "dplib.queries.counts", known=known)
    assert (1, "dplib.mechanisms.discrete_laplace", "_noise") in found
    assert (4, "coursetools.grading.sandboxed.outputs", "_image") in found
    assert (5, "dplib.mechanisms.discrete_laplace", "_noise") in found
    assert (6, "dplib.queries", "_sibling") in found
    # a module's own private names, dunders and public names are not crossings
    own = "from dplib.queries.counts import _x, __all__, y\nimport dplib.queries.counts as c\nz = c._x\n"
    assert (
        private_names_crossing(own, "dplib.queries.counts", known=known | {"dplib.queries.counts"})
        == []
    )


#: module -> (the test file that tests it, why not the mirrored tests/<path>/test_<module>.py).
#: Every other module of coursetools and dplib has its mirrored test file.
TESTED_ELSEWHERE: dict[str, tuple[str, str]] = {
    "coursetools/authoring/example_class.py": (
        "tests/coursetools/authoring/test_release.py",
        "tested with the release and the rules that use it",
    ),
    "coursetools/authoring/readable.py": (
        "tests/coursetools/authoring/test_rules.py",
        "tested with the release and the rules that use it",
    ),
    "coursetools/book/pages.py": (
        "tests/coursetools/book/test_build.py",
        "the book's pages and search are tested by building the book",
    ),
    "coursetools/book/search.py": (
        "tests/coursetools/book/test_build.py",
        "the book's pages and search are tested by building the book",
    ),
    "coursetools/cells.py": (
        "tests/coursetools/test_rendering.py",
        "tested with the renderer that reads the same cells",
    ),
    "coursetools/grading/classroom/executors.py": (
        "tests/coursetools/grading/handin/test_service.py",
        "the hand-in service, its queue and policies are tested through the service",
    ),
    "coursetools/grading/classroom/feedback.py": (
        "tests/coursetools/grading/test_feedback_outputs.py",
        "the feedback page is tested with the grader's outputs it shows (and in Chromium)",
    ),
    "coursetools/databases.py": (
        "tests/coursetools/lms/test_store.py",
        "the engine is tested through the two stores that open one (also test_storage.py)",
    ),
    "coursetools/lms/final.py": (
        "tests/coursetools/lms/test_outbox.py",
        "final grades go through the outbox: tested with it, from a real gradebook",
    ),
    "coursetools/lms/csv_export.py": (
        "tests/coursetools/grading/classroom/test_gradebook.py",
        "the LMS export is tested with the gradebook it reads",
    ),
    "coursetools/grading/classroom/pipeline.py": (
        "tests/coursetools/test_cli.py",
        "the class pipeline and its regrade plan are tested as make grade runs them",
    ),
    "coursetools/grading/classroom/regrade.py": (
        "tests/coursetools/test_cli.py",
        "the class pipeline and its regrade plan are tested as make grade runs them",
    ),
    "coursetools/grading/handin/policy.py": (
        "tests/coursetools/grading/handin/test_service.py",
        "the hand-in service, its queue and policies are tested through the service",
    ),
    "coursetools/grading/handin/queue.py": (
        "tests/coursetools/grading/handin/test_service.py",
        "the hand-in service, its queue and policies are tested through the service",
    ),
    "coursetools/grading/sandboxed/bans.py": (
        "tests/coursetools/authoring/test_rules.py",
        "tested through the grader that drives it, in a real sandbox",
    ),
    "coursetools/grading/sandboxed/kernel.py": (
        "tests/coursetools/grading/test_grade_adversarial.py",
        "tested through the grader that drives it, in a real sandbox",
    ),
    "coursetools/grading/sandboxed/outputs.py": (
        "tests/coursetools/grading/test_feedback_outputs.py",
        "tested through the grader that drives it, in a real sandbox",
    ),
    "dplib/_estimator.py": (
        "tests/dplib/dpsgd/test_dpsgd.py",
        "a private helper, tested through the public functions that use it",
    ),
    "dplib/accounting/dpsgd.py": (
        "tests/dplib/accounting/test_dpsgd_accounting.py",
        "tested with the accountant that interprets it",
    ),
    "dplib/accounting/events.py": (
        "tests/dplib/accounting/test_accountant.py",
        "tested with the accountant that interprets it",
    ),
    "dplib/attacks/_tables.py": (
        "tests/dplib/attacks/test_attacks.py",
        "notebook 00's attacks are tested together, by their public names",
    ),
    "dplib/attacks/consistent_ages.py": (
        "tests/dplib/attacks/test_attacks.py",
        "notebook 00's attacks are tested together, by their public names",
    ),
    "dplib/attacks/difference.py": (
        "tests/dplib/attacks/test_attacks.py",
        "notebook 00's attacks are tested together, by their public names",
    ),
    "dplib/attacks/kanonymity.py": (
        "tests/dplib/attacks/test_attacks.py",
        "notebook 00's attacks are tested together, by their public names",
    ),
    "dplib/attacks/linkage.py": (
        "tests/dplib/attacks/test_attacks.py",
        "notebook 00's attacks are tested together, by their public names",
    ),
    "dplib/attacks/reconstruction.py": (
        "tests/dplib/attacks/test_attacks.py",
        "notebook 00's attacks are tested together, by their public names",
    ),
    "dplib/attacks/sparse.py": (
        "tests/dplib/attacks/test_attacks.py",
        "notebook 00's attacks are tested together, by their public names",
    ),
    "dplib/attacks/uniqueness.py": (
        "tests/dplib/attacks/test_attacks.py",
        "notebook 00's attacks are tested together, by their public names",
    ),
    "dplib/auditing/canaries.py": (
        "tests/dplib/auditing/test_auditing.py",
        "the auditing tools are tested together on one trained model",
    ),
    "dplib/auditing/lower_bounds.py": (
        "tests/dplib/auditing/test_auditing.py",
        "the auditing tools are tested together on one trained model",
    ),
    "dplib/auditing/membership.py": (
        "tests/dplib/auditing/test_auditing.py",
        "the auditing tools are tested together on one trained model",
    ),
    "dplib/dpsgd/classifier.py": (
        "tests/dplib/dpsgd/test_dpsgd.py",
        "DP-SGD's pieces are tested together, piece by piece and end to end",
    ),
    "dplib/dpsgd/clipping.py": (
        "tests/dplib/dpsgd/test_dpsgd.py",
        "DP-SGD's pieces are tested together, piece by piece and end to end",
    ),
    "dplib/dpsgd/gradients.py": (
        "tests/dplib/dpsgd/test_dpsgd.py",
        "DP-SGD's pieces are tested together, piece by piece and end to end",
    ),
    "dplib/dpsgd/optimizer.py": (
        "tests/dplib/dpsgd/test_dpsgd.py",
        "DP-SGD's pieces are tested together, piece by piece and end to end",
    ),
    "dplib/errors.py": (
        "tests/dplib/test_contract.py",
        "raised by every room: the contract tests check each refusal's type",
    ),
    "dplib/mechanisms/_count_noise.py": (
        "tests/dplib/queries/test_partition_selection.py",
        "a private helper, tested through the public functions that use it",
    ),
    "dplib/mechanisms/_exact.py": (
        "tests/dplib/mechanisms/test_exact_samplers.py",
        "a private helper, tested through the public functions that use it",
    ),
    "dplib/mechanisms/_integer.py": (
        "tests/dplib/mechanisms/test_discrete.py",
        "a private helper, tested through the public functions that use it",
    ),
    "dplib/mechanisms/discrete_gaussian.py": (
        "tests/dplib/mechanisms/test_discrete.py",
        "tested with its twin through dplib.mechanisms.discrete, which re-exports both",
    ),
    "dplib/mechanisms/discrete_laplace.py": (
        "tests/dplib/mechanisms/test_discrete.py",
        "tested with its twin through dplib.mechanisms.discrete, which re-exports both",
    ),
    "dplib/testing/distributions.py": (
        "tests/dplib/testing/test_testing.py",
        "the statistical assertions are tested together, against exact laws",
    ),
    "dplib/testing/dp_audit.py": (
        "tests/dplib/testing/test_testing.py",
        "the statistical assertions are tested together, against exact laws",
    ),
    "dplib/testing/intervals.py": (
        "tests/dplib/testing/test_testing.py",
        "the statistical assertions are tested together, against exact laws",
    ),
    "dplib/testing/moments.py": (
        "tests/dplib/testing/test_testing.py",
        "the statistical assertions are tested together, against exact laws",
    ),
}

# ------------------------------------------------------------------------- a test beside every module


def mirrored_test(module_path: str) -> Path:
    """``tests/<same folders>/test_<module>.py`` (a private module's leading underscore dropped)."""
    path = Path(module_path)
    return ROOT / "tests" / path.parent / f"test_{path.stem.lstrip('_')}.py"


def course_modules() -> list[str]:
    """Every module file of coursetools and dplib but packages' ``__init__`` and ``__main__``."""
    return sorted(
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts and path.name not in ("__init__.py", "__main__.py")
    )


def test_every_module_has_its_mirrored_test_file_or_says_where_it_is_tested():
    untested = [
        m for m in course_modules() if not mirrored_test(m).is_file() and m not in TESTED_ELSEWHERE
    ]
    assert untested == [], (
        f"no tests/<path>/test_<module>.py and no entry in TESTED_ELSEWHERE: {untested}"
    )


def test_each_listed_module_is_really_tested_where_the_list_says_and_the_list_is_not_stale():
    modules = set(course_modules())
    for module, (test_file, why) in TESTED_ELSEWHERE.items():
        assert module in modules, f"{module} is listed but does not exist"
        assert not mirrored_test(module).is_file(), (
            f"{module} has its mirrored test now: drop it from the list"
        )
        assert why.strip()
        text = (ROOT / test_file).read_text(encoding="utf-8")
        dotted = module[: -len(".py")].replace("/", ".")
        tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
        public = [
            elt.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(getattr(t, "id", "") == "__all__" for t in node.targets)
            for elt in getattr(node.value, "elts", [])
            if isinstance(elt, ast.Constant)
        ]
        names = [dotted, Path(module).stem.lstrip("_"), *public]
        assert any(name in text for name in names), f"{test_file} names nothing of {module}"


def test_the_mirrored_count():
    modules = course_modules()
    mirrored = [m for m in modules if mirrored_test(m).is_file()]
    # the figure the closing note quotes; it only grows
    assert len(mirrored) + len(TESTED_ELSEWHERE) == len(modules)
