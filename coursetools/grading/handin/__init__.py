"""Feedback at hand-in: grade each submission as it arrives in nbgrader's exchange.
Run by ``python -m coursetools handin serve`` (a JupyterHub managed service, deploy/); it imports
the class level (:mod:`coursetools.grading.classroom`) and the grader, and nothing imports it
but :mod:`coursetools.cli`.

- :mod:`~coursetools.grading.handin.policy`: attempts, cool-down, deadline, hidden messages;
- :mod:`~coursetools.grading.handin.queue`: the durable, fair queue (SQLite);
- :mod:`~coursetools.grading.handin.service`: the loop, and the pages where Fetch Feedback looks.
"""
