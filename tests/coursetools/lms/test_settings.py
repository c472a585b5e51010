"""deploy/lti.toml is read and checked: the shipped file loads, and each kind of mistake an admin
makes is refused with a message naming the key (a hub must not start half-registered)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from coursetools.lms.settings import load_settings

ROOT = Path(__file__).resolve().parents[3]
GOOD = {
    "platform": {
        "issuer": "https://lms.example",
        "client_id": "tool-1",
        "deployment_ids": ["d1"],
        "authorize_url": "https://lms.example/auth",
        "token_url": "https://lms.example/token",
        "jwks_url": "https://lms.example/jwks",
    },
    "course": {"contexts": {"ctx-1": "dp-course"}},
}


def _write(tmp_path: Path, data: dict) -> Path:
    def toml(value) -> str:
        if isinstance(value, dict):
            return "{" + ", ".join(f'"{k}" = {toml(v)}' for k, v in value.items()) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(toml(v) for v in value) + "]"
        return f'"{value}"' if isinstance(value, str) else str(value).lower()

    lines = []
    for section, table in data.items():
        lines.append(f"[{section}]")
        lines += [f"{key} = {toml(value)}" for key, value in table.items()]
    path = tmp_path / "lti.toml"
    path.write_text("\n".join(lines) + "\n")
    assert tomllib.loads(path.read_text()) == data
    return path


def test_the_shipped_file_loads_and_relative_paths_go_to_the_state_folder(tmp_path):
    settings = load_settings(ROOT / "deploy" / "lti.toml", state=tmp_path)
    assert settings.issuer.startswith("https://") and settings.deployment_ids
    assert settings.key_file == tmp_path / "lti-tool-key.pem"
    assert settings.database == f"sqlite:///{tmp_path / 'lti.sqlite'}"
    assert settings.course_for("any LMS course") == "dp-course"  # "*" maps every context


def test_contexts_map_one_course_and_refuse_the_others(tmp_path):
    settings = load_settings(_write(tmp_path, GOOD))
    assert settings.course_for("ctx-1") == "dp-course"
    assert settings.course_for("ctx-2") is None


def _broken(section: str, key: str, value):
    data = {s: dict(t) for s, t in GOOD.items()}
    if value is None:
        data[section].pop(key)
    else:
        data[section][key] = value
    return data


@pytest.mark.parametrize(
    ("section", "key", "value", "named"),
    [
        ("platform", "issuer", "http://lms.example", "platform.issuer"),  # not https
        ("platform", "issuer", None, "platform.issuer"),
        ("platform", "token_url", "https://lms.example/t#frag", "platform.token_url"),
        ("platform", "jwks_url", "lms.example/jwks", "platform.jwks_url"),
        ("platform", "client_id", "  ", "platform.client_id"),
        ("platform", "deployment_ids", [], "platform.deployment_ids"),
        ("platform", "deployment_ids", "d1", "platform.deployment_ids"),
        ("course", "contexts", {"ctx": "../etc"}, "course.contexts"),
        ("course", "assignment_parameter", "Bad Name", "course.assignment_parameter"),
    ],
    ids=lambda v: str(v)[:24],
)
def test_each_mistake_is_refused_naming_the_key(tmp_path, section, key, value, named):
    with pytest.raises(ValueError, match=named.replace(".", r"\.")):
        load_settings(_write(tmp_path, _broken(section, key, value)))


def test_http_urls_only_when_asked_for_a_test_platform(tmp_path):
    data = _broken("platform", "issuer", "http://127.0.0.1:8000")
    with pytest.raises(ValueError, match="https"):
        load_settings(_write(tmp_path, data))
    assert load_settings(_write(tmp_path, data), allow_http=True).issuer == "http://127.0.0.1:8000"


def test_a_post_mode_that_does_not_exist_and_an_unreadable_file_are_refused(tmp_path):
    data = {**GOOD, "grades": {"post": "sometimes"}}
    with pytest.raises(ValueError, match="grades.post"):
        load_settings(_write(tmp_path, data))
    (tmp_path / "bad.toml").write_text("[platform\n")
    with pytest.raises(ValueError, match="cannot read"):
        load_settings(tmp_path / "bad.toml")
