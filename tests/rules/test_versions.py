"""Every broker version's store form, written and read back through every reader.

The literal models here restate the broker's Java source (apache/rocketmq, read at the tags in
rmqlab/rules/versions.py): ``MessageDecoder.messageProperties2String`` /
``string2messageProperties`` / ``createCrc32`` and the forceVerifyPropCRC check of
``CommitLog.checkMessageAndReturnSize``. The README's "Broker versions" table names these tests.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from commitlog_stdlib import read_commitlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import REAL_DATA, require_real_data
from reference_model import java_string_to_properties

from rmqlab import _records
from rmqlab.formats import commitlog as cl
from rmqlab.rules.versions import BrokerVersionError, layout_facts, parse_broker_version
from rmqlab.verify.check_commitlog import verify_commitlog

REAL = REAL_DATA / "rocketmq"

#: one release of each form: (version, final \x02, CRC property possible, v2 magic, IPv6)
FORMS = [("4.2.0", True, False, False, False), ("4.9.0", True, False, False, True),
         ("4.9.4", False, False, False, True), ("5.1.4", False, False, True, True),
         ("5.2.0", True, True, True, True), ("5.3.1", True, True, True, True), (None, True, True, True, True)]


# ------------------------------------------------------------------ literal models of the Java source


def java_properties_to_string(pairs: list[tuple[str, str]], version) -> bytes:
    """messageProperties2String: name 0x01 value 0x02 each; 4.9.1 to 5.1.x delete the last char."""
    sb = "".join(f"{k}\x01{v}\x02" for k, v in pairs)
    version_t = None if version is None else tuple(int(x) for x in version.split("."))
    if version_t is not None and (4, 9, 1) <= version_t < (5, 2, 0) and sb:
        sb = sb[:-1]
    return sb.encode()


def java_create_crc32(crc: int) -> bytes:
    out = b"__CRC32#\x01"
    for _ in range(10):
        b = 0x30
        if crc > 0:
            b += crc % 10
            crc //= 10
        out += bytes([b])
    return out + b"\x02"


def java_prop_crc_ok(record: bytes, props: dict[str, str]) -> bool | None:
    """forceVerifyPropCRC: expected from the digits read backwards (Java int), > 0 and equal to
    UtilAll.crc32 of the record minus CRC32_RESERVED_LEN."""
    s = props.get("__CRC32#")
    if s is None:
        return None
    expected = 0
    for ch in reversed(s):
        expected = ((expected * 10 + ord(ch) - ord("0")) + 2**31) % 2**32 - 2**31
    return expected > 0 and (zlib.crc32(record[:len(record) - 20]) & 0x7FFFFFFF) == expected


# ------------------------------------------------------------------ version strings


@pytest.mark.parametrize("text,want", [("4.2.0", (4, 2, 0)), ("4.9.4", (4, 9, 4)), ("5.3.1", (5, 3, 1)),
                                       ("rocketmq-all-5.1.4", (5, 1, 4)), ("v4.9.1", (4, 9, 1))])
def test_version_strings_parse(text, want):
    v = parse_broker_version(text)
    assert (v.major, v.minor, v.patch) == want


@pytest.mark.parametrize("text", ["", "4.9", "4.9.4.1", "latest", "5.x", "3.2.6", "6.0.0", "4.9.4-SNAPSHOT", None])
def test_unknown_version_forms_are_a_typed_error(text):
    with pytest.raises(BrokerVersionError, match="broker version"):
        layout_facts(text) if text is not None else parse_broker_version(text)  # type: ignore[arg-type]
    assert issubclass(BrokerVersionError, ValueError)


@pytest.mark.parametrize("version,final_sep,crc,v2,ipv6", FORMS)
def test_layout_facts_by_version(version, final_sep, crc, v2, ipv6):
    f = layout_facts(version)
    assert (f.final_property_separator, f.prop_crc, f.magic_v2, f.ipv6_hosts) == (final_sep, crc, v2, ipv6)
    assert not f.prop_crc_default     # enabledAppendPropCRC = false in every release that has it


# ------------------------------------------------------------------ properties, both forms

names = st.text(st.characters(blacklist_characters="\x00\x01\x02", blacklist_categories=("Cs",)),
                min_size=1, max_size=8)
values = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)),
                 min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(names, values), max_size=6), st.sampled_from([v for v, *_ in FORMS]))
def test_every_properties_form_parses_as_the_broker_parses_it(pairs, version):
    block = java_properties_to_string(pairs, version)
    want = java_string_to_properties(block.decode())
    assert cl.parse_properties(block) == want
    n = len(pairs)
    wanted = tuple({k.encode() for k, _ in pairs})[:16]
    vs, vl = np.empty(len(wanted), np.int64), np.empty(len(wanted), np.int64)
    assert _records.find_props(block, np.zeros(1, np.int64), np.array([len(block)], np.int64), wanted,
                               vs, vl) is None
    for j, name in enumerate(wanted):
        got = block[vs[j]:vs[j] + vl[j]].decode() if vs[j] >= 0 else None
        assert got == want.get(name.decode()), (n, name)


@pytest.mark.parametrize(("block", "want"), [(b"A\x01x\x02NOSEP", {"A": "x"}), (b"A\x01x\x02\x01v", {"A": "x"}),
                                             (b"A\x01x\x02\x02B\x01y", {"A": "x", "B": "y"})])
def test_malformed_pairs_are_skipped_in_either_form(block, want):
    """string2messageProperties (4.9.1+; javap of 4.9.2 and 5.2.0) skips a pair without \x01, one
    with an empty name and an empty one, with or without the final \x02. (Up to 4.9.0 its split
    rule kept an empty name, ``{"": "v"}``: no wanted property has one.)"""
    for form in (block, block + b"\x02"):
        assert cl.parse_properties(form) == want


# ------------------------------------------------------------------ each version's records, every reader

messages = st.lists(st.fixed_dictionaries({
    "topic": st.text("abcXYZ_%-", min_size=1, max_size=20),
    "body": st.binary(max_size=40),
    "pairs": st.lists(st.tuples(st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "DELAY", "a", "WAIT"]), values),
                      max_size=4, unique_by=lambda p: p[0]),
    "store_timestamp": st.integers(0, 2**41),
}), min_size=1, max_size=12)


def _check_every_reader(tmp_path, msgs, version, crc):
    cols = {"topic": [m["topic"] for m in msgs], "body": [m["body"] for m in msgs],
            "properties": [java_properties_to_string(m["pairs"], None) for m in msgs],
            "store_timestamp": [m["store_timestamp"] for m in msgs]}
    d = Path(tempfile.mkdtemp(dir=tmp_path)) / "commitlog"   # one per hypothesis example
    with cl.CommitLogWriter(d, file_size=4096, broker_version=version, append_prop_crc=crc) as w:
        batch = w.append(cols)
    data = b"".join((d / f.path.name).read_bytes() for f in cl.store_files(d))
    want_blocks = [java_properties_to_string(m["pairs"], version) for m in msgs]
    # the C walk finds every record; the record model and the columns agree with the literal model
    positions = []
    for f in cl.store_files(d):
        raw = f.path.read_bytes()
        pos, _, code = _records.walk(raw, 0, len(raw), -1)
        positions += [f.start_offset + p for p in np.frombuffer(pos, np.int64).tolist()]
    assert positions == batch.phy_offset.tolist()
    it = list(cl.iter_messages(d, check_crc=True))
    df = cl.read_columns(d, check_crc=True)
    assert len(it) == len(df) == len(msgs)
    for i, rec in enumerate(it):
        raw = rec.properties_raw
        if crc:
            assert raw[:-20] == want_blocks[i] + (b"\x02" if want_blocks[i] and not want_blocks[i].endswith(b"\x02")
                                                    else b"")
            record = data[rec.phy_offset:rec.phy_offset + rec.total_size]
            assert raw[-20:] == java_create_crc32(zlib.crc32(record[:-20]) & 0x7FFFFFFF)
        else:
            assert raw == want_blocks[i]
        props = java_string_to_properties(raw.decode("utf-8", "surrogateescape"))
        assert rec.properties == props
        assert rec.prop_crc_ok is java_prop_crc_ok(rec.encode(), props) is (True if crc else None)
        assert df["prop_crc_ok"][i] is rec.prop_crc_ok
        assert df["properties"][i] == raw.decode()
        for col in ("keys", "tags", "uniq_key"):
            assert df[col][i] == props.get(col.upper())
        assert rec.version == df["version"][i] == 1
    problems = [p for r in verify_commitlog(d) for p in r.problems]
    assert not problems, problems


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages, st.sampled_from(FORMS))
def test_each_versions_records_read_back_through_every_reader(tmp_path, msgs, form):
    version, _, crc_possible, _, _ = form
    _check_every_reader(tmp_path, msgs, version, False)
    if crc_possible:
        _check_every_reader(tmp_path, msgs, version, True)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages, st.integers(0, 10**6), st.sampled_from(["5.2.0", "5.3.1", None]))
def test_a_changed_byte_under_the_crc_property_is_reported(tmp_path, msgs, which, version):
    cols = {"topic": [m["topic"] for m in msgs], "body": [m["body"] for m in msgs],
            "properties": [java_properties_to_string(m["pairs"], None) for m in msgs]}
    batch = cl.encode_messages(cols, 0, 1 << 16, broker_version=version, append_prop_crc=True)
    data = bytearray(batch.files[0].data.tobytes())
    k = which % len(msgs)
    at = int(batch.phy_offset[k]) + cl.HEAD.offset("born_timestamp") + (which % 8)   # covered, not structural
    data[at] ^= 0x40
    p = Path(tempfile.mkdtemp(dir=tmp_path)) / "00000000000000000000"
    p.write_bytes(bytes(data))
    df = cl.read_columns(p, check_crc=True)
    assert df["prop_crc_ok"].tolist() == [i != k for i in range(len(msgs))]
    recs = list(cl.iter_messages(p))
    assert [java_prop_crc_ok(r.encode(), r.properties) for r in recs] == df["prop_crc_ok"].tolist()
    problems = [pr for r in verify_commitlog(p) for pr in r.problems]
    assert [(pr.check, pr.error.offset, pr.error.field) for pr in problems] == \
        [("commitlog.prop-crc", int(batch.phy_offset[k]), "PROPERTIES")]


def test_a_crc_value_of_zero_fails_as_the_broker_fails_it():
    rec = bytearray(cl.encode_message(topic="T", properties={"KEYS": "k"}, append_prop_crc=True))
    rec[-11:-1] = b"0000000000"
    m = cl.read_message(bytes(rec), 0)
    assert m.prop_crc_ok is False is java_prop_crc_ok(bytes(rec), m.properties)


# ------------------------------------------------------------------ what a version cannot write


@pytest.mark.parametrize("version,kwargs,match", [
    ("4.2.0", {"born_host": "[::1]:1"}, "IPv6"),
    ("4.9.4", {"topic": "T" * 130}, "TOPICLEN"),
    ("5.0.0", {"version": 2}, "v1 records only"),
    ("5.1.4", {"append_prop_crc": True}, "__CRC32#"),
])
def test_a_version_refuses_what_its_broker_cannot_write(version, kwargs, match):
    args = {"topic": "T"} | kwargs
    with pytest.raises(ValueError, match=match):
        cl.encode_message(broker_version=version, **args)
    with pytest.raises(ValueError, match=match):
        cl.encode_messages({k: [v] for k, v in args.items() if k != "append_prop_crc"}, broker_version=version,
                           append_prop_crc=kwargs.get("append_prop_crc"))


def test_long_topics_take_v2_from_5_1_0():
    assert cl.read_message(cl.encode_message(topic="T" * 130, broker_version="5.1.0"), 0).version == 2


def test_default_form_is_unchanged():
    cols = {"topic": ["T", "T"], "body": [b"a", b"b"], "properties": ["KEYS\x01k\x02", "TAGS\x01t\x02"]}
    a = cl.encode_messages(cols)
    b = cl.encode_messages(cols, broker_version=None, append_prop_crc=False)
    assert bytes(a.files[0].data) == bytes(b.files[0].data)
    # 4.0 to 4.9.0 and 5.2+ without the CRC property write exactly the default form
    for v in ("4.2.0", "4.9.0", "5.2.0", "5.3.1"):
        assert bytes(cl.encode_messages(cols, broker_version=v).files[0].data) == bytes(a.files[0].data)


# ------------------------------------------------------------------ real stores


@pytest.mark.parametrize("store", ["store-4e25b979", "store-ericpangopher-4.2.0"])
def test_real_stores_end_properties_with_0x02_v1_ipv4_no_crc(store):
    d = require_real_data(REAL / store / "commitlog")
    df = cl.read_columns(d, check_crc=True, on_error="report")
    # READMEs: store-4e25b979 "holds 47 v1 messages", store-ericpangopher-4.2.0 "179 messages in all";
    # the offsets: the standard-library walk's
    walk = read_commitlog(d)
    assert len(walk) == {"store-4e25b979": 47, "store-ericpangopher-4.2.0": 179}[store]
    assert df["phy_offset"].tolist() == [m["phy_offset"] for m in walk]
    blocks = df["properties"].tolist()
    assert all(b.endswith("\x02") for b in blocks if b)          # written before 4.9.1
    assert set(df["version"].tolist()) == {1}
    assert not (df["sys_flag"].to_numpy() & 0x30).any()
    assert df["prop_crc_ok"].isna().all()
    # read back in the 4.9.1 to 5.1.x form, every message gives the same properties
    for b in blocks[:200]:
        raw = b.encode()
        assert cl.parse_properties(cl.stored_properties(raw, "4.9.4")) == cl.parse_properties(raw)


# ------------------------------------------------------------------ the generator and the command line


@pytest.mark.parametrize("version,crc", [("4.9.4", False), ("4.2.0", False), ("5.3.1", True)])
def test_generated_store_of_a_version_reads_and_verifies(tmp_path, version, crc):
    from rmqlab.lab.generate import generate_store
    from rmqlab.lab.workload import Workload

    w = Workload(messages=1500, seed=4, broker_version=version, append_prop_crc=crc, transaction_fraction=0.1,
                 delay_fraction=0.1, delay_levels=(1,), drain=True)
    generate_store(tmp_path, w, commitlog_file_size=1 << 16, hash_slot_num=64, index_num=256)
    df = cl.read_columns(tmp_path / "commitlog", check_crc=True)
    final = [b.endswith("\x02") for b in df["properties"]]
    assert all(final) if layout_facts(version).final_property_separator else not any(final)
    assert df["prop_crc_ok"].tolist() == [True if crc else None] * len(df)
    from rmqlab.verify import verify_path

    r = verify_path(tmp_path)   # dispatch (ConsumeQueue, index keys) included
    assert r.ok and not r.problems and r.cross_counts["messages"] == len(df), [str(p) for p in r.problems]


def test_cli_generate_takes_a_broker_version(tmp_path):
    out = tmp_path / "s"
    run = subprocess.run([sys.executable, "-m", "rmqlab", "store", "generate", str(out), "--messages", "300",
                          "--broker-version", "4.9.4", "--commitlog-file-size", "65536", "--json"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    df = cl.read_columns(out / "commitlog")
    assert len(df) == 300 and not any(b.endswith("\x02") for b in df["properties"])
    bad = subprocess.run([sys.executable, "-m", "rmqlab", "store", "generate", str(tmp_path / "t"),
                          "--messages", "3", "--broker-version", "4.9"], capture_output=True, text=True)
    assert bad.returncode == 2 and "MAJOR.MINOR.PATCH" in bad.stderr
