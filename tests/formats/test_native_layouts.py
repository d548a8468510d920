"""The C extensions restate the binary layouts as #defines; every size, offset, magic code and
stop code they export must equal what the Python declarations derive.

Each module's exports are compared as a whole, so a constant added on the C side without a
Python counterpart fails here too. Expected values come from the Layout objects and the
named Python constants, never from restated numbers.
"""
import numpy as np
import pytest

from rmqlab import _indexcore, _records
from rmqlab.formats import commitlog as cl
from rmqlab.formats import indexfile
from rmqlab.formats.commitlog.records import property_problem


def exported(module) -> dict[str, int]:
    return {name: getattr(module, name) for name in dir(module) if name.isupper()}


def field_offsets_and_size(prefix: str, layout) -> dict[str, int]:
    """The names a C module gives `layout`: PREFIX_<FIELD>_OFFSET per field, and PREFIX_SIZE."""
    out = {f"{prefix}_{f.name.upper()}_OFFSET": f.offset for f in layout.fields}
    out[f"{prefix}_SIZE"] = layout.size
    return out


def size_only(prefix: str, layout) -> dict[str, int]:
    return {f"{prefix}_SIZE": layout.size}


def test_indexcore_exports_exactly_the_indexfile_layouts():
    want = {**field_offsets_and_size("HEADER", indexfile.HEADER),
            **field_offsets_and_size("SLOT", indexfile.SLOT),
            **field_offsets_and_size("ENTRY", indexfile.ENTRY)}
    assert exported(_indexcore) == want


def _address_sizes() -> tuple[int, int]:
    """IPv4 and IPv6 address widths as the Python model counts them: the minimal message holds
    two IPv4 hosts, and an IPv6 born host makes it longer by the difference."""
    fixed = (cl.HEAD.size + 2 * cl.PORT.size + cl.STORE_TIME.size + cl.TAIL.size
             + cl.TOPIC_LEN_V1.size + cl.PROPERTIES_LEN.size)
    ipv4 = (cl.MIN_MESSAGE_SIZE - fixed) // 2
    ipv6 = ipv4 + cl.message_length(0, 0, 0, cl.BORNHOST_V6_FLAG) - cl.message_length(0, 0, 0)
    return ipv4, ipv6


def _separators() -> tuple[int, int]:
    name_value, pair_end = cl.properties_block({"n": "v"})[1:4:2]
    return name_value, pair_end


STOP_NAMES = ("STOP_END", "STOP_BLANK", "STOP_BLANK_SIZE", "STOP_SHORT", "STOP_MAGIC",
              "STOP_PAST_END", "STOP_TOO_SMALL", "STOP_LIMIT")

#: A property block showing each find_props problem, by the problem's exported name.
PROP_PROBLEM_BLOCKS = {
    "PROP_EMPTY_PAIR": b"\x02",
    "PROP_NO_SEPARATOR": b"name\x02",
    "PROP_EMPTY_NAME": b"\x01value\x02",
}


@pytest.mark.parametrize("block", [b"name\x01value", b"a\x01x\x02name\x01value", b"a\x01x\x02name\x01"])
def test_a_last_pair_without_its_separator_is_no_problem_in_c_or_python(block):
    # brokers 4.9.1 to 5.1.x write the block without its final \x02
    starts, lengths = np.zeros(1, np.int64), np.array([len(block)], np.int64)
    value_starts, value_lengths = np.empty(1, np.int64), np.empty(1, np.int64)
    assert _records.find_props(block, starts, lengths, (b"name",), value_starts, value_lengths) is None
    assert property_problem(block) is None
    want = (-1, -1) if block.endswith(b"\x01") else (block.index(b"value"), 5)
    assert (int(value_starts[0]), int(value_lengths[0])) == want


def test_records_exports_exactly_the_commitlog_layouts_and_codes():
    ipv4, ipv6 = _address_sizes()
    name_value, pair_end = _separators()
    want = {
        "MAGIC_V1": cl.MAGIC_V1, "MAGIC_V2": cl.MAGIC_V2, "MAGIC_BLANK": cl.MAGIC_BLANK,
        **field_offsets_and_size("HEAD", cl.HEAD),
        "IPV4_ADDRESS_SIZE": ipv4, "IPV6_ADDRESS_SIZE": ipv6,
        **size_only("PORT", cl.PORT),
        **size_only("STORE_TIME", cl.STORE_TIME),
        **field_offsets_and_size("TAIL", cl.TAIL),
        **size_only("TOPIC_LEN_V1", cl.TOPIC_LEN_V1),
        **size_only("TOPIC_LEN_V2", cl.TOPIC_LEN_V2),
        **size_only("PROPERTIES_LEN", cl.PROPERTIES_LEN),
        **size_only("BLANK", cl.BLANK),
        "MIN_MESSAGE_SIZE": cl.MIN_MESSAGE_SIZE,
        "NAME_VALUE_SEPARATOR": name_value, "PROPERTY_SEPARATOR": pair_end,
        "BORNHOST_V6_FLAG": cl.BORNHOST_V6_FLAG, "STOREHOSTADDRESS_V6_FLAG": cl.STOREHOSTADDRESS_V6_FLAG,
        **{name: getattr(cl, name) for name in STOP_NAMES},
        # the values of these are checked against the Python model's below
        **{name: getattr(_records, name) for name in ("PROP_OK", *PROP_PROBLEM_BLOCKS)},
    }
    assert exported(_records) == want


def test_walk_reads_a_blank_record_with_the_message_head_offsets():
    # the walk reads TOTALSIZE and MAGICCODE before it knows which kind of record it is at
    for name in ("total_size", "magic"):
        assert cl.BLANK.offset(name) == cl.HEAD.offset(name)
    assert cl.BLANK.size == cl.HEAD.offset("magic") + cl.HEAD.field("magic").size


def test_every_walk_stop_code_is_named_and_described():
    codes = [getattr(_records, name) for name in STOP_NAMES]
    assert len(set(codes)) == len(codes)
    assert sorted(cl.WALK_STOPS) == sorted(codes)


def test_every_property_problem_code_is_named_and_described():
    codes = [getattr(_records, name) for name in PROP_PROBLEM_BLOCKS]
    assert sorted(cl.PROPERTY_PROBLEMS) == sorted(codes)
    assert _records.PROP_OK not in cl.PROPERTY_PROBLEMS


@pytest.mark.parametrize("name", sorted(PROP_PROBLEM_BLOCKS))
def test_property_problem_codes_mean_the_same_in_c_and_python(name):
    block = PROP_PROBLEM_BLOCKS[name]
    starts, lengths = np.zeros(1, np.int64), np.array([len(block)], np.int64)
    value_starts, value_lengths = np.empty(0, np.int64), np.empty(0, np.int64)
    row, at, c_code = _records.find_props(block, starts, lengths, (), value_starts, value_lengths)
    python_at, python_code = property_problem(block)
    assert (row, at, c_code) == (0, python_at, getattr(_records, name))
    assert python_code == c_code


KAFKA_STOP_NAMES = ("STOP_END", "STOP_SHORT", "STOP_MAGIC", "STOP_TOO_SMALL", "STOP_PAST_END", "STOP_LIMIT")


def test_kafkalog_exports_exactly_the_kafka_entry_layouts_and_codes():
    from rmqlab import _kafkalog
    from rmqlab.kafka import legacy
    from rmqlab.kafka import log as kl

    want = {
        **field_offsets_and_size("HEADER", kl.HEADER),
        "LOG_OVERHEAD": kl.LOG_OVERHEAD,
        "HEADER_SIZE_UP_TO_MAGIC": kl.HEADER_SIZE_UP_TO_MAGIC,
        "MAGIC_V2": kl.MAGIC,
        "MIN_ENTRY_SIZE_V0": legacy.MIN_ENTRY_SIZE[0],
        "MIN_ENTRY_SIZE_V1": legacy.MIN_ENTRY_SIZE[1],
        "MIN_ENTRY_SIZE_V2": kl.RECORD_BATCH_OVERHEAD,
        "COLUMNS": len(kl.HEADER.fields),
        **{name: getattr(_kafkalog, name) for name in KAFKA_STOP_NAMES},
    }
    assert exported(_kafkalog) == want
    # a legacy message's size and magic sit where a v2 batch's batchLength and magic do
    for layout in (legacy.MESSAGE_V0, legacy.MESSAGE_V1):
        assert layout.offset("offset") == want["HEADER_BASE_OFFSET_OFFSET"]
        assert layout.offset("message_size") == want["HEADER_BATCH_LENGTH_OFFSET"]
        assert layout.offset("magic") == want["HEADER_MAGIC_OFFSET"]
    codes = [getattr(_kafkalog, name) for name in KAFKA_STOP_NAMES]
    assert len(set(codes)) == len(codes)
