"""The gradebook in PostgreSQL (``COURSE_GRADEBOOK_URL``): what several machines share.

On Kubernetes the hand-in service grades in the exchange's pod while instructors open the
formgrader in their own servers (deploy/z2jh/, docs/kubernetes.md): the gradebook both use is a
PostgreSQL database named by ``COURSE_GRADEBOOK_URL`` in the course's ``nbgrader_config.py``. Here
``make grade``'s command grades two hand-ins of the pilot into a PostgreSQL server from Debian's
package; nbgrader's own ``Gradebook`` and ``nbgrader export`` read the scores back, also after the
database stopped and started again; the SQLite file of the default is never made. What grading
writes goes to ``COURSE_BUILD_DIR`` (there the course's folder is read only), none to the course.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import nbformat
from pilot_course import ROOT, fill_answers, pilot_course
from postgres_server import postgres_cluster

BIN = Path(sys.executable).parent


def _hand_in(course: Path, student: str, answered: bool) -> None:
    nb = nbformat.read(course / "notebooks" / "pilot" / "pilot.ipynb", as_version=4)
    folder = course.parent / "handed-in" / student / "pilot"
    folder.mkdir(parents=True)
    nbformat.write(fill_answers(nb) if answered else nb, str(folder / "pilot.ipynb"))


def _scores(url: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(url) as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions("pilot")}


def test_grades_go_to_postgresql_and_nbgraders_clients_read_them_there(tmp_path):
    course = pilot_course(tmp_path / "course")
    _hand_in(course, "ada", answered=True)
    _hand_in(course, "grace", answered=False)
    with postgres_cluster() as server:
        build = tmp_path / "writable"
        env = {
            **os.environ,
            "COURSE_GRADEBOOK_URL": server.url,
            "COURSE_BUILD_DIR": str(build),
            "PATH": f"{BIN}:{os.environ['PATH']}",
        }
        before = sorted(p.relative_to(course) for p in course.rglob("*"))
        graded = subprocess.run(
            [
                sys.executable, "-m", "coursetools", "grade",
                str(course.parent / "handed-in"),
                "--source", str(course / "solutions"),
                "--grades", str(build / "grades.csv"),
                "--nbgrader-config", str(course / "nbgrader_config.py"),
            ],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
        # 7 autograded points for the answered hand-in, the written answer still to grade
        assert _scores(server.url) == {"ada": 7.0, "grace": 0.0}
        assert not list(tmp_path.rglob("gradebook.db"))  # nothing went to SQLite
        assert (build / "nbgrader" / "autograded" / "ada" / "pilot" / "pilot.ipynb").is_file()
        assert sorted(p.relative_to(course) for p in course.rglob("*")) == before

        server.stop()
        server.start()
        assert _scores(server.url) == {"ada": 7.0, "grace": 0.0}
        exported = subprocess.run(
            [str(BIN / "nbgrader"), "export", "--to", str(tmp_path / "grades.csv")],
            cwd=course, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert exported.returncode == 0, exported.stderr[-2000:]
        rows = {
            r["student_id"]: float(r["score"])
            for r in csv.DictReader((tmp_path / "grades.csv").open())
        }
        assert rows == {"ada": 7.0, "grace": 0.0}
