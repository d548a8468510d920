"""The partition directory's text files: the real ones read to what their READMEs state, a
test-side writer of Kafka's CheckpointFile layout round-trips, and bad text is a typed error."""
from __future__ import annotations

import base64
import json
import uuid

import kafka_stdlib as ks
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import require_real_data

from rmqlab.errors import FormatError, TruncatedFileError
from rmqlab.kafka.checkpoints import (
    LEADER_EPOCH_CHECKPOINT,
    PARTITION_METADATA,
    QUORUM_STATE,
    read_leader_epoch_checkpoint,
    read_partition_metadata,
    read_quorum_state,
)

KAFKA = "kafka"


@pytest.mark.realdata
@pytest.mark.parametrize("partition, readme", [
    # README: "`leader-epoch-checkpoint`: epoch 1 from offset 0, epoch 2 from offset 913"
    ("kraft-metadata-restart/__cluster_metadata-0", [(1, 0), (2, 913)]),
    # README: "`leader-epoch-checkpoint`: six epochs (0@0, 1@9, 3@10, 5@12, 6@13, 7@14)"
    ("idempotent-gzip/lsx1-0", [(0, 0), (1, 9), (3, 10), (5, 12), (6, 13), (7, 14)]),
    # the README names the file without its epochs: the test's own parse of the text alone
    ("producer-state-snapshots/client.order.report-0", None),
    ("producer-state-snapshots/__cluster_metadata-0", None),
])
def test_real_leader_epoch_checkpoints(partition, readme):
    path = require_real_data(f"{KAFKA}/{partition}/{LEADER_EPOCH_CHECKPOINT}")
    epochs = ks.read_checkpoint_text(path)        # version line, count line, "epoch offset" lines
    assert len(epochs) >= 2
    if readme is not None:
        assert epochs == readme
    df = read_leader_epoch_checkpoint(path)
    assert list(map(tuple, df.values.tolist())) == epochs
    assert df.dtypes.tolist() == ["int64", "int64"]


@pytest.mark.realdata
def test_real_partition_metadata_and_quorum_state():
    # the truth is the files' text, read here with the standard library (no README lists it)
    lsx = require_real_data(f"{KAFKA}/idempotent-gzip/lsx1-0/{PARTITION_METADATA}")
    text = ks.read_partition_metadata_text(lsx)
    meta = read_partition_metadata(lsx)
    assert meta["version"] == int(text["version"]) and meta["topic_id"] == text["topic_id"]
    kraft = require_real_data(f"{KAFKA}/kraft-metadata-restart/__cluster_metadata-0")
    kraft_text = ks.read_partition_metadata_text(kraft / PARTITION_METADATA)
    # the metadata topic's fixed id (Uuid.METADATA_TOPIC_ID: 0...01)
    assert kraft_text["topic_id"] == base64.urlsafe_b64encode(uuid.UUID(int=1).bytes).decode().rstrip("=")
    assert read_partition_metadata(kraft / PARTITION_METADATA)["topic_uuid"] == "00000000-0000-0000-0000-000000000001"
    want = json.loads((kraft / QUORUM_STATE).read_text())
    state = read_quorum_state(kraft / QUORUM_STATE)
    assert (state["leaderId"], state["leaderEpoch"], state["votedId"], state["currentVoters"]) == (
        want["leaderId"], want["leaderEpoch"], want["votedId"], want["currentVoters"])
    # README: "epoch 2 from offset 913": the leader epoch the quorum state holds is the last one
    last_epoch = int(read_leader_epoch_checkpoint(kraft / LEADER_EPOCH_CHECKPOINT)["epoch"].iloc[-1])
    assert want["leaderEpoch"] == 2 == last_epoch


def write_epochs(path, rows, version=0):
    # CheckpointFile: version line, count line, one "epoch offset" line each
    path.write_text("\n".join([str(version), str(len(rows))] + [f"{e} {o}" for e, o in rows]) + "\n")


@settings(max_examples=50, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1)), max_size=30))
def test_leader_epoch_round_trip(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("e") / LEADER_EPOCH_CHECKPOINT
    write_epochs(path, rows)
    assert list(map(tuple, read_leader_epoch_checkpoint(path).values.tolist())) == rows


@settings(max_examples=30, deadline=None)
@given(raw=st.binary(min_size=16, max_size=16))
def test_partition_metadata_round_trip(tmp_path_factory, raw):
    text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    path = tmp_path_factory.mktemp("m") / PARTITION_METADATA
    path.write_text(f"version: 0\ntopic_id: {text}")
    assert read_partition_metadata(path) == {"version": 0, "topic_id": text, "topic_uuid": str(uuid.UUID(bytes=raw))}


@pytest.mark.parametrize("text, error, field, offset", [
    ("", TruncatedFileError, "header", 0),
    ("1\n0\n", FormatError, "version", 0),
    ("0\n2\n1 0\n", FormatError, "count", 2),
    ("0\n1\n1\n", FormatError, "entry", 4),
    ("0\n1\n1 x\n", FormatError, "startOffset", 4),
    ("zero\n0\n", FormatError, "version", 0),
    # CheckpointFile's own line rules (Kafka 3.6), where Python's splitlines/strip/int are looser;
    # found by the kafka-textfiles fuzz target's model
    ("0\n1\x0b0 0\n", FormatError, "count", 2),        # readLine ends lines at \n and \r only
    ("0\n1\n5 12\n\n", FormatError, "entry", 9),      # a blank line is a malformed entry
    (" 0\n0\n", FormatError, "version", 0),             # Integer.parseInt takes no spaces
    ("0\n1\n1_0 5\n", FormatError, "epoch", 4),         # nor underscores
    ("0\n1\n2147483648 5\n", FormatError, "epoch", 4),  # an int epoch
])
def test_bad_leader_epoch_checkpoints(tmp_path, text, error, field, offset):
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_text(text)
    with pytest.raises(error) as e:
        read_leader_epoch_checkpoint(path)
    assert type(e.value) is error and e.value.field == field and e.value.offset == offset
    assert e.value.path == str(path)


@pytest.mark.parametrize("text, field", [
    ("version: 0\n", "topic_id"),
    ("version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", "version"),
    ("version: 0\ntopic_id: short", "topic_id"),
    ("version 0\n", "line"),
])
def test_bad_partition_metadata(tmp_path, text, field):
    path = tmp_path / PARTITION_METADATA
    path.write_text(text)
    with pytest.raises(FormatError) as e:
        read_partition_metadata(path)
    assert e.value.field == field


@pytest.mark.parametrize("state, field", [
    ("not json", "json"),
    ("[1]", "json"),
    (json.dumps({"leaderEpoch": 1, "data_version": 7}), "data_version"),
    (json.dumps({"leaderId": 1, "data_version": 0}), "leaderEpoch"),
    ("[" * 100_000, "json"),
    # found by the fuzzer: Python refuses to convert integers of more than 4300 digits
    ('{"leaderEpoch": ' + "9" * 5000 + ', "data_version": 0}', "json"),
])
def test_bad_quorum_state(tmp_path, state, field):
    path = tmp_path / QUORUM_STATE
    path.write_text(state)
    with pytest.raises(FormatError) as e:
        read_quorum_state(path)
    assert e.value.field == field


def test_binary_garbage_is_a_format_error(tmp_path):
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_bytes(b"0\n1\n\xff\xfe 3\n")
    with pytest.raises(FormatError) as e:
        read_leader_epoch_checkpoint(path)
    assert e.value.field == "text" and e.value.offset == 4
