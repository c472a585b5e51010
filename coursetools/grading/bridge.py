"""The data boundary between the trusted grader and a student's kernel.

One job: turn values into plain data and back, strictly, in both directions, and serve the
grader's requests inside the kernel. Hidden tests run in a trusted process
(:mod:`coursetools.grading.trusted.runner`); every student function they call and every student value they read
crosses this boundary as data:

- ``None``, ``bool``, ``int``, ``float`` (NaN and infinities included), ``str``, ``bytes``,
  ``complex``, lists, tuples, dicts, sets, slices; lists and tuples of plain numbers, however
  nested, cross as one ``nest`` of JSON lists with a string of their kinds (:class:`_Nest`: a
  reply of a thousand lists of blocks ``((r0, r1), (c0, c1))`` is half the text and parses in a
  third of the time it took with a tag for every tuple);
- numpy arrays and numpy scalars of numeric, boolean or string dtype, as their raw bytes in base64
  beside a dtype string (``'<f8'``, one of :data:`ARRAY_KINDS`, checked against a pattern before
  numpy reads it) and a shape whose size must match the bytes exactly: no pickle, no object,
  structured or void dtypes, and no header to parse (``.npy`` headers cost 30 µs an array to
  write and read, most of what a hidden test's thousands of small arrays cost to cross);
- ``numpy.random.Generator``: its bit generator's name and state (so the kernel draws exactly what
  it would have drawn from the test's generator, and the state comes back);
- anything else a student hands back (a function, an object of a class they wrote) stays in the
  kernel: the grader gets a *handle* and calls its methods through the same channel.

Nothing is ever unpickled, evaluated or imported from the other side's data, and the decoder caps
depth, node count and bytes. :func:`loads` bounds what a message can expand into *before* parsing
it: at most :data:`MAX_PARTS` JSON values (counted as the bytes ``[``, ``{``, ``,`` and ``:``, which
precede every value but the first; base64 text, the way arrays cross, has none), so
a reply of 80 MB of ``[{},{},...]`` is refused in milliseconds instead of becoming two gigabytes of
Python objects. Handles carry an id and a kind (callable or not), never a name the other side chose. The module uses only the standard library and numpy because its
source text is also what the grader sends into the kernel (:data:`KERNEL_SERVER`): the two ends
share one codec.
"""

from __future__ import annotations

import base64
import builtins
import json
import math
import re

import numpy as np

__all__ = [
    "BoundaryError",
    "MAX_BYTES",
    "Handle",
    "decode",
    "encode",
    "dumps",
    "loads",
]

MAX_DEPTH = 64
MAX_PARTS = 2_000_000  # JSON values in one message: a parse of at most ~150 MiB of Python objects
MAX_NODES = MAX_PARTS
MAX_BYTES = 64 * 1024**2  # one message, either direction (8 million float64 values)
MAX_TEXT_BYTES = 16 * 1024**2  # one message's JSON outside its arrays' base64 text
SUBMISSION_BYTES = 256 * 1024**2  # every reply of one submission's kernel together
ARRAY_KINDS = "biufcSU"  # bool, signed, unsigned, float, complex, bytes, str
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")


class BoundaryError(ValueError):
    """A value that cannot cross the boundary (wrong type, too big, malformed)."""


class Handle:
    """Reference to an object that stays on the other side (used by the kernel-side server).

    ``type_name`` is kept on this side only: it is never encoded, so no name the student chose
    (a class called ``HIDDEN:...``) crosses to the grader.
    """

    __slots__ = ("id", "kind", "type_name")

    def __init__(self, id: int, kind: str, type_name: str = "") -> None:
        self.id, self.kind, self.type_name = id, kind, type_name


# ------------------------------------------------------------------------------------- encoding


def _array_tree(tag: str, array: np.ndarray) -> dict:
    """An array as ``{"$": tag, "dt": dtype string, "sh": shape, "raw": base64 of its C-order bytes}``."""
    raw = base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")
    return {"$": tag, "dt": array.dtype.str, "sh": list(array.shape), "raw": raw}


def _check_array(array: np.ndarray) -> None:
    if array.dtype.kind not in ARRAY_KINDS or array.dtype.fields is not None:
        raise BoundaryError(
            f"numpy arrays of dtype {array.dtype} cannot cross: use numbers, booleans or strings"
        )


def encode(value, *, register=None, references=None, generators=None, _depth=0):
    """``value`` as a JSON-compatible tree.

    ``register(obj) -> Handle`` keeps an object that is not plain data on this side (the kernel
    does this for student objects); without it such an object is a :class:`BoundaryError`.
    ``references`` maps proxy objects of the other side to their handle id (the grader passes its
    proxies back this way). ``generators``, a list, collects every ``numpy.random.Generator``
    encoded, in order, so that their final states can be synchronised after a call.
    """
    tree = _encode(value, register, references, generators, _depth)
    return tree.tree() if type(tree) is _Nest else tree


def _encode(value, register, references, generators, depth):
    """:func:`encode`, except that a list or tuple of plain numbers and such lists and tuples
    comes back as a :class:`_Nest`, which its container joins or turns into a tree."""
    if depth > MAX_DEPTH:
        raise BoundaryError(f"value nested more than {MAX_DEPTH} levels deep")
    kind = type(value)
    if value is None or kind is bool or kind is str or kind is int:
        return value
    if kind is float:
        return value if math.isfinite(value) else {"$": "float", "v": repr(value)}
    if kind is list or kind is tuple:  # never a proxy of the other side's (those are objects)
        return _sequence(value, kind is tuple, register, references, generators, depth + 1)
    if isinstance(value, np.ndarray):
        _check_array(value)
        return _array_tree("nd", value)
    if isinstance(value, np.generic):
        array = np.asarray(value)
        _check_array(array)
        return _array_tree("np", array)
    if isinstance(value, str):  # a str subclass: plain text
        return value
    kw = dict(register=register, references=references, generators=generators, _depth=depth + 1)
    if isinstance(value, np.random.Generator):
        generators = [] if generators is None else generators  # callers pass one list per message
        for index, seen in enumerate(generators):
            if seen is value:  # the same generator twice: one generator on the other side too
                return {"$": "genref", "v": index}
        generators.append(value)
        return {"$": "gen", "state": encode(value.bit_generator.state, **kw)}
    if references is not None and id(value) in references:
        return {"$": "ref", "id": references[id(value)]}
    if type(value) is dict:
        return {"$": "dict", "v": [[encode(k, **kw), encode(v, **kw)] for k, v in value.items()]}
    if type(value) in (set, frozenset):
        return {"$": type(value).__name__, "v": [encode(v, **kw) for v in value]}
    if type(value) is bytes:
        return {"$": "bytes", "v": base64.b64encode(value).decode("ascii")}
    if type(value) is complex:
        return {"$": "complex", "v": [repr(value.real), repr(value.imag)]}
    if type(value) is slice:
        return {"$": "slice", "v": [encode(x, **kw) for x in (value.start, value.stop, value.step)]}
    if value is Ellipsis:
        return {"$": "ellipsis"}
    if isinstance(value, (int, float)) and register is None:  # subclasses (IntEnum...) as values
        return encode(int(value) if isinstance(value, int) else float(value), **kw)
    if register is not None:
        handle = register(value)
        return {"$": "handle", "id": handle.id, "kind": handle.kind}
    raise BoundaryError(
        f"a {type(value).__name__} cannot be sent to the student's kernel: "
        "pass numbers, strings, lists, tuples, dicts, numpy arrays or a numpy Generator"
    )


def _sequence(values, is_tuple, register, references, generators, depth):
    """A list or tuple: a :class:`_Nest` when every item is a plain number (an int, a finite float,
    a bool or None) or a nest itself, else its tree (a JSON list, or a ``tuple`` tag)."""
    items, nested, inner = [], True, False
    for v in values:
        kind = type(v)
        if kind is int or kind is bool or v is None or (kind is float and math.isfinite(v)):
            items.append(v)
            continue
        if kind is tuple or kind is list:  # what _encode would do, without its other checks
            if depth > MAX_DEPTH:
                raise BoundaryError(f"value nested more than {MAX_DEPTH} levels deep")
            item = _sequence(v, kind is tuple, register, references, generators, depth + 1)
        else:
            item = _encode(v, register, references, generators, depth)
        if type(item) is _Nest:
            inner = True
        else:
            nested = False
        items.append(item)
    if nested:
        return _Nest(items, is_tuple, inner)
    items = [item.tree() if type(item) is _Nest else item for item in items]
    return {"$": "tuple", "v": items} if is_tuple else items


class _Nest:
    """Lists and tuples of plain numbers, nested: they cross as one ``nest`` tree.

    ``{"$": "nest", "t": kinds, "v": lists}``: ``v`` holds the numbers in JSON lists, one for each
    list or tuple; ``kinds`` says which each was (``l`` or ``t``), in the order their ``[`` appear
    in the text. A thousand results of ``((r0, r1), (c0, c1))`` blocks are one tag each, not three
    tags a block: half the text, and lists, which JSON parses faster than objects. A nest holding
    no tuple is its JSON list, as any list of plain values always crossed.
    """

    __slots__ = ("items", "is_tuple", "inner")

    def __init__(self, items: list, is_tuple: bool, inner: bool) -> None:
        # inner: whether an item is a nest; if not, items is already its JSON list
        self.items, self.is_tuple, self.inner = items, is_tuple, inner

    def _lists(self, kinds: list) -> list:
        kinds.append("t" if self.is_tuple else "l")
        if not self.inner:
            return self.items
        return [item._lists(kinds) if type(item) is _Nest else item for item in self.items]

    def tree(self):
        kinds: list = []
        lists = self._lists(kinds)
        text = "".join(kinds)
        return {"$": "nest", "t": text, "v": lists} if "t" in text else lists


# ------------------------------------------------------------------------------------- decoding


def _decode_items(values: list, kw: dict, budget) -> list:
    """The items of a list tree: ints, floats, bools and None as they are (counted in one step:
    JSON has no other kind of such a value), the rest through :func:`decode`."""
    out, plain = [], 0
    for v in values:
        kind = type(v)
        if kind is int or kind is float or kind is bool or v is None:
            out.append(v)
            plain += 1
        else:
            out.append(decode(v, **kw))
    budget.spend(plain)
    return out


class _Budget:
    __slots__ = ("nodes", "bytes")

    def __init__(self) -> None:
        self.nodes, self.bytes = 0, 0

    def spend(self, nodes: int = 1, nbytes: int = 0) -> None:
        self.nodes += nodes
        self.bytes += nbytes
        if self.nodes > MAX_NODES:
            raise BoundaryError(f"value has more than {MAX_NODES} parts")
        if self.bytes > MAX_BYTES:
            raise BoundaryError(f"value is larger than {MAX_BYTES // 1024**2} MiB")


DTYPE_TEXT = re.compile(r"[<>|=][biufcSU][0-9]{1,6}")  # what dtype.str says of an ARRAY_KINDS dtype
MAX_DIMENSIONS = 32


def _read_array(tree: dict) -> np.ndarray:
    """The array of an ``nd``/``np`` tree: dtype text, shape and byte count checked before numpy reads it."""
    dt, shape, text = tree.get("dt"), tree.get("sh"), tree.get("raw")
    if not (isinstance(dt, str) and DTYPE_TEXT.fullmatch(dt) and isinstance(text, str)):
        raise BoundaryError("malformed array")
    if (
        type(shape) is not list
        or len(shape) > MAX_DIMENSIONS
        or any(type(n) is not int or not 0 <= n <= MAX_BYTES for n in shape)
    ):
        raise BoundaryError("malformed array shape")
    size = math.prod(shape)
    try:
        dtype = np.dtype(dt)
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except Exception as exc:  # noqa: BLE001 - any malformed array is the sender's
        raise BoundaryError(f"malformed array ({type(exc).__name__})") from None
    _check_array(np.empty(0, dtype))
    if size > MAX_BYTES or size * dtype.itemsize != len(raw):
        raise BoundaryError("malformed array (its bytes do not match its shape)")
    if dtype.itemsize == 0:  # '<U0', '|S0': no bytes to read
        return np.zeros(shape, dtype)
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()  # writable, owns its memory


def decode(
    tree, *, resolve=None, make_handle=None, generators=None, text=None, _depth=0, _budget=None
):
    """The value a tree from :func:`encode` stands for, checked at every step.

    ``resolve(id)`` turns a ``ref`` back into the local object it names (kernel side);
    ``make_handle(id, kind)`` builds a proxy for an object kept on the other side (grader side;
    ``kind`` is ``"callable"`` or ``"object"``, and nothing else the sender wrote about the object
    is passed on). Without them, refs and handles are refused. ``generators`` collects decoded
    generators in order. ``text(value)``, when given, is applied to every ``str`` and ``bytes``
    decoded (dict keys included) and every numpy array or scalar of string dtype, and its result
    used instead: the grader wraps the student's
    strings so that they are never printed (:class:`coursetools.grading.trusted.runner.StudentText`).
    """
    budget = _Budget() if _budget is None else _budget
    budget.spend()
    if _depth > MAX_DEPTH:
        raise BoundaryError(f"value nested more than {MAX_DEPTH} levels deep")
    kind = type(tree)
    if tree is None or kind is bool or kind is int or kind is float:
        return tree
    if kind is str:
        budget.spend(0, len(tree))
        return tree if text is None else text(tree)
    kw = dict(
        resolve=resolve,
        make_handle=make_handle,
        generators=generators,
        text=text,
        _depth=_depth + 1,
        _budget=budget,
    )
    if type(tree) is list:
        return _decode_items(tree, kw, budget)
    if type(tree) is not dict or not isinstance(tree.get("$"), str):
        raise BoundaryError(f"malformed value ({type(tree).__name__})")
    tag, v = tree["$"], tree.get("v")
    if tag == "nd":
        array = _read_array(tree)
        budget.spend(0, array.nbytes)
        return array if text is None or array.dtype.kind not in "SU" else text(array)
    if tag == "np":
        array = _read_array(tree)
        if array.ndim != 0:
            raise BoundaryError("malformed numpy scalar")
        return array[()] if text is None or array.dtype.kind not in "SU" else text(array[()])
    if tag == "float":
        if v not in ("nan", "inf", "-inf"):
            raise BoundaryError("malformed float")
        return float(v)
    if tag == "nest":
        kinds = tree.get("t")
        if type(v) is not list or type(kinds) is not str or not NEST_KINDS.fullmatch(kinds):
            raise BoundaryError("malformed nest")
        return _decode_nest(v, kinds, _depth, budget)
    if tag in ("tuple", "set", "frozenset"):
        if type(v) is not list:
            raise BoundaryError(f"malformed {tag}")
        items = _decode_items(v, kw, budget)
        try:
            return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        except TypeError:
            raise BoundaryError(f"unhashable item in a {tag}") from None
    if tag == "dict":
        if type(v) is not list or any(type(p) is not list or len(p) != 2 for p in v):
            raise BoundaryError("malformed dict")
        try:
            return {decode(k, **kw): decode(x, **kw) for k, x in v}
        except TypeError:
            raise BoundaryError("unhashable dict key") from None
    if tag == "bytes":
        if type(v) is not str:  # str(None) is valid base64: never a value the sender did not send
            raise BoundaryError("malformed bytes")
        try:
            raw = base64.b64decode(v.encode("ascii"), validate=True)
        except Exception:  # noqa: BLE001
            raise BoundaryError("malformed bytes") from None
        budget.spend(0, len(raw))
        return raw if text is None else text(raw)
    if tag == "complex":
        if type(v) is not list or len(v) != 2 or not all(isinstance(x, str) for x in v):
            raise BoundaryError("malformed complex")
        try:
            return complex(float(v[0]), float(v[1]))
        except ValueError:
            raise BoundaryError("malformed complex") from None
    if tag == "slice":
        if type(v) is not list or len(v) != 3:
            raise BoundaryError("malformed slice")
        return slice(*(decode(x, **kw) for x in v))
    if tag == "ellipsis":
        if v is not None:
            raise BoundaryError("malformed ellipsis")
        return Ellipsis
    if tag == "gen":
        state = decode(tree.get("state"), **kw)
        generator = _generator(state)
        if generators is not None:
            generators.append(generator)
        return generator
    if tag == "genref":
        if generators is None or type(v) is not int or not 0 <= v < len(generators):
            raise BoundaryError("malformed generator reference")
        return generators[v]
    if tag == "ref":
        if resolve is None or type(tree.get("id")) is not int:
            raise BoundaryError("a reference to an object cannot cross in this direction")
        return resolve(tree["id"])
    if tag == "handle":
        if make_handle is None or type(tree.get("id")) is not int:
            raise BoundaryError("an object handle cannot cross in this direction")
        kind = tree.get("kind") if tree.get("kind") in ("callable", "object") else "object"
        return make_handle(tree["id"], kind)
    raise BoundaryError("unknown kind of value")


NEST_KINDS = re.compile(r"[lt]+")


def _decode_nest(lists: list, kinds: str, depth: int, budget) -> list | tuple:
    """The lists and tuples of a ``nest`` tree (see :class:`_Nest`): only JSON lists and numbers,
    bools or null inside, exactly one kind for each list, depth and parts counted as elsewhere."""
    at = 0

    def build(node: list, level: int):
        nonlocal at
        if level > MAX_DEPTH:
            raise BoundaryError(f"value nested more than {MAX_DEPTH} levels deep")
        if at >= len(kinds):
            raise BoundaryError("malformed nest")
        is_tuple = kinds[at] == "t"
        at += 1
        out, plain = [], 1  # the list, and each number in it (as decode counts them)
        for item in node:
            kind = type(item)
            if kind is list:
                out.append(build(item, level + 1))
            elif kind is int or kind is float or kind is bool or item is None:
                out.append(item)
                plain += 1
            else:
                raise BoundaryError("malformed nest")
        budget.spend(plain)
        return tuple(out) if is_tuple else out

    value = build(lists, depth)
    if at != len(kinds):
        raise BoundaryError("malformed nest")
    return value


def _generator(state) -> np.random.Generator:
    if not isinstance(state, dict) or state.get("bit_generator") not in BIT_GENERATORS:
        raise BoundaryError(f"a random generator must use one of {', '.join(BIT_GENERATORS)}")
    bit_generator = getattr(np.random, state["bit_generator"])()
    try:
        bit_generator.state = state
    except Exception:  # noqa: BLE001 - numpy validates the state
        raise BoundaryError("malformed random generator state") from None
    return np.random.Generator(bit_generator)


def set_state(generator: np.random.Generator, tree) -> None:
    """Move ``generator`` to the state a tree from the other side describes (after a call)."""
    state = decode(tree)
    if (
        not isinstance(state, dict)
        or state.get("bit_generator") != type(generator.bit_generator).__name__
    ):
        raise BoundaryError("the random generator came back as a different kind of generator")
    try:
        generator.bit_generator.state = state
    except Exception:  # noqa: BLE001
        raise BoundaryError("malformed random generator state") from None


def dumps(tree) -> str:
    """JSON text of a tree (NaN never appears: non-finite floats are tagged)."""
    return json.dumps(tree, allow_nan=False, separators=(",", ":"))


STRUCTURE = "[{,:"  # one of these precedes every JSON value but the first


def count_parts(text: str) -> int:
    """An upper bound on the number of JSON values in ``text``, without parsing it.

    Every value but the first follows ``[``, ``,`` or ``:``, and every container opens with ``[``
    or ``{``; bytes inside strings are counted too, so the bound is conservative. Base64 text (the
    arrays' bytes) contains none of them.
    """
    return sum(text.count(c) for c in STRUCTURE) + 1


# never inside a JSON string: its quotes are escaped
ARRAY_TEXT = re.compile(r'"raw":"[A-Za-z0-9+/=]*"')


def _text_bytes(text: str) -> int:
    """Characters of ``text`` outside the base64 of its arrays (what can become Python objects)."""
    return len(text) - sum(match.end() - match.start() for match in ARRAY_TEXT.finditer(text))


MAX_MESSAGE_CHARS = MAX_BYTES * 4 // 3 + 1024  # the base64 of MAX_BYTES, plus its envelope


def loads(text: str):
    """The tree in JSON ``text`` from the other side, size- and structure-checked first.

    ASCII only (:func:`dumps` escapes the rest), at most :data:`MAX_BYTES` of base64 (plus its
    envelope), :data:`MAX_PARTS` values and :data:`MAX_TEXT_BYTES` outside the arrays' base64:
    what a message expands into is bounded before :func:`json.loads` builds a single object.
    """
    check_message(text)
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        raise BoundaryError("malformed message") from None


def check_message(text: str) -> None:
    """The checks :func:`loads` makes before parsing (all in C over the text, a few ms for
    megabytes): the grader runs them on a reply it relays unparsed to the trusted runner."""
    if not isinstance(text, str) or len(text) > MAX_MESSAGE_CHARS:
        raise BoundaryError("message missing or too large")
    if not text.isascii():  # dumps() escapes everything else: no 4-byte-per-character strings
        raise BoundaryError("malformed message (not ASCII)")
    if count_parts(text) > MAX_PARTS:
        raise BoundaryError(
            f"message has more than {MAX_PARTS:,} parts: send large data as a numpy array"
        )
    if len(text) > MAX_TEXT_BYTES and _text_bytes(text) > MAX_TEXT_BYTES:
        raise BoundaryError(
            f"message has more than {MAX_TEXT_BYTES // 1024**2} MiB outside numpy arrays: "
            "send large data as a numpy array"
        )


def _refuse_constant(name: str):
    raise ValueError(name)


# ------------------------------------------------------------------------- the kernel's server


class Server:
    """Runs inside the student's kernel: serves the grader's requests one at a time.

    The grader executes ``serve(<request>)`` and reads :meth:`reply` through the kernel's
    ``user_expressions``. Everything here is in the student's process and therefore untrusted:
    the grader treats whatever comes back as the student's answer, checks it, and never trusts it
    for anything else.
    """

    def __init__(self, namespace: dict) -> None:
        self.namespace = namespace
        self.objects: dict[int, object] = {}
        self.last = ""

    def _register(self, obj) -> Handle:
        key = len(self.objects) + 1
        self.objects[key] = obj
        return Handle(key, "callable" if callable(obj) else "object")

    def _resolve(self, key: int):
        if key not in self.objects:
            raise LookupError("unknown object")
        return self.objects[key]

    def _encode(self, value, generators=None):
        return encode(value, register=self._register, generators=generators)

    def _decode(self, tree, generators):
        return decode(tree, resolve=self._resolve, generators=generators)

    def serve(self, request: str) -> None:
        self.last = ""
        try:
            reply = self._handle(loads(base64.b64decode(request).decode("utf-8")))
        except BaseException as exc:  # noqa: BLE001 - a student's exception is an answer
            reply = {"ok": False, "error": _describe(exc)}
        try:
            self.last = dumps(reply)
        except BaseException as exc:  # noqa: BLE001
            self.last = dumps({"ok": False, "error": _describe(exc)})

    def _handle(self, request: dict) -> dict:
        op = request["op"]
        if op == "lookup":
            name = request["name"]
            if name not in self.namespace:
                return {"ok": True, "missing": True}
            return {"ok": True, "value": self._encode(self.namespace[name])}
        target = self._resolve(request["id"])
        if op == "getattr":
            return {"ok": True, "value": self._encode(getattr(target, request["name"]))}
        if op == "len":
            return {"ok": True, "value": len(target)}
        generators: list = []
        if op == "getitem":
            key = self._decode(request["key"], generators)
            return {"ok": True, "value": self._encode(target[key])}
        if op == "call":  # a list of calls [[args, kwargs], ...], each repeated, one result each
            calls = self._decode(request["calls"], generators)
            repeat = request.get("repeat", 1)
            try:
                results = [target(*args, **kwargs) for args, kwargs in calls for _ in range(repeat)]
            except BaseException as exc:  # noqa: BLE001 - a student's exception is an answer
                # the draws made before the error are real: the grader's generators follow them
                return {
                    "ok": False,
                    "error": _describe(exc),
                    "generators": self._states(generators),
                }
            value = self._encode(results)
            return {"ok": True, "value": value, "generators": self._states(generators)}
        raise LookupError("unknown request")

    def _states(self, generators: list) -> list | None:
        try:
            return [self._encode(g.bit_generator.state) for g in generators]
        except BaseException:  # noqa: BLE001 - a generator the student broke: no states
            return None

    def reply(self):
        return _Reply(self.last)


class _Reply:
    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"application/x-coursetools-reply": self.text}


#: Course modules whose exception classes the kernel names (besides builtins and dplib's): the
#: hidden tests' helpers, whose ``ForbiddenCallError`` a banned function's stub raises.
COURSE_ERROR_MODULES = ("coursetools.authoring.hidden_tests",)


def _describe(exc: BaseException) -> dict:
    """An exception as the names of its classes: never its message (which the student wrote)."""
    names = []
    for cls in type(exc).__mro__:
        if getattr(builtins, cls.__name__, None) is cls:
            names.append(cls.__name__)
        elif cls.__module__.startswith("dplib.") or cls.__module__ in COURSE_ERROR_MODULES:
            names.append(f"{cls.__module__}.{cls.__name__}")
    return {"classes": names[:8], "boundary": isinstance(exc, BoundaryError)}


MIME = "application/x-coursetools-reply"
