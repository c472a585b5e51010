"""A student's answers are never overwritten.

``make release`` keeps (and names) a release file someone changed since it wrote it, unless
``FORCE=1``; ``make student-lab`` works in a copy of the release (``work/``) that no course
command overwrites, rooted there so that ``solutions/`` is not one click away; a second ``make
lab`` on a taken port says which address serves instead of moving silently to another port.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from coursetools import cli
from coursetools.authoring.release import copy_missing, release_all

ROOT = Path(__file__).resolve().parents[2]
PILOT = ROOT / "tests" / "fixtures" / "solutions"


def _answer(path: Path) -> bytes:
    """What a student does in JupyterLab: an answer typed in, the notebook run and saved."""
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if "raise NotImplementedError" in c.source)
    cell.source = cell.source.replace("raise NotImplementedError", "return 42  # my answer")
    cell.execution_count = 3
    nb.metadata["language_info"]["version"] = "3.11.4"
    nbformat.write(nb, path)
    return path.read_bytes()


def test_a_release_never_overwrites_a_notebook_a_student_changed(tmp_path, capsys):
    release = tmp_path / "notebooks"
    release_all(PILOT, release)
    notebook = release / "pilot" / "pilot.ipynb"
    answered = _answer(notebook)
    (release / "pilot" / "my_notes.txt").write_text("mine")  # a file the release never wrote

    kept: list[Path] = []
    release_all(PILOT, release, kept=kept)  # a second release, as `make course` does
    assert notebook.read_bytes() == answered
    assert (release / "pilot" / "my_notes.txt").read_text() == "mine"
    assert notebook in kept

    assert cli.main(["release", "--source", str(PILOT), "--release", str(release)]) == 1
    err = capsys.readouterr().err
    assert "KEPT, not replaced" in err and "pilot.ipynb" in err and "FORCE=1" in err
    assert notebook.read_bytes() == answered

    assert cli.main(["release", "--source", str(PILOT), "--release", str(release), "--force"]) == 0
    assert notebook.read_bytes() != answered and "my answer" not in notebook.read_text()


def test_a_notebook_the_release_wrote_is_still_regenerated(tmp_path):
    release = tmp_path / "notebooks"
    release_all(PILOT, release)
    notebook = release / "pilot" / "pilot.ipynb"
    fresh = notebook.read_bytes()
    notebook.write_bytes(fresh.replace(b"Pilot", b"An older pilot", 1))  # an older release ...
    (release / ".release-manifest.json").unlink()  # ... in a fresh clone: no manifest
    kept: list[Path] = []
    release_all(PILOT, release, kept=kept)
    assert kept == [] and notebook.read_bytes() == fresh


def test_the_working_copy_is_made_once_and_never_overwritten(tmp_path):
    release, work = tmp_path / "notebooks", tmp_path / "work"
    release_all(PILOT, release)
    added = copy_missing(release, work)
    assert added == [work / "pilot" / "pilot.ipynb"]
    assert not (work / ".release-manifest.json").exists()
    answered = _answer(work / "pilot" / "pilot.ipynb")
    release_all(PILOT, release, force=True)
    assert copy_missing(release, work) == []
    assert (work / "pilot" / "pilot.ipynb").read_bytes() == answered
    (work / "pilot" / "pilot.ipynb").unlink()  # deleted: the release's copy comes back
    assert copy_missing(release, work) == [work / "pilot" / "pilot.ipynb"]
    with pytest.raises(ValueError, match="release_root"):
        copy_missing(tmp_path / "missing", work)
    with pytest.raises(ValueError, match="nest"):
        copy_missing(release, release / "work")


# --------------------------------------------------------------------------------- the Makefile


def _dry(target: str, *extra: str) -> str:
    return subprocess.run(
        ["make", "-n", "-o", ".venv/.installed", target, *extra],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=60,
    ).stdout


def test_student_lab_is_rooted_at_the_working_copy_without_the_formgrader():
    dry = _dry("student-lab")
    (line,) = [ln for ln in dry.splitlines() if "jupyter\" lab" in ln or "jupyter lab" in ln]
    (root_dir,) = re.findall(r"--ServerApp\.root_dir=(\S+)", line)
    root_dir = Path(shlex.split(root_dir)[0])
    assert root_dir == ROOT / "work"
    assert not (root_dir / "solutions").exists() and "deploy/student" in line
    assert "student-copy" in dry  # the copy is topped up first, never overwritten
    assert "--ServerApp.port_retries=0" in line


def test_both_labs_stay_on_one_port():
    for target in ("lab", "student-lab"):
        (line,) = [ln for ln in _dry(target, "LAB_PORT=9123").splitlines() if "lab --ServerApp" in ln]
        assert "--ServerApp.port=9123" in line and "--ServerApp.port_retries=0" in line


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "python").exists(), reason="needs .venv")
def test_a_second_lab_on_a_taken_port_says_which_address_serves():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            ["make", "-s", "-o", ".venv/.installed", "lab", f"LAB_PORT={port}"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
            env={**os.environ, "PATH": os.environ.get("PATH", "") + os.pathsep + str(Path(sys.executable).parent)},
        )
    assert done.returncode != 0
    # make's own error line is "make:" or, under make test (a nested make), "make[1]:"
    said = [ln for ln in done.stderr.splitlines() if not re.match(r"make(\[\d+\])?: ", ln)]
    assert said == [
        f"make lab: port {port} is taken, probably by a JupyterLab already serving "
        f"http://localhost:{port}/lab (open it, or stop it), or run make lab LAB_PORT=8889"
    ]
