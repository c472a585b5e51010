"""The instructor's Jupyter server (``make lab``, and the hub's instructors): student work inert.

Loaded from ``JUPYTER_CONFIG_PATH`` (the Makefile's ``lab`` target and
``deploy/jupyterhub_config.py`` put this directory on it). :mod:`coursetools.grading.classroom.formgrader_guard`
renders every notebook the formgrader shows through :mod:`coursetools.grading.classroom.inert` and sends a
Content-Security-Policy under which no inline script a student wrote can run.
"""

c = get_config()  # noqa: F821 - provided by traitlets
c.ServerApp.jpserver_extensions.update({"coursetools.grading.classroom.formgrader_guard": True})
