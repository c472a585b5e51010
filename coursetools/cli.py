"""Command line of the course tools: ``python -m coursetools {release,validate,grade,course}``.

One job: orchestration. Find the assignments and submissions, build the grading jobs, hand them
to an executor, write what the other modules produce. The Makefile targets call these commands.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from coursetools import paths, rendering
from coursetools.authoring import example_class
from coursetools.authoring.release import find_assignments, release_all
from coursetools.grading.classroom import executors, feedback, pipeline
from coursetools.grading.classroom.collect import SubmissionsNotFound, collect_jobs
from coursetools.grading.job import graded_sandbox_mode

EXAMPLE_GRADES = paths.BUILD / "example-class-graded"  # make course's grades and feedback pages


# ------------------------------------------------------------------------------------------ jobs


def report(
    results: list[dict],
    grades: Path,
    feedback_dir: Path,
    warnings: list[str] = (),
    unchanged: int = 0,
) -> str:
    """The terminal's account of a run: what was not graded first, the table, the problems."""
    text = ""
    if warnings:  # a misspelt folder: the first thing the instructor sees
        text += (
            "Not graded, check these first:\n"
            + "".join(f"  {rendering.printable(w)}\n" for w in warnings)
            + "\n"
        )
    modes = sorted({graded_sandbox_mode(r) for r in results} - {"?"})
    text += feedback.summary_table(results) + "\n" + feedback.problem_report(results)
    text += f"\nsandbox: {', '.join(modes) or 'none used'}"
    if "rlimit" in modes:
        text += "\n  WARNING: the bans and the file system isolation were OFF for this run (rlimit mode)"
    offs = sorted({o for r in results for o in r.get("sandbox_off", ())})
    for off in offs:
        text += f"\n  WARNING, weaker than bwrap: {off}"
    remedies = {
        feedback.sandbox_remedy(graded_sandbox_mode(r), str(r.get("sandbox_why", "")))
        for r in results
    }
    for remedy in sorted(remedies - {""}):
        text += f"\n  {remedy}"
    if unchanged:
        text += (
            f"\nnot graded again: {unchanged} submission(s) unchanged since the last run (same "
            "notebook, assignment and grader options; their rows and pages are kept): "
            "--regrade-all (make grade GRADE_ARGS=--regrade-all) grades every one"
        )
    text += f"\ngrades: {grades}  (details: {Path(grades).with_suffix('.json')})"
    text += f"\nfeedback: {feedback_dir}/<student>/<assignment>.html\n"
    return text


# -------------------------------------------------------------------------------------- commands


def cmd_release(args) -> int:
    kept: list[Path] = []
    force = getattr(args, "force", False)
    written = release_all(args.source, args.release, force=force, kept=kept)
    print(
        f"released {len(find_assignments(args.source))} assignment(s) from {args.source} "
        f"into {args.release} ({len(written)} file(s))"
    )
    for path in kept:
        print(
            f"  KEPT, not replaced: {rendering.printable(str(path))} was changed since the release "
            "wrote it (a student's answers?)",
            file=sys.stderr,
        )
    if kept:
        print(
            "  copy your work elsewhere (students: `make student-lab` works in a copy no course "
            "command overwrites), then `make release FORCE=1` replaces them",
            file=sys.stderr,
        )
    return 1 if kept else 0


def cmd_student_copy(args) -> int:
    """Copy the release into the student's working folder; a file already there is never touched."""
    from coursetools.authoring.release import copy_missing

    try:
        added = copy_missing(args.release, args.work)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(
        f"{args.work}: {len(added)} new file(s) from {args.release}; your own files are never "
        "overwritten (delete one to get the release's copy back)"
    )
    return 0


def _validate_one(path: str) -> tuple[str, dict]:
    from nbgrader.validator import Validator
    from traitlets.config import Config

    config = Config(
        {
            "Execute": {"timeout": 600},
            "Validator": {"ignore_checksums": True},
            # Unix sockets, not TCP on localhost: no port, and no "unencrypted TCP" warning.
            "KernelManager": {"transport": "ipc"},
        }
    )
    return path, Validator(config=config).validate(path)


def validate(source_root: Path, workers: int | None = None) -> list[str]:
    """nbgrader's Validator on every solution as a student would hand it in; the failures.

    The notebook validated is the release with every answer filled in from the source: what a
    student's *Validate* button runs (the visible tests). The hidden tests run only in the
    trusted grader, which ``make course`` checks by grading that same notebook (``ada_full``).
    """
    generator = example_class
    staging = paths.BUILD / "validate"
    if staging.exists():
        shutil.rmtree(staging)
    notebooks = []
    for name in find_assignments(source_root):
        folder = Path(source_root) / name
        target = staging / name
        shutil.copytree(
            folder, target, ignore=shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints")
        )
        filled = generator.student_notebooks(folder / f"{name}.ipynb")["ada_full"]
        (target / f"{name}.ipynb").write_bytes(filled)
        notebooks.append(str(target / f"{name}.ipynb"))
    failures = []
    workers = min(len(notebooks), workers or executors.default_workers()) or 1
    with cf.ProcessPoolExecutor(max_workers=workers) as pool:
        for path, result in pool.map(_validate_one, notebooks):
            bad = (
                result.get("failed", [])
                + result.get("type_changed", [])
                + result.get("changed", [])
            )
            print(f"  {'ok  ' if not bad else 'FAIL'} {path}", flush=True)
            for cell in bad:
                error = cell.get("raw_error", "").strip().splitlines()
                failures.append(
                    f"{path}: {cell['source'].splitlines()[0] if cell['source'] else ''}"
                    f" -> {error[-1] if error else 'failed'}"
                )
    return failures


def cmd_validate(args) -> int:
    failures = validate(args.source, args.workers)
    print("\n".join(failures) if failures else "every solution notebook passes all its tests")
    return 1 if failures else 0


def cmd_grade(args) -> int:
    """``make grade``: collect the class, then the class pipeline (grading/classroom/pipeline.py)."""
    if not find_assignments(args.source):
        print(
            f"no assignment in {args.source}: expected {args.source}/<assignment>/<assignment>.ipynb",
            file=sys.stderr,
        )
        return 2
    grades = Path(args.grades)
    try:
        jobs, warnings = collect_jobs(
            args.submissions,
            args.source,
            pipeline.options_from(args, Path(args.submissions), grades.parent),
        )
    except SubmissionsNotFound as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if not jobs:
        for line in warnings:
            print(f"  {rendering.printable(line)}", file=sys.stderr)
        print(
            f"no submissions found under {rendering.display_name(str(args.submissions))}/"
            "<student>/<assignment>/<assignment>.ipynb",
            file=sys.stderr,
        )
        return 1
    start = time.monotonic()
    outputs = pipeline.Outputs(
        grades,
        Path(args.feedback) if args.feedback else None,
        gradebook=args.gradebook,
        nbgrader_config=args.nbgrader_config,
    )
    done = pipeline.run(
        jobs, outputs, regrade_all=args.regrade_all, workers=args.workers, scheduler=args.scheduler
    )
    print(report(done.results, grades, outputs.pages, warnings, unchanged=len(done.reused)))
    recorded = done.recorded
    for line in recorded.gradebook_trouble:
        print(f"  not in the gradebook: {line}", file=sys.stderr)
    if recorded.gradebook_error:
        print(f"gradebook not updated: {recorded.gradebook_error}", file=sys.stderr)
    elif recorded.gradebook_db:
        print(
            f"gradebook: {recorded.gradebook_db} ({recorded.gradebook_written} submission(s); written "
            "answers wait in the formgrader's Manual Grading, `make lab`; `make export` for final grades)"
        )
    if recorded.class_page is not None:
        print(f"class page: {recorded.class_page}")
    print(
        f"graded {len(done.graded)} submission(s) in {time.monotonic() - start:.1f} s"
        + (f" ({len(done.reused)} unchanged, not graded again)" if done.reused else "")
    )
    return 1 if recorded.gradebook_error else 0


def cmd_course(args) -> int:
    """The main job: release, example class, validation and grading in one parallel pass.

    Each solution notebook is validated by running it with its hidden tests: the example student
    ``ada_full`` *is* the solution notebook (answers filled in from solutions/, hidden tests merged
    back by the grader), and must score full marks. nbgrader's own Validator also runs on every
    solution notebook (what a student's Validate button does); ``--no-nbgrader-validate`` skips it.
    """
    start = time.monotonic()
    source, release = Path(args.source), Path(args.release)
    if not find_assignments(source):
        print(
            f"no notebook in {rendering.printable(str(source))}/: nothing to release or grade "
            "(docs/adding-an-exercise.md says how to write one)",
            file=sys.stderr,
        )
        return 2
    print(f"== 1. release: {source} -> {release}")
    cmd_release(argparse.Namespace(source=source, release=release))
    failures = []
    if args.nbgrader_validate:
        print("== 1b. nbgrader Validator on every solution notebook")
        failures = validate(source, args.workers)
    print(
        "== 2. example class, generated from the notebooks (coursetools/authoring/example_class.py)"
    )
    klass = paths.BUILD / "example-class"
    if klass.exists():
        shutil.rmtree(klass)
    written = example_class.make_class(source, klass)
    print(f"  {len(written)} submission(s) in {klass}: ada_full, bob_partial, cy_blank")
    print("== 3. execute and validate every solution notebook (ada_full) and grade the class")
    # Its own place: the example class never mixes with a real class's rows and pages.
    grades, feedback_dir = EXAMPLE_GRADES / "grades.csv", EXAMPLE_GRADES / "feedback"
    options = dataclasses.replace(
        pipeline.options_from(args, klass), hide=pipeline.hide_list(klass)
    )
    jobs, warnings = collect_jobs(klass, source, options)
    outputs = pipeline.Outputs(grades, feedback_dir, class_title="Example class")
    # the plan off: the example class is made anew each time, every submission is graded
    done = pipeline.run(
        jobs, outputs, regrade_all=True, workers=args.workers, scheduler=args.scheduler
    )
    results = done.results
    print(report(results, grades, feedback_dir, warnings))
    print(f"class page: {done.recorded.class_page}")
    print("validation (each solution notebook run with its hidden tests must score full marks):")
    for r in (r for r in results if r["student"] == "ada_full"):
        bad = [c for c in r["cells"] if c["kind"] == "auto" and c["status"] != "passed"]
        print(
            f"  {'FAIL' if bad or r['problems'] else 'ok  '} {r['assignment']}: "
            f"{r['score']:g}/{r['max_score']:g} in {r['seconds']:.0f} s"
        )
        failures += [
            f"{r['assignment']}: {c['grade_id']} {c['status']}: {c['message']}" for c in bad
        ]
        failures += [f"{r['assignment']}: {p}" for p in r["problems"]]
    wrong = [
        f"{r['student']}/{r['assignment']}: {r['score']:g}/{r['max_score']:g}"
        for r in results
        if r["student"] == "cy_blank" and r["score"] != 0
    ]
    for line in failures:
        print(f"  FAILED: {line}")
    for line in wrong:
        print(f"  UNEXPECTED: {line} (an untouched release notebook must score zero)")
    print(f"course built in {time.monotonic() - start:.0f} s")
    return 1 if failures or wrong else 0


# ---------------------------------------------------------------------------------------- parser


def _add_gradebook_arguments(p: argparse.ArgumentParser, *, record: bool = True) -> None:
    """``--nbgrader-config`` (where the gradebook is) and, for a command that grades,
    ``--gradebook`` (record what it grades there): one declaration for every command."""
    if record:
        p.add_argument(
            "--gradebook",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="also record the grades in nbgrader's gradebook for the formgrader (default: on)",
        )
    p.add_argument(
        "--nbgrader-config",
        type=Path,
        default=paths.NBGRADER_CONFIG,
        help="the course directory's nbgrader_config.py (where the gradebook is)",
    )


def build_parser() -> argparse.ArgumentParser:
    """Every command and its options (``python -m coursetools --help``); manifests that run a
    command, such as deploy/z2jh/exchange.yaml, are checked against it."""
    parser = argparse.ArgumentParser(prog="python -m coursetools", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("release", help="regenerate notebooks/ from solutions/")
    p.add_argument("--source", type=Path, default=paths.SOLUTIONS)
    p.add_argument("--release", type=Path, default=paths.NOTEBOOKS)
    p.add_argument(
        "--force",
        action="store_true",
        help="replace release files someone changed (default: keep them and say which)",
    )
    p.set_defaults(func=cmd_release)
    p = sub.add_parser(
        "student-copy",
        help="copy the release into a student's working folder, never overwriting a file",
    )
    p.add_argument("--release", type=Path, default=paths.NOTEBOOKS)
    p.add_argument("--work", type=Path, default=paths.ROOT / "work")
    p.set_defaults(func=cmd_student_copy)
    p = sub.add_parser(
        "validate", help="every solution notebook passes its tests (nbgrader Validator)"
    )
    p.add_argument("--source", type=Path, default=paths.SOLUTIONS)
    p.add_argument("--workers", type=int, default=None)
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("grade", help="grade SUBMISSIONS/<student>/<assignment>/*.ipynb")
    p.add_argument("submissions", type=Path)
    p.add_argument("--grades", type=Path, default=paths.BUILD / "grades.csv")
    p.add_argument("--feedback", type=Path, default=None, help="default: feedback/ beside GRADES")
    p.add_argument("--source", type=Path, default=paths.SOLUTIONS)
    _add_gradebook_arguments(p)
    p.add_argument(
        "--regrade-all",
        action="store_true",
        help="grade every submission again (default: only those new or changed since the last "
        "run into the same GRADES: notebook, assignment, grader options or grader code)",
    )
    pipeline.add_grading_arguments(p)
    p.set_defaults(func=cmd_grade)
    p = sub.add_parser("course", help="release, validate, grade the example class")
    p.add_argument("--source", type=Path, default=paths.SOLUTIONS)
    p.add_argument(
        "--nbgrader-validate",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run nbgrader's Validator on every solution notebook (default: on)",
    )
    p.add_argument("--release", type=Path, default=paths.NOTEBOOKS)
    pipeline.add_grading_arguments(p)
    p.set_defaults(func=cmd_course)
    p = sub.add_parser(
        "handin",
        help="the hand-in service: grade each submission as it arrives in nbgrader's exchange",
    )
    p.add_argument("action", choices=("serve", "once", "pause", "resume", "status"))
    p.add_argument(
        "--exchange", type=Path, default=None, help="default: the exchange of nbgrader_config.py"
    )
    p.add_argument("--course-id", default=None, help="default: nbgrader_config.py's course_id")
    p.add_argument("--source", type=Path, default=paths.SOLUTIONS)
    p.add_argument(
        "--state",
        type=Path,
        default=paths.BUILD / "handin",
        help="the queue (default build/handin)",
    )
    p.add_argument("--settings", type=Path, default=paths.DEPLOY / "handin.toml")
    p.add_argument(
        "--grades", type=Path, default=paths.BUILD / "grades.csv", help="as make grade's GRADES"
    )
    p.add_argument("--poll", type=float, default=2.0, help="seconds between looks at the exchange")
    p.add_argument(
        "--http-exchange",
        type=Path,
        default=None,
        help="the HTTP exchange's volume (python -m coursetools exchange serve --volume): read the "
        "hand-ins from its store and put the pages back there, instead of nbgrader's folder",
    )
    p.add_argument(
        "--http-exchange-database",
        default=None,
        help="the HTTP exchange's database URL (default: the SQLite file in its volume)",
    )
    p.add_argument(
        "--lti",
        type=Path,
        default=None,
        help="the course's LMS registration (deploy/lti.toml): each graded hand-in's score goes "
        "to the LMS's gradebook (LTI Assignment and Grade Services); with status, what the LMS "
        "refused",
    )
    p.add_argument(
        "--handin-wall",
        type=float,
        default=300.0,
        help="wall-clock seconds one submission may hold a worker (default 300; its cells' and "
        "tests' limits count CPU time, this is the backstop for a notebook that sleeps)",
    )
    p.add_argument(
        "--check-owner",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a submission folder must belong to the user it names (off only on a one-account demo)",
    )
    _add_gradebook_arguments(p)
    pipeline.add_grading_arguments(p)
    p.set_defaults(func=cmd_handin)
    p = sub.add_parser(
        "exchange",
        help="the HTTP exchange as a JupyterHub service (docs/jupyterhub.md: no shared disk)",
    )
    p.add_argument("action", choices=("serve",))
    p.add_argument(
        "--database",
        default=None,
        help="SQLAlchemy URL (default: sqlite in --volume; postgresql+psycopg://... on a real hub)",
    )
    p.add_argument(
        "--volume", type=Path, default=paths.BUILD / "exchange", help="the archives' folder"
    )
    p.add_argument("--max-mb", type=float, default=20.0, help="size limit of one hand-in (MB)")
    p.set_defaults(func=cmd_exchange)
    p = sub.add_parser(
        "lms-export", help="final grades from the gradebook as a Canvas or Moodle import CSV"
    )
    p.add_argument("--system", choices=("canvas", "moodle"), required=True)
    p.add_argument("--to", type=Path, required=True, help="the CSV to write")
    p.add_argument(
        "--mapping",
        type=Path,
        default=paths.DEPLOY / "lms.toml",
        help="column mapping (TOML; default deploy/lms.toml, documented there)",
    )
    _add_gradebook_arguments(p, record=False)
    p.set_defaults(func=cmd_lms_export)
    p = sub.add_parser(
        "lms-post",
        help="final grades from the gradebook to the LMS's gradebook over LTI (make export LTI=...)",
    )
    p.add_argument("--lti", type=Path, required=True, help="the LMS registration (deploy/lti.toml)")
    p.add_argument("--course-id", default=None, help="default: nbgrader_config.py's course_id")
    p.add_argument(
        "--wait", type=float, default=60.0, help="seconds to keep trying a platform that is down"
    )
    _add_gradebook_arguments(p, record=False)
    p.set_defaults(func=cmd_lms_post)
    p = sub.add_parser("book", help="the course as a static site, offline: _build/html/index.html")
    p.add_argument("--source", type=Path, default=paths.SOLUTIONS)
    p.add_argument("--out", type=Path, default=paths.BOOK_OUT)
    p.add_argument(
        "--jobs", type=int, default=None, help="chapters executed at once (default: cores)"
    )
    p.add_argument("--no-cache", action="store_true", help="execute every chapter again")
    p.add_argument("--cache-dir", type=Path, default=paths.BOOK_CACHE)
    p.add_argument("--strict", action="store_true", help="exit 1 if any cell raised an error")
    p.set_defaults(func=cmd_book)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


def cmd_handin(args) -> int:
    """The hand-in service (coursetools/grading/handin/): serve, one round, pause, resume, status."""
    from coursetools.grading.handin.factory import open_service
    from coursetools.grading.handin.queue import HandinQueue
    from coursetools.grading.handin.service import summarize_rows

    if args.action in ("pause", "resume", "status"):
        queue = HandinQueue(Path(args.state) / "queue.sqlite")
        if args.action != "status":
            queue.set_paused(args.action == "pause")
        counts = ", ".join(f"{n} {s}" for s, n in queue.counts().items())
        print(summarize_rows(queue.rows()[-50:]) if args.action == "status" else "", end="")
        print(f"\nhand-in service: {'paused' if queue.paused else 'grading'}; {counts}")
        if args.action == "status" and args.lti:
            print(_lms_status(args.lti))
        return 0
    grades = Path(args.grades)
    try:
        service_context = open_service(
            source=Path(args.source),
            state=Path(args.state),
            grades=grades,
            settings=Path(args.settings),
            options=pipeline.options_from(args),
            handin_wall=args.handin_wall,
            exchange=args.exchange,
            course_id=args.course_id,
            nbgrader_config=args.nbgrader_config,
            record_gradebook=args.gradebook,
            check_owner=args.check_owner,
            workers=args.workers,
            scheduler=args.scheduler,
            lti=_lti_settings(args.lti) if args.lti else None,
            http_exchange=(
                (
                    args.http_exchange_database
                    or f"sqlite:///{Path(args.http_exchange) / 'exchange.sqlite'}",
                    Path(args.http_exchange),
                )
                if args.http_exchange
                else None
            ),
            log=lambda line: print(line, flush=True),
            warn=lambda line: print(line, file=sys.stderr),
        )
        service = service_context.__enter__()
    except ValueError as exc:
        print(f"handin: {exc}", file=sys.stderr)
        return 2
    try:
        if args.action == "once":
            service.queue.recover()
            service.drain()
            return 0
        try:
            # the hub stops its managed services with SIGTERM: stop as on Ctrl-C, so that the pool's
            # grading processes are shut down with the service instead of left behind
            signal.signal(signal.SIGTERM, _stop_on_sigterm)
            service.serve(poll_seconds=args.poll)
        except KeyboardInterrupt:
            print("handin: stopped (a submission being graded is graded again at the next start)")
        return 0
    finally:
        service_context.__exit__(None, None, None)


def _lti_settings(path: Path):
    from coursetools.lms.settings import load_settings

    # relative paths are in the hub's state folder, as deploy/jupyterhub_config.py has it; a test
    # platform on 127.0.0.1 speaks http (COURSE_LTI_ALLOW_HTTP=1, never on a real hub)
    return load_settings(
        Path(path),
        allow_http=os.environ.get("COURSE_LTI_ALLOW_HTTP") == "1",
        state=Path(os.environ.get("COURSE_HUB_STATE", "hub-state")).resolve(),
    )


def _lms_status(path: Path) -> str:
    """The LMS outbox in a few lines: counts, and every score not (yet) in the LMS, with why."""
    from coursetools.grading.classroom.pipeline import lms_grades

    grades = lms_grades(_lti_settings(path).database)
    counts = {s: sum(g.state == s for g in grades) for s in ("posted", "pending", "refused")}
    lines = [f"LMS: {counts['posted']} posted, {counts['pending']} waiting, {counts['refused']} refused"]
    for g in grades:
        if g.state in ("pending", "refused"):
            why = rendering.printable(g.reason.splitlines()[0] if g.reason else "")
            lines.append(
                f"  {g.state:8} {rendering.display_name(g.student)}/"
                f"{rendering.display_name(g.assignment)} {g.score:g}/{g.max_score:g}: {why}"
            )
    return "\n".join(lines)


def cmd_lms_post(args) -> int:
    """Final grades to the LMS (coursetools/lms/final.py); exit 1 if any was refused."""
    from coursetools.grading.classroom import gradebook
    from coursetools.lms.final import send_final_grades

    try:
        settings = _lti_settings(args.lti)
    except ValueError as exc:
        print(f"lms-post: {exc}", file=sys.stderr)
        return 2
    coursedir = gradebook.course_directory(args.nbgrader_config)
    sent = send_final_grades(settings, coursedir.db_url, args.course_id or coursedir.course_id, wait=args.wait)
    print(f"lms-post: {sent.queued} new or changed grade(s) queued; {sent.posted} in the LMS, "
          f"{sent.pending} waiting for it to answer, {len(sent.refused)} refused")
    for student, assignment, reason in sent.refused:
        print(f"  refused {rendering.display_name(student)}/{rendering.display_name(assignment)}: "
              f"{rendering.printable(reason)}")
    return 1 if sent.refused else 0


def _stop_on_sigterm(signum, frame) -> None:
    raise KeyboardInterrupt


def cmd_exchange(args) -> int:
    """The HTTP exchange, run by the hub as a managed service (its address and token from the hub)."""
    import os

    from coursetools.exchange import server

    needed = ("JUPYTERHUB_API_URL", "JUPYTERHUB_API_TOKEN", "JUPYTERHUB_SERVICE_URL")
    missing = [name for name in needed if not os.environ.get(name)]
    if missing:
        print(
            f"exchange: run by JupyterHub as a service ({', '.join(missing)} not set)",
            file=sys.stderr,
        )
        return 2
    volume = Path(args.volume)
    volume.mkdir(parents=True, exist_ok=True)
    server.serve(
        database=args.database or f"sqlite:///{volume / 'exchange.sqlite'}",
        volume=str(volume),
        max_bytes=int(args.max_mb * 1024 * 1024),
        api_url=os.environ["JUPYTERHUB_API_URL"],
        api_token=os.environ["JUPYTERHUB_API_TOKEN"],
        service_url=os.environ["JUPYTERHUB_SERVICE_URL"],
        prefix=os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/"),
    )
    return 0


def cmd_lms_export(args) -> int:
    """Final grades (nbgrader's gradebook) as the CSV a Canvas or Moodle gradebook import reads."""
    from coursetools.grading.classroom import gradebook
    from coursetools.lms import csv_export as lms_export

    try:
        mapping = lms_export.load_mapping(args.system, args.mapping)
        db_url = gradebook.course_directory(args.nbgrader_config).db_url
        grades = lms_export.final_grades(db_url)
        path = lms_export.write_csv(grades, mapping, args.to)
    except ValueError as exc:
        print(f"lms-export: {exc}", file=sys.stderr)
        return 2
    students = len({g.student_id for g in grades})
    if not grades:
        print(
            f"{args.system}: {path} has no row: the gradebook has no graded submission yet (`make grade`)"
        )
        return 0
    print(
        f"{args.system}: {path} ({students} student(s); import it in the gradebook, docs/grading.md)"
    )
    return 0


def cmd_book(args) -> int:
    """Build the book (coursetools/book/build.py); per-chapter seconds or "cached", and the total."""
    from coursetools.book.build import BookError, build_book

    if args.jobs is not None and args.jobs < 1:
        print(f"--jobs must be >= 1, got {args.jobs}", file=sys.stderr)
        return 2
    print(f"== book: {args.source} -> {args.out}")
    try:
        report = build_book(
            args.source,
            args.out,
            jobs=args.jobs,
            use_cache=not args.no_cache,
            cache_dir=args.cache_dir,
        )
    except BookError as exc:
        print(f"book not built: {exc}", file=sys.stderr)
        return 1
    for line in report.errors:
        print(f"  cell error: {line}", file=sys.stderr)
    print(
        f"book built in {report.seconds:.1f} s ({len(report.executed)} chapter(s) executed, "
        f"{len(report.runs) - len(report.executed)} cached): {report.out / 'index.html'}"
    )
    return 1 if args.strict and report.errors else 0
