"""Generate the student release (``notebooks/``) from the instructor source (``solutions/``).

One job: apply nbgrader's own *generate assignment* preprocessors (``LockCells``,
``ClearSolutions``, ``ClearOutput``, ``ComputeChecksums``, ``ClearHiddenTests``,
``ClearMarkScheme``, ``CheckCellMetadata``) to each source notebook with nbformat, without a
gradebook, then normalise what nbgrader leaves machine-dependent (outputs, execution counts,
notebook metadata, missing cell ids) so that the release is a pure function of ``solutions/``:
regenerating it twice gives the same bytes, which ``tests/test_release.py`` checks.

Layout: one assignment per notebook, ``<source>/<name>/<name>.ipynb`` ->
``<release>/<name>/<name>.ipynb``; other files in the assignment directory (data) are copied.
"""

from __future__ import annotations

import copy
import hashlib
import os
import shutil
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode

__all__ = [
    "find_assignments",
    "release_notebook",
    "release_assignment",
    "release_all",
    "notebook_bytes",
    "hidden_test_regions",
]

IGNORED = {".ipynb_checkpoints", "__pycache__", ".DS_Store"}

# The only cell metadata a student notebook keeps (everything else is editor noise).
CELL_METADATA_KEPT = ("nbgrader", "deletable", "editable", "tags")
NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"


def find_assignments(source_root: Path) -> list[str]:
    """Names of the assignments under ``source_root`` (directories holding ``<name>.ipynb``)."""
    source_root = Path(source_root)
    if not source_root.is_dir():
        return []
    return sorted(
        d.name for d in source_root.iterdir() if d.is_dir() and (d / f"{d.name}.ipynb").is_file()
    )


def _preprocessors() -> list:
    # Imported lazily: nbgrader pulls in a lot, and ``grade`` workers need only ClearHiddenTests.
    from nbgrader.preprocessors import (
        CheckCellMetadata,
        ClearHiddenTests,
        ClearMarkScheme,
        ClearOutput,
        ClearSolutions,
        ComputeChecksums,
        LockCells,
    )

    config = _config()
    # GenerateAssignment's list, less IncludeHeaderFooter, InstantiateTests and SaveCells (the
    # gradebook): the course uses neither headers nor AUTOTEST, and grading reads the source.
    return [
        cls(config=config)
        for cls in (
            LockCells,
            ClearSolutions,
            ClearOutput,
            CheckCellMetadata,
            ComputeChecksums,
            ClearHiddenTests,
            ClearMarkScheme,
            ComputeChecksums,
            CheckCellMetadata,
        )
    ]


def _config():
    """The repository's nbgrader_config.py (markers, stubs), as nbgrader itself would read it."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    path = Path(__file__).resolve().parents[1] / "nbgrader_config.py"
    if not path.is_file():
        return Config()
    return PyFileConfigLoader(path.name, str(path.parent)).load_config()


def _stable_id(name: str, index: int, cell: NotebookNode) -> str:
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
    digest = hashlib.sha1(f"{name}\0{index}\0{grade_id}".encode()).hexdigest()
    return digest[:8]


def normalise(nb: NotebookNode, name: str) -> NotebookNode:
    """Make a notebook deterministic: no outputs, fixed metadata, a unique stable id per cell."""
    nb = copy.deepcopy(nb)
    nb.nbformat, nb.nbformat_minor = 4, 5
    nb.metadata = nbformat.from_dict(copy.deepcopy(NOTEBOOK_METADATA))
    seen: set[str] = set()
    for index, cell in enumerate(nb.cells):
        cell.metadata = nbformat.from_dict(
            {k: cell.metadata[k] for k in CELL_METADATA_KEPT if k in cell.get("metadata", {})}
        )
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell_id = cell.get("id") or _stable_id(name, index, cell)
        if cell_id in seen:
            cell_id = _stable_id(name, index, cell)
        seen.add(cell_id)
        cell.id = cell_id
    return nb


def notebook_bytes(nb: NotebookNode) -> bytes:
    """nbformat's canonical JSON (sorted keys, one-space indent) with a final newline."""
    text = nbformat.writes(nb, version=4)
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")


def release_notebook(source: NotebookNode, name: str) -> NotebookNode:
    """The student version of one source notebook (pure function, nothing written)."""
    nb = normalise(source, name)
    resources: dict = {"language": "python", "unique_key": name, "nbgrader": {"notebook": name}}
    for preprocessor in _preprocessors():
        nb, resources = preprocessor.preprocess(nb, resources)
    nb = normalise(nb, name)
    nbformat.validate(nb)
    return nb


def release_assignment(source_root: Path, release_root: Path, name: str) -> list[Path]:
    """Write ``release_root/name/`` from ``source_root/name/``; return the files written.

    Files are replaced atomically and only when their bytes change, and files with no source are
    removed, so a reader (or a second ``make release``) never sees a half-written release.
    """
    src_dir, dst_dir = Path(source_root) / name, Path(release_root) / name
    wanted: dict[Path, bytes] = {}
    for path in sorted(src_dir.rglob("*")):
        rel = path.relative_to(src_dir)
        if any(part in IGNORED for part in rel.parts) or path.is_dir():
            continue
        if path.suffix == ".ipynb":
            if rel != Path(f"{name}.ipynb"):
                raise ValueError(f"{path}: one notebook per assignment, named {name}.ipynb")
            source = nbformat.read(path, as_version=4)
            wanted[rel] = notebook_bytes(release_notebook(source, name))
        else:
            wanted[rel] = path.read_bytes()
    written = []
    for rel, data in wanted.items():
        target = dst_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_bytes() != data:
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        written.append(target)
    if dst_dir.is_dir():
        for path in sorted(dst_dir.rglob("*"), reverse=True):
            rel = path.relative_to(dst_dir)
            if path.is_file() and rel not in wanted and not path.name.startswith("."):
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    return written


def release_all(source_root: Path, release_root: Path) -> list[Path]:
    """Regenerate every assignment; release directories with no source are removed."""
    source_root, release_root = Path(source_root), Path(release_root)
    names = find_assignments(source_root)
    release_root.mkdir(parents=True, exist_ok=True)
    for stale in release_root.iterdir():
        if stale.is_dir() and stale.name not in names and not stale.name.startswith("."):
            shutil.rmtree(stale)
    written = []
    for name in names:
        written += release_assignment(source_root, release_root, name)
    return written


def hidden_test_regions(source: NotebookNode) -> list[str]:
    """The text of every hidden-test and solution region of a source notebook (for leak checks)."""
    regions = []
    for cell in source.cells:
        inside, buf = False, []
        for line in cell.source.splitlines():
            if BEGIN_HIDDEN in line or BEGIN_SOLUTION in line:
                inside, buf = True, []
            elif END_HIDDEN in line or END_SOLUTION in line:
                inside = False
                if buf:
                    regions.append("\n".join(buf))
            elif inside:
                buf.append(line)
    return regions
