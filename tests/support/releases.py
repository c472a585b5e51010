"""dplib's releases, found rather than listed: every public callable with a privacy parameter and an rng.

Shared by ``tests/dplib/test_release_lattice.py`` (the floating-point lattice of each release) and
``tests/dplib/test_empty_data.py`` (each release on 0 and 1 records), so a new release is in both.
"""

from __future__ import annotations

import inspect

import dplib

PRIVACY_PARAMETERS = {"epsilon", "noise_multiplier", "rho"}
RANDOMNESS = {"rng", "random_state"}


def discovered_releases() -> list[str]:
    """Public callables with a privacy parameter and a source of randomness."""
    names = []
    for name in dplib.__all__:
        try:
            params = inspect.signature(getattr(dplib, name)).parameters
        except (TypeError, ValueError):
            continue
        if params.keys() & PRIVACY_PARAMETERS and params.keys() & RANDOMNESS:
            names.append(name)
    return names
