"""coursetools.authoring.hidden_tests: the ban declaration hidden tests use (enforced by coursetools/grading/sandboxed/bans.py)."""

from __future__ import annotations

import pytest

from coursetools.authoring.hidden_tests import ForbiddenCallError, forbid


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
