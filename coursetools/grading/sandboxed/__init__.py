"""The student's side of the grader: launch, confine and talk to the kernel that runs student code.
Imported by :mod:`coursetools.grading.grade` and the class level; never by the trusted runner
(which may use :mod:`~coursetools.grading.sandboxed.limits` only, for its own control group).

- :mod:`~coursetools.grading.sandboxed.sandbox`: the kernel launcher (unprivileged uid, namespaces,
  rlimits), run as a script by absolute path: standard library only;
- :mod:`~coursetools.grading.sandboxed.kernel`: one sandboxed kernel reached through its shell
  channel only;
- :mod:`~coursetools.grading.sandboxed.limits`: one control group per submission (memory,
  processes, CPU share);
- :mod:`~coursetools.grading.sandboxed.bans`: the grading copy of dplib without the banned
  functions' code;
- :mod:`~coursetools.grading.sandboxed.outputs`: the display run's outputs as bounded, inert data.
"""
