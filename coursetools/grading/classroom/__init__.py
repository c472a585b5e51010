"""The class level of the grader: collect hand-ins, fan out, regrade, record, give feedback, show.
Imported by :mod:`coursetools.cli`, nbgrader (``nbgrader_config.py``) and Jupyter server
(``formgrader_guard``); nothing in :mod:`coursetools.grading`'s two sides imports it.

- :mod:`~coursetools.grading.classroom.collect`: read a class's submissions without following a link;
- :mod:`~coursetools.grading.classroom.executors`: serial, process-pool or Dask fan-out;
- :mod:`~coursetools.grading.classroom.regrade`: grade again only what changed;
- :mod:`~coursetools.grading.classroom.gradebook`: nbgrader's gradebook, written by the trusted grader;
- :mod:`~coursetools.grading.classroom.feedback`: feedback HTML, grades CSV, summary table;
- :mod:`~coursetools.grading.classroom.class_page`: the instructor's class page;
- :mod:`~coursetools.grading.classroom.lms_export`: final grades for Canvas's and Moodle's imports;
- :mod:`~coursetools.grading.classroom.nbgrader_autograde`: nbgrader's Autograde and Generate
  Feedback buttons routed to the trusted grader;
- :mod:`~coursetools.grading.classroom.inert` and
  :mod:`~coursetools.grading.classroom.formgrader_guard`: what the instructor's pages show of a
  student's notebook (inert copies, and the formgrader's second wall).
"""
