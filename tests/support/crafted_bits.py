"""A numpy ``Generator`` over a crafted bit generator whose every word is the same (all ones).

numpy's ``Generator`` accepts any object with a ``capsule`` (a PyCapsule named "BitGenerator"
holding a ``bitgen_t``: a state pointer and four function pointers) and a ``lock``; this builds
one with ctypes whose functions return a constant word, and counts how often each is called.
All-ones words are the adversarial input of an MT19937 state whose first words are
0xFFFFFFFF made numpy's float ``Generator.geometric`` search loop, and so the old discrete
samplers, run forever.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

_U64 = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p)
_U32 = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p)
_DBL = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p)


class _BitGen(ctypes.Structure):  # numpy/random/bitgen.h: bitgen_t
    _fields_ = [
        ("state", ctypes.c_void_p),
        ("next_uint64", _U64),
        ("next_uint32", _U32),
        ("next_double", _DBL),
        ("next_raw", _U64),
    ]


class ConstantBits:
    """Bit generator returning ``word`` (64 bits; its low 32 bits as a 32-bit word) forever.

    ``calls`` counts the words handed out by kind ("uint64", "uint32", "double", "raw").
    """

    def __init__(self, word: int = 2**64 - 1) -> None:
        self.calls = {"uint64": 0, "uint32": 0, "double": 0, "raw": 0}
        low = word & 0xFFFFFFFF
        double = (word >> 11) * 2.0**-53

        def counted(kind, value):
            def fn(_state):
                self.calls[kind] += 1
                return value

            return fn

        self._fns = (
            _U64(counted("uint64", word)),
            _U32(counted("uint32", low)),
            _DBL(counted("double", double)),
            _U64(counted("raw", word)),
        )
        self._struct = _BitGen(None, *self._fns)
        new_capsule = ctypes.pythonapi.PyCapsule_New
        new_capsule.restype = ctypes.py_object
        new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        self._name = ctypes.c_char_p(b"BitGenerator")
        self.capsule = new_capsule(ctypes.addressof(self._struct), self._name, None)
        self.lock = threading.Lock()


def constant_generator(word: int = 2**64 - 1) -> tuple[np.random.Generator, ConstantBits]:
    """A ``numpy.random.Generator`` drawing from :class:`ConstantBits` (and the bits, to count)."""
    bits = ConstantBits(word)
    return np.random.Generator(bits), bits
