"""Notebook 01's hidden tests have power: plausible wrong answers score 0, correct alternatives pass.

Issue 31 (third edition): for every exercise of ``solutions/01_randomized_response``, three or
more plausible wrong answers (coins shared between respondents, a generator of its own, the bits
overwritten in place, e^epsilon overflowing at a large but valid epsilon, the coins' variance
without the sampling's, a rounding where the smallest n is asked, one report's ratio only, a NaN
design accepted, a product of probabilities that underflows, a clipped or wrongly scaled
estimate...) are handed in and graded by the trusted grader; each must score 0 on its exercise.
Two correct alternatives per exercise, written differently from the solution, must get full marks
under five seeds (``{burn}`` draws that many numbers from the generator first). The demonstrations
and figures (the ungraded code cells but the setup cell) are left out of the graded notebook.
Exercise 3 asks for the variance of the unbiased estimate under any design (truth t, forced "yes"
a, forced "no" b), judged against the law of one report enumerated in the test; probes: Warner's
symmetric variance with p = t + a (``help(dplib.rr_variance)``, the old answer), the design taken
as symmetric, the coins only, the variance of y_bar, t for t^2, the fair coins' estimate whatever
the design, n rounded, the standard deviation for the variance, a NaN design accepted.
Exercise 6 asks for the unbiased frequencies of a k-ary forced response (truth t, forced answer j
with probability a_j, unequal sectors), judged against the design's law solved in the test;
probes: k-RR's (f - q) / (p - q) with equal sectors (``help(dplib.k_rr_estimate)``, the old
answer), k-RR at the design's epsilon, not divided by t, divided by t + a_j, the sectors read as
conditional odds, clipped, unreported categories left out, no checks.
"""

from __future__ import annotations

from notebook_probes import Probe, install

NAME = "01_randomized_response"

#: answer cell grade_id -> test cell grade_id
EXERCISES = {
    "two_coin_response": "two_coin_response_tests",
    "posterior_yes": "posterior_yes_tests",
    "estimator_variance": "estimator_variance_tests",
    "forced_response": "forced_response_tests",
    "group_posterior": "group_posterior_tests",
    "krr_frequency_estimate": "krr_frequency_estimate_tests",
}
#: demonstrations and figures (cells with a grade_id but no points): not needed by any test
DROPPED = {
    "rr-04",
    "rr-10",
    "rr-15",
    "rr-23",
    "rr-28",
    "rr-30",
    "rr-35",
    "rr-37",
    "rr-45",
    "rr-54",
    "rr-59",
}

# ------------------------------------------------------------------------------ wrong answers


def _coins(body: str) -> str:
    return f"""
def two_coin_response(bits, rng):
{body}
"""


def _posterior(p: str, body: str = "prior * p / (prior * p + (1.0 - prior) * (1.0 - p))") -> str:
    return f"""
def posterior_yes(prior, epsilon):
    prior = np.asarray(prior, dtype=float)
    p = {p}
    posterior = {body}
    return float(posterior) if posterior.ndim == 0 else posterior
"""


_P = "1.0 / (1.0 + math.exp(-epsilon))"


_DESIGN_CHECK = """    if not all(math.isfinite(v) for v in (pi, t, a)) or not 0.0 <= pi <= 1.0:
        raise ValueError("bad pi or design")
    if not (0.0 < t <= 1.0 and a >= 0.0 and t + a <= 1.0 + 1e-12):
        raise ValueError("not a design")
    if int(n) != n or n < 1:
        raise ValueError("bad n")
"""


def _variance(
    variance: str,
    size: str = "max(1, math.ceil(design_variance(pi, 1, t, a) / target_sd ** 2))",
    check: str = _DESIGN_CHECK,
) -> str:
    return f"""
def design_variance(pi, n, truth_prob, yes_prob):
    t, a = truth_prob, yes_prob
{check}
    b = 1.0 - t - a
    r = a + t * pi
    return float({variance})


def respondents_needed(pi, truth_prob, yes_prob, target_sd):
    t, a = truth_prob, yes_prob
    if not (math.isfinite(target_sd) and target_sd > 0):
        raise ValueError("bad target")
    n = {size}
    while n > 1 and design_variance(pi, n - 1, t, a) <= target_sd ** 2:
        n -= 1
    while design_variance(pi, n, t, a) > target_sd ** 2:
        n += 1
    return int(n)
"""


_VAR = "r * (1.0 - r) / (n * t * t)"


def _forced(eps: str, check: bool = True, die: str = "rng.random(bits.shape)") -> str:
    guard = (
        """
    if not (math.isfinite(truth_prob) and math.isfinite(yes_prob)) or truth_prob < 0 or yes_prob < 0 \\
            or truth_prob + yes_prob > 1 + 1e-12:
        raise ValueError("not a design")"""
        if check
        else ""
    )
    return f"""
def forced_response(bits, truth_prob, yes_prob, rng):
    bits = np.asarray(bits).astype(int)
    roll = {die}
    forced_yes = (roll < truth_prob + yes_prob).astype(int)
    return np.where(roll < truth_prob, bits, forced_yes).astype(int)


def forced_response_epsilon(truth_prob, yes_prob):{guard}
    t, a = truth_prob, yes_prob
    b = 1.0 - t - a
    if t == 0:
        return 0.0
    if min(a, b) <= 1e-12:
        return math.inf
    return float({eps})
"""


def _group(body: str) -> str:
    return f"""
def group_posterior(prior, reports, epsilon):
    reports = np.asarray(reports, dtype=int).ravel()
    yes = int(reports.sum())
    no = reports.size - yes
{body}
"""


_FORCED_CHECK = """    if k < 2 or not (math.isfinite(t) and np.all(np.isfinite(a))):
        raise ValueError("bad design")
    if not (0.0 < t <= 1.0) or np.any(a < 0) or abs(t + a.sum() - 1.0) > 1e-9:
        raise ValueError("not a design")
    if reports.size == 0 or np.any((reports < 0) | (reports >= k)):
        raise ValueError("bad reports")"""


def _krr(
    estimate: str,
    check: str = _FORCED_CHECK,
    counts: str = "np.bincount(reports, minlength=k)",
) -> str:
    return f"""
def forced_frequency_estimate(reports, truth_prob, forced_probs):
    a = np.asarray(forced_probs, dtype=float).ravel()
    t = float(truth_prob)
    k = a.size
    reports = np.asarray(reports, dtype=int).ravel()
{check}
    f = {counts} / reports.size
    return {estimate}
"""


#: grade_id -> plausible wrong answers, each with what it gets wrong
WRONG = {
    "two_coin_response": [
        (
            "one pair of coins shared by all respondents",
            _coins(
                """    bits = np.asarray(bits).astype(int)
    first, second = rng.integers(0, 2), rng.integers(0, 2)
    return (bits if first else np.full(bits.shape, second)).astype(int)"""
            ),
        ),
        (
            "tails: always 'yes' (the second coin forgotten)",
            _coins(
                """    bits = np.asarray(bits).astype(int)
    first = rng.integers(0, 2, size=bits.shape)
    return np.where(first == 1, bits, 1).astype(int)"""
            ),
        ),
        (
            "a generator of its own, not rng",
            _coins(
                """    bits = np.asarray(bits).astype(int)
    own = np.random.default_rng()
    first = own.integers(0, 2, size=bits.shape) == 1
    return np.where(first, bits, own.integers(0, 2, size=bits.shape)).astype(int)"""
            ),
        ),
        (
            "the reports written into bits",
            _coins(
                """    bits = np.asarray(bits)
    if bits.dtype.kind not in "iu":
        bits = bits.astype(int)
    first = rng.integers(0, 2, size=bits.shape) == 1
    second = rng.integers(0, 2, size=bits.shape)
    bits[~first] = second[~first]
    return bits"""
            ),
        ),
    ],
    "posterior_yes": [
        (
            "e^epsilon overflows at epsilon = 800",
            _posterior("math.exp(epsilon) / (1.0 + math.exp(epsilon))"),
        ),
        ("prior times likelihood, not normalised", _posterior(_P, body="prior * p")),
        (
            "likelihoods swapped",
            _posterior(_P, body="prior * (1 - p) / (prior * (1 - p) + (1.0 - prior) * p)"),
        ),
        (
            "posterior odds returned, not a probability",
            _posterior(_P, body="prior * p / ((1.0 - prior) * (1.0 - p))"),
        ),
    ],
    "estimator_variance": [
        (
            "Warner's symmetric variance with p = t + a, read in help(dplib.rr_variance) (the old answer)",
            _variance("pi * (1 - pi) / n + (t + a) * (1 - t - a) / (n * (2 * (t + a) - 1) ** 2)"),
        ),
        (
            "the design taken as symmetric (a = b = (1 - t) / 2): right for the fair coins only",
            _variance("(0.5 - t / 2 + t * pi) * (0.5 - t / 2 + t * (1 - pi)) / (n * t * t)"),
        ),
        (
            "the coins only (sampling left out)",
            _variance("(pi * (t + a) * b + (1 - pi) * a * (t + b)) / (n * t * t)"),
        ),
        ("the variance of y_bar, not of the estimate", _variance("r * (1.0 - r) / n")),
        ("divided by t, not t^2", _variance("r * (1.0 - r) / (n * t)")),
        (
            "the fair coins' estimate 2 y_bar - 1/2 whatever the design",
            _variance("4.0 * r * (1.0 - r) / n"),
        ),
        (
            "n rounded, not the smallest sufficient",
            _variance(_VAR)
            .replace(
                """    while n > 1 and design_variance(pi, n - 1, t, a) <= target_sd ** 2:
        n -= 1
    while design_variance(pi, n, t, a) > target_sd ** 2:
        n += 1
""",
                "",
            )
            .replace("math.ceil(design_variance", "round(design_variance"),
        ),
        (
            "standard deviation and variance confused (target_sd compared with the variance)",
            _variance(_VAR).replace("target_sd ** 2", "target_sd"),
        ),
        (
            "a NaN or impossible design accepted (no checks)",
            _variance(_VAR, check="    pass"),
        ),
    ],
    "forced_response": [
        ("the 'yes' ratio only", _forced("math.log1p(t / a)")),
        ("a NaN design accepted", _forced("math.log1p(t / min(a, b))", check=False)),
        (
            "one die for everybody",
            _forced("math.log1p(t / min(a, b))", die="np.full(bits.shape, rng.random())"),
        ),
        ("both ratios added", _forced("math.log1p(t / a) + math.log1p(t / b)")),
        ("log2 for ln", _forced("math.log2(1 + t / min(a, b))")),
    ],
    "group_posterior": [
        (
            "likelihoods multiplied directly: p^1000 underflows",
            _group(
                """    p = 1.0 / (1.0 + math.exp(-epsilon))
    like_in = p ** yes * (1 - p) ** no
    like_out = (1 - p) ** yes * p ** no
    return float(prior * like_in / (prior * like_in + (1 - prior) * like_out))"""
            ),
        ),
        (
            "the 'no' answers ignored",
            _group(
                """    if prior in (0.0, 1.0):
        return float(prior)
    z = math.log(prior) - math.log1p(-prior) + epsilon * yes
    return float(1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z)))"""
            ),
        ),
        (
            "odds multiplied by e^(eps * balance): overflows",
            _group(
                """    odds = prior / (1 - prior) * math.exp(epsilon * (yes - no)) if prior < 1 else math.inf
    return float(odds / (1 + odds)) if math.isfinite(odds) else 1.0"""
            ),
        ),
        (
            "a certain prior not handled (log 0)",
            _group(
                """    z = math.log(prior) - math.log1p(-prior) + epsilon * (yes - no)
    return float(1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z)))"""
            ),
        ),
    ],
    "krr_frequency_estimate": [
        (
            "k-RR's (f - q) / (p - q) with equal sectors q = (1 - t) / k, p = t + q, read in "
            "help(dplib.k_rr_estimate) (the old answer)",
            _krr("(f - (1.0 - t) / k) / t"),
        ),
        (
            "k-RR's estimator at the design's epsilon ln(1 + t / min a)",
            _krr(
                "(f - 1.0 / (math.exp(math.log1p(t / a.min())) + k - 1)) / "
                "((math.exp(math.log1p(t / a.min())) - 1.0) / (math.exp(math.log1p(t / a.min())) + k - 1))"
            ),
        ),
        ("not divided by t", _krr("f - a")),
        ("divided by t + a_j, the chance a true j is reported j", _krr("(f - a) / (t + a)")),
        (
            "forced_probs read as the spinner's conditional odds: (f - (1 - t) a) / t",
            _krr(
                "(f - (1.0 - t) * a) / t",
                check=_FORCED_CHECK.replace("abs(t + a.sum() - 1.0) > 1e-9", "False"),
            ),
        ),
        ("clipped to [0, 1] (biased)", _krr("np.clip((f - a) / t, 0.0, 1.0)")),
        (
            "categories nobody reported left out (bincount without minlength)",
            _krr("(f - a[: f.size]) / t", counts="np.bincount(reports)"),
        ),
        ("a design that is not one accepted (no checks)", _krr("(f - a) / t", check="    pass")),
    ],
}

# ------------------------------------------------------------------------- correct alternatives

ALTERNATIVES = {
    "two_coin_response": [
        """
def two_coin_response(bits, rng):
    rng.random({burn})
    x = np.array(bits, dtype=int)                       # a copy
    truthful = rng.random(x.shape) < 0.5
    forced = (rng.random(x.shape) < 0.5).astype(int)
    out = x.copy()
    out[~truthful] = forced[~truthful]
    return out
""",
        """
def two_coin_response(bits, rng):
    rng.random({burn})
    x = np.asarray(bits).astype(np.int64)
    coins = rng.integers(0, 2, size=(2,) + x.shape)
    return np.where(coins[0] == 0, x, coins[1]).astype(np.int64)
""",
    ],
    "posterior_yes": [
        """
def posterior_yes(prior, epsilon):
    from scipy.special import expit, logit
    arr = np.asarray(prior, dtype=float)
    with np.errstate(divide="ignore"):
        post = expit(logit(arr) + epsilon)             # odds times e^epsilon
    return float(post) if np.ndim(post) == 0 else np.asarray(post, dtype=float)
""",
        """
def posterior_yes(prior, epsilon):
    q = math.exp(-epsilon)                             # (1 - p) / p
    pr = np.array(prior, dtype=float)
    out = pr / (pr + (1.0 - pr) * q)
    return out.item() if out.ndim == 0 else out
""",
    ],
    "estimator_variance": [
        """
def design_variance(pi, n, truth_prob, yes_prob):
    t, a = float(truth_prob), float(yes_prob)
    if math.isnan(pi) or math.isnan(t) or math.isnan(a):
        raise ValueError("nan")
    if pi < 0 or pi > 1 or n < 1 or t <= 0 or t > 1 or a < 0 or t + a > 1 + 1e-12:
        raise ValueError("out of range")
    b = max(0.0, 1.0 - t - a)
    # Total variance over the bit: E[Var(y | x)] + Var(E[y | x]), E[y | x] = a + t x.
    within = pi * (t + a) * b + (1 - pi) * a * (t + b)
    return float((within + t * t * pi * (1 - pi)) / (n * t * t))


def respondents_needed(pi, truth_prob, yes_prob, target_sd):
    if not (target_sd > 0) or math.isinf(target_sd):
        raise ValueError("target_sd must be a finite number > 0")
    lo, hi = 0, 1
    while design_variance(pi, hi, truth_prob, yes_prob) > target_sd ** 2:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if design_variance(pi, mid, truth_prob, yes_prob) > target_sd ** 2:
            lo = mid
        else:
            hi = mid
    return int(hi)
""",
        """
def design_variance(pi, n, truth_prob, yes_prob):
    values = np.array([pi, truth_prob, yes_prob], dtype=float)
    if not np.all(np.isfinite(values)):
        raise ValueError("finite numbers only")
    t, a = truth_prob, yes_prob
    if not (0 <= pi <= 1 and 0 < t <= 1 and 0 <= a and t + a <= 1 + 1e-12 and n >= 1):
        raise ValueError("outside the contract")
    # One report's first two moments: y = y^2, so Var(y) = E[y] - E[y]^2 = E[y] (1 - E[y]).
    mean = pi * (t + a) + (1 - pi) * a
    var_one = mean - mean * mean if mean < 0.5 else (1 - mean) * mean
    return float(var_one / t ** 2 / n)


def respondents_needed(pi, truth_prob, yes_prob, target_sd):
    if not (math.isfinite(target_sd) and target_sd > 0):
        raise ValueError("bad target_sd")
    one = design_variance(pi, 1, truth_prob, yes_prob)
    n = max(1, int(one / target_sd ** 2))
    while math.sqrt(design_variance(pi, n, truth_prob, yes_prob)) > target_sd:
        n += 1
    while n > 1 and math.sqrt(design_variance(pi, n - 1, truth_prob, yes_prob)) <= target_sd:
        n -= 1
    return n
""",
    ],
    "forced_response": [
        """
def forced_response(bits, truth_prob, yes_prob, rng):
    rng.random({burn})
    x = np.array(bits).astype(int)
    u = rng.random(x.shape)
    out = np.zeros(x.shape, dtype=int)
    honest = u < truth_prob
    out[honest] = x[honest]
    out[(u >= truth_prob) & (u < truth_prob + yes_prob)] = 1
    return out


def forced_response_epsilon(truth_prob, yes_prob):
    t, a = float(truth_prob), float(yes_prob)
    if math.isnan(t) or math.isnan(a) or math.isinf(t) or t < 0 or a < 0 or t + a > 1 + 1e-12:
        raise ValueError("not a forced-response design")
    b = max(0.0, 1.0 - t - a)
    if t == 0:
        return 0.0
    worst = 0.0
    for p1, p0 in ((t + a, a), (b, t + b)):            # P(report | x = 1), P(report | x = 0)
        small, big = min(p1, p0), max(p1, p0)
        if small <= 1e-12:
            return math.inf
        worst = max(worst, math.log(big / small))
    return float(worst)
""",
        """
def forced_response(bits, truth_prob, yes_prob, rng):
    rng.random({burn})
    x = np.asarray(bits).astype(int)
    choice = rng.choice(3, size=x.shape, p=[truth_prob, yes_prob, max(0.0, 1 - truth_prob - yes_prob)])
    return np.select([choice == 0, choice == 1], [x, np.ones_like(x)], default=0).astype(int)


def forced_response_epsilon(truth_prob, yes_prob):
    if not (0 <= truth_prob <= 1 and 0 <= yes_prob <= 1) or truth_prob + yes_prob > 1 + 1e-12:
        raise ValueError("truth_prob and yes_prob must be probabilities with a sum <= 1")
    if truth_prob == 0:
        return 0.0
    no_prob = 1 - truth_prob - yes_prob
    if math.isclose(yes_prob, 0.0, abs_tol=1e-12) or math.isclose(no_prob, 0.0, abs_tol=1e-12):
        return math.inf
    return max(math.log((truth_prob + yes_prob) / yes_prob), math.log((truth_prob + no_prob) / no_prob))
""",
    ],
    "group_posterior": [
        """
def group_posterior(prior, reports, epsilon):
    from scipy.special import expit
    r = np.array(reports, dtype=float).ravel()
    if prior <= 0.0 or prior >= 1.0:
        return float(prior)
    z = math.log(prior / (1 - prior)) + epsilon * (2 * r.sum() - r.size)
    return float(expit(z))
""",
        """
def group_posterior(prior, reports, epsilon):
    if prior in (0, 1):
        return float(prior)
    balance = sum(1 if int(v) else -1 for v in np.ravel(reports))
    log_in = math.log(prior) + epsilon * balance / 2
    log_out = math.log1p(-prior) - epsilon * balance / 2
    top = max(log_in, log_out)
    return float(math.exp(log_in - top) / (math.exp(log_in - top) + math.exp(log_out - top)))
""",
    ],
    "krr_frequency_estimate": [
        """
def forced_frequency_estimate(reports, truth_prob, forced_probs):
    a = [float(x) for x in forced_probs]
    t = float(truth_prob)
    k = len(a)
    if k < 2 or math.isnan(t) or any(math.isnan(x) or x < 0 for x in a) or not 0 < t <= 1:
        raise ValueError("not a design")
    if abs(t + math.fsum(a) - 1.0) > 1e-9:
        raise ValueError("the probabilities must sum to 1")
    flat = [int(r) for r in np.asarray(reports).ravel()]
    if not flat or any(r < 0 or r >= k for r in flat):
        raise ValueError("reports must be categories 0 .. k - 1")
    # The law of the reports: M[j, v] = Pr[report j | answer v] = a_j + t [j == v]; solve M pi = f.
    m = np.array(a)[:, None] + t * np.eye(k)
    f = np.array([flat.count(j) for j in range(k)], dtype=float) / len(flat)
    return np.linalg.solve(m, f)
""",
        """
from collections import Counter


def forced_frequency_estimate(reports, truth_prob, forced_probs):
    sectors = np.array(forced_probs, dtype=float)
    if sectors.ndim != 1 or sectors.size < 2 or not np.isfinite(truth_prob) or not np.all(np.isfinite(sectors)):
        raise ValueError("need at least two finite forced probabilities")
    if truth_prob <= 0 or truth_prob > 1 or sectors.min() < 0 or not np.isclose(truth_prob + sectors.sum(), 1.0, rtol=0, atol=1e-9):
        raise ValueError("not a design")
    r = np.array(reports).reshape(-1)
    if r.size == 0 or r.min() < 0 or r.max() >= sectors.size:
        raise ValueError("bad reports")
    counts = Counter(r.tolist())
    f = np.array([counts.get(j, 0) for j in range(sectors.size)], dtype=float) / r.size
    kept = f - sectors                      # the forced answers arrive whatever the truth
    return kept / truth_prob
""",
    ],
}

# ------------------------------------------------------------------------------------- grading

PROBE = Probe(NAME, EXERCISES, WRONG, ALTERNATIVES, dropped=frozenset(DROPPED))
install(PROBE, globals())  # the fixture and the three tests: tests/support/notebook_probes.py
