"""Build and grading pipeline of the course (instructors' tools, not part of dplib).

- :mod:`coursetools.release`: ``solutions/`` -> ``notebooks/`` with nbgrader's preprocessors;
- :mod:`coursetools.grade`: grade one submission (merge hidden tests, run sandboxed, score);
- :mod:`coursetools.sandbox`: the kernel launcher (unprivileged uid, namespaces, rlimits);
- :mod:`coursetools.executors`: serial, process-pool or Dask fan-out with progress;
- :mod:`coursetools.feedback`: feedback HTML, grades CSV, summary table;
- :mod:`coursetools.cli`: ``python -m coursetools {release,validate,grade,course}``.

See ``docs/grading.md``.
"""
