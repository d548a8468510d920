"""Check every file of a RocketMQ store, and the files against each other.

:func:`verify_path` takes a store directory (``commitlog/``, ``consumequeue/``, ``index/``,
``checkpoint``), a ``commitlog/`` or ``index/`` folder, a ConsumeQueue folder, or one
CommitLog, ConsumeQueue, IndexFile or checkpoint file (found by location, name and content;
``kind=`` forces it), and returns a :class:`VerifyReport`: one :class:`FileReport` a file (a
ConsumeQueue *folder* for queues: the queue is the unit its format checks), the problems found
across files, and notes. Nothing is written: every input is opened read-only (memory maps), so
bytes and modification times stay as they were.

Per file, the format modules' own ``problems()`` plus what they leave out:

* **IndexFile** (:meth:`IndexFile.problems`): header against the geometry; slots and
  prev_index in range, each prev older than its entry (so no cycle can exist and every walk is
  bounded); every chain inside its slot (``key_hash % hash_slot_num``); every entry on exactly
  one chain; hash_slot_count by the slot-count rule. Added here: the header against the entries
  (begin/end phy offsets are the first and last entries', the last entry's time_diff is
  ``(end - begin) // 1000``), entry 0 and every entry from index_count on all zeros, and time
  order along each chain (newest first: time_diff never grows towards older entries; entry 1's
  time_diff is measured from the seed of a follow-on file, so it counts as 0 here).
* **CommitLog**: file size = the mapped file size, names = start offsets, files continuous;
  the record walk (TOTALSIZE, MAGICCODE, field lengths, property block); BODYCRC; the
  PHYSICALOFFSET field = file start + position; every file before the active one (the last
  holding data) ends in the 8-byte end-of-file blank record; a torn tail of the active file is
  a warning (a broker truncates it). As the broker loads a store, an empty last file (deleted
  on load) and all-zero files after the active one (preallocated) are notes, not damage
  (:func:`rmqlab.formats.commitlog.load_files`).
* **ConsumeQueue** (:meth:`ConsumeQueue.problems`): file names and sizes, 20-byte units,
  valid units up to the end, zero end marker and zero tail, no data after the end, blank
  filler units only in front, commitlog offsets increasing and messages not overlapping.
* **checkpoint**: 4096 bytes, zero padding, no negative field.

Across files (store directories only), joined in NumPy with the message table (no Python loop
per entry). The CommitLog is walked once and its table held a window of whole files at a time
(:class:`~rmqlab.verify.check_commitlog.CommitLogScan`): each entry and unit is joined with the
window its offset falls in, so memory follows the window, not the store:

* each index entry's phy_offset is a message boundary; ``index_hash(topic#key)`` of one of that
  message's keys (UNIQ_KEY, KEYS tokens) is its key_hash; its time_diff is what putKey stored
  for the message's store time; no rolled-back message is indexed; every key of every message
  between the first and last indexed offsets has its entry;
* each ConsumeQueue unit's (offset, size, tags code) matches its message: a boundary, TOTALSIZE,
  the broker's tags code (``TAGS.hashCode()``, the delivery time for SCHEDULE_TOPIC_XXXX), the
  queue's topic and queue id, QUEUEOFFSET = the unit's queue offset, not a prepared or rolled
  back record; every dispatchable message before the dispatched end has its unit;
* the checkpoint agrees with the data: physicMsgTimestamp and logicsMsgTimestamp are not
  after the last store time of the messages they stand for, indexMsgTimestamp is 0 or the end
  timestamp of a full index file, confirmPhyOffset is not past the CommitLog's end.

Index entries and ConsumeQueue units below the CommitLog's first file (expired by retention)
are counted in a note, not checked. Each problem is a :class:`Problem`: a check code from
:data:`CHECKS`, a typed :class:`~rmqlab.errors.RmqlabError` naming file, byte offset and field,
a severity ("error" or "warning") and how many such were found (the first is the one named).

>>> import tempfile, os
>>> from rmqlab.formats.indexfile import IndexFile
>>> path = os.path.join(tempfile.mkdtemp(), "20240610061524062")
>>> with IndexFile.create(path, hash_slot_num=8, index_num=5) as f:
...     f.put_key("T#a", 100, 1718000000000)
True
>>> report = verify_path(path, hash_slot_num=8)
>>> report.ok, report.files[0].kind, report.files[0].counts["keys"]
(True, 'index', 1)
>>> print(report.summary()[0].replace(os.path.dirname(path) + os.sep, ""))
20240610061524062: ok: 1 keys of 4, 1 of 8 slots used, longest chain 1
"""
from __future__ import annotations

from rmqlab.verify.check_checkpoint import verify_checkpoint
from rmqlab.verify.check_commitlog import verify_commitlog
from rmqlab.verify.check_consumequeue import verify_consume_queue
from rmqlab.verify.check_index import verify_index_file
from rmqlab.verify.driver import verify_path
from rmqlab.verify.kind import detect_kind
from rmqlab.verify.report import CHECKS, KINDS, FileReport, Problem, VerifyReport

__all__ = [
    "CHECKS",
    "KINDS",
    "Problem",
    "FileReport",
    "VerifyReport",
    "verify_path",
    "verify_index_file",
    "verify_commitlog",
    "verify_consume_queue",
    "verify_checkpoint",
    "detect_kind",
]
