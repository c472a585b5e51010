"""The hand-in service, assembled: one place that turns the course's settings into a running service.

One job: from where the exchange, the course and the service's state are, the assignment rules
and the grading options, build the :class:`~coursetools.grading.handin.service.HandinService`
with its pool of graders (local processes, or a Dask scheduler, as ``make grade`` uses) and its
recording through the class pipeline (:func:`coursetools.grading.classroom.pipeline.recorder`).
The command line (``python -m coursetools handin``) only parses its arguments and calls
:func:`open_service`; the hub's managed service runs that command.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from coursetools.grading.classroom import executors, gradebook, pipeline
from coursetools.grading.grade import grade_job
from coursetools.grading.handin.policy import load_policies
from coursetools.grading.handin.service import HandinService, ServiceConfig
from coursetools.grading.job import Options
from coursetools.lms import keys
from coursetools.lms.ags import GradeService
from coursetools.lms.outbox import GradeOutbox, Poster
from coursetools.lms.settings import LtiSettings
from coursetools.lms.store import LmsStore

__all__ = ["open_service"]


@contextlib.contextmanager
def open_service(
    *,
    source: Path,
    state: Path,
    grades: Path,
    settings: Path,
    options: Options,
    handin_wall: float | None,
    exchange: Path | None = None,
    course_id: str | None = None,
    nbgrader_config: Path = gradebook.CONFIG,
    record_gradebook: bool = True,
    check_owner: bool = True,
    workers: int | None = None,
    scheduler: Any = None,
    http_exchange: tuple[str, Path] | None = None,
    lti: LtiSettings | None = None,
    log: Callable[[str], None] = print,
    warn: Callable[[str], None] = print,
) -> Iterator[HandinService]:
    """The hand-in service, ready to :meth:`~HandinService.serve`, with its pool open.

    Parameters
    ----------
    source
        The instructor's ``solutions/`` (the assignments and their hidden tests).
    state
        The service's private folder (its queue and the copies of what arrived).
    grades
        The grades CSV the results are recorded into (with its details, pages and class page).
    settings
        The assignment rules (attempts, cool-down, deadline, hidden messages): TOML, read again
        whenever it changes.
    options
        The grader's options; the exchange, the state and the outputs are hidden from the kernel
        besides what they hide, and ``handin_wall`` is each submission's wall-clock budget.
    exchange, course_id
        nbgrader's exchange root and course id (default: ``nbgrader_config``'s).
    record_gradebook
        Whether results go into nbgrader's gradebook too.
    check_owner
        Whether a folder must belong to the user it names (off on a one-account demo hub).
    workers, scheduler
        Submissions graded at once (default: one per core; 4 on Dask) and the Dask scheduler.
    http_exchange
        ``(database URL, volume)`` of the HTTP exchange (:mod:`coursetools.exchange`) to read the
        hand-ins from and put the pages back to, instead of nbgrader's exchange folder.
    lti
        The course's LMS (``deploy/lti.toml``): each graded hand-in's score goes to the LMS's
        gradebook (:mod:`coursetools.lms.outbox`), posted by a thread of the service, and the
        class page lists the scores the LMS refused.

    Raises
    ------
    ValueError
        If the rules in ``settings`` are not valid (nothing is started).
    """
    policies = load_policies(settings)
    if exchange is None and http_exchange is None:
        exchange = gradebook.exchange_inbound(nbgrader_config).parent.parent
    if exchange is None:  # the HTTP exchange: no folder is read, none is hidden but the volume
        exchange = Path(http_exchange[1])
    if course_id is None:
        course_id = gradebook.course_directory(nbgrader_config).course_id
    outputs = pipeline.Outputs(
        Path(grades),
        gradebook=record_gradebook,
        nbgrader_config=nbgrader_config,
        lms_database=lti.database if lti else "",
    )
    workers = workers or (4 if scheduler else executors.default_workers())
    config = ServiceConfig(
        exchange_root=Path(exchange),
        course_id=course_id,
        source_root=Path(source),
        state_dir=Path(state),
        policies=policies,
        # a stalled (sleeping) notebook holds its worker at most this long; one cut while it
        # waited for a CPU (starved) is graded once more with the same wall (docs/jupyterhub.md)
        options=dataclasses.replace(
            options,
            notebook_wall=handin_wall,
            hide=tuple(
                sorted(
                    {
                        *options.hide,
                        *pipeline.hide_list(Path(exchange), Path(grades).parent, Path(state)),
                    }
                )
            ),
        ),
        check_owner=check_owner,
        workers=workers,
        settings_path=Path(settings),
        http_database=http_exchange[0] if http_exchange else None,
        http_volume=Path(http_exchange[1]) if http_exchange else None,
    )
    on_graded = pipeline.recorder(outputs, warn)
    with contextlib.ExitStack() as stack:
        if lti is not None and lti.post == "on-hand-in":
            on_graded = _posting(on_graded, course_id, _open_outbox(lti, outputs, log, stack))
        pool = stack.enter_context(executors.Pool(workers=workers, scheduler=scheduler))
        yield HandinService(config, grade=grade_job, pool=pool, on_graded=on_graded, log=log)


def _open_outbox(lti: LtiSettings, outputs: pipeline.Outputs, log, stack: contextlib.ExitStack):
    """The LMS outbox and its poster thread (stopped when ``stack`` closes)."""
    store = LmsStore(lti.database)
    stack.callback(store.close)
    service = GradeService(lti.client_id, lti.token_url, keys.load_or_create(lti.key_file))
    outbox = GradeOutbox(store, service, lti.issuer, partial=lti.partial)
    poster = Poster(
        outbox, log=log, on_settled=lambda: pipeline.refresh_class_page(outputs)
    ).start()
    stack.callback(poster.stop)
    return outbox, poster


def _posting(on_graded, course_id: str, outbox_and_poster):
    """``on_graded`` that also puts each hand-in's score in the LMS outbox, and wakes the poster."""
    outbox, poster = outbox_and_poster

    def record_and_post(jobs, results) -> None:
        on_graded(jobs, results)
        for job, result in zip(jobs, results, strict=True):
            manual = float(result.get("manual_max") or 0.0)
            total = float(result["max_score"]) + manual
            if total <= 0:
                continue  # nothing to score: no column in the LMS
            outbox.add(
                course=course_id,
                student=job.student,
                assignment=job.assignment,
                score=float(result["score"]),
                max_score=total,
                pending_manual=manual > 0,
                handed_in=job.exchange.get("timestamp", ""),
            )
        poster.wake()

    return record_and_post
