"""Generate the student release (``notebooks/``) from the instructor source (``solutions/``).

One job: apply nbgrader's own *generate assignment* preprocessors (``LockCells``,
``ClearSolutions``, ``ClearOutput``, ``ComputeChecksums``, ``ClearHiddenTests``,
``ClearMarkScheme``, ``CheckCellMetadata``) to each source notebook with nbformat, without a
gradebook, then normalise what nbgrader leaves machine-dependent (outputs, execution counts,
notebook metadata, missing cell ids) so that the release is a pure function of ``solutions/``:
regenerating it twice gives the same bytes, which ``tests/coursetools/authoring/test_release.py`` checks.

Layout: one assignment per notebook, ``<source>/<name>/<name>.ipynb`` ->
``<release>/<name>/<name>.ipynb``; other files in the assignment directory (data) are copied.

A release never replaces or deletes a file a student changed (someone who answered the
exercises in ``notebooks/`` itself): the release remembers the SHA-256 of every file it wrote in
``<release>/.release-manifest.json`` (hidden, not committed), and a file whose bytes are neither
what the release writes now nor what it wrote last is kept and reported; a notebook the manifest
does not list is someone else's; with no manifest yet (a fresh clone), a notebook counts as
changed unless it is a pristine release (no outputs, the release's metadata, canonical JSON).
``force=True`` (``make release FORCE=1``) replaces and removes them.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode

from coursetools import cells, paths
from coursetools.cells import BEGIN_HIDDEN, BEGIN_SOLUTION, END_HIDDEN, END_SOLUTION

__all__ = [
    "find_assignments",
    "release_notebook",
    "release_assignment",
    "release_all",
    "notebook_bytes",
    "hidden_test_regions",
    "copy_missing",
]

IGNORED = {".ipynb_checkpoints", "__pycache__", ".DS_Store"}
MANIFEST = ".release-manifest.json"  # in the release folder: what the last release wrote

# The only cell metadata a student notebook keeps (everything else is editor noise).
CELL_METADATA_KEPT = ("nbgrader", "deletable", "editable", "tags")
NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


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

    path = paths.NBGRADER_CONFIG
    if not path.is_file():
        return Config()
    return PyFileConfigLoader(path.name, str(path.parent)).load_config()


def _stable_id(name: str, index: int, cell: NotebookNode) -> str:
    grade_id = cells.grade_id(cell) or ""
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


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_manifest(release_root: Path) -> dict[str, str]:
    try:
        data = json.loads((Path(release_root) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _write_manifest(release_root: Path, manifest: dict[str, str]) -> None:
    path = Path(release_root) / MANIFEST
    tmp = path.with_name(f"{MANIFEST}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _pristine(data: bytes, name: str) -> bool:
    """Whether notebook bytes are a release as generated: canonical, no outputs, fixed metadata."""
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        return notebook_bytes(normalise(nb, name)) == data
    except Exception:  # noqa: BLE001 - not a notebook at all: not a release either
        return False


def _changed_by_someone(path: Path, key: str, manifest: dict[str, str], name: str) -> bool:
    """Whether the file at ``path`` holds bytes the release did not write (a student's work)."""
    data = path.read_bytes()
    if key in manifest:
        return _sha256(data) != manifest[key]
    if manifest:  # the release keeps a record and this file is not in it: not the release's
        return True
    return path.suffix == ".ipynb" and not _pristine(data, name)  # a fresh clone: no record yet


def release_assignment(
    source_root: Path,
    release_root: Path,
    name: str,
    *,
    force: bool = False,
    kept: list[Path] | None = None,
    manifest: dict[str, str] | None = None,
) -> list[Path]:
    """Write ``release_root/name/`` from ``source_root/name/``; return the files written.

    Files are replaced atomically and only when their bytes change, and files with no source are
    removed, so a reader (or a second ``make release``) never sees a half-written release. A file
    someone changed since the release wrote it is neither replaced nor removed unless ``force``:
    its path is appended to ``kept``. ``manifest`` (relative path -> SHA-256 of what the release
    wrote) is read and updated in place; :func:`release_all` keeps it in the release folder.
    """
    src_dir, dst_dir = Path(source_root) / name, Path(release_root) / name
    manifest = {} if manifest is None else manifest
    kept = [] if kept is None else kept
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
        key = (Path(name) / rel).as_posix()
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_bytes() != data:
            if target.is_file() and not force and _changed_by_someone(target, key, manifest, name):
                kept.append(target)
                continue
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        manifest[key] = _sha256(data)
        written.append(target)
    if dst_dir.is_dir():
        _remove_stale(dst_dir, name, set(wanted), manifest, force, kept)
    return written


def _remove_stale(
    dst_dir: Path, name: str, wanted: set[Path], manifest: dict[str, str], force: bool, kept: list
) -> None:
    """Remove the files of ``dst_dir`` with no source, except what someone changed; empty dirs."""
    for path in sorted(dst_dir.rglob("*"), reverse=True):
        rel = path.relative_to(dst_dir)
        if IGNORED.intersection(rel.parts):
            continue
        key = (Path(name) / rel).as_posix()
        if path.is_file() and rel not in wanted and not path.name.startswith("."):
            if not force and _changed_by_someone(path, key, manifest, name):
                kept.append(path)
                continue
            path.unlink()
            manifest.pop(key, None)
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    if dst_dir.is_dir() and not any(dst_dir.iterdir()):
        dst_dir.rmdir()


def release_all(
    source_root: Path,
    release_root: Path,
    *,
    force: bool = False,
    kept: list[Path] | None = None,
) -> list[Path]:
    """Regenerate every assignment; release directories with no source are removed.

    Parameters
    ----------
    source_root, release_root : Path
        ``solutions/`` and ``notebooks/``.
    force : bool
        Replace and remove files someone changed since the release wrote them (a student's
        answers in the release folder itself). Default: keep them, and list them in ``kept``.
    kept : list, optional
        Receives the path of every file kept because someone changed it.

    Returns
    -------
    list of Path
        The files of the release as it now is (written or already up to date).
    """
    source_root, release_root = Path(source_root), Path(release_root)
    kept = [] if kept is None else kept
    names = find_assignments(source_root)
    release_root.mkdir(parents=True, exist_ok=True)
    manifest = _read_manifest(release_root)
    for stale in sorted(release_root.iterdir()):
        if stale.is_dir() and stale.name not in names and not stale.name.startswith("."):
            _remove_stale(stale, stale.name, set(), manifest, force, kept)
    written = []
    for name in names:
        written += release_assignment(
            source_root, release_root, name, force=force, kept=kept, manifest=manifest
        )
    _write_manifest(release_root, manifest)
    return written


def copy_missing(release_root: Path, work_root: Path) -> list[Path]:
    """Copy the files of ``release_root`` missing from ``work_root``; return those copied.

    The student's working copy (``make student-lab``): a file that exists in ``work_root`` is
    never read, replaced or removed, so answers survive every later release. Hidden files and
    checkpoints are not copied.

    Raises
    ------
    ValueError
        If ``release_root`` is not a folder, or ``work_root`` is inside it (or the other way).
    """
    release_root, work_root = Path(release_root).resolve(), Path(work_root).resolve()
    if not release_root.is_dir():
        raise ValueError(f"release_root {release_root} is not a folder: run `make release` first")
    if work_root.is_relative_to(release_root) or release_root.is_relative_to(work_root):
        raise ValueError(f"work_root {work_root} and release_root {release_root} must not nest")
    added = []
    for path in sorted(release_root.rglob("*")):
        rel = path.relative_to(release_root)
        if IGNORED.intersection(rel.parts) or any(p.startswith(".") for p in rel.parts):
            continue
        if not path.is_file():
            continue
        target = work_root / rel
        if target.exists() or target.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as out:  # never replaces, even one created meanwhile
            out.write(path.read_bytes())
        added.append(target)
    return added


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
