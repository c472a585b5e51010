"""Collecting a class's submissions into grading jobs, without trusting anything a student made.

One job: read ``SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb`` for every student and
turn it into :class:`~coursetools.grading.job.Job` objects (texts and bytes, no paths).

The grader runs as root and students control everything below their own folder, so:

- the submissions root is the instructor's and trusted; below it no symbolic link is ever
  followed: folders are opened with ``O_DIRECTORY | O_NOFOLLOW`` relative to their parent's file
  descriptor, listed with :func:`os.scandir` on that descriptor, and the notebook is checked with
  ``lstat``, opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked again with ``fstat`` (only a
  regular file is read, at most :data:`MAX_NOTEBOOK_BYTES`); a symbolic link, a directory, a
  FIFO, a socket or a device in place of a folder or a notebook is that student's problem
  (0 points, reported), never a crash, a hang or another student's marks;
- a notebook's shape is capped like its size (:func:`check_shape`): at most :data:`MAX_CELLS`
  cells and :data:`MAX_SOURCE_CHARS` characters of cell source, and at most
  :data:`MAX_NOTEBOOK_PARTS` JSON values (counted on the bytes before anything is parsed), so
  that neither grading nor the feedback pages and gradebook after it can be made to cost
  minutes and gigabytes by one student. The largest notebook of the course (``solutions/``) has
  68 cells, 95,000 characters of source and about 6,200 JSON parts: the caps are 30 to 160 times
  that, so only a notebook built to hurt meets them;
- only the notebook is taken from a submission: ``job.files`` holds the assignment's own data
  files from the source directory, never files a student put beside the notebook;
- names are whatever the directory entries are (any byte but ``/`` and NUL, decoded with
  :func:`os.fsdecode`); messages show them through :func:`coursetools.rendering.display_name`.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from coursetools.authoring.release import (
    IGNORED,
    find_assignments,
    notebook_bytes,
    release_notebook,
)
from coursetools.grading.job import Job, Options
from coursetools.rendering import display_name, printable

__all__ = [
    "MAX_CELLS",
    "MAX_NOTEBOOK_BYTES",
    "MAX_NOTEBOOK_PARTS",
    "MAX_SOURCE_CHARS",
    "LAYOUT",
    "SubmissionsNotFound",
    "check_shape",
    "collect_jobs",
    "nearest_assignment",
    "InboundEntry",
    "list_inbound",
    "InboundSnapshot",
    "folder_key",
    "inbound_name_problem",
    "guard_inbound",
    "lock_inbound",
    "Sighting",
    "snapshot_inbound",
    "source_texts",
    "student_job",
]

MAX_NOTEBOOK_BYTES = 16 * 1024**2
MAX_CELLS = 2_000  # the course's largest notebook has 68
MAX_SOURCE_CHARS = 4 * 1024**2  # characters of source over all cells; the largest has 95,000
MAX_NOTEBOOK_PARTS = 1_000_000  # JSON values, bounding what parsing it costs; the largest ~6,200
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
NOT_FOLLOWED = "is a symbolic link: not followed, not graded"


LAYOUT = "<student>/<assignment>/<assignment>.ipynb"


class SubmissionsNotFound(FileNotFoundError):
    """The submissions folder itself is missing or not a folder: the message is one line."""


class _Refused(Exception):
    """A submission entry that is not graded; the message is the job's problem."""


@dataclass
class _Student:
    """One entry of the submissions root, as listed (nothing below it is followed)."""

    name: str
    problem: str | None = None  # set: every row of this student is this problem
    entries: dict[str, str] = field(default_factory=dict)  # assignment -> "dir" | "link" | "other"


# ------------------------------------------------------------------------------------ entry point


def collect_jobs(
    submissions: Path, source_root: Path, options: Options
) -> tuple[list[Job], list[str]]:
    """One job per (student, assignment) found under ``submissions/<student>/<assignment>/``.

    Every student gets a row for every assignment that anyone handed in; an assignment that a
    student did not hand in is a job without a notebook (0 points, reported). Directories that
    name no known assignment are reported and skipped, with the nearest assignment name when one
    is close (:func:`nearest_assignment`): a misspelt folder's student gets the row of the
    assignment it meant, 0 points and a problem saying how to rename it. Nothing a student made
    can raise here, block, or change another student's job.

    Parameters
    ----------
    submissions : Path
        The class's folder (trusted: it may itself be a symbolic link).
    source_root : Path
        The instructor's source directory, ``<assignment>/<assignment>.ipynb`` and data files.
    options : Options
        How each job is to be run.

    Returns
    -------
    tuple[list[Job], list[str]]
        The jobs, sorted by student then assignment, and warnings for the instructor.

    Raises
    ------
    SubmissionsNotFound
        If ``submissions`` is missing or not a folder; the message is one line with the layout.
    """
    known = set(find_assignments(source_root))
    try:
        root_fd = os.open(submissions, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise SubmissionsNotFound(_missing_root(Path(submissions), exc)) from None
    try:
        students = _list_students(root_fd)
        warnings = [w for s in students for w in _unknown_folders(s, known)]
        handed_in = sorted(
            {a for s in students for a, kind in s.entries.items() if a in known and kind != "other"}
            # a misspelt folder still gives its student a row: 0 points, and the name to use
            | {a for s in students for a in _misspelt_folders(s, known)}
        )
        texts = {name: source_texts(Path(source_root), name) for name in handed_in}
        jobs = [
            job
            for student in students
            for job in _student_jobs(root_fd, student, handed_in, texts, options)
        ]
    finally:
        os.close(root_fd)
    return jobs, warnings


def student_job(submissions: Path, student: str, assignment: str, source_root: Path, options: Options) -> Job:
    """The grading job of one student's assignment in a class folder
    (``submissions/<student>/<assignment>/``), read exactly as :func:`collect_jobs` reads it;
    a student with no folder gets a job whose problem says "nothing handed in"."""
    texts = {assignment: source_texts(Path(source_root), assignment)}
    root_fd = os.open(submissions, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        found = {s.name: s for s in _list_students(root_fd)}
        entry = found.get(student) or _Student(student, "nothing handed in")
        (job,) = _student_jobs(root_fd, entry, [assignment], texts, options)
    finally:
        os.close(root_fd)
    return job


# ------------------------------------------------------------------- one submission from the exchange


@dataclass(frozen=True)
class InboundEntry:
    """A folder of nbgrader's exchange ``inbound/``: ``<student>+<assignment>+<timestamp>[+<random>]``.

    ``folder`` is the name as :func:`os.fsdecode` gives it; ``key`` the same name as text that
    any database stores (a name that is not UTF-8 has its bytes escaped). ``problem`` says why
    the name cannot be a submission (then ``student`` and ``assignment`` are empty).
    """

    folder: str
    student: str
    assignment: str
    changed: float  # the folder's inode change time (its owner cannot move it back)
    owner: int  # the folder's uid
    problem: str = ""
    changed_ns: int = 0  # ``changed`` in nanoseconds, as ``st_ctime_ns`` (to tell the service's own chmod)

    @property
    def key(self) -> str:
        return folder_key(self.folder)


#: the longest folder name read from the exchange (a file name holds at most 255 bytes)
MAX_INBOUND_NAME_BYTES = 255
_ID_FORBIDDEN = set("<>\"'&`\\")


def folder_key(name: str) -> str:
    """``name`` as text a database can hold: its bytes decoded as UTF-8, anything else escaped."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def inbound_name_problem(name: str) -> str:
    """Why the folder name ``name`` is not a submission's, or ``""``.

    nbgrader's submit names a folder ``<student>+<assignment>+<timestamp>[+<random>]``. A name
    that is not UTF-8, longer than :data:`MAX_INBOUND_NAME_BYTES`, holds a control character, or
    whose student id could open markup or a script string (the ids nbgrader's pages show
    unescaped) is refused; it never reaches a page, a log line unescaped, or the gradebook.
    """
    raw = os.fsencode(name)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return "the folder name is not UTF-8"
    if len(raw) > MAX_INBOUND_NAME_BYTES:
        return f"the folder name is longer than {MAX_INBOUND_NAME_BYTES} bytes"
    if not name.isprintable():
        return "the folder name holds a control or invisible character"
    parts = name.split("+", 2)
    if len(parts) < 3 or not parts[0] or not parts[1] or not parts[2]:
        return "the folder name is not <student>+<assignment>+<timestamp>"
    if len(parts[0]) > 100 or _ID_FORBIDDEN & set(parts[0]) or parts[0].startswith("."):
        return "the student id is longer than 100 characters or holds < > \" ' & ` \\ or a leading dot"
    return ""


def list_inbound(inbound: Path) -> list[InboundEntry]:
    """Every folder in ``inbound``, oldest change first (anything but a real directory is skipped).

    Whatever its name: a name that cannot be a submission's comes with its ``problem`` (the
    service refuses it with a row), never an exception.
    """
    try:
        root_fd = os.open(inbound, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return []
    found = []
    try:
        with os.scandir(root_fd) as it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISDIR(st.st_mode):
                    continue
                problem = inbound_name_problem(entry.name)
                student, assignment = ("", "") if problem else entry.name.split("+", 2)[:2]
                found.append(
                    InboundEntry(entry.name, student, assignment, st.st_ctime, st.st_uid, problem, st.st_ctime_ns)
                )
    finally:
        os.close(root_fd)
    return sorted(found, key=lambda e: (e.changed, e.key))


def guard_inbound(inbound: Path) -> str:
    """Make ``inbound`` as nbgrader makes it, and then some: nobody but its owner (and the
    instructors' group, when it reads it) lists it, and nobody removes another's folder.

    nbgrader's ``release_assignment`` makes ``inbound/`` ``2733``, so that a student can hand in
    but cannot list the other students' folder names; an exchange made by hand (``1777``) lets
    every student list every name. Other users' read bit is taken off and the sticky bit put on
    (as root, the hand-in service's user on a real hub); returns what was changed (``""`` for
    nothing), never raises.
    """
    try:
        st = os.stat(inbound, follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode):
            return ""
        mode = stat.S_IMODE(st.st_mode)
        wanted = (mode & ~0o004) | stat.S_ISVTX
        if wanted == mode:
            return ""
        os.chmod(inbound, wanted)
        return f"{oct(mode)} -> {oct(wanted)}"
    except OSError:
        return ""


@dataclass(frozen=True)
class Sighting:
    """What the hand-in service saw of an inbound folder before it read it.

    nbgrader's submit leaves each submission folder ``0777``, so until the service (root) takes
    group and other write off it (:func:`lock_inbound`, in the round that first sees it so),
    anyone who knows its name could touch it or swap its files. ``before_ns`` and ``after_ns``
    are the folder's inode change time just before and just after the service's last ``chmod``.
    A change time equal to ``after_ns`` is the service's own change, not the student's: the
    folder's arrival is then ``before_ns``, no later than the moment the service saw the folder
    writable by others (what anyone did before that is no later than it; after it, only the
    owner can change the folder).
    """

    before_ns: int = 0
    after_ns: int = 0

    def folder_changed(self, st: os.stat_result) -> float:
        """The folder's change time as the student made it (the service's own ``chmod`` undone)."""
        if self.after_ns and st.st_ctime_ns == self.after_ns:
            return self.before_ns / 1e9
        return st.st_ctime


def lock_inbound(inbound: Path, entry: InboundEntry, sighting: Sighting | None) -> Sighting | None:
    """Take group and other write off the folder of ``entry`` (needs root, or its owner).

    Done whenever the folder is seen writable by others (nbgrader's submit makes it ``0777`` as
    its last step): from then on only its owner can add, remove, rename or touch anything in it.
    Returns the sighting to keep (``sighting`` itself if nothing was changed); trouble (the
    folder is gone, not a directory, or cannot be changed) leaves it as it was, never raised.
    """
    seen = sighting if sighting is not None else Sighting()
    try:
        root_fd = os.open(inbound, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return sighting
    try:
        with _opendir(entry.folder, root_fd) as fd:
            st = os.fstat(fd)
            if not st.st_mode & 0o022:
                return sighting
            before = seen.before_ns if seen.after_ns and st.st_ctime_ns == seen.after_ns else st.st_ctime_ns
            os.fchmod(fd, stat.S_IMODE(st.st_mode) & ~0o022)
            return Sighting(before, os.fstat(fd).st_ctime_ns)
    except OSError:
        return sighting
    finally:
        os.close(root_fd)


@dataclass
class InboundSnapshot:
    """What one submission folder held when the hand-in service took it.

    ``changed`` is the latest inode change time of the folder (the service's own ``chmod`` undone:
    :class:`Sighting`), the notebook and nbgrader's metadata files, each taken with ``fstat`` on
    the open file *after* it was read: a notebook edited in place, or renamed into place, later
    than that moves it (its owner cannot move it back). ``unsettled``: the folder or a file read
    changed while it was read (take it in a later round). ``foreign``: why a file read is not the
    folder's owner's alone (another owner, or writable by group or others), or ``""``.
    """

    submission: bytes | None
    notebook_name: str
    exchange: dict[str, str]
    problems: list[str]
    changed: float
    unsettled: bool = False
    foreign: str = ""


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_ino, a.st_size, a.st_mtime_ns, a.st_ctime_ns) == (b.st_ino, b.st_size, b.st_mtime_ns, b.st_ctime_ns)


def snapshot_inbound(inbound: Path, entry: InboundEntry, sighting: Sighting | None = None) -> InboundSnapshot:
    """Take the notebook and nbgrader's timestamp and secret of one inbound folder, as
    :func:`collect_jobs` reads a student's folder (no link followed, regular files only, capped).

    Read once, then checked: the notebook is chosen once and opened (``O_NOFOLLOW``), read, and
    only then are the times taken, with ``fstat`` on the open file and on the folder, so whatever
    is renamed into place between the listing and the read shows in ``changed``, and a change
    during the read makes the snapshot ``unsettled``. Trouble is the snapshot's problem, never
    raised.
    """
    job = Job(entry.student, entry.assignment, "", "", None, f"{entry.assignment}.ipynb")
    where = f"{display_name(entry.student)}/{display_name(entry.assignment)}"
    seen = sighting if sighting is not None else Sighting()
    changed, unsettled, foreign = entry.changed, False, ""
    try:
        root_fd = os.open(inbound, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return InboundSnapshot(None, job.notebook_name, {}, [_os_problem(where, exc)], changed)
    files: list[tuple[os.stat_result, os.stat_result]] = []  # (opened, after the read) per file read
    try:
        with _opendir(entry.folder, root_fd) as fd:
            folder_before = os.fstat(fd)
            try:
                _take_notebook(job, fd, where, files)
            finally:
                folder_after = os.fstat(fd)
                changed = max([seen.folder_changed(folder_after), *(after.st_ctime for _, after in files)])
                unsettled = not _same(folder_before, folder_after) or not all(_same(a, b) for a, b in files)
                for _, after in files:
                    if after.st_uid != folder_after.st_uid:
                        foreign = "a file in the folder belongs to another user"
                    elif after.st_mode & 0o022 and not foreign:
                        foreign = "a file in the folder can be written by other users"
    except _Refused as exc:
        job.problems.append(str(exc))
    except Exception as exc:  # noqa: BLE001 - never raised for one submission
        job.problems.append(_os_problem(where, exc))
    finally:
        os.close(root_fd)
    return InboundSnapshot(job.submission, job.notebook_name, job.exchange, job.problems, changed,
                           unsettled, foreign)


# --------------------------------------------------------------------------------------- listing


@contextlib.contextmanager
def _opendir(name: str, dir_fd: int) -> Iterator[int]:
    """A descriptor of the real directory ``name`` in ``dir_fd``; a symbolic link is refused."""
    fd = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    try:
        yield fd
    finally:
        os.close(fd)


def _kind(entry: os.DirEntry) -> str:
    """``"dir"`` (a real directory), ``"link"`` (a symbolic link) or ``"other"``."""
    if entry.is_symlink():
        return "link"
    return "dir" if entry.is_dir(follow_symlinks=False) else "other"


def _list_students(root_fd: int) -> list[_Student]:
    """The student folders (not hidden), sorted by name; symbolic links are listed, not opened."""
    students = []
    with os.scandir(root_fd) as it:
        for entry in it:
            if entry.name.startswith("."):
                continue
            try:
                kind = _kind(entry)
            except OSError as exc:
                kind, problem = "dir", _os_problem(display_name(entry.name), exc)
            else:
                problem = f"{display_name(entry.name)} {NOT_FOLLOWED}" if kind == "link" else None
            if kind != "other":
                students.append(_Student(entry.name, problem))
    students.sort(key=lambda s: s.name)
    for student in students:
        if student.problem is None:
            _list_entries(root_fd, student)
    return students


def _list_entries(root_fd: int, student: _Student) -> None:
    """Fill in ``student.entries`` (folders not hidden), or ``student.problem``."""
    try:
        with _opendir(student.name, root_fd) as fd, os.scandir(fd) as it:
            for entry in it:
                if not entry.name.startswith("."):
                    student.entries[entry.name] = _kind(entry)
    except OSError as exc:
        student.entries.clear()
        student.problem = _os_problem(display_name(student.name), exc)


def nearest_assignment(name: str, known: set[str] | list[str]) -> str | None:
    """The assignment whose name is closest to ``name`` (:mod:`difflib`), or None if none is close.

    Parameters
    ----------
    name : str
        A folder name that is not an assignment (``01_randomised_response``).
    known : set or list of str
        The course's assignment names.

    Returns
    -------
    str or None
        The nearest name with a similarity ratio of at least 0.8, or None.

    Raises
    ------
    TypeError
        If ``name`` is not a str.

    Examples
    --------
    >>> nearest_assignment("01_randomised_response", {"01_randomized_response", "02_laplace"})
    '01_randomized_response'
    >>> nearest_assignment("notes", {"01_randomized_response"}) is None
    True
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
    return close[0] if close else None


def _misspelt_folders(student: _Student, known: set[str]) -> dict[str, str]:
    """``assignment -> folder`` for each folder of a student that misspells a missing assignment."""
    found: dict[str, str] = {}
    for name, kind in sorted(student.entries.items()):
        if name in known or kind == "other":
            continue
        near = nearest_assignment(name, known)
        if near is not None and near not in student.entries:
            found.setdefault(near, name)
    return found


def _unknown_folders(student: _Student, known: set[str]) -> list[str]:
    """Warnings for the folders of a student that name no assignment of the course."""
    where = display_name(student.name)
    warnings = []
    for name, kind in sorted(student.entries.items()):
        if name in known or kind == "other":
            continue
        near = nearest_assignment(name, known)
        hint = f" (did you mean {display_name(near)}? rename the folder)" if near else ""
        link = " (a symbolic link, not followed)" if kind == "link" else ""
        warnings.append(
            f"{where}/{display_name(name)}: not an assignment of the course, skipped{hint}{link}"
        )
    return warnings


def _missing_root(submissions: Path, exc: OSError) -> str:
    """One line: the submissions folder is not there (or not a folder), and the layout expected."""
    what = "is not a folder" if exc.errno == errno.ENOTDIR else "does not exist"
    if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
        what = f"cannot be opened ({exc.strerror})"
    return (
        f"the submissions folder {printable(str(submissions))} {what}: expected "
        f"{printable(str(submissions))}/{LAYOUT}, one folder per student"
    )


def source_texts(source_root: Path, name: str) -> tuple[str, str, dict[str, bytes]]:
    """The source and release notebooks' JSON, and the assignment's own data files."""
    source = (source_root / name / f"{name}.ipynb").read_text(encoding="utf-8")
    release = notebook_bytes(release_notebook(nbformat.reads(source, as_version=4), name))
    # The assignment's own files (data shipped beside the notebook, released as they are): the
    # only files put in a workspace besides the notebook.
    assets = {
        str(p.relative_to(source_root / name)): p.read_bytes()
        for p in sorted((source_root / name).rglob("*"))
        if p.is_file() and p.suffix != ".ipynb" and not IGNORED.intersection(p.parts)
    }
    return source, release.decode("utf-8"), assets


# ------------------------------------------------------------------------------------------ jobs


def _student_jobs(
    root_fd: int,
    student: _Student,
    assignments: list[str],
    texts: dict[str, tuple[str, str, dict[str, bytes]]],
    options: Options,
) -> list[Job]:
    """The jobs of one student, one per assignment; any trouble is a job's problem."""
    jobs = []
    for name in assignments:
        source, release, assets = texts[name]
        jobs.append(
            Job(
                student=student.name,
                assignment=name,
                source=source,
                release=release,
                submission=None,
                notebook_name=f"{name}.ipynb",
                files=dict(assets),
                options=options,
            )
        )
    if student.problem is not None:
        for job in jobs:
            job.problems.append(student.problem)
        return jobs
    misspelt = _misspelt_folders(student, set(assignments))
    try:
        with _opendir(student.name, root_fd) as fd:
            for job in jobs:
                _fill(job, fd, student.entries.get(job.assignment), misspelt.get(job.assignment))
    except Exception as exc:  # noqa: BLE001 - the folder changed since it was listed, or a bug
        problem = _os_problem(display_name(student.name), exc)
        for job in jobs:
            if job.submission is None and not job.problems:
                job.problems.append(problem)
    return jobs


def _fill(job: Job, student_fd: int, kind: str | None, misspelt: str | None = None) -> None:
    """Read the notebook of ``job`` from the student's folder, or say why not."""
    where = f"{display_name(job.student)}/{display_name(job.assignment)}"
    try:
        if kind is None and misspelt is not None:
            raise _Refused(
                f"nothing handed in for this assignment, but a folder "
                f"{display_name(misspelt)} is there: rename it to "
                f"{display_name(job.assignment)} and grade again"
            )
        if kind is None:
            raise _Refused("nothing handed in for this assignment")
        if kind == "link":
            raise _Refused(f"{where} {NOT_FOLLOWED}")
        if kind == "other":
            raise _Refused(f"{where} is not a folder: not graded")
        with _opendir(job.assignment, student_fd) as fd:
            _take_notebook(job, fd, where)
    except _Refused as exc:
        job.problems.append(str(exc))
    except Exception as exc:  # noqa: BLE001 - never raised for one submission
        job.problems.append(_os_problem(where, exc))


def _take_notebook(job: Job, fd: int, where: str, files: list | None = None) -> None:
    """The submission's notebook and nbgrader's metadata from the open folder ``fd`` into ``job``.

    ``files``, when given, receives ``(fstat when opened, fstat after the read)`` of each file read.

    Raises
    ------
    _Refused
        No notebook, or one that is not a regular file of a sane size and shape.
    """
    chosen = _choose_notebook(fd, job.assignment)
    if chosen is None:
        raise _Refused("no notebook handed in")
    data = _read_notebook(fd, chosen, f"{where}/{display_name(chosen)}", files)
    problem = check_shape(data)
    if problem is not None:
        raise _Refused(f"{where}/{display_name(chosen)}: {problem}, not graded")
    if chosen != job.notebook_name:
        job.problems.append(f"no {job.assignment}.ipynb: graded {display_name(chosen)} instead")
    job.submission = data
    job.exchange = _exchange_metadata(fd, files)


def _choose_notebook(dir_fd: int, assignment: str) -> str | None:
    """``<assignment>.ipynb`` if there is such an entry, else the first other notebook.

    Hidden names (``._x.ipynb`` from a macOS archive, say) are not notebooks; among other
    notebooks a regular file comes first. Whatever is chosen is checked when it is read.
    """
    wanted = f"{assignment}.ipynb"
    others = []
    with os.scandir(dir_fd) as it:
        for entry in it:
            if entry.name == wanted:
                return wanted
            if entry.name.endswith(".ipynb") and not entry.name.startswith("."):
                others.append((not entry.is_file(follow_symlinks=False), entry.name))
    return min(others)[1] if others else None


# nbgrader's exchange metadata: small text files, read like the notebook and then validated.
EXCHANGE_FILES = {
    "timestamp": ("timestamp.txt", re.compile(r"[0-9][0-9A-Za-z :.+\-]{0,63}")),
    "secret": ("submission_secret.txt", re.compile(r"[A-Za-z0-9\-]{1,128}")),
}


def _exchange_metadata(dir_fd: int, files: list | None = None) -> dict[str, str]:
    """``timestamp`` and ``secret`` from the files nbgrader's collect leaves, when both are sane.

    Read with the notebook's care (no link followed, a regular file, small); anything else, or a
    value of the wrong shape, gives ``{}``: the submission is graded, its feedback is not
    released through the exchange.
    """
    found = {}
    for key, (name, shape) in EXCHANGE_FILES.items():
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode) or st.st_size > 256:
                return {}
            fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
            try:
                opened = os.fstat(fd)
                if not stat.S_ISREG(opened.st_mode):
                    return {}
                raw = os.read(fd, 257)
                if files is not None:
                    files.append((opened, os.fstat(fd)))
                text = raw.decode("ascii").strip()
            finally:
                os.close(fd)
        except (OSError, UnicodeDecodeError):
            return {}
        if not shape.fullmatch(text):
            return {}
        found[key] = text
    return found


# ------------------------------------------------------------------------------------ the notebook


def _read_notebook(dir_fd: int, name: str, where: str, files: list | None = None) -> bytes:
    """The bytes of the regular file ``name`` in ``dir_fd``, at most :data:`MAX_NOTEBOOK_BYTES`.

    Checked before opening (``lstat``: no FIFO or device is ever opened) and after (``fstat`` on
    the descriptor opened with ``O_NOFOLLOW | O_NONBLOCK``: the entry cannot be swapped between).

    Raises
    ------
    _Refused
        With the problem, for anything but a regular file of at most the cap.
    """
    try:
        _check_regular(os.stat(name, dir_fd=dir_fd, follow_symlinks=False), where)
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise _Refused(_os_problem(where, exc)) from None
    try:
        opened = os.fstat(fd)
        _check_regular(opened, where)
        data = _read_capped(fd, where)
        if files is not None:
            files.append((opened, os.fstat(fd)))
        return data
    except OSError as exc:
        raise _Refused(_os_problem(where, exc)) from None
    finally:
        os.close(fd)


def check_shape(data: bytes) -> str | None:
    """Why notebook bytes ``data`` are refused for their shape, or None when they are not.

    Cheap bounds first, on the bytes: the number of ``"cell_type"`` keys (at least one per cell
    written plainly) against :data:`MAX_CELLS`, and the bytes that precede a JSON value (``[``,
    ``{``, ``,``, ``:``) against :data:`MAX_NOTEBOOK_PARTS`, so that a parse costs at most tens of
    MiB. Then the exact count of cells and of source characters. Bytes that are not a JSON
    notebook are not this function's concern (None): the grader reports them.

    Parameters
    ----------
    data
        The notebook file's bytes (at most :data:`MAX_NOTEBOOK_BYTES`).

    Returns
    -------
    str or None
        The reason, in the grader's words.

    Raises
    ------
    TypeError
        If ``data`` is not bytes.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    too_many_cells = f"notebook has more than {MAX_CELLS:,} cells"
    if data.count(b'"cell_type"') > MAX_CELLS:
        return too_many_cells
    if sum(data.count(c) for c in (b"[", b"{", b",", b":")) > MAX_NOTEBOOK_PARTS:
        return f"notebook has more than {MAX_NOTEBOOK_PARTS:,} JSON parts (clear its outputs)"
    try:
        notebook = json.loads(data)
    except (ValueError, RecursionError):
        return None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return None
    if len(cells) > MAX_CELLS:
        return too_many_cells
    chars = 0
    for cell in cells:
        source = cell.get("source", "") if isinstance(cell, dict) else ""
        if isinstance(source, list):
            chars += sum(len(line) for line in source if isinstance(line, str))
        elif isinstance(source, str):
            chars += len(source)
    if chars > MAX_SOURCE_CHARS:
        return f"notebook has more than {MAX_SOURCE_CHARS // 1024**2} MiB of cell source"
    return None


def _check_regular(st: os.stat_result, where: str) -> None:
    """Raise :class:`_Refused` unless ``st`` is a regular file of at most the cap."""
    mode = st.st_mode
    if stat.S_ISREG(mode):
        if st.st_size > MAX_NOTEBOOK_BYTES:
            raise _Refused(_too_big(where))
        return
    if stat.S_ISLNK(mode):
        what = "a symbolic link: not followed"
    elif stat.S_ISDIR(mode):
        what = "a directory, not a notebook file"
    elif stat.S_ISFIFO(mode):
        what = "a named pipe (FIFO), not a notebook file"
    elif stat.S_ISSOCK(mode):
        what = "a socket, not a notebook file"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        what = "a device, not a notebook file"
    else:
        what = "not a regular file"
    raise _Refused(f"{where} is {what}, not graded")


def _read_capped(fd: int, where: str) -> bytes:
    """Everything in ``fd``, refused once more than :data:`MAX_NOTEBOOK_BYTES` (a growing file)."""
    chunks, total = [], 0
    while True:
        chunk = os.read(fd, min(1024**2, MAX_NOTEBOOK_BYTES + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > MAX_NOTEBOOK_BYTES:
            raise _Refused(_too_big(where))


def _too_big(where: str) -> str:
    return f"{where}: notebook larger than {MAX_NOTEBOOK_BYTES // 1024**2} MiB, not graded"


def _os_problem(where: str, exc: BaseException) -> str:
    """A problem string for an error met while reading ``where``."""
    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        return f"{where} {NOT_FOLLOWED}"
    if isinstance(exc, OSError) and exc.errno == errno.ENOTDIR:
        return f"{where} is not a folder: not graded"
    if isinstance(exc, OSError) and exc.errno == errno.ENXIO:
        return f"{where} is a socket or a device, not a notebook file, not graded"
    if isinstance(exc, OSError):
        return f"{where} could not be read ({exc.strerror or type(exc).__name__}), not graded"
    return f"{where}: grader error while collecting, grade again: {type(exc).__name__}"
