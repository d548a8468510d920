"""The small text files of a Kafka partition directory: ``leader-epoch-checkpoint``,
``partition.metadata`` and KRaft's ``quorum-state``.

Mirrors ``org.apache.kafka.server.common.CheckpointFile`` / ``LeaderEpochCheckpointFile``
(a version line, a count line, then one ``epoch startOffset`` line an epoch; version 0 since
Kafka 0.11), ``PartitionMetadataFile`` (``version: 0`` and ``topic_id: <base64 UUID>``, Kafka
2.8+) and ``org.apache.kafka.raft.QuorumStateData`` (one JSON object; ``data_version`` 0 and 1),
read at Kafka 2.8 and 3.9.

The leader-epoch checkpoint is also evidence for the index rules: a new epoch starts where a
new leader took over the partition, which is where a broker restarted or another replica
began to append (:mod:`rmqlab.kafka.rebuild` uses it).

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / LEADER_EPOCH_CHECKPOINT
>>> _ = p.write_text("0\\n2\\n1 0\\n2 913\\n")
>>> read_leader_epoch_checkpoint(p).values.tolist()
[[1, 0], [2, 913]]
"""
from __future__ import annotations

import base64
import json
import os
import re
import uuid
from typing import Any

import pandas as pd

from rmqlab.errors import FormatError, TruncatedFileError

__all__ = ["LEADER_EPOCH_CHECKPOINT", "PARTITION_METADATA", "QUORUM_STATE",
           "read_leader_epoch_checkpoint", "read_partition_metadata", "read_quorum_state"]

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
QUORUM_STATE = "quorum-state"

# LeaderEpochCheckpointFile.CURRENT_VERSION, PartitionMetadataFile's version
_EPOCH_CHECKPOINT_VERSION = 0
_PARTITION_METADATA_VERSION = 0
# QuorumStateData's versions a 3.x broker writes (1 adds the voters' directory ids, KIP-853)
_QUORUM_STATE_VERSIONS = (0, 1)


def _lines(path) -> list[str]:
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise FormatError(f"not UTF-8 text ({e.reason})", path=path, offset=e.start, field="text") from None


def _offset_of_line(lines: list[str], n: int) -> int:
    return sum(len(line.encode()) + 1 for line in lines[:n])


def read_leader_epoch_checkpoint(path: str | os.PathLike) -> pd.DataFrame:
    """The leader epochs of a partition: one row an epoch, ``epoch`` and ``start_offset`` (the
    first offset the leader of that epoch appended), in file order.

    Cost: reads the whole (tiny) file.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / LEADER_EPOCH_CHECKPOINT
    >>> _ = p.write_text("0\\n1\\n5 12\\n")
    >>> read_leader_epoch_checkpoint(p).to_dict("records")
    [{'epoch': 5, 'start_offset': 12}]

    Read as CheckpointFile.CheckpointReadBuffer reads it (Kafka 3.6): lines as
    BufferedReader.readLine ends them (``\\n``, ``\\r``, ``\\r\\n``), the version and count
    lines parsed as they stand (Integer.parseInt: no spaces), every later line an entry (a
    blank one too) split on ``\\s+`` into an int epoch and a long offset.

    Raises :class:`~rmqlab.errors.FormatError` naming the line's byte offset for a version
    other than 0, a count that disagrees with the lines, or a malformed line (the broker's
    ``CheckpointFile`` refuses the same); :class:`~rmqlab.errors.TruncatedFileError` when the
    header lines are missing.
    """
    lines, starts = _java_lines(path)
    if len(lines) < 2:
        raise TruncatedFileError(f"{len(lines)} line(s): a checkpoint starts with a version and a count line",
                                 path=path, offset=0, field="header")

    def number(n: int, text: str, field: str, bits: int = 32) -> int:
        # Integer.parseInt / Long.parseLong: a sign and decimal digits alone (Python's int() would
        # also take spaces and underscores), within the Java type's range
        if len(text) <= 24 and _JAVA_INTEGER.fullmatch(text) and -(1 << (bits - 1)) <= int(text) < 1 << (bits - 1):
            return int(text)
        raise FormatError(f"line {n + 1} {lines[n]!r}: {field} is not a number", path=path,
                          offset=starts[n], field=field)

    version = number(0, lines[0], "version")
    if version != _EPOCH_CHECKPOINT_VERSION:
        raise FormatError(f"checkpoint version {version}, not {_EPOCH_CHECKPOINT_VERSION}", path=path, offset=0,
                          field="version")
    count = number(1, lines[1], "count")
    rows = []
    for n, line in enumerate(lines[2:], start=2):
        parts = _JAVA_WHITESPACE.split(line)
        while parts and not parts[-1]:   # String.split drops trailing empty strings
            parts.pop()
        if len(parts) != 2:
            raise FormatError(f"line {n + 1} {line!r}: expected 'epoch startOffset'", path=path,
                              offset=starts[n], field="entry")
        rows.append((number(n, parts[0], "epoch"), number(n, parts[1], "startOffset", 64)))
    if count != len(rows):
        raise FormatError(f"the count line says {count} epochs but {len(rows)} lines follow", path=path,
                          offset=starts[1], field="count")
    return pd.DataFrame(rows, columns=["epoch", "start_offset"], dtype="int64")


#: Integer.parseInt's text: an optional sign, then decimal digits (Character.digit: any script's)
_JAVA_INTEGER = re.compile(r"[+-]?\d+")
#: java.util.regex's \s: ASCII whitespace only
_JAVA_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")


def _java_lines(path) -> tuple[list[str], list[int]]:
    """The file's lines as BufferedReader.readLine returns them (ended by \\n, \\r or \\r\\n; a
    final terminator adds no empty line), and the byte offset each starts at."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(f"not UTF-8 text ({e.reason})", path=path, offset=e.start, field="text") from None
    lines, starts, at = [], [], 0
    for m in re.finditer(rb"\r\n|\r|\n", raw):
        lines.append(raw[at:m.start()].decode("utf-8"))
        starts.append(at)
        at = m.end()
    if at < len(raw):
        lines.append(raw[at:].decode("utf-8"))
        starts.append(at)
    return lines, starts


def read_partition_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """``partition.metadata``: the file's ``version`` and the topic's ``topic_id`` as Kafka prints
    it (base64 URL-safe, no padding) and as a UUID.

    Cost: reads the whole (tiny) file.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / PARTITION_METADATA
    >>> _ = p.write_text("version: 0\\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
    >>> read_partition_metadata(p)
    {'version': 0, 'topic_id': 'AAAAAAAAAAAAAAAAAAAAAQ', 'topic_uuid': '00000000-0000-0000-0000-000000000001'}

    Raises :class:`~rmqlab.errors.FormatError` for a missing or malformed line.
    """
    lines = _lines(path)
    fields: dict[str, tuple[str, int]] = {}
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise FormatError(f"line {n + 1} {line!r}: expected 'name: value'", path=path,
                              offset=_offset_of_line(lines, n), field="line")
        fields[name.strip()] = (value.strip(), _offset_of_line(lines, n))
    for name in ("version", "topic_id"):
        if name not in fields:
            raise FormatError(f"no '{name}:' line", path=path, offset=0, field=name)
    version_text, at = fields["version"]
    if version_text != str(_PARTITION_METADATA_VERSION):
        raise FormatError(f"version {version_text!r}, not {_PARTITION_METADATA_VERSION}", path=path, offset=at,
                          field="version")
    topic_id, at = fields["topic_id"]
    try:
        raw = base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4))
    except ValueError:
        raw = b""
    if len(raw) != 16:
        raise FormatError(f"topic_id {topic_id!r} is not a base64 16-byte UUID", path=path, offset=at,
                          field="topic_id")
    return {"version": _PARTITION_METADATA_VERSION, "topic_id": topic_id, "topic_uuid": str(uuid.UUID(bytes=raw))}


def read_quorum_state(path: str | os.PathLike) -> dict[str, Any]:
    """KRaft's ``quorum-state``: the JSON object the raft client persists (``clusterId``,
    ``leaderId``, ``leaderEpoch``, ``votedId``, ``currentVoters`` ..., ``data_version``).

    Cost: reads the whole (tiny) file.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / QUORUM_STATE
    >>> _ = p.write_text('{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
    ...                  '"currentVoters":[{"voterId":1}],"data_version":0}')
    >>> s = read_quorum_state(p); s["leaderId"], s["leaderEpoch"], s["currentVoters"]
    (1, 2, [{'voterId': 1}])

    Raises :class:`~rmqlab.errors.FormatError` for text that is not a JSON object, a
    ``data_version`` Kafka does not write, or a missing ``leaderEpoch``.
    """
    text = "\n".join(_lines(path))
    try:
        state = json.loads(text)
    except json.JSONDecodeError as e:
        raise FormatError(f"not JSON ({e.msg})", path=path, offset=e.pos, field="json") from None
    except ValueError as e:  # an integer longer than sys.get_int_max_str_digits()
        raise FormatError(f"not JSON a broker writes ({e})", path=path, offset=0, field="json") from None
    except RecursionError:
        raise FormatError("JSON nested too deeply to be a quorum state", path=path, offset=0, field="json") from None
    if not isinstance(state, dict):
        raise FormatError("not a JSON object", path=path, offset=0, field="json")
    version = state.get("data_version")
    if version not in _QUORUM_STATE_VERSIONS:
        raise FormatError(f"data_version {version!r} is not one Kafka writes {_QUORUM_STATE_VERSIONS}",
                          path=path, offset=0, field="data_version")
    if not isinstance(state.get("leaderEpoch"), int):
        raise FormatError("no integer leaderEpoch", path=path, offset=0, field="leaderEpoch")
    return state

