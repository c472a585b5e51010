"""nbgrader for an instructor's server on the hub: the course directory's own configuration.

The hub starts instructors' servers in ``COURSE_ROOT`` with this directory on
``JUPYTER_CONFIG_PATH``; the course's ``nbgrader_config.py`` reads ``NBGRADER_EXCHANGE`` and
makes the formgrader's Autograde and Generate Feedback buttons grade with the course's trusted
grader (:mod:`coursetools.grading.classroom.nbgrader_autograde`), so loading it here is what makes them safe.
"""

import os

c = get_config()  # noqa: F821 - provided by traitlets
load_subconfig(os.path.join(os.environ["COURSE_ROOT"], "nbgrader_config.py"))  # noqa: F821
if os.environ.get("COURSE_HUB_DEMO") == "1":
    # one OS account runs every server in the demo, so every inbound file is "owned" by it; the
    # trait lives on nbgrader 0.9's exchange class (CollectApp.check_owner is read by nothing)
    c.ExchangeCollect.check_owner = False
if os.environ.get("NBGRADER_EXCHANGE_URL"):
    # the HTTP exchange (no shared disk): release, collect and release feedback through the service
    from coursetools.exchange.client import use_http_exchange

    use_http_exchange(c)
