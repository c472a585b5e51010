"""The data boundary: what crosses comes back equal, what must not cross is refused.

Everything a student's kernel sends is decoded here; these tests are the contract of that decoder.
"""

from __future__ import annotations

import base64
import io
import math

import numpy as np
import pytest

from coursetools.grading import bridge


def _round_trip(value, **kw):
    generators_out: list = []
    generators_in: list = []
    text = bridge.dumps(bridge.encode(value, generators=generators_out, **kw))
    return bridge.decode(bridge.loads(text), generators=generators_in), generators_in


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -(10**30),
        2.5,
        "épsilon",
        b"\x00\xff",
        1 + 2j,
        [1, [2, (3, "x")]],
        {1: "a", "b": (2, 3), (4, 5): None},
        {1, 2},
        frozenset({"a"}),
        slice(1, None, 2),
        Ellipsis,
        ((0, 4), (2, 3)),
        [((0, 1), (0, 2)), ((1, 2), (0, 2))],
        (),
        [(), [], ((),)],
        (1, [2.5, None, (True, -(10**30))]),
        ([1, 2], "x", (3, (4,))),  # a string: only the part without it is a nest
        [(1, 2), np.float64(0.5), (math.inf,)],  # a numpy scalar and an infinity beside nests
        {(1, (2, 3)): [(4,)]},
    ],
)
def test_plain_values_come_back_equal_and_of_the_same_type(value):
    got, _ = _round_trip(value)
    assert got == value and type(got) is type(value)


def _same(a, b) -> bool:
    """Equal, and of the same type all the way down (``(1,) == [1]`` is False already, but
    ``1 == 1.0 == True``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


def test_lists_and_tuples_of_numbers_cross_as_one_nest_and_keep_every_type():
    blocks = [((r, r + 1), (c, c + 2)) for r in range(8) for c in range(0, 8, 2)]
    tree = bridge.encode(blocks)
    # one tag for the 32 blocks (three tuples each), the kinds in the order the lists open
    assert tree["$"] == "nest" and tree["t"] == "l" + "ttt" * 32
    assert bridge.dumps(tree).count("$") == 1
    got, _ = _round_trip(blocks)
    assert _same(got, blocks)
    mixed = [(1, True), [None, 2.0, [False, (0,)]], 3, (1.5, [])]
    got, _ = _round_trip(mixed)
    assert _same(got, mixed)
    # a list without a tuple in it is the JSON list it always was
    assert bridge.encode([[1, 2], [3.5, None]]) == [[1, 2], [3.5, None]]
    # what is not a plain number (a string, an array, an infinity) leaves its own part out
    tree = bridge.encode([(1, 2), ("a", 3)])
    assert tree[0]["$"] == "nest" and tree[1]["$"] == "tuple"
    assert _same(_round_trip([(1, 2), ("a", 3)])[0], [(1, 2), ("a", 3)])


def test_non_finite_floats_cross_without_json_nan():
    got, _ = _round_trip([math.inf, -math.inf, math.nan])
    assert got[0] == math.inf and got[1] == -math.inf and math.isnan(got[2])
    assert "NaN" not in bridge.dumps(bridge.encode(math.nan))


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype=np.int64).reshape(3, 4),
        np.linspace(0, 1, 7, dtype=np.float32),
        np.array([True, False]),
        np.array(["a", "bc"]),
        np.array([1 + 1j]),
        np.arange(10.0)[::3],  # not contiguous
        np.arange(6.0).reshape(2, 3).T,  # Fortran order
        np.arange(4, dtype=">i4"),  # big-endian
        np.array(2.5),  # zero dimensions
        np.array([b"x", b"yz"]),
        np.array(["", ""]),  # strings of length 0: a dtype of no bytes
        np.zeros((0, 3)),
    ],
)
def test_arrays_keep_dtype_shape_and_values(array):
    got, _ = _round_trip(array)
    assert type(got) is np.ndarray and got.dtype == array.dtype and got.shape == array.shape
    np.testing.assert_array_equal(got, array)
    got[...] = got  # the receiver's own writable copy, not a view of the message
    assert got.flags.writeable and got.flags.owndata


def test_numpy_scalars_stay_numpy_scalars():
    got, _ = _round_trip([np.float64(1.5), np.int32(-3), np.bool_(True)])
    assert [type(x) for x in got] == [np.float64, np.int32, np.bool_]


def test_a_generator_crosses_as_its_state_and_is_shared_when_repeated():
    rng = np.random.default_rng(42)
    (first, second), generators = _round_trip([rng, rng])
    assert first is second and generators == [first]
    assert first.random() == np.random.default_rng(42).random()
    # The state comes back: the caller's generator advances as if it had drawn itself.
    bridge.set_state(rng, bridge.encode(first.bit_generator.state))
    reference = np.random.default_rng(42)
    reference.random()
    assert rng.random() == reference.random()


@pytest.mark.parametrize(
    "value",
    [object(), lambda: 1, np.array([{}], dtype=object), np.zeros(2, dtype=[("a", "i4")])],
    ids=["object", "function", "object-array", "structured-array"],
)
def test_what_is_not_data_is_refused_when_sending(value):
    with pytest.raises(bridge.BoundaryError):
        bridge.encode(value)


def test_objects_become_handles_only_where_a_registry_keeps_them():
    kept = []

    def register(obj):
        kept.append(obj)
        return bridge.Handle(len(kept), "callable" if callable(obj) else "object", "Thing")

    tree = bridge.encode({"f": print}, register=register)
    assert kept == [print]
    with pytest.raises(bridge.BoundaryError):  # a receiver that keeps no handles refuses them
        bridge.decode(tree)
    made = bridge.decode(tree, make_handle=lambda *args: ("handle", *args))
    assert made == {"f": ("handle", 1, "callable")}  # the type name never crosses


def _array(dt, shape, raw: bytes, tag="nd"):
    return {"$": tag, "dt": dt, "sh": shape, "raw": base64.b64encode(raw).decode()}


def _npy_pickle():
    buffer = io.BytesIO()
    np.save(buffer, np.array([{}], dtype=object), allow_pickle=True)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "tree",
    [
        _array("|O", [1], _npy_pickle()),  # an object dtype (a pickle behind it)
        _array("|O8", [1], b"\0" * 8),
        _array("|V8", [1], b"\0" * 8),  # void
        _array("[('a', '<i4')]", [1], b"\0" * 4),  # structured, as text numpy would parse
        _array("<M8[s]", [1], b"\0" * 8),  # datetimes are not among the kinds
        _array("<f8", [3], b"\0" * 16),  # bytes that do not fill the shape
        _array("<f8", [2], b"\0" * 24),  # or overflow it
        _array("<f8", [-1], b"\0" * 8),  # a negative dimension
        _array("<f8", [2**40, 2**40, 0], b""),  # dimensions past the byte cap, even empty
        _array("<f8", [1] * 40, b"\0" * 8),  # more dimensions than allowed
        _array("<f8", [1.0], b"\0" * 8),  # a float dimension
        _array("<U0", [2**31], b""),  # a huge array of empty strings: no bytes, still refused
        _array("<i3", [1], b"\0" * 3),  # a dtype numpy rejects
        {"$": "nd", "dt": "<f8", "sh": [1], "raw": "not base64!"},
        {"$": "nd", "dt": "<f8", "sh": [1]},  # no bytes
        {"$": "nd", "npy": base64.b64encode(b"\x93NUMPY").decode()},  # the old .npy form
        _array("<i8", [3], np.arange(3).tobytes(), tag="np"),  # a "scalar" that is an array
        {"$": "float", "v": "1e999"},
        {"$": "dict", "v": [[[1, 2], 3]]},  # an unhashable key
        {"$": "gen", "state": {"$": "dict", "v": [["bit_generator", "Evil"]]}},
        {"$": "ref", "id": 1},  # no registry on this side
        {"$": "exec", "v": "import os"},
        {"plain": "dict"},
        {"$": "genref", "v": 3},
        {"$": "nest", "t": "t", "v": [1, [2]]},  # a list without its kind
        {"$": "nest", "t": "tll", "v": [1, [2]]},  # a kind without its list
        {"$": "nest", "t": "tx", "v": [1, [2]]},  # a kind that is neither
        {"$": "nest", "t": "", "v": []},
        {"$": "nest", "t": ["t"], "v": [1]},
        {"$": "nest", "t": "t", "v": 1},
        {"$": "nest", "t": "tt", "v": [1, {"$": "ellipsis"}]},  # a tree inside
        {"$": "nest", "t": "t", "v": [1, "text"]},  # a string inside (student text is wrapped)
        {"$": "nest", "t": "tt", "v": [[[1, 2]]]},  # three lists, two kinds
        {"$": "dict", "v": [[{"$": "nest", "t": "tl", "v": [[1]]}, 2]]},  # a list as a key
    ],
)
def test_malformed_or_hostile_trees_are_refused(tree):
    with pytest.raises(bridge.BoundaryError):
        bridge.decode(tree)


def test_depth_and_size_are_capped():
    deep: list = []
    for _ in range(bridge.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(bridge.BoundaryError):
        bridge.decode(deep)
    with pytest.raises(bridge.BoundaryError):  # the same depth as a nest of tuples
        bridge.decode({"$": "nest", "t": "t" * (bridge.MAX_DEPTH + 6), "v": deep})
    shallow = {"$": "nest", "t": "t" * bridge.MAX_DEPTH, "v": deep}
    for _ in range(6):
        shallow["v"] = shallow["v"][0]
    assert type(bridge.decode(shallow)) is tuple  # the deepest a nest may be still crosses
    with pytest.raises(bridge.BoundaryError):
        bridge.loads("x" * (bridge.MAX_BYTES * 2))
    with pytest.raises(bridge.BoundaryError):
        bridge.loads('{"a": NaN}')


def test_the_kernel_side_server_reports_exception_classes_never_messages():
    def fails(x):
        raise KeyError("the student's message with secrets")

    server = bridge.Server({"fails": fails, "value": np.arange(3)})
    server.serve(
        base64.b64encode(bridge.dumps({"op": "lookup", "name": "fails"}).encode()).decode()
    )
    handle = bridge.loads(server.last)["value"]
    request = {"op": "call", "id": handle["id"], "calls": bridge.encode([[[1], {}]])}
    server.serve(base64.b64encode(bridge.dumps(request).encode()).decode())
    reply = bridge.loads(server.last)
    assert reply["ok"] is False and reply["error"]["boundary"] is False
    assert reply["error"]["classes"][:4] == [
        "KeyError",
        "LookupError",
        "Exception",
        "BaseException",
    ]
    assert "secrets" not in server.last


# ------------------------------------------------ what a message can expand into


def test_a_flood_of_containers_is_refused_before_it_is_parsed():
    import tracemalloc

    flood = "[" + "{}," * 10_000_000 + "{}]"  # 30 MB that json.loads would make ~700 MiB of
    tracemalloc.start()
    try:
        with pytest.raises(bridge.BoundaryError, match="parts"):
            bridge.loads(flood)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024**2  # nothing was built: refused on a count of its bytes


def test_text_outside_arrays_and_non_ascii_messages_are_capped():
    with pytest.raises(bridge.BoundaryError, match="outside numpy arrays"):
        bridge.loads('"' + "a" * (bridge.MAX_TEXT_BYTES + 1) + '"')  # one part, 16 MiB of text
    with pytest.raises(bridge.BoundaryError, match="ASCII"):
        bridge.loads('"\U0001f600"')  # dumps() never writes this: 4 bytes a character once read
    assert bridge.count_parts(bridge.dumps([1, [2, 3], {"$": "dict", "v": []}])) >= 8


def test_the_largest_array_still_crosses_within_the_caps():
    array = np.arange(bridge.MAX_BYTES // 8, dtype=np.float64)  # 64 MiB, 8 million values
    text = bridge.dumps({"ok": True, "value": bridge.encode([array])})
    assert len(text) > bridge.MAX_TEXT_BYTES and bridge.count_parts(text) < 20
    back = bridge.decode(bridge.loads(text)["value"])
    assert np.array_equal(back[0], array)


def test_a_handle_carries_no_name_the_student_chose():
    smuggler = type("Smuggler", (), {})
    smuggler.__name__ = smuggler.__qualname__ = "HIDDEN:g0.1,2000"
    server = bridge.Server({"f": lambda: smuggler()})
    server.serve(base64.b64encode(bridge.dumps({"op": "lookup", "name": "f"}).encode()).decode())
    handle = bridge.loads(server.last)["value"]
    request = {"op": "call", "id": handle["id"], "calls": bridge.encode([[[], {}]])}
    server.serve(base64.b64encode(bridge.dumps(request).encode()).decode())
    assert "HIDDEN" not in server.last and "g0.1" not in server.last
    made = bridge.decode(bridge.loads(server.last)["value"], make_handle=lambda *a: a)
    assert made == [(2, "object")]


# ------------------------------------------------------- the decoder under fire (the hostile harness)

#: what the trusted runner may spend on one reply: its memory cap, and a few CPU seconds
DECODE_CPU_SECONDS = 5.0


def _zeros(n: int) -> str:
    return "[" + ",".join(["0"] * n) + "]"


def _deep(n: int) -> str:
    return "[" * n + "]" * n


#: JSON values a student's kernel can put where a tag's ``v`` (or a nest's kinds) goes, as text
HOSTILE_VALUES = {
    "1e309": "1e309",
    "-1e309": "-1e309",
    "NaN": "NaN",
    "-Infinity": "-Infinity",
    "-0.0": "-0.0",
    "10**400": str(10**400),
    "10**5000": "1" + "0" * 5000,
    "a string": '"1e309"',
    "null": "null",
    "a dict": '{"$":"nest"}',
    "deep": _deep(bridge.MAX_DEPTH + 2),
    "very deep": _deep(200_000),
    "long": _zeros(bridge.MAX_PARTS - 10),
    "10^7 zeros": _zeros(10**7),
}
TAGS = (
    "nd",
    "np",
    "float",
    "nest",
    "tuple",
    "set",
    "frozenset",
    "dict",
    "bytes",
    "complex",
    "slice",
    "ellipsis",
    "gen",
    "genref",
    "ref",
    "handle",
    "no such tag",
)


def _verdict(text: str):
    """What decoding ``text`` as the trusted runner does gave: ("error", why) or ("value", repr)."""
    try:
        value = bridge.decode(bridge.loads(text))
    except bridge.BoundaryError as exc:
        return ("error", str(exc)[:80])
    except Exception as exc:  # noqa: BLE001 - anything else is the finding
        return ("crash", f"{type(exc).__name__}: {str(exc)[:80]}")
    return ("value", _summary(value))


def _summary(value):
    if isinstance(value, float):
        return ("float", repr(value), math.copysign(1.0, value))
    if isinstance(value, (list, tuple)) and len(value) > 20:
        return (type(value).__name__, len(value))
    return repr(value)[:200]


def _run(texts: dict[str, str]) -> dict[str, object]:
    import hostile

    from coursetools.grading.trusted.runner import RUNNER_MEMORY_BYTES

    calls = [lambda t=text: _verdict(t) for text in texts.values()]
    got = hostile.run_isolated(
        calls, time_limit=DECODE_CPU_SECONDS, memory_limit=RUNNER_MEMORY_BYTES
    )
    return dict(zip(texts, got, strict=True))


def test_every_tag_given_hostile_values_is_a_boundary_error_or_a_value_within_the_runners_caps():
    """Each tag (the nest's kinds too) with each hostile value, decoded in a forked child under the
    runner's memory cap and a CPU limit: a BoundaryError or a value, never another exception, a
    hang, or a death."""
    texts = {}
    for tag in TAGS:
        for name, value in HOSTILE_VALUES.items():
            texts[f"{tag}: v = {name}"] = f'{{"$":"{tag}","v":{value},"t":"l"}}'
            if tag == "nest":
                texts[f"nest: t = {name}"] = f'{{"$":"nest","v":[0],"t":{value}}}'
    got = _run(texts)
    bad = {
        k: v for k, v in got.items() if not (isinstance(v, tuple) and v[0] in ("error", "value"))
    }
    assert not bad, bad
    # the only values: containers of 1,999,990 zeros, under the caps (a set of them is {0}); "bytes"
    # with v = null decoded to b'6\x89\xde' (base64 of the text "None") and "ellipsis" ignored v
    values = {k for k, v in got.items() if v[0] == "value"}
    long_ = {f"{tag}: v = long" for tag in ("nest", "tuple", "set", "frozenset")}
    assert values == long_ | {"ellipsis: v = null"}, (
        values
    )  # null is "no v", as the encoder sends it


def test_numbers_at_and_past_the_edges_decode_to_the_right_value_or_a_clear_error():
    plain = ("1e309", "-1e309", "NaN", "-0.0", "10**400", "10**5000")
    got = _run(
        {name: HOSTILE_VALUES[name] for name in plain}
        | {
            "tagged nan": '{"$":"float","v":"nan"}',
            "nest of -0.0": '{"$":"nest","t":"t","v":[-0.0]}',
            "nest of 1e309": '{"$":"nest","t":"tl","v":[1e309,[-1e309]]}',
            "tagged 1e309": '{"$":"float","v":"1e309"}',
            "complex 1e309": '{"$":"complex","v":["1e309","-0.0"]}',
            "nest mixed kinds": '{"$":"nest","t":"tl","v":[1,[true,null,2.5,"x"]]}',
            "nest kinds that do not match": '{"$":"nest","t":"ll","v":[1,2]}',
            "nest kinds too long": '{"$":"nest","t":"%s","v":[0]}' % ("l" * 10**6),
            "nest at the depth cap": '{{"$":"nest","t":"{}","v":{}}}'.format(
                "t" * bridge.MAX_DEPTH, _deep(bridge.MAX_DEPTH)
            ),
            "nest past the depth cap": '{{"$":"nest","t":"{}","v":{}}}'.format(
                "t" * (bridge.MAX_DEPTH + 2), _deep(bridge.MAX_DEPTH + 2)
            ),
            "nest at the length cap": f'{{"$":"nest","t":"l","v":{_zeros(bridge.MAX_PARTS - 10)}}}',
            "nest past the length cap": f'{{"$":"nest","t":"l","v":{_zeros(bridge.MAX_PARTS + 10)}}}',
            "nest of 10^7 zeros": f'{{"$":"nest","t":"l","v":{_zeros(10**7)}}}',
        }
    )
    inf, ninf = ("float", "inf", 1.0), ("float", "-inf", -1.0)
    assert got["1e309"] == ("value", inf) and got["-1e309"] == ("value", ninf)  # JSON's own reading
    assert got["NaN"][0] == "error"  # untagged NaN is not JSON
    assert got["tagged nan"][0] == "value" and got["tagged nan"][1][1] == "nan"
    assert got["-0.0"] == ("value", ("float", "-0.0", -1.0))  # the sign survives
    assert got["nest of -0.0"] == ("value", "(-0.0,)")
    assert got["10**400"] == ("value", repr(10**400)[:200])
    assert got["10**5000"][0] == "error"  # past Python's 4,300-digit cap: refused, not a crash
    assert got["nest of 1e309"] == ("value", "(inf, [-inf])")
    assert got["tagged 1e309"][0] == "error"  # only nan, inf and -inf are tags
    assert got["complex 1e309"] == ("value", "(inf-0j)")
    for name in (
        "nest mixed kinds",
        "nest kinds that do not match",
        "nest kinds too long",
        "nest past the depth cap",
        "nest past the length cap",
        "nest of 10^7 zeros",
    ):
        assert got[name][0] == "error", (name, got[name])
    assert got["nest at the depth cap"][0] == "value"
    assert got["nest at the length cap"] == ("value", ("list", bridge.MAX_PARTS - 10))
