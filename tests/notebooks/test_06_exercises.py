"""Notebook 06's hidden tests have power: plausible wrong answers score 0, correct alternatives pass.

Issue 31 (third edition): for every exercise of ``solutions/06_dp_sgd``, three or more plausible
wrong answers (no clipping, clipping the batch instead of each example, noise std sigma instead of
sigma C, dividing by the batch size drawn instead of q N, a variance used as a standard deviation,
a special case that fits only the visible inputs, a NaN parameter accepted where the contract says
raise, rounding where the budget needs a floor, a minimum over orders where the inverse needs a
maximum, log10 for ln...) are handed in and graded by the real trusted grader
(:func:`coursetools.grading.grade.grade_job`, as ``tests/coursetools/authoring/test_release.py`` grades the solution);
each must score 0 on its exercise. Two correct alternatives per exercise, written differently
from the solution, must get full marks under five seeds: a correct answer's random draws are
shifted by burning ``s`` draws of the generator first (``s = 0..4``), which changes every random
outcome the hidden tests see.

To keep the runtime modest the graded notebook is the course notebook without its figures and
experiments (markdown, the setup cell, every answer and every test cell are kept; the same cells
are removed from the source, the release and the submission), and one submission carries the i-th
wrong answer of *every* exercise at once. The exercises' tests are independent: each checks its
own answer against dplib or the test's own reference, and the wrong answers of Exercise 3 clip
inline rather than call ``clip_per_example`` (whose wrong variants ride in the same submission).
So 8 wrong submissions and 10 correct ones are graded, two at a time.
"""

from __future__ import annotations

from notebook_probes import Probe, install

NAME = "06_dp_sgd"

#: answer cell grade_id -> test cell grade_id
EXERCISES = {
    "per_example_grads": "per_example_grads_tests",
    "clip_per_example": "clip_per_example_tests",
    "noisy_average_gradient": "noisy_average_gradient_tests",
    "rdp_accountant": "rdp_accountant_tests",
    "max_steps": "max_steps_tests",
    "one_run_guesses": "one_run_guesses_tests",
}

# ------------------------------------------------------------------------------ wrong answers

_GRADS = """
def logistic_per_example_grads(w, b, X, y):
    X = np.asarray(X, dtype=float)
    r = special.expit(X @ np.asarray(w, dtype=float) + b) - np.asarray(y, dtype=float)
    return {body}
"""

_CHECK_C = """
    if not (math.isfinite(clip_norm) and clip_norm > 0):
        raise ValueError("clip_norm must be a finite number > 0")"""


def _clip(body: str, check: bool = True) -> str:
    return f"""
def clip_per_example(G, clip_norm):{_CHECK_C if check else ""}
    G = np.asarray(G, dtype=float)
    norms = np.linalg.norm(G, axis=1, keepdims=True)
{body}
"""


_CHECK_STEP = """
    if not (noise_multiplier >= 0) or not (0 < sampling_rate <= 1) or not (dataset_size >= 1):
        raise ValueError("bad parameter")"""


def _step(
    *,
    clipped: str = "G * np.minimum(1.0, clip_norm / np.maximum(norms, 1e-300))",
    std: str = "noise_multiplier * clip_norm",
    divisor: str = "sampling_rate * dataset_size",
    check: bool = True,
) -> str:
    return f"""
def noisy_average_gradient(G, clip_norm, noise_multiplier, sampling_rate, dataset_size, rng):{_CHECK_STEP if check else ""}
    G = np.asarray(G, dtype=float)
    norms = np.linalg.norm(G, axis=1, keepdims=True)
    total = ({clipped}).sum(axis=0)
    noise = rng.normal(0.0, {std}, size=G.shape[1])
    return (total + noise) / ({divisor})
"""


_CHECK_RDP = """
    if not (0 < q <= 1) or not (math.isfinite(sigma) and sigma > 0):
        raise ValueError("bad q or sigma")
    if not isinstance(alpha, (int, np.integer)) or alpha < 2:
        raise ValueError("alpha must be an integer >= 2")"""


def _rdp(
    *,
    exponent: str = "(k * k - k) / (2.0 * sigma**2)",
    divide: str = "alpha - 1",
    q_one: bool = True,
    check: bool = True,
) -> str:
    special_case = "\n    if q == 1.0:\n        return alpha / (2.0 * sigma**2)" if q_one else ""
    return f"""
def subsampled_gaussian_rdp(q, sigma, alpha):{_CHECK_RDP if check else ""}{special_case}
    k = np.arange(alpha + 1)
    log_binom = special.gammaln(alpha + 1) - special.gammaln(k + 1) - special.gammaln(alpha - k + 1)
    log_terms = log_binom + (alpha - k) * np.log1p(-q) + k * math.log(q) + {exponent}
    return float(special.logsumexp(log_terms) / ({divide}))
"""


_RDP_NAIVE = """
def subsampled_gaussian_rdp(q, sigma, alpha):
    if not (0 < q <= 1) or not (math.isfinite(sigma) and sigma > 0):
        raise ValueError("bad q or sigma")
    if not isinstance(alpha, (int, np.integer)) or alpha < 2:
        raise ValueError("alpha must be an integer >= 2")
    total = 0.0
    for k in range(alpha + 1):
        total += math.comb(alpha, k) * (1 - q) ** (alpha - k) * q**k * np.exp((k * k - k) / (2.0 * sigma**2))
    return float(np.log(total) / (alpha - 1))
"""

_CHECK_BUDGET = """
    if not (math.isfinite(target_epsilon) and target_epsilon > 0) or not (0 < delta < 1):
        raise ValueError("bad target_epsilon or delta")"""


def _budget(
    *,
    log: str = "math.log(1.0 / delta)",
    denominator: str = "orders - 1",
    per_order: str = "np.floor(room / rho)",
    pick: str = "np.max",
    clamp: bool = True,
    check: bool = True,
) -> str:
    result = f"max(0.0, {pick}(per_order))" if clamp else f"{pick}(per_order)"
    return f"""
def max_steps(rdp_per_step, orders, delta, target_epsilon):{_CHECK_BUDGET if check else ""}
    rho = np.asarray(rdp_per_step, dtype=float)
    orders = np.asarray(orders, dtype=float)
    room = target_epsilon - {log} / ({denominator})
    per_order = {per_order}
    return int({result})
"""


def _guesses(body: str, check: bool = True) -> str:
    guard = (
        """
    if k_pos + k_neg > len(scores):
        raise ValueError("k_pos + k_neg exceeds the number of canaries")"""
        if check
        else ""
    )
    return f"""
def one_run_correct_guesses(scores, included, k_pos, k_neg):{guard}
    included = np.asarray(included, dtype=bool)
{body}
"""


_ORDER = "    order = np.argsort(-np.asarray(scores, dtype=float))\n"

#: answer cell grade_id -> [(what is wrong, answer cell source)], each scoring 0 on its exercise
WRONG: dict[str, list[tuple[str, str]]] = {
    "per_example_grads": [
        ("sign flipped: y - p", _GRADS.format(body="-np.hstack([r[:, None] * X, r[:, None]])")),
        (
            "gradients of the average loss",
            _GRADS.format(body="np.hstack([r[:, None] * X, r[:, None]]) / max(len(X), 1)"),
        ),
        ("bias column missing", _GRADS.format(body="r[:, None] * X")),
    ],
    "clip_per_example": [
        (
            "the batch's average clipped, not each example",
            _clip(
                "    mean_norm = np.linalg.norm(G.mean(axis=0)) if len(G) else 0.0\n"
                "    return G * min(1.0, clip_norm / max(mean_norm, 1e-300))"
            ),
        ),
        (
            "each coordinate clipped to [-C, C]",
            _clip("    return np.clip(G, -clip_norm, clip_norm)"),
        ),
        (
            "NaN clip_norm accepted (no check)",
            _clip(
                "    return G * np.minimum(1.0, clip_norm / np.maximum(norms, 1e-300))", check=False
            ),
        ),
        (
            "every row rescaled to length C (short rows lengthened)",
            _clip("    return np.where(norms > 0, G * clip_norm / np.maximum(norms, 1e-300), 0.0)"),
        ),
    ],
    "noisy_average_gradient": [
        ("no clipping", _step(clipped="G")),
        (
            "the batch's sum clipped instead of each example",
            _step(clipped="G * min(1.0, clip_norm / max(np.linalg.norm(G.sum(axis=0)), 1e-300))"),
        ),
        ("noise std sigma instead of sigma C", _step(std="noise_multiplier")),
        (
            "divided by the batch size drawn (fits the visible q = 1 test)",
            _step(divisor="max(len(G), 1)"),
        ),
        ("divided by N instead of q N", _step(divisor="dataset_size")),
        (
            "variance (sigma C)^2 used as the standard deviation",
            _step(std="(noise_multiplier * clip_norm) ** 2"),
        ),
        (
            "noise 2 sigma C (the replace-one sensitivity)",
            _step(std="2 * noise_multiplier * clip_norm"),
        ),
        ("NaN noise multiplier accepted (no check)", _step(check=False)),
    ],
    "rdp_accountant": [
        ("ln A divided by alpha, not alpha - 1", _rdp(divide="alpha")),
        ("E_Q[L^k] taken as exp(k^2 / (2 sigma^2))", _rdp(exponent="(k * k) / (2.0 * sigma**2)")),
        ("the terms summed directly: overflow at alpha = 256", _RDP_NAIVE),
        ("no special case at q = 1: 0 * log(0) = nan", _rdp(q_one=False)),
        ("sigma where sigma^2 belongs", _rdp(exponent="(k * k - k) / (2.0 * sigma)")),
        ("NaN q or sigma accepted (no check)", _rdp(check=False)),
    ],
    "max_steps": [
        ("rounded where the budget needs the floor", _budget(per_order="np.round(room / rho)")),
        ("minimum over orders instead of maximum", _budget(pick="np.min")),
        ("log10(1/delta) instead of ln", _budget(log="math.log10(1.0 / delta)")),
        ("no clamp at 0: a negative number of steps", _budget(clamp=False)),
        ("ln(1/delta) / alpha instead of / (alpha - 1)", _budget(denominator="orders")),
        ("no check: NaN, infinite or zero budgets accepted", _budget(check=False)),
    ],
    "one_run_guesses": [
        (
            "'included' guessed for the lowest scores",
            _guesses(
                "    order = np.argsort(np.asarray(scores, dtype=float))\n"
                "    return int(included[order[:k_pos]].sum() + (~included[order[len(order) - k_neg:]]).sum())"
            ),
        ),
        (
            "order[-k_neg:] is the whole array when k_neg = 0",
            _guesses(
                _ORDER
                + "    return int(included[order[:k_pos]].sum() + (~included[order[-k_neg:]]).sum())"
            ),
        ),
        (
            "sorts the caller's scores in place",
            _guesses(
                "    s = scores\n    s.sort()\n    s = s[::-1]\n"
                "    return int(included[:k_pos].sum() + (~included[len(s) - k_neg:]).sum())"
            ),
        ),
        (
            "k_pos + k_neg > m not refused",
            _guesses(
                _ORDER
                + "    return int(included[order[:k_pos]].sum() + (~included[order[len(order) - k_neg:]]).sum())",
                check=False,
            ),
        ),
    ],
}

# ------------------------------------------------------------------------ correct alternatives

#: answer cell grade_id -> two correct answers written differently; {burn} = draws burnt first
ALTERNATIVES: dict[str, list[str]] = {
    "per_example_grads": [
        """
def logistic_per_example_grads(w, b, X, y):
    X = np.array(X, dtype=float, ndmin=2)
    z = X.dot(np.asarray(w, dtype=float)) + float(b)
    p = np.where(z >= 0, 1.0 / (1.0 + np.exp(-np.abs(z))), np.exp(-np.abs(z)) / (1.0 + np.exp(-np.abs(z))))
    residual = p - np.asarray(y, dtype=float)
    return np.column_stack([X * residual[:, None], residual]) if len(X) else np.zeros((0, X.shape[1] + 1))
""",
        """
def logistic_per_example_grads(w, b, X, y):
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    out = np.empty((n, d + 1))
    out[:, :d] = X
    out[:, d] = 1.0
    return out * (special.expit(X @ w + b) - y)[:, None]
""",
    ],
    "clip_per_example": [
        """
def clip_per_example(G, clip_norm):
    if not (np.isfinite(clip_norm) and clip_norm > 0):
        raise ValueError("clip_norm must be finite and > 0")
    G = np.array(G, dtype=float, copy=True)
    norms = np.sqrt(np.einsum("ij,ij->i", G, G))
    scale = np.ones_like(norms)
    long_rows = norms > clip_norm
    scale[long_rows] = clip_norm / norms[long_rows]
    return G * scale[:, None]
""",
        """
def clip_per_example(G, clip_norm):
    if math.isnan(clip_norm) or math.isinf(clip_norm) or clip_norm <= 0:
        raise ValueError("bad clip_norm")
    G = np.asarray(G, dtype=float)
    norms = np.linalg.norm(G, axis=1)
    factor = np.divide(clip_norm, norms, out=np.ones_like(norms), where=norms > 0)
    return G * np.minimum(factor, 1.0)[:, None]
""",
    ],
    "noisy_average_gradient": [
        """
def noisy_average_gradient(G, clip_norm, noise_multiplier, sampling_rate, dataset_size, rng):
    if math.isnan(noise_multiplier) or noise_multiplier < 0:
        raise ValueError("noise_multiplier must be >= 0")
    if math.isnan(sampling_rate) or not 0 < sampling_rate <= 1:
        raise ValueError("sampling_rate must be in (0, 1]")
    if dataset_size < 1:
        raise ValueError("dataset_size must be >= 1")
    rng.random({burn})
    G = np.asarray(G, dtype=float)
    summed = clip_per_example(G, clip_norm).sum(axis=0) if len(G) else np.zeros(G.shape[1])
    expected_batch = sampling_rate * dataset_size
    return summed / expected_batch + rng.standard_normal(G.shape[1]) * (noise_multiplier * clip_norm / expected_batch)
""",
        """
def noisy_average_gradient(G, clip_norm, noise_multiplier, sampling_rate, dataset_size, rng):
    for name, ok in (("noise_multiplier", noise_multiplier >= 0), ("sampling_rate", 0 < sampling_rate <= 1),
                     ("dataset_size", dataset_size >= 1)):
        if not ok:
            raise ValueError(f"bad {name}")
    rng.normal(size={burn})
    G = np.asarray(G, dtype=float)
    p = G.shape[1]
    total = np.zeros(p)
    for row in G:                                   # a loop over the batch: slower, but correct
        length = float(np.sqrt(row @ row))
        total += row if length <= clip_norm else row * (clip_norm / length)
    noisy = total + rng.normal(loc=np.zeros(p), scale=noise_multiplier * clip_norm)
    return noisy * (1.0 / (sampling_rate * dataset_size))
""",
    ],
    "rdp_accountant": [
        """
def subsampled_gaussian_rdp(q, sigma, alpha):
    if not (0 < q <= 1):
        raise ValueError("q must be in (0, 1]")
    if not (sigma > 0 and sigma < math.inf):
        raise ValueError("sigma must be finite and > 0")
    if isinstance(alpha, bool) or int(alpha) != alpha or alpha < 2:
        raise ValueError("alpha must be an integer >= 2")
    alpha = int(alpha)
    logs = []
    for k in range(alpha + 1):
        term = math.lgamma(alpha + 1) - math.lgamma(k + 1) - math.lgamma(alpha - k + 1)
        if k < alpha:
            if q == 1:
                continue                           # (1 - q)^(alpha - k) = 0
            term += (alpha - k) * math.log(1 - q)
        term += k * math.log(q) + k * (k - 1) / (2 * sigma * sigma)
        logs.append(term)
    return float(special.logsumexp(logs)) / (alpha - 1)
""",
        """
def subsampled_gaussian_rdp(q, sigma, alpha):
    if not (q > 0 and q <= 1 and sigma > 0 and math.isfinite(sigma)):
        raise ValueError("need 0 < q <= 1 and a finite sigma > 0")
    if not isinstance(alpha, (int, np.integer)) or alpha < 2:
        raise ValueError("alpha must be an integer >= 2")
    if q == 1:
        return alpha / (2 * sigma**2)
    k = np.arange(alpha + 1, dtype=float)
    log_c = np.array([math.log(math.comb(int(alpha), int(j))) for j in k])
    log_a = np.logaddexp.reduce(log_c + (alpha - k) * math.log1p(-q) + k * math.log(q) + k * (k - 1) / (2 * sigma**2))
    return float(log_a / (alpha - 1))
""",
    ],
    "max_steps": [
        """
def max_steps(rdp_per_step, orders, delta, target_epsilon):
    if math.isnan(target_epsilon) or math.isinf(target_epsilon) or target_epsilon <= 0:
        raise ValueError("target_epsilon must be finite and > 0")
    if math.isnan(delta) or not 0 < delta < 1:
        raise ValueError("delta must be in (0, 1)")
    best = 0
    for rho, alpha in zip(rdp_per_step, orders):
        room = target_epsilon - math.log(1 / delta) / (alpha - 1)
        if room >= 0:
            best = max(best, math.floor(room / rho))
    return int(best)
""",
        """
def max_steps(rdp_per_step, orders, delta, target_epsilon):
    if not (np.isfinite(target_epsilon) and target_epsilon > 0 and 0 < delta < 1):
        raise ValueError("need a finite target_epsilon > 0 and 0 < delta < 1")
    rho, orders = np.asarray(rdp_per_step, float), np.asarray(orders, float)
    slack = -np.log(delta) / (orders - 1)

    def eps(T):
        return float(np.min(T * rho + slack))

    T = int(max(0, np.max(np.floor((target_epsilon - slack) / rho))))
    while T > 0 and eps(T) > target_epsilon:       # guard against rounding at the boundary
        T -= 1
    while eps(T + 1) <= target_epsilon:
        T += 1
    return T
""",
    ],
    "one_run_guesses": [
        """
def one_run_correct_guesses(scores, included, k_pos, k_neg):
    scores = list(map(float, scores))
    if k_pos + k_neg > len(scores):
        raise ValueError("too many guesses")
    ranked = sorted(range(len(scores)), key=lambda i: scores[i])      # lowest first
    right = sum(bool(included[i]) for i in ranked[len(ranked) - k_pos:]) if k_pos else 0
    right += sum(not bool(included[i]) for i in ranked[:k_neg])
    return int(right)
""",
        """
def one_run_correct_guesses(scores, included, k_pos, k_neg):
    s = np.asarray(scores, dtype=float)
    inc = np.asarray(included, dtype=bool)
    if k_pos + k_neg > s.size:
        raise ValueError("k_pos + k_neg > m")
    ranks = s.argsort().argsort()                   # 0 = lowest score
    guessed_in = ranks >= s.size - k_pos
    guessed_out = ranks < k_neg
    return int(np.count_nonzero(guessed_in & inc) + np.count_nonzero(guessed_out & ~inc))
""",
    ],
}
# ------------------------------------------------------------------------------------- grading

PROBE = Probe(NAME, EXERCISES, WRONG, ALTERNATIVES)
install(PROBE, globals())  # the fixture and the three tests: tests/support/notebook_probes.py
