"""A JupyterHub running the HTTP exchange (deploy/jupyterhub_config.py, COURSE_EXCHANGE=http),
with no single-user server: users act with their own hub tokens, as from pods on Kubernetes.

Shared by the exchange's service and client tests (one hub per test session and worker).
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from hub_harness import _free_port, running_hub
from pilot_course import pilot_course

MAX_MB = 1


def tar_gz(files: dict[str, bytes]) -> bytes:
    """A gzip'd tar of ``files`` (path -> bytes), built raw: no rule of the exchange is applied."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue())


class Exchange:
    """Calls to the service as one token."""

    def __init__(self, url: str) -> None:
        self.url = url

    def call(self, token: str | None, method: str, path: str, body: bytes | None = None, **query):
        address = self.url + "/api/courses/" + path
        if query:
            address += "?" + urllib.parse.urlencode(query)
        headers = {"Authorization": f"token {token}"} if token else {}
        if body is not None:
            headers["Content-Type"] = "application/gzip"  # as the client sends it
        request = urllib.request.Request(address, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                data = reply.read()
                kind = reply.headers.get("Content-Type", "")
                return reply.status, json.loads(data) if "json" in kind else data
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")


@pytest.fixture(scope="session")
def exchange_hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("exchange-hub")
    course = pilot_course(root / "course")
    port = _free_port()
    with running_hub(
        course,
        servers=False,
        COURSE_HANDIN="0",
        COURSE_EXCHANGE="http",
        EXCHANGE_PORT=str(port),
        EXCHANGE_VOLUME=str(root / "volume"),
        EXCHANGE_MAX_MB=str(MAX_MB),
    ) as running:
        running.exchange = Exchange(f"http://127.0.0.1:{port}/services/exchange")
        running.volume = root / "volume"
        running.course = course
        _wait_for(running)
        yield running


def _wait_for(hub, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status, _ = hub.exchange.call(hub.tokens["instructor"], "GET", "")
            if status == 200:
                return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.3)
    raise AssertionError("the exchange service never answered")
