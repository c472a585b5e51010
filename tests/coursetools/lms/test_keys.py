"""The tool's signing key: its key set shows only the public half, its id is the RFC 7638
thumbprint (computed here by joserfc, not by the code under test), its client assertions verify
against that key set with another JOSE library, and two processes starting at once keep one key.
"""

from __future__ import annotations

import json
import stat
import threading
import time

import pytest
from joserfc import jwt as jose_jwt
from joserfc.jwk import KeySet, RSAKey

from coursetools.lms import keys


@pytest.fixture(scope="module")
def tool_key(tmp_path_factory):
    return keys.load_or_create(tmp_path_factory.mktemp("key") / "tool.pem")


def test_the_key_set_has_the_public_half_only_and_the_rfc_7638_id(tool_key):
    (jwk,) = tool_key.jwks()["keys"]
    assert set(jwk) == {"kty", "n", "e", "kid", "use", "alg"}  # no d, p, q, dp, dq, qi
    assert (jwk["kty"], jwk["use"], jwk["alg"]) == ("RSA", "sig", "RS256")
    independent = RSAKey.import_key({"kty": "RSA", "n": jwk["n"], "e": jwk["e"]})
    assert jwk["kid"] == independent.thumbprint()  # RFC 7638, SHA-256


def test_a_client_assertion_verifies_with_the_key_set_and_says_who_and_for_whom(tool_key):
    now = time.time()
    token = tool_key.client_assertion("tool-7", "https://lms.example/token", now=now)
    keyset = KeySet.import_key_set(tool_key.jwks())
    decoded = jose_jwt.decode(token, keyset, algorithms=["RS256"])
    assert decoded.header["kid"] == tool_key.kid and decoded.header["alg"] == "RS256"
    claims = decoded.claims
    assert claims["iss"] == claims["sub"] == "tool-7"
    assert claims["aud"] == "https://lms.example/token"
    assert claims["iat"] == int(now) and claims["exp"] == int(now) + keys.ASSERTION_SECONDS
    again = jose_jwt.decode(tool_key.client_assertion("tool-7", "x", now=now), keyset).claims
    assert again["jti"] != claims["jti"]  # a fresh id each time: the platform refuses a replay


def test_the_key_file_is_the_owners_alone_and_read_back_the_same(tmp_path):
    path = tmp_path / "state" / "tool.pem"
    first = keys.load_or_create(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert keys.load_or_create(path).kid == first.kid
    assert not [p for p in path.parent.iterdir() if p != path]  # no temporary file left


def test_two_processes_starting_at_once_agree_on_one_key(tmp_path):
    path = tmp_path / "tool.pem"
    kids: list[str] = []
    barrier = threading.Barrier(4)

    def start() -> None:
        barrier.wait()
        kids.append(keys.load_or_create(path).kid)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(kids)) == 1 and kids[0] == keys.load_or_create(path).kid


@pytest.mark.parametrize("content", [b"not a key", b""], ids=["text", "empty"])
def test_a_file_that_is_not_an_rsa_key_is_refused(tmp_path, content):
    path = tmp_path / "tool.pem"
    path.write_bytes(content)
    with pytest.raises(ValueError):
        keys.load_or_create(path)
    assert path.read_bytes() == content  # not replaced by a new key behind the admin's back


def test_a_small_rsa_key_is_refused(tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    small = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    pem = small.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(ValueError, match="2048"):
        keys.ToolKey.from_pem(pem)
    assert json.dumps(keys.load_or_create(tmp_path / "k.pem").jwks())  # a good one is JSON
