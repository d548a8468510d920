"""Offset ids and unique ids: scalar vs vectorized, round trips, Java's fixed examples."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.formats import msgid as m

hosts = st.one_of(
    st.builds(lambda a, p: f"{a}:{p}", st.ip_addresses(v=4).map(str), st.integers(0, 65535)),
    st.builds(lambda a, p: f"[{a}]:{p}", st.ip_addresses(v=6).map(str), st.integers(0, 65535)))


@settings(max_examples=100, deadline=None)
@given(hosts, st.integers(0, 2**63 - 1))
def test_offset_id_round_trip(host, off):
    mid = m.offset_msg_id(host, off)
    assert len(mid) == (32 if not host.startswith("[") else 56) and mid == mid.upper()
    back = m.parse_offset_msg_id(mid)
    assert back.phy_offset == off and m.parse_host(back.store_host) == m.parse_host(host)
    assert m.offset_msg_ids_many([host], [off]).tolist() == [mid]


def test_offset_ids_many_mixed_families():
    hs = ["1.2.3.4:10911", "[::1]:80", "1.2.3.4:10911"]
    ids = m.offset_msg_ids_many(hs, [1, 2, 3])
    assert ids.tolist() == [m.offset_msg_id(h, o) for h, o in zip(hs, [1, 2, 3])]


def test_known_offset_id():
    # the real CommitLog's store host 192.168.71.1:8123, second message at offset 172
    assert m.offset_msg_id("192.168.71.1:8123", 172) == "C0A8470100001FBB00000000000000AC"


@settings(max_examples=60, deadline=None)
@given(st.ip_addresses(v=4).map(str), st.integers(0, 65535), st.integers(-2**31, 2**31 - 1),
       st.integers(1_600_000_000_000, 1_800_000_000_000), st.integers(0, 65535))
def test_uniq_id_scalar_vs_vectorized_and_time(ip, pid, clh, ts, counter):
    uid = m.create_uniq_id(ip, pid, clh, ts, counter, tz="UTC")
    assert m.uniq_ids_many(ip, pid, clh, [ts], [counter], tz="UTC").tolist() == [uid]
    u = m.parse_uniq_id(uid, now=ts + 1000, tz="UTC")
    assert (u.ip, u.pid, u.class_loader_hash, u.counter, u.timestamp_ms) == (ip, pid, clh, counter, ts)


def test_bad_ids():
    for bad in ("", "XYZ", "0" * 31, "G" * 32):
        with pytest.raises(ValueError):
            m.parse_offset_msg_id(bad)
    with pytest.raises(ValueError):
        m.parse_host("1.2.3.4")
    with pytest.raises(ValueError):
        m.parse_host("::1:80")
