"""A class on JupyterHub through the HTTP exchange, driven through JupyterLab's own endpoints.

The loop of ``tests/deploy/test_hub.py`` (the formgrader releases and collects, each student's
Assignments tab lists, fetches, submits and fetches feedback, the course's grader grades), on the
hub of ``deploy/jupyterhub_config.py`` with ``COURSE_EXCHANGE=http``: every server runs as this
test's one OS user with a home of its own, as pods do, and no shared exchange folder may appear.
"""

from __future__ import annotations

import pytest
from hub_harness import class_loop, http_exchange_hub


@pytest.fixture(scope="module")
def http_hub(tmp_path_factory):
    with http_exchange_hub(tmp_path_factory.mktemp("lab-exchange")) as running:
        yield running


def test_a_class_through_jupyterlab_and_the_http_exchange(http_hub):
    class_loop(http_hub, http_hub.course, shared_exchange=None)
