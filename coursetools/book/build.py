"""The course as a static book for self-paced readers: ``python -m coursetools book``.

One job: from ``solutions/`` to ``_build/html/``, offline at build and at read time.

1. **Strip.** Each chapter is read from its instructor notebook and its student release
   (:func:`coursetools.authoring.release.release_notebook`: no hidden test, no mark scheme). A reader sees
   the prose, the exercise's starter code (the release cell, its ``# YOUR CODE HERE`` /
   ``raise NotImplementedError()`` stub shown as ``...``), the solution folded behind *Show
   solution*, the visible tests with their outputs, and for written questions a model answer
   folded behind *Show a model answer*. No nbgrader marker or metadata reaches a page.
2. **Execute.** The notebook run is the release with every answer filled in from the solution
   (exactly ``coursetools/authoring/example_class.py``'s ``ada_full``): nbclient, in a copy of the chapter's own
   folder, chapters in parallel in a process pool, with a per-cell timeout. A cell that fails is
   shown with its traceback and reported; ``strict`` makes that a failed build.
3. **Cache.** An executed chapter is kept in ``build/book/cache/`` under a hash of everything its
   outputs depend on (the notebook run, the source notebook and its folder's files, dplib's
   files, Python's and every installed package's version), so rebuilding re-renders only.
4. **Render.** :mod:`coursetools.book.pages` writes one page per chapter, a landing page (chapter
   map from each chapter's first cell, the README's commands), the dplib API reference (a page per
   module in course order and an index, from ``coursetools.book.apidoc`` when present; each name
   links to the chapter section that first uses it), the grading guides, ``static/book.css`` and
   ``static/book.js`` (from ``assets/``) and the figures as files under ``figures/<chapter>/``.
5. **Download and search.** Each chapter's student release (the notebook ``make release``
   writes, and its folder's data files) is copied to ``downloads/<chapter>/`` and linked from its
   page; every page's sections go into ``static/search-index.js``
   (:mod:`coursetools.book.search`), which ``search.html`` reads.
"""

from __future__ import annotations

import concurrent.futures as cf
import copy
import hashlib
import importlib.metadata
import importlib.util
import multiprocessing
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import TextIO

import nbformat
from nbformat.notebooknode import NotebookNode

from coursetools import paths
from coursetools.authoring import example_class
from coursetools.authoring.release import (
    find_assignments,
    notebook_bytes,
    release_notebook,
)
from coursetools.authoring.rules import split_hidden
from coursetools.book import pages as site
from coursetools.book import search
from coursetools.cells import BEGIN_SOLUTION, END_SOLUTION, REGION_WORDS, STUB_TEXTS, nbgrader
from coursetools.rendering import markdown_to_html

__all__ = [
    "BookError",
    "BookReport",
    "Chapter",
    "ChapterRun",
    "build_book",
    "cache_key",
    "chapter_title",
    "execute_notebook",
    "filled_notebook",
    "hidden_lines",
    "learning_goals",
    "load_chapter",
    "page_text",
    "render_chapter",
    "run_chapters",
]

ROOT = paths.ROOT
DEFAULT_OUT = paths.BOOK_OUT
DEFAULT_CACHE = paths.BOOK_CACHE
CACHE_VERSION = "book-1"  # bump when what the cache holds changes meaning
DEFAULT_CELL_TIMEOUT = 300.0

# Text no page may show, in prose or code (nbgrader's region markers); and the stub's words, which
# no code on a page may show (the prose of a chapter may name them when it explains the notebooks).
MARKERS = REGION_WORDS
STUBS = STUB_TEXTS
_STUB = re.compile(
    r"^(?P<indent>[ \t]*)# YOUR CODE HERE[ \t]*\n(?P=indent)raise NotImplementedError\(\)[ \t]*$",
    re.M,
)
_MARK_SCHEME = re.compile(
    r"^[ \t]*=== BEGIN MARK SCHEME ===.*?^[ \t]*=== END MARK SCHEME ===[ \t]*$\n?", re.M | re.S
)
_ORDERED_ITEM = re.compile(r"^\d+[.)]\s+")


class BookError(RuntimeError):
    """The book cannot be built as asked (bad arguments, or a page would leak instructor text)."""


# ------------------------------------------------------------------------------------ chapters


@dataclass(frozen=True)
class Chapter:
    """One chapter: its instructor notebook, its student release, and the notebook to run."""

    name: str
    folder: Path
    source: NotebookNode
    release: NotebookNode
    filled: bytes


def filled_notebook(source: NotebookNode, release: NotebookNode) -> NotebookNode:
    """The release with every answer cell's solution filled in: what a full-marks student has.

    :mod:`coursetools.authoring.example_class`'s ``ada_full`` itself (one definition; hidden tests
    are absent because the release has none).
    """
    return example_class.answered(source, release, 1.0)


def load_chapter(source_root: Path, name: str) -> Chapter:
    """Read ``source_root/name/name.ipynb`` and derive its release and its filled-in run."""
    folder = Path(source_root) / name
    path = folder / f"{name}.ipynb"
    if not path.is_file():
        raise BookError(f"no chapter notebook at {path}: expected <source>/<name>/<name>.ipynb")
    source = nbformat.read(path, as_version=4)
    release = release_notebook(source, name)
    if len(release.cells) != len(source.cells):
        raise BookError(f"{path}: the release has a different number of cells from the source")
    return Chapter(name, folder, source, release, notebook_bytes(filled_notebook(source, release)))


def chapter_title(chapter: Chapter) -> str:
    """The first ``# `` heading of the chapter's first markdown cell (else its name)."""
    for cell in chapter.release.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
            break
    return chapter.name.replace("_", " ")


def learning_goals(chapter: Chapter) -> list[str]:
    """The items of the first ordered list in the chapter's first markdown cell (markdown)."""
    first = next((c for c in chapter.release.cells if c.cell_type == "markdown"), None)
    goals: list[str] = []
    if first is None:
        return goals
    inside = False
    for line in first.source.splitlines():
        if _ORDERED_ITEM.match(line):
            inside = True
            goals.append(_ORDERED_ITEM.sub("", line).strip())
        elif inside and line.startswith((" ", "\t")) and line.strip():
            goals[-1] += " " + line.strip()
        elif inside:
            break
    return goals


def hidden_lines(source: NotebookNode, *, min_length: int = 12) -> list[str]:
    """Non-trivial lines of the hidden tests that appear nowhere else in the source notebook."""
    hidden, visible = set(), set()
    for cell in source.cells:
        lines = cell.source.splitlines()
        inside = split_hidden(cell.source)
        for number, line in enumerate(lines, start=1):
            (hidden if number in inside else visible).add(line.strip())
    return sorted(
        line
        for line in hidden - visible
        if len(line) >= min_length and not line.startswith("#") and line not in MARKERS
    )


# ------------------------------------------------------------------------------------ executing


@dataclass
class ChapterRun:
    """An executed chapter: the notebook with outputs, how long it ran, what failed."""

    name: str
    notebook: NotebookNode
    seconds: float
    cached: bool
    errors: list[str] = field(default_factory=list)
    undescribed: list[str] = field(default_factory=list)  # figures drawn without a description


def _errors(nb: NotebookNode) -> list[str]:
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.get("output_type") == "error":
                where = nbgrader(cell).get("grade_id") or (cell.source.splitlines() or [""])[0]
                found.append(
                    f"cell {index} ({where[:60]}): {output.get('ename')}: {output.get('evalue')}"[
                        :300
                    ]
                )
    return found


def execute_notebook(data: bytes, workdir: str, timeout: float) -> tuple[str, float, list[str]]:
    """Run a notebook (its bytes) in ``workdir``; (executed JSON, seconds, errors).

    A failing cell does not stop the run (its traceback becomes its output); a cell that runs
    past ``timeout`` seconds is interrupted; a kernel that dies ends the run with an error.
    """
    import tempfile

    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    sockets = tempfile.mkdtemp(prefix="book-kernel-")
    # Unix sockets, not TCP on localhost: no port to race for, no "unencrypted TCP" warning.
    km = AsyncKernelManager(
        kernel_name="python3",
        transport="ipc",
        ip=os.path.join(sockets, "k"),
        connection_file=os.path.join(sockets, "connection.json"),
    )
    client = NotebookClient(
        nb,
        km=km,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=True,
        interrupt_on_timeout=True,
        record_timing=False,
        resources={"metadata": {"path": workdir}},
    )
    client.owns_km = True  # nbclient then shuts the kernel down when the run ends
    start = time.monotonic()
    problems = []
    try:
        client.execute()
    except Exception as exc:  # noqa: BLE001 - a dead kernel or a failed start: report, keep outputs
        problems.append(f"execution stopped: {type(exc).__name__}: {str(exc)[:300]}")
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    seconds = time.monotonic() - start
    return nbformat.writes(nb), seconds, problems + _errors(nb)


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _execute_job(
    job: tuple[str, bytes, str, float], threads: int
) -> tuple[str, str, float, list[str]]:
    """One chapter in a pool worker; its kernel's BLAS/OpenMP get ``threads`` threads, so that
    parallel chapters do not oversubscribe the cores (unless the caller set these variables)."""
    for variable in THREAD_VARIABLES:
        os.environ.setdefault(variable, str(threads))
    name, data, workdir, timeout = job
    return (name, *execute_notebook(data, workdir, timeout))


def _environment_digest() -> str:
    """Python's version, every installed distribution's version and dplib's files, hashed."""
    h = hashlib.sha256(sys.version.encode())
    versions = sorted(
        f"{d.metadata['Name']}=={d.version}"
        for d in importlib.metadata.distributions()
        if d.metadata["Name"]
    )
    h.update("\n".join(versions).encode())
    spec = importlib.util.find_spec("dplib")
    if spec is not None and spec.submodule_search_locations:
        package = Path(next(iter(spec.submodule_search_locations)))
        for path in sorted(package.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                h.update(path.relative_to(package).as_posix().encode() + b"\0")
                h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def cache_key(chapter: Chapter, environment: str | None = None) -> str:
    """Hash of what a chapter's outputs depend on (see the module's docstring)."""
    h = hashlib.sha256(CACHE_VERSION.encode())
    h.update((environment or _environment_digest()).encode())
    h.update(hashlib.sha256(chapter.filled).digest())
    for path in sorted(chapter.folder.rglob("*")):
        rel = path.relative_to(chapter.folder)
        if path.is_file() and not any(
            p in {".ipynb_checkpoints", "__pycache__"} for p in rel.parts
        ):
            h.update(rel.as_posix().encode() + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _cache_path(cache_dir: Path, name: str, key: str) -> Path:
    return cache_dir / f"{name}.{key[:24]}.ipynb"


def _from_cache(cache_dir: Path, name: str, key: str) -> ChapterRun | None:
    path = _cache_path(cache_dir, name, key)
    try:
        nb = nbformat.read(path, as_version=4)
    except (OSError, ValueError):
        return None
    book = nb.metadata.get("book", {})
    if book.get("key") != key:
        return None
    return ChapterRun(name, nb, float(book.get("seconds", 0.0)), cached=True)


def _to_cache(cache_dir: Path, run: ChapterRun, key: str) -> None:
    cache_dir.mkdir(parents=True, exist_ok=True)
    for stale in cache_dir.glob(f"{run.name}.*.ipynb"):
        stale.unlink()
    nb = copy.deepcopy(run.notebook)
    nb.metadata["book"] = {"key": key, "seconds": round(run.seconds, 2)}
    target = _cache_path(cache_dir, run.name, key)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(nbformat.writes(nb), encoding="utf-8")
    os.replace(tmp, target)


def _workdir(chapter: Chapter, work_root: Path) -> Path:
    """A fresh copy of the chapter's folder (data files, no notebook) to run it in."""
    target = work_root / chapter.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(
        chapter.folder,
        target,
        ignore=shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints", "__pycache__"),
    )
    return target


def run_chapters(
    chapters: list[Chapter],
    *,
    cache_dir: Path,
    jobs: int,
    use_cache: bool = True,
    cell_timeout: float = DEFAULT_CELL_TIMEOUT,
    stream: TextIO | None = None,
) -> dict[str, ChapterRun]:
    """Every chapter executed, from the cache where possible, the rest in ``jobs`` processes.

    Only a run without errors is cached (a failure may be transient: a timeout under load).
    """
    stream = stream or sys.stdout
    environment = _environment_digest()
    keys = {c.name: cache_key(c, environment) for c in chapters}
    runs: dict[str, ChapterRun] = {}
    todo = []
    for chapter in chapters:
        hit = _from_cache(cache_dir, chapter.name, keys[chapter.name]) if use_cache else None
        if hit is not None:
            runs[chapter.name] = hit
            print(f"  {chapter.name}: cached", file=stream, flush=True)
        else:
            todo.append(chapter)
    work_root = cache_dir.parent / "work"
    jobs_list = [(c.name, c.filled, str(_workdir(c, work_root)), float(cell_timeout)) for c in todo]

    def finished(name: str, text: str, seconds: float, errors: list[str]) -> None:
        run = ChapterRun(name, nbformat.reads(text, as_version=4), seconds, False, errors)
        runs[name] = run
        status = f"{len(errors)} error(s)" if errors else "ok"
        print(f"  {name}: executed in {seconds:.1f} s ({status})", file=stream, flush=True)
        for line in errors:
            print(f"    ERROR {line}", file=stream, flush=True)
        if not errors:
            _to_cache(cache_dir, run, keys[name])

    if len(jobs_list) <= 1 or jobs <= 1:
        for job in jobs_list:
            finished(job[0], *execute_notebook(*job[1:]))
    else:
        # spawn: a clean interpreter per worker (no forked zmq or asyncio state).
        context = multiprocessing.get_context("spawn")
        workers = min(jobs, len(jobs_list))
        threads = max(1, (os.cpu_count() or 1) // workers)
        with cf.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = [pool.submit(_execute_job, job, threads) for job in jobs_list]
            for future in cf.as_completed(futures):  # progress as each chapter ends
                finished(*future.result())
    return runs


# ------------------------------------------------------------------------------------ rendering


def _starter(code: str) -> str:
    """A release answer cell with nbgrader's stub shown as ``...`` (Python's "to be written")."""
    return _STUB.sub(lambda m: f"{m.group('indent')}...", code)


def _model_answer(source: str) -> str:
    """A written answer's solution text: inside its solution markers, mark schemes removed."""
    regions, inside, buf = [], False, []
    for line in source.splitlines():
        if BEGIN_SOLUTION in line:
            inside, buf = True, []
        elif END_SOLUTION in line:
            inside = False
            regions.append("\n".join(buf))
        elif inside:
            buf.append(line)
    text = "\n\n".join(regions) if regions else source
    return _MARK_SCHEME.sub("", text).strip()


def _check_code(text: str, where: str) -> str:
    for marker in MARKERS + STUBS:
        if marker in text:
            raise BookError(f"{where}: {marker!r} would be shown on a page")
    return text


def _check_markers(text: str, where: str) -> str:
    for marker in MARKERS:
        if marker in text:
            raise BookError(f"{where}: {marker!r} would be shown on a page")
    return text


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def page_text(page: str) -> str:
    """The text a reader of a page sees (tags removed, entities decoded), for leak checks."""
    parser = _TextExtractor()
    parser.feed(page)
    parser.close()
    return "".join(parser.parts)


@dataclass
class _Links:
    """Maps a notebook's or a guide's link targets to the book's own pages."""

    chapters: set[str]
    pages: dict[str, str]  # "grading.md" -> "grading.html"
    folder: Path | None = None  # the chapter's own folder: its relative images are copied
    out: Path | None = None
    chapter: str = ""

    def for_chapter(self, chapter: Chapter, out: Path) -> _Links:
        return _Links(self.chapters, self.pages, chapter.folder, out, chapter.name)

    def __call__(self, url: str, tag: str) -> str | None:
        if re.match(r"https?://", url, re.I) or url.startswith("mailto:"):
            return url if tag == "a" else None  # remote images are never loaded
        path, _, anchor = url.partition("#")
        anchor = f"#{anchor}" if anchor else ""
        stem = Path(path).name
        if tag == "a" and stem.endswith(".ipynb") and stem[: -len(".ipynb")] in self.chapters:
            return f"{stem[: -len('.ipynb')]}.html{anchor}"
        if tag == "a" and stem in self.pages:
            return self.pages[stem] + anchor
        if tag == "img" and self.folder is not None and self.out is not None and path:
            return self._copy_image(path)
        return None

    def _copy_image(self, path: str) -> str | None:
        folder = self.folder.resolve()
        image = (folder / path).resolve()
        if not image.is_relative_to(folder) or not image.is_file():
            return None  # outside the chapter's folder, or missing: not shown
        if image.suffix.lower() not in {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"}:
            return None
        target = self.out / "figures" / self.chapter / "files" / image.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(image, target)
        return target.relative_to(self.out).as_posix()


def render_chapter(
    chapter: Chapter,
    run: ChapterRun,
    out: Path,
    links: _Links,
    *,
    downloads: list[str] | None = None,
    cell_headings: list[int] | None = None,
) -> tuple[str, list[tuple[int, str, str]]]:
    """A chapter's content HTML and its table of contents (level, anchor, text).

    ``downloads``: the chapter's release files in the site (:func:`write_downloads`), linked
    under its introduction. ``cell_headings``, if given, receives for each cell the number of
    headings up to and including it (cell ``i`` lies in section ``cell_headings[i] - 1`` of the toc).
    """
    figures = site.FigureWriter(out, chapter.name)
    links = links.for_chapter(chapter, out)
    executed = run.notebook.cells
    if len(executed) != len(chapter.release.cells):
        raise BookError(f"{chapter.name}: the executed notebook does not match its release")
    note = (
        "<p class='note'>Reading this chapter as a book: every output below is what the code "
        "printed when the book was built. Exercises show their starter code (<code>...</code> is "
        "where your code goes) with the solution folded underneath: try first, then press "
        "<em>Show solution</em>.</p>" + site.download_html(chapter.name, downloads or [])
    )
    parts: list[str] = []
    for index, (src, rel, exe) in enumerate(
        zip(chapter.source.cells, chapter.release.cells, executed, strict=True)
    ):
        meta = nbgrader(src)
        where = f"{chapter.name} cell {index}"
        if rel.cell_type == "markdown" and meta.get("solution"):
            prompt = "\n".join(
                line for line in rel.source.splitlines() if "YOUR ANSWER HERE" not in line
            ).strip()
            model = _check_code(_model_answer(src.source), where)
            parts.append(
                site.written_cell_html(
                    markdown_to_html(prompt, rewrite_url=links) if prompt else "",
                    markdown_to_html(model, rewrite_url=links) if model else "",
                )
            )
        elif rel.cell_type == "markdown":
            parts.append(site.markdown_cell_html(_check_markers(rel.source, where), links))
        elif rel.cell_type == "code" and meta.get("solution"):
            starter = _check_code(_starter(rel.source), where)
            solution = _check_code(exe.source, where)
            outputs = site.outputs_html(exe.get("outputs", []), figures, exe.source)
            parts.append(site.answer_cell_html(starter, solution, outputs))
        elif rel.cell_type == "code":
            code = _check_code(rel.source, where)
            outputs = site.outputs_html(exe.get("outputs", []), figures, rel.source)
            test = bool(meta.get("grade"))
            parts.append(
                site.code_cell_html(
                    code,
                    outputs,
                    kind="tests" if test else "code",
                    label="Visible tests" if test else "",
                )
            )
    if cell_headings is not None:
        seen = 0
        for part in parts:
            seen += len(re.findall(r"<h[1-4]>", part))
            cell_headings.append(seen)
    parts.insert(1 if parts else 0, note)  # under the chapter's title and introduction
    # the lint rule of figures: each one the chapter draws has its author's description
    run.undescribed = [f"a figure without a '# Figure:' description ({u})" for u in figures.undescribed]
    toc: list[tuple[int, str, str]] = []
    body = site.add_heading_ids("\n".join(parts), set(), toc)
    return body, toc


# ---------------------------------------------------------------------------------- downloads

DOWNLOADS = "downloads"


def write_downloads(chapter: Chapter, out: Path) -> list[str]:
    """The chapter's student release, as ``make release`` writes it, into ``out/downloads/<name>/``.

    The notebook is :func:`~coursetools.authoring.release.release_notebook`'s, in
    :func:`~coursetools.authoring.release.notebook_bytes` (the same bytes as
    ``notebooks/<name>/<name>.ipynb``); the chapter folder's other files (its data) are copied
    beside it and, when there are any, all of it is also offered as one ``<name>.zip``. Returns the
    site-relative paths, the notebook first.

    Raises
    ------
    BookError
        If the release would show a hidden test's line or an nbgrader region marker.
    """
    import zipfile

    from coursetools.authoring.release import IGNORED

    data = notebook_bytes(chapter.release)
    text = data.decode("utf-8")
    released = {line.strip() for cell in chapter.release.cells for line in cell.source.splitlines()}
    leaked = [line for line in hidden_lines(chapter.source) if line in released]
    leaked += [marker for marker in MARKERS if marker in text]
    if leaked:
        raise BookError(f"{chapter.name}: its release holds instructor text: {leaked[0]!r}")
    folder = out / DOWNLOADS / chapter.name
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, bytes] = {f"{chapter.name}.ipynb": data}
    for path in sorted(chapter.folder.rglob("*")):
        rel = path.relative_to(chapter.folder)
        if path.is_dir() or path.suffix == ".ipynb" or any(p in IGNORED for p in rel.parts):
            continue
        files[rel.as_posix()] = path.read_bytes()
    written = []
    for rel, content in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        written.append(target.relative_to(out).as_posix())
    if len(files) > 1:
        archive = folder / f"{chapter.name}.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            for rel, content in files.items():
                info = zipfile.ZipInfo(f"{chapter.name}/{rel}", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, content)
        written.append(archive.relative_to(out).as_posix())
    return written


# ------------------------------------------------------------------------- where a name is taught


def _names_used(code: str) -> set[str]:
    """Names a code cell uses (loads and attributes, not its imports); magics skipped."""
    import ast

    lines = [ln for ln in code.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", code))
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
    return used


def teaching_sections(
    chapter: Chapter, toc: list[tuple[int, str, str]], cell_headings: list[int], names: set[str]
) -> dict[str, tuple[str, int]]:
    """``{name: ("page.html#section", cells)}``: where the chapter first uses each of ``names``,
    and in how many cells it uses it.

    A use is a name in the code a reader runs (the release with its solutions filled in; an
    import alone does not count) or a name in backticks in the prose.
    """
    filled = nbformat.reads(chapter.filled.decode("utf-8"), as_version=4)
    found: dict[str, tuple[str, int]] = {}
    for index, cell in enumerate(filled.cells):
        if cell.cell_type == "code":
            used = _names_used(cell.source) & names
        else:
            pattern = r"`(?:dplib\.)?(?:\w+\.)*(\w+)(?:\(\))?`"
            used = set(re.findall(pattern, cell.source)) & names
        for name in used:
            if name in found:
                found[name] = (found[name][0], found[name][1] + 1)
                continue
            section = cell_headings[index] - 1 if index < len(cell_headings) else -1
            anchor = f"#{toc[section][1]}" if 0 <= section < len(toc) else ""
            found[name] = (f"{chapter.name}.html{anchor}", 1)
    return found


def teaching_chapters(
    uses: dict[str, list[tuple[str, str, int]]],
) -> tuple[dict[str, tuple[str, str]], dict[str, list[tuple[str, str]]]]:
    """From ``{name: [(link, chapter title, cells)]}`` in course order: the chapter that teaches
    each name (the one using it in the most cells; the earliest on a tie) and the other chapters
    that use it, in course order."""
    taught, also = {}, {}
    for name, found in uses.items():
        best = max(range(len(found)), key=lambda i: (found[i][2], -i))
        taught[name] = found[best][:2]
        also[name] = [f[:2] for i, f in enumerate(found) if i != best]
    return taught, also


# --------------------------------------------------------------------------------- other pages


def _readme(root: Path) -> str:
    path = root / "README.md"
    return path.read_text(encoding="utf-8") if path.is_file() else ""


# ---------------------------------------------------------------------------------------- build


@dataclass
class BookReport:
    """What a build did: the chapters' runs, the pages written, the failures, the time taken."""

    out: Path
    runs: dict[str, ChapterRun]
    pages: list[Path]
    seconds: float

    @property
    def errors(self) -> list[str]:
        """Cells that raised, and figures drawn without their author's description (a figure's
        ``# Figure:`` line is its alt text: issue 41); ``--strict`` fails the build on either."""
        return [f"{name}: {e}" for name, run in self.runs.items() for e in [*run.errors, *run.undescribed]]

    @property
    def executed(self) -> list[str]:
        return [name for name, run in self.runs.items() if not run.cached]


def _clean_site(out: Path) -> None:
    """Remove what a previous build wrote (pages, figures, style), nothing else."""
    for sub in ("figures", "static", DOWNLOADS):
        if (out / sub).is_dir():
            shutil.rmtree(out / sub)
    for page in out.glob("*.html"):
        page.unlink()


def build_book(
    source_root: Path = paths.SOLUTIONS,
    out: Path = DEFAULT_OUT,
    *,
    jobs: int | None = None,
    use_cache: bool = True,
    cache_dir: Path = DEFAULT_CACHE,
    cell_timeout: float = DEFAULT_CELL_TIMEOUT,
    docs_root: Path = ROOT,
    stream: TextIO | None = None,
) -> BookReport:
    """Build the book of the chapters under ``source_root`` into ``out``.

    Parameters
    ----------
    source_root : Path
        Instructor notebooks, ``<source_root>/<name>/<name>.ipynb``.
    out : Path
        The site's folder (``index.html`` is its landing page); earlier pages are replaced.
    jobs : int, optional
        Chapters executed at once, each in its own process (default: one per core).
    use_cache : bool
        Reuse executed chapters from ``cache_dir`` when nothing they depend on changed.
    cache_dir : Path
        Where executed chapters are kept between builds.
    cell_timeout : float
        Seconds a cell may run before it is interrupted (> 0).
    docs_root : Path
        The folder holding ``README.md`` and ``docs/`` (the landing page and the guides).
    stream : file, optional
        Progress lines (default: standard output).

    Returns
    -------
    BookReport
    """
    start = time.monotonic()
    stream = stream or sys.stdout
    source_root, out, cache_dir = Path(source_root), Path(out), Path(cache_dir)
    if jobs is not None and (not isinstance(jobs, int) or jobs < 1):
        raise BookError(f"jobs must be a whole number >= 1, got {jobs!r}")
    if not (isinstance(cell_timeout, (int, float)) and cell_timeout > 0):
        raise BookError(f"cell_timeout must be a number of seconds > 0, got {cell_timeout!r}")
    names = find_assignments(source_root)
    if not names:
        raise BookError(f"no chapter under {source_root}: expected <source>/<name>/<name>.ipynb")
    chapters = [load_chapter(source_root, name) for name in names]
    runs = run_chapters(
        chapters,
        cache_dir=cache_dir,
        jobs=jobs or os.cpu_count() or 1,
        use_cache=use_cache,
        cell_timeout=cell_timeout,
        stream=stream,
    )

    out.mkdir(parents=True, exist_ok=True)
    _clean_site(out)
    (out / "static").mkdir()
    for name, text in site.static_files().items():
        (out / "static" / name).write_text(text, encoding="utf-8")

    readme = _readme(docs_root)
    book_title = site.book_title(readme)
    guides = {
        p.stem: p
        for p in sorted((docs_root / "docs").glob("*.md"))
        if p.stem in ("grading", "jupyterhub")
    }
    guide_labels = {
        "grading": "Grading and its threat model",
        "jupyterhub": "JupyterHub deployment",
    }
    titles = {c.name: chapter_title(c) for c in chapters}
    nav = [site.NavEntry(f"{c.name}.html", titles[c.name]) for c in chapters]
    api_modules = site.api_modules()
    extras_nav = (
        [site.NavEntry("api.html", "dplib API: all names")]
        + [site.NavEntry(href, f"· {module}") for module, href in api_modules]
        + [site.NavEntry("search.html", "Search")]
        + [site.NavEntry(f"{stem}.html", guide_labels[stem]) for stem in guides]
    )
    links = _Links(
        chapters={c.name for c in chapters},
        pages={"README.md": "index.html", **{f"{stem}.md": f"{stem}.html" for stem in guides}},
    )
    index: list[search.Section] = []

    def write(
        href: str,
        title: str,
        body: str,
        toc=(),
        previous=None,
        following=None,
        kind="page",
        scripts=(),
    ) -> Path:
        page = site.page_html(
            title=title,
            body=body,
            book_title=book_title,
            chapters=nav,
            extras=extras_nav,
            current=href,
            toc=toc,
            previous=previous,
            following=following,
            scripts=scripts,
        )
        if kind != "none":
            index.extend(search.sections(body, href, title, kind))
        path = out / href
        path.write_text(page, encoding="utf-8")
        return path

    pages = []
    uses: dict[str, list[tuple[str, str, int]]] = {}
    api_names = site.api_names()
    for i, chapter in enumerate(chapters):
        downloads = write_downloads(chapter, out)
        cell_headings: list[int] = []
        body, toc = render_chapter(
            chapter,
            runs[chapter.name],
            out,
            links,
            downloads=downloads,
            cell_headings=cell_headings,
        )
        # Defence in depth: the release already lacks them, and the page must too.
        text = page_text(body)
        shown = {line.strip() for line in text.splitlines()}
        leaked = [line for line in hidden_lines(chapter.source) if line in shown]
        leaked += [marker for marker in MARKERS if marker in text]
        if leaked:
            raise BookError(f"{chapter.name}: instructor-only text on its page: {leaked[0]!r}")
        for name, (href, cells) in teaching_sections(
            chapter, toc, cell_headings, api_names
        ).items():
            uses.setdefault(name, []).append((href, titles[chapter.name], cells))
        pages.append(
            write(
                nav[i].href,
                titles[chapter.name],
                body,
                toc,
                nav[i - 1] if i > 0 else site.NavEntry("index.html", "Home"),
                nav[i + 1] if i + 1 < len(nav) else None,
                kind="chapter",
            )
        )
    summaries = [site.ChapterSummary(c.name, titles[c.name], learning_goals(c)) for c in chapters]
    landing = site.landing_body(
        summaries, readme, {f"{stem}.html": guide_labels[stem] for stem in guides}
    )
    pages.append(write("index.html", "Home", landing, following=nav[0]))
    taught, also = teaching_chapters(uses)
    for api in site.api_pages(taught, also):
        kind = "api" if api.href != "api.html" else "none"  # the index repeats the module pages
        pages.append(write(api.href, api.title, api.body, api.toc, kind=kind))
    for stem, path in guides.items():
        toc: list[tuple[int, str, str]] = []
        body = site.add_heading_ids(
            markdown_to_html(path.read_text(encoding="utf-8"), rewrite_url=links), set(), toc
        )
        pages.append(write(f"{stem}.html", guide_labels[stem], body, toc, kind="guide"))
    search.write_index(out, index)
    pages.append(
        write(
            "search.html", "Search", site.search_body(), kind="none", scripts=(search.INDEX_FILE,)
        )
    )
    seconds = time.monotonic() - start
    return BookReport(out, runs, pages, seconds)
