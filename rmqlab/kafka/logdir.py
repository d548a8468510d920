"""A Kafka log directory's own files, and how they stand against the partitions beside them.

A broker's ``log.dirs`` entry holds one folder a partition (``<topic>-<partition>``) and:

=====================================  ==========================================================
``recovery-point-offset-checkpoint``   per partition, the offset up to which the log was flushed
                                       (``LogManager``); a restart after an unclean shutdown
                                       re-reads every segment from the one holding it on
``replication-offset-checkpoint``      per partition, the high watermark (``ReplicaManager``)
``log-start-offset-checkpoint``        per partition whose log start was moved past its first
                                       segment's base offset (retention, DeleteRecords)
``cleaner-offset-checkpoint``          per compacted partition, the first offset the log cleaner
                                       has not cleaned (``LogCleanerManager``)
``meta.properties``                    the broker's identity: ``version``, ``broker.id`` (v0) or
                                       ``node.id`` (v1, KRaft), ``cluster.id``, ``directory.id``
``.kafka_cleanshutdown``               present after a clean shutdown: the next start skips
                                       recovery; empty up to 3.6, ``{"version":0,"brokerEpoch":N}``
                                       from 3.7 (``CleanShutdownFileHandler``, KIP-966)
=====================================  ==========================================================

The four checkpoints share one text layout, ``org.apache.kafka.server.common.CheckpointFile``
with ``kafka.server.checkpoints.OffsetCheckpointFile.Formatter`` (read at Kafka 3.6.2): a
version line (``0``), a count line, then one ``topic partition offset`` line a partition,
split on whitespace runs. The broker's reader takes an empty file (or one without a count
line) as no entries, and refuses another version, a count that disagrees with the lines, a
line without exactly three fields and a number that does not parse: so does
:func:`read_offset_checkpoint`, with a :class:`~rmqlab.errors.FormatError` naming the line's
byte offset and the field. ``meta.properties`` is a ``java.util.Properties`` file read as
ISO-8859-1 (``Properties.load(InputStream)``) and judged as ``MetaProperties`` of Kafka 3.6
(``kafka.server.RawMetaProperties``) and 3.7 (``org.apache.kafka.metadata.properties``) judge it.

How the broker uses them when it loads the directory (``kafka.log.LogManager.loadLogs`` /
``loadLog`` and ``kafka.log.LogLoader``, 3.6.2), which is what :func:`check_log_dir` holds
the files to:

- a partition without a recovery-point line starts from 0: after an unclean shutdown every
  segment is recovered; with one, the segments from the one holding the recovery point to the
  end are (``LogLoader.recoverLog``: each batch's CRC checked, indexes rebuilt, a bad tail
  truncated). With ``.kafka_cleanshutdown`` nothing is recovered and the recovery point becomes
  the log end offset. A clean shutdown flushes every log and checkpoints afterwards, so then
  each recovery point equals its log end offset. A recovery point past the log end offset
  means records the broker had flushed are not in the files (a problem);
- the log start offset loaded is ``max(checkpoint, first segment's base offset)`` (tiered
  storage aside); one past the log end offset makes the broker delete every segment and start
  the log empty at it (``deleteSegmentsIfLogStartGreaterThanLogEnd``: a problem);
- a high watermark past the log end offset names committed records the files lack (the broker
  lowers it to the log end offset: a problem); below the log start it is raised to it;
- a cleaner offset past the log end offset makes the cleaner start again from the log start
  ("data corruption at the end of the log", ``LogCleanerManager.cleanableOffsets``: a problem);
  below the log start it is reset there, as is usual for ``compact,delete`` topics (a note);
- a line naming a partition that is not here is skipped (the broker writes each checkpoint from
  the logs it holds, so such a folder was removed or not copied); ``__cluster_metadata`` is
  never in them (KRaft's raft log is not loaded by ``LogManager``);
- a sub-directory whose name is not ``topic-partition`` (``LocalLog.parseTopicPartitionName``),
  such as ``lost+found``, stops the broker from starting (a problem).

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / RECOVERY_POINT_CHECKPOINT).write_text("0\\n2\\nt 0 40\\n__consumer_offsets 7 3\\n")
>>> read_offset_checkpoint(d / RECOVERY_POINT_CHECKPOINT).values.tolist()
[['t', 0, 40], ['__consumer_offsets', 7, 3]]
"""
from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.errors import FormatError, RmqlabError
from rmqlab.kafka.dirfiles import FileCheck
from rmqlab.kafka.index import LOG_SUFFIX, base_offset_of

__all__ = [
    "RECOVERY_POINT_CHECKPOINT", "REPLICATION_OFFSET_CHECKPOINT", "LOG_START_OFFSET_CHECKPOINT",
    "CLEANER_OFFSET_CHECKPOINT", "OFFSET_CHECKPOINTS", "META_PROPERTIES", "CLEAN_SHUTDOWN", "LOG_DIR_FILES",
    "read_offset_checkpoint", "read_meta_properties", "read_clean_shutdown", "parse_partition_dir_name",
    "is_log_dir", "partition_dirs", "log_end_offset", "log_dir_partitions", "check_log_dir", "verify_log_dir",
]

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"   # LogManager.RecoveryPointCheckpointFile
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"  # ReplicaManager.HighWatermarkFilename
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"      # LogManager.LogStartOffsetCheckpointFile
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"          # LogCleanerManager.offsetCheckpointFile
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"                          # LogLoader.CleanShutdownFile

#: checkpoint file -> (the column it fills in :func:`log_dir_partitions`, what an offset in it is)
OFFSET_CHECKPOINTS = {
    RECOVERY_POINT_CHECKPOINT: ("recovery_point", "recovery point"),
    REPLICATION_OFFSET_CHECKPOINT: ("high_watermark", "high watermark"),
    LOG_START_OFFSET_CHECKPOINT: ("log_start_checkpoint", "log start offset"),
    CLEANER_OFFSET_CHECKPOINT: ("cleaner_offset", "cleaner offset"),
}
#: every file a broker keeps at the top of a log directory (``.lock`` is the FileLock's file)
LOG_DIR_FILES = (*OFFSET_CHECKPOINTS, META_PROPERTIES, CLEAN_SHUTDOWN)

_CHECKPOINT_VERSION = 0            # OffsetCheckpointFile.CurrentVersion
_META_VERSIONS = (0, 1)            # MetaPropertiesVersion V0 (ZooKeeper), V1 (KRaft)
_CLEAN_SHUTDOWN_VERSION = 0        # CleanShutdownFileHandler.CURRENT_VERSION
_INT32 = (-2**31, 2**31 - 1)
_INT64 = (-2**63, 2**63 - 1)
# Java's Integer.parseInt / Long.parseLong: an optional sign, then decimal digits (Unicode
# digits included, as Character.digit takes them); no spaces, no underscores
_JAVA_INT = re.compile(r"[+-]?\d+")
# BufferedReader.readLine ends a line at \n, \r or \r\n; Pattern "\\s+" is [ \t\n\x0B\f\r]
_LINE_END = re.compile(r"\r\n|\r|\n")
_JAVA_SPACE = re.compile(r"[ \t\n\x0b\f\r]+")
# LocalLog.DeleteDirPattern / FutureDirPattern / StrayDirPattern: topic-partition.uniqueId-suffix
_SUFFIXED_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)-(delete|future|stray)$")
# LogManager skips it: the tiered-storage index cache, not a partition (RemoteIndexCache.DIR_NAME)
_REMOTE_INDEX_CACHE = "remote-log-index-cache"
_METADATA_TOPIC = "__cluster_metadata"


def _java_number(text: str, bounds: tuple[int, int]) -> int | None:
    if not _JAVA_INT.fullmatch(text):
        return None
    n = int(text)
    return n if bounds[0] <= n <= bounds[1] else None


def _text_lines(path: str | os.PathLike) -> tuple[list[str], list[int]]:
    """The file's lines as BufferedReader.readLine splits them, and each line's byte offset."""
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8")   # CheckpointFile reads with Files.newBufferedReader: UTF-8
    except UnicodeDecodeError as e:
        raise FormatError(f"not UTF-8 text ({e.reason})", path=path, offset=e.start, field="text") from None
    lines, starts, at = [], [], 0
    for m in _LINE_END.finditer(text):
        lines.append(text[at:m.start()])
        starts.append(at)
        at = m.end()
    if at < len(text):
        lines.append(text[at:])
        starts.append(at)
    # byte offsets of the character offsets, for the errors (the text is mostly ASCII)
    if len(raw) != len(text):
        starts = [len(text[:s].encode("utf-8")) for s in starts]
    return lines, starts


def read_offset_checkpoint(path: str | os.PathLike) -> pd.DataFrame:
    """One of the log directory's four offset checkpoints: one row a line, ``topic``,
    ``partition`` and ``offset``, in file order (the broker writes them in its map's order, so
    the order carries no meaning).

    Units: offsets. Cost: reads the whole file (about 40 bytes a partition).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / CLEANER_OFFSET_CHECKPOINT
    >>> _ = p.write_text("0\\n2\\n__consumer_offsets 9 9907\\n__consumer_offsets 32 192\\n")
    >>> read_offset_checkpoint(p).to_dict("records")[1]
    {'topic': '__consumer_offsets', 'partition': 32, 'offset': 192}
    >>> _ = p.write_text("")              # the broker's reader: no version line, no entries
    >>> len(read_offset_checkpoint(p))
    0

    ``df.attrs["duplicates"]`` lists the (topic, partition) named on more than one line (the
    broker keeps the last). Raises :class:`~rmqlab.errors.FormatError` naming the line's byte
    offset and the field (``version``, ``count``, ``entry``, ``partition``, ``offset``) where
    ``CheckpointFile.read`` refuses the file, and for text that is not UTF-8;
    FileNotFoundError when there is no file.
    """
    lines, starts = _text_lines(path)
    df = pd.DataFrame({"topic": pd.Series([], dtype=object), "partition": pd.Series([], dtype="int32"),
                       "offset": pd.Series([], dtype="int64")})
    df.attrs["duplicates"] = []
    if not lines:      # CheckpointReadBuffer.read: no version line, no entries
        return df

    def number(n: int, text: str, field: str, bounds: tuple[int, int]) -> int:
        v = _java_number(text, bounds)
        if v is None:
            raise FormatError(f"line {n + 1} {lines[n]!r}: {field} {text!r} is not a Java "
                              f"{'int' if bounds == _INT32 else 'long'}", path=path, offset=starts[n], field=field)
        return v

    version = number(0, lines[0], "version", _INT32)
    if version != _CHECKPOINT_VERSION:
        raise FormatError(f"checkpoint version {version}, not {_CHECKPOINT_VERSION} (Unrecognised version)",
                          path=path, offset=0, field="version")
    if len(lines) == 1:
        return df
    count = number(1, lines[1], "count", _INT32)
    topics, partitions, offsets = [], [], []
    for n in range(2, len(lines)):
        # Pattern.split drops trailing empty strings but keeps a leading one
        fields = _JAVA_SPACE.split(lines[n])
        while fields and fields[-1] == "":
            fields.pop()
        if len(fields) != 3:
            raise FormatError(f"line {n + 1} {lines[n]!r}: expected 'topic partition offset' (Malformed line)",
                              path=path, offset=starts[n], field="entry")
        topics.append(fields[0])
        partitions.append(number(n, fields[1], "partition", _INT32))
        offsets.append(number(n, fields[2], "offset", _INT64))
    if count != len(topics):
        raise FormatError(f"the count line says {count} entries but {len(topics)} lines follow",
                          path=path, offset=starts[1], field="count")
    df = pd.DataFrame({"topic": pd.Series(topics, dtype=object), "partition": pd.Series(partitions, dtype="int32"),
                       "offset": pd.Series(offsets, dtype="int64")})
    dup = df.duplicated(["topic", "partition"], keep="last")
    df.attrs["duplicates"] = sorted({(t, int(p)) for t, p in zip(df["topic"][dup], df["partition"][dup])})
    return df


# --------------------------------------------------------------------------- meta.properties

_PROPERTY_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    """java.util.Properties.loadConvert: \\uXXXX, \\t \\n \\r \\f, and any other char after a
    backslash stands for itself."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        c = text[i + 1]
        if c == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or not all(ch in "0123456789abcdefABCDEF" for ch in digits):
                raise ValueError(f"Malformed \\uxxxx encoding: {text[i:i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_PROPERTY_ESCAPES.get(c, c))
            i += 2
    return "".join(out)


def _logical_lines(text: str) -> list[tuple[str, int]]:
    """Properties.LineReader: natural lines joined where one ends in an odd number of
    backslashes (the next one's leading white space dropped); comments and blank lines
    skipped. Each logical line with the character offset it starts at."""
    out: list[tuple[str, int]] = []
    pending, start, at = "", -1, 0
    for m in [*_LINE_END.finditer(text), None]:
        end = len(text) if m is None else m.start()
        line = text[at:end]
        first = at
        at = len(text) + 1 if m is None else m.end()
        stripped = line.lstrip(" \t\f")
        if not pending:
            if not stripped or stripped[0] in "#!":
                if m is None:
                    break
                continue
            start = first
        body = stripped
        trailing = len(body) - len(body.rstrip("\\"))
        if trailing % 2 == 1:
            pending += body[:-1]
            if m is None:
                out.append((pending, start))
                break
            continue
        out.append((pending + body, start))
        pending = ""
        if m is None:
            break
    return out


def _split_property(line: str) -> tuple[str, str]:
    """The key ends at the first unescaped '=', ':' or white space; then white space, at most
    one '=' or ':', and white space again come before the value."""
    i, escaped = 0, False
    while i < len(line):
        c = line[i]
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in "=: \t\f":
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def read_meta_properties(path: str | os.PathLike) -> dict[str, Any]:
    """``meta.properties``: ``version``, ``node_id`` (``broker.id`` in version 0, ``node.id``
    in version 1), ``cluster_id``, ``directory_id`` (Kafka 3.7+, else None) and every
    ``properties`` as read.

    Cost: reads the whole (tiny) file.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / META_PROPERTIES
    >>> _ = p.write_text("#\\n#Tue Apr 07 22:08:28 UTC 2026\\nbroker.id=1\\nversion=0\\n"
    ...                  "cluster.id=vqwjEvyyRj2mnTIBDZpewA\\n")
    >>> m = read_meta_properties(p); m["version"], m["node_id"], m["cluster_id"], m["directory_id"]
    (0, 1, 'vqwjEvyyRj2mnTIBDZpewA', None)

    Raises :class:`~rmqlab.errors.FormatError` (offset: the property's line; field: its key)
    where the broker refuses the file: a version other than 0 or 1, a missing or non-integer
    ``broker.id`` (v0) / ``node.id`` (v1), no ``cluster.id``, a ``directory.id`` that is not a
    base64 UUID, a malformed ``\\uXXXX`` escape.
    """
    text = Path(path).read_bytes().decode("latin-1")    # Properties.load(InputStream): ISO-8859-1
    props: dict[str, str] = {}
    where: dict[str, int] = {}
    for line, start in _logical_lines(text):
        try:
            key, value = _split_property(line)
        except ValueError as e:
            raise FormatError(str(e), path=path, offset=start, field="escape") from None
        props[key], where[key] = value, start     # Properties.put: the last line of a key wins

    def integer(key: str, required: bool) -> int | None:
        if key not in props:
            if required:
                raise FormatError(f"no {key} property (Failed to find required property {key})", path=path,
                                  offset=0, field=key)
            return None
        v = _java_number(props[key], _INT32)
        if v is None:
            raise FormatError(f"{key}={props[key]!r} is not an int", path=path, offset=where[key], field=key)
        return v

    version = integer("version", False)
    version = 0 if version is None else version        # RawMetaProperties.version: 0 when absent
    if version not in _META_VERSIONS:
        raise FormatError(f"version {version}: Kafka writes 0 (ZooKeeper) or 1 (KRaft)", path=path,
                          offset=where.get("version", 0), field="version")
    node_id = integer("broker.id" if version == 0 else "node.id", True)
    if "cluster.id" not in props:
        raise FormatError("no cluster.id property (Failed to find required property cluster.id)", path=path,
                          offset=0, field="cluster.id")
    directory_id = props.get("directory.id")
    if directory_id is not None:
        raw = None
        try:
            import base64

            raw = base64.urlsafe_b64decode(directory_id + "=" * (-len(directory_id) % 4))
        except ValueError:
            pass
        if raw is None or len(raw) != 16:
            raise FormatError(f"directory.id {directory_id!r} is not a base64 16-byte UUID", path=path,
                              offset=where["directory.id"], field="directory.id")
        directory_id = f"{directory_id} ({uuid.UUID(bytes=raw)})"
    return {"version": version, "node_id": node_id, "cluster_id": props["cluster.id"], "directory_id": directory_id,
            "properties": props}


def read_clean_shutdown(path: str | os.PathLike) -> dict[str, Any]:
    """``.kafka_cleanshutdown``: whether it is there, and the broker epoch a 3.7+ broker wrote
    in it (``{"version":0,"brokerEpoch":N}``, KIP-966); ``version`` and ``broker_epoch`` are
    None for the empty marker of 0.8 to 3.6 and for content the broker could not read (it
    then logs at debug level and registers without an epoch; never an error), ``note`` says
    which.

    Cost: one ``stat``, and reads the (tiny) file.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> read_clean_shutdown(d / CLEAN_SHUTDOWN)["present"]
    False
    >>> _ = (d / CLEAN_SHUTDOWN).write_text('{"version":0,"brokerEpoch":42}')
    >>> r = read_clean_shutdown(d / CLEAN_SHUTDOWN); r["present"], r["version"], r["broker_epoch"]
    (True, 0, 42)

    Raises OSError only for a file that exists and cannot be read.
    """
    p = Path(path)
    out: dict[str, Any] = {"present": p.exists(), "version": None, "broker_epoch": None, "note": None}
    if not out["present"]:
        return out
    raw = p.read_bytes()
    if not raw:
        out["note"] = "empty: the marker of Kafka 0.8 to 3.6 (3.7+ writes the broker epoch in it)"
        return out
    try:
        content = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        content = None
    epoch = content.get("brokerEpoch") if isinstance(content, dict) else None
    if not isinstance(epoch, int) or isinstance(epoch, bool) or not _INT64[0] <= epoch <= _INT64[1]:
        out["note"] = (f"{len(raw)} bytes that are not the 3.7+ JSON with a brokerEpoch: the broker reads no "
                       "epoch from it (CleanShutdownFileHandler.read), the marker still counts")
        return out
    version = content.get("version")
    out["version"], out["broker_epoch"] = (version if isinstance(version, int) else None), epoch
    if out["version"] != _CLEAN_SHUTDOWN_VERSION:
        out["note"] = f"version {version!r}; Kafka 3.7+ writes {_CLEAN_SHUTDOWN_VERSION} (it ignores the field)"
    return out


# --------------------------------------------------------------------------- the partitions


def parse_partition_dir_name(name: str) -> tuple[str, int, str] | None:
    """``(topic, partition, state)`` of a partition folder's name as
    ``LocalLog.parseTopicPartitionName`` reads it, ``state`` being ``""`` (the log),
    ``"delete"`` (``topic-0.<id>-delete``: being deleted), ``"future"`` (being moved here from
    another log directory) or ``"stray"`` (KRaft, 3.7+: not assigned to this broker); None for
    a name the broker refuses.

    Cost: O(len(name)).

    >>> parse_partition_dir_name("__consumer_offsets-9"), parse_partition_dir_name("a-b-0.7c1e-delete")
    (('__consumer_offsets', 9, ''), ('a-b', 0, 'delete'))
    >>> parse_partition_dir_name("lost+found") is None
    True
    """
    state = ""
    for suffix in ("delete", "future", "stray"):
        if name.endswith("-" + suffix):
            if not _SUFFIXED_DIR.match(name):
                return None
            name, state = name[:name.rindex(".")], suffix
            break
    if "-" not in name:
        return None
    topic, _, number = name.rpartition("-")
    partition = _java_number(number, _INT32)
    if not topic or partition is None:
        return None
    return topic, partition, state


def _has_segments(d: Path) -> bool:
    return any(p.name.endswith(LOG_SUFFIX) and not p.name.startswith(".") for p in d.iterdir() if p.is_file())


def is_log_dir(path: str | os.PathLike) -> bool:
    """Whether `path` is a log directory rather than a partition folder: it holds no segment
    (``*.log``) of its own, and holds a file only a log directory has
    (:data:`LOG_DIR_FILES`) or a sub-directory (partition folders are flat).

    Cost: one directory listing.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "t-0").mkdir()
    >>> is_log_dir(d), is_log_dir(d / "t-0")
    (True, False)
    """
    d = Path(path)
    if not d.is_dir() or _has_segments(d):
        return False
    return any((d / name).exists() for name in LOG_DIR_FILES) or any(p.is_dir() for p in d.iterdir())


def partition_dirs(log_dir: str | os.PathLike) -> pd.DataFrame:
    """The sub-directories of a log directory as the broker sees them: one row a folder,
    ``directory`` (Path), ``topic``, ``partition`` (<NA> and ``state`` "not a partition" for a
    name the broker refuses), ``state`` ("", "delete", "future", "stray"), sorted by name.

    Cost: one directory listing.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for n in ("t-1", "t-0", "lost+found"): (d / n).mkdir()
    >>> partition_dirs(d)[["topic", "partition", "state"]].values.tolist()
    [[None, <NA>, 'not a partition'], ['t', 0, ''], ['t', 1, '']]
    """
    rows = []
    for p in sorted(Path(log_dir).iterdir()):
        if not p.is_dir() or p.name == _REMOTE_INDEX_CACHE:
            continue
        parsed = parse_partition_dir_name(p.name)
        rows.append((p, *parsed) if parsed else (p, None, None, "not a partition"))
    df = pd.DataFrame(rows, columns=["directory", "topic", "partition", "state"])
    df["partition"] = df["partition"].astype("Int32")
    return df


def _segment_logs(partition_dir: Path) -> list[tuple[int, Path]]:
    logs = []
    for p in partition_dir.iterdir():
        if p.is_file() and p.name.endswith(LOG_SUFFIX) and not p.name.startswith("."):
            try:
                logs.append((base_offset_of(p), p))
            except (ValueError, RmqlabError):
                continue    # not a segment name: LogLoader leaves such files alone too
    return sorted(logs)


def log_end_offset(partition_dir: str | os.PathLike) -> int | None:
    """The partition's log end offset as the broker loads it (``LogSegment.readNextOffset`` of
    the last segment): the offset after the last batch of the segment with the highest base
    offset, that base offset when the segment is empty, None without segments (the broker would
    create one at the log start offset). A torn batch at the end is not counted, as the
    broker's read stops before it.

    Units: offsets. Cost: the batch-header walk of the last segment only
    (:func:`rmqlab.kafka.log.read_batches`, about 2 GB/s).

    >>> import tempfile
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> seg = write_segment(tempfile.mkdtemp(), 40, [KafkaRecord(40 + i, 1, None, b"v") for i in range(3)])
    >>> log_end_offset(seg.parent)
    43

    Raises what :func:`rmqlab.kafka.log.read_batches` raises for a batch that is not torn but bad.
    """
    from rmqlab.kafka.log import read_batches

    logs = _segment_logs(Path(partition_dir))
    if not logs:
        return None
    base, last = logs[-1]
    batches = read_batches(last, torn_tail="stop")
    return int(batches["last_offset"].iloc[-1]) + 1 if len(batches) else base


_PARTITION_COLUMNS = ["topic", "partition", "directory", "state", "segments", "segments_bytes", "first_base_offset",
                      "log_end_offset", "recovery_point", "high_watermark", "log_start_checkpoint", "cleaner_offset",
                      "recovery_from", "recovery_bytes", "error"]


def log_dir_partitions(log_dir: str | os.PathLike) -> pd.DataFrame:
    """One row a partition that has a folder here or a line in one of the checkpoints: what the
    folder holds and what each checkpoint says of it.

    Units: offsets and bytes. Cost: one listing a partition folder, the batch-header walk of
    each partition's last segment (:func:`log_end_offset`) and one read of each checkpoint.

    >>> import tempfile, pathlib
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = write_segment(d / "t-0", 0, [KafkaRecord(i, 1, None, b"v") for i in range(5)])
    >>> _ = (d / RECOVERY_POINT_CHECKPOINT).write_text("0\\n2\\nt 0 3\\ngone 0 9\\n")
    >>> p = log_dir_partitions(d)
    >>> p[["topic", "partition", "log_end_offset", "recovery_point", "recovery_from"]].values.tolist()
    [['gone', 0, <NA>, 9, <NA>], ['t', 0, 5, 3, 0]]

    Columns: ``topic``, ``partition``, ``directory`` (folder name, None when not here),
    ``state`` ("" or the folder's -delete/-future/-stray suffix), ``segments``,
    ``segments_bytes``, ``first_base_offset``, ``log_end_offset`` (:func:`log_end_offset`),
    ``recovery_point``, ``high_watermark``, ``log_start_checkpoint``, ``cleaner_offset`` (<NA>
    without a line), ``recovery_from`` / ``recovery_bytes`` (the first segment and the bytes a
    restart after an unclean shutdown re-reads: from the segment holding the recovery point,
    or the first one without a line), ``error`` (why the folder could not be read, else None).
    A checkpoint the broker would refuse raises its :class:`~rmqlab.errors.FormatError`.
    """
    d = Path(log_dir)
    return _partitions(d, {name: read_offset_checkpoint(d / name) for name in OFFSET_CHECKPOINTS
                           if (d / name).exists()})


def _partitions(d: Path, checkpoints: dict[str, pd.DataFrame]) -> pd.DataFrame:
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for folder, topic, partition, state in partition_dirs(d).itertuples(index=False):
        if state in ("not a partition", "delete", "stray"):
            continue     # not a log the broker checkpoints
        row = rows.setdefault((topic, int(partition)), {"topic": topic, "partition": int(partition)})
        row.update(directory=folder.name, state=state, error=None)
        try:
            logs = _segment_logs(folder)
            sizes = np.array([p.stat().st_size for _, p in logs], np.int64)
            bases = np.array([b for b, _ in logs], np.int64)
            row.update(segments=len(logs), segments_bytes=int(sizes.sum()),
                       first_base_offset=int(bases[0]) if len(bases) else None)
            row["log_end_offset"] = log_end_offset(folder)
        except (RmqlabError, OSError) as e:
            row["error"] = str(e)
            continue
        row["_bases"], row["_sizes"] = bases, sizes
    for name, ck in checkpoints.items():
        column = OFFSET_CHECKPOINTS[name][0]
        for topic, partition, offset in zip(ck["topic"], ck["partition"].tolist(), ck["offset"].tolist()):
            rows.setdefault((topic, partition), {"topic": topic, "partition": partition})[column] = offset
    for row in rows.values():
        bases, sizes = row.pop("_bases", None), row.pop("_sizes", None)
        if bases is None or not len(bases):
            continue
        rp = row.get("recovery_point", 0)        # loadLog: recoveryPoints.getOrElse(tp, 0L)
        # segments.values(recoveryPoint, Long.MaxValue): from the floor segment of the recovery point on
        first = max(int(np.searchsorted(bases, rp, side="right")) - 1, 0)
        if row.get("log_end_offset") is not None and rp >= row["log_end_offset"]:
            continue
        row["recovery_from"], row["recovery_bytes"] = int(bases[first]), int(sizes[first:].sum())
    df = pd.DataFrame(list(rows.values()), columns=_PARTITION_COLUMNS)
    df = df.sort_values(["topic", "partition"], kind="stable").reset_index(drop=True)
    for c in ("partition", "segments", "segments_bytes", "first_base_offset", "log_end_offset", "recovery_point",
              "high_watermark", "log_start_checkpoint", "cleaner_offset", "recovery_from", "recovery_bytes"):
        df[c] = df[c].astype("Int64")
    df["partition"] = df["partition"].astype("Int32")
    df["directory"] = df["directory"].astype(object).mask(df["directory"].isna(), None)
    df["error"] = df["error"].astype(object).mask(df["error"].isna(), None)
    return df


# --------------------------------------------------------------------------- the checks


def _na(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))


def _names(pairs: Iterable[tuple[str, int]], limit: int = 4) -> str:
    pairs = list(pairs)
    text = ", ".join(f"{t}-{p}" for t, p in pairs[:limit])
    return text + (f" and {len(pairs) - limit} more" if len(pairs) > limit else "")


def _checkpoint_check(path: Path, parts: pd.DataFrame, clean: bool) -> FileCheck:
    column, what = OFFSET_CHECKPOINTS[path.name]
    try:
        ck = read_offset_checkpoint(path)
    except RmqlabError as e:
        return FileCheck(path, [f"{e} (the broker does not load it: {_REFUSED[path.name]})"], f"{what}s (unreadable)")
    problems: list[str] = []
    notes: list[str] = []
    if ck.attrs["duplicates"]:
        notes.append(f"named on more than one line (the broker keeps the last): {_names(ck.attrs['duplicates'])}")
    here = parts["directory"].notna()
    listed = parts[column].notna()
    absent = parts[listed & ~here]
    if len(absent):
        notes.append(f"{len(absent)} line(s) name partitions with no folder here: "
                     f"{_names(zip(absent['topic'], absent['partition']))} (the broker skips them; it writes the "
                     "file from the logs it holds, so those folders were deleted, moved or not copied)")
    rows = parts[listed & here & parts["error"].isna()]
    for r in rows.to_dict("records"):
        name, v, end = f"{r['topic']}-{r['partition']}", int(r[column]), r["log_end_offset"]
        start = r["first_base_offset"]
        if _na(end):
            notes.append(f"{name}: {what} {v}, but the folder has no segment (the broker creates one at the log "
                         "start offset)")
            continue
        end, start = int(end), int(start)
        if column == "recovery_point":
            if v > end:
                problems.append(f"{name}: recovery point {v} is past the log end offset {end}: records the "
                                "broker had flushed are not in the files (it would lower the recovery point to "
                                f"{end})")
            elif v < end and clean:
                notes.append(f"{name}: recovery point {v} < log end offset {end} although the clean-shutdown "
                             "marker is here (a clean shutdown checkpoints after flushing every log, so the "
                             "files and the checkpoint are from different moments); the broker skips recovery "
                             f"and takes {end}")
            elif v < end:
                notes.append(f"{name}: offsets {v}..{end - 1} lie after the recovery point: a restart after an "
                             f"unclean shutdown re-checks the segments from {int(r['recovery_from'])} on "
                             f"({int(r['recovery_bytes'])} bytes: each batch's CRC, the indexes rebuilt)")
        elif column == "high_watermark":
            if v > end:
                problems.append(f"{name}: high watermark {v} is past the log end offset {end}: committed records "
                                f"are not in the files (the broker would lower it to {end})")
            elif v < end:
                notes.append(f"{name}: offsets {v}..{end - 1} are above the high watermark (not yet committed to "
                             "every in-sync replica; consumers cannot read them)")
        elif column == "log_start_checkpoint":
            if v > end:
                problems.append(f"{name}: log start offset {v} is past the log end offset {end}: the broker "
                                f"deletes every segment and starts the log empty at {v} "
                                "(deleteSegmentsIfLogStartGreaterThanLogEnd)")
            elif v < start:
                notes.append(f"{name}: log start offset {v} is below the first segment {start} (tiered storage "
                             "holds the earlier segments, or they were deleted after the checkpoint); without "
                             f"remote storage the broker takes {start}")
        else:
            log_start = max(start, int(r["log_start_checkpoint"]) if not _na(r["log_start_checkpoint"]) else 0)
            if v > end:
                problems.append(f"{name}: cleaner offset {v} is past the log end offset {end} (the cleaner takes "
                                f"it for data lost at the end of the log and cleans again from {log_start})")
            elif v < log_start:
                notes.append(f"{name}: cleaner offset {v} is below the log start offset {log_start}: the cleaner "
                             "starts from the log start (usual for cleanup.policy=compact,delete)")
            else:
                notes.append(f"{name}: cleaned below offset {v}; {end - v} offset(s) from {v} to the log end are "
                             "dirty")
    if column == "recovery_point":
        missing = parts[here & ~listed & (parts["topic"] != _METADATA_TOPIC) & parts["segments"].fillna(0).gt(0)]
        if len(missing):
            notes.append(f"{len(missing)} partition folder(s) without a line: "
                         f"{_names(zip(missing['topic'], missing['partition']))} (the broker starts them at recovery "
                         "point 0: after an unclean shutdown every segment of them is recovered)")
    summary = (f"{what}s of {len(ck)} partition(s), {int((listed & here).sum())} of them here, checkpoint "
               f"version {_CHECKPOINT_VERSION}")
    return FileCheck(path, problems, summary, notes)


# what the broker does when it cannot read a checkpoint (LogManager.loadLogs, ReplicaManager,
# LogCleanerManager.allCleanerCheckpoints)
_REFUSED = {
    RECOVERY_POINT_CHECKPOINT: "every recovery point is reset to 0, so an unclean restart recovers every segment",
    LOG_START_OFFSET_CHECKPOINT: "every log starts at its first segment's base offset",
    REPLICATION_OFFSET_CHECKPOINT: "the log directory is marked offline when the high watermarks are read",
    CLEANER_OFFSET_CHECKPOINT: "the cleaner treats every compacted log as dirty from its start",
}


def check_log_dir(log_dir: str | os.PathLike) -> list[FileCheck]:
    """A :class:`~rmqlab.kafka.dirfiles.FileCheck` for the log directory itself (its
    partition folders, the files it lacks) and one for each of its checkpoints,
    ``meta.properties`` and ``.kafka_cleanshutdown``, judged against the partition folders as
    the module docstring says: ``problems`` are what makes the broker lose or re-write data
    (or refuse to start), ``notes`` what it does on its next start.

    Cost: :func:`log_dir_partitions`.

    >>> import tempfile, pathlib
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = write_segment(d / "t-0", 0, [KafkaRecord(i, 1, None, b"v") for i in range(5)])
    >>> _ = (d / RECOVERY_POINT_CHECKPOINT).write_text("0\\n1\\nt 0 7\\n")
    >>> [(c.file.name, c.problems) for c in check_log_dir(d)][1]
    ('recovery-point-offset-checkpoint', ['t-0: recovery point 7 is past the log end offset 5: records the \
broker had flushed are not in the files (it would lower the recovery point to 5)'])

    Raises NotADirectoryError for a path that is not a directory.
    """
    d = Path(log_dir)
    if not d.is_dir():
        raise NotADirectoryError(f"{d}: not a directory")
    shutdown = read_clean_shutdown(d / CLEAN_SHUTDOWN)
    clean = shutdown["present"]
    folders = partition_dirs(d)
    problems: list[str] = []
    notes: list[str] = []
    for folder in folders.loc[folders["state"] == "not a partition", "directory"]:
        problems.append(f"{folder.name}/ is not a partition folder (topic-partition): the broker refuses to start "
                        "(LocalLog.parseTopicPartitionName: \"Kafka's log directories (and children) should only "
                        "contain Kafka topic data\")")
    for state, meaning in (("delete", "being deleted: the broker removes it after file.delete.delay.ms"),
                           ("future", "a replica being moved here from another log directory"),
                           ("stray", "a stray replica (not assigned to this broker); the broker deletes it")):
        here = folders.loc[folders["state"] == state, "directory"]
        if len(here):
            notes.append(f"{len(here)} folder(s) {meaning}: {', '.join(p.name for p in here[:4])}")
    out: list[FileCheck] = []
    checkpoint_files = [d / name for name in OFFSET_CHECKPOINTS if (d / name).exists()]
    readable = {}
    for path in checkpoint_files:
        try:
            readable[path.name] = read_offset_checkpoint(path)
        except RmqlabError:
            pass     # the file's own check says why; the others are judged without it
    parts = _partitions(d, readable)
    for r in parts[parts["error"].notna()].to_dict("records"):
        problems.append(f"{r['directory']}: cannot be read: {r['error']}")
    present = parts[parts["directory"].notna()]
    # KRaft's __cluster_metadata is the raft client's, never in LogManager's checkpoints
    logs = present[present["topic"] != _METADATA_TOPIC]
    for name in OFFSET_CHECKPOINTS:
        if not (d / name).exists() and len(logs):
            notes.append(f"no {name} ({_MISSING[name]})")
    for path in checkpoint_files:
        out.append(_checkpoint_check(path, parts, clean))
    meta = d / META_PROPERTIES
    if meta.exists():
        try:
            m = read_meta_properties(meta)
            who = "broker.id" if m["version"] == 0 else "node.id"
            text = f"version {m['version']} ({'ZooKeeper' if m['version'] == 0 else 'KRaft'}), {who} {m['node_id']}, " \
                   f"cluster.id {m['cluster_id']}"
            out.append(FileCheck(meta, [], text + (f", directory.id {m['directory_id']}" if m["directory_id"] else "")))
        except RmqlabError as e:
            out.append(FileCheck(meta, [f"{e} (the broker refuses to start)"], "meta.properties (unreadable)"))
    elif len(present):
        notes.append("no meta.properties (a ZooKeeper-mode broker writes it on first start; a KRaft broker refuses "
                     "a directory kafka-storage format did not prepare)")
    if clean:
        text = "clean-shutdown marker: the next start skips recovery and takes each log end offset as its " \
               "recovery point"
        epoch = f"; broker epoch {shutdown['broker_epoch']}" if shutdown["broker_epoch"] is not None else ""
        out.append(FileCheck(d / CLEAN_SHUTDOWN, [], text + epoch, [shutdown["note"]] if shutdown["note"] else []))
    elif len(present):
        notes.append("no .kafka_cleanshutdown: the broker did not shut down cleanly (or is running); the next start "
                     "recovers each partition from its recovery point")
    with_records = int(present["log_end_offset"].fillna(0).gt(present["first_base_offset"].fillna(0)).sum())
    summary = (f"log directory: {len(present)} partition folder(s) ({with_records} holding records), "
               f"{len(checkpoint_files)} checkpoint file(s), {'a' if clean else 'no'} clean-shutdown marker")
    return [FileCheck(d, problems, summary, notes), *out]


_MISSING = {
    RECOVERY_POINT_CHECKPOINT: "every recovery point starts at 0: after an unclean shutdown every segment is recovered",
    REPLICATION_OFFSET_CHECKPOINT: "every high watermark starts at the log start offset",
    LOG_START_OFFSET_CHECKPOINT: "every log starts at its first segment's base offset",
    CLEANER_OFFSET_CHECKPOINT: "no log has been cleaned, or none is compacted",
}



def verify_log_dir(log_dir: str | os.PathLike, *, jobs: int | None = None, **kwargs) -> tuple[list, list[FileCheck]]:
    """:func:`rmqlab.kafka.rebuild.verify_partition` of every partition folder of a log
    directory (those being deleted or stray left out: the broker deletes them), then
    :func:`check_log_dir`'s checks of the directory's own files: ``(segment reports, file
    checks)``.

    Units: reports. Cost: :func:`~rmqlab.kafka.rebuild.verify_segment` of every segment plus
    :func:`check_log_dir`.

    >>> import tempfile, pathlib
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = write_segment(d / "t-0", 0, [KafkaRecord(0, 5, None, b"v")])
    >>> segments, files = verify_log_dir(d)
    >>> [r.ok for r in segments], [(f.kind, f.ok) for f in files]     # the log: no .index, rebuilt on load
    ([True], [('log', True), ('log-dir', True)])

    `kwargs` go to :func:`~rmqlab.kafka.rebuild.verify_segment`. `jobs`: the processes the
    segments of all partitions are spread over (:func:`~rmqlab.kafka.rebuild.verify_segments`);
    the reports are the same with any `jobs`. Raises NotADirectoryError.
    """
    from rmqlab.kafka.dirfiles import check_partition_files
    from rmqlab.kafka.loader import plan_checks
    from rmqlab.kafka.rebuild import segment_logs, verify_segments
    from rmqlab.tables.pool import check_jobs

    check_jobs(jobs)
    checks = check_log_dir(log_dir)
    folders = [Path(folder) for folder, _topic, _partition, state in partition_dirs(log_dir).itertuples(index=False)
               if state in ("", "future")]
    # every partition's segments in one pool, handed back a partition at a time; each
    # partition's other files checked after its segments, as verify_partition does
    segments = verify_segments([segment_logs(folder) for folder in folders], jobs=jobs, **kwargs)
    reports: list = []
    files: list[FileCheck] = []
    try:
        for folder, r in zip(folders, segments):
            reports += r
            files += plan_checks(folder, check_partition_files(folder))
    finally:
        segments.close()
    return reports, files + checks
