"""Private synthetic data from noisy marginals: measure, fit a joint table, sample.

The "select-measure-generate" recipe behind most winning entries of the NIST synthetic-data
challenges (McKenna, Miklau & Sheldon 2021), in a small form for categorical tables with a small
domain:

1. :func:`marginal_table` counts a few chosen marginals (e.g. the pairs (age, education) and
   (education, income));
2. :func:`measure_marginals` adds noise of scale ``k / epsilon`` to them (discrete Laplace by
   default, safe from the floating-point attack of Mironov 2012): a person is in one cell of
   every marginal, so ``k`` marginals have L1 sensitivity ``k`` under add/remove;
3. :func:`fit_joint` finds a joint distribution over the whole domain that matches the (cleaned)
   noisy marginals, by iterative proportional fitting from the uniform table (the maximum-entropy
   fit when the marginals are consistent);
4. :func:`sample_records` draws a synthetic table from it; :func:`synthesize` does all four.

What the synthetic table preserves is what was measured (and what follows from it); every other
dependence (a pair that was not measured, a three-way interaction) is set to the
maximum-entropy guess, i.e. mostly erased.

References
----------
.. [MMS21] R. McKenna, G. Miklau, D. Sheldon, "Winning the NIST Contest: A scalable and general
   approach to differentially private synthetic data", Journal of Privacy and Confidentiality
   11(3), 2021.
.. [DS40] W. E. Deming, F. F. Stephan, "On a least squares adjustment of a sampled frequency
   table when the expected marginal totals are known", Ann. Math. Statist. 11(4), 1940 (IPF).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_data,
    check_epsilon,
    check_integer,
    check_representable,
)
from dplib.mechanisms._count_noise import add_count_noise, check_count_mechanism, noise_scale

__all__ = ["marginal_table", "measure_marginals", "fit_joint", "sample_records", "synthesize"]

#: Largest joint domain (number of cells) fit_joint builds.
_MAX_DOMAIN = 2**22
#: Largest work of fit_joint: iterations x measured marginals x joint cells (each a few passes
#: over the joint table; measured: 2e9 in about 2 s on one core).
_MAX_FIT_WORK = 2 * 10**9
#: Largest number of entries (rows x attributes) of a sampled table: 256 MB of int64.
_MAX_SAMPLED = 2**25


def _check_records(records: Any, domain: Sequence[int]) -> tuple[np.ndarray, tuple[int, ...]]:
    if not isinstance(domain, Sequence) or isinstance(domain, str | bytes) or not domain:
        raise TypeError("domain must be a non-empty sequence of attribute sizes")
    dom = tuple(check_integer(s, "domain size", minimum=1) for s in domain)
    rec = check_data(records, "records", ndim=2, allow_empty=True)  # 0 people is data
    if rec.shape[1] != len(dom):
        raise ValueError(f"records must have one column per attribute ({len(dom)}), got shape {rec.shape}")
    if np.any(rec != np.round(rec)) or np.any(rec < 0) or np.any(rec >= np.array(dom)):
        raise ValueError("records must hold integer codes, column j in [0, domain[j])")
    return rec.astype(np.int64), dom


def _check_marginals(marginals: Any, d: int) -> list[tuple[int, ...]]:
    if not isinstance(marginals, Sequence) or not marginals:
        raise ValueError("marginals must be a non-empty list of tuples of attribute indices")
    out = []
    for m in marginals:
        attrs = tuple(check_integer(a, "attribute index", minimum=0) for a in m)
        if not attrs or len(set(attrs)) != len(attrs) or max(attrs) >= d:
            raise ValueError(f"each marginal must be distinct attribute indices in [0, {d}), got {m!r}")
        out.append(attrs)
    return out


def marginal_table(records: Any, domain: Sequence[int], attrs: Sequence[int]) -> np.ndarray:
    """Contingency table of the attributes ``attrs``: shape ``(domain[a] for a in attrs)``.

    ``records`` is an integer array of shape ``(n, d)`` (one row per person, column ``j`` coded
    in ``[0, domain[j])``); ``n = 0`` rows gives a table of zeros.
    """
    rec, dom = _check_records(records, domain)
    (attrs_t,) = _check_marginals([attrs], len(dom))
    shape = tuple(dom[a] for a in attrs_t)
    flat = np.ravel_multi_index(tuple(rec[:, a] for a in attrs_t), shape) if rec.size else np.zeros(0, int)
    return np.bincount(flat, minlength=math.prod(shape)).reshape(shape).astype(float)


def measure_marginals(
    records: Any,
    domain: Sequence[int],
    marginals: Sequence[Sequence[int]],
    epsilon: float,
    *,
    mechanism: str = "discrete_laplace",
    rng: Any = None,
) -> dict[tuple[int, ...], np.ndarray]:
    """Noisy marginals: noise of scale ``k / epsilon`` on every cell of each of the ``k`` marginals.

    Returns a dict mapping each marginal's attribute tuple to its noisy table (floats). Under
    add/remove one person changes one cell of each marginal by 1: L1 sensitivity ``k``, so the
    release is epsilon-DP (Dwork & Roth 2014, Theorem 3.6; Ghosh, Roughgarden & Sundararajan
    2009 for the discrete Laplace).

    ``mechanism="discrete_laplace"`` (default) adds discrete Laplace noise: every noisy cell is
    an integer whatever the data, so no output rules a neighbouring table out (the
    floating-point attack of Mironov 2012 does not apply), with variance
    ``1 / (2 sinh(epsilon / (2 k))**2)`` per cell, slightly below the textbook
    ``2 (k / epsilon)**2``. ``mechanism="laplace"`` is the textbook ``Lap(k / epsilon)`` on doubles,
    for teaching only. Raises ``ValueError``/``TypeError`` for a bad epsilon (also one so small
    that ``k / epsilon > 2**40`` for the default mechanism), malformed records, marginals or
    mechanism (before any randomness is drawn).
    """
    method = check_count_mechanism(mechanism)
    rec, dom = _check_records(records, domain)
    margs = _check_marginals(marginals, len(dom))
    eps = check_epsilon(epsilon)
    if method == "discrete_laplace":
        scale = noise_scale(len(margs), eps)
    else:
        scale = check_representable(len(margs) / eps, "the noise scale k / epsilon", eps)
    tables = [marginal_table(rec, dom, attrs) for attrs in margs]
    generator = as_generator(rng)
    return {
        attrs: add_count_noise(table, scale, method, generator, eps)
        for attrs, table in zip(margs, tables, strict=True)
    }


def fit_joint(
    measured: dict[tuple[int, ...], Any], domain: Sequence[int], *, iterations: int = 100
) -> np.ndarray:
    """A joint distribution over the domain that matches the noisy marginals (IPF).

    Each noisy marginal is first cleaned (negatives set to 0, then normalised to a probability
    table; an all-zero table becomes uniform). Starting from the uniform joint, every sweep
    rescales the joint so that its marginal on each measured set of attributes equals the
    cleaned one ([DS40]). With consistent marginals this converges to the maximum-entropy joint
    with those marginals; noisy marginals disagree a little on shared attributes, and the sweeps
    then settle on a compromise. Post-processing only.

    Raises
    ------
    ValueError, TypeError
        For a malformed domain, tables or ``iterations``, a joint domain beyond 2**22 cells, or
        ``iterations * len(measured) * cells > 2e9`` (the work of the sweeps).

    Returns
    -------
    numpy.ndarray
        Shape ``tuple(domain)``, entries ``>= 0`` summing to 1.
    """
    if not isinstance(domain, Sequence) or not domain:
        raise TypeError("domain must be a non-empty sequence of attribute sizes")
    dom = tuple(check_integer(s, "domain size", minimum=1) for s in domain)
    if math.prod(dom) > _MAX_DOMAIN:
        raise ValueError(f"the joint domain must have at most 2**22 cells, got {math.prod(dom)}")
    its = check_integer(iterations, "iterations", minimum=1)
    if not isinstance(measured, dict) or not measured:
        raise ValueError("measured must be a non-empty dict {attribute tuple: noisy table}")
    if its * len(measured) * math.prod(dom) > _MAX_FIT_WORK:
        raise ValueError(
            f"iterations * len(measured) * (cells of the joint domain) must be at most "
            f"{_MAX_FIT_WORK:.0e}, got iterations={its}, {len(measured)} marginals and "
            f"{math.prod(dom)} cells"
        )
    targets = []
    for attrs, table in measured.items():
        (attrs_t,) = _check_marginals([attrs], len(dom))
        t = check_data(table, "measured table")
        if t.shape != tuple(dom[a] for a in attrs_t):
            raise ValueError(f"the table of marginal {attrs_t} must have shape {tuple(dom[a] for a in attrs_t)}")
        t = np.maximum(t, 0.0)
        t = t / t.max() if t.max() > 0 else t  # a first rescaling, so that the sum cannot overflow
        t = t / t.sum() if t.sum() > 0 else np.full(t.shape, 1.0 / t.size)
        targets.append((attrs_t, t))
    joint = np.full(dom, 1.0 / math.prod(dom))
    for _ in range(its):
        for attrs, target in targets:
            others = tuple(i for i in range(len(dom)) if i not in attrs)
            current = joint.sum(axis=others)  # axes in increasing order of attribute
            order = np.argsort(attrs)
            target_sorted = np.transpose(target, order)
            ratio = np.divide(target_sorted, current, out=np.zeros_like(current), where=current > 0)
            shape = [dom[i] if i in attrs else 1 for i in range(len(dom))]
            joint = joint * ratio.reshape(shape)
    return joint / joint.sum()


def sample_records(joint: Any, n: int, *, rng: Any = None) -> np.ndarray:
    """``n`` i.i.d. records from a joint probability table: integer array of shape ``(n, d)``.

    ``n * d`` is at most 2**25 (ValueError beyond: the table alone would take 256 MB).
    """
    p = check_data(joint, "joint")
    if np.any(p < 0) or not math.isclose(float(p.sum()), 1.0, rel_tol=1e-9):
        raise ValueError("joint must be a table of probabilities >= 0 summing to 1")
    count = check_integer(n, "n", minimum=0)
    if count * max(p.ndim, 1) > _MAX_SAMPLED:
        raise ValueError(f"n * (number of attributes) must be at most 2**25, got n={n!r} and {p.ndim} attributes")
    generator = as_generator(rng)
    flat = generator.choice(p.size, size=count, p=p.ravel() / p.sum())
    return np.stack(np.unravel_index(flat, p.shape), axis=1).astype(np.int64)


def synthesize(
    records: Any,
    domain: Sequence[int],
    marginals: Sequence[Sequence[int]],
    epsilon: float,
    *,
    n: int | None = None,
    rng: Any = None,
) -> np.ndarray:
    """Measure the marginals with budget ``epsilon``, fit a joint table, sample a synthetic table.

    ``n`` synthetic rows; by default the noisy total of the first marginal, rounded (no extra
    privacy cost). The synthetic table is epsilon-DP under add/remove one person (everything
    after :func:`measure_marginals` is post-processing).
    """
    generator = as_generator(rng)
    measured = measure_marginals(records, domain, marginals, epsilon, rng=generator)
    joint = fit_joint(measured, domain)
    if n is None:
        n = max(int(round(float(next(iter(measured.values())).sum()))), 0)
    return sample_records(joint, n, rng=generator)
