"""Reversing unsalted hashes of identifiers drawn from a small space (the NYC taxi release).

In 2014 New York City released 173 million taxi trips of 2013 with each cab's *medallion* number
and each driver's *hack licence* number replaced by its MD5 hash. A hash cannot be inverted in
general, but these identifiers have a fixed, small format: hashing every possible value once
builds a look-up table from digest back to identifier, and V. Pandurangan reversed the whole data
set in about an hour. Salting or keyed hashing stops this look-up, but the pseudonym still links
all the trips of one cab, so one known trip (a photograph of a celebrity stepping into a cab)
still finds the rest.

References
----------
V. Pandurangan, "On Taxis and Rainbows: Lessons from NYC's improperly anonymized taxi logs",
2014. R. Rivest, "The MD5 Message-Digest Algorithm", RFC 1321, 1992 (test suite, Appendix A.5).
"""

from __future__ import annotations

import hashlib
import itertools
import string
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["medallion_space", "reverse_hashes"]


def medallion_space() -> list[str]:
    """Every medallion number of the two formats used in the course's taxi example.

    Returns
    -------
    list of str
        ``digit letter digit digit`` (``"5J72"``: 26,000 values) followed by
        ``letter letter digit digit digit`` (``"AB123"``: 676,000 values), letters ``A``-``Z``
        in upper case. (Real NYC medallions used these and a three-letter format.)
    """
    d, u = string.digits, string.ascii_uppercase
    first = ["".join(t) for t in itertools.product(d, u, d, d)]
    second = ["".join(t) for t in itertools.product(u, u, d, d, d)]
    return first + second


def reverse_hashes(
    digests: Sequence[str] | np.ndarray, candidates: Iterable[str], *, algorithm: str = "md5"
) -> list[str | None]:
    """Map each hex digest back to the candidate identifier that hashes to it.

    Parameters
    ----------
    digests : sequence of str
        Hexadecimal digests (either case), in any order, repeats allowed.
    candidates : iterable of str
        Every possible identifier (encoded as UTF-8 before hashing).
    algorithm : str, default "md5"
        A name accepted by :func:`hashlib.new` ("md5", "sha1", "sha256", ...).

    Returns
    -------
    list of str or None
        For each digest, in order, the candidate with that hash, or ``None`` if no candidate has it.

    Raises
    ------
    ValueError
        If ``digests`` is empty or ``algorithm`` is not a hash function hashlib knows.
    TypeError
        If a digest is not a string, ``candidates`` is a single string (whose letters would be
        taken as the candidates) or not iterable, or a candidate is not a string.
    """
    if isinstance(candidates, str | bytes):
        raise TypeError(
            "candidates must be an iterable of strings (a list of identifiers), got a single "
            f"{type(candidates).__name__}: wrap one identifier in a list"
        )
    if not isinstance(candidates, Iterable):
        raise TypeError(f"candidates must be an iterable of strings, got {type(candidates).__name__}")
    digests = list(np.asarray(digests, dtype=object).ravel()) if len(digests) else []
    if not digests:
        raise ValueError("digests must not be empty")
    if not all(isinstance(x, str) for x in digests):
        raise TypeError("every digest must be a hexadecimal string")
    if algorithm not in hashlib.algorithms_available:
        raise ValueError(f"algorithm must be a hash function known to hashlib, got {algorithm!r}")
    wanted = {x.lower() for x in digests}
    table = {}
    for c in candidates:
        if not isinstance(c, str):
            raise TypeError(f"candidates must be strings (identifiers), got {type(c).__name__} {c!r}")
        h = hashlib.new(algorithm, c.encode()).hexdigest()
        if h in wanted:
            table[h] = c
    return [table.get(x.lower()) for x in digests]
