"""Bans by absence: the copy of dplib a grading kernel sees, without the banned functions' code.

One job: given the functions a notebook's hidden tests ``forbid(...)`` (for instance
``"dplib.rr_estimate"`` when an exercise asks the student to write it), build a copy of the dplib
package in which each of them is replaced, in its source file, by a stub that raises
:class:`coursetools.authoring.hidden_tests.ForbiddenCallError` (a class of that name and module
made in the kernel, which cannot import coursetools: see :data:`STUB`). The sandbox binds the
copy read-only over the real package, so nothing in the kernel holds the banned code: not the module, not a cached code object,
not a file to reload or ``exec``. Every other name still imports, so the notebook's demonstrations
run; a dplib function that calls a banned one internally raises too, which is the point (it would
otherwise be a way round the ban). Line numbers are kept so tracebacks still match the source.
"""

from __future__ import annotations

import ast
import inspect
import shutil
from pathlib import Path

from coursetools.authoring.hidden_tests import ForbiddenCallError
from coursetools.authoring.rules import resolve_ban

__all__ = ["grading_dplib", "real_dplib_dir"]

#: The kernel cannot import coursetools (the sandbox shows it only the Python installation, the
#: virtualenv and dplib), so the stub makes its error class in place: an ``AssertionError``
#: subclass with :class:`ForbiddenCallError`'s name and module, which the kernel reports by that
#: name and the trusted runner maps to the real class (``known_exceptions``).
STUB = (
    "def {name}(*args, **kwargs):  # removed while this notebook is graded\n"
    "    raise type({error!r}, (AssertionError,), {{'__module__': {module!r}}})({message!r})\n"
)


def real_dplib_dir() -> Path:
    """The directory of the installed dplib package (what the kernel would import)."""
    import dplib

    return Path(dplib.__file__).resolve().parent


def _stubbed(source: str, names: set[str], path: Path) -> str:
    tree = ast.parse(source, str(path))
    lines = source.splitlines(keepends=True)
    found = set()
    for node in sorted(tree.body, key=lambda n: -n.lineno):  # bottom up: earlier lines stay put
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            last = node.end_lineno
            message = (
                f"this exercise asks you to write {node.name} yourself: dplib's {node.name} is "
                "not available while this notebook is graded"
            )
            stub = STUB.format(
                name=node.name,
                error=ForbiddenCallError.__name__,
                module=ForbiddenCallError.__module__,
                message=message,
            ).splitlines(keepends=True)
            stub += ["\n"] * max(0, last - first - len(stub))
            lines[first:last] = stub
            found.add(node.name)
    missing = names - found
    if missing:
        raise ValueError(f"{path}: no top-level function {', '.join(sorted(missing))}")
    return "".join(lines)


def grading_dplib(bans: list[str], directory: Path) -> Path | None:
    """Write the grading copy of dplib under ``directory``; return its package directory.

    Returns None when nothing is banned (the kernel then sees the real package).
    """
    if not bans:
        return None
    by_file: dict[Path, set[str]] = {}
    package = real_dplib_dir()
    for ban in bans:
        function = inspect.unwrap(resolve_ban(ban))
        if function.__qualname__ != function.__name__:
            raise ValueError(f"forbid({ban!r}): only top-level functions can be banned")
        path = Path(inspect.getsourcefile(function)).resolve()
        if package not in path.parents:
            raise ValueError(f"forbid({ban!r}) names a function outside dplib")
        by_file.setdefault(path, set()).add(function.__name__)
    target = Path(directory) / "dplib"
    shutil.copytree(
        package, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"), symlinks=False
    )
    for path, names in by_file.items():
        copy = target / path.relative_to(package)
        copy.write_text(_stubbed(path.read_text(encoding="utf-8"), names, path), encoding="utf-8")
    for item in [target, *target.rglob("*")]:
        item.chmod(0o755 if item.is_dir() else 0o644)
    return target
