"""The course and its LMS: students arrive from it, their grades go back to it.
Imported by the hub (``deploy/jupyterhub_config.py``), the hand-in service and the command line.

- :mod:`~coursetools.lms.settings`: the platform's LTI 1.3 registration (``deploy/lti.toml``);
- :mod:`~coursetools.lms.keys`: the tool's signing key and its public key set;
- :mod:`~coursetools.lms.launch`: the hub's authenticator for LTI 1.3 launches;
- :mod:`~coursetools.lms.store`: what the tool remembers (launches, nonces, line items, the
  grades to post);
- :mod:`~coursetools.lms.ags`: the platform's Assignment and Grade Services;
- :mod:`~coursetools.lms.outbox`: graded hand-ins' scores to the LMS, never lost;
- :mod:`~coursetools.lms.final`: final grades when the instructor says so (``make export LTI=``);
- :mod:`~coursetools.lms.csv_export`: the same grades as Canvas's and Moodle's CSV imports.

The hand-in service (:mod:`coursetools.grading.handin`) uses this room, never the reverse.
"""
