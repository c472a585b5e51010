"""Notebook 05's hidden tests have power: plausible wrong answers score 0, correct alternatives pass.

Issue 31 (third edition): for every exercise of ``solutions/05_gaussian_mechanism``, three or more
plausible wrong answers (one direction of the hockey stick only, e^epsilon overflowing or giving
inf * 0 = nan at a large but valid epsilon, the union bound k / n, 2 sqrt(m) for sqrt(2m), the
relations swapped, the classic calibration, variance for standard deviation, the unsafe end of the
bracket, L1 calibration, noise shared across cells, raw error rates or the lower Clopper-Pearson
ends, delta left out, integer orders only, log10 for ln, a NaN parameter accepted where the
contract says raise...) are handed in and graded by the real trusted grader
(:func:`coursetools.grading.grade.grade_job`); each must score 0 on its exercise. Two correct
alternatives per exercise, written differently from the solution, must get full marks under five
seeds (``{burn}`` draws of the generator are burnt first).

Issue 50, item 9 (no answer one help() away): Exercise 3 asks for the exact delta(epsilon) of k
Gaussian releases made together (noise sigma_i, L2 sensitivity Delta_i) and the smallest common
sigma (help(gaussian_delta) and help(gaussian_sigma) hand over one release's profile and its root),
judged against the law of the summed privacy losses, N(eta, 2 eta), and a root found in the test.
Probes: the worst single release (the old answer per release), the ratios added (L1), sqrt(k)
times the largest ratio and the averaged sigmas (right for alike releases), no square root, basic
composition at epsilon / k, the classic formula, e^epsilon overflowing at 800, the unsafe end of
the bracket, NaN accepted. Exercise 5 asks for the epsilon certified by a fair guessing game's
score (wins out of rounds), at delta >= 0 (help(epsilon_lower_bound) hands over the two error
rates' audit), judged against an exact one-sided binomial bound found in the test by bisection
on the tail; probes: the two-sided interval at level alpha (help()'s level), the raw win rate,
the upper end, delta left out, the loose cap e^eps / (1 + e^eps) + delta, the normal
approximation, 1 - alpha for alpha, NaN accepted. Exercise 6 asks for the epsilon of k reports of a
binary report mechanism (yes with probability a on bit 1, b on bit 0) by Renyi DP at the best real
order, and the largest number of randomized-response reports within a budget (help(rdp_gaussian) and
help(zcdp_to_dp) hand over the Gaussian's line and rho + 2 sqrt(rho ln(1/delta))); judged against
the curve from the definition, both ways, minimised in the test. Probes: eps0^2 / 2-zCDP per
report (help(ZcdpFilter), the old answer's conversion), dplib's accountant's pure-DP curve, one way
only, orders up to 101 (the limit k eps0 missed), integer orders, ln(1/delta) / alpha, the pure bound
only, randomized response at eps0 / 2, the first k over the budget, NaN accepted, log10.

The graded notebook is the course notebook without its figures and experiments, and one
submission carries the i-th wrong answer of every exercise at once; the survey release's wrong
answers carry their own correct calibration, so that they fail for their own mistake.
"""

from __future__ import annotations

from notebook_probes import Probe, install

NAME = "05_gaussian_mechanism"

EXERCISES = {
    "delta_profile": "delta_profile_tests",
    "l2_sensitivity": "l2_sensitivity_tests",
    "analytic_sigma": "analytic_sigma_tests",
    "private_survey": "private_survey_tests",
    "empirical_epsilon": "empirical_epsilon_tests",
    "zcdp_composition": "zcdp_composition_tests",
    "zcdp_filter": "zcdp_filter_tests",
}

_BOOT = """
def bootstrap_release_delta(n, k):
    if not (n >= 1 and k >= 0):
        raise ValueError("n >= 1 and k >= 0")
    return float(-math.expm1(k * math.log1p(-1.0 / n)))
"""

_HOCKEY_CHECK = """
    if not epsilon >= 0:
        raise ValueError("epsilon")
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    if p.shape != q.shape:
        raise ValueError("lengths")"""


def _hockey(body: str, boot: str = _BOOT, check: str = _HOCKEY_CHECK) -> str:
    return (
        f"""
def hockey_stick_delta(p, q, epsilon):{check}
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
{body}
"""
        + boot
    )


_SAFE = """    f = math.exp(min(epsilon, 700.0))
    one = np.where(q > 0, np.maximum(p - f * q, 0), p).sum()
    two = np.where(p > 0, np.maximum(q - f * p, 0), q).sum()
    return float(max(one, two))"""


def _sens(
    survey_ar: str = "(float(m), math.sqrt(m))",
    survey_rep: str = "(2.0 * m, math.sqrt(2.0 * m))",
    sum_ar: str = "(float(d * c), math.sqrt(d) * c)",
    sum_rep: str = "(2.0 * d * c, 2.0 * math.sqrt(d) * c)",
    check_c: bool = True,
) -> str:
    c_check = (
        """
    if not (math.isfinite(c) and c > 0):
        raise ValueError("c")"""
        if check_c
        else ""
    )
    return f"""
def survey_sensitivities(m, neighbouring):
    if not m >= 1:
        raise ValueError("m")
    if neighbouring == "add_remove":
        return {survey_ar}
    if neighbouring == "replace":
        return {survey_rep}
    raise ValueError("neighbouring")


def clipped_sum_sensitivities(d, c, neighbouring):
    if not d >= 1:
        raise ValueError("d"){c_check}
    if neighbouring == "add_remove":
        return {sum_ar}
    if neighbouring == "replace":
        return {sum_rep}
    raise ValueError("neighbouring")
"""


_CPROFILE_CHECK = """
    s, d = np.asarray(sigmas, dtype=float), np.asarray(sensitivities, dtype=float)
    if s.ndim != 1 or s.size == 0 or s.shape != d.shape or not (np.isfinite(s).all() and (s > 0).all()):
        raise ValueError("sigmas")
    if not (np.isfinite(d).all() and (d > 0).all() and math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError("sensitivities or epsilon")"""


def _cprofile(
    ratio: str = "float(np.sqrt(np.sum((d / s) ** 2)))",
    second: str = "math.exp(epsilon + stats.norm.logcdf(-a - b))",
    body: str | None = None,
    check: str = _CPROFILE_CHECK,
) -> str:
    body = (
        body
        or f"""
    r = {ratio}
    a, b = r / 2.0, epsilon / r
    return float(max(0.0, stats.norm.cdf(a - b) - {second}))"""
    )
    return f"""
def composed_profile_delta(sigmas, sensitivities, epsilon):{check}{body}
"""


_COMPOSED_CHECK = """
    d = np.asarray(sensitivities, dtype=float)
    if d.ndim != 1 or d.size == 0 or not (np.isfinite(d).all() and (d > 0).all()):
        raise ValueError("sensitivities")
    if not (math.isfinite(epsilon) and epsilon > 0 and 0 < delta < 1):
        raise ValueError("bad arguments")"""


def _composed(
    profile: str | None = None,
    check: str = _COMPOSED_CHECK,
    ret: str = "hi",
    tol: str = "1e-12",
    body: str | None = None,
) -> str:
    body = (
        body
        or f"""
    too_small = lambda s: composed_profile_delta([s] * len(sensitivities), sensitivities, epsilon) > delta
    lo = hi = float(max(sensitivities))
    while not too_small(lo):
        lo /= 2.0
    while too_small(hi):
        hi *= 2.0
    while hi / lo - 1.0 > {tol}:
        mid = math.sqrt(lo * hi)
        if too_small(mid):
            lo = mid
        else:
            hi = mid
    return float({ret})"""
    )
    return (
        (profile if profile is not None else _cprofile())
        + f"""

def composed_sigma(sensitivities, epsilon, delta):{check}{body}
"""
    )


# a correct calibration of its own, so that a wrong survey release fails for its own mistake
_CALIBRATE = """
def _calibrate(l2, epsilon, delta):
    from scipy import optimize, special  # ndtr, log_ndtr: stats.norm's cdf, logcdf without their overhead
    if not (math.isfinite(epsilon) and epsilon > 0 and 0 < delta < 1):
        raise ValueError("epsilon or delta")
    def excess(log_s):
        s = math.exp(log_s)
        a, b = l2 / (2 * s), epsilon * s / l2
        return special.ndtr(a - b) - math.exp(epsilon + special.log_ndtr(-a - b)) - delta
    return math.exp(optimize.brentq(excess, math.log(l2) - 30, math.log(l2) + 30, xtol=1e-14, rtol=1e-14))
"""


def _survey(
    l2: str = "math.sqrt(m) if neighbouring == 'add_remove' else math.sqrt(2 * m)",
    noise: str = "rng.normal(0.0, sigma, size=counts.shape)",
    sigma: str = "_calibrate(l2, epsilon, delta)",
    copy: str = "np.array(counts, dtype=float)",
    combine: str = "out = out + noise",
) -> str:
    return (
        _CALIBRATE
        + f"""
def private_survey(counts, epsilon, delta, neighbouring, rng):
    if neighbouring not in ("add_remove", "replace"):
        raise ValueError("neighbouring")
    out = {copy}
    counts = out
    m = out.shape[0]
    l2 = {l2}
    sigma = {sigma}
    noise = {noise}
    {combine}
    return out
"""
    )


_GAME_CHECK = """
    if not (0 <= delta < 1 and 0 < alpha < 1):
        raise ValueError("delta or alpha")
    if not (0 <= wins <= rounds and rounds >= 1):
        raise ValueError("counts")"""


def _game(
    low: str = "float(stats.beta.ppf(alpha, wins, rounds - wins + 1))",
    ratio: str = "(p - delta) / (1.0 - p)",
    check: bool = True,
) -> str:
    return f"""
def game_epsilon(wins, rounds, delta, alpha):{_GAME_CHECK if check else ""}
    if wins == 0:
        return 0.0
    p = {low}
    if p >= 1.0:
        return float("inf")
    r = {ratio}
    return float(math.log(r)) if r > 1.0 else 0.0
"""


_B_CHECK = """
    if not (0 < a < 1 and 0 < b < 1 and k >= 1 and 0 < delta < 1):
        raise ValueError("bad arguments")"""
_BR_CHECK = """
    if not (math.isfinite(epsilon0) and epsilon0 > 0 and math.isfinite(epsilon) and epsilon > 0 and 0 < delta < 1):
        raise ValueError("bad arguments")"""


def _binary(
    curve: str = "np.maximum(one, two)",
    ts: str = "np.linspace(-12.0, 30.0, 841)",
    convert: str = "(k * g + L) / (al - 1.0)",
    pure: str = "k * max(abs(la - lb), abs(l1a - l1b))",
    log: str = "math.log",
    rr: str = "1.0 / (1.0 + math.exp(-epsilon0)), 1.0 / (1.0 + math.exp(epsilon0))",
    answer: str = "lo",
    refine: str = "res.fun",
    check: bool = True,
) -> str:
    c1, c2 = (_B_CHECK, _BR_CHECK) if check else ("", "")
    return f"""
def binary_rdp_epsilon(a, b, k, delta):{c1}
    L = {log}(1.0 / delta)
    la, lb, l1a, l1b = math.log(a), math.log(b), math.log1p(-a), math.log1p(-b)

    def eps_at(t):
        al = 1.0 + np.exp(t)
        one = np.logaddexp(al * la + (1 - al) * lb, al * l1a + (1 - al) * l1b)
        two = np.logaddexp(al * lb + (1 - al) * la, al * l1b + (1 - al) * l1a)
        g = {curve}
        return {convert}

    ts = {ts}
    values = eps_at(ts)
    i = int(np.argmin(values))
    res = optimize.minimize_scalar(lambda t: float(eps_at(t)), bounds=(ts[max(i - 1, 0)], ts[min(i + 1, ts.size - 1)]),
                                   method="bounded", options={{"xatol": 1e-10}})
    return float(min({refine}, values[i], {pure}))


def rr_reports_for_budget(epsilon0, epsilon, delta):{c2}
    a, b = {rr}
    fits = lambda k: binary_rdp_epsilon(a, b, k, delta) <= epsilon
    if not fits(1):
        return 0
    lo, hi = 1, 2
    while fits(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return {answer}
"""


_SESSION_CHECK = """
    if not (math.isfinite(rho) and rho > 0 and 0 < delta < 1):
        raise ValueError("rho and delta")
    for d, s in requests:
        if not (math.isfinite(d) and d > 0 and math.isfinite(s) and s > 0):
            raise ValueError("request")"""


_SESSION_EPS = f"""
def zcdp_session(requests, rho, delta):{_SESSION_CHECK}
    to_eps = lambda r: r + 2.0 * math.sqrt(r * math.log(1.0 / delta))
    answered, spent, eps_spent = [], 0.0, 0.0
    for i, (d, s) in enumerate(requests):
        c = d * d / (2.0 * s * s)
        if eps_spent + to_eps(c) <= to_eps(rho):
            answered.append(i)
            spent += c
            eps_spent += to_eps(c)
    return answered, float(to_eps(rho))
"""


def _session(
    cost: str = "d * d / (2.0 * s * s)",
    fits: str = "spent + c <= rho",
    after_refusal: str = "continue",
    eps: str = "rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))",
    check: bool = True,
) -> str:
    return f"""
def zcdp_session(requests, rho, delta):{_SESSION_CHECK if check else ""}
    costs = [{cost} for d, s in requests]
    answered, spent = [], 0.0
    for i, c in enumerate(costs):
        if {fits}:
            answered.append(i)
            spent += c
        else:
            {after_refusal}
    return answered, float({eps})
"""


# ------------------------------------------------------------------------------ wrong answers

WRONG = {
    "delta_profile": [
        (
            "one direction only",
            _hockey(
                """    return float(np.maximum(p - math.exp(min(epsilon, 700.0)) * q, 0).sum())"""
            ),
        ),
        (
            "math.exp(epsilon) overflows at 1000",
            _hockey("""    f = math.exp(epsilon)
    return float(max(np.maximum(p - f * q, 0).sum(), np.maximum(q - f * p, 0).sum()))"""),
        ),
        (
            "np.exp(epsilon) = inf, inf * 0 = nan",
            _hockey("""    f = np.exp(epsilon)
    return float(max(np.maximum(p - f * q, 0).sum(), np.maximum(q - f * p, 0).sum()))"""),
        ),
        (
            "bootstrap: the union bound k / n",
            _hockey(
                _SAFE,
                boot="""
def bootstrap_release_delta(n, k):
    if not (n >= 1 and k >= 0):
        raise ValueError("n >= 1 and k >= 0")
    return float(min(1.0, k / n))
""",
            ),
        ),
        (
            "NaN epsilon accepted",
            _hockey(
                _SAFE,
                check="""
    if epsilon < 0:
        raise ValueError("epsilon")""",
            ),
        ),
        (
            "half the L1 distance at every epsilon",
            _hockey(
                """    return float(np.abs(p - math.exp(min(epsilon, 700.0)) * q).sum() / 2)"""
            ),
        ),
        (
            "bootstrap: 1 / n whatever k",
            _hockey(
                _SAFE,
                boot="""
def bootstrap_release_delta(n, k):
    if not (n >= 1 and k >= 0):
        raise ValueError("n >= 1 and k >= 0")
    return 1.0 / n if k > 0 else 0.0
""",
            ),
        ),
    ],
    "l2_sensitivity": [
        ("replace-one: 2 sqrt(m) for sqrt(2m)", _sens(survey_rep="(2.0 * m, 2.0 * math.sqrt(m))")),
        (
            "relations swapped",
            _sens(
                survey_ar="(2.0 * m, math.sqrt(2.0 * m))",
                survey_rep="(float(m), math.sqrt(m))",
                sum_ar="(2.0 * d * c, 2.0 * math.sqrt(d) * c)",
                sum_rep="(float(d * c), math.sqrt(d) * c)",
            ),
        ),
        ("L2 = L1", _sens(survey_ar="(float(m), float(m))", sum_ar="(float(d * c), float(d * c))")),
        ("NaN clip accepted", _sens(check_c=False)),
        (
            "clipped sum, replace: sqrt(2d) c",
            _sens(sum_rep="(2.0 * d * c, math.sqrt(2.0 * d) * c)"),
        ),
    ],
    "analytic_sigma": [
        (
            "help(gaussian_delta)'s profile of one release, the worst one (the old answer, applied to each release)",
            _composed(_cprofile(ratio="float(np.max(d / s))")),
        ),
        (
            "the releases' ratios Delta_i / sigma_i added (L1 stacking)",
            _composed(_cprofile(ratio="float(np.sum(d / s))")),
        ),
        (
            "sqrt(k) times the largest ratio (right when every release is alike)",
            _composed(_cprofile(ratio="math.sqrt(s.size) * float(np.max(d / s))")),
        ),
        (
            "the sigmas averaged (right when one sigma serves all)",
            _composed(_cprofile(ratio="float(np.sqrt(np.sum(d ** 2)) / np.mean(s))")),
        ),
        (
            "the squared ratios added, no square root",
            _composed(_cprofile(ratio="float(np.sum((d / s) ** 2))")),
        ),
        (
            "basic composition: each release's own profile at epsilon / k, the deltas added",
            _composed(
                _cprofile(
                    body="""
    total = 0.0
    for r in d / s:
        a, b = r / 2.0, (epsilon / s.size) / r
        total += max(0.0, stats.norm.cdf(a - b) - math.exp(epsilon / s.size + stats.norm.logcdf(-a - b)))
    return float(min(1.0, total))"""
                )
            ),
        ),
        (
            "the classic formula on the stacked sensitivity",
            _composed(
                body="""
    return float(math.sqrt(2 * math.log(1.25 / delta)) * math.sqrt(float(np.sum(d ** 2))) / epsilon)"""
            ),
        ),
        (
            "e^epsilon overflows at 800",
            _composed(_cprofile(second="math.exp(epsilon) * stats.norm.cdf(-a - b)")),
        ),
        ("the unsafe end of a coarse bracket", _composed(ret="lo", tol="1e-4")),
        (
            "NaN delta accepted (<= and >= checks)",
            _composed(
                _cprofile(
                    ratio="math.sqrt(sum((float(x) / float(y)) ** 2 for x, y in zip(d, s)))",
                    check="""
    s, d = list(sigmas), list(sensitivities)
    if len(s) != len(d) or not s:
        raise ValueError("lengths")""",
                ),
                check="""
    if min(sensitivities) <= 0 or epsilon <= 0 or delta <= 0 or delta >= 1:
        raise ValueError("bad arguments")""",
            ),
        ),
    ],
    "private_survey": [
        (
            "calibrated to the L1 sensitivity",
            _survey(l2="float(m) if neighbouring == 'add_remove' else 2.0 * m"),
        ),
        (
            "one noise draw per question, shared by its options",
            _survey(noise="rng.normal(0.0, sigma, size=(m, 1))"),
        ),
        ("the relation ignored (sqrt(m) always)", _survey(l2="math.sqrt(m)")),
        (
            "the classic calibration",
            _survey(sigma="math.sqrt(2 * math.log(1.25 / delta)) * l2 / epsilon"),
        ),
        (
            "numpy's global generator",
            _survey(noise="np.random.normal(0.0, sigma, size=counts.shape)"),
        ),
        (
            "counts changed in place",
            _survey(copy="np.asarray(counts, dtype=float)", combine="out += noise"),
        ),
    ],
    "empirical_epsilon": [
        (
            "help(epsilon_lower_bound)'s bound (the old answer): the two-sided interval at level alpha, "
            "one-sided alpha / 2",
            _game(low="float(clopper_pearson(wins, rounds, alpha)[0])"),
        ),
        ("the raw win rate, no confidence bound", _game(low="wins / rounds")),
        (
            "the upper end of the win rate",
            _game(low="float(clopper_pearson(wins, rounds, 2 * alpha)[1])"),
        ),
        ("delta left out", _game(ratio="p / (1.0 - p)")),
        (
            "the loose cap e^eps / (1 + e^eps) + delta (true, not sharp)",
            _game(ratio="(p - delta) / (1.0 - p + delta) if p > delta else 0.0"),
        ),
        (
            "the normal approximation for the exact bound",
            _game(
                low="wins / rounds - stats.norm.isf(alpha) * math.sqrt(wins * (rounds - wins) / rounds ** 3)"
            ),
        ),
        (
            "1 - alpha for alpha",
            _game(low="float(stats.beta.ppf(1 - alpha, wins, rounds - wins + 1))"),
        ),
        ("NaN delta accepted", _game(check=False)),
    ],
    "zcdp_composition": [
        (
            "help()'s answer for a pure-DP report: eps0^2 / 2-zCDP per report (dplib's ZcdpFilter, PureDpEvent), "
            "then rho + 2 sqrt(rho ln(1/delta)) with rho = k eps0^2 / 2, capped at k eps0",
            _binary(curve="(al - 1.0) * al * max(abs(la - lb), abs(l1a - l1b)) ** 2 / 2.0"),
        ),
        (
            "dplib's accountant's curve for a pure-DP event, min(eps0, alpha eps0^2 / 2)",
            _binary(
                curve="(al - 1.0) * np.minimum(max(abs(la - lb), abs(l1a - l1b)), al * max(abs(la - lb), abs(l1a - l1b)) ** 2 / 2.0)"
            ),
        ),
        (
            "one way only (bit 1 against bit 0)",
            _binary(curve="one", pure="k * max(la - lb, l1a - l1b)"),
        ),
        (
            "orders up to 101 only, the limit alpha -> infinity (k eps0) missed",
            _binary(ts="np.linspace(-12.0, math.log(100.0), 841)", pure="math.inf"),
        ),
        (
            "integer orders 2 to 10,000 only",
            _binary(ts="np.log(np.arange(1.0, 10_000.0))", refine="math.inf"),
        ),
        (
            "ln(1/delta) / alpha for ln(1/delta) / (alpha - 1)",
            _binary(convert="(k * g + L * (al - 1.0) / al) / (al - 1.0)"),
        ),
        (
            "the pure bound k eps0 only, no Renyi curve",
            _binary(convert="np.full_like(al, math.inf)"),
        ),
        (
            "randomized response at eps0 / 2 (the factor 2 of the Laplace scale)",
            _binary(
                rr="1.0 / (1.0 + math.exp(-epsilon0 / 2)), 1.0 / (1.0 + math.exp(epsilon0 / 2))"
            ),
        ),
        ("the first number of reports over the budget", _binary(answer="hi")),
        ("NaN accepted", _binary(check=False)),
        ("log10 for ln", _binary(log="math.log10")),
    ],
    "zcdp_filter": [
        ("rho = Delta / (2 sigma), not squared", _session(cost="d / (2.0 * s)")),
        ("rho = Delta^2 / sigma^2, the 1/2 lost", _session(cost="d * d / (s * s)")),
        ("budget in epsilons: each release's epsilon added against the budget's", _SESSION_EPS),
        (
            "each release converted at delta / k, the epsilons added",
            _session(
                eps="sum(c_ + 2.0 * math.sqrt(c_ * math.log(len(answered) / delta)) for c_ in (costs[i] for i in answered))"
            ),
        ),
        (
            "the realised spend converted (an odometer's claim under adaptive choice; issue 50)",
            _session(
                eps="(spent + 2.0 * math.sqrt(spent * math.log(1.0 / delta))) if answered else 0.0"
            ),
        ),
        (
            "the budget converted, but 0 when nothing was answered",
            _session(
                eps="(rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))) if answered else 0.0"
            ),
        ),
        ("stops at the first refusal", _session(after_refusal="break")),
        ("strict < for within the budget", _session(fits="spent + c < rho")),
        ("NaN accepted", _session(check=False)),
    ],
}

# ------------------------------------------------------------------------------ alternatives

ALTERNATIVES = {
    "delta_profile": [
        """
def hockey_stick_delta(p, q, epsilon):
    if math.isnan(epsilon) or epsilon < 0:
        raise ValueError("epsilon must be >= 0")
    p, q = list(map(float, p)), list(map(float, q))
    if len(p) != len(q):
        raise ValueError("p and q must have the same length")

    def one_way(a, b):
        total = 0.0
        for x, y in zip(a, b):
            if x <= 0:
                continue
            if y == 0:
                total += x
            elif math.log(x) - math.log(y) > epsilon:      # then e^epsilon y < x <= 1: no overflow
                total += x - math.exp(epsilon + math.log(y))
        return total

    return max(one_way(p, q), one_way(q, p))


def bootstrap_release_delta(n, k):
    if n < 1 or k < 0 or n != n:
        raise ValueError("need n >= 1 and k >= 0")
    return float(1.0 - (1.0 - 1.0 / n) ** k)
""",
        """
def hockey_stick_delta(p, q, epsilon):
    if not (epsilon >= 0):
        raise ValueError("epsilon must be a number >= 0")
    P, Q = np.asarray(p, dtype=float).ravel(), np.asarray(q, dtype=float).ravel()
    if P.size != Q.size:
        raise ValueError("p and q must have the same length")
    with np.errstate(divide="ignore"):
        logP, logQ = np.log(P), np.log(Q)
    excess = lambda la, a, lb: np.where(la - lb > epsilon, a - np.exp(np.minimum(epsilon + lb, 0.0)), 0.0)
    return float(max(excess(logP, P, logQ).sum(), excess(logQ, Q, logP).sum()))


def bootstrap_release_delta(n, k):
    if not (n >= 1) or not (k >= 0):
        raise ValueError("need n >= 1 and k >= 0")
    return float(1.0 - math.exp(k * math.log1p(-1.0 / n))) if n > 1 else float(k > 0)
""",
    ],
    "l2_sensitivity": [
        """
def survey_sensitivities(m, neighbouring):
    if m < 1:
        raise ValueError("m must be >= 1")
    per_question = {"add_remove": [1.0], "replace": [1.0, -1.0]}
    if neighbouring not in per_question:
        raise ValueError(f"unknown relation {neighbouring!r}")
    change = np.array(per_question[neighbouring] * m)       # the worst change, all m histograms
    return float(np.abs(change).sum()), float(np.linalg.norm(change))


def clipped_sum_sensitivities(d, c, neighbouring):
    if d < 1 or not (0 < c < math.inf):
        raise ValueError("need d >= 1 and a finite c > 0")
    if neighbouring not in ("add_remove", "replace"):
        raise ValueError(f"unknown relation {neighbouring!r}")
    step = c if neighbouring == "add_remove" else 2 * c
    change = np.full(d, step)
    return float(np.linalg.norm(change, 1)), float(np.linalg.norm(change, 2))
""",
        """
def survey_sensitivities(m, neighbouring):
    factor = {"add_remove": 1, "replace": 2}.get(neighbouring) if isinstance(neighbouring, str) else None
    if factor is None or not m >= 1:
        raise ValueError("neighbouring must be 'add_remove' or 'replace', and m >= 1")
    return float(factor * m), float((factor * m) ** 0.5)


def clipped_sum_sensitivities(d, c, neighbouring):
    factor = {"add_remove": 1, "replace": 2}.get(neighbouring) if isinstance(neighbouring, str) else None
    if factor is None or not d >= 1 or math.isnan(c) or c <= 0 or math.isinf(c):
        raise ValueError("bad arguments")
    return float(factor * c * d), float(factor * c * d ** 0.5)
""",
    ],
    "analytic_sigma": [
        """
def composed_profile_delta(sigmas, sensitivities, epsilon):
    s, d = np.asarray(sigmas, dtype=float), np.asarray(sensitivities, dtype=float)
    if s.ndim != 1 or len(s) == 0 or len(s) != len(d) or np.any(~np.isfinite(s)) or np.any(~np.isfinite(d)):
        raise ValueError("two non-empty lists of finite numbers of the same length")
    if np.any(s <= 0) or np.any(d <= 0) or not (epsilon >= 0) or math.isinf(epsilon):
        raise ValueError("positive sigmas and sensitivities, epsilon >= 0")
    eta = float(np.sum(d * d / (2 * s * s)))          # the privacy losses add: N(eta, 2 eta) on D
    sd = math.sqrt(2 * eta)
    tail_d = stats.norm.sf((epsilon - eta) / sd)                 # P_D[L > eps]
    log_tail_d2 = stats.norm.logsf((epsilon + eta) / sd)         # log P_D'[L > eps]
    return float(max(0.0, tail_d - math.exp(epsilon + log_tail_d2)))


def composed_sigma(sensitivities, epsilon, delta):
    from scipy import optimize
    d = np.asarray(sensitivities, dtype=float)
    if d.ndim != 1 or d.size == 0 or not np.all(np.isfinite(d) & (d > 0)):
        raise ValueError("sensitivities")
    if not (0 < epsilon < math.inf and 0 < delta < 1):
        raise ValueError("bad arguments")
    f = lambda t: composed_profile_delta(np.full(d.size, math.exp(t)), d, epsilon) - delta
    lo = hi = math.log(float(np.linalg.norm(d)))
    while f(lo) <= 0:
        lo -= 1.0
    while f(hi) > 0:
        hi += 1.0
    t = optimize.brentq(f, lo, hi, xtol=1e-15, rtol=1e-15, maxiter=500)
    while f(t) > 0:                                  # the safe side
        t = math.nextafter(t, math.inf)
    return float(math.exp(t))
""",
        """
def composed_profile_delta(sigmas, sensitivities, epsilon):
    from scipy.special import log_ndtr, ndtr
    pairs = list(zip(sigmas, sensitivities))
    if not pairs or len(sigmas) != len(sensitivities):
        raise ValueError("need as many sigmas as sensitivities, at least one")
    for x in [v for p in pairs for v in p] + [epsilon]:
        if math.isnan(x) or math.isinf(x):
            raise ValueError("finite numbers only")
    if any(s <= 0 or d <= 0 for s, d in pairs) or epsilon < 0:
        raise ValueError("bad arguments")
    mu = math.sqrt(math.fsum((d / s) ** 2 for s, d in pairs))   # whitened, the k releases are one shift of length mu
    return float(max(ndtr(mu / 2 - epsilon / mu) - math.exp(epsilon + log_ndtr(-mu / 2 - epsilon / mu)), 0.0))


def composed_sigma(sensitivities, epsilon, delta):
    if any(math.isnan(x) for x in [*sensitivities, epsilon, delta]) or len(sensitivities) == 0:
        raise ValueError("NaN argument or no release")
    if min(sensitivities) <= 0 or max(sensitivities) == math.inf or not (0 < epsilon < math.inf and 0 < delta < 1):
        raise ValueError("bad arguments")
    k = len(sensitivities)
    enough = lambda s: composed_profile_delta([s] * k, sensitivities, epsilon) <= delta
    hi = math.sqrt(math.fsum(x * x for x in sensitivities))
    while not enough(hi):
        hi *= 10.0
    lo = hi
    while enough(lo):
        lo /= 10.0
    for _ in range(80):  # halving a bracket [s / 10, s] 80 times: past double precision
        mid = 0.5 * (lo + hi)
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return float(hi)
""",
    ],
    "private_survey": [
        """
def private_survey(counts, epsilon, delta, neighbouring, rng):
    rng.random({burn})
    table = np.array(counts, dtype=float, copy=True)
    l2 = survey_sensitivities(table.shape[0], neighbouring)[1]
    sigma = composed_sigma([l2], epsilon, delta)
    return table + sigma * rng.standard_normal(table.shape)
""",
        """
def private_survey(counts, epsilon, delta, neighbouring, rng):
    if neighbouring not in ("add_remove", "replace"):
        raise ValueError("unknown relation")
    rng.random({burn})
    c = np.asarray(counts)
    m = c.shape[0]
    sigma = composed_sigma([1.0] * m if neighbouring == "add_remove" else [math.sqrt(2)] * m, epsilon, delta)
    rows = [c[j].astype(float) + rng.normal(0.0, sigma, size=c.shape[1]) for j in range(m)]
    return np.vstack(rows)
""",
    ],
    "empirical_epsilon": [
        """
def game_epsilon(wins, rounds, delta, alpha):
    if math.isnan(delta) or math.isnan(alpha) or not (0 <= delta < 1) or not (0 < alpha < 1):
        raise ValueError("bad delta or alpha")
    if wins < 0 or rounds < 1 or wins > rounds or wins != int(wins) or rounds != int(rounds):
        raise ValueError("bad counts")
    wins, rounds = int(wins), int(rounds)
    if wins == 0:
        return 0.0
    p = clopper_pearson(wins, rounds, 2 * alpha)[0]   # the low end alone holds with probability 1 - alpha
    # win probability <= (e^eps + delta) / (1 + e^eps): solve for e^eps
    e_eps = (p - delta) / (1 - p)
    return float(max(0.0, math.log(e_eps))) if e_eps > 0 else 0.0
""",
        """
def game_epsilon(wins, rounds, delta, alpha):
    from scipy import optimize
    ok = 0.0 <= delta < 1.0 and 0.0 < alpha < 1.0 and 1 <= rounds and 0 <= wins <= rounds
    if not ok:
        raise ValueError("need 0 <= delta < 1, 0 < alpha < 1, 0 <= wins <= rounds, rounds >= 1")
    losses = rounds - wins
    if wins == 0:
        return 0.0

    def win_cap(eps):              # the most a guesser can win under (eps, delta)-DP
        return (math.exp(eps) + delta) / (1 + math.exp(eps))

    def tail(eps):                 # P[at least `wins` wins] if every round is won with probability win_cap(eps)
        return stats.binom.sf(wins - 1, rounds, win_cap(eps))

    if tail(0.0) >= alpha:         # a fair coin (plus delta) explains the score
        return 0.0
    hi = 1.0
    while tail(hi) < alpha:
        hi *= 2
    return float(optimize.brentq(lambda e: tail(e) - alpha, 0.0, hi, xtol=1e-14, rtol=1e-14))
""",
    ],
    "zcdp_composition": [
        """
def binary_rdp_epsilon(a, b, k, delta):
    if not (0 < a < 1) or not (0 < b < 1) or not (0 < delta < 1) or not k >= 1:
        raise ValueError("need 0 < a, b < 1, k >= 1 and 0 < delta < 1")
    L = -math.log(delta)
    pairs = [((a, 1 - a), (b, 1 - b)), ((b, 1 - b), (a, 1 - a))]

    def eps_of_u(u):          # u = 1 / (alpha - 1) in [0, inf); u = 0 is the limit alpha -> infinity
        if u == 0:
            return k * max(abs(math.log(a / b)), abs(math.log((1 - a) / (1 - b))))
        alpha = 1 + 1 / u
        worst = max(
            max(alpha * math.log(p[i]) - (alpha - 1) * math.log(q[i]) for i in (0, 1))
            + math.log(sum(math.exp(alpha * math.log(p[i]) - (alpha - 1) * math.log(q[i])
                                    - max(alpha * math.log(p[j]) - (alpha - 1) * math.log(q[j]) for j in (0, 1)))
                           for i in (0, 1)))
            for p, q in pairs)
        return u * (k * worst + L)

    # golden-section search on u (the function has one valley), on a bracket found by doubling
    lo, hi = 0.0, 1e-6
    while eps_of_u(2 * hi) < eps_of_u(hi):
        hi *= 2
    hi *= 2
    g = (math.sqrt(5) - 1) / 2
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = eps_of_u(x1), eps_of_u(x2)
    for _ in range(300):
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = eps_of_u(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = eps_of_u(x2)
    return float(min(f1, f2, eps_of_u(0.0)))


def rr_reports_for_budget(epsilon0, epsilon, delta):
    if math.isnan(epsilon0) or math.isnan(epsilon) or math.isinf(epsilon0) or math.isinf(epsilon):
        raise ValueError("epsilons must be finite")
    if epsilon0 <= 0 or epsilon <= 0 or not 0 < delta < 1:
        raise ValueError("bad arguments")
    p = math.exp(epsilon0) / (1 + math.exp(epsilon0))
    k, step = 0, 1
    while binary_rdp_epsilon(p, 1 - p, k + step, delta) <= epsilon:
        step *= 2
    while step >= 1:                 # k fits (or is 0), k + 2 step does not: add the steps that fit
        if binary_rdp_epsilon(p, 1 - p, k + step, delta) <= epsilon:
            k += step
        step //= 2
    return k
""",
        """
def binary_rdp_epsilon(a, b, k, delta):
    import bisect
    from scipy import special
    for x in (a, b, delta):
        if not (0.0 < x < 1.0):
            raise ValueError("a, b and delta must lie strictly between 0 and 1")
    if k < 1:
        raise ValueError("k >= 1")
    P = np.log([a, 1 - a])
    Q = np.log([b, 1 - b])

    def total(x):                   # x = log(alpha - 1), array
        alpha = 1 + np.exp(np.atleast_1d(x))[:, None]
        d1 = special.logsumexp(alpha * P + (1 - alpha) * Q, axis=1)
        d2 = special.logsumexp(alpha * Q + (1 - alpha) * P, axis=1)
        return (k * np.maximum(d1, d2) - math.log(delta)) * np.exp(-np.atleast_1d(x))

    xs = np.linspace(-20, 40, 6_001)
    v = total(xs)
    j = int(np.argmin(v))
    res = optimize.minimize_scalar(lambda x: float(total(x)[0]), bracket=None, bounds=(xs[max(j - 1, 0)], xs[min(j + 1, len(xs) - 1)]),
                                   method="bounded", options={"xatol": 1e-12})
    limit = k * float(np.abs(P - Q).max())
    return float(min(limit, v[j], res.fun))


def rr_reports_for_budget(epsilon0, epsilon, delta):
    import bisect
    ok = all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in (epsilon0, epsilon))
    if not ok or not 0 < delta < 1:
        raise ValueError("bad arguments")
    a = 1 / (1 + math.exp(-epsilon0))
    cost = lambda k: binary_rdp_epsilon(a, 1 - a, k, delta) if k >= 1 else 0.0
    top = 1
    while cost(top) <= epsilon:
        top *= 4
    return bisect.bisect_right(range(top + 1), epsilon, key=cost) - 1
""",
    ],
    "zcdp_filter": [
        """
def zcdp_session(requests, rho, delta):
    from fractions import Fraction
    if math.isnan(rho) or math.isnan(delta) or not (0 < rho < math.inf) or not (0 < delta < 1):
        raise ValueError("rho must be finite > 0 and delta in (0, 1)")
    reqs = [(float(d), float(s)) for d, s in requests]
    if any(not (0 < d < math.inf and 0 < s < math.inf) for d, s in reqs):
        raise ValueError("every sensitivity and sigma must be finite > 0")
    budget = Fraction(rho)
    total = Fraction(0)
    answered = []
    for i, (d, s) in enumerate(reqs):
        cost = Fraction(d) ** 2 / (2 * Fraction(s) ** 2)   # exact: no rounding at the edge of the budget
        if total + cost <= budget:
            total += cost
            answered.append(i)
    r, L = float(budget), -math.log(delta)       # the filter certifies its budget
    return answered, float((math.sqrt(r) + math.sqrt(L)) ** 2 - L)
""",
        """
def zcdp_session(requests, rho, delta):
    from scipy import optimize
    arr = np.asarray(list(requests), dtype=float).reshape(-1, 2)
    if not (np.isfinite(rho) and rho > 0 and 0 < delta < 1) or not (np.isfinite(arr).all() and (arr > 0).all()):
        raise ValueError("bad budget, delta or request")
    left = rho
    answered = []
    for i, cost in enumerate(0.5 * (arr[:, 0] / arr[:, 1]) ** 2):
        if cost <= left + 1e-12 * rho:
            answered.append(i)
            left -= cost
    spent = rho                                # the guarantee is the budget's, not the realised spend's
    L = math.log(1 / delta)
    res = optimize.minimize_scalar(lambda t: (1 + math.exp(t)) * spent + L * math.exp(-t),
                                   bracket=(0.5 * math.log(L / spent) - 1, 0.5 * math.log(L / spent) + 1),
                                   tol=1e-12)
    return answered, float(res.fun)
""",
    ],
}

PROBE = Probe(NAME, EXERCISES, WRONG, ALTERNATIVES)
install(PROBE, globals())  # the fixture and the three tests: tests/support/notebook_probes.py
