"""Feedback at hand-in: seconds from a student's submit to the page Fetch Feedback finds.

The hand-in service (``python -m coursetools handin serve``, what the hub runs) watches a
temporary exchange; N submissions (default 20) arrive as nbgrader's ``submit`` makes them (a
folder with the notebook, ``timestamp.txt`` and ``submission_secret.txt``), one every
``--gap`` seconds from ``--students`` students in turn, cycling examples/make_class.py's kinds
(every answer right, half, the blank release) of one course notebook (default
01_randomized_response, about 5 s to grade). For each submission the time from its folder's
creation to its feedback page at ``<exchange>/<course>/feedback/<hash>.html`` is measured:
median and worst, and the grading seconds the service logged. Nothing is written into
``build/`` or the course's gradebook (``--no-gradebook``, a temporary state and grades folder).

There is no peer to put beside it: nbgrader and otter-grader give no feedback before the
instructor collects and grades (Gradescope does, outside Jupyter). The issue's target is within a
minute on an idle machine.

``--exchange http``: the same class hands in through the HTTP exchange instead (no shared disk:
``coursetools/exchange/``): each submission is packed and POSTed to the exchange service (a tornado
server in this process; the hub's cached token check left out), the hand-in service reads it from
the exchange's store (``handin serve --http-exchange``) and puts the page back there; the time is
from the POST to the page in the store.

Not one of run_all.py's sections (no peer to compare with; it runs a service for minutes).
Run: ``.venv/bin/python bench/handin_latency.py [--submissions 20] [--gap 3] [--workers 2]
[--exchange folder|http]``.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _make_class():
    sys.path.insert(0, str(ROOT))
    from coursetools.authoring import example_class

    return example_class


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--submissions", type=int, default=20)
    p.add_argument("--students", type=int, default=10)
    p.add_argument("--gap", type=float, default=3.0, help="seconds between two submissions")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--notebook", default="01_randomized_response")
    p.add_argument(
        "--stalled",
        type=int,
        default=0,
        help="the first N submissions come from students whose first cell sleeps (no CPU)",
    )
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    p.add_argument("--exchange", choices=("folder", "http"), default="folder")
    args = p.parse_args(argv)
    from nbgrader.utils import notebook_hash

    with tempfile.TemporaryDirectory(prefix="bench-handin-") as tmp:
        tmp = Path(tmp)
        klass = tmp / "class"
        _make_class().make_class(ROOT / "solutions", klass, [args.notebook])
        kinds = sorted(klass.iterdir())  # ada_full, bob_partial, cy_blank
        inbound = tmp / "exchange" / "dp" / "inbound"
        inbound.mkdir(parents=True)
        settings = tmp / "handin.toml"
        settings.write_text("[default]\nattempts = 0\ncooldown_minutes = 0\n")
        http = None
        if args.exchange == "http":
            http = _HttpClass(
                tmp,
                args.notebook,
                {f"s{i:02d}" for i in range(args.students)}
                | {f"zz_stall{i:02d}" for i in range(args.stalled)},
            )
        log = (tmp / "service.log").open("w")
        service = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "coursetools",
                "handin",
                "serve",
                "--exchange",
                str(tmp / "exchange"),
                *(["--http-exchange", str(tmp / "volume")] if http else []),
                "--course-id",
                "dp",
                "--state",
                str(tmp / "state"),
                "--grades",
                str(tmp / "out" / "grades.csv"),
                "--settings",
                str(settings),
                "--no-gradebook",
                "--no-check-owner",
                "--poll",
                "0.5",
                "--workers",
                str(args.workers),
            ],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        waiting: dict[Path, float] = {}
        seconds: list[float] = []
        stalled: set[Path] = set()
        try:
            time.sleep(3)  # the service's start (imports), as on a hub where it is already up
            for i in range(args.submissions):
                kind = kinds[i % len(kinds)]
                student = f"s{i % args.students:02d}"
                secret = secrets.token_hex(16)
                stamp = f"2026-11-27 10:{i // 60:02d}:{i % 60:02d}.000000 UTC"
                folder = inbound / f"{student}+{args.notebook}+{stamp}+{secrets.token_hex(4)}"
                staging = tmp / "staging" / folder.name
                staging.mkdir(parents=True)
                notebook = kind / args.notebook / f"{args.notebook}.ipynb"
                data = notebook.read_bytes()
                if i < args.stalled:  # a notebook that sleeps: it holds a worker, not a core
                    student, data = f"zz_stall{i:02d}", _sleeping(data)
                    folder = inbound / f"{student}+{args.notebook}+{stamp}+{secrets.token_hex(4)}"
                    staging = tmp / "staging" / folder.name
                    staging.mkdir(parents=True)
                (staging / notebook.name).write_bytes(data)
                if (
                    http
                ):  # the client's pack and POST; the page is the hand-in's feedback in the store
                    started = time.monotonic()
                    page = http.submit(student, staging)
                    waiting[page] = started
                else:
                    (staging / "timestamp.txt").write_text(stamp)
                    (staging / "submission_secret.txt").write_text(secret)
                    page = (
                        tmp
                        / "exchange"
                        / "dp"
                        / "feedback"
                        / (notebook_hash(secret=secret, notebook_id=args.notebook) + ".html")
                    )
                    os.rename(staging, folder)  # appears at once, complete, as submit's copy does
                    waiting[page] = time.monotonic()
                if i < args.stalled:
                    stalled.add(page)
                end = time.monotonic() + args.gap
                while time.monotonic() < end:
                    _collect(waiting, seconds, stalled)
                    time.sleep(0.1)
            end = time.monotonic() + 1800
            while set(waiting) - stalled and time.monotonic() < end:
                _collect(waiting, seconds, stalled)
                time.sleep(0.1)
        finally:
            service.terminate()
            service.wait(timeout=60)
            log.close()
        graded = [
            float(line.rsplit(" in ", 1)[1].split()[0])
            for line in (tmp / "service.log").read_text().splitlines()
            if line.startswith("handin: graded")
        ]
    load = os.getloadavg()
    figures = {
        "submissions": args.submissions,
        "lost": len(set(waiting) - stalled),
        "stalled": args.stalled,
        "median_s": round(statistics.median(seconds), 1) if seconds else None,
        "worst_s": round(max(seconds), 1) if seconds else None,
        "grading_median_s": round(statistics.median(graded), 1) if graded else None,
        "workers": args.workers,
        "gap_s": args.gap,
        "notebook": args.notebook,
        "exchange": args.exchange,
        "load": [round(x, 2) for x in load],
    }
    print(
        f"hand-in service ({args.exchange} exchange), {args.submissions} submissions of {args.notebook}, one every {args.gap:g} s, "
        f"{args.workers} worker(s), load {load[0]:.1f}:"
    )
    print(
        f"  submit -> feedback page (honest students; {args.stalled} stalled notebook(s) in the class): median {figures['median_s']} s, worst {figures['worst_s']} s"
        f" (grading alone: median {figures['grading_median_s']} s); no page: {figures['lost']}"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0 if not set(waiting) - stalled else 1


class _HttpClass:
    """The HTTP exchange of a benchmark class: its store, its server, and each hand-in's page."""

    def __init__(self, tmp: Path, notebook: str, students: set[str]) -> None:
        sys.path.insert(0, str(ROOT))
        from bench_exchange import start_server

        from coursetools.exchange import archive
        from coursetools.exchange.storage import ExchangeStore

        self.archive, self.notebook = archive, notebook
        self.store = ExchangeStore(
            f"sqlite:///{tmp / 'volume' / 'exchange.sqlite'}", tmp / "volume"
        )
        release = ROOT / "notebooks" / notebook
        self.store.release("dp", notebook, archive.pack(release, max_bytes=self.store.max_bytes))
        self.port, self.stop = start_server(self.store, students)

    def submit(self, student: str, folder: Path) -> _Page:
        import urllib.request

        data = self.archive.pack(folder, max_bytes=self.store.max_bytes)
        url = f"http://127.0.0.1:{self.port}/services/exchange/api/courses/dp/assignments/{self.notebook}/submissions"
        request = urllib.request.Request(
            url,
            data=data,
            method="POST",
            headers={"Authorization": f"token {student}", "Content-Type": "application/gzip"},
        )
        with urllib.request.urlopen(request, timeout=120) as reply:
            record = json.loads(reply.read())
        return _Page(self.store, self.notebook, student, record["timestamp"])


class _Page:
    """A hand-in's feedback in the exchange's store, with a page's ``exists()``."""

    def __init__(self, store, notebook: str, student: str, timestamp: str) -> None:
        self.store, self.notebook, self.student, self.timestamp = (
            store,
            notebook,
            student,
            timestamp,
        )

    def exists(self) -> bool:
        from coursetools.exchange.storage import NotFound

        try:
            self.store.feedback("dp", self.notebook, self.student, self.timestamp)
        except NotFound:
            return False
        return True

    def __hash__(self) -> int:
        return hash((self.student, self.timestamp))

    def __eq__(self, other) -> bool:
        return isinstance(other, _Page) and (self.student, self.timestamp) == (
            other.student,
            other.timestamp,
        )


def _collect(waiting: dict, seconds: list[float], stalled: set = frozenset()) -> None:
    """Honest students' pages only: a stalled submission's own wait is its own."""
    for page, start in list(waiting.items()):
        if page.exists():
            if page not in stalled:
                seconds.append(time.monotonic() - start)
            del waiting[page]


def _sleeping(data: bytes) -> bytes:
    """The notebook with a first cell that sleeps for an hour: no CPU, a worker held."""
    nb = json.loads(data)
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "id": "stall",
        "metadata": {},
        "outputs": [],
        "source": "import time\ntime.sleep(3600)",
    }
    nb["cells"].insert(0, cell)
    return json.dumps(nb).encode()


if __name__ == "__main__":
    sys.exit(main())
