r"""Assertions on the whole distribution of samples: a cumulative distribution function
(:func:`assert_distribution`, Kolmogorov-Smirnov with the DKW-Massart bound) or the
probabilities of categories (:func:`assert_frequencies`, exact binomial tests)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from dplib._validation import check_data
from dplib.testing._common import (
    DEFAULT_FAILURE_PROB,
    check_failure_prob,
    check_samples,
    format_figure,
)

__all__ = ["assert_distribution", "assert_frequencies"]


def _evaluate_cdf(cdf: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
    try:
        values = np.asarray(cdf(x), dtype=float)
        if values.shape != x.shape:
            raise ValueError
    except Exception:  # not vectorized: call it value by value
        values = np.array([float(cdf(v)) for v in x])
    if not np.all(np.isfinite(values)) or np.any(values < -1e-12) or np.any(values > 1 + 1e-12):
        raise ValueError("cdf must return values in [0, 1]")
    return np.clip(values, 0.0, 1.0)


def assert_distribution(
    samples: Any,
    cdf: Callable[[Any], Any],
    *,
    failure_prob: float = DEFAULT_FAILURE_PROB,
) -> None:
    r"""Assert that i.i.d. ``samples`` follow the distribution with cumulative distribution
    function ``cdf`` (Kolmogorov-Smirnov test with the DKW-Massart tolerance).

    The statistic is :math:`D_n = \sup_x |F_n(x) - F(x)|` and the test fails when
    :math:`D_n > \sqrt{\ln(2/p)/(2n)}` (:func:`dkw_tolerance`).

    :math:`D_n` is computed exactly from the values of :math:`|F_n - F|` at each sample ``x`` and
    just below it (at ``numpy.nextafter(x, -inf)``); between samples :math:`F_n` is constant and
    ``F`` monotone, so these points attain the supremum for continuous **and** discrete ``F``
    (``scipy.stats.poisson(3).cdf``, ``scipy.stats.geom(0.5).cdf``, a step function on the
    integers, ...). Each value is a genuine evaluation, so :math:`D_n` never exceeds the true
    supremum and the false-failure guarantee holds for any ``F``: writing :math:`X = F^{-1}(U)`
    with uniform ``U``, :math:`\sup_x|F_n - F| \le \sup_u |G_n(u) - u|` for the uniform empirical
    cdf :math:`G_n`, to which Massart's inequality applies.

    Parameters
    ----------
    samples : array_like
        I.i.d. real draws (flattened), non-empty and finite.
    cdf : callable
        The expected cdf, e.g. ``scipy.stats.laplace(scale=2).cdf``. It is called with a float
        array (or, if that fails, value by value) and must return values in [0, 1].
    failure_prob : float
        ``p``, in (0, 1).

    Raises
    ------
    AssertionError
        When :math:`D_n` exceeds the tolerance.
    ValueError
        For empty samples, NaN, ``failure_prob`` outside (0, 1), or a cdf returning values
        outside [0, 1].
    TypeError
        If ``cdf`` is not callable.

    References
    ----------
    A. Dvoretzky, J. Kiefer and J. Wolfowitz, Ann. Math. Statist. 27(3):642-669, 1956.
    P. Massart, Annals of Probability 18(3):1269-1283, 1990, Theorem 1.

    Examples
    --------
    >>> from scipy import stats
    >>> rng = np.random.default_rng(0)
    >>> assert_distribution(rng.laplace(0.0, 2.0, 10_000), stats.laplace(scale=2.0).cdf)
    """
    p = check_failure_prob(failure_prob)
    if not callable(cdf):
        raise TypeError(f"cdf must be callable, got {type(cdf).__name__}")
    arr = np.sort(check_samples(samples))
    n = arr.size
    below = np.nextafter(arr, -np.inf)
    points = np.concatenate([arr, below])
    empirical = np.searchsorted(arr, points, side="right") / n
    expected = _evaluate_cdf(cdf, points)
    gaps = np.abs(empirical - expected)
    worst = int(np.argmax(gaps))
    distance = float(gaps[worst])
    tol = math.sqrt(math.log(2.0 / p) / (2.0 * n))
    if not distance <= tol:
        x = arr[worst % n]
        where = f"at x={format_figure(x)}" if worst < n else f"just below x={format_figure(x)}"
        raise AssertionError(
            f"the empirical cdf differs from the expected cdf by {format_figure(distance)} {where} "
            f"(empirical {format_figure(empirical[worst])}, expected {format_figure(expected[worst])}), more than "
            f"the tolerance {format_figure(tol)} (n={n}, Kolmogorov-Smirnov distance with the "
            f"Dvoretzky-Kiefer-Wolfowitz-Massart bound, failure probability {p:g})"
        )


def assert_frequencies(
    observed: Any,
    probabilities: Sequence[float] | Mapping[Any, float] | np.ndarray,
    *,
    counts: bool = False,
    failure_prob: float = DEFAULT_FAILURE_PROB,
) -> None:
    r"""Assert that categorical outcomes occur with the given ``probabilities``.

    Each category ``c`` is tested on its own with the exact two-sided binomial test: its count
    :math:`K_c \sim \mathrm{Bin}(n, π_c)` under the claim, with p-value
    :math:`\min(1, 2\min(P(K \le k_c), P(K \ge k_c)))` (scipy.stats.binom), and the assertion
    fails when some p-value is at most ``failure_prob / C`` (Bonferroni over the ``C``
    categories). A category with probability 0 that occurs fails at once.

    Parameters
    ----------
    observed : array_like or mapping
        With ``counts=False`` (default): the samples, each a category. With ``counts=True``: the
        count of each category, aligned with ``probabilities`` (a mapping with the same keys is
        accepted too).
    probabilities : sequence or mapping
        A sequence gives category ``i`` probability ``probabilities[i]`` (categories
        ``0, ..., C-1``); a mapping ``{category: probability}`` allows any hashable categories
        (strings, booleans, ...). Must sum to 1.
    counts : bool
        Whether ``observed`` holds counts rather than samples.
    failure_prob : float
        Probability in (0, 1) that a correct implementation is rejected.

    Raises
    ------
    AssertionError
        Naming the worst category: observed and expected counts, the acceptance range of counts.
    ValueError
        For probabilities that are not in [0, 1] or do not sum to 1, negative or non-integer
        counts, no observations, NaN, or ``failure_prob`` outside (0, 1).

    References
    ----------
    C. J. Clopper and E. S. Pearson (1934), Biometrika 26(4):404-413 (exact binomial tails);
    the doubled one-sided p-value is a valid two-sided p-value (P(p-value <= u) <= u).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> assert_frequencies(rng.random(10_000) < 0.75, {True: 0.75, False: 0.25})
    """
    p = check_failure_prob(failure_prob)
    if isinstance(probabilities, Mapping):
        categories = list(probabilities.keys())
        probs = check_data([probabilities[c] for c in categories], "probabilities")
    else:
        probs = check_data(probabilities, "probabilities").ravel()
        categories = list(range(probs.size))
    if (
        np.any(probs < 0)
        or np.any(probs > 1)
        or abs(float(probs.sum()) - 1.0) > 1e-9 * max(probs.size, 1e3)
    ):
        raise ValueError(
            f"probabilities must be in [0, 1] and sum to 1, got sum {float(probs.sum())!r}"
        )

    if counts:
        if isinstance(observed, Mapping):
            if set(observed) - set(categories):
                raise ValueError(
                    f"observed has categories not in probabilities: {sorted(map(str, set(observed) - set(categories)))}"
                )
            observed = [observed.get(c, 0) for c in categories]
        k = check_data(observed, "observed").ravel()
        if k.size != probs.size:
            raise ValueError(
                f"observed must have one count per category ({probs.size}), got {k.size}"
            )
        if np.any(k < 0) or np.any(k != np.round(k)):
            raise ValueError("observed counts must be non-negative integers")
        k = k.astype(np.int64)
    else:
        values = np.asarray(observed).ravel() if not isinstance(observed, Mapping) else None
        if values is None or values.size == 0:
            raise ValueError("observed must be a non-empty array of samples")
        if values.dtype.kind == "f" and not np.all(np.isfinite(values)):
            raise ValueError("observed must not contain NaN or infinite values")
        index = {c: i for i, c in enumerate(categories)}
        uniq, uniq_counts = np.unique(values, return_counts=True)
        k = np.zeros(probs.size, dtype=np.int64)
        for value, c in zip(uniq.tolist(), uniq_counts.tolist(), strict=True):
            if value not in index:
                raise AssertionError(
                    f"observed value {value!r} ({c} times) is not one of the categories "
                    f"{categories if len(categories) <= 10 else str(categories[:10])[:-1] + ', ...]'}, "
                    "so a correct implementation never produces it"
                )
            k[index[value]] += c
    n = int(k.sum())
    if n == 0:
        raise ValueError("observed must contain at least one observation")

    alpha = p / probs.size
    lower_tail = stats.binom.cdf(k, n, probs)
    upper_tail = stats.binom.sf(k - 1, n, probs)
    pvalues = np.minimum(1.0, 2.0 * np.minimum(lower_tail, upper_tail))
    worst = int(np.argmin(pvalues))
    if pvalues[worst] <= alpha:
        q = float(probs[worst])
        lo = int(stats.binom.ppf(alpha / 2, n, q))
        hi = int(stats.binom.isf(alpha / 2, n, q))
        raise AssertionError(
            f"category {categories[worst]!r}: observed count {int(k[worst])} (frequency "
            f"{format_figure(k[worst] / n)}) but expected probability {format_figure(q)} (expected count "
            f"{format_figure(n * q)}); a correct implementation gives a count in [{lo}, {hi}] "
            f"(p-value {pvalues[worst]:.3g}; n={n}, exact binomial test, Bonferroni over "
            f"{probs.size} categories, failure probability {p:g})"
        )
