"""Tests of dplib.attacks.hashed_ids: reversing unsalted hashes of identifiers from a small space.

Reference figures: MD5 digests from RFC 1321's test suite (MD5("abc") =
900150983cd24fb0d6963f7d28e17f72) and MD5("0") = cfcd208495d565ef66e7dff9f98764da, the digest
that V. Pandurangan ("On Taxis and Rainbows", 2014) spotted in the 2013 NYC taxi release.
"""

import hashlib

import numpy as np
import pytest

from dplib.attacks.hashed_ids import medallion_space, reverse_hashes


def test_rfc1321_reference_digests():
    got = reverse_hashes(["900150983cd24fb0d6963f7d28e17f72", "cfcd208495d565ef66e7dff9f98764da"], ["abc", "0", "1"])
    assert got == ["abc", "0"]


def test_uppercase_digests_and_missing_values():
    got = reverse_hashes(np.array(["CFCD208495D565EF66E7DFF9F98764DA", "0" * 32]), ["0"])
    assert got == ["0", None]


def test_medallion_space_formats_and_size():
    space = medallion_space()
    assert len(space) == 10 * 26 * 100 + 26 * 26 * 1000
    assert len(set(space)) == len(space)
    assert "0A00" in space and "9Z99" in space and "AA000" in space and "ZZ999" in space
    assert "5j72" not in space and "A123" not in space


def test_reverse_medallions_keeps_order_and_duplicates():
    plain = ["7K38", "AB123", "7K38", "0A00", "ZZ999"]
    digests = [hashlib.md5(p.encode()).hexdigest() for p in plain] + [hashlib.md5(b"7k38").hexdigest()]
    assert reverse_hashes(digests, medallion_space()) == plain + [None]


def test_other_hash_functions():
    digest = hashlib.sha256(b"7K38").hexdigest()
    assert reverse_hashes([digest], ["7K38"], algorithm="sha256") == ["7K38"]
    with pytest.raises(ValueError, match="algorithm"):
        reverse_hashes([digest], ["7K38"], algorithm="rot13")


def test_bad_input_rejected():
    with pytest.raises(ValueError):
        reverse_hashes([], ["a"])
    with pytest.raises(TypeError):
        reverse_hashes([123], ["a"])
