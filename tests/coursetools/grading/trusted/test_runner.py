"""The trusted test runner: verdicts, partial credit and what the feedback may say.

The kernel is replaced by an in-process :class:`coursetools.grading.bridge.Server` over a namespace of
"student" objects, reached through the same encode/decode path as a real kernel (the requests
and replies are serialised to JSON text both ways), so these tests run in milliseconds.
"""

from __future__ import annotations

import base64

import numpy as np
import pytest

from coursetools.grading import bridge
from coursetools.grading.trusted import runner as trusted


class LocalLink(trusted.KernelLink):
    """A KernelLink whose kernel is a bridge.Server in this process."""

    def __init__(self, namespace: dict) -> None:
        self.server = bridge.Server(namespace)
        self.calls = 0

    def request(self, request: dict) -> dict:
        self.calls += 1
        text = bridge.dumps(request)  # what the grader sends
        self.server.serve(base64.b64encode(text.encode()).decode())
        return bridge.loads(self.server.last)


PRELUDE = trusted.build_prelude(["import numpy as np", "import math"])


def run(source: str, namespace: dict, points: float = 2.0, hidden=()):
    link = LocalLink(namespace)
    test = {"grade_id": "t", "points": points, "source": source, "hidden_lines": list(hidden)}
    return trusted.run_test(test, PRELUDE, set(namespace) | {"missing_answer"}, link), link


def double(x):
    return np.asarray(x) * 2


def test_a_passing_test_gets_all_points():
    result, _ = run("assert np.array_equal(double([1, 2]), [2, 4])", {"double": double})
    assert result == {"status": "passed", "points": 2.0, "message": ""}


def test_a_visible_assertion_without_message_is_quoted():
    result, _ = run("assert double(1) == 3", {"double": double})
    assert result["message"] == "failed: assert double(1) == 3"


def test_a_hidden_assertion_without_message_says_only_where():
    source = "x = 1\n### BEGIN HIDDEN TESTS\nassert double(1) == 3\n### END HIDDEN TESTS"
    result, _ = run(source, {"double": double}, hidden=[3])
    assert result["message"] == "a hidden test failed (line 3)"
    assert "double(1)" not in result["message"]


def test_a_hidden_library_assertion_never_shows_the_values_it_compared():
    # numpy.testing's message holds both arrays: the hidden input and the expected answer.
    source = (
        "### BEGIN HIDDEN TESTS\nsecret = np.array([31337.0])\n"
        "np.testing.assert_allclose(double(secret), secret * 3, err_msg='doubling')\n"
        "### END HIDDEN TESTS"
    )
    result, _ = run(source, {"double": double}, hidden=[1, 2, 3, 4])
    assert result["message"] == "a hidden test failed (line 3)"
    visible = "np.testing.assert_allclose(double([1.0]), [3.0])"
    result, _ = run(visible, {"double": double})
    assert "Not equal to tolerance" in result["message"]  # visible: its values are the student's


def test_a_hidden_course_assertion_keeps_its_teaching_message():
    source = (
        "### BEGIN HIDDEN TESTS\nfrom dplib.testing import assert_laplace_scale\n"
        "assert_laplace_scale(double(np.random.default_rng(0).laplace(0, 1, 5000)), 1.0)\n"
        "### END HIDDEN TESTS"
    )
    result, _ = run(source, {"double": double}, hidden=[1, 2, 3, 4])
    assert result["message"].startswith("the mean absolute deviation from 0 is 2.0")


def test_a_hidden_raise_keeps_the_instructors_message():
    source = "### BEGIN HIDDEN TESTS\nif double(1) != 3:\n    raise AssertionError('odd')\n### END HIDDEN TESTS"
    result, _ = run(source, {"double": double}, hidden=[1, 2, 3, 4])
    assert result["message"] == "odd"


def test_an_assertion_message_is_the_instructors():
    result, _ = run("assert double(1) == 3, 'doubling 1 should give 3?'", {"double": double})
    assert result["message"] == "doubling 1 should give 3?"


def test_a_student_exception_shows_its_builtin_class_never_its_message():
    def leaky(x):
        raise ValueError("SECRET the student wrote")

    class Custom(Exception):
        pass

    def custom(x):
        raise Custom("SECRET")

    result, _ = run("leaky(1)", {"leaky": leaky})
    assert result["message"] == "leaky raised ValueError"
    result, _ = run("custom(1)", {"custom": custom})
    assert result["message"] == "custom raised Exception" and "SECRET" not in str(result)


def test_a_test_can_expect_the_students_error():
    def checks(epsilon):
        if epsilon <= 0:
            raise ValueError("epsilon must be > 0")
        return epsilon

    source = "try:\n    checks(-1)\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError('accepted -1')"
    result, _ = run(source, {"checks": checks})
    assert result["status"] == "passed"
    result, _ = run(source, {"checks": lambda epsilon: epsilon})
    assert result["message"] == "accepted -1"


def test_an_error_in_the_test_on_a_student_value_does_not_echo_it():
    result, _ = run("{}[double('KEY-FROM-STUDENT')]", {"double": lambda s: s})
    assert result["status"] == "failed" and "KEY-FROM-STUDENT" not in str(result)
    assert result["message"].startswith("KeyError in the test at line 1")


def test_a_missing_answer_is_named():
    result, _ = run("missing_answer(1)", {})
    assert result["message"] == "your notebook does not define missing_answer"


@pytest.mark.parametrize(("last", "points"), [("0.5", 1.0), ("0.0", 0.0), ("7", 2.0), ("True", 2.0)])
def test_the_last_expression_gives_partial_credit(last, points):
    result, _ = run(f"x = 1\n{last}", {})
    assert result["points"] == points


def test_map_and_repeat_are_one_round_trip_each_and_share_the_generator():
    def draw(n, rng):
        return rng.normal(size=n)

    source = (
        "rng = np.random.default_rng(3)\n"
        "many = draw.repeat(50, 2, rng)\n"
        "ref = np.random.default_rng(3)\n"
        "assert all(np.array_equal(m, ref.normal(size=2)) for m in many)\n"
        "assert rng.normal() == ref.normal()  # the caller's generator advanced too\n"
        "pairs = draw.map([(1, np.random.default_rng(s)) for s in range(5)])\n"
        "assert [p[0] for p in pairs] == [np.random.default_rng(s).normal() for s in range(5)]\n"
    )
    result, link = run(source, {"draw": draw})
    assert result["status"] == "passed", result
    assert link.calls == 3  # lookup, repeat, map


def test_objects_stay_in_the_kernel_behind_handles():
    class Budget:
        def __init__(self, total):
            self.total, self.spent = total, 0.0

        def spend(self, eps):
            if self.spent + eps > self.total:
                raise ValueError("over")
            self.spent += eps
            return self.total - self.spent

    source = (
        "b = Budget(1.0)\n"
        "assert b.spend(0.4) == 0.6\n"
        "try:\n    b.spend(0.7)\nexcept ValueError:\n    pass\n"
        "else:\n    raise AssertionError('overspent')\n"
        "assert b.spent == 0.4\n"
    )
    result, _ = run(source, {"Budget": Budget})
    assert result["status"] == "passed", result


def test_a_value_the_grader_cannot_read_fails_with_a_clear_message():
    result, _ = run("x = weird()", {"weird": lambda: np.array([object()], dtype=object)})
    assert result["message"].startswith("weird returned something the grader cannot read")


def test_a_generator_advances_even_when_the_student_code_raises():
    # "refuse before drawing" is gradable only if draws made before an exception are visible
    def draws_then_raises(rng):
        rng.normal(size=3)
        raise ValueError("refused too late")

    def raises_at_once(rng):
        raise ValueError("refused in time")

    source = (
        "g = np.random.default_rng(5)\n"
        "state = g.bit_generator.state\n"
        "try:\n"
        "    raises_at_once(g)\n"
        "except ValueError:\n"
        "    pass\n"
        "assert g.bit_generator.state == state\n"
        "try:\n"
        "    draws_then_raises(g)\n"
        "except ValueError:\n"
        "    pass\n"
        "ref = np.random.default_rng(5)\n"
        "ref.normal(size=3)\n"
        "assert g.bit_generator.state == ref.bit_generator.state, 'the draws before the error count'\n"
    )
    result, _ = run(source, {"draws_then_raises": draws_then_raises, "raises_at_once": raises_at_once})
    assert result["status"] == "passed", result


class Budget:
    """A student's class, defined at top level as in a notebook."""

    def spend(self, x):
        raise KeyError(x)


def test_handles_of_instances_and_methods_are_named_like_the_code_that_made_them():
    result, _ = run("b = Budget()\nb.spend(1)", {"Budget": Budget})
    assert result["status"] == "failed"
    assert "Budget(...).spend raised KeyError" in result["message"], result


# ------------------------------------------- no text the kernel chose reaches feedback

CANARY = "HIDDEN:g0.1,2000,1;x" + "Q7"  # what a student would smuggle out of a hidden test


def _class_named(name: str, *bases):
    cls = type("Smuggler", bases or (object,), {})
    cls.__name__ = cls.__qualname__ = name
    return cls


def test_an_object_of_any_class_is_named_by_the_grader_never_by_its_class():
    smuggler = _class_named(CANARY)
    source = "got = f(3)\nassert got == 6, f'f(3) must be 6, got {got!r} ({got})'\n"
    result, _ = run(source, {"f": lambda x: smuggler()})
    assert result["status"] == "failed"
    assert CANARY not in str(result) and "g0.1" not in str(result)
    assert result["message"] == "f(3) must be 6, got <student's f(...)> (<student's f(...)>)"


def test_a_students_exception_class_is_reported_as_its_builtin_ancestor_only():
    as_value_error = _class_named(CANARY, ValueError)
    as_exception = _class_named(CANARY, Exception)
    outside = _class_named(CANARY, BaseException)

    def raises(cls):
        def f(x):
            raise cls("message " + CANARY)

        return f

    expects = (
        "try:\n    f(1)\nexcept ValueError:\n    pass\nelse:\n"
        "    raise AssertionError('f must raise ValueError')\nf(2)\n"
    )
    result, _ = run(expects, {"f": raises(as_value_error)})
    assert result["message"] == "f raised ValueError"  # caught as one, then named as one
    result, _ = run("f(1)", {"f": raises(as_exception)})
    assert result["message"] == "f raised Exception"
    result, _ = run("f(1)", {"f": raises(outside)})  # no exception class of the table above it
    assert result["message"] == "f raised an exception"
    assert CANARY not in str(result)


def test_exception_names_from_the_kernel_are_looked_up_never_imported(tmp_path, monkeypatch):
    # A module that would announce its import, reachable under dplib's name (the old runner
    # imported "dplib.<anything>.X" to find X).
    import sys

    import dplib

    flag = tmp_path / "imported"
    (tmp_path / "zz_canary_26.py").write_text(f"open({str(flag)!r}, 'w').close()\nclass X(Exception): pass\n")
    monkeypatch.setattr(dplib, "__path__", [*dplib.__path__, str(tmp_path)])
    attempts = []

    class Spy:
        @staticmethod
        def find_spec(name, path=None, target=None):
            attempts.append(name)
            return None

    monkeypatch.setattr(sys, "meta_path", [Spy(), *sys.meta_path])
    before = set(sys.modules)
    for forged in (["dplib.zz_canary_26.X"], ["dplib.__main__.X"], ["os.system"], [CANARY]):
        error = trusted._failure("f", {"classes": forged})
        assert error.feedback == "f raised an exception", forged
    assert not flag.exists()
    assert attempts == [] and set(sys.modules) == before
    # the table is found by identity, so the real classes still work
    assert trusted._failure("f", {"classes": ["KeyError"]}).feedback == "f raised KeyError"


def test_the_students_strings_are_placeholders_in_messages_but_compare_as_themselves():
    word = "secret-" + "word"
    names = {"h": lambda: word, "d": lambda: {word: 1}}
    result, _ = run("assert h() == 'secret-word'\nassert d()['secret-word'] == 1\n", names)
    assert result["status"] == "passed", result
    result, _ = run("got = h()\nassert got == 'x', f'expected x, got {got!r}'\n", names)
    assert result["message"] == "expected x, got <a str of 11 characters>"
    # derived text (upper, slice, concatenation, join) never comes out either
    fallback = "a hidden test failed (line 3)"
    for expression, expected in (
        ("got.upper()", fallback),
        ("'got ' + got[2:]", fallback),
        ("', '.join([got, 'y'])", fallback),  # a plain str, but it quotes the student's text
        ("'%s!' % got.title()", fallback),  # re-cased and quoted as text: caught all the same
        ("'%s' % got[3:9]", fallback),  # a slice of 6 characters
        ("f'{got[:2]}'", "<a str of 2 characters>"),  # displayed: a placeholder
    ):
        source = f"got = h()\n### BEGIN HIDDEN\nassert got == 'x', {expression}\n"
        result, _ = run(source, names, hidden=[3])
        assert result["message"] == expected, (expression, result)


def test_the_kernels_error_flags_choose_among_the_graders_sentences():
    forged = trusted._failure("f", {"timeout": True, "seconds": CANARY})
    assert forged.feedback == "f did not finish within the time limit (its time limit)"
    assert trusted._failure("f", {"timeout": True, "seconds": 60}).feedback.endswith("(60 s)")
    budget = trusted._failure("f", {"budget": True}).feedback
    assert budget.startswith("f was not called") and "256 MiB" in budget


def test_strings_inside_string_arrays_and_too_many_strings_silence_the_message():
    words = np.array(["alpha-secret", "beta"])
    names = {"a": lambda: words, "many": lambda: [f"w{i:05d}" for i in range(trusted.MAX_REMEMBERED)]}
    source = "got = a()\n### BEGIN HIDDEN\nassert got.size == 0, f'got {got}'\n"
    result, _ = run(source, names, hidden=[3])
    assert result["message"] == "a hidden test failed (line 3)"  # the array's repr quotes them
    # past the strings it can remember, the runner shows no instructor message at all
    source = "got = many()\n### BEGIN HIDDEN\nassert len(got) == 0, 'nothing from here: ' + ','.join(['x'])\n"
    result, _ = run(source, names, hidden=[3])
    assert result["message"] == "a hidden test failed (line 3)"
    source = "got = many()[:3]\n### BEGIN HIDDEN\nassert False, 'plain instructor text'\n"
    result, _ = run(source, {"many": lambda: ["a", "b", "c"]}, hidden=[3])
    assert result["message"] == "plain instructor text"  # short strings: the message stands


def test_a_student_error_in_a_hidden_call_is_marked_hidden_so_the_handin_policy_withholds_it():
    """"krr raised OverflowError" on a hidden line says what the hidden test called: the verdict is
    marked hidden, so the hand-in service's ``hidden_messages = "never"`` withholds it; the same
    error on a visible line is the student's to see."""

    def overflow(x):
        raise OverflowError("math range error")

    hidden = "x = 1\n### BEGIN HIDDEN TESTS\noverflow(800)\n### END HIDDEN TESTS"
    result, _ = run(hidden, {"overflow": overflow}, hidden=[3])
    assert result["message"] == "overflow raised OverflowError" and result["hidden"] is True
    visible, _ = run("overflow(1)", {"overflow": overflow})
    assert visible["message"] == "overflow raised OverflowError" and "hidden" not in visible

    class TimingOut(LocalLink):  # the grader's reply when the call ran out of time
        def request(self, request):
            reply = super().request(request)
            return {"ok": False, "error": {"timeout": True, "seconds": 60}} if request.get("op") == "call" else reply

    test = {"grade_id": "t", "points": 1.0, "source": hidden, "hidden_lines": [3]}
    timed_out = trusted.run_test(test, PRELUDE, {"overflow"}, TimingOut({"overflow": overflow}))
    assert "did not finish within the time limit (60 s)" in timed_out["message"]
    assert timed_out["hidden"] is True


# --------------------------------------------------------- a reply relayed as the kernel's text


def _relayed(reply_frame: dict) -> dict:
    """What KernelLink.request returns when the grader answers with ``reply_frame`` (real framing)."""
    import io

    from coursetools.grading import framing

    rx = io.BytesIO(framing.encode(reply_frame))
    link = trusted.KernelLink(rx, io.BytesIO())
    return link.request({"op": "lookup", "name": "f"})


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("ascii")).decode("ascii")


def test_a_relayed_reply_is_parsed_and_checked_by_the_runner():
    reply = {"ok": True, "value": bridge.encode([np.arange(3), (1, "a")])}
    got = _relayed({"op": "reply", "text": _b64(bridge.dumps(reply))})
    assert got == reply  # the tree, decoded later by the proxy exactly as before
    refused = {"ok": False, "error": {"boundary": True}}
    for text in (
        "not base64!",  # the grader's own frame, malformed
        _b64("[1, 2]"),  # JSON, but not a reply object
        _b64('{"ok": NaN}'),  # a constant JSON has no business carrying
        _b64("[" * 100_000),  # deeper than the parser goes
        _b64("[" + ",".join(["{}"] * (bridge.MAX_PARTS + 1)) + "]"),  # more parts than allowed
    ):
        assert _relayed({"op": "reply", "text": text}) == refused, text[:40]
    # a reply the grader wrote itself (a timeout, a dead kernel) still comes as a dict
    timeout = {"ok": False, "error": {"timeout": True, "seconds": 5}}
    assert _relayed({"op": "reply", "reply": timeout}) == timeout
