"""Notebook 04's hidden tests have power: plausible wrong answers score 0, correct alternatives pass.

Issue 31 (third edition): for every exercise of ``solutions/04_composition`` (the small-database
mechanism included), three or more plausible wrong answers (variance for standard deviation,
rounding where the contract needs a ceiling or a floor, a decoder that fits only databases with
half their bits set, the neighbouring relations swapped, a budget charged before it is checked,
delta charged where sequential composition needs none, arithmetic that overflows at a large but
valid epsilon, noise scales halved or swapped, a NaN parameter accepted where the contract says
raise, the utility's sign flipped, epsilon for epsilon / 2, candidates of the wrong size,
randomness not drawn from ``rng``...) are handed in and graded by the real trusted grader
(:func:`coursetools.grading.grade.grade_job`); each must score 0 on its exercise. Two correct
alternatives per exercise, written differently from the solution, must get full marks under five
seeds (``{burn}`` draws of the generator are burnt first, which changes every random outcome).

The graded notebook is the course notebook without its figures and experiments, and one
submission carries the i-th wrong answer of every exercise at once (the exercises' tests are
independent).

Exercise 2 (issue 50, item 9) asks for the bits back from a curator who lies outright on a fifth
of the answers (wild numbers, plausible counts, another database's counts), judged by the share of
bits recovered against the secret drawn in the test; probes: least squares (the decoder
``help(dplib.attacks.reconstruct)`` prints, the old answer), Dinur and Nissim's min-max program,
implausible answers dropped then least squares, the absolute-error fit rounded at the median or
not rounded, the first n answers solved; alternatives: trimmed least squares and a soft-L1 fit.

Exercise 5 (issue 50, item 9) asks for the smallest bound on the mean privacy loss of one
epsilon-DP release (epsilon tanh(epsilon / 2), randomized response's), judged against the worst
two-output pair found in the test, and the largest k it certifies in advanced composition's
proof; probes: epsilon (e^epsilon - 1) (``help(dplib.advanced_composition)``, the old answer),
epsilon^2 / 2, tanh(epsilon / 2), epsilon tanh(epsilon), exp overflowing, floor by //, delta
charged where sequential composition needs none, NaN accepted, the search capped at 100 000.

Exercise 3 (issue 50, item 9) adds the noisy total count to the histogram with unequal budgets:
max + total under add/remove, the two largest under replace-one (the total does not move), judged
against a brute force over every move of one patient; probes: the largest bin alone
(``help(dplib.parallel_composition)``, the old answer), the total charged under replace-one, the
relations swapped, twice the largest, the sum of everything, the first two bins unsorted, the
larger of bin and total, NaN accepted.

Exercise 7 (issue 50, item 9) asks for the L1 sensitivity of a 0/1 workload when one person ticks
at most c distinct boxes (the sum of the c largest column sums), judged against a brute force over
every set of at most c boxes computed in the test; probes: the largest column sum
(``help(dplib.linear_query_sensitivity)``, the old answer), c times it, the c + 1
largest, the c largest row sums, the first c columns, shared noise, scale 1 / epsilon,
numpy's global generator, NaN accepted.

Exercise 6 (issue 50, item 9) asks for AboveThreshold on counts under add/remove (queries that
all move the same way), where both noises have scale 2 / epsilon (Lyu, Su & Li 2017, monotonic
queries), judged against the exact output law computed in the test; probes: query noise
4 / epsilon (``help(dplib.above_threshold)``, the old answer), 1 / epsilon, the whole epsilon to
each noise, no threshold noise, Lyu et al.'s unequal split, the threshold redrawn, numpy's global
generator, NaN accepted.

Find the counterexample (issue 39, item 2): AboveThreshold releasing its noisy value (Lyu, Su & Li
2017, Algorithm 3, c = 1). Wrong witnesses: two queries (ratio exactly e^eps), non-neighbours, a
value only a float sampler outputs, one query's index alone, an index past the last query; the
alternatives are the solution's pair in the other order and a four-query witness (ratio 16).

Budgets chosen as you go (issue 40, items 3 and 5; issue 50, item 9): a filter that admits the
second question when the fixed sequence (first, second) has exact delta <= 1/20 at ln 2 is unsound;
the first question is now fixed, a three-answer ordinal question with laws (2, 3, 4)/9 and
(4, 3, 2)/9 (help(dplib.adaptive_composition_counterexample) describes the construction for a
two-answer randomized response only). Wrong witnesses: the two-answer witness of the help (the old
answer), the same question after every answer (no adaptivity: delta exactly 1/20), randomized
response after "middle" instead of "high", the branch after "high" calibrated to the whole delta
(the factor 4/9 forgotten: 1/20 again), a branch the filter refuses (randomized response too
strong; a reveal of probability 1/10), and a float witness exactly at the boundary (0.05 and 0.95
are not exact binary numbers: the reveal branch's delta rounds above 1/20); the alternatives are
the solution in scaled weights and a float witness with a margin.
"""

from __future__ import annotations

from notebook_probes import Probe, install

NAME = "04_composition"

EXERCISES = {
    "averaging_attack": "averaging_attack_tests",
    "reconstruct_bits": "reconstruct_bits_tests",
    "histogram_epsilon": "histogram_epsilon_tests",
    "budget_accountant": "budget_accountant_tests",
    "max_releases": "max_releases_tests",
    "above_threshold": "above_threshold_tests",
    "laplace_workload": "laplace_workload_tests",
    "small_database": "small_database_tests",
    "counterexample_sparse_vector": "counterexample_sparse_vector_tests",
    "filter_counterexample": "filter_counterexample_tests",
}

_RELEASE = """
def averaged_release(true_count, epsilon, k, rng):
    return float(true_count + rng.laplace(0.0, 1.0 / epsilon, size=k).mean())
"""


def _repeats(body: str, release: str = _RELEASE, check: bool = True) -> str:
    validation = (
        """
    if not (math.isfinite(epsilon) and epsilon > 0 and math.isfinite(target_sd) and target_sd > 0):
        raise ValueError("epsilon and target_sd must be finite and > 0")"""
        if check
        else ""
    )
    return (
        release
        + f"""
def repeats_needed(epsilon, target_sd):{validation}
    return int(max(1, {body}))
"""
    )


_CEIL = "math.ceil(2.0 / (epsilon * target_sd) ** 2 - 1e-9)"


def _decoder(rule: str) -> str:
    return f"""
def reconstruct_bits(subsets, answers):
    A = np.asarray(subsets, dtype=float)
    a = np.asarray(answers, dtype=float)
    est = np.linalg.lstsq(A, a, rcond=None)[0]
    return {rule}
"""


def _lad(objective: str = "sum", rule: str = "(x >= 0.5).astype(int)") -> str:
    # a linear-program fit: the sum of absolute errors (one slack per answer) or the largest error
    slacks = "m" if objective == "sum" else "1"
    return f"""
def reconstruct_bits(subsets, answers):
    from scipy.optimize import linprog
    A = np.asarray(subsets, dtype=float)
    a = np.asarray(answers, dtype=float)
    m, n = A.shape
    k = {slacks}
    T = np.eye(m) if k == m else np.ones((m, 1))
    fit = linprog(np.r_[np.zeros(n), np.ones(k)], A_ub=np.block([[A, -T], [-A, -T]]), b_ub=np.r_[a, -a],
                  bounds=[(0.0, 1.0)] * n + [(0.0, None)] * k, method="highs")
    x = fit.x[:n]
    return {rule}
"""


def _histogram(add: str, rep: str, check: bool = True) -> str:
    validation = (
        """
    if e.size < 2 or not np.all(np.isfinite(e) & (e > 0)) or not (math.isfinite(total_epsilon) and total_epsilon > 0):
        raise ValueError("bin_epsilons or total_epsilon")"""
        if check
        else ""
    )
    return f"""
def histogram_epsilon(bin_epsilons, total_epsilon, neighbouring):
    e = np.asarray(bin_epsilons, dtype=float){validation}
    t = float(total_epsilon)
    s = np.sort(e)[::-1]
    if neighbouring == "add_remove":
        return float({add})
    if neighbouring == "replace":
        return float({rep})
    raise ValueError("neighbouring")
"""


def _accountant(
    *,
    init_check: str = "math.isfinite(epsilon) and epsilon > 0",
    spend: str | None = None,
    count: str | None = None,
    over: str = "self.spent + epsilon > self.budget",
) -> str:
    spend = (
        spend
        or f"""
        if not (math.isfinite(epsilon) and epsilon > 0):
            raise ValueError("epsilon")
        if {over}:
            raise BudgetExceededError("over budget")
        self.spent += float(epsilon)"""
    )
    count = (
        count
        or """
        self.spend(epsilon)
        return float(len(data) + rng.laplace(0.0, 1.0 / epsilon))"""
    )
    return f"""
class BudgetAccountant:
    def __init__(self, epsilon):
        if not ({init_check}):
            raise ValueError("budget")
        self.budget = float(epsilon)
        self.spent = 0.0

    def spend(self, epsilon):{spend}

    def laplace_count(self, data, epsilon, rng):{count}
"""


_SEQUENTIAL = """
    seq = math.floor(epsilon_total / epsilon_each)
    while (seq + 1) * epsilon_each <= epsilon_total:
        seq += 1
    while seq > 0 and seq * epsilon_each > epsilon_total:
        seq -= 1"""

_BISECT = """
    if advanced_epsilon(epsilon_each, 1, delta_total) > epsilon_total:
        return {ret_seq}
    lo, hi = 1, 2
    while advanced_epsilon(epsilon_each, hi, delta_total) <= epsilon_total:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if advanced_epsilon(epsilon_each, mid, delta_total) <= epsilon_total:
            lo = mid
        else:
            hi = mid
    return {ret}"""

_MR_CHECK = """
    for v in (epsilon_each, epsilon_total, delta_total):
        if not (math.isfinite(v) and v > 0):
            raise ValueError("arguments must be finite and > 0")
    if delta_total >= 1:
        raise ValueError("delta_total must be < 1")"""


_TANH = "epsilon * math.tanh(epsilon / 2)"


def _max_releases(
    *,
    mu: str = _TANH,
    advanced: str = "k * mean_loss_bound(epsilon) + epsilon * math.sqrt(2 * k * math.log(1 / delta_prime))",
    sequential: str = _SEQUENTIAL,
    check: str = _MR_CHECK,
    bisect: str = _BISECT.format(ret_seq="seq", ret="max(seq, lo)"),
) -> str:
    return f"""
def mean_loss_bound(epsilon):
    return float({mu})


def advanced_epsilon(epsilon, k, delta_prime):
    return float({advanced})


def max_releases(epsilon_each, epsilon_total, delta_total):{check}{sequential}{bisect}
"""


def _above(
    b_t: str = "2.0 / epsilon",
    b_q: str = "2.0 / epsilon",
    check: bool = True,
    redraw: bool = False,
    gen: str = "rng",
) -> str:
    validation = (
        """
    if not (math.isfinite(epsilon) and epsilon > 0) or math.isnan(threshold):
        raise ValueError("bad epsilon or threshold")"""
        if check
        else ""
    )
    t_line = f"rho = {gen}.laplace(0.0, {b_t})" if not redraw else "rho = 0.0"
    per_query = f"rho = {gen}.laplace(0.0, {b_t})\n        " if redraw else ""
    return f"""
def my_above_threshold(queries, threshold, epsilon, rng):{validation}
    {t_line}
    for i, v in enumerate(np.asarray(queries, dtype=float)):
        {per_query}if v + {gen}.laplace(0.0, {b_q}) >= threshold + rho:
            return i
    return None
"""


def _workload(
    sens: str,
    noise: str = "rng.laplace(0.0, workload_sensitivity(W, c) / epsilon, size=ans.shape)",
    check: bool = True,
) -> str:
    validation = (
        """
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError("epsilon")"""
        if check
        else ""
    )
    return f"""
def workload_sensitivity(queries, c):
    W = np.asarray(queries, dtype=float)
    cols = np.sort(W.sum(axis=0))[::-1]
    return float({sens})


def laplace_workload(histogram, queries, c, epsilon, rng):{validation}
    W = np.asarray(queries, dtype=float)
    ans = W @ np.asarray(histogram, dtype=float)
    return ans + {noise}
"""


_TOP_C = "cols[:c].sum()"


def _small_db(
    *,
    utility: str = "-np.max(err, axis=1)",
    sens: str = "1.0 / n",
    scale: str = "2.0",
    sizes: str = "[size]",
    gen: str = "rng",
    check: bool = True,
) -> str:
    validation = (
        """
    if not (math.isfinite(epsilon) and epsilon > 0) or size < 1:
        raise ValueError("epsilon or size")"""
        if check
        else ""
    )
    return f"""
def small_database(histogram, queries, size, epsilon, rng):
    import itertools{validation}
    h = np.asarray(histogram, dtype=float)
    W = np.asarray(queries, dtype=float)
    n = h.sum()
    if not n > 0:
        raise ValueError("empty histogram")
    cands = np.array([c for s in {sizes} for c in itertools.product(range(size + 1), repeat=h.size) if sum(c) == s])
    err = np.abs(cands @ W.T / np.maximum(cands.sum(axis=1, keepdims=True), 1) - W @ h / n)
    u = {utility}
    logits = epsilon * (u - u.max()) / ({scale} * ({sens}))
    p = np.exp(logits)
    return cands[{gen}.choice(len(cands), p=p / p.sum())].astype(int)
"""


# ------------------------------------------------------------------------------ wrong answers

WRONG = {
    "averaging_attack": [
        (
            "variance of Laplace(b) taken as b^2",
            _repeats("math.ceil(1.0 / (epsilon * target_sd) ** 2 - 1e-9)"),
        ),
        ("round for the ceiling", _repeats("round(2.0 / (epsilon * target_sd) ** 2)")),
        (
            "standard deviation for variance",
            _repeats("math.ceil(math.sqrt(2.0) / (epsilon * target_sd) - 1e-9)"),
        ),
        ("floor for the ceiling", _repeats("int(2.0 / (epsilon * target_sd) ** 2)")),
        (
            "(a) one noise draw shared by the k answers",
            _repeats(
                _CEIL,
                release="""
def averaged_release(true_count, epsilon, k, rng):
    z = rng.laplace(0.0, 1.0 / epsilon)
    return float(sum(true_count + z for _ in range(k)) / k)
""",
            ),
        ),
        (
            "(a) numpy's global generator",
            _repeats(
                _CEIL,
                release="""
def averaged_release(true_count, epsilon, k, rng):
    return float(true_count + np.random.laplace(0.0, 1.0 / epsilon, size=k).mean())
""",
            ),
        ),
        ("no checks: infinite epsilon accepted", _repeats(_CEIL, check=False)),
    ],
    "reconstruct_bits": [
        (
            "least squares rounded at 1/2, read in help(dplib.attacks.reconstruct) (the old answer)",
            _decoder("(est >= 0.5).astype(int)"),
        ),
        (
            "Dinur and Nissim's min-max linear program (dplib's method='lp')",
            _lad(objective="minmax"),
        ),
        (
            "answers outside [0, |S|] dropped as lies, least squares on the rest",
            """
def reconstruct_bits(subsets, answers):
    A = np.asarray(subsets, dtype=float)
    a = np.asarray(answers, dtype=float)
    ok = (a >= -1.0) & (a <= A.sum(axis=1) + 1.0)
    est = np.linalg.lstsq(A[ok], a[ok], rcond=None)[0]
    return (est >= 0.5).astype(int)
""",
        ),
        (
            "the absolute-error fit rounded at the median (fits half-set databases)",
            _lad(rule="(x >= np.median(x)).astype(int)"),
        ),
        ("the absolute-error fit, not rounded", _lad(rule="x")),
        (
            "first n answers solved exactly",
            """
def reconstruct_bits(subsets, answers):
    A = np.asarray(subsets, dtype=float)
    n = A.shape[1]
    est = np.linalg.solve(A[:n] + 1e-9 * np.eye(n), np.asarray(answers, dtype=float)[:n])
    return (est >= 0.5).astype(int)
""",
        ),
    ],
    "histogram_epsilon": [
        (
            "the largest bin alone under add/remove, read in help(dplib.parallel_composition) (the old answer: "
            "the total forgotten)",
            _histogram("s[0]", "s[0] + s[1]"),
        ),
        ("the total charged under replace-one too", _histogram("s[0] + t", "s[0] + s[1] + t")),
        ("relations swapped", _histogram("s[0] + s[1]", "s[0] + t")),
        ("replace-one: twice the largest", _histogram("s[0] + t", "2 * s[0]")),
        ("add/remove: sequential sum of everything", _histogram("s.sum() + t", "s[0] + s[1]")),
        ("replace-one: the first two bins, unsorted", _histogram("s[0] + t", "e[0] + e[1]")),
        (
            "the larger of the bin and the total (parallel, not sequential)",
            _histogram("max(s[0], t)", "s[0] + s[1]"),
        ),
        ("no checks: NaN accepted", _histogram("s[0] + t", "s[0] + s[1]", check=False)),
    ],
    "budget_accountant": [
        (
            "charged before the check",
            _accountant(
                spend="""
        if not (math.isfinite(epsilon) and epsilon > 0):
            raise ValueError("epsilon")
        self.spent += float(epsilon)
        if self.spent > self.budget:
            raise BudgetExceededError("over budget")"""
            ),
        ),
        (
            "noise drawn before the charge",
            _accountant(
                count="""
        z = rng.laplace(0.0, 1.0 / epsilon)
        self.spend(epsilon)
        return float(len(data) + z)"""
            ),
        ),
        (
            "spending exactly the budget refused",
            _accountant(over="self.spent + epsilon >= self.budget"),
        ),
        (
            "spent shared between accountants",
            _accountant(
                spend="""
        if not (math.isfinite(epsilon) and epsilon > 0):
            raise ValueError("epsilon")
        if self.spent + epsilon > self.budget:
            raise BudgetExceededError("over budget")
        BudgetAccountant.total = getattr(BudgetAccountant, "total", 0.0) + float(epsilon)
        self.spent = BudgetAccountant.total"""
            ),
        ),
        (
            "noise scale 2 / epsilon",
            _accountant(
                count="""
        self.spend(epsilon)
        return float(len(data) + rng.laplace(0.0, 2.0 / epsilon))"""
            ),
        ),
        ("NaN budget accepted", _accountant(init_check="not epsilon <= 0")),
    ],
    "max_releases": [
        (
            "the textbook's epsilon (e^epsilon - 1), read in help(dplib.advanced_composition) (the old answer: "
            "valid, not the smallest)",
            _max_releases(mu="epsilon * math.expm1(epsilon) if epsilon < 700 else math.inf"),
        ),
        (
            "epsilon^2 / 2 (the small-epsilon form: valid, not the smallest)",
            _max_releases(mu="epsilon ** 2 / 2"),
        ),
        (
            "tanh(epsilon / 2), the factor epsilon dropped",
            _max_releases(mu="math.tanh(epsilon / 2)"),
        ),
        (
            "epsilon tanh(epsilon), the half dropped",
            _max_releases(mu="epsilon * math.tanh(epsilon)"),
        ),
        (
            "exp overflows at a large epsilon",
            _max_releases(mu="epsilon * (math.exp(epsilon) - 1) / (math.exp(epsilon) + 1)"),
        ),
        (
            "floor by // (1.0 // 0.1 = 9)",
            _max_releases(
                sequential="""
    seq = int(epsilon_total // epsilon_each)"""
            ),
        ),
        (
            "delta charged: the sharper composition only",
            _max_releases(bisect=_BISECT.format(ret_seq="0", ret="lo")),
        ),
        ("no checks: NaN accepted", _max_releases(check="")),
        (
            "search capped at 100 000 releases",
            _max_releases(
                bisect="""
    best = 0
    for k in range(1, 100_001):
        if advanced_epsilon(epsilon_each, k, delta_total) <= epsilon_total:
            best = k
        else:
            break
    return max(seq, best)"""
            ),
        ),
    ],
    "above_threshold": [
        (
            "query noise 4 / epsilon, read in help(dplib.above_threshold) (the old answer: queries that may move both ways)",
            _above(b_q="4.0 / epsilon"),
        ),
        ("threshold noise redrawn for every query", _above(redraw=True)),
        (
            "query noise 1 / epsilon (the stopping query's move not paid)",
            _above(b_q="1.0 / epsilon"),
        ),
        ("no checks: NaN accepted", _above(check=False)),
        ("numpy's global generator", _above(gen="np.random")),
        ("each noise given the whole epsilon", _above(b_t="1.0 / epsilon", b_q="1.0 / epsilon")),
        (
            "no threshold noise, the whole epsilon on the queries",
            _above(b_t="0.0", b_q="1.0 / epsilon"),
        ),
        (
            "Lyu et al.'s unequal split 1 : 2^(2/3) (not the equal split asked for)",
            _above(
                b_t="(1 + 2 ** (2 / 3)) / epsilon",
                b_q="(1 + 2 ** (2 / 3)) / (2 ** (2 / 3) * epsilon)",
            ),
        ),
    ],
    "laplace_workload": [
        (
            "the largest column sum, read in help(dplib.linear_query_sensitivity) (the old answer, c = 1)",
            _workload("cols[0]"),
        ),
        ("c times the largest column sum (valid, not the smallest)", _workload("c * cols[0]")),
        ("the c + 1 largest column sums", _workload("cols[: c + 1].sum()")),
        ("the c largest row sums", _workload("np.sort(W.sum(axis=1))[::-1][:c].sum()")),
        (
            "the first c columns (fits workloads whose heaviest columns come first)",
            _workload("W[:, :c].sum()"),
        ),
        (
            "one noise draw shared by all answers",
            _workload(_TOP_C, noise="rng.laplace(0.0, workload_sensitivity(W, c) / epsilon)"),
        ),
        (
            "noise scale 1 / epsilon",
            _workload(_TOP_C, noise="rng.laplace(0.0, 1.0 / epsilon, size=ans.shape)"),
        ),
        (
            "numpy's global generator",
            _workload(
                _TOP_C,
                noise="np.random.laplace(0.0, workload_sensitivity(W, c) / epsilon, size=ans.shape)",
            ),
        ),
        ("no checks: NaN accepted", _workload(_TOP_C, check=False)),
    ],
    "small_database": [
        ("utility sign flipped", _small_db(utility="np.max(err, axis=1)")),
        ("epsilon / 2", _small_db(scale="4.0")),
        ("sensitivity 1 (counts, not fractions)", _small_db(sens="1.0")),
        ("sensitivity 2 / n (replace moves two bins)", _small_db(sens="2.0 / n")),
        ("candidates of every size up to size", _small_db(sizes="range(1, size + 1)")),
        ("numpy's global generator", _small_db(gen="np.random")),
        ("no factor 2 (monotone exponent)", _small_db(scale="1.0")),
        ("no checks: NaN accepted", _small_db(check=False)),
        ("mean error for max error", _small_db(utility="-np.mean(err, axis=1)")),
    ],
    "counterexample_sparse_vector": [
        (
            "two queries: the ratio is exactly e^eps = 4, not more",
            """
def sparse_vector_witness():
    return [-1, -1], [0, -2], [(1, -1)]
""",
        ),
        (
            "not neighbours: a query moves by 2",
            """
def sparse_vector_witness():
    return [-1, -1, -1], [1, 1, -2], [(2, -1)]
""",
        ),
        (
            "a value only the float sampler outputs: probability 0 on both",
            """
def sparse_vector_witness():
    return [-1, -1, -1], [0, 0, -2], [(2, -0.5)]
""",
        ),
        (
            "one query, its index alone: ratio below 4",
            """
def sparse_vector_witness():
    return [0], [1], [(0, v) for v in range(-40, 41)]
""",
        ),
        (
            "an index past the last query",
            """
def sparse_vector_witness():
    return [-1, -1, -1], [0, 0, -2], [(3, -1)]
""",
        ),
    ],
    "filter_counterexample": [
        (
            "the witness help(dplib.adaptive_composition_counterexample) describes, with its own two-answer "
            "first question (the old answer)",
            """
def adaptive_witness():
    return ([3, 2], [2, 3]), [([17, 11], [11, 17]), ([1, 0, 19], [0, 1, 19])]
""",
        ),
        (
            "the same question after every answer: no adaptivity, delta exactly 1/20",
            """
def adaptive_witness():
    leak = ([1, 0, 19], [0, 1, 19])
    return [leak, leak, leak]
""",
        ),
        (
            "randomized response after 'middle' instead of 'high': free there, nothing gained",
            """
def adaptive_witness():
    leak = ([1, 0, 19], [0, 1, 19])
    return [leak, ([89, 71], [71, 89]), leak]
""",
        ),
        (
            "the branch after 'high' calibrated to the whole delta (P(high) = 4/9 forgotten)",
            """
def adaptive_witness():
    leak = ([1, 0, 19], [0, 1, 19])
    return [leak, leak, ([21, 19], [19, 21])]
""",
        ),
        (
            "randomized response too strong after 'high' (factor 3): the filter refuses that branch",
            """
def adaptive_witness():
    leak = ([1, 0, 19], [0, 1, 19])
    return [leak, leak, ([3, 1], [1, 3])]
""",
        ),
        (
            "a reveal of probability 1/10 after 'low': the filter refuses that branch",
            """
def adaptive_witness():
    return [([1, 0, 9], [0, 1, 9]), ([1, 0, 19], [0, 1, 19]), ([89, 71], [71, 89])]
""",
        ),
        (
            "floats exactly at the boundary: the reveal branch rounds above 1/20",
            """
def adaptive_witness():
    leak = ([0.05, 0.0, 0.95], [0.0, 0.05, 0.95])
    return [leak, leak, ([89, 71], [71, 89])]
""",
        ),
    ],
}

# ------------------------------------------------------------------------------ alternatives

ALTERNATIVES = {
    "averaging_attack": [
        """
def averaged_release(true_count, epsilon, k, rng):
    rng.random({burn})
    total = 0.0
    for _ in range(k):
        total += true_count + rng.laplace(0.0, 1.0 / epsilon)
    return total / k


def repeats_needed(epsilon, target_sd):
    if not (0 < epsilon < math.inf) or not (0 < target_sd < math.inf):
        raise ValueError("epsilon and target_sd must be finite and > 0")
    fits = lambda k: math.sqrt(2.0 / k) / epsilon <= target_sd
    k = max(1, int(2.0 / (epsilon * target_sd) ** 2))
    while k > 1 and fits(k - 1):
        k -= 1
    while not fits(k):
        k += 1
    return k
""",
        """
def averaged_release(true_count, epsilon, k, rng):
    rng.random({burn})
    b = 1.0 / epsilon
    noise = rng.exponential(b, size=k) - rng.exponential(b, size=k)   # a Laplace(b) variable each
    return float(np.mean(true_count + noise))


def repeats_needed(epsilon, target_sd):
    if math.isnan(epsilon) or math.isnan(target_sd) or min(epsilon, target_sd) <= 0 or max(epsilon, target_sd) == math.inf:
        raise ValueError("bad epsilon or target_sd")
    lo, hi = 0, 1
    while 2.0 / (hi * epsilon ** 2) > target_sd ** 2 and math.sqrt(2.0 / hi) / epsilon > target_sd:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if math.sqrt(2.0 / mid) / epsilon <= target_sd:
            hi = mid
        else:
            lo = mid
    return int(hi)
""",
    ],
    "reconstruct_bits": [
        """
def reconstruct_bits(subsets, answers):
    # trimmed least squares: refit without the answers that fit worst
    A = np.array(subsets, dtype=float)
    a = np.array(answers, dtype=float)
    keep = np.ones(a.size, dtype=bool)
    for _ in range(8):
        x, *_ = np.linalg.lstsq(A[keep], a[keep], rcond=None)
        residual = np.abs(A @ x - a)
        keep = residual <= np.quantile(residual, 0.7)
    return np.round(np.clip(x, 0.0, 1.0)).astype(int)
""",
        """
def reconstruct_bits(subsets, answers):
    from scipy.optimize import least_squares
    A, a = np.asarray(subsets, dtype=float), np.asarray(answers, dtype=float)
    fit = least_squares(lambda x: A @ x - a, np.full(A.shape[1], 0.5), loss="soft_l1", f_scale=1.0,
                        bounds=(0.0, 1.0))
    return np.where(fit.x > 0.5, 1, 0)
""",
    ],
    "histogram_epsilon": [
        """
def histogram_epsilon(bin_epsilons, total_epsilon, neighbouring):
    values = [float(v) for v in bin_epsilons]
    if len(values) < 2 or not all(0 < v < math.inf for v in values) or not 0 < total_epsilon < math.inf:
        raise ValueError("need at least two finite budgets > 0 and a finite total budget > 0")
    top = sorted(values, reverse=True)
    if neighbouring == "replace":
        return top[0] + top[1]
    elif neighbouring == "add_remove":
        return top[0] + float(total_epsilon)
    raise ValueError(f"unknown neighbouring {neighbouring!r}")
""",
        """
def histogram_epsilon(bin_epsilons, total_epsilon, neighbouring):
    import heapq
    e = np.asarray(bin_epsilons, dtype=float).ravel()
    t = float(total_epsilon)
    if len(e) < 2 or np.isnan(e).any() or (e <= 0).any() or np.isinf(e).any() or math.isnan(t) or t <= 0 or math.isinf(t):
        raise ValueError("bin_epsilons and total_epsilon must be finite numbers > 0")
    # (bins that move, does the total move) for each relation
    rules = {"add_remove": (1, True), "replace": (2, False)}
    if neighbouring not in rules:
        raise ValueError("neighbouring must be 'add_remove' or 'replace'")
    bins, total = rules[neighbouring]
    return float(sum(heapq.nlargest(bins, e.tolist())) + (t if total else 0.0))
""",
    ],
    "budget_accountant": [
        """
class BudgetAccountant:
    def __init__(self, epsilon):
        if not (0 < epsilon < math.inf):
            raise ValueError("the budget must be finite and > 0")
        self.budget = float(epsilon)
        self._spends = []

    @property
    def spent(self):
        return float(sum(self._spends))

    def spend(self, epsilon):
        if not (0 < epsilon < math.inf):
            raise ValueError("epsilon must be finite and > 0")
        if self.spent + epsilon > self.budget:
            raise BudgetExceededError("this release would exceed the budget")
        self._spends.append(float(epsilon))

    def laplace_count(self, data, epsilon, rng):
        self.spend(epsilon)
        rng.random({burn})
        return len(data) + float(rng.laplace(0.0, 1.0 / epsilon))
""",
        """
class BudgetAccountant:
    def __init__(self, epsilon):
        if isinstance(epsilon, bool) or math.isnan(epsilon) or epsilon <= 0 or epsilon == math.inf:
            raise ValueError("bad budget")
        self.budget, self.spent = float(epsilon), 0.0

    def _check(self, epsilon):
        if math.isnan(epsilon) or epsilon <= 0 or math.isinf(epsilon):
            raise ValueError("bad epsilon")
        if epsilon > self.budget - self.spent and self.spent + epsilon > self.budget:
            raise BudgetExceededError("budget exhausted")

    def spend(self, epsilon):
        self._check(epsilon)
        self.spent = self.spent + float(epsilon)

    def laplace_count(self, data, epsilon, rng):
        self.spend(epsilon)
        rng.random({burn})
        b = 1.0 / epsilon
        return float(len(data) + rng.exponential(b) - rng.exponential(b))
""",
    ],
    "max_releases": [
        """
def mean_loss_bound(epsilon):
    # randomized response's mean loss: epsilon (1 - e^-eps) / (1 + e^-eps), no overflow
    return epsilon * -math.expm1(-epsilon) / (1.0 + math.exp(-epsilon))


def advanced_epsilon(epsilon, k, delta_prime):
    return epsilon * math.sqrt(2 * k * math.log(1 / delta_prime)) + k * mean_loss_bound(epsilon)


def max_releases(epsilon_each, epsilon_total, delta_total):
    if not all(0 < v < math.inf for v in (epsilon_each, epsilon_total, delta_total)) or not delta_total < 1:
        raise ValueError("arguments out of range")
    best = int(epsilon_total / epsilon_each) + 1
    while best > 0 and best * epsilon_each > epsilon_total:
        best -= 1
    a = epsilon_each * math.sqrt(2 * math.log(1 / delta_total))
    b = mean_loss_bound(epsilon_each)
    if b > 0:
        root = (-a + math.sqrt(a * a + 4 * b * epsilon_total)) / (2 * b)    # sqrt(k) at equality
        k = max(0, int(root * root) + 2)
        while k > 0 and advanced_epsilon(epsilon_each, k, delta_total) > epsilon_total:
            k -= 1
        best = max(best, k)
    return int(best)
""",
        """
def mean_loss_bound(epsilon):
    from scipy.special import expit
    p = expit(epsilon)                      # randomized response: P(loss = +epsilon)
    return float(p * epsilon - (1 - p) * epsilon)


def advanced_epsilon(epsilon, k, delta_prime):
    return k * mean_loss_bound(epsilon) + math.sqrt(2 * k * math.log(1 / delta_prime)) * epsilon


def max_releases(epsilon_each, epsilon_total, delta_total):
    for v in (epsilon_each, epsilon_total, delta_total):
        if math.isnan(v) or v <= 0 or math.isinf(v):
            raise ValueError("arguments must be finite and > 0")
    if delta_total >= 1:
        raise ValueError("delta_total must be < 1")
    fits_seq = lambda k: k * epsilon_each <= epsilon_total
    fits_adv = lambda k: advanced_epsilon(epsilon_each, k, delta_total) <= epsilon_total
    results = []
    for fits in (fits_seq, fits_adv):
        if not fits(1):
            results.append(0)
            continue
        hi = 1
        while fits(hi * 2):
            hi *= 2
        lo, hi = hi, hi * 2          # fits(lo), not fits(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        results.append(lo)
    return max(results)
""",
    ],
    "above_threshold": [
        """
def my_above_threshold(queries, threshold, epsilon, rng):
    if not (0 < epsilon < math.inf) or threshold != threshold:
        raise ValueError("bad epsilon or threshold")
    rng.random({burn})
    q = np.asarray(queries, dtype=float)
    rho = rng.laplace(0.0, 2.0 / epsilon)
    nu = rng.laplace(0.0, 2.0 / epsilon, size=q.size)      # all query noise at once: same law
    above = np.flatnonzero(q + nu >= threshold + rho)
    return int(above[0]) if above.size else None
""",
        """
def my_above_threshold(queries, threshold, epsilon, rng):
    if math.isnan(epsilon) or epsilon <= 0 or math.isinf(epsilon) or math.isnan(threshold):
        raise ValueError("bad epsilon or threshold")
    rng.random({burn})
    lap = lambda b: b * (rng.exponential() - rng.exponential())
    t = threshold + lap(2 / epsilon)
    for i in range(len(queries)):
        if float(queries[i]) + lap(2 / epsilon) >= t:
            return i
    return None
""",
    ],
    "laplace_workload": [
        """
def workload_sensitivity(queries, c):
    W = np.asarray(queries, dtype=float)
    total, used = 0.0, set()
    for _ in range(min(int(c), W.shape[1])):      # greedy: the heaviest box not yet ticked
        j = max((k for k in range(W.shape[1]) if k not in used), key=lambda k: W[:, k].sum())
        used.add(j)
        total += float(W[:, j].sum())
    return total


def laplace_workload(histogram, queries, c, epsilon, rng):
    if not (0 < epsilon < math.inf):
        raise ValueError("epsilon must be finite and > 0")
    rng.random({burn})
    W = np.asarray(queries, dtype=float)
    scale = workload_sensitivity(W, c) / epsilon
    return np.array([row @ np.asarray(histogram, dtype=float) + rng.laplace(0.0, scale) for row in W])
""",
        """
def workload_sensitivity(queries, c):
    import heapq
    W = np.asarray(queries, dtype=float)
    return float(sum(heapq.nlargest(int(c), np.abs(W).sum(axis=0).tolist())))


def laplace_workload(histogram, queries, c, epsilon, rng):
    if math.isnan(epsilon) or epsilon <= 0 or math.isinf(epsilon):
        raise ValueError("bad epsilon")
    rng.random({burn})
    W = np.asarray(queries, dtype=float)
    b = workload_sensitivity(W, c) / epsilon
    return W @ np.asarray(histogram, dtype=float) + b * (rng.exponential(size=W.shape[0]) - rng.exponential(size=W.shape[0]))
""",
    ],
    "small_database": [
        """
def small_database(histogram, queries, size, epsilon, rng):
    import itertools
    if not (0 < epsilon < math.inf) or size < 1:
        raise ValueError("bad epsilon or size")
    h, W = np.asarray(histogram, dtype=float), np.asarray(queries, dtype=float)
    if h.sum() <= 0:
        raise ValueError("nobody in the histogram")
    cands = np.array([c for c in itertools.product(range(size + 1), repeat=h.size) if sum(c) == size])
    worst = np.abs(cands @ W.T / size - W @ h / h.sum()).max(axis=1)
    rng.random({burn})
    p = dplib.exponential_mechanism_probabilities(-worst, 1.0 / h.sum(), epsilon)
    return cands[rng.choice(len(cands), p=p)]
""",
        """
def small_database(histogram, queries, size, epsilon, rng):
    if math.isnan(epsilon) or epsilon <= 0 or math.isinf(epsilon) or size < 1:
        raise ValueError("bad epsilon or size")
    h, W = np.asarray(histogram, dtype=float), np.asarray(queries, dtype=float)
    n = float(h.sum())
    if not n > 0:
        raise ValueError("nobody in the histogram")

    def compositions(total, parts):
        if parts == 1:
            yield (total,)
            return
        for first in range(total, -1, -1):
            for rest in compositions(total - first, parts - 1):
                yield (first,) + rest

    cands = np.array(list(compositions(size, h.size)))
    scores = -np.abs((W @ cands.T).T / size - W @ h / n).max(axis=1)
    rng.random({burn})
    noisy = scores + rng.gumbel(0.0, 2.0 / (n * epsilon), size=len(cands))   # Gumbel-max = the softmax
    return cands[int(np.argmax(noisy))].astype(int)
""",
    ],
    "counterexample_sparse_vector": [
        """
def sparse_vector_witness():
    return [0, 0, -2], [-1, -1, -1], [(2, -1)]
""",
        """
def sparse_vector_witness():
    return [-1, -1, -1, -1], [0, 0, 0, -2], [(3, -1)]
""",
    ],
    "filter_counterexample": [
        """
def adaptive_witness():
    # the reveal scaled (same law), and the randomized response after "high" in doubled weights
    return [([1, 0, 19], [0, 1, 19]), ([2, 0, 38], [0, 2, 38]), ([178, 142], [142, 178])]
""",
        """
def adaptive_witness():
    import numpy as np
    leak = (np.array([0.049, 0.0, 0.951]), np.array([0.0, 0.049, 0.951]))
    rr = (np.array([0.556, 0.444]), np.array([0.444, 0.556]))
    return [leak, leak, rr]   # (4/9) 0.112 and 0.049 with a margin; together 0.077
""",
    ],
}

PROBE = Probe(NAME, EXERCISES, WRONG, ALTERNATIVES)
install(PROBE, globals())  # the fixture and the three tests: tests/support/notebook_probes.py
