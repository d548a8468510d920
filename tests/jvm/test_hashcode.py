"""Java's String.hashCode in rmqlab.jvm.hashcode / rmqlab._jhash.

Three independent sources of truth: hash codes the JVM wrote into the golden file, the JVM
itself (through Spark's `reflect`), and a pure-Python re-statement of the definition over UTF-16
code units (`ref_hash` below). Every container type must agree with them.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_model import java_hash as ref_hash
from reference_model import utf16_units

from rmqlab import _jhash
from rmqlab.jvm.hashcode import (
    INT_MIN,
    index_hash,
    index_hash_many,
    java_hash,
    java_hash_concat_many,
    java_hash_many,
    to_index_hash_many,
    utf16_lengths_many,
)

GOLDEN = json.loads(
    (Path(__file__).parents[1] / "data" / "golden" / "java_string_hashcode.json").read_text("utf-8")
)["strings"]
GOLDEN_STRINGS = [e["string"] for e in GOLDEN]
GOLDEN_HASHES = [e["hashCode"] for e in GOLDEN]


# ---- the reference model ---------------------------------------------------------------------

# ---- containers ------------------------------------------------------------------------------

def _chunked(xs, string_type):
    # Uneven chunks with an empty one in the middle and one at the end.
    n = len(xs)
    cuts = [0, n // 3, n // 3, min(n, 2 * n // 3 + 1), n, n]
    chunks = [pa.array(xs[a:b], string_type) for a, b in zip(cuts, cuts[1:])]
    return pa.chunked_array(chunks, string_type)


def _sliced(xs, string_type):
    # A slice shares its parent's buffers and starts at .offset > 0.
    return pa.array(["prefix", "é", *xs, "suffix"], string_type).slice(2, len(xs))


CONTAINERS = {
    "list": list,
    "tuple": tuple,
    "numpy_U": lambda xs: np.array(xs, dtype=f"<U{max([1, *map(len, xs)])}"),
    "numpy_U_bigendian": lambda xs: np.array(xs, dtype=f">U{max([1, *map(len, xs)])}"),
    "numpy_object": lambda xs: np.array(xs, dtype=object),
    "numpy_object_strided": lambda xs: np.array([y for x in xs for y in (x, None)],
                                                dtype=object)[::2],
    "arrow_string": lambda xs: pa.array(xs, pa.string()),
    "arrow_large_string": lambda xs: pa.array(xs, pa.large_string()),
    "arrow_string_sliced": lambda xs: _sliced(xs, pa.string()),
    "arrow_large_string_sliced": lambda xs: _sliced(xs, pa.large_string()),
    "arrow_chunked": lambda xs: _chunked(xs, pa.string()),
    "arrow_chunked_large": lambda xs: _chunked(xs, pa.large_string()),
    "arrow_dictionary": lambda xs: pa.array(xs, pa.string()).dictionary_encode(),
    "pandas_object": lambda xs: pd.Series(xs, dtype=object),
    "pandas_arrow_string": lambda xs: pd.Series(xs, dtype="string[pyarrow]"),
}
# Arrow holds UTF-8, which cannot carry lone surrogates.
UTF8_ONLY = {name for name in CONTAINERS if "arrow" in name}
# NumPy '<U' drops trailing NULs: they are padding to NumPy, not characters.
NUL_PADDED = {"numpy_U", "numpy_U_bigendian"}


def expected_for(name, xs):
    if name in NUL_PADDED:
        xs = [x.rstrip("\x00") for x in xs]
    return [ref_hash(x) for x in xs]


def check_many(name, xs):
    got = java_hash_many(CONTAINERS[name](xs))
    assert got.dtype == np.int32
    assert got.tolist() == expected_for(name, xs)


# ---- golden (values written by the JVM) ----------------------------------------------------------

def test_golden_java_hash_and_length():
    for e in GOLDEN:
        s = e["string"]
        assert len(utf16_units(s)) == e["javaLength"], repr(s)
        assert java_hash(s) == e["hashCode"], repr(s)
        assert ref_hash(s) == e["hashCode"], repr(s)


@pytest.mark.parametrize("name", sorted(CONTAINERS))
def test_golden_every_container(name):
    got = java_hash_many(CONTAINERS[name](GOLDEN_STRINGS))
    assert got.dtype == np.int32
    expected = GOLDEN_HASHES
    if name in NUL_PADDED:  # the golden "\x00" strings are empty strings to NumPy
        expected = [java_hash(s.rstrip("\x00")) for s in GOLDEN_STRINGS]
    assert got.tolist() == expected


def test_golden_through_the_c_entry_point():
    assert _jhash.hash_many(GOLDEN_STRINGS).tolist() == GOLDEN_HASHES
    assert _jhash.hash_many(pa.array(GOLDEN_STRINGS)).tolist() == GOLDEN_HASHES
    assert [_jhash.hash_one(s) for s in GOLDEN_STRINGS] == GOLDEN_HASHES


def test_golden_index_hash_min_value_maps_to_zero():
    mins = [e["string"] for e in GOLDEN if e["hashCode"] == INT_MIN]
    assert mins, "the golden file should hold strings whose hashCode is Integer.MIN_VALUE"
    for s in mins:
        assert index_hash(s) == 0
    assert index_hash_many(mins).tolist() == [0] * len(mins)
    assert index_hash_many(GOLDEN_STRINGS).tolist() == [index_hash(s) for s in GOLDEN_STRINGS]


# ---- property tests against the reference model ------------------------------------------------

# st.text() leaves out surrogates; mixing in category Cs adds lone (and accidentally paired) ones.
ANY_TEXT = st.one_of(
    st.text(),
    st.lists(st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=60)
    .map("".join),
)
UTF8_TEXT = st.text(max_size=60)
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LISTS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(ANY_TEXT)
def test_java_hash_matches_reference(s):
    assert java_hash(s) == ref_hash(s)


@LISTS
@given(st.lists(ANY_TEXT, max_size=20))
def test_hash_many_of_any_text(xs):
    expected = [ref_hash(x) for x in xs]
    for name in sorted(set(CONTAINERS) - UTF8_ONLY):
        check_many(name, xs)
    assert [java_hash(x) for x in xs] == expected


@LISTS
@given(st.lists(UTF8_TEXT, max_size=20))
def test_all_containers_agree(xs):
    for name in CONTAINERS:
        check_many(name, xs)


@FAST
@given(ANY_TEXT, ANY_TEXT)
def test_concatenation_identity(a, b):
    # hash(a+b) = hash(a) * 31^len16(b) + hash(b)   (mod 2^32)
    lhs = java_hash(a + b) & 0xFFFFFFFF
    rhs = (java_hash(a) * pow(31, len(utf16_units(b)), 1 << 32) + java_hash(b)) & 0xFFFFFFFF
    assert lhs == rhs


def test_golden_lengths_and_concatenations():
    """Java's String.length() of the golden strings (the JVM's javaLength), from their UTF-8,
    and the hashCode of every golden string pair's concatenation from the parts' hashes."""
    utf8 = [e for e in GOLDEN if not any(0xD800 <= ord(c) <= 0xDFFF for c in e["string"])]   # what Arrow holds
    assert len(utf8) > 10
    for string_type in (pa.string(), pa.large_string()):
        got = utf16_lengths_many(pa.array([e["string"] for e in utf8], string_type))
        assert got.dtype == np.int64 and got.tolist() == [e["javaLength"] for e in utf8]
    heads = np.repeat(np.array([e["hashCode"] for e in GOLDEN], np.int32), len(GOLDEN))
    tails = np.tile(np.array([e["hashCode"] for e in GOLDEN], np.int32), len(GOLDEN))
    lengths = np.tile(np.array([e["javaLength"] for e in GOLDEN]), len(GOLDEN))
    want = [java_hash(a["string"] + b["string"]) for a in GOLDEN for b in GOLDEN]
    assert java_hash_concat_many(heads, tails, lengths).tolist() == want


@FAST
@given(st.lists(st.one_of(st.none(), UTF8_TEXT), max_size=20), st.sampled_from(["whole", "sliced"]))
def test_utf16_lengths_many(xs, shape):
    arr = pa.array(xs, pa.large_string()) if shape == "whole" else _sliced(xs, pa.large_string())
    assert utf16_lengths_many(arr).tolist() == [0 if x is None else len(utf16_units(x)) for x in xs]


@FAST
@given(st.lists(st.tuples(ANY_TEXT, ANY_TEXT), max_size=20))
def test_java_hash_concat_many(pairs):
    heads = np.array([java_hash(a) for a, _ in pairs], np.int32)
    tails = np.array([java_hash(b) for _, b in pairs], np.int32)
    lengths = np.array([len(utf16_units(b)) for _, b in pairs], np.int64)
    got = java_hash_concat_many(heads, tails, lengths)
    assert got.dtype == np.int32
    assert got.tolist() == [ref_hash(a + b) for a, b in pairs]
    assert to_index_hash_many(got).tolist() == [index_hash(a + b) for a, b in pairs]


@LISTS
@given(st.lists(ANY_TEXT, max_size=20))
def test_index_hash(xs):
    for x in xs:
        h = java_hash(x)
        assert index_hash(x) == (0 if h == INT_MIN else abs(h))
    got = index_hash_many(xs)
    assert got.dtype == np.int32 and (got >= 0).all()
    assert got.tolist() == [index_hash(x) for x in xs]


def test_block_and_tail_boundaries():
    """Every length 0..80 with the odd character at every position: the C loops take 16-, 8-,
    4- and 1-unit steps and switch between ASCII runs and multi-byte UTF-8."""
    rng = random.Random(20240610)
    odd = ["é", "\u00ff", "中", "\uffff", "😀", "\U0010ffff", "\u0301", "\x00", "\x7f"]
    xs = []
    for n in range(81):
        base = "".join(rng.choice("abcXYZ019#_") for _ in range(n))
        xs.append(base)
        for pos in sorted({0, n // 2, max(n - 1, 0)}):
            xs.append(base[:pos] + rng.choice(odd) + base[pos + 1:])
        xs.append("".join(rng.choice(odd) for _ in range(n)))
    for name in CONTAINERS:
        check_many(name, xs)
    assert [java_hash(x) for x in xs] == [ref_hash(x) for x in xs]


def test_threaded_paths_match_single_strings():
    """Enough data for the C code to split the work over threads."""
    rng = random.Random(7)
    xs = [f"TopicTest#ORDER_{i:08d}" for i in range(150_000)]
    for i in rng.sample(range(len(xs)), 2_000):
        xs[i] += rng.choice(["中文", "😀", "é", "\ud800"])
    expected = [java_hash(x) for x in xs]
    assert java_hash_many(xs).tolist() == expected
    assert java_hash_many(np.array(xs, dtype=object)).tolist() == expected
    assert java_hash_many(np.array(xs)).tolist() == expected
    utf8 = [x for x in xs if "\ud800" not in x]
    assert java_hash_many(pa.array(utf8)).tolist() == [java_hash(x) for x in utf8]
    assert java_hash_many(pa.array(utf8, pa.large_string())).tolist() == [java_hash(x) for x in utf8]


# ---- shapes, empties, odd inputs ---------------------------------------------------------------

def test_numpy_semantics():
    # Trailing NULs are NumPy padding; interior NULs are characters.
    assert java_hash_many(np.array(["a\x00", "a", "a\x00b"])).tolist() == [
        java_hash("a"), java_hash("a"), java_hash("a\x00b")]
    grid = np.array([["Aa", "BB"], ["中", "😀"]])
    got = java_hash_many(grid)
    assert got.shape == (2, 2)
    assert got.ravel().tolist() == [java_hash(s) for s in grid.ravel().tolist()]
    strided = np.array(["x", "Aa", "y", "BB"])[1::2]
    assert java_hash_many(strided).tolist() == [java_hash("Aa"), java_hash("BB")]
    if hasattr(np.dtypes, "StringDType"):
        arr = np.array(["Aa", "😀"], dtype=np.dtypes.StringDType())
        assert java_hash_many(arr).tolist() == [java_hash("Aa"), java_hash("😀")]


@pytest.mark.parametrize("empty", [
    [], (), np.array([], dtype="<U1"), np.array([], dtype=object), pa.array([], pa.string()),
    pa.array([], pa.large_string()), pa.chunked_array([], pa.string()),
    pd.Series([], dtype=object),
])
def test_empty_inputs(empty):
    got = java_hash_many(empty)
    assert got.dtype == np.int32 and got.shape == (0,)


# ---- errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, index", [
    (["a", "b", None], 2),
    (("a", 1), 1),
    (["a", b"b"], 1),
    (np.array(["a", None, "c"], dtype=object), 1),
    (pd.Series(["a", "b", None, "d"], dtype=object), 2),
    (pd.Series(["a", None], dtype="string[pyarrow]"), 1),
    (pa.array(["a", None, "c"], pa.string()), 1),
    (pa.array(["a", "b", None], pa.large_string()), 2),
    (pa.array(["x", "a", None, "c"]).slice(1), 1),
    (pa.chunked_array([pa.array(["a", "b"]), pa.array(["c", None])]), 3),
    (pa.array(["a", None]).dictionary_encode(), 1),
    (pa.DictionaryArray.from_arrays(pa.array([0, 1, 0, 2]), pa.array(["a", "b", None])), 3),
])
def test_null_or_non_str_element_raises_type_error_naming_it(bad, index):
    with pytest.raises(TypeError, match=rf"\belement {index}\b"):
        java_hash_many(bad)


def test_bad_element_in_a_threaded_run_is_named():
    xs = [f"key{i}" for i in range(200_000)]
    xs[150_001] = 42
    xs[170_000] = None
    with pytest.raises(TypeError, match=r"\belement 150001\b"):
        java_hash_many(xs)


@pytest.mark.parametrize("bad", [
    "a single string", b"bytes", 42, np.array([1, 2]), np.array([b"a"]), pa.array([1, 2]),
    pa.array([b"a"], pa.binary()), {"a": 1},
])
def test_non_string_containers_raise_type_error(bad):
    with pytest.raises(TypeError):
        java_hash_many(bad)


def test_java_hash_needs_str():
    with pytest.raises(TypeError):
        java_hash(b"abc")
    with pytest.raises(TypeError):
        _jhash.hash_one(None)


def test_malformed_buffers_raise_instead_of_reading_out_of_bounds():
    def raw(offsets, data):
        return pa.Array.from_buffers(pa.string(), len(offsets) - 1,
                                     [None, pa.py_buffer(np.array(offsets, np.int32).tobytes()),
                                      pa.py_buffer(data)])
    with pytest.raises(ValueError, match=r"element 1\b.*UTF-8"):
        java_hash_many(raw([0, 1, 3], b"a\xc3("))           # truncated 2-byte sequence
    with pytest.raises(ValueError, match=r"element 0\b.*UTF-8"):
        java_hash_many(raw([0, 3], "\ud800".encode("utf-8", "surrogatepass")))
    # pyarrow refuses such arrays itself; the C function is the last line of defence.
    with pytest.raises(ValueError, match=r"element 1\b.*outside"):
        _jhash.hash_utf8(np.array([0, 1, 99], np.int32), b"ab", 4, 0, 2, np.empty(2, np.int32))
    with pytest.raises(ValueError, match=r"element 0\b.*outside"):
        _jhash.hash_utf8(np.array([2, 1], np.int64), b"ab", 8, 0, 1, np.empty(1, np.int32))
    with pytest.raises(ValueError, match="too short"):
        _jhash.hash_utf8(np.array([0, 1], np.int32), b"ab", 4, 1, 1, np.empty(1, np.int32))
    with pytest.raises(ValueError, match=r"element 0\b"):
        java_hash_many(np.array([0x110000], dtype="<u4").view("<U1"))


# ---- the JVM as oracle -----------------------------------------------------------------------------

def _random_strings(n: int, seed: int) -> list[str]:
    """Seeded mix: empty, ASCII (controls and NUL included), Latin-1, CJK, emoji and other
    astral characters (surrogate pairs in Java), combining marks, any BMP character.

    No lone surrogates: Spark carries strings as UTF-8 both with Arrow and without it, and
    replaces a lone surrogate with U+FFFD on the way into the JVM (checked: 'a\\ud800b' came
    back as 'a\\ufffdb'), so the JVM would hash a different string. The reference model and
    the property tests above cover lone surrogates instead.
    """
    rng = random.Random(seed)

    def bmp() -> str:
        c = rng.randrange(0x10000 - 0x800)
        return chr(c if c < 0xD800 else c + 0x800)

    pools = [
        lambda: chr(rng.randrange(0x80)),
        lambda: chr(rng.randrange(0x80, 0x100)),
        lambda: chr(rng.randrange(0x4E00, 0xA000)),
        lambda: chr(rng.randrange(0x1F300, 0x1FB00)),
        lambda: chr(rng.randrange(0x10000, 0x110000)),
        lambda: rng.choice("aeo") + chr(rng.randrange(0x300, 0x370)),
        bmp,
    ]
    out = ["", "", "TopicTest#", "#"]
    while len(out) < n:
        length = rng.choice([0, 1, 2, 3, 7, 8, 15, 16, 17, 24, 31, 33, rng.randrange(200)])
        if rng.random() < 0.3:  # one pool per string: long runs of one kind
            pool = rng.choice(pools)
            out.append("".join(pool() for _ in range(length)))
        else:
            out.append("".join(rng.choice(pools)() for _ in range(length)))
    return out


@pytest.mark.jvm
def test_jvm_string_hashcode_oracle(spark):
    strings = _random_strings(5_000, seed=12345)
    pdf = pd.DataFrame({"i": np.arange(len(strings)), "s": strings})
    rows = (spark.createDataFrame(pdf)
            .selectExpr("i", "s", "CAST(reflect('java.util.Objects', 'hashCode', s) AS INT) AS h")
            .toPandas()
            .sort_values("i"))
    assert rows["s"].tolist() == strings, "the JVM must have hashed exactly these strings"
    jvm = rows["h"].to_numpy().astype(np.int64)

    assert [java_hash(s) for s in strings] == jvm.tolist()
    # NumPy '<U' would strip a trailing NUL, hashing another string than the JVM did.
    unpadded = np.array([not s.endswith("\x00") for s in strings])
    for name in CONTAINERS:
        got = java_hash_many(CONTAINERS[name](strings))
        keep = unpadded if name in NUL_PADDED else slice(None)
        assert (got[keep] == jvm[keep]).all(), name
