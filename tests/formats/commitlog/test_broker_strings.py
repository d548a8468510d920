"""Text that is not UTF-8, as the broker sees it: CommitLog.checkMessageAndReturnSize decodes
the topic and the properties with ``new String(bytes, UTF_8)`` (U+FFFD for ill-formed bytes)
before it names queues and hashes TAGS and keys. The JVM is the oracle for that decoding and
its hashCode; a store whose KEYS, TAGS and topic hold such bytes must dispatch as the broker
does and verify clean."""
from __future__ import annotations

import datetime as dt
import shutil
import subprocess
from pathlib import Path

import numpy as np
import oracles
import pyarrow as pa

from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats.commitlog.records import decode_text
from rmqlab.jvm.hashcode import index_hash, java_hash
from rmqlab.lab.workload import Workload, generate
from rmqlab.store.directory import Store
from rmqlab.verify import verify_path

#: ill-formed UTF-8 of every kind: a stray continuation, a lead without its tail, a truncated
#: sequence, an overlong form, an encoded surrogate, a code point past U+10FFFF, and mixes
ILL_FORMED = [b"k\xff", b"\xc3(", b"\xe2\x82", b"a\xe2\x82b", b"\xf0\x9f\x98", b"\xc0\xaf", b"\xed\xa0\x80",
              b"\xf4\x90\x80\x80", b"\xff\xfebad\xc3(", b"\x80\x80\x80", "é".encode() + b"\xe9",
              b"\xf8\x88\x80\x80\x80", b"\xed\xbf\xbfz", b"\xed\xa0", b"\xed\xa0\x80\xed\xb0\x80", b"\xed\xa0z",
              b"\xed\x9f\xbf", b"\xe0\x9f\xbf", b"\xf0\x8f", b"\xf4\x8f\xbf\xbf", b"\xe2\x82\xe2\x82\xac", b"\xed"]

JAVA = """
import java.nio.charset.StandardCharsets;
public class Decode {
    public static void main(String[] args) {
        for (String hex : args) {
            byte[] b = new byte[hex.length() / 2];
            for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
            String s = new String(b, StandardCharsets.UTF_8);
            StringBuilder units = new StringBuilder();
            for (char c : s.toCharArray()) units.append(String.format("%04x", (int) c));
            System.out.println(s.hashCode() + " " + units);
        }
    }
}
"""


def jvm_decode(values: list[bytes], tmp: Path) -> list[tuple[int, str]]:
    """(hashCode, UTF-16 code units as hex) of ``new String(bytes, UTF_8)`` for each value."""
    if shutil.which("java") is None:
        oracles.missing(*oracles.NO_JAVA)
    src = tmp / "Decode.java"
    src.write_text(JAVA)
    out = subprocess.run(["java", str(src), *[v.hex() or "00" for v in values]], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split("\n")
    rows = (line.split(" ") if " " in line else (line, "") for line in out[:len(values)])
    return [(int(h), units) for h, units in rows]


def test_broker_string_is_javas_decoding(tmp_path):
    jvm = jvm_decode(ILL_FORMED, tmp_path)
    for raw, (hash_code, units) in zip(ILL_FORMED, jvm):
        text = cl.broker_string(decode_text(raw))
        assert text.encode("utf-16-be").hex() == units, raw
        assert java_hash(text) == hash_code, raw
        if text != decode_text(raw):            # hashing the escapes would not do
            assert java_hash(decode_text(raw)) != hash_code, raw


def _store(root: Path) -> Store:
    """Every 5th message's KEYS and TAGS and the topic V (all of its messages, so that their queue
    offsets stay the broker's) hold ill-formed UTF-8."""
    w = Workload(messages=900, seed=52, rate=60.0, topics=("U", "V"), keys_per_message=1.5, drain=True)
    t = generate(w)
    props, topics = [], []
    for i, (block, topic) in enumerate(zip(t["properties"].to_pylist(), t["topic"].to_pylist())):
        raw, bad = block.encode(), ILL_FORMED[i % len(ILL_FORMED)]
        if i % 5 == 2:
            raw = raw.replace(b"KEYS\x01", b"KEYS\x01" + bad, 1).replace(b"TAGS\x01", b"TAGS\x01" + bad, 1)
        props.append(raw)
        topics.append(topic.encode() + (b"\xed\xa0\x80" if topic == "V" else b""))
    t = t.set_column(t.schema.get_field_index("properties"), "properties", pa.array(props, pa.large_binary()))
    t = t.set_column(t.schema.get_field_index("topic"), "topic", pa.array(topics, pa.large_binary()))
    with cl.CommitLogWriter(root / "commitlog", 1 << 14) as wr:
        wr.append(t)
    store = Store(root, commitlog_file_size=1 << 14, hash_slot_num=16, index_num=300, consume_queue_file_size=400,
                  tz=dt.UTC)
    store.dispatch()
    return store


def test_text_that_is_not_utf8_is_dispatched_as_the_broker_decodes_it(tmp_path):
    """Index entries hash the broker's Strings, queues are named by them, and verify finds the
    store clean; a key query with the broker's String finds each such message."""
    store = _store(tmp_path / "s")
    msgs = cl.read_columns(store.root / "commitlog", body=False)
    odd = msgs[msgs["keys"].map(lambda k: isinstance(k, str) and k != cl.broker_string(k))]
    assert len(odd) > 100
    report = verify_path(store.root)
    assert report.ok, report.summary()
    names = {p.name for p in (store.root / "consumequeue").iterdir()}
    assert {"U", "V\ufffd"} <= names and all(cl.broker_string(n) == n for n in names)
    for _, m in odd.head(40).iterrows():
        topic, key = cl.broker_string(m["topic"]), cl.broker_string(m["keys"]).split(" ")[0]
        found = store.query_by_key(topic, key, mode="broker")
        assert int(m["phy_offset"]) in found["phy_offset"].tolist(), (topic, key)
        assert index_hash(f"{topic}#{key}") == index_hash(cl.broker_string(f"{m['topic']}#{key}"))
    # the tags codes of the units are the hashCode of the broker's TAGS
    unit_codes = {}
    for folder in (store.root / "consumequeue").glob("*/*"):
        with cq.ConsumeQueue.open(folder, 400) as q:
            u = q.units
            unit_codes.update(zip(u["commitlog_offset"].astype(np.int64).tolist(),
                                  u["tags_code"].astype(np.int64).tolist()))
    tagged = msgs[msgs["tags"].map(lambda s: isinstance(s, str) and s != cl.broker_string(s))]
    assert len(tagged) > 100
    for phy, tags in zip(tagged["phy_offset"], tagged["tags"]):
        if int(phy) in unit_codes:
            assert unit_codes[int(phy)] == java_hash(cl.broker_string(tags))


def test_a_wrong_hash_of_such_text_is_still_found(tmp_path):
    """verify checks the broker's Strings: a unit whose tags code is the hash of the escaped text
    (what rmqlab wrote before) is a problem."""
    store = _store(tmp_path / "s")
    msgs = cl.read_columns(store.root / "commitlog", body=False)
    tagged = msgs[msgs["tags"].map(lambda s: isinstance(s, str) and s != cl.broker_string(s))
                  & msgs["topic"].isin(["U", "V"])]
    m = tagged.iloc[0]
    folder = cq.queue_dir(store.root, m["topic"], int(m["queue_id"]))
    with cq.ConsumeQueue.open(folder, 400) as q:
        k = int(np.flatnonzero(q.units["commitlog_offset"].astype(np.int64) == int(m["phy_offset"]))[0])
        first = q.min_offset
    qoff = first + k
    path = folder / f"{(qoff * 20) // 400 * 400:020d}"
    with open(path, "r+b") as fh:
        fh.seek(qoff * 20 % 400 + 12)
        fh.write(int(java_hash(m["tags"])).to_bytes(8, "big", signed=True))
    report = verify_path(store.root)
    assert [p.check for p in report.cross] == ["cq.tags-code"], report.summary()


def test_broker_strings_arrow_is_broker_string_of_each_value():
    """The object array and the Arrow array broker_strings_arrow gives both hold
    broker_string of each value (decode_text's str, None and NaN as missing), whether the
    column is all UTF-8 or not; values that are not text come back as they are, with no Arrow."""
    rng = np.random.default_rng(5)
    pieces = ILL_FORMED + [b"", b"a", "é".encode(), b"KEYS\x01k\x02", "日本".encode()]
    for _ in range(200):
        raw = [pieces[int(i)] for i in rng.integers(0, len(pieces), int(rng.integers(0, 8)))]
        values = np.array([decode_text(b) for b in raw] + [None, float("nan")], dtype=object)
        want = [cl.broker_string(decode_text(b)) for b in raw] + [None, None]
        objects, arrow = cl.broker_strings_arrow(values)
        assert arrow.type == pa.large_string() and arrow.to_pylist() == want
        assert [None if isinstance(v, float) else v for v in objects.tolist()] == want
        assert [None if isinstance(v, float) else v for v in cl.broker_strings(values).tolist()] == want
        # the reader's Arrow form of the same bytes: large_binary when some are not UTF-8
        read = pa.array(raw + [None], type=pa.large_binary())
        assert cl.broker_strings_of_arrow(read).to_pylist() == want[:-1]
        if all(b.decode("utf-8", "ignore").encode() == b for b in raw):
            text = pa.array([b.decode() for b in raw] + [None], type=pa.large_string())
            assert cl.broker_strings_of_arrow(text) is text
    ints = np.array([1, 2], dtype=object)
    objects, arrow = cl.broker_strings_arrow(ints)
    assert arrow is None and objects.tolist() == [1, 2]


def test_broker_strings_of_dictionary_is_broker_string_of_each_row():
    """A dictionary column as the reader gives it (large_binary values where some are not UTF-8,
    distinct byte strings that read as the same String among them): the objects and the
    DictionaryArray both hold broker_string of each row, one str object a distinct value."""
    rng = np.random.default_rng(11)
    pieces = ILL_FORMED + [b"", b"a", "é".encode(), "日本".encode()]
    for _ in range(200):
        raw = [pieces[int(i)] if i < len(pieces) else None for i in rng.integers(0, len(pieces) + 1,
                                                                                 int(rng.integers(0, 12)))]
        want = [None if b is None else cl.broker_string(decode_text(b)) for b in raw]
        for value_type in (pa.large_binary(), pa.large_string()):
            if value_type == pa.large_string() and any(b is not None and b.decode("utf-8", "replace").encode() != b
                                                       for b in raw):
                continue        # the reader keeps such bytes as large_binary
            column = pa.array(raw, value_type).dictionary_encode()
            objects, arrow = cl.broker_strings_of_dictionary(column)
            assert objects.tolist() == want
            assert pa.types.is_dictionary(arrow.type) and arrow.type.value_type == pa.large_string()
            assert arrow.to_pylist() == want
            assert len({id(o) for o in objects.tolist() if o is not None}) <= len(column.dictionary)
