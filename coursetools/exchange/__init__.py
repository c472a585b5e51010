"""The exchange over HTTP: releases, hand-ins and feedback through a hub service, with no shared disk.
Imported by the hand-in service and the hub's configuration; it imports nothing of the grader.

Kubernetes (Zero to JupyterHub) gives every student a pod of their own, all as one OS user, with
no disk in common: nbgrader's default exchange, a shared folder that tells students apart by
their Unix user, cannot work there. This room replaces it through nbgrader's own plug-in point
(``ExchangeFactory``):

- :mod:`~coursetools.exchange.archive` -- a folder as one gzip'd tar and back, refusing links,
  paths out of the folder and archives over a size limit;
- :mod:`~coursetools.exchange.storage` -- what was released, handed in and fed back: rows in a
  database through SQLAlchemy (SQLite by default, PostgreSQL for a real hub) and the archives on
  the service's own volume, by their SHA-256;
- :mod:`~coursetools.exchange.server` -- the hub service: every request carries the user's
  JupyterHub token, and who hands in is the hub's user name, never a uid or a folder's owner;
- :mod:`~coursetools.exchange.client` -- nbgrader's exchange classes that talk to the service, so
  JupyterLab's Assignments tab and the ``nbgrader`` commands work unchanged.
"""
