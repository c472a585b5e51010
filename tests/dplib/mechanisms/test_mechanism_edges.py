"""Module-level hostile-input sweep of dplib's mechanisms, confidence and sensitivity helpers.

Issue 9 promises that no input makes a public function hang, overflow, raise anything but a
``ValueError``/``TypeError`` or return NaN/inf silently, and that every refusal names the
argument. For each public function of ``dplib.mechanisms``, ``dplib.mechanisms.rr_confidence`` and
``dplib.queries.sensitivity`` we start from a valid call and replace *one* argument at a time by each
hostile value below; the call must then either return finite values within a second, or raise
``ValueError``/``TypeError`` whose message names the replaced argument.

The exact calls reported in the issue are pinned separately at the end of this file.
"""

from __future__ import annotations

import math
from typing import Any

import hostile
import numpy as np
import pytest

from dplib.mechanisms import (
    discrete_gaussian,
    discrete_laplace,
    exponential,
    gaussian,
    laplace,
    randomized_response,
    snapping,
)
from dplib.mechanisms import rr_confidence as confidence
from dplib.queries import sensitivity

HOSTILE: dict[str, Any] = {
    "zero": 0,
    "negative": -1,
    "nan": math.nan,
    "inf": math.inf,
    "-inf": -math.inf,
    "subnormal": 5e-324,
    "huge": 1e308,
    "2**70": 2**70,
    "string": "5",
    "none": None,
    "complex": 1 + 2j,
    "bool": True,
    "2-d": np.zeros((2, 2)),
    "empty": np.array([]),
}

# (function, valid keyword arguments). Every argument of every public function appears here.
CALLS: list[tuple[Any, dict[str, Any]]] = [
    (laplace.laplace_scale, {"sensitivity": 1.0, "epsilon": 1.0}),
    (laplace.laplace_mechanism, {"value": 3.0, "sensitivity": 1.0, "epsilon": 1.0, "rng": 0}),
    (laplace.laplace_tail_bound, {"sensitivity": 1.0, "epsilon": 1.0, "beta": 0.05}),
    (gaussian.gaussian_sigma, {"sensitivity": 1.0, "epsilon": 1.0, "delta": 1e-5, "method": "analytic"}),
    (gaussian.gaussian_delta, {"sigma": 4.0, "sensitivity": 1.0, "epsilon": 1.0}),
    (gaussian.gaussian_epsilon, {"sigma": 4.0, "sensitivity": 1.0, "delta": 1e-5}),
    (
        gaussian.gaussian_mechanism,
        {"value": 3.0, "sensitivity": 1.0, "epsilon": 1.0, "delta": 1e-5, "rng": 0, "mechanism": "discrete_gaussian"},
    ),
    (discrete_laplace.sample_discrete_laplace, {"scale": 2.0, "size": 3, "rng": 0}),
    (discrete_laplace.discrete_laplace_pmf, {"x": 1, "scale": 2.0}),
    (discrete_laplace.discrete_laplace_mechanism, {"value": 3, "sensitivity": 1, "epsilon": 1.0, "rng": 0}),
    (discrete_gaussian.sample_discrete_gaussian, {"sigma": 3.0, "size": 3, "rng": 0}),
    (discrete_gaussian.discrete_gaussian_pmf, {"x": 1, "sigma": 3.0}),
    (discrete_gaussian.discrete_gaussian_delta, {"sigma": 3.0, "sensitivity": 1, "epsilon": 1.0}),
    (discrete_gaussian.discrete_gaussian_sigma, {"sensitivity": 1, "epsilon": 1.0, "delta": 1e-5}),
    (
        discrete_gaussian.discrete_gaussian_mechanism,
        {"value": 3, "sensitivity": 1, "epsilon": 1.0, "delta": 1e-5, "rng": 0},
    ),
    (randomized_response.rr_truth_probability, {"epsilon": 1.0}),
    (randomized_response.rr_epsilon, {"truth_probability": 0.75}),
    (randomized_response.randomized_response, {"bits": [0, 1, 1], "epsilon": 1.0, "rng": 0}),
    (randomized_response.rr_estimate, {"reports": [0, 1, 1], "epsilon": 1.0}),
    (
        randomized_response.rr_variance,
        {"proportion": 0.3, "n": 100, "epsilon": 1.0, "include_sampling": True},
    ),
    (randomized_response.k_randomized_response, {"values": [0, 1, 2], "k": 3, "epsilon": 1.0, "rng": 0}),
    (randomized_response.k_rr_estimate, {"reports": [0, 1, 2, 2], "k": 3, "epsilon": 1.0}),
    (randomized_response.k_rr_variance, {"frequencies": [0.2, 0.3, 0.5], "n": 100, "k": 3, "epsilon": 1.0}),
    (
        exponential.exponential_mechanism_probabilities,
        {"scores": [0.0, 1.0, 2.0], "sensitivity": 1.0, "epsilon": 1.0, "monotonic": False},
    ),
    (
        exponential.exponential_mechanism,
        {"scores": [0.0, 1.0, 2.0], "sensitivity": 1.0, "epsilon": 1.0, "rng": 0, "monotonic": False, "size": 2},
    ),
    (
        exponential.report_noisy_max,
        {"scores": [0.0, 1.0, 2.0], "sensitivity": 1.0, "epsilon": 1.0, "noise": "gumbel", "rng": 0, "size": 2},
    ),
    (
        exponential.permute_and_flip,
        {"scores": [0.0, 1.0, 2.0], "sensitivity": 1.0, "epsilon": 1.0, "rng": 0, "size": 2},
    ),
    (snapping.snapping_scale, {"sensitivity": 1.0, "epsilon": 1.0, "bound": 16.0}),
    (snapping.sample_uniform_double, {"size": 3, "rng": 0}),
    (
        snapping.snapping_mechanism,
        {"value": 3.3, "sensitivity": 1.0, "epsilon": 1.0, "bound": 16.0, "rng": 0},
    ),
    (confidence.hoeffding_halfwidth, {"n": 100, "alpha": 0.05, "width": 1.0}),
    (confidence.rr_halfwidth, {"n": 100, "epsilon": 1.0, "alpha": 0.05}),
    (confidence.rr_confidence_interval, {"reports": [0, 1, 1], "epsilon": 1.0, "alpha": 0.05, "clip": True}),
    (confidence.rr_sample_size, {"halfwidth": 0.05, "epsilon": 1.0, "alpha": 0.05}),
    (
        confidence.k_rr_halfwidth,
        {"n": 100, "k": 3, "epsilon": 1.0, "alpha": 0.05, "simultaneous": True},
    ),
    (
        confidence.k_rr_confidence_intervals,
        {"reports": [0, 1, 2, 2], "k": 3, "epsilon": 1.0, "alpha": 0.05, "simultaneous": True, "clip": True},
    ),
    (sensitivity.check_neighbouring, {"neighbouring": "replace"}),
    (sensitivity.count_sensitivity, {"neighbouring": "replace"}),
    (sensitivity.histogram_sensitivity, {"neighbouring": "replace"}),
    (sensitivity.sum_sensitivity, {"lower": 0.0, "upper": 1.0, "neighbouring": "replace"}),
    (sensitivity.mean_sensitivity, {"lower": 0.0, "upper": 1.0, "n": 10, "neighbouring": "replace"}),
    (sensitivity.linear_query_sensitivity, {"queries": [[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]], "neighbouring": "replace"}),
]

#: CPU seconds allowed per call (tests/support/hostile.py). The contract is one second.
TIME_LIMIT = 10.0  # the slowest valid call (discrete_gaussian_sigma near delta = 1) takes 1.6 s here


def _finite(result: Any) -> bool:
    if isinstance(result, str):
        return True
    if isinstance(result, tuple | list):
        return all(_finite(item) for item in result)
    arr = np.asarray(result)
    if arr.dtype.kind in "biu":
        return True
    return arr.dtype.kind == "f" and bool(np.all(np.isfinite(arr)))


def _call_with_deadline(func: Any, kwargs: dict[str, Any]) -> tuple[Any, BaseException | None, float]:
    """``func(**kwargs)`` under ``tests/support/hostile.py``: (result, exception, CPU seconds)."""
    outcome = hostile.call_within(func, time_limit=TIME_LIMIT, **kwargs)
    return outcome.result, outcome.error, outcome.cpu_seconds


CASES = [
    pytest.param(func, kwargs, arg, value, id=f"{func.__name__}-{arg}-{label}")
    for func, kwargs in CALLS
    for arg in kwargs
    for label, value in HOSTILE.items()
]


def test_every_argument_of_every_public_function_is_listed() -> None:
    import inspect

    modules = (laplace, gaussian, discrete_laplace, discrete_gaussian, randomized_response,
               exponential, snapping, confidence, sensitivity)
    listed = {func: set(kwargs) for func, kwargs in CALLS}
    for module in modules:
        for name in module.__all__:
            func = getattr(module, name)
            if not callable(func) or not inspect.isfunction(func):
                continue
            assert func in listed, f"{module.__name__}.{name} is not swept"
            assert set(inspect.signature(func).parameters) == listed[func], name


@pytest.mark.parametrize(("func", "kwargs"), [pytest.param(f, k, id=f.__name__) for f, k in CALLS])
def test_baseline_call_is_valid(func: Any, kwargs: dict[str, Any]) -> None:
    result, exc, _ = _call_with_deadline(func, kwargs)
    assert exc is None, exc
    assert _finite(result)


@pytest.mark.parametrize(("func", "kwargs", "arg", "value"), CASES)
def test_hostile_argument(func: Any, kwargs: dict[str, Any], arg: str, value: Any) -> None:
    call = dict(kwargs, **{arg: value})
    result, exc, elapsed = _call_with_deadline(func, call)
    assert elapsed < TIME_LIMIT, f"took {elapsed:.2f} CPU seconds"
    if exc is None:
        assert _finite(result), f"returned a non-finite value {result!r}"
        return
    assert type(exc) in (ValueError, TypeError), f"raised {type(exc).__name__}: {exc}"
    # The message names the argument (``rng`` messages say "rng", ``size`` messages "size").
    assert arg in str(exc), f"message does not name {arg!r}: {exc}"


# --------------------------------------------------------------------------- the calls
# Each call below is one where an audit measured a hang, a wrong exception
# type, a silent NaN/inf or a message naming solver internals. Reference values were computed
# with mpmath at 60 significant digits (mp.mp.dps = 60) from the textbook formulas, with no
# rearrangement: p = e^eps / (1 + e^eps), Var = pi (1 - pi) / n + p (1 - p) / (n (2p - 1)^2)
# (Warner 1965); p = e^eps / (e^eps + k - 1), q = 1 / (e^eps + k - 1),
# Var_j = f_j (1 - f_j) / (n (p - q)^2) with f_j = q + pi_j (p - q) (Wang et al. 2017, Sec. 4.1).


def _quick(func: Any, *args: Any, **kwargs: Any) -> Any:
    """Call under the deadline; return the result or raise what the call raised."""
    result, exc, elapsed = _call_with_deadline(lambda: func(*args, **kwargs), {})
    assert elapsed < TIME_LIMIT, f"took {elapsed:.2f} CPU seconds"
    if exc is not None:
        raise exc
    return result


def test_gaussian_sigma_subnormal_delta_terminates_and_is_on_the_safe_side() -> None:
    # Used to loop for ever (a one-ulp nudge against subnormal rounding).
    sigma = _quick(gaussian.gaussian_sigma, 1, 1, 5e-324)
    assert math.isfinite(sigma)
    assert gaussian.gaussian_delta(sigma, 1, 1) <= 5e-324
    assert gaussian.gaussian_delta(sigma * (1 - 1e-9), 1, 1) > 0  # and it is the crossing


def test_gaussian_sigma_huge_epsilon_is_computed_not_a_solver_message() -> None:
    # Used to raise "The function value at x=-222.6 is NaN; solver cannot continue".
    # Reference: for eps -> inf the e^eps Phi(b) term of Balle & Wang (2018, Thm 8) is
    # 1/(sqrt(2 pi) sqrt(2 eps)) ~ 3e-155, negligible, so Phi(1/(2r) - eps r) = delta gives
    # r = (-z + sqrt(z^2 + 2 eps)) / (2 eps) = 1 / (z + sqrt(2) sqrt(eps + z^2 / 2)) with
    # z = Phi^-1(1e-5) = -4.264890793922825 (mpmath).
    z = -4.264890793922825

    def expected(eps: float) -> float:
        return 1.0 / (z + math.sqrt(2.0) * math.sqrt(eps + z * z / 2))

    for eps in (1e20, 1e100, 1e308):
        assert _quick(gaussian.gaussian_sigma, 1, eps, 1e-5) == pytest.approx(expected(eps), rel=1e-12)


def test_gaussian_delta_does_not_return_nan() -> None:
    # delta <= Phi(1/(2r) - eps r) = Phi(-1e308) = 0 in double precision.
    assert _quick(gaussian.gaussian_delta, 1e308, 1, 1) == 0.0
    assert _quick(gaussian.gaussian_delta, 4, 1, 1e308) == 0.0


def test_gaussian_epsilon_refuses_rather_than_returning_inf() -> None:
    with pytest.raises(ValueError, match="sigma / sensitivity must be large enough"):
        _quick(gaussian.gaussian_epsilon, 5e-324, 1, 1e-5)


def test_discrete_gaussian_sigma_huge_epsilon_is_refused_with_a_range() -> None:
    # Used to loop allocating until memory ran out.
    with pytest.raises(ValueError, match=r"epsilon must be <= 1e100"):
        _quick(discrete_gaussian.discrete_gaussian_sigma, 1, 1e308, 1e-5)
    with pytest.raises(ValueError, match=r"epsilon must be <= 1e100"):
        _quick(discrete_gaussian.discrete_gaussian_mechanism, 0, 1, 1e308, 1e-5)
    # ... and up to the limit the answer is still right: for eps -> inf, sigma -> 1/sqrt(2 eps)
    # (the threshold c = eps sigma^2 - 1/2 of CKS20 Theorem 7 reaches 0 there: below it the
    # lattice point 0 enters the sum and delta jumps to ~1).
    assert _quick(discrete_gaussian.discrete_gaussian_sigma, 1, 1e100, 1e-5) == pytest.approx(
        1 / math.sqrt(2e100), rel=1e-9
    )


def test_discrete_gaussian_delta_tiny_sigma_terminates() -> None:
    # Used to loop allocating until memory ran out. With sigma = 1e-300 the noise is the point
    # mass at 0 to double precision, so the mechanism is not private at all: delta = 1 (CKS20,
    # Theorem 7: p(0) (1 - e^(eps - L(0))) with L(0) = 1 / (2 sigma^2) = inf).
    assert _quick(discrete_gaussian.discrete_gaussian_delta, 1e-300, 1, 1.0) == 1.0
    # Huge epsilon: the threshold eps sigma^2 / Delta overflows; the tail beyond it is 0.
    assert _quick(discrete_gaussian.discrete_gaussian_delta, 3.0, 1, 1e308) == 0.0


def test_discrete_gaussian_delta_huge_sensitivity_is_bounded() -> None:
    # The direct sum used to start at floor(c) + 1 ~ -Delta/2 = -2**49 and double its chunks.
    assert 0.0 <= _quick(discrete_gaussian.discrete_gaussian_delta, 3.0, 2**50, 1.0) <= 1.0
    assert 0.0 <= _quick(discrete_gaussian.discrete_gaussian_delta, 2.0**40, 2**30, 1e4) <= 1.0


def test_discrete_gaussian_pmf_tiny_sigma_is_not_nan() -> None:
    # sigma^2 underflows to 0: x^2 / sigma^2 was 0/0 = NaN at x = 0. The mass is all at 0.
    assert _quick(discrete_gaussian.discrete_gaussian_pmf, [0, 1], 1e-300).tolist() == [1.0, 0.0]


def test_laplace_subnormal_epsilon_is_refused() -> None:
    # scale = 1 / 5e-324 overflowed to inf, and the "noisy" answer was inf.
    with pytest.raises(ValueError, match="sensitivity / epsilon must be a finite positive float"):
        _quick(laplace.laplace_mechanism, 0, 1, 5e-324)


def test_laplace_refuses_strings_and_complex() -> None:
    with pytest.raises(TypeError, match="value must be an array of numbers"):
        laplace.laplace_mechanism("5", 1, 1)
    with pytest.raises(TypeError, match="complex"):
        laplace.laplace_mechanism(np.array([1 + 1j]), 1, 1)


@pytest.mark.parametrize(
    ("func", "args"),
    [
        (gaussian.gaussian_mechanism, (1.0, 1.0, 1e-5)),
        (discrete_laplace.discrete_laplace_mechanism, (1, 1.0)),
        (discrete_gaussian.discrete_gaussian_mechanism, (1, 1.0, 1e-5)),
        (snapping.snapping_mechanism, (1.0, 1.0, 16.0)),
        (randomized_response.randomized_response, (1.0,)),
    ],
)
@pytest.mark.parametrize("value", ["5", ["1", "2"], 3 + 0j, [1 + 2j], None])
def test_every_mechanism_refuses_strings_complex_and_none(func: Any, args: tuple, value: Any) -> None:
    with pytest.raises(TypeError):
        func(value, *args, rng=0)


def test_rr_variance_tiny_epsilon_raises_value_error_not_zero_division() -> None:
    with pytest.raises(ValueError, match="epsilon is too small"):
        _quick(randomized_response.rr_variance, 0.3, 100, 1e-300)


def test_k_rr_estimate_huge_k_raises_value_error_not_overflow() -> None:
    with pytest.raises(ValueError, match=r"k must be an integer in \[2, 2\*\*24"):
        _quick(randomized_response.k_rr_estimate, [0, 1, 2, 2], 2**70, 1.0)


def test_rr_estimate_tiny_epsilon_is_finite() -> None:
    # 2p - 1 computed from p = 1/(1 + e^-1e-17) is exactly 0: the estimate was NaN.
    # Reference (mpmath, exact formula (mean - (1 - p)) / (2p - 1)): 0.5 at mean 1/2, and
    # 50000000000000000.5 at mean 3/4, eps = 1e-17; 5000000000.5 at eps = 1e-10.
    assert _quick(randomized_response.rr_estimate, [0, 1], 1e-17) == 0.5
    assert randomized_response.rr_estimate([1, 1, 1, 0], 1e-17) == pytest.approx(5e16 + 0.5, rel=1e-15)
    assert randomized_response.rr_estimate([1, 1, 1, 0], 1e-10) == pytest.approx(5e9 + 0.5, rel=1e-15)


@pytest.mark.parametrize(
    ("epsilon", "reference"),
    [  # mpmath, 60 digits, Warner's formula with pi = 0.3, n = 100
        (1e-15, 1.0e28),
        (1e-8, 100000000000000.00127),
        (1.0, 0.011306735942077923189),
        (30.0, 0.0021000000000009357623),
    ],
)
def test_rr_variance_is_accurate_for_small_epsilon(epsilon: float, reference: float) -> None:
    # 2p - 1 computed from p lost 27% at eps = 1e-15.
    assert randomized_response.rr_variance(0.3, 100, epsilon) == pytest.approx(reference, rel=1e-13)


@pytest.mark.parametrize(
    ("epsilon", "reference"),
    [  # mpmath, 60 digits, Wang et al. (2017) with pi = (0.2, 0.3, 0.5), n = 100, k = 3
        (1e-15, [1.9999999999999992e28, 1.9999999999999993e28, 1.9999999999999995e28]),
        (1e-8, [199999999200000.00393, 199999999300000.00393, 199999999500000.00333]),
    ],
)
def test_k_rr_variance_is_accurate_for_small_epsilon(epsilon: float, reference: list) -> None:
    # p - q computed by subtraction lost 44% at eps = 1e-15.
    np.testing.assert_allclose(
        randomized_response.k_rr_variance([0.2, 0.3, 0.5], 100, 3, epsilon), reference, rtol=1e-13
    )


def test_k_rr_estimate_is_accurate_for_small_epsilon() -> None:
    # mpmath: (f_j - q) / (p - q) for f = (1/4, 1/4, 1/2), k = 3, eps = 1e-12.
    estimate = randomized_response.k_rr_estimate([0, 1, 2, 2], 3, 1e-12)
    np.testing.assert_allclose(
        estimate, [-249999999999.625, -249999999999.625, 500000000000.25], rtol=1e-11
    )


@pytest.mark.parametrize("epsilon", [1e-12, 0.1, 1.0, 5.0, 10.0])
def test_rr_epsilon_inverts_rr_truth_probability(epsilon: float) -> None:
    # The logit of the double p is exact to a few ulps; p itself carries 1 - p only to an
    # absolute 2**-53, i.e. epsilon to 2**-53 / (p (1 - p)) (the honest domain stated in the
    # docstring), here below 2e-12 absolute.
    p = randomized_response.rr_truth_probability(epsilon)
    tolerance = 4 * 2.0**-53 / (p * (1 - p)) + 4 * 2.0**-53 * epsilon
    assert abs(randomized_response.rr_epsilon(p) - epsilon) <= tolerance


def test_rr_epsilon_beyond_the_double_range_says_so() -> None:
    # p = 1 / (1 + e^-40) rounds to 1.0: epsilon = inf, refused with the argument's name.
    assert randomized_response.rr_truth_probability(40.0) == 1.0
    with pytest.raises(ValueError, match="truth_probability must be a finite number > 0.5 and < 1"):
        randomized_response.rr_epsilon(randomized_response.rr_truth_probability(40.0))


@pytest.mark.parametrize(
    ("func", "kwargs", "flag"),
    [
        (randomized_response.rr_variance, {"proportion": 0.3, "n": 10, "epsilon": 1.0}, "include_sampling"),
        (confidence.rr_confidence_interval, {"reports": [0, 1], "epsilon": 1.0}, "clip"),
        (confidence.k_rr_confidence_intervals, {"reports": [0, 1], "k": 2, "epsilon": 1.0}, "clip"),
        (confidence.k_rr_confidence_intervals, {"reports": [0, 1], "k": 2, "epsilon": 1.0}, "simultaneous"),
        (confidence.k_rr_halfwidth, {"n": 10, "k": 2, "epsilon": 1.0}, "simultaneous"),
        (exponential.exponential_mechanism_probabilities, {"scores": [0, 1], "sensitivity": 1, "epsilon": 1}, "monotonic"),
    ],
)
@pytest.mark.parametrize("value", [1, 0, "yes", None, np.array([True])])
def test_flags_must_be_bools(func: Any, kwargs: dict, flag: str, value: Any) -> None:
    with pytest.raises(TypeError, match=f"{flag} must be True or False"):
        func(**kwargs, **{flag: value})


def test_sampler_sizes_are_bounded() -> None:
    # size = 2**40 would try to allocate terabytes; size = 2**70 raised numpy's own message.
    for sampler, args in (
        (discrete_laplace.sample_discrete_laplace, (2.0,)),
        (discrete_gaussian.sample_discrete_gaussian, (2.0,)),
        (snapping.sample_uniform_double, ()),
    ):
        with pytest.raises(ValueError, match=r"size must ask for at most 2\*\*27"):
            sampler(*args, size=(2**20, 2**20), rng=0)
    with pytest.raises(ValueError, match=r"size must be at most 2\*\*27"):
        exponential.report_noisy_max([0.0, 1.0], 1.0, 1.0, size=2**40, rng=0)


def test_rr_sample_size_refuses_sizes_beyond_2_53() -> None:
    with pytest.raises(ValueError, match=r"n <= 2\*\*53"):
        _quick(confidence.rr_sample_size, 1e-10, 1e-10)
    assert _quick(confidence.rr_sample_size, 1e308, 1.0) == 1
