"""The exchange: hand-ins per second through nbgrader's shared folder and through the HTTP exchange.

Two ways a class hands in, timed side by side on this machine:

- **folder**: nbgrader's own ``ExchangeSubmit`` (nbgrader 0.9's default exchange), each hand-in a
  copy of the assignment folder into ``<exchange>/<course>/inbound`` plus the student's cache, as
  ``nbgrader submit`` does (one OS account here: on a hub each student is their own user);
- **http**: the course's HTTP exchange (``coursetools/exchange/``): the client packs the folder
  (``archive.pack``) and POSTs it; the service (a tornado server in this process, as the hub runs
  it) checks the archive, writes it to its volume by SHA-256 (fsync'd) and commits a row in its
  database (SQLite in WAL mode, synchronous=FULL). The hub's token check is left out: the service
  keeps the hub's answer for a token 10 s, so a class handing in pays one hub call per student
  and 10 s; the bench's identity check is a dict lookup.

Each way hands in ``--submissions`` times (default 400) one course notebook (default
01_randomized_response, about 30 kB) from ``--clients`` concurrent clients (threads; default 8),
and prints hand-ins per second (median of ``--repeats`` runs) and the spread. The hub's limit is
elsewhere: grading one notebook takes seconds (``bench/handin_latency.py --exchange http``).

Run: ``.venv/bin/python bench/bench_exchange.py [--submissions 400] [--clients 8] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures as cf
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _assignment(tmp: Path, notebook: str) -> Path:
    folder = tmp / "work" / notebook
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / notebook / f"{notebook}.ipynb", folder)
    return folder


def folder_exchange(tmp: Path, notebook: str, count: int, clients: int) -> float:
    """Hand-ins per second through nbgrader's default ExchangeSubmit."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default import ExchangeSubmit
    from traitlets.config import Config

    root = tmp / "exchange"
    (root / "dp" / "inbound").mkdir(parents=True)
    (root / "dp" / "outbound").mkdir(parents=True)
    # nbgrader makes the cache folder without exist_ok: a race between threads
    (tmp / "cache" / "dp").mkdir(parents=True)
    shutil.copytree(_assignment(tmp / "release", notebook), root / "dp" / "outbound" / notebook)
    work = _assignment(tmp / "student", notebook).parent

    def one(i: int) -> None:
        config = Config()
        config.CourseDirectory.course_id = "dp"
        config.CourseDirectory.assignment_id = notebook
        config.CourseDirectory.student_id = f"s{i:04d}"
        config.Exchange.root = str(root)
        config.Exchange.cache = str(tmp / "cache")
        config.Exchange.assignment_dir = str(work)
        submit = ExchangeSubmit(
            coursedir=CourseDirectory(config=config),
            authenticator=Authenticator(config=config),
            config=config,
        )
        submit.start()

    start = time.perf_counter()
    with cf.ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(count)))
    seconds = time.perf_counter() - start
    assert len(list((root / "dp" / "inbound").iterdir())) == count
    return count / seconds


def start_server(store, students: set[str]):
    """The exchange's tornado app on a free port in a thread: ``(port, stop)``. A token is its
    student's name (the hub's check, cached by the service, left out)."""
    from tornado.ioloop import IOLoop

    from coursetools.exchange.server import Roles, make_app

    members = frozenset(students)

    class Course(Roles):
        async def of(self, course):
            return frozenset({"teacher"}), members

    async def identify(token):
        return {"name": token, "kind": "user"}

    ready, box = threading.Event(), {}

    def serve() -> None:
        asyncio.set_event_loop(asyncio.new_event_loop())
        app = make_app(store, identify, Course(), prefix="/services/exchange")
        server = app.listen(0, address="127.0.0.1", max_body_size=store.max_bytes + 1024 * 1024)
        box["port"] = next(iter(server._sockets.values())).getsockname()[1]
        box["loop"] = IOLoop.current()
        ready.set()
        IOLoop.current().start()

    threading.Thread(target=serve, daemon=True).start()
    ready.wait(30)
    return box["port"], lambda: box["loop"].add_callback(box["loop"].stop)


def http_exchange(tmp: Path, notebook: str, count: int, clients: int) -> float:
    """Hand-ins per second through the HTTP exchange (pack, POST, check, store, commit)."""
    from coursetools.exchange import archive
    from coursetools.exchange.storage import ExchangeStore

    store = ExchangeStore(f"sqlite:///{tmp / 'volume' / 'exchange.sqlite'}", tmp / "volume")
    port, stop = start_server(store, {f"s{i:04d}" for i in range(count)})
    url = f"http://127.0.0.1:{port}/services/exchange/api/courses/dp"
    folder = _assignment(tmp / "student", notebook)
    release = archive.pack(folder, max_bytes=store.max_bytes)
    store.release("dp", notebook, release)

    def one(i: int) -> None:
        data = archive.pack(folder, max_bytes=store.max_bytes)  # the client packs each hand-in
        request = urllib.request.Request(
            f"{url}/assignments/{notebook}/submissions",
            data=data,
            method="POST",
            headers={"Authorization": f"token s{i:04d}", "Content-Type": "application/gzip"},
        )
        with urllib.request.urlopen(request, timeout=120) as reply:
            assert reply.status == 201

    start = time.perf_counter()
    with cf.ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(count)))
    seconds = time.perf_counter() - start
    assert len(store.submissions("dp")) == count
    stop()
    store.close()
    return count / seconds


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--submissions", type=int, default=400)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--notebook", default="01_randomized_response")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    rates: dict[str, list[float]] = {"folder": [], "http": []}
    for _ in range(args.repeats):
        for name, run in (("folder", folder_exchange), ("http", http_exchange)):
            with tempfile.TemporaryDirectory(prefix=f"bench-exchange-{name}-") as tmp:
                rates[name].append(run(Path(tmp), args.notebook, args.submissions, args.clients))
    figures = {
        name: {
            "per_second_median": round(statistics.median(r), 1),
            "min": round(min(r), 1),
            "max": round(max(r), 1),
        }
        for name, r in rates.items()
    }
    size = (ROOT / "notebooks" / args.notebook / f"{args.notebook}.ipynb").stat().st_size
    print(
        f"hand-ins per second, {args.submissions} hand-ins of {args.notebook} ({size / 1024:.0f} kB), "
        f"{args.clients} clients, median of {args.repeats} (min-max):"
    )
    for name, f in figures.items():
        print(f"  {name:<7} {f['per_second_median']:>8.1f}   ({f['min']:.1f}-{f['max']:.1f})")
    ratio = figures["http"]["per_second_median"] / figures["folder"]["per_second_median"]
    print(f"  http / folder: {ratio:.2f}")
    if args.json:
        args.json.write_text(json.dumps({**figures, "ratio": round(ratio, 2)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
