"""What a broker restart does with each file of a Kafka partition directory, by ``LogLoader``'s rules.

When a broker loads a partition it first finishes or undoes what the log cleaner, a segment
split and retention left half done, then loads the segments and, after an unclean shutdown,
recovers the unflushed ones. :func:`load_plan` replays those steps on a directory's listing
without changing anything and says, file by file, what happens: ``kept``, ``deleted``,
``renamed to X``, ``index rebuilt``, ``recovered`` (several joined by ``"; "``).

The rules, as read in Kafka's source (``LogLoader.load`` and the methods it calls):

====  =======================================================================================
 1    ``*.deleted`` (a segment or snapshot whose asynchronous delete had not run): deleted.
      3.3+ leaves a KRaft ``*.checkpoint.deleted`` to ``KafkaMetadataLog``, which deletes it
      and ``*.checkpoint.part`` (``removeTempFilesAndCollectSwapFiles``; 2.x ``Log.scala``).
 2    ``*.cleaned`` (a clean or split still being written): deleted; every ``*.swap`` whose
      base offset is at or above the lowest ``.cleaned`` base offset is deleted too (an
      interrupted split, KAFKA-6264). 2.x judges only a ``.log.swap`` so and deletes its
      ``.index.swap`` / ``.timeindex.swap`` / ``.txnindex.swap`` with it.
 3    3.0+: the other ``*.log.swap`` span ``[lowest base offset, highest next offset)``; every
      other file named by an offset in that span is deleted (the segments the swap replaces),
      then every ``*.swap`` (indexes too) is renamed to its name without ``.swap``.
      2.x (``Log.completeSwapOperations``): a ``*.swap`` deletes its segment's ``.index``,
      ``.timeindex``, ``.txnindex``; after the segments are loaded each ``.log.swap`` is
      recovered, replaces the segments whose offsets it overlaps and is renamed with its
      index files; an index ``.swap`` without a ``.log.swap`` is left alone.
 4    ``loadSegmentFiles``: an ``.index`` / ``.timeindex`` / ``.txnindex`` without the ``.log``
      of its offset is deleted; a ``.log`` without its ``.index`` is recovered at once (its
      indexes rebuilt); one with an ``.index`` but no ``.timeindex`` gets an empty time index.
 5    ``recoverLog``: after an unclean shutdown (no ``.kafka_cleanshutdown`` in the log
      directory) the segment holding the recovery point and every later one are recovered;
      the first with an invalid batch is truncated there and all later segments deleted. A
      clean shutdown skips this.
 6    ``ProducerStateManager.removeStraySnapshots`` (2.8+): a ``.snapshot`` not at a segment's
      base offset is deleted unless it is the highest such and above the last segment's base
      offset; ``truncateAndReload`` then deletes those above the log end offset or at or below
      the log start offset.
 7    ``*.tmp`` (a ``CheckpointFile`` write cut short) and every other name: LogLoader does not
      look at them; the next write of that checkpoint replaces its ``.tmp``.
====  =======================================================================================

Sources: ``kafka.log.LogLoader`` (``core/src/main/scala``, 3.0-3.8; the 3.6.0 tag read),
``org.apache.kafka.storage.internals.log.LogLoader`` (Java, 3.9+/4.x: the same steps),
``kafka.log.Log`` 2.8.0 (``loadSegments``, ``removeTempFilesAndCollectSwapFiles``,
``loadSegmentFiles``, ``completeSwapOperations``; 2.0-2.7 the same without rule 6),
``LogFileUtils`` / ``UnifiedLog`` for the suffixes, ``LocalLog.replaceSegments`` and
``LogCleaner`` for how ``.cleaned`` becomes ``.swap``, ``ProducerStateManager`` 3.6.0,
``CheckpointFile`` 3.6.0, ``KafkaMetadataLog.recoverSnapshots`` 3.6.0.

A plan's ``problem`` column names files the broker could not have left: a name it would fail
on (``LogFileUtils.offsetFromFile`` throws, so the log directory goes offline), a ``.log``
not named by its offset's 20 digits, or a ``.log.swap`` that replaces no segment while
overlapping the records of the segment before it.

>>> import tempfile, pathlib
>>> from rmqlab.kafka.log import KafkaRecord, write_segment
>>> d = pathlib.Path(tempfile.mkdtemp()) / "t-0"
>>> _ = write_segment(d, 0, [KafkaRecord(i, 1, None, b"v") for i in range(3)])
>>> for name in ("00000000000000000000.index", "00000000000000000000.timeindex", "00000000000000000000.log.deleted"):
...     _ = (d / name).write_bytes(b"")
>>> plan = load_plan(d, clean_shutdown=True)
>>> plan[["file", "action"]].values.tolist()
[['00000000000000000000.index', 'kept'], ['00000000000000000000.log', 'kept'], \
['00000000000000000000.log.deleted', 'deleted'], ['00000000000000000000.timeindex', 'kept']]
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from rmqlab.errors import InputError, RmqlabError

__all__ = ["Step", "plan_steps", "load_plan", "offset_from_file", "PLAN_COLUMNS", "DEFAULT_RELEASE"]

DELETED, CLEANED, SWAP = ".deleted", ".cleaned", ".swap"     # LogFileUtils / UnifiedLog suffixes
SNAPSHOT_DELETED, SNAPSHOT_PARTIAL = ".checkpoint.deleted", ".checkpoint.part"   # raft Snapshots
LOG = ".log"
INDEXES = (".index", ".timeindex", ".txnindex")             # LogFileUtils.isIndexFile
PRODUCER_SNAPSHOT = ".snapshot"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
METADATA_PARTITION = "__cluster_metadata-0"
#: the release whose rules apply when none is named: 3.3 and later (4.x included) load alike
DEFAULT_RELEASE = "3.6"
PLAN_COLUMNS = ["file", "kind", "offset", "action", "reason", "problem"]

_LONG = re.compile(r"[+-]?\d+")                # Long.parseLong's syntax
_FAILS = "the broker cannot load this partition (LogFileUtils.offsetFromFile: NumberFormatException)"


class Step(NamedTuple):
    """What the load does with one file: ``action`` (``kept``, ``deleted``, ``renamed to X``,
    ``index rebuilt``, ``recovered`` ..., joined by ``"; "``), ``reason`` (the step of
    ``LogLoader`` and why) and ``problem`` (empty, or why the broker could not have left it)."""

    action: str
    reason: str
    problem: str = ""


def offset_from_file(name: str) -> int | None:
    """``LogFileUtils.offsetFromFile``: the number before the first dot of a file's name, None
    where Kafka's ``Long.parseLong`` (or ``substring``) throws. Cost: O(len(name)).

    >>> offset_from_file("00000000000000000042.log.swap"), offset_from_file("leader-epoch-checkpoint")
    (42, None)
    """
    dot = name.find(".")
    if dot < 0 or not _LONG.fullmatch(name[:dot]):
        return None
    value = int(name[:dot])
    return value if -2 ** 63 <= value < 2 ** 63 else None


def _prefix(offset: int) -> str:
    """LogFileUtils.filenamePrefixFromOffset: at least 20 digits."""
    return ("-" if offset < 0 else "") + f"{abs(offset):020d}"


def _release_key(release: str) -> tuple[int, int]:
    parts = release.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise InputError(f"release {release!r}: expected X.Y, e.g. 3.6")
    return int(parts[0]), int(parts[1])


def _index_of(name: str) -> bool:
    return name.endswith(INDEXES)


def plan_steps(names: Iterable[str], next_offset: Callable[[str], int | None], *, clean_shutdown: bool | None,
               recovery_point: int = 0, log_start_offset: int | None = None, release: str = DEFAULT_RELEASE,
               metadata_log: bool = False) -> dict[str, Step]:
    """The load replayed on a listing: a :class:`Step` for every name (see the module table).
    `next_offset(name)` gives ``LogSegment.readNextOffset`` of a ``.log`` or ``.log.swap`` (the
    offset after its last whole batch; its base offset when empty; None when unreadable);
    `clean_shutdown` None when unknown (rule 5 then says what an unclean start would do);
    `recovery_point` and `log_start_offset` as the log directory's checkpoints hold them;
    `release` the broker's ``X.Y``; `metadata_log` for ``__cluster_metadata-0``.

    Cost: O(n log n) in the names, plus `next_offset` for each ``.log.swap``, the segment
    before an uncovered swap, and the last segment.

    >>> steps = plan_steps(["00000000000000000000.log", "00000000000000000000.index",
    ...                     "00000000000000000000.log.swap", "00000000000000000000.index.swap",
    ...                     "00000000000000000005.log", "00000000000000000005.index"],
    ...                    {"00000000000000000000.log.swap": 9}.get, clean_shutdown=True)
    >>> steps["00000000000000000005.log"].action, steps["00000000000000000000.log.swap"].action
    ('deleted', 'renamed to 00000000000000000000.log')

    Raises InputError for a `release` that is not ``X.Y``.
    """
    key = _release_key(release)
    names = sorted(set(names))
    steps = _Steps()
    live = set(names)            # the directory as the load goes on
    cache: dict[str, int | None] = {}

    def nxt(name: str) -> int | None:
        name = steps.key(name)          # a file renamed by the load is read under its name on disk
        if name not in cache:
            cache[name] = next_offset(name)
        return cache[name]

    def gone(name: str, reason: str) -> None:
        steps.add(name, "deleted", reason)
        live.discard(name)

    def fail(name: str, what: str) -> None:
        steps.setdefault(name, Step("kept", what, _FAILS))

    # rule 1 and 2: removeTempFilesAndCollectSwapFiles
    swaps: list[str] = []
    cleaned: list[str] = []
    for n in names:
        if n.endswith(DELETED) and not (key >= (3, 3) and n.endswith(SNAPSHOT_DELETED)):
            gone(n, "removeTempFilesAndCollectSwapFiles: a stray file marked for deletion")
        elif n.endswith(CLEANED):
            if offset_from_file(n) is None:
                fail(n, "a .cleaned file not named by an offset")
            cleaned.append(n)
        elif n.endswith(SWAP):
            swaps.append(n)
    min_cleaned = min((o for o in map(offset_from_file, cleaned) if o is not None), default=None)
    if key < (3, 0):
        swaps = _swap_indexes_2x(swaps, steps, live, gone, fail)
    valid = []
    for n in swaps:
        o = offset_from_file(n)
        if o is None:
            fail(n, "a .swap file not named by an offset")
            continue
        if min_cleaned is not None and o >= min_cleaned:
            gone(n, f"removeTempFilesAndCollectSwapFiles: at or above the lowest .cleaned offset {min_cleaned}, "
                    "part of a clean or split that did not finish (KAFKA-6264)")
            if key < (3, 0):
                for suffix in INDEXES:
                    if (i := _prefix(o) + suffix + SWAP) in live:
                        gone(i, f"removeTempFilesAndCollectSwapFiles: the index of the invalid {n}")
        else:
            valid.append(n)
    for n in cleaned:
        if n in live:
            gone(n, "removeTempFilesAndCollectSwapFiles: a stray .cleaned file (a clean that did not finish)")

    log_swaps = [n for n in valid if n[:-len(SWAP)].endswith(LOG)]
    deleted_logs = {o for n in names if n.endswith(LOG + DELETED) and (o := offset_from_file(n)) is not None}
    _judge_swaps(log_swaps, live, deleted_logs, nxt, steps)
    if key >= (3, 0):
        _place_swaps_3x(valid, log_swaps, live, nxt, steps, gone)

    # rule 4: loadSegmentFiles (2.x: the swaps are completed after it)
    segments: dict[int, str] = {}
    for n in sorted(live):
        if n.endswith(SWAP):
            continue
        if _index_of(n):
            o = offset_from_file(n)
            if o is None:
                fail(n, "an index file not named by an offset")
            elif _prefix(o) + LOG not in live:
                gone(n, f"loadSegmentFiles: an orphaned index file (no {_prefix(o)}{LOG})")
        elif n.endswith(LOG):
            o = offset_from_file(n)
            if o is None:
                fail(n, "a .log file not named by an offset")
                continue
            if n != _prefix(o) + LOG:
                steps[steps.key(n)] = Step("kept", "loadSegmentFiles opens the segment by its offset's name",
                                f"not the name the broker gives the segment at offset {o} ({_prefix(o)}{LOG}): "
                                "it would open and create that file instead")
                continue
            segments[o] = n
            _load_segment(n, o, live, steps)
    if key < (3, 0):
        _complete_swaps_2x(log_swaps, segments, live, nxt, steps, gone)

    # rule 5: recoverLog
    bases = sorted(segments)
    floor = max((b for b in bases if b <= recovery_point), default=None)
    for b in bases:
        if clean_shutdown is True or (b < recovery_point and b != floor):
            continue
        why = (f"recoverLog: unclean shutdown, the segment holds or follows the recovery point {recovery_point}: "
               "recovered (indexes rebuilt; at the first invalid batch it is truncated and later segments deleted)")
        steps.add(segments[b], "recovered" if clean_shutdown is False else "recovered if the shutdown was unclean",
             why if clean_shutdown is False else why.replace("unclean shutdown", "if the shutdown was unclean"))

    # rule 6: producer-state snapshots
    if key >= (2, 8):
        _snapshots(live, bases, segments, log_start_offset, nxt, steps, gone, fail)
    if metadata_log and key >= (3, 0):
        for n in sorted(live):
            if n.endswith((SNAPSHOT_PARTIAL, SNAPSHOT_DELETED)):
                gone(n, "KafkaMetadataLog.recoverSnapshots: a partial or deleted KRaft snapshot")
    for n in names:
        if n not in steps:
            steps[n] = Step("kept", _kept_reason(n))
    return dict(steps)


def _kept_reason(name: str) -> str:
    if name.endswith(".tmp"):
        return "LogLoader does not look at .tmp files; the next write of that checkpoint (CheckpointFile) replaces it"
    if name.endswith(LOG):
        return "loadSegmentFiles: a segment, loaded as it is"
    if _index_of(name):
        return "loadSegmentFiles: the index of a segment"
    if name.endswith(PRODUCER_SNAPSHOT):
        return "a producer-state snapshot the load keeps"
    return "not a file LogLoader changes"


class _Steps(dict):
    """The steps by original name; a file renamed by the load keeps its original's row."""

    def __init__(self) -> None:
        super().__init__()
        self.origin: dict[str, str] = {}

    def key(self, name: str) -> str:
        return self.origin.get(name, name)

    def add(self, name: str, action: str, reason: str) -> None:
        k = self.key(name)
        old = self.get(k)
        if old is None:
            self[k] = Step(action, reason)
        elif action == "kept":
            self[k] = old._replace(reason=f"{old.reason}; {reason}" if old.reason else reason)
        elif old.action == "kept":
            self[k] = Step(action, f"{old.reason}; {reason}" if old.reason else reason, old.problem)
        else:
            self[k] = Step(f"{old.action}; {action}", f"{old.reason}; {reason}", old.problem)

    def rename(self, source: str, target: str, reason: str) -> None:
        self.add(source, f"renamed to {target}", reason)
        self.origin[target] = self.key(source)


def _load_segment(n: str, o: int, live: set[str], steps: _Steps) -> None:
    if _prefix(o) + ".index" not in live:
        steps.add(n, "index rebuilt", "loadSegmentFiles: no .index (LogSegment.sanityCheck throws "
                                        "NoSuchFileException): recoverSegment rebuilds the indexes")
    elif _prefix(o) + ".timeindex" not in live:
        steps.add(n, "kept", "loadSegmentFiles: no .timeindex: LogSegment.sanityCheck creates it empty")


def _judge_swaps(log_swaps: list[str], live: set[str], deleted_logs: set[int], nxt, steps: dict[str, Step]) -> None:
    """A .log.swap must replace segments (live, or renamed .deleted before the crash) or fit
    after the records of the segment before it; else no clean or split made it."""
    logs = sorted(o for n in live if n.endswith(LOG) and (o := offset_from_file(n)) is not None)
    for n in log_swaps:
        base = offset_from_file(n)
        assert base is not None
        end = nxt(n)
        end = base if end is None else end
        if any(base <= o < max(end, base + 1) for o in [*logs, *deleted_logs]):
            continue
        before = [o for o in logs if o < base]
        if before:
            prev_end = nxt(_prefix(before[-1]) + LOG)
            if prev_end is not None and prev_end > base:
                steps[n] = Step("kept", "", f"replaces no segment, yet overlaps the records of {_prefix(before[-1])}"
                                            f"{LOG} (up to offset {prev_end - 1}): neither the cleaner nor a split "
                                            "leaves such a .swap")


def _place_swaps_3x(valid: list[str], log_swaps: list[str], live: set[str], nxt, steps: _Steps,
                    gone) -> None:
    spans = []
    for n in log_swaps:
        base = offset_from_file(n)
        assert base is not None
        end = nxt(n)
        spans.append((base, base if end is None else end, n))
    if spans:
        lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
        for f in sorted(live):
            o = offset_from_file(f)
            if not f.endswith(SWAP) and o is not None and lo <= o < hi:
                by = next((s[2] for s in spans if s[0] <= o < s[1]), spans[0][2])
                gone(f, f"LogLoader.load, second pass: offset {o} lies in the swapped span [{lo}, {hi}): "
                        f"compacted or split into {by}, not yet deleted")
    for n in valid:
        target = n[:-len(SWAP)]
        if target in live:
            gone(target, f"LogLoader.load, third pass: replaced by {n}")
        steps.rename(n, target, "LogLoader.load, third pass: an interrupted swap completed by renaming")
        live.discard(n)
        live.add(target)


def _swap_indexes_2x(swaps: list[str], steps: dict[str, Step], live: set[str], gone, fail) -> list[str]:
    """2.x: each .swap deletes its segment's index files; only .log.swap are completed."""
    logs = []
    for n in swaps:
        target = n[:-len(SWAP)]
        if not (target.endswith(LOG) or _index_of(target)):
            continue
        o = offset_from_file(n)
        if o is None:
            fail(n, "a .swap file not named by an offset")
            continue
        for suffix in INDEXES:
            if (i := _prefix(o) + suffix) in live:
                gone(i, f"Log.removeTempFilesAndCollectSwapFiles: {n} was being swapped in; its segment's "
                        "indexes are deleted, to be rebuilt")
        if target.endswith(LOG):
            logs.append(n)
        else:
            steps[n] = Step("kept", "Log.removeTempFilesAndCollectSwapFiles: an index .swap is not renamed; "
                                    "the .log.swap of its offset, if any, renames a rebuilt one over it")
    return logs


def _complete_swaps_2x(log_swaps: list[str], segments: dict[int, str], live: set[str], nxt,
                       steps: _Steps, gone) -> None:
    for n in log_swaps:
        if n not in live:
            continue
        base = offset_from_file(n)
        assert base is not None
        end = nxt(n)
        end = base if end is None else end
        replaced = []
        for o, seg in sorted(segments.items()):
            seg_end = nxt(seg)
            if (base <= o < end) or (o < base and seg_end is not None and seg_end > base):
                replaced.append(o)
        for o in replaced:
            for suffix in (LOG, *INDEXES):
                if (f := _prefix(o) + suffix) in live:
                    gone(f, f"Log.completeSwapOperations: replaced by {n}")
            segments.pop(o)
        target = n[:-len(SWAP)]
        steps.add(n, "recovered", "Log.completeSwapOperations: the swap segment is recovered")
        steps.rename(n, target, "and replaces the segments its offsets overlap")
        live.discard(n)
        live.add(target)
        segments[base] = target
        for suffix in INDEXES:
            if (i := _prefix(base) + suffix + SWAP) in live:
                steps.rename(i, i[:-len(SWAP)], f"Log.completeSwapOperations: rebuilt with {n} and renamed")
                live.discard(i)
                live.add(i[:-len(SWAP)])


def _snapshots(live: set[str], bases: list[int], segments: dict[int, str], log_start_offset: int | None, nxt,
               steps: dict[str, Step], gone, fail) -> None:
    snaps = {}
    for n in sorted(live):
        if n.endswith(PRODUCER_SNAPSHOT):
            o = offset_from_file(n)
            if o is None:
                fail(n, "a .snapshot not named by an offset")
            else:
                snaps[o] = n
    stray = None
    for o in sorted(snaps):
        if o in bases:
            continue
        if stray is not None:
            gone(snaps.pop(stray), "ProducerStateManager.removeStraySnapshots: not at a segment's base offset "
                                   "and not the highest such")
        stray = o
    if stray is not None and bases and stray < bases[-1]:
        gone(snaps.pop(stray), "ProducerStateManager.removeStraySnapshots: not at a segment's base offset and "
                               f"below the last segment's {bases[-1]}")
    if not bases:
        return
    end = nxt(segments[bases[-1]])
    start = max(log_start_offset if log_start_offset is not None else bases[0], bases[0])
    for o, n in sorted(snaps.items()):
        if (end is not None and o > end) or o <= start:
            gone(n, f"ProducerStateManager.truncateAndReload: outside the log ({start}, {end}]")


# ----------------------------------------------------------------------------------- on disk


def _next_offset_on_disk(directory: Path) -> Callable[[str], int | None]:
    from rmqlab.kafka.log import read_batches

    def next_offset(name: str) -> int | None:
        path = directory / name
        try:
            batches = read_batches(path, torn_tail="stop", on_damage="report")
        except (RmqlabError, OSError):
            return None
        if len(batches):
            return int(batches["last_offset"].iloc[-1]) + 1
        return offset_from_file(name)
    return next_offset


def _checkpoint_offset(log_dir: Path, name: str, topic: str, partition: int) -> int | None:
    from rmqlab.kafka.logdir import read_offset_checkpoint

    path = log_dir / name
    if not path.is_file():
        return None
    try:
        ck = read_offset_checkpoint(path)
    except RmqlabError:
        return None
    rows = ck[(ck["topic"] == topic) & (ck["partition"] == partition)]
    return int(rows["offset"].iloc[-1]) if len(rows) else None     # the broker keeps the last line


def _kind(name: str) -> str:
    from rmqlab.kafka.dirfiles import file_kind

    for suffix in (SNAPSHOT_DELETED, SNAPSHOT_PARTIAL, DELETED, CLEANED, SWAP, ".tmp"):
        if name.endswith(suffix) and name != suffix:
            base = file_kind(name[:-len(suffix)])
            return f"{suffix[1:]}:{base}" if base != "unknown" else suffix[1:]
    return file_kind(name)


def load_plan(partition_dir: str | os.PathLike, clean_shutdown: bool | None = None, *,
              recovery_point: int | None = None, log_start_offset: int | None = None,
              release: str = DEFAULT_RELEASE) -> pd.DataFrame:
    """What a broker of `release` does with each file of `partition_dir` when it next loads it:
    a DataFrame of :data:`PLAN_COLUMNS`, one row a file in name order: ``file`` (name),
    ``kind`` (:func:`~rmqlab.kafka.dirfiles.file_kind`; ``swap:log`` ... for the left-over
    suffixes), ``offset`` (the offset the name carries, or None), ``action``, ``reason`` (the
    step of ``LogLoader``) and ``problem`` ("" unless the broker could not have left the file).

    `clean_shutdown`, `recovery_point` and `log_start_offset` default to what the log directory
    holding the folder says (``.kafka_cleanshutdown``, ``recovery-point-offset-checkpoint``,
    ``log-start-offset-checkpoint``); with no log directory around it the shutdown is unknown
    and the recovery point 0 (as ``LogManager`` takes a missing one). ``df.attrs`` holds
    ``clean_shutdown``, ``recovery_point``, ``release`` and ``notes`` (sentences).

    Nothing is written. Units: offsets. Cost: a listing, and a batch-header walk of each
    ``.log.swap``, of the last segment and of a segment an uncovered swap follows.

    >>> import tempfile, pathlib
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "t-0"
    >>> _ = write_segment(d, 0, [KafkaRecord(i, 1, None, b"v") for i in range(3)])
    >>> for name in ("00000000000000000000.timeindex", "00000000000000000007.timeindex"):
    ...     _ = (d / name).write_bytes(b"")
    >>> load_plan(d, clean_shutdown=False)[["file", "action"]].values.tolist()
    [['00000000000000000000.log', 'index rebuilt; recovered'], ['00000000000000000000.timeindex', 'kept'], \
['00000000000000000007.timeindex', 'deleted']]

    Raises NotADirectoryError for a path that is not a directory, InputError for a bad `release`.
    """
    from rmqlab.kafka.logdir import (
        LOG_START_OFFSET_CHECKPOINT,
        RECOVERY_POINT_CHECKPOINT,
        is_log_dir,
        parse_partition_dir_name,
    )

    d = Path(partition_dir)
    if not d.is_dir():
        raise NotADirectoryError(f"{d}: not a directory")
    parent = d.resolve().parent
    parsed = parse_partition_dir_name(d.name)
    in_log_dir = parsed is not None and is_log_dir(parent)
    notes: list[str] = []
    if clean_shutdown is None and in_log_dir:
        clean_shutdown = (parent / CLEAN_SHUTDOWN).exists()
    if parsed is not None and in_log_dir:
        topic, partition, _ = parsed
        if recovery_point is None:
            recovery_point = _checkpoint_offset(parent, RECOVERY_POINT_CHECKPOINT, topic, partition)
        if log_start_offset is None:
            log_start_offset = _checkpoint_offset(parent, LOG_START_OFFSET_CHECKPOINT, topic, partition)
    if recovery_point is None:
        recovery_point = 0
    names = [p.name for p in d.iterdir() if p.is_file()]
    steps = plan_steps(names, _next_offset_on_disk(d), clean_shutdown=clean_shutdown, recovery_point=recovery_point,
                       log_start_offset=log_start_offset, release=release, metadata_log=d.name == METADATA_PARTITION)
    if not any(s.action != "deleted" and n.endswith((LOG, LOG + SWAP)) for n, s in steps.items()):
        notes.append("no segment is left: the broker creates an empty one at the log start offset")
    rows = [(n, _kind(n), offset_from_file(n), s.action, s.reason, s.problem) for n, s in sorted(steps.items())]
    df = pd.DataFrame(rows, columns=PLAN_COLUMNS).astype({"offset": object})
    df.attrs.update(clean_shutdown=clean_shutdown, recovery_point=recovery_point, release=release, notes=notes)
    return df


#: actions a restart takes on sound files every time (rule 5); verify leaves them to the log
#: directory's recovery-point note
_ROUTINE = ("kept", "recovered", "recovered if the shutdown was unclean")


def plan_checks(partition_dir: str | os.PathLike, checks: Iterable) -> list:
    """`checks` (:class:`~rmqlab.kafka.dirfiles.FileCheck` of the folder's files) with what the
    next load does (:func:`load_plan`) added as notes: a file the load deletes, renames or
    re-indexes gets a note (and a check of its own where it had none); a left-over file's summary
    says what becomes of it; a file the broker could not have left gets the plan's problem.
    Routine recovery after an unclean shutdown is not repeated per segment.

    Cost: :func:`load_plan`.

    >>> import tempfile, pathlib
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "t-0"
    >>> _ = write_segment(d, 0, [KafkaRecord(0, 1, None, b"v")])
    >>> _ = (d / "00000000000000000000.log.cleaned").write_bytes(b"")
    >>> [(c.file.name, c.summary) for c in plan_checks(d, [])]
    [('00000000000000000000.log', 'segment: index rebuilt; recovered on the next load'), \
('00000000000000000000.log.cleaned', 'left over (cleaned:log): deleted on the next load')]
    """
    from rmqlab.kafka.dirfiles import FileCheck

    d = Path(partition_dir)
    plan = load_plan(d)
    by_file = {c.file.name: c for c in checks}
    out = dict(by_file)
    for file, kind, action, reason, problem in plan[["file", "kind", "action", "reason", "problem"]].itertuples(
            index=False, name=None):
        file, kind, action = str(file), str(kind), str(action)
        leftover = ":" in kind or kind in ("deleted", "cleaned", "swap", "tmp", "checkpoint.part", "checkpoint.deleted")
        if action in _ROUTINE and not problem and not leftover:
            continue
        old = by_file.get(file)
        summary = (f"left over ({kind}): {action} on the next load" if leftover or old is None and kind != "log"
                   else f"segment: {action} on the next load" if old is None else old.summary)
        notes = [*(old.notes if old else ()), f"on the next load: {action} ({reason})"]
        problems = [*(old.problems if old else ()), *([str(problem)] if problem else [])]
        out[file] = FileCheck(d / file, problems, summary, notes)
    return [out[k] for k in sorted(out)]


def log_dir_plan(log_dir: str | os.PathLike, *, routine: bool = False) -> pd.DataFrame:
    """:func:`load_plan` of every partition folder of a log directory the broker loads (not
    those being deleted or stray), one frame with a ``partition`` column (the folder's name)
    first; without `routine`, only the rows that are more than a segment kept or recovered.

    Cost: :func:`load_plan` per folder.

    >>> import tempfile, pathlib
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = write_segment(d / "t-0", 0, [KafkaRecord(0, 1, None, b"v")])
    >>> _ = (d / "t-0" / "00000000000000000000.index").write_bytes(b"")
    >>> _ = (d / "t-0" / "00000000000000000000.log.deleted").write_bytes(b"")
    >>> log_dir_plan(d)[["partition", "file", "action"]].values.tolist()
    [['t-0', '00000000000000000000.log', 'recovered'], ['t-0', '00000000000000000000.log.deleted', 'deleted']]
    """
    from rmqlab.kafka.logdir import partition_dirs

    frames = []
    for folder, _topic, _partition, state in partition_dirs(log_dir).itertuples(index=False):
        if state not in ("", "future"):
            continue
        df = load_plan(folder)
        if not routine:
            more = ~df["action"].isin(_ROUTINE) | (df["problem"] != "") | df["reason"].str.contains("creates it empty")
            df = df[more]
        frames.append(df.assign(partition=Path(folder).name))
    columns = ["partition", *PLAN_COLUMNS]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)
