"""How a hidden test is written, read statically: the grading plan of a source notebook.

One job: read an instructor's source notebook and say what the trusted grader needs to run its
tests, and whether the tests follow the rules (docs/grading.md, "Writing a test"):

- a test cell runs in the *trusted* grader, never in the student's kernel; it may use Python's
  builtins, the modules and names **imported** by the notebook's read-only cells and by the test
  cell itself, the names the test cell assigns, and the **answers**: the names bound at the top
  level of the notebook's answer (solution) cells, which the grader fetches from the student's
  kernel as proxies (functions, classes, objects) or as plain data (numbers, arrays...);
- ``forbid("dplib.name", ...)`` in a hidden region declares that while this notebook is graded
  the kernel's dplib lacks those functions (bans by absence; the union over the notebook);
- many calls of an answer go through ``coursetools.authoring.hidden_tests``'s ``repeat(answer, n, ...)`` and
  ``map_calls(answer, arg_tuples)`` (one round trip in the grader, a loop in a plain kernel);
  the proxies' own ``answer.repeat(...)``/``answer.map(...)`` are refused, because a solution
  notebook must also run with Run All and raw nbgrader, where answers are plain functions;
- a cell's last expression gives partial credit (a number in [0, 1]), so it must not be an
  answer's value.

:func:`lint` reports every breach, with the cell and the fix; ``tests/coursetools/authoring/test_release.py`` runs it on
every notebook in ``solutions/``, so a test that would fail for a grader reason, not a student one,
never ships.
"""

from __future__ import annotations

import ast
import builtins
import types
from dataclasses import dataclass, field

from nbformat.notebooknode import NotebookNode

from coursetools.cells import BEGIN_HIDDEN, END_HIDDEN, nbgrader

__all__ = ["TestCell", "GradingPlan", "plan", "lint", "split_hidden"]

#: proxy-only batch methods and the ``coursetools.authoring.hidden_tests`` function to write instead
PROXY_METHODS = {"map": "map_calls(answer, arg_tuples, kwargs=None)", "repeat": "repeat(answer, n, *args)"}
BUILTIN_NAMES = set(dir(builtins))


@dataclass
class TestCell:
    """One autograded test cell as the trusted grader runs it."""

    grade_id: str
    points: float
    source: str  # visible and hidden parts, markers kept as comments
    hidden_lines: frozenset[int]  # 1-based line numbers inside hidden regions


@dataclass
class GradingPlan:
    """What the trusted grader needs for one notebook."""

    tests: dict[str, TestCell] = field(default_factory=dict)
    prelude: list[str] = field(default_factory=list)  # import statements of read-only cells
    answers: list[str] = field(default_factory=list)  # names bound by answer cells
    bans: list[str] = field(default_factory=list)  # "dplib.x" the grading kernel lacks


_nbg = nbgrader  # one reading of nbgrader's metadata: coursetools.cells


def _python(source: str) -> str:
    """Cell text as Python (IPython magics such as ``%matplotlib inline`` made plain calls)."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(_python(source))
    except SyntaxError:
        return None


def split_hidden(source: str) -> frozenset[int]:
    """1-based numbers of the lines strictly inside hidden-test regions."""
    hidden, inside = set(), False
    for number, line in enumerate(source.splitlines(), start=1):
        if BEGIN_HIDDEN in line:
            inside = True
        elif END_HIDDEN in line:
            inside = False
        elif inside:
            hidden.add(number)
    return frozenset(hidden)


def _is_test(cell) -> bool:
    meta = _nbg(cell)
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def _is_answer(cell) -> bool:
    return cell.cell_type == "code" and bool(_nbg(cell).get("solution"))


def _bound_names(tree: ast.Module) -> list[str]:
    """Names a cell binds at its top level (defs, classes, assignments; not imports)."""
    names: list[str] = []

    def targets(node):
        if isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for element in node.elts:
                targets(element)
        elif isinstance(node, ast.Starred):
            targets(node.value)

    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                targets(target)
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            targets(stmt.target)
    return names


def _imports(tree: ast.Module) -> list[ast.stmt]:
    return [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom)) and not _relative(s)]


def _relative(stmt) -> bool:
    return isinstance(stmt, ast.ImportFrom) and bool(stmt.level)


def _imported_names(statements) -> set[str]:
    names = set()
    for stmt in statements:
        for alias in stmt.names:
            if alias.name == "*":
                continue
            names.add(alias.asname or alias.name.split(".")[0])
    return names


def _bans(tree: ast.Module) -> list[tuple[int, object]]:
    """(line, argument) of every ``forbid(...)`` call; string arguments are the bans."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == "forbid":
                for arg in node.args:
                    value = arg.value if isinstance(arg, ast.Constant) else None
                    found.append((node.lineno, value))
    return found


def plan(source: NotebookNode) -> GradingPlan:
    """The grading plan of a source notebook (tests, prelude, answers, bans)."""
    result = GradingPlan()
    prelude_seen: set[str] = set()
    for cell in source.cells:
        if cell.cell_type != "code":
            continue
        meta = _nbg(cell)
        tree = _parse(cell.source)
        if _is_test(cell):
            result.tests[meta["grade_id"]] = TestCell(
                grade_id=meta["grade_id"],
                points=float(meta.get("points", 0) or 0),
                source=cell.source,
                hidden_lines=split_hidden(cell.source),
            )
            if tree is not None:
                hidden = split_hidden(cell.source)
                for line, value in _bans(tree):
                    if line in hidden and isinstance(value, str) and value not in result.bans:
                        result.bans.append(value)
        elif _is_answer(cell):
            for name in _bound_names(tree) if tree is not None else []:
                if name not in result.answers:
                    result.answers.append(name)
        elif meta.get("locked") and tree is not None:
            for stmt in _imports(tree):
                text = ast.unparse(stmt)
                if text not in prelude_seen:
                    prelude_seen.add(text)
                    result.prelude.append(text)
    return result


# ------------------------------------------------------------------------------------------ lint


def _scope_names(tree: ast.AST) -> tuple[set[str], list[tuple[str, int]]]:
    """(names bound anywhere in the cell, (name, line) of every name read)."""
    bound, loads = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loads.append((node.id, node.lineno))
            else:
                bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= _imported_names([node])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
    return bound, loads


def resolve_ban(name) -> types.FunctionType:
    """The trusted dplib function a ban names (``"dplib.rr_estimate"``), or ValueError."""
    from coursetools.authoring.hidden_tests import resolve_dplib_function

    return resolve_dplib_function(name)


def lint(source: NotebookNode) -> list[str]:
    """Every breach of the test-writing rules in a source notebook, as readable sentences."""
    the_plan = plan(source)
    problems: list[str] = []
    answers = set(the_plan.answers)
    prelude_names = set()
    for statement in the_plan.prelude:
        prelude_names |= _imported_names(ast.parse(statement).body)
    for cell in source.cells:
        if cell.cell_type != "code":
            continue
        meta = _nbg(cell)
        tree = _parse(cell.source)
        where = f"cell {meta.get('grade_id', '?')!r}"
        if tree is None:
            if _is_test(cell) or _is_answer(cell) or meta.get("locked"):
                problems.append(f"{where}: not valid Python")
            continue
        if not _is_test(cell):
            if "forbidden_calls" in cell.source or any(_bans(tree)):
                problems.append(f"{where}: forbid()/forbidden_calls belong in a test's hidden part")
            continue
        hidden = split_hidden(cell.source)
        bound, loads = _scope_names(tree)
        if "forbidden_calls" in cell.source:
            problems.append(
                f"{where}: forbidden_calls is gone; declare bans with forbid('dplib.name') "
                "in the hidden part (the grading kernel's dplib then lacks them)"
            )
        allowed = BUILTIN_NAMES | prelude_names | answers | bound
        from_answers = _answer_derived(tree, answers)
        for name, line in loads:
            if name not in allowed:
                problems.append(
                    f"{where} line {line}: {name!r} is not available to the trusted grader "
                    "(it sees builtins, imports of read-only cells and of the test, the test's "
                    "own names and the answers): import or compute it in the test"
                )
        for line, value in _bans(tree):
            if line not in hidden:
                problems.append(f"{where} line {line}: forbid() belongs in the hidden part")
            try:
                resolve_ban(value)
            except ValueError as exc:
                problems.append(f"{where} line {line}: {exc}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Assert) and node.msg is None and node.lineno in hidden:
                problems.append(
                    f"{where} line {node.lineno}: a hidden assert needs a message that teaches "
                    "without giving the answer (without one the student reads only "
                    f"'a hidden test failed (line {node.lineno})')"
                )
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in PROXY_METHODS
                and _root_name(node.func.value) in from_answers
            ):
                receiver, method = ast.unparse(node.func.value), node.func.attr
                function = PROXY_METHODS[method].split("(")[0]
                problems.append(
                    f"{where} line {node.lineno}: {receiver}.{method}(...) exists only on the "
                    "grader's proxies (Run All and raw nbgrader stop there): write "
                    f"{PROXY_METHODS[method].replace('answer', receiver, 1)} with "
                    f"'from coursetools.authoring.hidden_tests import {function}'"
                )
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            used = {n.id for n in ast.walk(tree.body[-1]) if isinstance(n, ast.Name)}
            if used & answers:
                problems.append(
                    f"{where}: the last expression gives partial credit and must not be an "
                    f"answer's value ({', '.join(sorted(used & answers))}): end with a statement"
                )
    return problems


def _root_name(node: ast.AST) -> str | None:
    """``acc`` for ``acc.spend``, ``models[0].fit`` or ``make()(1).run``; None for a literal."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _answer_derived(tree: ast.AST, answers: set[str]) -> set[str]:
    """The answers and the names a test binds from them (``acc = Budget(1.0)``), transitively."""
    names = set(answers)
    bindings = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            bindings += [(target, node.value) for target in node.targets]
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value:
            bindings.append((node.target, node.value))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            bindings.append((node.target, node.iter))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bindings.append((node.optional_vars, node.context_expr))
    changed = True
    while changed:
        changed = False
        for target, value in bindings:
            if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(value)):
                for n in ast.walk(target):
                    if isinstance(n, ast.Name) and n.id not in names:
                        names.add(n.id)
                        changed = True
    return names
