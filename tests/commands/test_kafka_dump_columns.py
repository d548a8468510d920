"""``rmqlab kafka dump``'s text of a ``.log`` is made column by column (``_log_text``); it must be
the line-by-line text (``_print_dump`` of ``dump_file``) byte for byte, on every real Kafka
partition beside the repository and on random segments. The line-by-line text is the one the
broker tests hold to kafka-dump-log's output."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.commands.kafka import _log_text, _print_dump, _sequence, _sequences, dump_file
from rmqlab.kafka.log import KafkaRecord, write_segment
from tests.support.oracles import REAL_DATA, missing

REAL_KAFKA = REAL_DATA / "kafka"


def line_by_line(path: Path, records: bool, max_bytes: int | None = None) -> bytes:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _print_dump(dump_file(path, records=records, max_bytes=max_bytes))
    return out.getvalue().encode()


def test_every_real_segment_dumps_the_same_by_columns():
    if not REAL_KAFKA.is_dir():
        missing("real Kafka partitions", str(REAL_KAFKA))
    logs = sorted(REAL_KAFKA.rglob("*.log"))
    line_by_line_only = []
    for log in logs:
        for records in (False, True):
            fast = _log_text(log, records, None)
            if fast is None:
                line_by_line_only.append(log)
            else:
                assert fast[0] == line_by_line(log, records), (log, records)
    # control batches, magic 0/1 and KRaft metadata logs take the line-by-line path; the rest not:
    # of the real segments, only a KRaft metadata log's (its records are decoded)
    assert {p.parent.name.split("-")[0] for p in line_by_line_only} <= {"__cluster_metadata"}, line_by_line_only


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n=st.integers(0, 40), per_batch=st.integers(1, 5), max_bytes=st.none() | st.integers(0, 4000),
       compression=st.sampled_from(["none", "gzip"]))
def test_random_segments_dump_the_same_by_columns(tmp_path_factory, data, n, per_batch, max_bytes, compression):
    recs = [KafkaRecord(i, 1718000000000 + data.draw(st.integers(0, 10**6)),
                        data.draw(st.none() | st.binary(max_size=8)), data.draw(st.none() | st.binary(max_size=40)),
                        data.draw(st.lists(st.tuples(st.text("abcé,", max_size=4), st.none() | st.binary(max_size=3)),
                                           max_size=3)))
            for i in range(n)]
    log = write_segment(tmp_path_factory.mktemp("seg"), 0, recs, records_per_batch=per_batch, compression=compression)
    for records in (False, True):
        fast = _log_text(log, records, max_bytes)
        assert fast is not None
        assert fast[0] == line_by_line(log, records, max_bytes)


@given(base=st.integers(-5, 2**31 - 1), delta=st.integers(0, 2**31 - 1))
def test_sequences_are_the_scalar_rule(base, delta):
    assert int(_sequences(np.array([base]), np.array([delta]))[0]) == _sequence(base, delta)


@pytest.mark.parametrize("name", ["x.index", "x.timeindex"])
def test_other_files_take_the_line_by_line_path(tmp_path, name):
    (tmp_path / name).write_bytes(b"")
    assert _log_text(tmp_path / name, True, None) is None
