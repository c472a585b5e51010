"""coursetools.authoring.hidden_tests: the ban declaration hidden tests use (enforced by coursetools/grading/sandboxed/bans.py),
the batched calls, and the exact laws of the broken mechanisms the "find the counterexample" exercises judge witnesses with."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from coursetools.authoring.hidden_tests import (
    ForbiddenCallError,
    counterexample_verdict,
    discrete_laplace_cdf,
    discrete_laplace_pmf,
    forbid,
    noisy_max_value_probability,
    sparse_vector_value_probability,
)


def test_forbid_accepts_dplib_functions_by_dotted_name():
    assert forbid("dplib.rr_estimate", "dplib.mechanisms.rr_confidence.hoeffding_halfwidth") is None
    assert forbid("dplib.attacks.uniqueness.uniqueness_fraction") is None


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("numpy.mean", "dplib function names"),
        ("dplib.no_such_function", "dplib has no 'no_such_function'"),
        ("dplib.PrivacyAccountant", "not a Python function"),
        ("dplib.testing", "not a Python function"),
        (3, "dplib function names"),
    ],
)
def test_forbid_refuses_what_cannot_be_banned(name, message):
    with pytest.raises(ValueError, match=message):
        forbid(name)


def test_the_error_a_banned_stub_raises_fails_a_test():
    assert issubclass(ForbiddenCallError, AssertionError)


# ------------------------------------------------------- batched calls: repeat and map_calls
#
# A hidden test calls ``repeat(answer, n, ...)``/``map_calls(answer, calls)``. In the trusted
# grader ``answer`` is a proxy (coursetools.grading.trusted.runner.Remote) and the batch is one round trip; in a
# plain kernel it is a loop. The two must give the same results: the proxy side is exercised here
# through the real channel (coursetools.grading.bridge.Server in this process, requests and replies
# serialised to JSON text as with a real kernel).

import base64  # noqa: E402

import numpy as np  # noqa: E402

from coursetools.authoring.hidden_tests import BATCH_MARKER, map_calls, repeat  # noqa: E402
from coursetools.grading import bridge  # noqa: E402
from coursetools.grading.trusted import runner as trusted  # noqa: E402


class _LocalLink(trusted.KernelLink):
    """A KernelLink whose kernel is a bridge.Server over ``namespace``, in this process."""

    def __init__(self, namespace: dict) -> None:
        super().__init__(None, None)
        self.server = bridge.Server(namespace)

    def request(self, request: dict) -> dict:
        self.calls += 1
        self.server.serve(base64.b64encode(bridge.dumps(request).encode()).decode())
        return bridge.loads(self.server.last)


def _proxy(function):
    """The grader's proxy for ``function`` and the link it calls through."""
    link = _LocalLink({"answer": function})
    remote = trusted.TestNamespace({}, {"answer"}, link)["answer"]
    assert isinstance(remote, trusted.Remote)
    return remote, link


def _noisy_sum(values, scale, rng):
    return float(np.sum(values) + rng.laplace(0.0, scale))


def _two_draws(x, rng, *, shift=0.0):
    return [x + shift + rng.normal(), rng.integers(0, 10)]


def test_repeat_on_a_plain_function_is_the_loop_with_a_shared_generator():
    expected_rng = np.random.default_rng(17)
    expected = [_noisy_sum([1, 2], 0.5, expected_rng) for _ in range(50)]
    rng = np.random.default_rng(17)
    assert repeat(_noisy_sum, 50, [1, 2], 0.5, rng) == expected
    assert rng.bit_generator.state == expected_rng.bit_generator.state  # the test's rng advanced


def test_repeat_and_map_calls_give_bit_identical_results_on_a_proxy_and_a_plain_function():
    remote, link = _proxy(_two_draws)
    plain_rng, proxy_rng = np.random.default_rng(3), np.random.default_rng(3)
    plain = repeat(_two_draws, 40, 1.5, plain_rng, shift=2.0)
    proxied = repeat(remote, 40, 1.5, proxy_rng, shift=2.0)
    assert link.calls == 2  # the lookup of the answer, then one batch for the 40 calls
    assert [[float(a), int(b)] for a, b in plain] == [[float(a), int(b)] for a, b in proxied]
    assert plain_rng.bit_generator.state == proxy_rng.bit_generator.state

    calls = [(0.0, plain_rng), (1.0, plain_rng), (2.0, np.random.default_rng(9))]
    proxy_calls = [(0.0, proxy_rng), (1.0, proxy_rng), (2.0, np.random.default_rng(9))]
    kwargs = [{"shift": 1.0}, {}, {"shift": -1.0}]
    plain = map_calls(_two_draws, calls, kwargs)
    proxied = map_calls(remote, proxy_calls, kwargs)
    assert link.calls == 3
    assert [[float(a), int(b)] for a, b in plain] == [[float(a), int(b)] for a, b in proxied]
    assert plain_rng.bit_generator.state == proxy_rng.bit_generator.state


def test_a_proxy_is_recognised_by_its_class_without_asking_the_kernel():
    remote, link = _proxy(_two_draws)
    assert repeat(remote, 0, 1.0, np.random.default_rng(0)) == []
    assert map_calls(remote, []) == []
    assert link.calls == 1  # only the lookup: recognising the proxy sent nothing

    class Batching:  # any class carrying the marker batches itself
        def __init__(self):
            self.batches = []

        def __call__(self, *args, **kwargs):
            raise AssertionError("a marked proxy must not be called one by one")

        def repeat(self, n, *args, **kwargs):
            self.batches.append(("repeat", n, args, kwargs))
            return ["r"] * n

        def map(self, args_list, kwargs=None):
            self.batches.append(("map", args_list, kwargs))
            return ["m"] * len(args_list)

    setattr(Batching, BATCH_MARKER, True)
    fake = Batching()
    assert repeat(fake, 2, 1, k=2) == ["r", "r"]
    assert map_calls(fake, [(1,), 2], {"k": 3}) == ["m", "m"]
    assert fake.batches == [("repeat", 2, (1,), {"k": 2}), ("map", [(1,), 2], {"k": 3})]


def test_map_calls_takes_a_tuple_as_positional_arguments_and_anything_else_as_one():
    assert map_calls(max, [(1, 5), [1, 5], ([7],)]) == [5, 5, 7]
    assert map_calls(sorted, [[3, 1], [2, 0]], kwargs={"reverse": True}) == [[3, 1], [2, 0]]
    assert map_calls(int, ["11", "11"], kwargs=[{"base": 2}, {"base": 3}]) == [3, 4]
    remote, _ = _proxy(max)
    assert map_calls(remote, [(1, 5), [1, 5], ([7],)]) == [5, 5, 7]


def test_arguments_are_copied_as_the_channel_copies_them():
    def appends(items, array):
        items.append(len(items))
        array[0] += 1
        return list(items), array.copy()

    items, array = [0], np.zeros(2)
    # repeat: one copy for all the calls (as the kernel decodes one batch), never the test's own
    plain = repeat(appends, 3, items, array)
    assert items == [0] and array.tolist() == [0.0, 0.0]
    assert [r[0] for r in plain] == [[0, 1], [0, 1, 2], [0, 1, 2, 3]]
    assert [r[1][0] for r in plain] == [1.0, 2.0, 3.0]
    remote, _ = _proxy(appends)
    proxied = repeat(remote, 3, items, array)
    assert [r[0] for r in proxied] == [r[0] for r in plain]
    assert [float(r[1][0]) for r in proxied] == [1.0, 2.0, 3.0]
    # map_calls: a copy per call
    plain = map_calls(appends, [(items, array), (items, array)])
    assert [r[0] for r in plain] == [[0, 1], [0, 1]] == [r[0] for r in map_calls(remote, [(items, array)] * 2)]
    assert items == [0] and array.tolist() == [0.0, 0.0]


def test_the_first_failing_call_stops_the_batch_and_its_draws_stay_drawn():
    def fails_on_third(rng, counter):
        counter.append(rng.random())
        if len(counter) == 3:
            raise ValueError("student's message")
        return len(counter)

    rng, reference = np.random.default_rng(1), np.random.default_rng(1)
    with pytest.raises(ValueError) as caught:
        repeat(fails_on_third, 5, rng, [])
    assert "call 3 of 5 made by repeat()" in caught.value.__notes__[0]
    reference.random(3)  # three draws were made before the error
    assert rng.bit_generator.state == reference.bit_generator.state

    remote, _ = _proxy(fails_on_third)
    proxy_rng = np.random.default_rng(1)
    with pytest.raises(ValueError):  # the proxy's error is-a the builtin class the student raised
        repeat(remote, 5, proxy_rng, [])
    assert proxy_rng.bit_generator.state == reference.bit_generator.state


def test_a_bound_method_of_a_students_object_is_batched_like_a_function():
    class Counter:
        def __init__(self):
            self.total = 0

        def add(self, k):
            self.total += k
            return self.total

    counter = Counter()
    assert repeat(counter.add, 3, 2) == [2, 4, 6]
    assert map_calls(counter.add, [1, 2]) == [7, 9]
    assert counter.total == 9


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: repeat(3, 2), TypeError, "answer must be callable"),
        (lambda: repeat(abs, -1, 1), ValueError, "n must be >= 0"),
        (lambda: repeat(abs, 2.0, 1), TypeError, "n must be an int"),
        (lambda: repeat(abs, True, 1), TypeError, "n must be an int"),
        (lambda: map_calls(None, [(1,)]), TypeError, "answer must be callable"),
        (lambda: map_calls(abs, 5), TypeError, "arg_tuples must be an iterable"),
        (lambda: map_calls(abs, [(1,)], kwargs=[{}, {}]), ValueError, "kwargs has 2 dicts for 1 calls"),
        (lambda: map_calls(abs, [(1,)], kwargs="x"), TypeError, "kwargs must be a dict"),
        (lambda: map_calls(abs, [(1,)], kwargs=[3]), TypeError, r"kwargs\[0\] must be a dict"),
    ],
)
def test_batched_calls_refuse_bad_input_naming_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ------------------------------------------- the helpers' home: the course, seen from the kernel


def test_the_helpers_examples_hold():
    """Their doctests: the module left dplib, whose modules pytest collects doctests from."""
    import doctest

    from coursetools.authoring import hidden_tests

    failed, tried = doctest.testmod(hidden_tests, optionflags=doctest.ELLIPSIS)
    assert tried >= 6 and failed == 0


def test_a_banned_stub_raises_a_forbidden_call_error_the_trusted_runner_recognises(tmp_path):
    """The stub imports nothing (the sandboxed kernel cannot import coursetools), yet what it
    raises is reported by the kernel under the helpers' class name and rebuilt on the trusted side
    as an instance of that very class."""
    from coursetools.grading.sandboxed import bans

    copy = bans.grading_dplib(["dplib.mechanisms.rr_confidence.rr_halfwidth"], tmp_path)
    source = (copy / "mechanisms" / "rr_confidence.py").read_text(encoding="utf-8")
    start = source.index("def rr_halfwidth(")
    stub = source[start : source.index("\n\n", start)]
    assert "import" not in stub and "coursetools.authoring.hidden_tests" in stub
    namespace: dict = {}
    exec(compile(stub, "<kernel>", "exec"), namespace)  # a namespace with nothing imported
    with pytest.raises(AssertionError, match="write rr_halfwidth yourself") as caught:
        namespace["rr_halfwidth"](0.75, 100)
    assert type(caught.value) is not ForbiddenCallError  # made in the kernel, not imported
    classes = bridge._describe(caught.value)["classes"]
    assert classes[:2] == ["coursetools.authoring.hidden_tests.ForbiddenCallError", "AssertionError"]
    error = trusted._student_raised("rr_halfwidth(0.75, 100)", classes)
    assert isinstance(error, ForbiddenCallError) and error.raised == "ForbiddenCallError"


# ------------------------------------------- exact laws: the "find the counterexample" exercises
#
# Notebooks 03 and 04 hand in a witness (two neighbouring inputs and a set of outputs) against a
# broken mechanism with integer noise: report noisy max that also releases its value, and
# AboveThreshold that releases the noisy value it stops at (Lyu, Su & Li 2017, Algorithm 3, c = 1).
# Each exact law is checked against an independent brute-force sum over the noise values in a box,
# whose error is bounded by the mass of the noise outside the box; the verdict against the valid and
# invalid witnesses listed in the notebooks' probe files.

HALF = Fraction(1, 2)


def _outside(q: Fraction, k: int) -> Fraction:
    """P[|Z| > k] for the discrete Laplace law: 2 q^(k+1) / (1 + q)."""
    return 2 * q ** (k + 1) / (1 + q)


@pytest.mark.parametrize("q", [HALF, Fraction(3, 4), Fraction(1, 10)])
def test_the_pmf_sums_to_one_and_the_cdf_is_its_running_sum(q):
    k = 30
    inside = sum(discrete_laplace_pmf(z, q) for z in range(-k, k + 1))
    assert inside == 1 - _outside(q, k)  # exact: the tails are geometric
    running = _outside(q, k) / 2  # P[Z < -k]
    for x in range(-k, k + 1):
        running += discrete_laplace_pmf(x, q)
        assert discrete_laplace_cdf(x, q) == running
    assert discrete_laplace_pmf(0, HALF) == Fraction(1, 3)
    assert discrete_laplace_pmf(-2, HALF) == Fraction(1, 12)


@pytest.mark.parametrize("q", [0, 1, Fraction(3, 2), -0.5])
def test_a_parameter_outside_zero_one_is_refused(q):
    with pytest.raises(ValueError, match="q must be"):
        discrete_laplace_pmf(0, q)


def _noisy_max_brute(scores, k, q):
    """P[(i, v)] for every output, summing over every noise vector in [-k, k]^m."""
    law: dict[tuple[int, int], Fraction] = {}
    for noise in itertools.product(range(-k, k + 1), repeat=len(scores)):
        noisy = [s + z for s, z in zip(scores, noise, strict=True)]
        top = max(noisy)
        out = (noisy.index(top), top)  # the first of the largest
        p = Fraction(1)
        for z in noise:
            p *= discrete_laplace_pmf(z, q)
        law[out] = law.get(out, Fraction(0)) + p
    return law


@pytest.mark.parametrize("scores", [[0, 0], [1, -1], [0, 2, 2], [3, 1, 2]])
def test_noisy_max_agrees_with_a_brute_force_sum_over_the_noise(scores):
    k = 9
    slack = len(scores) * _outside(HALF, k)  # mass of the noise vectors outside the box
    brute = _noisy_max_brute(scores, k, HALF)
    for out, p in brute.items():
        exact = noisy_max_value_probability(scores, [out], HALF)
        assert 0 <= exact - p <= slack, out
    everything = [(i, v) for i in range(len(scores)) for v in range(-60, 64)]
    assert 1 - noisy_max_value_probability(scores, everything, HALF) < Fraction(1, 10**15)


def _svt_brute(queries, k, q):
    law: dict[tuple[int, int], Fraction] = {}
    for rho in range(-k, k + 1):
        for noise in itertools.product(range(-k, k + 1), repeat=len(queries)):
            noisy = [f + z for f, z in zip(queries, noise, strict=True)]
            above = [j for j, x in enumerate(noisy) if x >= rho]
            if not above:
                continue
            out = (above[0], noisy[above[0]])
            p = discrete_laplace_pmf(rho, q)
            for z in noise:
                p *= discrete_laplace_pmf(z, q)
            law[out] = law.get(out, Fraction(0)) + p
    return law


@pytest.mark.parametrize("queries", [[0], [-1, -1], [0, 0, -2], [1, 0, 2]])
def test_sparse_vector_agrees_with_a_brute_force_sum_over_the_noise(queries):
    k = 7
    slack = (len(queries) + 1) * _outside(HALF, k)
    brute = _svt_brute(queries, k, HALF)
    for out, p in brute.items():
        exact = sparse_vector_value_probability(queries, 0, [out], HALF, HALF)
        assert 0 <= exact - p <= slack, out


def test_sparse_vector_with_a_threshold_and_unequal_noises_agrees_too():
    q_t, q_q = Fraction(1, 4), Fraction(1, 2)
    for queries, threshold in [([2, 1], 1), ([0, 3, -1], -1)]:
        for k_out in range(len(queries)):
            for v in range(-3, 5):
                exact = sparse_vector_value_probability(queries, threshold, [(k_out, v)], q_t, q_q)
                # the same sum by brute force over rho in a wide window, the rest bounded
                s = Fraction(0)
                for rho in range(-60, v - threshold + 1):
                    term = discrete_laplace_pmf(rho, q_t)
                    for f in queries[:k_out]:
                        term *= discrete_laplace_cdf(threshold + rho - f - 1, q_q)
                    s += term
                s *= discrete_laplace_pmf(v - queries[k_out], q_q)
                assert 0 <= exact - s <= q_t**60


def _ratio(probability, a, b, event):
    return probability(a, event) / probability(b, event)


def _nm(x, e):
    return noisy_max_value_probability(x, e, HALF)


def _sv(x, e):
    return sparse_vector_value_probability(x, 0, e, HALF, HALF)


def test_the_witnesses_of_the_notebooks_have_the_ratios_their_text_states():
    # 03: three candidates give 2^3, two give exactly e^eps = 4 (allowed by the claim)
    assert _ratio(_nm, [1, 1, 1], [0, 2, 2], [(0, 1)]) == 8
    assert _ratio(_nm, [1, 1], [0, 2], [(0, 1)]) == 4
    # 04: the stop at the k-th query with its value costs 2^k
    assert _ratio(_sv, [-1, -1, -1], [0, 0, -2], [(2, -1)]) == 8
    assert _ratio(_sv, [-1, -1], [0, -2], [(1, -1)]) == 4
    assert _ratio(_sv, [-1] * 4, [0, 0, 0, -2], [(3, -1)]) == 16


def test_a_valid_witness_passes_in_either_order():
    assert counterexample_verdict(([1, 1, 1], [0, 2, 2], [(0, 1)]), _nm, 4) is None
    assert counterexample_verdict(([0, 2, 2], [1, 1, 1], [(0, 1)]), _nm, 4) is None
    assert counterexample_verdict(((-1, -1, -1), (0, 0, -2), ((2, -1.0),)), _sv, 4) is None


@pytest.mark.parametrize(
    ("witness", "words"),
    [
        (([1, 1], [0, 2], [(0, 1)]), "does not exceed"),  # ratio exactly e^eps
        (([2, 0, 0], [0, 2, 2], [(0, 1)]), "not neighbours"),
        (([1, 1, 1], [0, 2], [(0, 1)]), "same length"),
        (([1, 1, 1], [0, 2, 2], [(0, 1.5)]), "probability 0"),  # a value only a float sampler gives
        (([1, 1, 1], [0, 2, 2], [(3, 1)]), "probability 0"),  # no such index
        (([1, 1, 1], [0, 2, 2], []), "between 1 and"),
        (([1, 1, 1], [0, 2, 2], [(0, v) for v in range(2000)]), "between 1 and"),
        (([1, 1, 1], [0, 2, 2]), "three items"),
        (([1.5, 1, 1], [1, 2, 2], [(0, 1)]), "whole numbers"),
        (([float("nan"), 1, 1], [0, 2, 2], [(0, 1)]), "whole numbers"),
        (([1] * 9, [1] * 9, [(0, 1)]), "between 1 and 8"),
        (([1, 1, 1], [0, 2, 2], ["x"]), "pairs"),
        (([1, 1, 1], [0, 2, 2], [(0, 10**9)]), "values must lie"),
        (([1, 1, 1], [0, 2, 2], [(0, 10**400)]), "pairs"),  # too large for a double: no OverflowError
    ],
)
def test_an_invalid_witness_fails_with_a_reason(witness, words):
    why = counterexample_verdict(witness, _nm, 4)
    assert why is not None and words in why


def test_the_index_alone_is_no_counterexample_to_report_noisy_max():
    event = [(0, v) for v in range(-50, 51)]
    assert "does not exceed" in counterexample_verdict(([1, 1, 1], [0, 2, 2], event), _nm, 4)


def test_the_verdict_never_echoes_what_the_student_returned():
    why = counterexample_verdict((["<script>", 1], [0, 2], [(0, 1)]), _nm, 4)
    assert why is not None and "<script>" not in why


def test_the_largest_witness_allowed_is_judged_whole():
    # 8 queries at the bounds and 1,000 outputs at the largest values allowed: the threshold sums
    # run once per stopping index, and the verdict comes back (a ratio, not a hang)
    queries, neighbour = [-100] * 8, [-99] * 7 + [-100]
    event = [(k, v) for k in range(8) for v in range(875, 1000)]
    why = counterexample_verdict((queries, neighbour, event), _sv, 4)
    assert why is None or "does not exceed" in why
    assert counterexample_verdict((queries, neighbour, event[:1] + [(0, -1001)]), _sv, 4) == (
        "the event's values must lie between -1000 and 1000"
    )
