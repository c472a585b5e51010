"""nbgrader for a student's server on the hub: fetch and submit through the shared exchange."""

import os

c = get_config()  # noqa: F821 - provided by traitlets
c.CourseDirectory.course_id = os.environ.get("COURSE_ID", "dp-course")
if os.environ.get("NBGRADER_EXCHANGE_URL"):
    # the HTTP exchange (no shared disk): the service knows the student by their hub token
    from coursetools.exchange.client import use_http_exchange

    use_http_exchange(c)
else:
    c.Exchange.root = os.environ["NBGRADER_EXCHANGE"]
if os.environ.get("COURSE_HUB_DEMO") == "1":
    # every server runs as one OS account in the demo: name the student by their hub user
    c.CourseDirectory.student_id = os.environ["JUPYTERHUB_USER"]
