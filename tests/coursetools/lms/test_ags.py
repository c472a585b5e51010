"""The grade service as the tool speaks it, against the test LMS of tests/support/lti_platform.py
(built on joserfc, not on the tool's PyJWT; it checks the standard's messages and refuses the
rest): a column per assignment made once and found again, scores that land as the platform reads
them, one token per scope set until it expires, and the two kinds of trouble kept apart."""

from __future__ import annotations

import logging

import pytest
from lti_platform import LEARNER, Platform

from coursetools.lms import keys
from coursetools.lms.ags import (
    LINEITEM_SCOPE,
    SCORE_SCOPE,
    GradeService,
    PlatformRefused,
    PlatformUnavailable,
    scores_url,
)


@pytest.fixture(scope="module")
def tool_key(tmp_path_factory):
    return keys.load_or_create(tmp_path_factory.mktemp("key") / "tool.pem")


def _platform(tool_key, **kw) -> Platform:
    lms = Platform(
        client_id="tool-1", deployment_id="d1", tool_login_url="http://127.0.0.1:9/login",
        tool_redirect_uris=["http://127.0.0.1:9/callback"], tool_jwks=tool_key.jwks(), **kw,
    ).start()  # fmt: skip
    lms.add_context("ctx", label="DP", title="Differential privacy")
    lms.add_user("u-ada", roles=[LEARNER], name="Ada", email="ada@example.org", contexts=["ctx"])
    return lms


@pytest.fixture
def lms(tool_key):
    platform = _platform(tool_key)
    yield platform
    platform.stop()


def _service(lms, tool_key) -> GradeService:
    return GradeService("tool-1", lms.token_url, tool_key)


def test_a_column_is_made_once_and_found_again_by_a_tool_that_forgot_it(lms, tool_key):
    first = _service(lms, tool_key).line_item(
        lms.lineitems_url("ctx"), resource_id="pilot", label="Pilot", score_maximum=8.0
    )
    again = _service(lms, tool_key).line_item(
        lms.lineitems_url("ctx"), resource_id="pilot", label="Pilot", score_maximum=8.0
    )
    assert first == again
    (item,) = lms.lineitems("ctx")
    assert (item["resourceId"], item["label"], item["scoreMaximum"]) == ("pilot", "Pilot", 8.0)
    other = _service(lms, tool_key).line_item(
        lms.lineitems_url("ctx"), resource_id="02_laplace", label="Laplace", score_maximum=20.0
    )
    assert other != first and len(lms.lineitems("ctx")) == 2


def test_a_score_lands_as_the_platform_reads_it_with_one_token_per_scope_set(lms, tool_key):
    service = _service(lms, tool_key)
    url = service.line_item(
        lms.lineitems_url("ctx"), resource_id="pilot", label="Pilot", score_maximum=8.0
    )
    for second in range(5):
        service.post_score(
            url, user_id="u-ada", score_given=float(second), score_maximum=8.0, activity="Submitted",
            grading="PendingManual", timestamp=f"2026-12-05T10:00:0{second}.000+00:00",
        )  # fmt: skip
    accepted = lms.scores("ctx", accepted_only=True)
    assert [s["score"]["scoreGiven"] for s in accepted] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert accepted[-1]["score"]["userId"] == "u-ada" and accepted[-1]["lineitem"] == url
    assert lms.tokens_issued == service.tokens_requested == 2  # lineitem scope, score scope


def test_an_expired_token_is_replaced_once_and_the_call_goes_through(lms, tool_key):
    service = _service(lms, tool_key)
    url = service.line_item(
        lms.lineitems_url("ctx"), resource_id="pilot", label="P", score_maximum=1.0
    )
    for second in (0, 1):
        if second:
            lms.expire_tokens()  # the platform forgets the tokens the tool still holds
        service.post_score(
            url, user_id="u-ada", score_given=1.0, score_maximum=1.0, activity="Submitted",
            grading="FullyGraded", timestamp=f"2026-12-05T10:00:0{second}.000+00:00",
        )  # fmt: skip
    assert len(lms.scores("ctx", accepted_only=True)) == 2
    assert [status for _, _, status in lms.requests].count(
        401
    ) == 1  # refused once, then a new token
    assert service.tokens_requested == 3


def test_scores_go_beside_a_line_item_whose_url_has_a_query(tool_key):
    """Moodle's line items are ``.../lineitem?type_id=1``: the scores are ``.../lineitem/scores?type_id=1``."""
    assert scores_url("https://m/lineitem?type_id=1") == "https://m/lineitem/scores?type_id=1"
    lms = _platform(tool_key, lineitem_query=True)
    try:
        service = _service(lms, tool_key)
        url = service.line_item(
            lms.lineitems_url("ctx"), resource_id="pilot", label="P", score_maximum=1.0
        )
        assert "?" in url
        service.post_score(
            url, user_id="u-ada", score_given=1.0, score_maximum=1.0, activity="Submitted",
            grading="FullyGraded", timestamp="2026-12-05T10:00:00.000+00:00",
        )  # fmt: skip
        assert len(lms.scores("ctx", accepted_only=True)) == 1
    finally:
        lms.stop()


@pytest.mark.parametrize("mode", ["503", "refuse"])
def test_a_platform_that_does_not_answer_is_unavailable_not_a_refusal(lms, tool_key, mode):
    service = _service(lms, tool_key)
    lms.outage(True, mode=mode)
    with pytest.raises(PlatformUnavailable):
        service.line_item(
            lms.lineitems_url("ctx"), resource_id="pilot", label="P", score_maximum=1.0
        )
    lms.outage(False)
    assert service.line_item(
        lms.lineitems_url("ctx"), resource_id="pilot", label="P", score_maximum=1.0
    )


def test_a_refusal_carries_the_platforms_reason(lms, tool_key):
    service = _service(lms, tool_key)
    url = service.line_item(
        lms.lineitems_url("ctx"), resource_id="pilot", label="P", score_maximum=1.0
    )
    with pytest.raises(PlatformRefused) as refused:
        service.post_score(
            url, user_id="nobody-here", score_given=1.0, score_maximum=1.0, activity="Submitted",
            grading="FullyGraded", timestamp="2026-12-05T10:00:00.000+00:00",
        )  # fmt: skip
    assert refused.value.status == 400 and "nobody-here" in str(refused.value)


def test_a_tool_signing_with_a_key_the_platform_does_not_know_gets_no_token(lms, tmp_path):
    stranger = GradeService("tool-1", lms.token_url, keys.load_or_create(tmp_path / "other.pem"))
    with pytest.raises(PlatformRefused) as refused:
        stranger.token(frozenset({SCORE_SCOPE}))
    assert refused.value.status == 400  # RFC 7523, 3.2: invalid_client
    assert lms.tokens_issued == 0


def test_no_token_is_written_to_a_log_or_shown_by_repr(lms, tool_key, caplog):
    caplog.set_level(logging.DEBUG)
    service = _service(lms, tool_key)
    url = service.line_item(
        lms.lineitems_url("ctx"), resource_id="pilot", label="P", score_maximum=1.0
    )
    service.post_score(
        url, user_id="u-ada", score_given=1.0, score_maximum=1.0, activity="Submitted",
        grading="FullyGraded", timestamp="2026-12-05T10:00:00.000+00:00",
    )  # fmt: skip
    tokens = [service.token(frozenset({s})) for s in (LINEITEM_SCOPE, SCORE_SCOPE)]  # cached
    assert service.tokens_requested == 2 and all(tokens)
    seen = caplog.text + repr(service) + str(vars(service).get("session"))
    assert not any(token in seen for token in tokens)
