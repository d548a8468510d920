"""Consumer groups of an offline Kafka log directory: committed offsets, end offsets and lag.

What ``kafka-consumer-groups --describe`` asks a running broker, answered from the files:
each group's committed offsets are read from the ``__consumer_offsets-*`` partitions present
(:func:`rmqlab.kafka.internal_topics.committed_offsets`: the latest record per key wins, a
tombstone deletes), each partition's end offset from its folder
(:func:`rmqlab.kafka.logdir.log_end_offset`), and the lag is their difference. The group's
state, protocol, generation and members come from its latest group-metadata record, as the
group coordinator loads them (``GroupMetadataManager.doLoadGroupsAndOffsets``, Kafka 3.6.2):

- the latest metadata record has members: ``Stable``; none: ``Empty``;
- the latest one is a tombstone, or there is none, but offsets are committed: ``Empty`` (the
  coordinator loads such a group from its offsets alone, "simple" consumers' groups);
- a tombstone and no offsets: ``Dead`` (the coordinator does not load it; listed so that its
  last generation shows).

Not modelled: offsets committed inside a transaction (``sendOffsetsToTransaction``) count
when written, while the coordinator holds them back until the transaction's COMMIT marker and
drops them on ABORT; the records of KIP-848 consumer groups (Kafka 3.7+, record types 3-8)
are not read for the state.

>>> import tempfile, pathlib
>>> from rmqlab.kafka.log import KafkaRecord, write_segment
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> key = bytes.fromhex("0001") + b"\\x00\\x01g" + b"\\x00\\x01t" + bytes(4)
>>> value = bytes.fromhex("0001") + (3).to_bytes(8, "big") + bytes(2) + bytes(8) + bytes(8)
>>> _ = write_segment(d / "__consumer_offsets-0", 0, [KafkaRecord(0, 1, key, value)])
>>> _ = write_segment(d / "t-0", 0, [KafkaRecord(i, 1, None, b"v") for i in range(10)])
>>> consumer_lag(d)[["group", "topic", "partition", "committed_offset", "log_end_offset", "lag", "state"]
...                 ].values.tolist()
[['g', 't', 0, 3, 10, 7, 'Empty']]
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from rmqlab.errors import RmqlabError
from rmqlab.kafka.internal_topics import OFFSETS_TOPIC, committed_offsets, group_metadata
from rmqlab.kafka.logdir import is_log_dir, log_end_offset, parse_partition_dir_name, partition_dirs

__all__ = ["LAG_COLUMNS", "NOT_HERE", "consumer_lag", "group_states"]

#: the note of a committed partition whose folder is not in the directories read
NOT_HERE = "partition not here"

LAG_COLUMNS = ["group", "topic", "partition", "committed_offset", "log_end_offset", "lag", "note", "state",
               "protocol_type", "protocol", "generation", "member_count", "leader", "consumer_id", "client_id",
               "client_host", "commit_timestamp", "metadata", "offsets_partition", "metadata_record_offset"]

_STATE_COLUMNS = ["group", "state", "protocol_type", "protocol", "generation", "member_count", "leader", "members",
                  "offsets_partition", "metadata_record_offset"]


def _dirs(log_dirs) -> list[Path]:
    if isinstance(log_dirs, (str, os.PathLike)):
        return [Path(log_dirs)]
    return [Path(d) for d in log_dirs]


def _folders(log_dirs: Iterable[Path]) -> dict[tuple[str, int], Path]:
    """Every partition folder of the directories, by (topic, partition). A partition folder
    given itself stands for its parent log directory (its siblings are looked at)."""
    out: dict[tuple[str, int], Path] = {}
    for d in log_dirs:
        if not d.is_dir():
            raise NotADirectoryError(f"{d}: not a directory")
        root = d if is_log_dir(d) else d.parent
        for folder, topic, partition, state in partition_dirs(root).itertuples(index=False):
            if state == "" or (state == "future" and (topic, int(partition)) not in out):
                out.setdefault((topic, int(partition)), folder)
    return out


def _offsets_folders(log_dirs: list[Path], folders: dict[tuple[str, int], Path]) -> list[tuple[int, Path]]:
    picked = {}
    for d in log_dirs:
        parsed = parse_partition_dir_name(d.name)
        if not is_log_dir(d) and parsed and parsed[0] == OFFSETS_TOPIC:
            picked[parsed[1]] = d     # a __consumer_offsets partition given itself: that one only
    if not picked:
        picked = {p: f for (t, p), f in folders.items() if t == OFFSETS_TOPIC}
    return sorted(picked.items())


def _state_rows(part: int, folder: Path, committed: pd.DataFrame) -> list[dict[str, Any]]:
    meta = group_metadata(folder)
    latest = meta.drop_duplicates("group", keep="last")
    live = meta[~meta["tombstone"].to_numpy(bool)].drop_duplicates("group", keep="last")
    before = dict(zip(live["group"], live["generation"].tolist()))
    with_offsets = set(committed["group"])
    rows = []
    for r in latest.to_dict("records"):
        if r["tombstone"]:
            state = "Empty" if r["group"] in with_offsets else "Dead"
            # a dead group shows the generation it ended at (the tombstone holds none), when kept
            rows.append({"group": r["group"], "state": state, "protocol_type": None, "protocol": None,
                         "generation": 0 if state == "Empty" else before.get(r["group"]), "member_count": 0,
                         "leader": None, "members": [], "offsets_partition": part,
                         "metadata_record_offset": r["record_offset"]})
            continue
        rows.append({"group": r["group"], "state": "Stable" if r["member_count"] else "Empty",
                     # GroupMetadata.loadGroup: an empty protocolType is None
                     "protocol_type": r["protocol_type"] or None, "protocol": r["protocol"],
                     "generation": r["generation"], "member_count": r["member_count"], "leader": r["leader"],
                     "members": r["members"], "offsets_partition": part,
                     "metadata_record_offset": r["record_offset"]})
    for g in sorted(with_offsets - set(latest["group"])):
        rows.append({"group": g, "state": "Empty", "protocol_type": None, "protocol": None, "generation": 0,
                     "member_count": 0, "leader": None, "members": [], "offsets_partition": part,
                     "metadata_record_offset": None})
    return rows


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=columns)
    for c in ("partition", "committed_offset", "log_end_offset", "lag", "generation", "member_count",
              "commit_timestamp", "offsets_partition", "metadata_record_offset"):
        if c in df:
            df[c] = df[c].astype("Int64")
    if "partition" in df:
        df["partition"] = df["partition"].astype("Int32")
    for c in ("topic", "note", "protocol_type", "protocol", "leader", "consumer_id", "client_id", "client_host",
              "metadata"):
        if c in df:
            df[c] = df[c].astype(object).mask(df[c].isna(), None)
    return df


def _read(log_dirs) -> tuple[list[dict[str, Any]], pd.DataFrame, dict[tuple[str, int], Path]]:
    dirs = _dirs(log_dirs)
    folders = _folders(dirs)
    states: list[dict[str, Any]] = []
    commits = []
    for part, folder in _offsets_folders(dirs, folders):
        c = committed_offsets(folder)
        c["offsets_partition"] = part
        commits.append(c)
        states += _state_rows(part, folder, c)
    committed = pd.concat(commits, ignore_index=True) if commits else pd.DataFrame(
        columns=["group", "topic", "partition", "offset", "metadata", "commit_timestamp", "offsets_partition"])
    return states, committed, folders


def group_states(log_dirs) -> pd.DataFrame:
    """One row a group named in the ``__consumer_offsets`` partitions of `log_dirs`: its state
    as the coordinator loads it (module docstring), protocol, generation and members of its
    latest group-metadata record.

    Cost: two record walks of every ``__consumer_offsets`` partition present
    (:func:`~rmqlab.kafka.internal_topics.committed_offsets` and
    :func:`~rmqlab.kafka.internal_topics.group_metadata`; about 10 ms a 14 KB segment).

    >>> import tempfile, pathlib
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> key = bytes.fromhex("0002") + b"\\x00\\x01g"
    >>> _ = write_segment(d / "__consumer_offsets-3", 0, [KafkaRecord(0, 1, key, None)])
    >>> group_states(d)[["group", "state", "offsets_partition"]].values.tolist()
    [['g', 'Dead', 3]]

    `log_dirs`: a log directory, a ``__consumer_offsets-N`` folder, or a list of them.
    Columns: ``group``, ``state``, ``protocol_type``, ``protocol``, ``generation``,
    ``member_count``, ``leader``, ``members`` (dicts by Kafka's JSON names),
    ``offsets_partition``, ``metadata_record_offset`` (<NA> without a metadata record).
    Raises what :func:`~rmqlab.kafka.internal_topics.group_records` raises, and
    NotADirectoryError.
    """
    states, _, _ = _read(log_dirs)
    return _frame(sorted(states, key=lambda r: r["group"]), _STATE_COLUMNS)


def _assigned(members: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """(topic, partition) -> the member the latest generation assigned it to (consumer
    protocol only: the assignment bytes decoded)."""
    out = {}
    for m in members:
        asg = m.get("assignment")
        if isinstance(asg, dict):
            for tp in asg["data"]["assignedPartitions"]:
                for p in tp["partitions"]:
                    out[tp["topic"], int(p)] = m
    return out


def consumer_lag(log_dirs) -> pd.DataFrame:
    """One row a (group, topic, partition) with a committed offset in the ``__consumer_offsets``
    partitions of `log_dirs`, and one row (``topic`` None) a group without any: the committed
    offset, the partition's log end offset, their difference and the group's state, as
    ``kafka-consumer-groups --describe`` shows them.

    Units: offsets (lag in records of offset space: compaction or transaction markers may make
    fewer records); ``commit_timestamp`` ms since the epoch. Cost: :func:`group_states` plus
    the batch-header walk of the last segment of every partition committed to
    (:func:`~rmqlab.kafka.logdir.log_end_offset`).

    >>> import tempfile, pathlib
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> key = bytes.fromhex("0001") + b"\\x00\\x01g" + b"\\x00\\x04gone" + bytes(4)
    >>> value = bytes.fromhex("0001") + (3).to_bytes(8, "big") + bytes(2) + bytes(8) + bytes(8)
    >>> _ = write_segment(d / "__consumer_offsets-0", 0, [KafkaRecord(0, 1, key, value)])
    >>> consumer_lag(d)[["topic", "committed_offset", "log_end_offset", "lag", "note"]].values.tolist()
    [['gone', 3, <NA>, <NA>, 'partition not here']]

    `log_dirs` as :func:`group_states`; partitions are looked for in all of them. Columns:
    :data:`LAG_COLUMNS`: ``note`` says why ``log_end_offset`` / ``lag`` are <NA> ("partition
    not here", "no segments", "unreadable: ..."); ``consumer_id`` / ``client_id`` /
    ``client_host`` name the member the latest generation assigned the partition to (None
    when none or not the consumer protocol); ``offsets_partition`` is the
    ``__consumer_offsets`` partition holding the group. Raises as :func:`group_states`.
    """
    states, committed, folders = _read(log_dirs)
    by_group = {s["group"]: s for s in states}
    ends: dict[tuple[str, int], tuple[int | None, str | None]] = {}
    rows = []
    for g in sorted(by_group):
        s = by_group[g]
        assigned = _assigned(s["members"])
        base = {k: s[k] for k in ("group", "state", "protocol_type", "protocol", "generation", "member_count",
                                  "leader", "offsets_partition", "metadata_record_offset")}
        mine = committed[committed["group"] == g]
        if not len(mine):
            rows.append(base)
            continue
        for c in mine.to_dict("records"):
            tp = (c["topic"], int(c["partition"]))
            if tp not in ends:
                ends[tp] = _end(folders.get(tp))
            end, note = ends[tp]
            m = assigned.get(tp, {})
            rows.append({**base, "topic": tp[0], "partition": tp[1], "committed_offset": c["offset"],
                         "log_end_offset": end, "lag": None if end is None else end - int(c["offset"]),
                         "note": note, "consumer_id": m.get("memberId"), "client_id": m.get("clientId"),
                         "client_host": m.get("clientHost"), "commit_timestamp": c["commit_timestamp"],
                         "metadata": c["metadata"]})
    return _frame(rows, LAG_COLUMNS)


def _end(folder: Path | None) -> tuple[int | None, str | None]:
    if folder is None:
        return None, NOT_HERE
    try:
        end = log_end_offset(folder)
    except (RmqlabError, OSError) as e:
        return None, f"unreadable: {e}"
    return (end, None) if end is not None else (None, "no segments")
