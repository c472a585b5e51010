"""Privacy events: plain, immutable descriptions of what a release did.

An event says *which* mechanism ran with *which* parameters; it holds no privacy arithmetic. An
accountant (:class:`dplib.PrivacyAccountant`) interprets a sequence of events under whichever
composition theorem is tightest. This is the split of Google's dp_accounting (``dp_event.py`` vs
``privacy_accountant.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from dplib._validation import (
    check_delta,
    check_epsilon,
    check_integer,
    check_positive,
    check_probability,
)

#: Smallest noise multiplier of a Gaussian event: below it 1/σ² overflows in every accountant.
_MIN_NOISE_MULTIPLIER = 1e-100


def _check_noise_multiplier(value: object) -> float:
    sigma = check_positive(value, "noise_multiplier")
    if sigma < _MIN_NOISE_MULTIPLIER:
        raise ValueError(
            f"noise_multiplier must be >= {_MIN_NOISE_MULTIPLIER:g} (below it the privacy loss, "
            f"of order 1/noise_multiplier^2, overflows), got {value!r}"
        )
    return sigma

__all__ = [
    "PrivacyEvent",
    "PureDpEvent",
    "ApproxDpEvent",
    "GaussianEvent",
    "SampledGaussianEvent",
    "ZcdpEvent",
]


class PrivacyEvent:
    """Base class of the events an accountant understands."""

    __slots__ = ()


@dataclass(frozen=True)
class PureDpEvent(PrivacyEvent):
    """A release that is ``epsilon``-DP (Laplace, exponential, randomized response...)."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))


@dataclass(frozen=True)
class ApproxDpEvent(PrivacyEvent):
    """A release that is ``(epsilon, delta)``-DP for one fixed pair, with ``delta > 0``."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))


@dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """``count`` releases of the Gaussian mechanism with noise ``noise_multiplier * sensitivity``.

    Its whole privacy curve is known (Balle & Wang 2018; RDP ``alpha / (2 sigma^2)``, Mironov 2017),
    so an accountant can compose it far more tightly than through one (epsilon, delta) pair.
    """

    noise_multiplier: float
    count: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "noise_multiplier", _check_noise_multiplier(self.noise_multiplier)
        )
        object.__setattr__(self, "count", check_integer(self.count, "count", minimum=1))


@dataclass(frozen=True)
class SampledGaussianEvent(PrivacyEvent):
    """``count`` steps of the Poisson-subsampled Gaussian mechanism (one DP-SGD run).

    Each record is included independently with probability ``sampling_rate``; the sum over the
    sample gets Gaussian noise of ``noise_multiplier`` times the clipping norm (Abadi et al. 2016;
    Mironov, Talwar & Zhang 2019).
    """

    sampling_rate: float
    noise_multiplier: float
    count: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "sampling_rate",
            check_probability(self.sampling_rate, "sampling_rate", low_open=True),
        )
        object.__setattr__(
            self, "noise_multiplier", _check_noise_multiplier(self.noise_multiplier)
        )
        object.__setattr__(self, "count", check_integer(self.count, "count", minimum=1))


@dataclass(frozen=True)
class ZcdpEvent(PrivacyEvent):
    """A release that is ``rho``-zCDP (zero-concentrated DP, Bun & Steinke 2016, Definition 1.1).

    Its Renyi-DP curve is ``alpha rho`` at every order ``alpha > 1``, so an accountant composes it
    with Gaussian events by adding curves, and :class:`dplib.ZcdpFilter` holds a budget of it.
    """

    rho: float

    def __post_init__(self) -> None:
        value = check_positive(self.rho, "rho")
        if value > 1e300:
            raise ValueError(
                f"rho must be <= 1e300 (the privacy loss would overflow), got {self.rho!r}"
            )
        object.__setattr__(self, "rho", value)
