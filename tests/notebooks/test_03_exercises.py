"""Notebook 03's hidden tests have power: plausible wrong answers score 0, correct alternatives pass.

Issue 31 (third edition): for every exercise of ``solutions/03_exponential_mechanism``, three or
more plausible wrong answers (the factor 2 dropped, Delta / (2 eps) for eps / (2 Delta), Laplace or
one-sided exponential noise for Gumbel, the bound for the exact gap, log2 for ln, the neighbouring
relations swapped, a special case that fits only symmetric ranges, a NaN parameter accepted where
the contract says raise, arithmetic that overflows at a large but valid epsilon, randomness not
drawn from ``rng``...) are handed in and graded by the real trusted grader
(:func:`coursetools.grading.grade.grade_job`); each must score 0 on its exercise. Two correct
alternatives per exercise, written differently from the solution, must get full marks under five
seeds: a correct answer's random draws are shifted by burning ``s`` draws of the generator first
(``s = 0..4``), which changes every random outcome the hidden tests see.

The graded notebook is the course notebook without its figures and experiments (the harness keeps
markdown, the setup cell, every answer and every test cell), and one submission carries the i-th
wrong answer of *every* exercise at once. Exercises 2 and 6 forgive a slip in the exercise they
build on (they judge the sampler against the student's own Exercise 1, the median against the
student's own Exercises 2 and 5); the wrong answers are paired so that the i-th wrong answer of an
earlier exercise never makes the i-th wrong answer of a later one look right.

Issue 50 (no answer one ``help()`` away): Exercise 2 asks for the k best candidates in the order
of k peeling rounds of the exponential mechanism at epsilon / k, drawn with one noisy max
(``sample_exponential_topk``); ``help(dplib.report_noisy_max)`` hands over one round only. The
hidden test compares the ordered lists with the exact peeling law computed in the test. Probes:
Gumbel noise of scale 2 Delta / eps (the help() answer, the old exercise's), Laplace and
exponential noise, the factor 2 dropped, k rounds with replacement, the scale off by one round and
10 % too large, the winners in index order, numpy's global generator, NaN accepted. Exercise 5
asks, beside the median utility, for the sensitivity of the larger-side score
-max(#{x < c}, #{x > c}) under both relations (1 and 1; help(median_utility) hands over the balance
score's 1 and 2), judged against a brute force over every small data set computed in the test;
probes: help()'s 1 and 2 (the old answer), the quantile score's 1/2 and 1, 2 and 2, 1/2 under
replace-one. Exercise 6
asks for the private median on the whole interval (Smith 2011: pieces between data points weighted
by length), judged by Kolmogorov-Smirnov against the exact law computed in the test; probes:
dplib's 1001-point grid (the help() answer, the old one), the factor 2 dropped, sensitivity 2,
pieces not weighted by length, values outside the range dropped, the midpoint of the piece,
numpy's global generator, no checks. Exercise 4
asks for the sharpest exponent c of the coin's truncated Beta that is epsilon-DP for every number
of flips (epsilon over the range of one neighbour's change to the scores), judged against a
brute-force range on a grid computed in the test; probes: section 2's eps / (2 Delta) (the help()
answer, the old one), the monotone eps / Delta, the range with the factor 2 kept, a head's range
only, the factor 2 dropped everywhere, the relations swapped, log2, the +1 forgotten, NaN accepted.

Exercise 7 asks for the budget of each level's mechanism in the recursive quantiles of Kaplan,
Schnapp & Stemmer (2022) when the budgets are proportional to public weights: epsilon times the
weight over the largest total weight along a root-to-level chain of the recursion
(help(dplib.private_quantiles) hands over the equal split epsilon / ceil(log2(m + 1))), judged
against the chain computed in the test; probes: help()'s epsilon / L (the old answer), the sum of
all weights, the sum of each round's largest weight, the depth times the largest weight, the lower
middle at the root, the largest weight alone, the sorted order, epsilon / m, no checks.

Find the counterexample (issue 39, item 2): report noisy max that also releases its noisy maximum.
Wrong witnesses: two candidates (ratio exactly e^eps), non-neighbours, a value only a float sampler
outputs (probability 0 on both), the index alone, an index out of range; the alternatives are the
solution's pair in the other order and a four-candidate witness with a two-output event.
"""

from __future__ import annotations

from notebook_probes import Probe, install

NAME = "03_exponential_mechanism"

#: answer cell grade_id -> test cell grade_id
EXERCISES = {
    "exponential_probabilities": "exponential_probabilities_tests",
    "sample_exponential": "sample_exponential_tests",
    "worst_case_gap": "worst_case_gap_tests",
    "coin_beta_parameters": "coin_beta_parameters_tests",
    "median_utility": "median_utility_tests",
    "private_median": "private_median_tests",
    "counterexample_noisy_max": "counterexample_noisy_max_tests",
    "quantiles_recursive": "quantiles_recursive_tests",
}

_CHECK = """
    for name, value in (("sensitivity", sensitivity), ("epsilon", epsilon)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(name)"""


def _probabilities(logits: str, check: str = _CHECK, finite: bool = True) -> str:
    scores_check = (
        """
    if not np.all(np.isfinite(u)):
        raise ValueError("scores")"""
        if finite
        else ""
    )
    return f"""
def exponential_probabilities(scores, sensitivity, epsilon):{check}
    u = np.asarray(scores, dtype=float){scores_check}
    w = np.exp({logits})
    return w / w.sum()
"""


def _topk(
    noise: str, check: bool = True, order: str = "np.argsort(-noisy, kind='stable')[:k]"
) -> str:
    validation = (
        _CHECK
        + """
    if not np.all(np.isfinite(np.asarray(scores, dtype=float))):
        raise ValueError("scores")
    if isinstance(k, bool) or int(k) != k or not 1 <= k <= len(scores):
        raise ValueError("k")"""
        if check
        else ""
    )
    return f"""
def sample_exponential_topk(scores, k, sensitivity, epsilon, rng):{validation}
    u = np.asarray(scores, dtype=float)
    k = int(k)
    noisy = u + {noise}
    return [int(i) for i in {order}]
"""


_GUMBEL = "rng.gumbel(0.0, 2.0 * sensitivity * k / epsilon, u.size)"


def _gap(body: str, check: bool = True, beta_limit: str = "(m - 1) / m") -> str:
    validation = (
        f"""
    if not m >= 2 or not (0 < beta < {beta_limit}):
        raise ValueError("n_candidates or beta"){_CHECK}"""
        if check
        else ""
    )
    return f"""
def worst_case_gap(n_candidates, sensitivity, epsilon, beta):
    m = n_candidates{validation}
    c = epsilon / (2.0 * sensitivity)
    return float({body})
"""


_LOGIT = "lambda t: math.log(t / (1.0 - t))"


def _coin(
    replace: str,
    add_remove: str,
    ab: str = "1.0 + c * heads, 1.0 + c * (n - heads)",
    c: str = "epsilon / d",
    check: bool = True,
) -> str:
    validation = (
        """
    if not (0 < lower < upper < 1) or not (math.isfinite(epsilon) and epsilon > 0) or not (0 <= heads <= n):
        raise ValueError("bad arguments")
    if neighbouring not in ("replace", "add_remove"):
        raise ValueError("neighbouring")"""
        if check
        else ""
    )
    return f"""
def coin_beta_parameters(heads, n, epsilon, lower, upper, neighbouring):{validation}
    logit = {_LOGIT}
    if neighbouring == "replace":
        d = {replace}
    else:
        d = {add_remove}
    c = {c}
    a, b = {ab}
    return float(a), float(b)
"""


_REPLACE = "max(abs(logit(lower)), abs(logit(upper)))"
_ADD_REMOVE = "max(-math.log(lower), -math.log(1.0 - upper))"
# issue 50: the sharpest exponent is epsilon over the range of the change one neighbour makes
_REP_RANGE = "logit(upper) - logit(lower)"
_AR_RANGE = "max(math.log(upper / lower), math.log((1.0 - lower) / (1.0 - upper)))"


def _median_utility(
    below: str = "<",
    above: str = ">",
    add_remove: str = "1.0",
    replace: str = "1.0",
    check: bool = True,
    order: str = "c",
) -> str:
    validation = (
        """
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(c))):
        raise ValueError("NaN or infinite value")"""
        if check
        else ""
    )
    return f"""
def my_median_utility(data, candidates):
    x = np.asarray(data, dtype=float).ravel()
    c = np.asarray(candidates, dtype=float){validation}
    c = {order}
    b = (x[None, :] {below} c[:, None]).sum(axis=1)
    a = (x[None, :] {above} c[:, None]).sum(axis=1)
    return -np.abs(b - a).astype(float)


def larger_side_sensitivity(neighbouring):
    if neighbouring == "add_remove":
        return {add_remove}
    if neighbouring == "replace":
        return {replace}
    raise ValueError("neighbouring")
"""


def _median(
    exponent: str = "epsilon * (s - s.max()) / 2.0",
    weight: str = "np.log(right - left)",
    pick: str = "rng.uniform(left[i], right[i])",
    keep: str = "x",
    check: bool = True,
) -> str:
    """Exercise 6 (the median on the whole interval) with one slip."""
    validation = (
        """
    if not (math.isfinite(epsilon) and epsilon > 0) or not (math.isfinite(lower) and math.isfinite(upper)) \\
            or not lower < upper:
        raise ValueError("bad arguments")"""
        if check
        else ""
    )
    return f"""
def continuous_private_median(data, lower, upper, epsilon, rng):{validation}
    x = np.sort(np.asarray(data, dtype=float).ravel())
    x = {keep}
    edges = np.concatenate(([lower], x[(x > lower) & (x < upper)], [upper]))
    ok = np.diff(edges) > 0
    left, right = edges[:-1][ok], edges[1:][ok]
    mids = (left + right) / 2.0
    s = -np.abs((x[None, :] < mids[:, None]).sum(axis=1) - (x[None, :] > mids[:, None]).sum(axis=1)).astype(float)
    logits = {weight} + {exponent}
    i = int(np.argmax(logits + rng.gumbel(size=logits.size)))
    return float({pick})
"""


_BUDGET_CHECK = """
    if a.size == 0 or not np.all((a >= 0.0) & (a <= 1.0)) or np.unique(a).size != a.size:
        raise ValueError("levels")
    if w.shape != a.shape or not np.all(np.isfinite(w) & (w > 0)):
        raise ValueError("weights")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError("epsilon")"""


def _budgets(
    total: str = "cost(0, a.size)",
    mid: str = "(lo + hi) // 2",
    ret: str = "epsilon * w / total",
    check: str = _BUDGET_CHECK,
) -> str:
    """Exercise 7 (a budget per level) with one slip; ``cost`` is the worst chain, ``rounds`` the
    largest weight of each round, ``depth`` the number of rounds."""
    return f"""
def recursive_quantile_budgets(levels, weights, epsilon):
    a = np.asarray(levels, dtype=float).ravel()
    w = np.asarray(weights, dtype=float).ravel(){check}
    order = np.argsort(a)
    ws = w[order]

    def cost(lo, hi):
        if lo >= hi:
            return 0.0
        mid = {mid}
        return ws[mid] + max(cost(lo, mid), cost(mid + 1, hi))

    per_round = {{}}

    def visit(lo, hi, r):
        if lo < hi:
            mid = {mid}
            per_round[r] = max(per_round.get(r, 0.0), ws[mid])
            visit(lo, mid, r + 1)
            visit(mid + 1, hi, r + 1)

    visit(0, a.size, 0)
    depth = len(per_round)
    rounds = sum(per_round.values())
    total = {total}
    return {ret}
"""


# ------------------------------------------------------------------------------ wrong answers

WRONG = {
    "exponential_probabilities": [
        (
            "the factor 2 dropped (monotone exponent)",
            _probabilities("epsilon * (u - u.max()) / sensitivity"),
        ),
        ("no shift: exp(1e6) overflows", _probabilities("epsilon * u / (2.0 * sensitivity)")),
        (
            "shifted by the minimum: overflows at 3000",
            _probabilities("epsilon * (u - u.min()) / (2.0 * sensitivity)"),
        ),
        (
            "NaN scores accepted",
            _probabilities("epsilon * (u - u.max()) / (2.0 * sensitivity)", finite=False),
        ),
        (
            "Delta / (2 eps) for eps / (2 Delta)",
            _probabilities("sensitivity * (u - u.max()) / (2.0 * epsilon)"),
        ),
        (
            "parameters checked with <= 0 only: NaN accepted",
            _probabilities(
                "epsilon * (u - u.max()) / (2.0 * sensitivity)",
                check="""
    if sensitivity <= 0 or epsilon <= 0:
        raise ValueError("sensitivity and epsilon must be > 0")""",
            ),
        ),
    ],
    "sample_exponential": [
        # the i-th wrong answer here is handed in with Exercise 1's i-th (the test forgives a
        # sampler that is right on a wrong Exercise 1): none of these matches its partner's law
        (
            "Laplace noise of scale 2 Delta k / eps",
            _topk("rng.laplace(0.0, 2.0 * sensitivity * k / epsilon, u.size)"),
        ),
        (
            "Gumbel noise of scale 2 Delta / eps, read in help(dplib.report_noisy_max) (the old "
            "exercise's answer): the whole epsilon in every round",
            _topk("rng.gumbel(0.0, 2.0 * sensitivity / epsilon, u.size)"),
        ),
        (
            "one-sided exponential noise (permute-and-flip)",
            _topk("rng.exponential(2.0 * sensitivity * k / epsilon, u.size)"),
        ),
        (
            "numpy's global generator, not rng",
            _topk("np.random.gumbel(0.0, 2.0 * sensitivity * k / epsilon, u.size)"),
        ),
        (
            "Gumbel noise of scale Delta k / eps (factor 2 dropped)",
            _topk("rng.gumbel(0.0, sensitivity * k / epsilon, u.size)"),
        ),
        ("Gumbel-top-k without the contract's checks: NaN accepted", _topk(_GUMBEL, check=False)),
        (
            "k independent draws of the exponential mechanism at eps / k (a candidate can repeat)",
            """
def sample_exponential_topk(scores, k, sensitivity, epsilon, rng):
    u = np.asarray(scores, dtype=float)
    if not (math.isfinite(sensitivity) and sensitivity > 0 and math.isfinite(epsilon) and epsilon > 0):
        raise ValueError("bad")
    if not np.all(np.isfinite(u)) or int(k) != k or not 1 <= k <= u.size:
        raise ValueError("bad")
    return [int(np.argmax(u + rng.gumbel(0.0, 2.0 * sensitivity * k / epsilon, u.size))) for _ in range(int(k))]
""",
        ),
        (
            "the scale off by one round: 2 Delta (k + 1) / eps",
            _topk("rng.gumbel(0.0, 2.0 * sensitivity * (k + 1) / epsilon, u.size)"),
        ),
        (
            "the k winners in index order, not in the order of the rounds",
            _topk(_GUMBEL, order="sorted(np.argsort(-noisy, kind='stable')[:k])"),
        ),
        (
            "the noise scale 10 % too large",
            _topk("rng.gumbel(0.0, 2.2 * sensitivity * k / epsilon, u.size)"),
        ),
    ],
    "worst_case_gap": [
        ("the bound itself", _gap("math.log(m / beta) / c")),
        ("(1 - beta) left out of the normaliser", _gap("math.log((m - 1) / beta) / c")),
        ("the factor 2 dropped", _gap("math.log((m - 1) * (1 - beta) / beta) / (2.0 * c)")),
        ("log2 for ln", _gap("math.log2((m - 1) * (1 - beta) / beta) / c")),
        (
            "no checks: NaN beta accepted",
            _gap("math.log((m - 1) * (1 - beta) / beta) / c", check=False),
        ),
        (
            "beta only checked below 1",
            _gap("math.log((m - 1) * (1 - beta) / beta) / c", beta_limit="1"),
        ),
        ("m for m - 1 (every candidate counted bad)", _gap("math.log(m * (1 - beta) / beta) / c")),
    ],
    "coin_beta_parameters": [
        ("neighbouring relations swapped", _coin(_AR_RANGE, _REP_RANGE)),
        (
            "section 2's recipe c = eps / (2 Delta), read in help(beta_bias_parameters) (the old answer: "
            "private, not the sharpest)",
            _coin(_REPLACE, _ADD_REMOVE, c="epsilon / (2.0 * d)"),
        ),
        (
            "the monotone form eps / Delta where every score moves one way, eps / (2 Delta) elsewhere "
            "(the old exercise's sharper form: not the sharpest)",
            _coin(
                _REPLACE,
                _ADD_REMOVE,
                c='epsilon / (d if neighbouring == "add_remove" or upper <= 0.5 or lower >= 0.5 else 2.0 * d)',
            ),
        ),
        (
            "no checks: NaN and unknown relations accepted",
            _coin(_REP_RANGE, _AR_RANGE, check=False),
        ),
        (
            "a = c H (the +1 of the Beta forgotten)",
            _coin(_REP_RANGE, _AR_RANGE, ab="c * heads, c * (n - heads)"),
        ),
        (
            "add/remove: only a head's range ln(upper / lower)",
            _coin(_REP_RANGE, "math.log(upper / lower)"),
        ),
        (
            "log2 for ln",
            _coin(
                "math.log2(upper / (1 - upper)) - math.log2(lower / (1 - lower))",
                "max(math.log2(upper / lower), math.log2((1.0 - lower) / (1.0 - upper)))",
            ),
        ),
        (
            "the range, with the factor 2 kept",
            _coin(_REP_RANGE, _AR_RANGE, c="epsilon / (2.0 * d)"),
        ),
        (
            "the factor 2 dropped everywhere (not private under replace-one around 1/2)",
            _coin(_REPLACE, _ADD_REMOVE, c="epsilon / d"),
        ),
    ],
    "median_utility": [
        ("<= for < (values equal to c counted below)", _median_utility(below="<=")),
        ("NaN accepted (counts for nobody)", _median_utility(check=False)),
        (
            "the balance score's sensitivities 1 and 2, read in help(median_utility) (the old exercise's "
            "answer): replace-one's 2 is valid for v, not the smallest",
            _median_utility(replace="2.0"),
        ),
        (
            "1/2 under add/remove, 1 under replace-one (the quantile score at a = 1/2, help(quantile_utility))",
            _median_utility(add_remove="0.5"),
        ),
        ("candidates sorted (fits the sorted visible inputs)", _median_utility(order="np.sort(c)")),
        (
            "2 for both: one side down and the other up, added",
            _median_utility(add_remove="2.0", replace="2.0"),
        ),
        ("1/2 under replace-one (v is half the balance score)", _median_utility(replace="0.5")),
    ],
    "private_median": [
        # the i-th wrong answer here is handed in with Exercise 5's i-th (the test forgives a median
        # built right on a wrong Exercise 5's utility: each slip there leaves the scores of the
        # pieces' midpoints, which are no data points, unchanged, so none makes these look right)
        (
            "no factor 2: the median utility is not monotone",
            _median(exponent="epsilon * (s - s.max())"),
        ),
        (
            "replace-one's sensitivity 2 under add/remove",
            _median(exponent="epsilon * (s - s.max()) / 4.0"),
        ),
        (
            "dplib's private_median, read in help(): 1001 grid points (the old exercise's answer)",
            """
def continuous_private_median(data, lower, upper, epsilon, rng):
    if not (math.isfinite(epsilon) and epsilon > 0) or not lower < upper:
        raise ValueError("bad arguments")
    grid = np.linspace(lower, upper, 1001)
    x = np.asarray(data, dtype=float)
    s = -np.abs((x[None, :] < grid[:, None]).sum(axis=1) - (x[None, :] > grid[:, None]).sum(axis=1)).astype(float)
    p = np.exp(epsilon * (s - s.max()) / 2.0)
    return float(grid[int(rng.choice(grid.size, p=p / p.sum()))])
""",
        ),
        ("no checks: epsilon 0 and NaN accepted", _median(check=False)),
        (
            "pieces chosen by their scores only, not weighted by their lengths",
            _median(weight="0.0"),
        ),
        ("values outside [lower, upper] dropped", _median(keep="x[(x >= lower) & (x <= upper)]")),
        (
            "rng ignored inside the piece: numpy's global generator",
            _median(pick="np.random.uniform(left[i], right[i])"),
        ),
        ("the middle of the chosen piece, not a uniform point in it", _median(pick="mids[i]")),
    ],
    "counterexample_noisy_max": [
        (
            "two candidates: the ratio is exactly e^eps = 4, not more",
            """
def noisy_max_witness():
    return [1, 1], [0, 2], [(0, 1)]
""",
        ),
        (
            "not neighbours: a score moves by 2",
            """
def noisy_max_witness():
    return [2, 0, 0], [0, 2, 2], [(0, 1)]
""",
        ),
        (
            "a value only the float sampler outputs: probability 0 on both",
            """
def noisy_max_witness():
    return [1, 1, 1], [0, 2, 2], [(0, 1.5)]
""",
        ),
        (
            "the index alone (every value of candidate 0): ratio below 4",
            """
def noisy_max_witness():
    return [1, 1, 1], [0, 2, 2], [(0, v) for v in range(-50, 51)]
""",
        ),
        (
            "an index the mechanism never outputs",
            """
def noisy_max_witness():
    return [1, 1, 1], [0, 2, 2], [(3, 1)]
""",
        ),
    ],
    "quantiles_recursive": [
        (
            "epsilon / L for every level, read in help(dplib.private_quantiles) (the old exercise's answer): "
            "the weights ignored",
            _budgets(ret="np.full(a.size, epsilon / depth)"),
        ),
        (
            "every mechanism composed sequentially: the sum of all weights (private, not the largest)",
            _budgets(total="w.sum()"),
        ),
        (
            "round by round: the sum of each round's largest weight (private, not the largest)",
            _budgets(total="rounds"),
        ),
        (
            "the depth times the largest weight (private, not the largest)",
            _budgets(total="depth * w.max()"),
        ),
        (
            "the lower of the two middle levels at the root of an even part",
            _budgets(mid="(lo + hi - 1) // 2"),
        ),
        (
            "the whole epsilon on the heaviest level: parallel composition everywhere",
            _budgets(total="w.max()"),
        ),
        (
            "the budgets in the sorted order of the levels, not the order given",
            _budgets(ret="epsilon * ws / total"),
        ),
        (
            "epsilon / m for every level, as for separate releases",
            _budgets(ret="np.full(a.size, epsilon / a.size)"),
        ),
        ("no checks: NaN levels, repeated levels and zero weights accepted", _budgets(check="")),
    ],
}

# ------------------------------------------------------------------------------ alternatives

ALTERNATIVES = {
    "exponential_probabilities": [
        """
def exponential_probabilities(scores, sensitivity, epsilon):
    from scipy import special
    if not (0 < sensitivity < math.inf and 0 < epsilon < math.inf):
        raise ValueError("sensitivity and epsilon must be finite and > 0")
    u = np.array(scores, dtype=float)
    if np.isnan(u).any() or np.isinf(u).any():
        raise ValueError("scores must be finite")
    return special.softmax(u * (epsilon / (2 * sensitivity)))
""",
        """
def exponential_probabilities(scores, sensitivity, epsilon):
    if np.isnan(sensitivity) or np.isnan(epsilon) or min(sensitivity, epsilon) <= 0 or max(sensitivity, epsilon) == np.inf:
        raise ValueError("bad sensitivity or epsilon")
    logits = [epsilon * float(s) / (2 * sensitivity) for s in scores]
    if not all(math.isfinite(v) for v in logits) or not all(math.isfinite(float(s)) for s in scores):
        raise ValueError("scores must be finite")
    top = max(logits)
    log_z = top + math.log(sum(math.exp(v - top) for v in logits))
    return np.array([math.exp(v - log_z) for v in logits])
""",
    ],
    "sample_exponential": [
        """
def sample_exponential_topk(scores, k, sensitivity, epsilon, rng):
    rng.random({burn})
    if not (0 < sensitivity < math.inf and 0 < epsilon < math.inf):
        raise ValueError("sensitivity and epsilon must be finite and > 0")
    u = np.asarray(scores, dtype=float)
    if not np.isfinite(u).all():
        raise ValueError("scores must be finite")
    if k != int(k) or k < 1 or k > u.size:
        raise ValueError("k must be an integer from 1 to the number of candidates")
    k = int(k)
    g = u + rng.gumbel(0.0, 2 * sensitivity * k / epsilon, size=u.shape)
    out = []
    for _ in range(k):                   # the largest, then the largest of the rest, ...
        i = int(np.argmax(g))
        out.append(i)
        g[i] = -np.inf
    return out
""",
        """
def sample_exponential_topk(scores, k, sensitivity, epsilon, rng):
    u = np.asarray(scores, dtype=float)
    if not (isinstance(k, (int, np.integer)) or float(k).is_integer()) or not 1 <= k <= u.size:
        raise ValueError("k must be an integer from 1 to len(scores)")
    exponential_probabilities(scores, sensitivity, epsilon)      # the checks of Exercise 1
    rng.random({burn})
    rest, chosen = list(range(u.size)), []
    for _ in range(int(k)):             # k rounds at epsilon / k, each among those left
        p = exponential_probabilities(u[rest], sensitivity, epsilon / k)
        j = int(rng.choice(len(rest), p=p / p.sum()))
        chosen.append(rest.pop(j))
    return chosen
""",
    ],
    "worst_case_gap": [
        """
def worst_case_gap(n_candidates, sensitivity, epsilon, beta):
    m = n_candidates
    if m < 2 or math.isnan(beta) or beta <= 0 or beta * m >= m - 1:
        raise ValueError("need m >= 2 and 0 < beta < (m - 1) / m")
    if not (0 < sensitivity < math.inf and 0 < epsilon < math.inf):
        raise ValueError("sensitivity and epsilon must be finite and > 0")
    return 2 * sensitivity / epsilon * (math.log(m - 1) + math.log1p(-beta) - math.log(beta))
""",
        """
def worst_case_gap(n_candidates, sensitivity, epsilon, beta):
    from scipy import optimize
    m = n_candidates
    if not (m >= 2 and 0 < beta < (m - 1) / m and 0 < sensitivity < math.inf and 0 < epsilon < math.inf):
        raise ValueError("arguments out of range")
    c = epsilon / (2 * sensitivity)

    def excess(r):   # P(bad) - beta, written with the good candidate's share
        return 1.0 - 1.0 / (1.0 + (m - 1) * math.exp(-c * r)) - beta

    hi = 1.0 / c
    while excess(hi) > 0:
        hi *= 2
    return float(optimize.brentq(excess, 0.0, hi, xtol=1e-15, rtol=1e-15, maxiter=500))
""",
    ],
    "coin_beta_parameters": [
        """
def coin_beta_parameters(heads, n, epsilon, lower, upper, neighbouring):
    from scipy import special
    if not (0 < lower and lower < upper and upper < 1):
        raise ValueError("need 0 < lower < upper < 1")
    if not (0 < epsilon < math.inf) or heads < 0 or heads > n:
        raise ValueError("bad epsilon or heads")
    ranges = {
        "replace": float(special.logit(upper) - special.logit(lower)),
        "add_remove": float(max(np.log(upper / lower), np.log1p(-lower) - np.log1p(-upper))),
    }
    if neighbouring not in ranges:
        raise ValueError("neighbouring must be 'replace' or 'add_remove'")
    weight = epsilon / ranges[neighbouring]
    return (heads * weight + 1.0, (n - heads) * weight + 1.0)
""",
        """
def coin_beta_parameters(heads, n, epsilon, lower, upper, neighbouring):
    ok = isinstance(neighbouring, str) and neighbouring in {"replace", "add_remove"}
    if not ok or not (0 < lower < upper < 1) or not (epsilon > 0 and math.isfinite(epsilon)) or not 0 <= heads <= n:
        raise ValueError("bad arguments")
    theta = np.linspace(lower, upper, 2001)            # both ends included
    if neighbouring == "replace":
        changes = [np.log(theta) - np.log(1 - theta)]   # one tail turned into a head
    else:
        changes = [np.log(theta), np.log(1 - theta)]    # one head, or one tail, added
    # the proof's two factors: e^(c max change) and e^(-c min change), so c times the range
    spread = max(float(np.ptp(ch)) for ch in changes)
    return float(1 + epsilon * heads / spread), float(1 + epsilon * (n - heads) / spread)
""",
    ],
    "median_utility": [
        """
def my_median_utility(data, candidates):
    x = np.sort(np.asarray(data, dtype=float).ravel())
    c = np.asarray(candidates, dtype=float).ravel()
    if np.isnan(x).any() or np.isnan(c).any() or np.isinf(x).any() or np.isinf(c).any():
        raise ValueError("no NaN or infinite values")
    below = np.searchsorted(x, c, side="left")
    above = x.size - np.searchsorted(x, c, side="right")
    return -np.abs(below - above).astype(float)


def larger_side_sensitivity(neighbouring):
    table = {"add_remove": 1.0, "replace": 1.0}
    if not isinstance(neighbouring, str) or neighbouring not in table:
        raise ValueError(f"unknown relation {neighbouring!r}")
    return table[neighbouring]
""",
        """
def my_median_utility(data, candidates):
    xs = [float(v) for v in np.ravel(data)]
    cs = [float(v) for v in np.ravel(candidates)]
    if not all(math.isfinite(v) for v in xs + cs):
        raise ValueError("no NaN or infinite values")
    out = []
    for c in cs:
        balance = sum(1 for v in xs if v < c) - sum(1 for v in xs if v > c)
        out.append(-abs(balance))
    return np.array(out, dtype=float)


def larger_side_sensitivity(neighbouring):
    # how each side moves: add/remove, one side by one; replace-one, one side -1 and the other +1
    moves = {"add_remove": [(1, 0), (0, 1), (-1, 0), (0, -1)], "replace": [(1, -1), (-1, 1), (1, 0), (0, 1)]}
    if neighbouring not in ("add_remove", "replace"):
        raise ValueError("neighbouring must be 'add_remove' or 'replace'")
    worst = 0
    for below in range(4):        # max(b + db, a + da) - max(b, a) on small counts is the worst case
        for above in range(4):
            for db, da in moves[neighbouring]:
                if below + db >= 0 and above + da >= 0:
                    worst = max(worst, abs(max(below + db, above + da) - max(below, above)))
    return float(worst)
""",
    ],
    "private_median": [
        """
def continuous_private_median(data, lower, upper, epsilon, rng):
    rng.random({burn})
    if not (0 < epsilon < math.inf) or not (-math.inf < lower < upper < math.inf):
        raise ValueError("bad arguments")
    x = np.asarray(data, dtype=float).ravel()
    cuts = np.unique(np.clip(x, lower, upper))            # repeated values cut once
    edges = np.unique(np.concatenate(([lower], cuts, [upper])))
    left, right = edges[:-1], edges[1:]
    scores = my_median_utility(x, (left + right) / 2.0)
    w = (right - left) * np.exp(epsilon * (scores - scores.max()) / 2.0)   # Delta u = 1, factor 2
    i = int(rng.choice(w.size, p=w / w.sum()))
    return float(left[i] + (right[i] - left[i]) * rng.random())
""",
        """
def continuous_private_median(data, lower, upper, epsilon, rng):
    if math.isnan(lower) or math.isnan(upper) or math.isnan(epsilon) or epsilon <= 0 or epsilon == math.inf:
        raise ValueError("bad epsilon or range")
    if math.isinf(lower) or math.isinf(upper) or lower >= upper:
        raise ValueError("need finite lower < upper")
    rng.random({burn})
    xs = sorted(float(v) for v in np.ravel(data))
    inner = [v for v in xs if lower < v < upper]
    pieces = [(a, b) for a, b in zip([lower] + inner, inner + [upper]) if b > a]
    logw = []
    for a, b in pieces:
        m = (a + b) / 2
        u = -abs(sum(v < m for v in xs) - sum(v > m for v in xs))
        logw.append(math.log(b - a) + epsilon * u / 2)
    top = max(logw)
    cdf = np.cumsum([math.exp(v - top) for v in logw])
    i = int(min(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"), len(pieces) - 1))
    a, b = pieces[i]
    return float(rng.uniform(a, b))
""",
    ],
    "counterexample_noisy_max": [
        """
def noisy_max_witness():
    return [0, 2, 2], [1, 1, 1], [(0, 1)]
""",
        """
def noisy_max_witness():
    return [1, 1, 1, 1], [0, 2, 2, 2], [(0, 1), (0, 0)]
""",
    ],
    "quantiles_recursive": [
        """
def recursive_quantile_budgets(levels, weights, epsilon):
    pairs = sorted(zip([float(v) for v in levels], [float(v) for v in weights]))
    if not pairs or not len(pairs) == len(list(levels)) == len(list(weights)):
        raise ValueError("one weight per level, at least one level")
    if any(not 0 <= a <= 1 for a, _ in pairs) or len({a for a, _ in pairs}) != len(pairs):
        raise ValueError("distinct levels in [0, 1]")
    if any(not (0 < w < math.inf) for _, w in pairs):
        raise ValueError("weights finite and > 0")
    if not (0 < epsilon < math.inf):
        raise ValueError("epsilon finite and > 0")
    # walk the recursion's tree with an explicit stack, carrying the weight paid so far
    worst, stack = 0.0, [(0, len(pairs), 0.0)]
    while stack:
        lo, hi, paid = stack.pop()
        if lo < hi:
            mid = lo + (hi - lo) // 2
            here = paid + pairs[mid][1]
            worst = max(worst, here)
            stack += [(lo, mid, here), (mid + 1, hi, here)]
    return np.array([epsilon * float(w) / worst for w in weights])
""",
        """
def recursive_quantile_budgets(levels, weights, epsilon):
    a = np.array(levels, dtype=float, ndmin=1)
    w = np.array(weights, dtype=float, ndmin=1)
    if a.ndim != 1 or a.size < 1 or w.shape != a.shape:
        raise ValueError("levels and weights: two lists of the same non-zero length")
    if np.isnan(a).any() or a.min() < 0 or a.max() > 1 or len(set(a.tolist())) < a.size:
        raise ValueError("levels: distinct numbers in [0, 1]")
    if not np.isfinite(w).all() or (w <= 0).any() or math.isnan(epsilon) or not 0 < epsilon < math.inf:
        raise ValueError("weights and epsilon: finite and > 0")

    def chain(ws):                      # the sorted part's weights -> its worst chain
        if len(ws) == 0:
            return 0.0
        k = len(ws) // 2                # the upper middle of an even part
        return ws[k] + max(chain(ws[:k]), chain(ws[k + 1:]))

    return epsilon / chain(list(w[np.argsort(a, kind="stable")])) * w
""",
    ],
}

# ------------------------------------------------------------------------------------- grading

PROBE = Probe(NAME, EXERCISES, WRONG, ALTERNATIVES)
install(PROBE, globals())  # the fixture and the three tests: tests/support/notebook_probes.py
