"""The tool's signing key: what the LMS checks the course's grade-service requests with.

One job: keep the tool's RSA private key (made once, a PEM file only its owner reads), and give
its public half as a JSON Web Key Set, which the platform fetches from the tool's key-set URL
(``/hub/lti13/jwks``) to verify the JWT the tool signs for each access token (IMS Security
Framework 1.0, section 4.1, "Using JSON Web Tokens with OAuth 2.0 Client Credentials Grant";
RFC 7523). Signing and key conversion are PyJWT's; the key id is the key's RFC 7638 thumbprint,
so it names the key and nothing else, and a new key gets a new id.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

__all__ = ["ToolKey", "load_or_create"]

#: RSA modulus bits of a new key (RS256 asks for at least 2048; RFC 7518, section 3.3).
KEY_BITS = 2048
#: Seconds a client assertion is valid: long enough for one token request, no more.
ASSERTION_SECONDS = 300


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class ToolKey:
    """The tool's private key and its public JWK.

    Attributes
    ----------
    private_key : rsa.RSAPrivateKey
        The key that signs the tool's client assertions.
    kid : str
        The key id, RFC 7638's SHA-256 thumbprint of the public key (base64url).
    """

    private_key: rsa.RSAPrivateKey
    kid: str

    @classmethod
    def from_pem(cls, pem: bytes) -> ToolKey:
        key = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(key, rsa.RSAPrivateKey) or key.key_size < KEY_BITS:
            raise ValueError(
                f"the tool's key must be an RSA private key of at least {KEY_BITS} bits"
            )
        return cls(key, _thumbprint(key.public_key()))

    def public_jwk(self) -> dict[str, Any]:
        """The public key as a JWK (RFC 7517) with ``kid``, ``use: sig`` and ``alg: RS256``."""
        jwk = json.loads(RSAAlgorithm.to_jwk(self.private_key.public_key()))
        return {
            "kty": "RSA",
            "n": jwk["n"],
            "e": jwk["e"],
            "kid": self.kid,
            "use": "sig",
            "alg": "RS256",
        }

    def jwks(self) -> dict[str, list[dict[str, Any]]]:
        """The key set the platform fetches: ``{"keys": [public JWK]}``."""
        return {"keys": [self.public_jwk()]}

    def client_assertion(self, client_id: str, token_url: str, *, now: float | None = None) -> str:
        """The JWT the tool presents to the platform's token endpoint (RFC 7523, section 3).

        ``iss`` and ``sub`` are the tool's client id, ``aud`` the token URL, ``jti`` a fresh
        UUID (the platform refuses one it has seen), valid for :data:`ASSERTION_SECONDS`.
        """
        issued = int(time.time() if now is None else now)
        claims = {
            "iss": client_id,
            "sub": client_id,
            "aud": token_url,
            "iat": issued,
            "exp": issued + ASSERTION_SECONDS,
            "jti": uuid.uuid4().hex,
        }
        return jwt.encode(claims, self.private_key, algorithm="RS256", headers={"kid": self.kid})


def _thumbprint(public: rsa.RSAPublicKey) -> str:
    """RFC 7638, section 3: SHA-256 of the JSON of the required members, sorted, no spaces."""
    numbers = public.public_numbers()
    e = numbers.e.to_bytes((numbers.e.bit_length() + 7) // 8, "big")
    n = numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")
    canonical = json.dumps(
        {"e": _b64url(e), "kty": "RSA", "n": _b64url(n)}, separators=(",", ":"), sort_keys=True
    )
    return _b64url(hashlib.sha256(canonical.encode("ascii")).digest())


def load_or_create(path: Path) -> ToolKey:
    """The tool's key kept at ``path``: read it, or make one and write it (mode 0600).

    Two processes starting at once (the hub and the hand-in service) agree on one key: the file
    is created exclusively, and whoever loses the race reads the winner's.

    Raises
    ------
    ValueError
        If the file holds something else than an RSA private key of at least 2048 bits.
    """
    path = Path(path)
    try:
        return ToolKey.from_pem(path.read_bytes())
    except FileNotFoundError:
        pass
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    try:
        os.link(partial, path)  # fails if another process made it first: theirs is kept
    except FileExistsError:
        pass
    finally:
        partial.unlink()
    return ToolKey.from_pem(path.read_bytes())
