"""verify_segment's error on index entries past the whole batches says where they start: the
damaged batch's position after a torn write, the end of the log after a cut on a batch
boundary. The batches and the entries are read with the standard-library model of
tests/kafka/test_damage.py (Kafka's record batch and index layouts), not with rmqlab's reader."""
from __future__ import annotations

from rmqlab.kafka.rebuild import verify_segment
from tests.kafka.test_damage import copy_partition, index_entries, original

NAME = "stock-market-batch-0"


def _offset_index_error(r, log) -> str:
    [error] = [e for e in r.errors if e.startswith(f"{log.with_suffix('.index')}: entry ")]
    return error


def test_entries_past_a_torn_batch_are_placed_at_the_damaged_batch(tmp_path):
    data, batches, _ = original(NAME)
    log = copy_partition(NAME, tmp_path)
    positions = [p for _, p in index_entries(log.with_suffix(".index"), "index")]
    # cut inside the batch at the middle entry's position: that batch is torn, and the entries
    # from it on point at or past its start
    start = positions[len(positions) // 2]
    log.write_bytes(data[:start + 10])
    r = verify_segment(log)
    assert r.damage is not None and r.log_bytes == start
    assert f"at positions from byte {start:,}, the damaged batch's, on" in _offset_index_error(r, log)


def test_entries_past_a_cut_on_a_batch_boundary_are_placed_at_the_end_of_the_log(tmp_path):
    data, batches, _ = original(NAME)
    log = copy_partition(NAME, tmp_path)
    positions = [p for _, p in index_entries(log.with_suffix(".index"), "index")]
    start = positions[len(positions) // 2]
    assert start in [b[0] for b in batches]              # an entry names a batch's first byte
    log.write_bytes(data[:start])
    r = verify_segment(log)
    assert r.damage is None and r.log_bytes == start
    assert f"at positions from byte {start:,}, the end of the log, on" in _offset_index_error(r, log)


def test_restart_evidence_the_index_entries_do_not_show_is_a_note_for_its_offset(tmp_path):
    # Kafka 3.6 writes a producer-state snapshot at the log end offset when the log closes
    # (UnifiedLog.close), and LogSegment.append's bytes-since-last-entry count starts again in a
    # segment reopened after a restart: the real partition's 14910.snapshot is such a stop, and
    # the offset index entries show it. A snapshot file copied to 13510, a batch start where the
    # broker did not stop, is evidence the entries do not show: a note naming 13510, not 14910
    data, batches, _ = original(NAME)
    log = copy_partition(NAME, tmp_path)
    assert 13510 in [b[2] for b in batches] and 14910 in [b[2] for b in batches]
    (log.parent / f"{13510:020d}.snapshot").write_bytes((log.parent / f"{14910:020d}.snapshot").read_bytes())
    r = verify_segment(log)
    assert [x.offset for x in r.restarts] == [14910]
    shown = [n for n in r.notes if n.startswith("restart evidence at offset")]
    assert len(shown) == 1 and shown[0].startswith("restart evidence at offset 13510 (")
