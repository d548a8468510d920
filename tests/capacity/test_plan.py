"""Capacity plan inputs: parsing, defaults, round trips, and a PlanError naming the dotted
field for every kind of bad input."""
from __future__ import annotations

import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmqlab.capacity.plan import (
    EXAMPLE_PLAN_TOML,
    FIELDS,
    Interval,
    PlanError,
    load_plan,
    parse_plan,
    parse_size,
)
from rmqlab.errors import RmqlabError


def test_example_plan_parses_and_names_every_field():
    raw = tomllib.loads(EXAMPLE_PLAN_TOML)
    p = parse_plan(raw)
    assert p.traffic.messages_per_second == Interval(800, 1000, 1500)
    assert p.messages.topics == ("Orders", "Payments", "Inventory")
    assert p.disk.capacity_bytes == 2 * 2**40
    assert [a.name for a in p.compare] == ["half the slots", "double size"]
    for sec, fields in FIELDS.items():
        for key, f in fields.items():
            assert key in EXAMPLE_PLAN_TOML, f"{sec}.{key} missing from the example"
            if f.rocketmq:
                assert f.rocketmq in EXAMPLE_PLAN_TOML


def test_defaults_are_rocketmq_defaults():
    p = parse_plan({})
    assert (p.index.hash_slot_num, p.index.index_num, p.index.max_msgs_num_batch) == (5_000_000, 20_000_000, 64)
    assert p.files.commitlog_file_size == 1 << 30 and p.files.consume_queue_units_per_file == 300_000
    assert p.retention.file_reserved_time_hours == Interval.point(72) and p.retention.delete_when == (4,)
    assert (p.disk.disk_max_used_space_ratio, p.disk.disk_space_clean_forcibly_ratio,
            p.disk.disk_space_warning_level_ratio) == (0.75, 0.85, 0.90)
    assert p.geometry.file_size == 420_000_040


def test_round_trip_at_and_replace():
    p = parse_plan(tomllib.loads(EXAMPLE_PLAN_TOML))
    assert parse_plan(p.to_dict()) == p
    low = p.at("low")
    assert low.traffic.messages_per_second == Interval.point(800)
    assert all(iv.is_point for iv in p.with_likely().intervals().values())
    assert p.with_likely().keys.cardinality == Interval.point(1000)
    q = p.replace({"traffic.messages_per_second": 2000, "index.hash_slot_num": 1_000_000})
    assert q.traffic.messages_per_second == Interval.point(2000) and q.index.hash_slot_num == 1_000_000
    with pytest.raises(PlanError) as e:
        p.replace({"index.index_num": 10})
    assert e.value.field == "index.index_num"


BAD = [
    ({"traffic": {"messages_per_second": -5}}, "traffic.messages_per_second", "> 0"),
    ({"traffic": {"messages_per_second": {"low": -5, "likely": 1, "high": 2}}},
     "traffic.messages_per_second.low", "> 0"),
    ({"traffic": {"messages_per_second": {"low": 5, "likely": 1, "high": 9}}},
     "traffic.messages_per_second.likely", "low"),
    ({"traffic": {"messages_per_second": {"low": 1, "likely": 5, "high": 2}}},
     "traffic.messages_per_second.high", "likely"),
    ({"traffic": {"messages_per_second": {"low": 1, "high": 2}}}, "traffic.messages_per_second.likely", "missing"),
    ({"traffic": {"messages_per_second": {"low": 1, "likely": 1, "high": 2, "mode": 1}}},
     "traffic.messages_per_second.mode", "unknown"),
    ({"traffic": {"messages_per_second": "fast"}}, "traffic.messages_per_second", "number"),
    ({"traffic": {"daily_profile": "weekly"}}, "traffic.daily_profile", "flat, daily"),
    ({"retention": {"file_reserved_time_hours": 0}}, "retention.file_reserved_time_hours", "> 0"),
    ({"retention": {"delete_when": "25"}}, "retention.delete_when", "deleteWhen"),
    ({"index": {"hash_slot_num": 100, "index_num": 50}}, "index.index_num", "planning sanity rule"),
    ({"index": {"hash_slot_num": 0}}, "index.hash_slot_num", ">= 1"),
    ({"index": {"hash_slot_num": 100_000_000, "index_num": 100_000_000}}, "index.index_num", "int file size"),
    ({"keys": {"foo": 1}}, "keys.foo", "allows: keys_per_message"),
    ({"keyz": {}}, "keyz", "unknown section"),
    ({"keys": {"keyless_fraction": 1.5}}, "keys.keyless_fraction", "<= 1"),
    ({"keys": {"keys_per_message": 0.5}}, "keys.keys_per_message", ">= 1"),
    ({"keys": {"keys_per_message": 9}}, "keys.keys_per_message.high", "max_keys_per_message"),
    ({"keys": {"cardinality": 10.5}}, "keys.cardinality", "whole"),
    ({"keys": {"uniq_key": "yes"}}, "keys.uniq_key", "true or false"),
    ({"disk": {"disk_max_used_space_ratio": 0}}, "disk.disk_max_used_space_ratio", "(0, 1]"),
    ({"disk": {"disk_max_used_space_ratio": 75}}, "disk.disk_max_used_space_ratio", "0.75"),
    ({"disk": {"disk_space_warning_level_ratio": 1.01}}, "disk.disk_space_warning_level_ratio", "(0, 1]"),
    ({"disk": {"capacity_bytes": "5 parsecs"}}, "disk.capacity_bytes", "size"),
    ({"disk": {"capacity_bytes": -1}}, "disk.capacity_bytes", ">= 1"),
    ({"disk": {"capacity_bytes": "1GiB", "used_bytes": "2GiB"}}, "disk.used_bytes", "capacity_bytes"),
    ({"messages": {"topics": ["a b"]}}, "messages.topics[0]", "topic"),
    ({"messages": {"topics": 0}}, "messages.topics", ">= 1"),
    ({"queries": {"hot_key_rank": 5000}}, "queries.hot_key_rank", "cardinality"),
    ({"compare": [{"hash_slot_num": 10}]}, "compare[0].name", "name"),
    ({"compare": [{"name": "x", "slots": 10}]}, "compare[0].slots", "unknown"),
    ({"compare": [{"name": "x", "hash_slot_num": 10, "index_num": 5}]}, "compare[0].index_num", "hash_slot_num"),
    ({"plan": {"seed": -1}}, "plan.seed", ">= 0"),
]


@pytest.mark.parametrize("mapping, field, words", BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_bad_input_names_the_field(mapping, field, words):
    with pytest.raises(PlanError) as e:
        parse_plan(mapping)
    assert e.value.field == field
    assert str(e.value).startswith(field + ": ")
    assert words in str(e.value)
    assert isinstance(e.value, ValueError) and isinstance(e.value, RmqlabError)


def test_the_issue_examples_fail_with_the_field(tmp_path):
    cases = {"negative rate": ("[traffic]\nmessages_per_second = -5\n", "traffic.messages_per_second"),
             "retention 0": ("[retention]\nfile_reserved_time_hours = 0\n", "retention.file_reserved_time_hours"),
             "index < slots": ("[index]\nhash_slot_num = 1000\nindex_num = 999\n", "index.index_num"),
             "unknown key": ("[disk]\ncapacity = 5\n", "disk.capacity"),
             "toml syntax": ("[disk\n", "toml")}
    for name, (text, field) in cases.items():
        path = tmp_path / f"{name}.toml"
        path.write_text(text)
        with pytest.raises(PlanError) as e:
            load_plan(path)
        assert e.value.field == field, name


def test_load_plan_reads_toml(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text(EXAMPLE_PLAN_TOML)
    assert load_plan(path) == parse_plan(tomllib.loads(EXAMPLE_PLAN_TOML))


@pytest.mark.parametrize("text, n", [("500GiB", 500 * 2**30), ("1 TiB", 2**40), ("2TB", 2 * 10**12),
                                     ("1.5 KB", 1500), ("4096", 4096), ("10 b", 10), ("3 mib", 3 * 2**20)])
def test_parse_size(text, n):
    assert parse_size(text) == n


@pytest.mark.parametrize("bad", ["1.5 B", "GiB", "5 GiBs", True, None, [], 1.5])
def test_parse_size_rejects(bad):
    with pytest.raises(PlanError):
        parse_size(bad, "disk.capacity_bytes")


@given(st.integers(0, 10**6), st.sampled_from([("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30), ("KB", 10**3),
                                               ("GB", 10**9), ("", 1)]), st.booleans())
def test_parse_size_property(n, unit, space):
    name, mult = unit
    assert parse_size(f"{n}{' ' if space else ''}{name}") == n * mult


def test_a_plan_file_without_a_name_is_named_by_its_file_and_titled_once(tmp_path):
    """Reports say "Capacity plan: shop" for shop.toml, never "Capacity plan: capacity plan"."""
    path = tmp_path / "shop.toml"
    path.write_text('[traffic]\nmessages_per_second = 500\n')
    plan = load_plan(path)
    assert plan.name == "shop" and plan.title == "Capacity plan: shop"
    path.write_text('[plan]\nseed = 3\n')
    assert load_plan(path).name == "shop" and load_plan(path).seed == 3
    assert parse_plan({}).title == "Capacity plan"                          # the default name, not repeated
    assert parse_plan({"plan": {"name": "orders 2027"}}).title == "Capacity plan: orders 2027"
