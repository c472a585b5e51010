"""Notebook 07's hidden tests have power: plausible wrong answers score 0, correct alternatives pass.

Issue 31 (third edition): for every exercise of ``solutions/07_local_dp``, three or more plausible
wrong answers (a wrong scale, epsilon vs epsilon/2, variance vs standard deviation, a NaN parameter
accepted where the contract says raise, an estimate clipped where it must be unbiased, delta
charged where only epsilon is spent, arithmetic that overflows at a large but valid epsilon or
dimension, a special case that fits only the visible inputs, a weak neighbouring pair...) are
handed in and graded by the real trusted grader (:func:`coursetools.grading.grade.grade_job`, as
``tests/coursetools/authoring/test_release.py`` grades the solution); each must score 0 on its exercise. Two correct
alternatives per exercise, written differently from the solution, must get full marks under five
seeds: a correct answer's random draws are shifted by burning ``s`` draws of the generator first
(``s = 0..4``), which changes every random outcome the hidden tests see.

To keep the runtime modest the graded notebook is the course notebook without its figures and
experiments (markdown, the setup cell, the locked helper ``ldp_sgd_reports``, every answer and
every test cell are kept; the same cells are removed from the source, the release and the
submission), and one submission carries the i-th wrong answer of *every* exercise at once (the
exercises' tests are independent: each checks its own answer against dplib or the test's own
reference, never another answer). So 8 wrong submissions and 10 correct ones are graded, five to a
kernel, two kernels at a time.

Issue 50 (no answer one ``help()`` away): Exercise 1 asks for unary encoding of a set of at most s
items (``set_oue_randomize``, ``set_oue_estimate``): the own bits at 1/2 and q = 1/(e^(eps/s) + 1),
two disjoint full sets differing in 2s bits; help(unary_encoding_probabilities) hands over OUE's
q = 1/(e^eps + 1). Judged by the law of every bit against q computed in the test, a black-box check
of the local epsilon on two disjoint full sets, and the estimator on fixed reports; probes: OUE's
q (the help() answer, the old one), eps / (2s), a set against the empty set, numpy's global
generator, no checks, one item per person, estimates divided by s, estimates clipped.

Exercise 8 asks for the exact delta of n shuffled binary randomized-response reports for the worst
bits of the other clients (``shuffled_rr_delta``); help(clone_pair_delta) hands over the clone
pair's divergence, a valid but looser bound. Judged against the maximum over the others' bits and
both directions computed in the test; probes: the clone pair (the help() answer, the old one), the
others all 0, half 0 half 1, n others, no positive part, no checks, no amplification.
"""

from __future__ import annotations

from notebook_probes import Probe, install

NAME = "07_local_dp"

#: answer cell grade_id -> test cell grade_id
EXERCISES = {
    "oue": "oue_tests",
    "inversion": "inversion_tests",
    "local_update": "local_update_tests",
    "central_aggregate": "central_aggregate_tests",
    "ldp_sgd": "ldp_sgd_tests",
    "ldp_audit": "ldp_audit_tests",
    "shuffled_krr": "shuffled_krr_tests",
    "clone_delta": "clone_delta_tests",
}
#: cells that draw figures or run experiments: not needed by any test
DROPPED = {
    "price_figure",
    "krr_scale",
    "oracle_figure",
    "inversion_figure",
    "fl_experiment",
    "subsampling_figure",
    "shuffle_figure",
    "network_figure",
    "audit_figure",
}

# ------------------------------------------------------------------------------ wrong answers

_SET_CHECKS = """
    if not (math.isfinite(epsilon) and epsilon > 0) or isinstance(s, bool) or not isinstance(s, int) or s < 1:
        raise ValueError("epsilon or s")"""
_SET_ROWS = """
    if B.ndim != 2 or not np.isin(B, (0, 1)).all() or B.shape[1] < 2 * s or (B.sum(axis=1) > s).any():
        raise ValueError("memberships")"""
_SET_Q = "1.0 / (math.exp(epsilon / s) + 1.0)"


def _set_oue(
    q_expr: str = _SET_Q,
    estimate: str = "(R.mean(axis=0) - q) / (0.5 - q)",
    checks: str = _SET_CHECKS,
    rows: str = _SET_ROWS,
    draw: str = "rng.random(B.shape)",
    encode: str = "B",
) -> str:
    """Exercise 1 (unary encoding of a set of at most s items) with one slip."""
    return f"""
def set_oue_randomize(memberships, s, epsilon, rng):
    B = np.asarray(memberships){checks}{rows}
    B = {encode}
    q = {q_expr}
    return (({draw}) < np.where(B == 1, 0.5, q)).astype(int)


def set_oue_estimate(reports, s, epsilon):{checks}
    R = np.asarray(reports, dtype=float)
    if R.ndim != 2 or R.shape[1] < 2 * s:
        raise ValueError("reports")
    q = {q_expr}
    return {estimate}
"""


_INVERT = """
def invert_gradient(grad_W, grad_b):
    grad_W, grad_b = np.asarray(grad_W, dtype=float), np.asarray(grad_b, dtype=float)
    y = {label}
    c = {row}
    return grad_W[c] / grad_b[c], y
"""


def _privatize(sigma: str, checks: bool = True, clip: bool = True) -> str:
    check = (
        """
    if not (math.isfinite(clip_norm) and clip_norm > 0 and math.isfinite(noise_multiplier) and noise_multiplier >= 0):
        raise ValueError("bad clip_norm or noise_multiplier")"""
        if checks
        else ""
    )
    clipping = "min(1.0, clip_norm / norm)" if clip else "1.0"
    return f"""
def privatize_update(update, clip_norm, noise_multiplier, rng):{check}
    update = np.asarray(update, dtype=float)
    norm = np.linalg.norm(update)
    clipped = update * {clipping} if norm > 0 else update.copy()
    return clipped + rng.normal(0.0, {sigma}, size=update.shape)
"""


def _central(body: str, checks: bool = True) -> str:
    check = (
        """
    if not (math.isfinite(clip_norm) and clip_norm > 0 and math.isfinite(noise_multiplier) and noise_multiplier >= 0):
        raise ValueError("bad clip_norm or noise_multiplier")"""
        if checks
        else ""
    )
    return f"""
def central_aggregate(updates, clip_norm, noise_multiplier, rng):{check}
    updates = np.asarray(updates, dtype=float)
    m, d = updates.shape
    norms = np.linalg.norm(updates, axis=1, keepdims=True)
    clipped = updates * np.minimum(1.0, clip_norm / np.maximum(norms, 1e-300))
{body}
"""


def _ldp_sgd(
    *,
    toward: str,
    length: str,
    pole: str = "rng.random() < 0.5 + kept / (2 * clip_norm)",
    mean_abs: str = "math.exp(special.gammaln(d / 2) - special.gammaln((d + 1) / 2)) / math.sqrt(math.pi)",
) -> str:
    return f"""
def ldp_sgd_randomize(gradient, clip_norm, epsilon, rng):
    if not (math.isfinite(clip_norm) and clip_norm > 0 and math.isfinite(epsilon) and epsilon > 0):
        raise ValueError("clip_norm and epsilon must be finite and > 0")
    g = np.asarray(gradient, dtype=float)
    d, norm = g.size, float(np.linalg.norm(g))
    direction = g / norm if norm > 0 else np.eye(d)[0]
    kept = min(norm, clip_norm)
    pole = direction if {pole} else -direction
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    if (v @ pole > 0) != (rng.random() < {toward}):
        v = -v
    mean_abs = {mean_abs}
    return {length} * v
"""


_RIGHT_TOWARD = "1.0 / (1.0 + math.exp(-epsilon))"
_RIGHT_LENGTH = "clip_norm / (math.tanh(epsilon / 2) * mean_abs)"


def _audit(pair: str, bound: str) -> str:
    return f"""
def audit_ldp_sgd(d, clip_norm, epsilon, n_samples, alpha, rng):
    from dplib.auditing import epsilon_lower_bound
    g = np.zeros(d)
    g[0] = clip_norm
    first, second = {pair}
    a = ldp_sgd_reports(first, clip_norm, epsilon, rng, n_samples)
    b = ldp_sgd_reports(second, clip_norm, epsilon, rng, n_samples)
    missed = int(np.count_nonzero(a[:, 0] <= 0))
    false_alarms = int(np.count_nonzero(b[:, 0] > 0))
    return float({bound})
"""


_CP_BOUND = "epsilon_lower_bound(false_alarms, missed, n_samples, n_samples, alpha=alpha)"
_POINT_ESTIMATE = "max(0.0, math.log((n_samples - missed) / max(false_alarms, 1)))"


def _shuffled(
    eps0: str,
    *,
    delta_when_invalid: str = "0.0",
    compose: bool = True,
    check: str = "not (0.0 < keep_probability < 1.0)",
) -> str:
    days = "days" if compose else "1"
    return f"""
def shuffled_krr_guarantee(k, keep_probability, n, delta, days):
    gamma = keep_probability
    if {check} or k < 2 or days < 1 or n < 1:
        raise ValueError("bad parameter")
    eps0 = {eps0}
    if shuffle_closed_form_valid(eps0, n, delta):
        return {days} * shuffle_epsilon_closed_form(eps0, n, delta), {days} * delta
    return {days} * eps0, {delta_when_invalid}
"""


_RIGHT_EPS0 = "math.log1p(k * gamma / (1.0 - gamma))"


_SRR_CHECKS = """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError("n")
    if not (math.isfinite(epsilon0) and epsilon0 > 0 and math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError("epsilon0 or epsilon")"""


def _srr(
    *,
    others: str = "range(n)",
    count: str = "n - 1",
    positive: str = "np.maximum(a - f * b, 0.0).sum(), np.maximum(b - f * a, 0.0).sum()",
    checks: str = _SRR_CHECKS,
) -> str:
    """Exercise 8 (shuffled binary randomized response, exact) with one slip."""
    return f"""
def shuffled_rr_delta(n, epsilon0, epsilon):{checks}
    p = math.exp(epsilon0) / (math.exp(epsilon0) + 1.0)
    f = math.exp(epsilon)
    worst = 0.0
    for ones in {others}:
        zeros = {count} - ones
        z = np.convolve(stats.binom.pmf(np.arange(ones + 1), ones, p),
                        stats.binom.pmf(np.arange(zeros + 1), zeros, 1.0 - p))
        a = p * np.r_[0.0, z] + (1 - p) * np.r_[z, 0.0]
        b = (1 - p) * np.r_[0.0, z] + p * np.r_[z, 0.0]
        worst = max(worst, {positive})
    return float(worst)
"""


_CLONE_PAIR = """
def shuffled_rr_delta(n, epsilon0, epsilon):
    if not (isinstance(n, int) and n >= 1 and math.isfinite(epsilon0) and epsilon0 > 0
            and math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError("bad arguments")
    alpha = math.exp(epsilon0) / (math.exp(epsilon0) + 1.0)
    factor = math.exp(epsilon)
    total = 0.0
    for c in range(n):
        w = stats.binom.pmf(c, n - 1, math.exp(-epsilon0))
        if w < 1e-30:
            continue
        u = np.arange(c + 2)
        b_prev, b_here = stats.binom.pmf(u - 1, c, 0.5), stats.binom.pmf(u, c, 0.5)
        p = alpha * b_prev + (1 - alpha) * b_here
        q = (1 - alpha) * b_prev + alpha * b_here
        total += w * np.maximum(p - factor * q, 0.0).sum()
    return float(total)
"""


#: grade_id -> plausible wrong answers, each with what it gets wrong
WRONG = {
    "oue": [
        (
            "OUE's q = 1/(e^eps + 1), read in help(unary_encoding_probabilities) (the old exercise's "
            "answer): not private for sets of two or more items",
            _set_oue("1.0 / (math.exp(epsilon) + 1.0)"),
        ),
        (
            "q at epsilon / (2s): every differing bit as randomized response",
            _set_oue("1.0 / (math.exp(epsilon / (2 * s)) + 1.0)"),
        ),
        (
            "q = e^(-eps/s) / 2: a set against the empty set (s bits), not two disjoint sets",
            _set_oue("0.5 * math.exp(-epsilon / s)"),
        ),
        ("numpy's global generator, not rng", _set_oue(draw="np.random.random(B.shape)")),
        (
            "no checks: NaN epsilon and rows of more than s items accepted",
            _set_oue(checks="", rows=""),
        ),
        (
            "one item per person (the row's first 1): OUE on a single value",
            _set_oue(
                encode="np.eye(B.shape[1], dtype=int)[B.argmax(axis=1)] * (B.sum(axis=1, keepdims=True) > 0)"
            ),
        ),
        (
            "estimates divided by s, to add up to 1",
            _set_oue(estimate="(R.mean(axis=0) - q) / (0.5 - q) / s"),
        ),
        (
            "estimates clipped to [0, 1] (biased)",
            _set_oue(estimate="np.clip((R.mean(axis=0) - q) / (0.5 - q), 0.0, 1.0)"),
        ),
    ],
    "inversion": [
        (
            "label = largest |grad_b| (ties with k = 2)",
            _INVERT.format(label="int(np.argmax(np.abs(grad_b)))", row="y"),
        ),
        (
            "x from class 0's row (0/0 when p_0 underflows)",
            _INVERT.format(label="int(np.argmin(grad_b))", row="0"),
        ),
        (
            "label = largest grad_b",
            _INVERT.format(label="int(np.argmax(grad_b))", row="int(np.argmin(grad_b))"),
        ),
    ],
    "local_update": [
        (
            "sensitivity C (add/remove) under replacement",
            _privatize("noise_multiplier * clip_norm"),
        ),
        (
            "variance used as the standard deviation",
            _privatize("(noise_multiplier * 2 * clip_norm) ** 2"),
        ),
        (
            "NaN parameters accepted (no check)",
            _privatize("noise_multiplier * 2 * clip_norm", checks=False),
        ),
        ("no clipping", _privatize("noise_multiplier * 2 * clip_norm", clip=False)),
    ],
    "central_aggregate": [
        (
            "sensitivity C",
            _central(
                "    return (clipped.sum(axis=0) + rng.normal(0.0, noise_multiplier * clip_norm, size=d)) / m"
            ),
        ),
        (
            "one noise vector per client (local noise)",
            _central(
                "    return (clipped + rng.normal(0.0, noise_multiplier * 2 * clip_norm, size=(m, d))).sum(axis=0) / m"
            ),
        ),
        (
            "NaN parameters accepted (no check)",
            _central(
                "    return (clipped.sum(axis=0) + rng.normal(0.0, noise_multiplier * 2 * clip_norm, size=d)) / m",
                checks=False,
            ),
        ),
        (
            "the sum clipped instead of each update",
            _central(
                "    total = updates.sum(axis=0)\n    total = total * min(1.0, clip_norm / max(np.linalg.norm(total), 1e-300))\n"
                "    return (total + rng.normal(0.0, noise_multiplier * 2 * clip_norm, size=d)) / m"
            ),
        ),
    ],
    "ldp_sgd": [
        (
            "epsilon/2 in the hemisphere probability (and its B)",
            _ldp_sgd(
                toward="1.0 / (1.0 + math.exp(-epsilon / 2))",
                length="clip_norm / (math.tanh(epsilon / 4) * mean_abs)",
            ),
        ),
        (
            "B without the (e^eps + 1)/(e^eps - 1) factor",
            _ldp_sgd(toward=_RIGHT_TOWARD, length="clip_norm / mean_abs"),
        ),
        (
            "no randomized rounding to the poles (biased inside the ball)",
            _ldp_sgd(toward=_RIGHT_TOWARD, length=_RIGHT_LENGTH, pole="True"),
        ),
        (
            "math.gamma overflows for large d",
            _ldp_sgd(
                toward=_RIGHT_TOWARD,
                length=_RIGHT_LENGTH,
                mean_abs="math.gamma(d / 2) / (math.sqrt(math.pi) * math.gamma((d + 1) / 2))",
            ),
        ),
        (
            "e^eps overflows at epsilon = 1000",
            _ldp_sgd(
                toward="math.exp(epsilon) / (math.exp(epsilon) + 1.0)",
                length="clip_norm * (math.exp(epsilon) + 1) / ((math.exp(epsilon) - 1) * mean_abs)",
            ),
        ),
    ],
    "ldp_audit": [
        ("a gradient against 0 (not the worst case)", _audit("g, np.zeros(d)", _CP_BOUND)),
        ("the point estimate, no confidence interval", _audit("g, -g", _POINT_ESTIMATE)),
        ("a pair inside the ball (half the clipping norm)", _audit("g / 2, -g / 2", _CP_BOUND)),
    ],
    "shuffled_krr": [
        (
            "local epsilon without the 1 + (ln(k gamma / (1 - gamma)))",
            _shuffled("math.log(k * gamma / (1.0 - gamma))"),
        ),
        (
            "delta charged where only epsilon is spent",
            _shuffled(_RIGHT_EPS0, delta_when_invalid="days * delta"),
        ),
        ("days not composed", _shuffled(_RIGHT_EPS0, compose=False)),
        (
            "ln(k + 1): right only for keep_probability = 1/2, the visible case",
            _shuffled("math.log(k + 1.0)"),
        ),
    ],
    "clone_delta": [
        (
            "the clone pair's divergence, read in help(clone_pair_delta) (the old exercise's answer): "
            "a valid bound, not the smallest delta",
            _CLONE_PAIR,
        ),
        ("the other clients all holding 0 (a convenient neighbour)", _srr(others="[0]")),
        ("the other clients half 0, half 1 (a typical population)", _srr(others="[(n - 1) // 2]")),
        ("n other clients instead of n - 1", _srr(others="range(n + 1)", count="n")),
        (
            "differences not restricted to their positive part",
            _srr(positive="max(0.0, float((a - f * b).sum())), max(0.0, float((b - f * a).sum()))"),
        ),
        ("no checks: NaN epsilon accepted", _srr(checks="")),
        (
            "no amplification: one client's randomized response whatever n",
            _srr(others="[0]", count="0"),
        ),
    ],
}

# ------------------------------------------------------------------------- correct alternatives

#: grade_id -> two correct answers written differently from the solution; "{burn}" draws that
#: many numbers from the generator first (a shifted seed)
ALTERNATIVES = {
    "oue": [
        """
def set_oue_randomize(memberships, s, epsilon, rng):
    rng.random({burn})
    if not (0 < epsilon < math.inf) or type(s) is not int or s < 1:
        raise ValueError("epsilon > 0 finite, s an int >= 1")
    B = np.array(memberships)
    if B.ndim != 2 or B.shape[1] < 2 * s or ((B != 0) & (B != 1)).any() or (B.sum(axis=1) > s).any():
        raise ValueError("a 2-D 0/1 array, k >= 2s, at most s ones per row")
    q = 1.0 / (1.0 + math.exp(epsilon / s))
    out = (rng.random(B.shape) < q).astype(np.int64)          # every bit a false 1 with probability q
    own = B == 1
    out[own] = rng.random(int(own.sum())) < 0.5               # then the set's bits, fair coins
    return out


def set_oue_estimate(reports, s, epsilon):
    if not (0 < epsilon < math.inf) or type(s) is not int or s < 1:
        raise ValueError("epsilon > 0 finite, s an int >= 1")
    r = np.asarray(reports, dtype=float)
    if r.ndim != 2 or r.shape[1] < 2 * s:
        raise ValueError("k >= 2s")
    q = 1.0 / (1.0 + math.exp(epsilon / s))
    return (r.sum(axis=0) / r.shape[0] - q) * 2.0 / (1.0 - 2.0 * q)
""",
        """
def _check(s, epsilon, k):
    if math.isnan(epsilon) or epsilon <= 0 or math.isinf(epsilon):
        raise ValueError("epsilon")
    if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1 or k < 2 * s:
        raise ValueError("s")


def set_oue_randomize(memberships, s, epsilon, rng):
    rng.random({burn})
    B = np.asarray(memberships)
    if B.ndim != 2 or not set(np.unique(B).tolist()) <= {0, 1} or B.sum(axis=1).max(initial=0) > s:
        raise ValueError("memberships")
    _check(s, epsilon, B.shape[1])
    t = math.exp(-epsilon / s)               # (p (1 - q) / (q (1 - p)))^s = e^epsilon with p = 1/2
    return rng.binomial(1, np.where(B == 1, 0.5, t / (1.0 + t))).astype(int)


def set_oue_estimate(reports, s, epsilon):
    r = np.asarray(reports, dtype=float)
    if r.ndim != 2:
        raise ValueError("reports")
    _check(s, epsilon, r.shape[1])
    t = math.exp(-epsilon / s)
    p, q = 0.5, t / (1.0 + t)
    return (np.mean(r, axis=0) - q) / (p - q)
""",
    ],
    "inversion": [
        """
def invert_gradient(grad_W, grad_b):
    gW, gb = np.asarray(grad_W, dtype=float), np.asarray(grad_b, dtype=float)
    y = int(np.flatnonzero(gb < 0)[0])
    return gW.T @ gb / (gb @ gb), y
""",
        """
def invert_gradient(grad_W, grad_b):
    gW, gb = np.asarray(grad_W, dtype=float), np.asarray(grad_b, dtype=float)
    y = int(np.argmin(gb))
    x = gW[y] / gb[y]
    return x, y
""",
    ],
    "local_update": [
        """
def privatize_update(update, clip_norm, noise_multiplier, rng):
    rng.random({burn})
    if not np.isfinite(clip_norm) or clip_norm <= 0:
        raise ValueError("clip_norm")
    if not np.isfinite(noise_multiplier) or noise_multiplier < 0:
        raise ValueError("noise_multiplier")
    u = np.array(update, dtype=float)
    n = math.sqrt(float(u @ u))
    if n > clip_norm:
        u *= clip_norm / n
    return u + 2 * clip_norm * noise_multiplier * rng.standard_normal(u.shape)
""",
        """
def privatize_update(update, clip_norm, noise_multiplier, rng):
    rng.random({burn})
    if not (clip_norm > 0 and math.isfinite(clip_norm)) or not (noise_multiplier >= 0 and math.isfinite(noise_multiplier)):
        raise ValueError("clip_norm must be > 0 and noise_multiplier >= 0, both finite")
    u = np.asarray(update, dtype=float)
    clipped = u / max(1.0, np.linalg.norm(u) / clip_norm)
    return np.array([c + rng.normal(0.0, 2 * clip_norm * noise_multiplier) for c in clipped])
""",
    ],
    "central_aggregate": [
        """
def central_aggregate(updates, clip_norm, noise_multiplier, rng):
    rng.random({burn})
    if not (clip_norm > 0 and math.isfinite(clip_norm)) or not (noise_multiplier >= 0 and math.isfinite(noise_multiplier)):
        raise ValueError("bad arguments")
    total = np.zeros(np.shape(updates)[1])
    for row in np.asarray(updates, dtype=float):
        total += row / max(1.0, np.linalg.norm(row) / clip_norm)
    total += 2 * clip_norm * noise_multiplier * rng.standard_normal(total.size)
    return total / len(updates)
""",
        """
def central_aggregate(updates, clip_norm, noise_multiplier, rng):
    rng.random({burn})
    if not np.isfinite(clip_norm) or clip_norm <= 0 or not np.isfinite(noise_multiplier) or noise_multiplier < 0:
        raise ValueError("bad arguments")
    U = np.array(updates, dtype=float)
    norms = np.sqrt((U ** 2).sum(axis=1))
    factors = np.where(norms > clip_norm, clip_norm / np.where(norms > 0, norms, 1.0), 1.0)
    return (factors @ U + rng.normal(0.0, 2 * clip_norm * noise_multiplier, U.shape[1])) / U.shape[0]
""",
    ],
    "ldp_sgd": [
        """
def ldp_sgd_randomize(gradient, clip_norm, epsilon, rng):
    rng.random({burn})
    if not (np.isfinite(clip_norm) and clip_norm > 0 and np.isfinite(epsilon) and epsilon > 0):
        raise ValueError("bad arguments")
    g = np.array(gradient, dtype=float)
    d = g.size
    norm = np.linalg.norm(g)
    if norm > clip_norm:
        g, norm = g * clip_norm / norm, clip_norm
    u = g / norm if norm > 0 else np.r_[1.0, np.zeros(d - 1)]
    z = u if rng.binomial(1, (1 + norm / clip_norm) / 2) else -u
    side = 1.0 if rng.random() < math.exp(-np.logaddexp(0.0, -epsilon)) else -1.0
    while True:                                    # rejection: a uniform direction on the chosen side
        v = rng.normal(size=d)
        if np.sign(v @ z) == side:
            break
    v /= np.linalg.norm(v)
    log_mean_abs = special.gammaln(d / 2) - special.gammaln((d + 1) / 2) - 0.5 * math.log(math.pi)
    return clip_norm / np.tanh(epsilon / 2) * math.exp(-log_mean_abs) * v
""",
        """
def ldp_sgd_randomize(gradient, clip_norm, epsilon, rng):
    for value in (clip_norm, epsilon):
        if not (math.isfinite(value) and value > 0):
            raise ValueError("clip_norm and epsilon must be finite and > 0")
    rng.random({burn})
    g = np.asarray(gradient, dtype=float)
    d = len(g)
    n = np.linalg.norm(g)
    c = g * min(1.0, clip_norm / n) if n > 0 else g
    u = c / np.linalg.norm(c) if n > 0 else np.eye(d)[d - 1]
    p_plus = 0.5 + np.linalg.norm(c) / (2 * clip_norm)
    z = u * (1.0 if rng.random() < p_plus else -1.0)
    v = rng.normal(size=d)
    v = v / np.linalg.norm(v)
    keep = rng.random() < special.expit(epsilon)
    v = v if (v @ z > 0) == keep else -v
    ratio = math.exp(special.gammaln((d + 1) / 2) - special.gammaln(d / 2))
    e = math.exp(-epsilon)
    return clip_norm * (1 + e) / (1 - e) * math.sqrt(math.pi) * ratio * v
""",
    ],
    "ldp_audit": [
        """
def audit_ldp_sgd(d, clip_norm, epsilon, n_samples, alpha, rng):
    from dplib.auditing import epsilon_lower_bound
    rng.random({burn})
    u = rng.normal(size=d)
    u *= clip_norm / np.linalg.norm(u)                       # any direction on the sphere
    a = ldp_sgd_reports(u, clip_norm, epsilon, rng, n_samples) @ u
    b = ldp_sgd_reports(-u, clip_norm, epsilon, rng, n_samples) @ u
    return float(epsilon_lower_bound(int((b > 0).sum()), int((a <= 0).sum()), n_samples, n_samples, alpha=alpha))
""",
        """
def audit_ldp_sgd(d, clip_norm, epsilon, n_samples, alpha, rng):
    from dplib.auditing import audit_mechanism
    rng.random({burn})
    u = np.zeros(d)
    u[-1] = clip_norm

    def sign_of_report(s, rng, size):
        return (ldp_sgd_reports(s * u, clip_norm, epsilon, rng, size)[:, -1] > 0).astype(int)

    result = audit_mechanism(sign_of_report, 1.0, -1.0, epsilon, n_samples=n_samples, confidence=1 - alpha,
                             vectorized=True, rng=rng)
    return float(result.epsilon_lower_bound)
""",
    ],
    "shuffled_krr": [
        """
def shuffled_krr_guarantee(k, keep_probability, n, delta, days):
    g = float(keep_probability)
    if math.isnan(g) or g <= 0 or g >= 1 or k < 2 or days < 1 or n < 1:
        raise ValueError("bad parameter")
    eps0 = math.log((g + (1 - g) / k) / ((1 - g) / k))
    eps0 = math.log1p(k * g / (1 - g)) if not math.isfinite(eps0) else eps0
    if not shuffle_closed_form_valid(eps0, n, delta):
        return float(days * eps0), 0.0
    return float(days * shuffle_epsilon_closed_form(eps0, n, delta)), float(days * delta)
""",
        """
def shuffled_krr_guarantee(k, keep_probability, n, delta, days):
    if not 0 < keep_probability < 1:
        raise ValueError("keep_probability must be in (0, 1)")
    if k < 2 or n < 1 or days < 1:
        raise ValueError("k >= 2, n >= 1 and days >= 1")
    odds = keep_probability / (1 - keep_probability)
    eps0 = math.log1p(k * odds)
    valid = shuffle_closed_form_valid(eps0, n, delta)
    per_day = shuffle_epsilon_closed_form(eps0, n, delta) if valid else eps0
    return sum([per_day] * days), sum([delta if valid else 0.0] * days)
""",
    ],
    "clone_delta": [
        """
def shuffled_rr_delta(n, epsilon0, epsilon):
    if type(n) is not int or n < 1:
        raise ValueError("n: an int >= 1")
    if not (0 < epsilon0 < math.inf) or not (0 <= epsilon < math.inf):
        raise ValueError("epsilon0 > 0 and epsilon >= 0, finite")
    keep = 1.0 / (1.0 + math.exp(-epsilon0))
    best = 0.0
    for ones in range(n):
        # the others' 1s: (n - 1 - ones) - Bin(n - 1 - ones, keep) + Bin(ones, keep)
        zeros = n - 1 - ones
        up = stats.binom.pmf(np.arange(ones + 1), ones, keep)
        down = stats.binom.pmf(np.arange(zeros + 1), zeros, keep)[::-1]   # zeros - Bin(zeros, keep)
        z = np.convolve(up, down)
        one = np.append(z * (1 - keep), 0.0) + np.insert(z * keep, 0, 0.0)
        zero = np.append(z * keep, 0.0) + np.insert(z * (1 - keep), 0, 0.0)
        for x, y in ((one, zero), (zero, one)):
            best = max(best, float(np.sum(np.clip(x - math.exp(epsilon) * y, 0.0, None))))
    return best
""",
        """
def shuffled_rr_delta(n, epsilon0, epsilon):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
        raise ValueError("n must be a positive int")
    if math.isnan(epsilon0) or math.isnan(epsilon) or math.isinf(epsilon0) or math.isinf(epsilon):
        raise ValueError("epsilon0 and epsilon must be finite")
    if epsilon0 <= 0 or epsilon < 0:
        raise ValueError("epsilon0 > 0, epsilon >= 0")
    t = math.exp(epsilon0) / (1.0 + math.exp(epsilon0))
    worst = 0.0
    for ones in range(n):
        zeros = n - 1 - ones
        r = np.arange(ones + 1)[:, None]            # reports of 1 among the clients holding 1
        s = np.arange(zeros + 1)[None, :]           # reports of 1 among the clients holding 0
        joint = stats.binom.pmf(r, ones, t) * stats.binom.pmf(s, zeros, 1 - t)
        z = np.bincount((r + s).ravel(), weights=joint.ravel(), minlength=n)   # P[others report y]
        laws = {}
        for own in (0, 1):                          # the target's bit
            up = t if own == 1 else 1 - t           # P[the target reports 1]
            laws[own] = np.r_[z * (1 - up), 0.0] + np.r_[0.0, z * up]
        for a, b in ((laws[1], laws[0]), (laws[0], laws[1])):
            worst = max(worst, float(np.where(a > np.exp(epsilon) * b, a - np.exp(epsilon) * b, 0.0).sum()))
    return worst
""",
    ],
}
# ------------------------------------------------------------------------------------- grading

PROBE = Probe(NAME, EXERCISES, WRONG, ALTERNATIVES, dropped=frozenset(DROPPED))
install(PROBE, globals())  # the fixture and the three tests: tests/support/notebook_probes.py
