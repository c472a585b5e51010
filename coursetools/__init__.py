"""Build and grading pipeline of the course (instructors' tools, not part of dplib).

- :mod:`coursetools.release`: ``solutions/`` -> ``notebooks/`` with nbgrader's preprocessors;
- :mod:`coursetools.authoring`: what a test cell may use, the bans, the linter;
- :mod:`coursetools.collect`: read a class's submissions without following a link;
- :mod:`coursetools.grade`: grade one submission (student cells in the kernel, tests in the
  trusted process, score);
- :mod:`coursetools.kernel`: one sandboxed kernel reached through its shell channel only;
- :mod:`coursetools.sandbox`: the kernel launcher (unprivileged uid, namespaces, rlimits);
- :mod:`coursetools.limits`: one control group per submission (memory, processes, CPU share);
- :mod:`coursetools.bans`: the grading copy of dplib without the banned functions' code;
- :mod:`coursetools.bridge`: the plain-data boundary between the grader and the kernel;
- :mod:`coursetools.trusted`: the trusted process that runs test cells;
- :mod:`coursetools.executors`: serial, process-pool or Dask fan-out with progress;
- :mod:`coursetools.feedback`: feedback HTML, grades CSV, summary table;
- :mod:`coursetools.cli`: ``python -m coursetools {release,validate,grade,course}``.

See ``docs/grading.md``.
"""
