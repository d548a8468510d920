"""Crash harness: kill a store writer with SIGKILL, recover, and count the key lookups lost.

One *trial* (:func:`run_trial`) starts a writer subprocess (``python -m rmqlab.lab.crash writer``)
on a copy of a prepared store and kills it with SIGKILL part way through one *phase*:

``generate``
    :func:`rmqlab.lab.generate.generate_store` writes a workload's CommitLog chunk by chunk and, as the
    broker's ReputMessageService runs behind the CommitLog, ``Store.dispatch`` after each chunk
    (ConsumeQueue units, index entries, checkpoint).
``dispatch``
    ``Store.dispatch`` of a store whose first part was dispatched earlier (its checkpoint says
    so) and whose CommitLog has grown since.
``bulk``
    :func:`rmqlab.store.indexservice.bulk_build` writes the whole index folder of a dispatched store
    (ConsumeQueue and checkpoint present, no index), each file through
    :func:`~rmqlab.formats.indexfile.build_index_file` (temporary name, then rename), and sets
    the checkpoint's indexMsgTimestamp at the end.

Where the kill lands (seeded):

* ``trigger="write"``: the writer kills itself with SIGKILL just before its k-th write event,
  k uniform over the events an uninterrupted run makes (counted once by :func:`calibrate`).
  Events are every ``os.pwrite`` piece (each write is split into ``piece_bytes`` pieces, as a
  broker's memcpy into its mapped file can be cut anywhere: torn records and torn units), every
  ``put_batch`` index puts, twice (before the batch, and after its entries and slots are in the
  map but before its header is: a kill there restores the old header bytes first), each index
  file created, each rename and each checkpoint write.
  Reproducible: the same seed gives the same bytes on disk.
* ``trigger="time"``: the parent sends SIGKILL a uniform random delay after the writer reports
  it is ready, within the duration of an uninterrupted run; this can also land inside the C
  loops writing index entries and headers through the memory map.

What must survive is decided from the bytes at the kill, before any recovery runs
(:func:`written_at_kill`): the writer's uninterrupted run (the calibration's `reference`) wrote
the same bytes in the same order, so the crashed CommitLog is a byte prefix of the reference's
(zeros after it), and a message was *written* when all its bytes are in that prefix. Counting
against the CommitLog as recovered instead would let a recovery that drops complete messages
pass: their keys would no longer be asked for.

After the kill the crashed folder is copied twice:

* copy A: :func:`rmqlab.store.recover.recover_store`; then every written message must still be in the
  CommitLog, byte for byte at its offset (else it counts in ``messages_lost``), and every key of
  it (UNIQ_KEY and each KEYS token, as buildIndex indexes them) must find it
  (:func:`check_lookups`: the verified-mode walk of every index file, which a sample
  cross-checks against ``Store.explain_key(...).verified``; a key of a lost message counts as a
  lost lookup); :func:`rmqlab.verify.verify_path` must find no error; and the ConsumeQueue,
  index files and checkpoint must be byte-equal to a fresh one-go ``Store.dispatch`` of the
  written messages alone (the reference CommitLog cut after the last written message);
* copy B: :func:`rmqlab.store.recover.broker_restart`, the broker's own restart after an abnormal
  shutdown (index files newer than indexMsgTimestamp deleted, re-dispatch from the recovery
  file only), and the same lookups of the written messages.

:func:`run_trials` runs many trials into a DataFrame; :func:`summary_table` and
:func:`summary_markdown` summarise it per phase
(:func:`rmqlab.viz.crash.losses_figure` draws the table).

>>> PHASES
('generate', 'dispatch', 'bulk')
>>> CrashConfig().workload().messages
400
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.formats import checkpoint as cpf
from rmqlab.formats import commitlog as cl
from rmqlab.formats import storepaths
from rmqlab.formats.indexfile import HEADER, IndexFile
from rmqlab.formats.storepaths import StorePaths
from rmqlab.jvm.hashcode import index_hash_many
from rmqlab.jvm.longs import INT_MAX, LONG_MAX
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload, generate
from rmqlab.store.directory import Store
from rmqlab.store.indexservice import IndexService, bulk_build, is_index_file_name
from rmqlab.store.recover import (
    broker_restart,
    expected_index_files,
    expected_index_rows,
    is_index_temp_name,
    recover_store,
)

__all__ = [
    "PHASES",
    "TRIGGERS",
    "CrashConfig",
    "Calibration",
    "WriterRun",
    "WrittenAtKill",
    "CrashImageError",
    "LookupCheck",
    "TrialResult",
    "prepare_template",
    "calibrate",
    "run_writer",
    "written_at_kill",
    "check_lookups",
    "compare_stores",
    "run_trial",
    "run_trials",
    "summary_table",
    "summary_markdown",
    "RestartStory",
    "restart_story",
]

PHASES = ("generate", "dispatch", "bulk")
TRIGGERS = ("write", "time")
_UTC = _dt.UTC


@dataclass(frozen=True)
class CrashConfig:
    """The store every trial writes: small files so that a few hundred messages roll over
    CommitLog, ConsumeQueue and index files many times.

    The rate is low (10 messages/s of store time) so that the broker's recovery window (3 s
    before the checkpoint's timestamps) is shorter than an index file: the case where its
    restart rule loses keys. All sizes in bytes.
    """

    messages: int = 400
    workload_seed: int = 1
    rate: float = 10.0                    # messages/s of store time
    keys_per_message: float = 1.5
    topics: tuple[str, ...] = ("TopicTest", "orders")
    chunk_messages: int = 25              # generate: CommitLog appends between two dispatches
    dispatch_fraction: float = 0.5        # dispatch: share of messages dispatched before the writer runs
    commitlog_file_size: int = 8192
    consume_queue_file_size: int = 400    # 20 units a file
    hash_slot_num: int = 64
    index_num: int = 256                  # 255 keys a file
    piece_bytes: int = 96                 # writes are split into pieces of this size (torn records and units)
    put_batch: int = 16                   # index puts per write event

    def workload(self) -> Workload:
        return Workload(messages=self.messages, seed=self.workload_seed, rate=self.rate,
                        keys_per_message=self.keys_per_message, topics=tuple(self.topics))

    def store_options(self) -> dict[str, Any]:
        """Keyword arguments of :class:`rmqlab.store.directory.Store` (CommitLog file size included)."""
        return dict(hash_slot_num=self.hash_slot_num, index_num=self.index_num,
                    commitlog_file_size=self.commitlog_file_size,
                    consume_queue_file_size=self.consume_queue_file_size, tz=_UTC)

    def geometry(self) -> dict[str, Any]:
        """Keyword arguments of recover_store / broker_restart / verify_path."""
        return dict(hash_slot_num=self.hash_slot_num, index_num=self.index_num,
                    commitlog_file_size=self.commitlog_file_size)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> CrashConfig:
        d = json.loads(text)
        d["topics"] = tuple(d["topics"])
        return cls(**d)


# ------------------------------------------------------------------------------ the writer (child side)


class _Events:
    """Counts write events; SIGKILLs this process just before event `kill_at` (0 = never)."""

    def __init__(self, kill_at: int, log: bool):
        self.kill_at = kill_at
        self.count = 0
        self.kinds: list[str] | None = [] if log else None

    def tick(self, kind: str, before_kill: Callable[[], None] | None = None) -> None:
        self.count += 1
        if self.kinds is not None:
            self.kinds.append(kind)
        if self.count == self.kill_at:
            if before_kill is not None:
                before_kill()
            os.kill(os.getpid(), signal.SIGKILL)


def _slice(keys, lo, hi):
    if keys is None:         # the puts came with their hashes only
        return None
    return keys.slice(lo, hi - lo) if hasattr(keys, "slice") else keys[lo:hi]


def _instrument(ev: _Events, piece: int, put_batch: int) -> None:
    """Route the writer's writes through `ev` (this process only)."""
    real_pwrite, real_replace = os.pwrite, os.replace

    def pwrite(fd, data, offset):
        mv = memoryview(data).cast("B")
        n, done = len(mv), 0
        kind = "pwrite"
        if ev.kinds is not None:     # calibration: say which folder, for tests that aim the kill
            target = os.readlink(f"/proc/self/fd/{fd}") if os.path.exists(f"/proc/self/fd/{fd}") else ""
            kind += ":" + next((part for part in (storepaths.COMMITLOG, storepaths.CONSUMEQUEUE, storepaths.INDEX) if
                                f"{os.sep}{part}{os.sep}" in target), "other")
        while done < n:
            ev.tick(kind if done == 0 else kind + ":cont")   # ":cont": a piece inside one write call
            done += real_pwrite(fd, mv[done:done + piece], offset + done)
        return n

    def replace(src, dst, *a, **kw):
        ev.tick("rename")
        return real_replace(src, dst, *a, **kw)

    real_put_keys = IndexFile.put_keys

    def put_keys(self, keys, phy_offsets, store_timestamps, *, hashes=None, threads=None):
        phy, ts = np.asarray(phy_offsets), np.asarray(store_timestamps)
        n, done = len(phy), 0
        while done < n:
            ev.tick("put")
            lo, hi = done, min(n, done + put_batch)
            header = bytes(self._mm[:HEADER.size])
            got = real_put_keys(self, _slice(keys, lo, hi), phy[lo:hi], ts[lo:hi],
                                hashes=None if hashes is None else hashes[lo:hi], threads=threads)
            # a kill here: the batch's entries and slots are in the map, its header is not yet
            ev.tick("put:header", lambda header=header: self._mm.__setitem__(slice(0, HEADER.size), header))
            done += got
            if got < hi - lo:       # the file is full
                break
        return done

    real_create = IndexFile.create.__func__

    def create(cls, *a, **kw):
        f = real_create(cls, *a, **kw)
        ev.tick("create")
        return f

    for name in ("write_checkpoint", "update_checkpoint"):
        real = getattr(cpf, name)

        def hooked(*a, _real=real, **kw):
            ev.tick("checkpoint")
            return _real(*a, **kw)

        setattr(cpf, name, hooked)
    os.pwrite, os.replace = pwrite, replace
    IndexFile.put_keys = put_keys
    IndexFile.create = classmethod(create)


def _creator_times(rows, cap: int, store_ts: np.ndarray) -> list[int]:
    """Store time of the message that creates each index file of an uninterrupted dispatch."""
    k, msg = len(rows), rows.message_index
    last = int(msg[-1]) if k else -1
    out = []
    for i in range(expected_index_files(k, cap, len(store_ts), last)):
        lo = i * cap
        if lo == 0:
            creator = 0
        elif lo < k and msg[lo] == msg[lo - 1]:
            creator = int(msg[lo])
        else:
            creator = int(msg[lo - 1]) + 1
        out.append(int(store_ts[creator]))
    return out


def bulk_index(root: str | os.PathLike, config: CrashConfig) -> list[Path]:
    """The bulk phase's work: build the index folder of a store in one go with
    :func:`rmqlab.store.indexservice.bulk_build` (files named as ``Store.dispatch`` names them: by the
    store time of the message creating each), then set the checkpoint's indexMsgTimestamp as
    dispatch leaves it. Returns the files written. Cost: O(keys) in C plus the files' zero-fill."""
    root = Path(root)
    msgs = cl.read_columns(StorePaths(root).commitlog, body=False)
    rows = expected_index_rows(msgs)
    cap = config.index_num - 1
    times = _creator_times(rows, cap, msgs["store_timestamp"].to_numpy(np.int64))
    paths = bulk_build(rows, StorePaths(root).index, hash_slot_num=config.hash_slot_num, index_num=config.index_num,
                       clock=iter(times).__next__, tz=_UTC)
    ts = int(rows.store_timestamps[(len(paths) - 1) * cap - 1]) if len(paths) >= 2 else 0
    cpf.update_checkpoint(StorePaths(root).checkpoint, index_msg_timestamp=ts)
    return paths


def _do_phase(phase: str, root: Path, config: CrashConfig) -> None:
    opts = config.store_options()
    if phase == "generate":
        def progress(done, total):     # the reput service, behind the CommitLog
            Store(root, **opts).dispatch()

        cl_size = opts.pop("commitlog_file_size")
        generate_store(root, config.workload(), chunk_messages=config.chunk_messages, commitlog_file_size=cl_size,
                       dispatch=True, progress=progress, **opts)
    elif phase == "dispatch":
        Store(root, **opts).dispatch()
    elif phase == "bulk":
        bulk_index(root, config)
    else:
        raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")


def _writer_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m rmqlab.lab.crash writer")
    ap.add_argument("--phase", required=True, choices=PHASES)
    ap.add_argument("--root", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--kill-at", type=int, default=0)
    ap.add_argument("--log-kinds", action="store_true")
    a = ap.parse_args(argv)
    config = CrashConfig.from_json(a.config)
    ev = _Events(a.kill_at, a.log_kinds)
    _instrument(ev, config.piece_bytes, config.put_batch)
    print("ready", flush=True)
    t0 = time.perf_counter()
    _do_phase(a.phase, Path(a.root), config)
    print(json.dumps({"events": ev.count, "seconds": time.perf_counter() - t0, "kinds": ev.kinds}), flush=True)
    return 0


# ------------------------------------------------------------------------------ parent side


def prepare_template(phase: str, config: CrashConfig, directory: str | os.PathLike) -> Path:
    """The store a phase's writer starts from, written in this process into `directory`/store:
    nothing (generate); the first ``dispatch_fraction`` of the workload dispatched and the rest
    appended to the CommitLog (dispatch); the whole workload dispatched, then the index folder
    removed and indexMsgTimestamp reset (bulk). Deterministic. Cost: one generate + dispatch."""
    root = Path(directory) / "store"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    opts = config.store_options()
    if phase == "generate":
        return root
    if phase == "dispatch":
        table = generate(config.workload())
        k = int(table.num_rows * config.dispatch_fraction)
        with cl.CommitLogWriter(StorePaths(root).commitlog, config.commitlog_file_size) as w:
            w.append(table.slice(0, k))
        Store(root, **opts).dispatch()
        with cl.CommitLogWriter(StorePaths(root).commitlog, config.commitlog_file_size) as w:
            w.append(table.slice(k))
        return root
    if phase == "bulk":
        cl_size = opts.pop("commitlog_file_size")
        generate_store(root, config.workload(), commitlog_file_size=cl_size, **opts)
        shutil.rmtree(StorePaths(root).index)
        cpf.update_checkpoint(StorePaths(root).checkpoint, index_msg_timestamp=0)
        return root
    raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")


@dataclass
class WriterRun:
    """One writer subprocess: how it ended and what it reported."""

    returncode: int
    killed: bool              # ended by SIGKILL
    events: int | None        # write events made (None when killed)
    seconds: float | None     # its work time (None when killed)
    elapsed: float            # parent's clock from "ready" to the end, s
    kinds: list[str] | None = None


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    pkg_root = str(Path(__file__).resolve().parents[2])   # the folder that holds the rmqlab package
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_writer(root: str | os.PathLike, phase: str, config: CrashConfig, *, kill_at: int = 0,
               delay: float | None = None, log_kinds: bool = False, timeout: float = 300.0) -> WriterRun:
    """Run a phase's writer on `root` in a subprocess. `kill_at` > 0: it SIGKILLs itself before
    that write event; `delay`: the parent SIGKILLs it that many seconds after it is ready (if
    still running). Raises RuntimeError when the writer fails otherwise or exceeds `timeout` s."""
    cmd = [sys.executable, "-m", "rmqlab.lab.crash", "writer", "--phase", phase, "--root", str(root),
           "--config", config.to_json(), "--kill-at", str(int(kill_at))] + (["--log-kinds"] if log_kinds else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_child_env())
    try:
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        line = proc.stdout.readline() if ready else ""
        t_ready = time.perf_counter()
        if line.strip() != "ready":
            proc.kill()
            out, err = proc.communicate(timeout=30)
            raise RuntimeError(f"writer did not start ({line!r}): {err[-2000:]}")
        if delay is not None:
            try:
                proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        raise
    elapsed = time.perf_counter() - t_ready
    rc = proc.returncode
    if rc == -signal.SIGKILL:
        return WriterRun(rc, True, None, None, elapsed)
    if rc != 0:
        raise RuntimeError(f"writer failed with exit status {rc}: {err[-3000:]}")
    done = json.loads(out.strip().splitlines()[-1])
    return WriterRun(rc, False, done["events"], done["seconds"], elapsed, done["kinds"])


@dataclass
class Calibration:
    """An uninterrupted run of a phase's writer: its write events (and their kinds, in order:
    pwrite:commitlog / pwrite:consumequeue, ":cont" for a piece inside one write call, put,
    put:header, create, rename, checkpoint),
    its work time, the template it started from and the store it left (`reference`)."""

    phase: str
    events: int
    seconds: float
    kinds: list[str]
    template: Path
    reference: Path


_CALIBRATIONS: dict[tuple, Calibration] = {}


def calibrate(phase: str, config: CrashConfig, workdir: str | os.PathLike) -> Calibration:
    """Prepare the phase's template under `workdir` and run its writer once to the end (cached per
    phase, config and workdir in this process). Cost: one template and one writer run."""
    workdir = Path(workdir)
    key = (phase, config, str(workdir.resolve()))
    c = _CALIBRATIONS.get(key)
    if c is not None and c.template.exists() and c.reference.exists():
        return c
    base = workdir / "_templates" / phase
    template = prepare_template(phase, config, base)
    reference = base / "reference"
    if reference.exists():
        shutil.rmtree(reference)
    shutil.copytree(template, reference)
    run = run_writer(reference, phase, config, log_kinds=True)
    c = Calibration(phase, int(run.events), float(run.seconds), list(run.kinds or []), template, reference)
    _CALIBRATIONS[key] = c
    return c


# ------------------------------------------------------------------------------ what the writer had written


def _images(commitlog_dir: Path, like: list[cl.StoreFile]) -> list[np.ndarray]:
    """The bytes of the files of `commitlog_dir` named as those of `like`, each zero-padded or cut
    to its namesake's size: CommitLog files are created at full size, zero-filled, so a byte never
    written reads as zero. An absent file is all zeros."""
    out = []
    for f in like:
        img = np.zeros(f.size, np.uint8)
        p = commitlog_dir / f.path.name
        if p.is_file():
            got = np.fromfile(p, np.uint8)[:f.size]
            img[:len(got)] = got
        out.append(img)
    return out


@dataclass
class WrittenAtKill:
    """The messages a killed writer had completely written: every record of the uninterrupted
    run's CommitLog whose bytes all lie in the prefix the crashed CommitLog shares with it.
    Offsets and sizes in bytes."""

    messages: pd.DataFrame        # rows of the reference CommitLog (read_columns, no body), in order
    written_end: int              # end of the byte prefix the crashed CommitLog shares with the reference
    reference: Path               # the uninterrupted run's ``commitlog`` folder

    @property
    def end(self) -> int:
        """Offset after the last written message (0 when none)."""
        m = self.messages
        return int((m["phy_offset"] + m["total_size"]).max()) if len(m) else 0

    def intact(self, root: str | os.PathLike) -> np.ndarray:
        """Per written message: does `root`'s CommitLog still hold its bytes at its offset?
        Cost: reads `root`'s CommitLog files once."""
        files = cl.store_files(self.reference) if self.reference.is_dir() else []
        if not len(self.messages):
            return np.zeros(0, bool)
        ref, got = _images(self.reference, files), _images(StorePaths(root).commitlog, files)
        starts = np.array([f.start_offset for f in files], np.int64)
        out = np.zeros(len(self.messages), bool)
        for i, (pos, size) in enumerate(zip(self.messages["phy_offset"].to_numpy(np.int64),
                                            self.messages["total_size"].to_numpy(np.int64))):
            j = int(np.searchsorted(starts, pos, side="right")) - 1
            lo = int(pos - starts[j])
            out[i] = bool(np.array_equal(ref[j][lo:lo + size], got[j][lo:lo + size]))
        return out

    def write_commitlog(self, dst: str | os.PathLike) -> Path:
        """Write into `dst` the CommitLog a writer that stopped cleanly after the last written
        message would leave: the reference's files up to it, zeros after it. Returns `dst`."""
        dst = Path(dst)
        dst.mkdir(parents=True, exist_ok=True)
        end = self.end
        for f in cl.store_files(self.reference):
            if f.start_offset >= max(end, 1):
                break
            img = np.fromfile(f.path, np.uint8)
            img[max(0, end - f.start_offset):] = 0
            img.tofile(dst / f.path.name)
        return dst


class CrashImageError(RuntimeError):
    """The crashed CommitLog is no byte prefix of the uninterrupted run's: what the writer had
    written cannot be told from its bytes."""


def written_at_kill(crashed: str | os.PathLike, reference: str | os.PathLike) -> WrittenAtKill:
    """The messages whose bytes were whole in `crashed`'s CommitLog when its writer was killed,
    told from the bytes alone: `reference` is the store the same writer left when not killed.

    The writer appends in offset order into zero-filled files, so the crashed CommitLog must
    equal the reference's up to some offset (`written_end`) and be zero after it; a message is
    written when it ends at or before that offset. Independent of :mod:`rmqlab.store.recover`.
    Cost: reads both CommitLogs once.

    >>> import tempfile
    >>> from rmqlab.lab.workload import generate
    >>> d = Path(tempfile.mkdtemp())
    >>> with cl.CommitLogWriter(d / "ref" / "commitlog", 8192) as w:
    ...     _ = w.append(generate(Workload(messages=5, seed=1)))
    >>> shutil.copytree(d / "ref", d / "crashed") and None
    >>> f = cl.store_files(d / "crashed" / "commitlog")[0].path
    >>> m = cl.read_columns(f, body=False)
    >>> cut = int(m.phy_offset[3]) + 10             # killed 10 bytes into the fourth message
    >>> with open(f, "r+b") as fh:
    ...     _ = fh.seek(cut); _ = fh.write(bytes(8192 - cut))
    >>> w = written_at_kill(d / "crashed", d / "ref")
    >>> len(w.messages), w.written_end - cut >= 0, w.end == int(m.phy_offset[3])
    (3, True, True)
    >>> shutil.rmtree(d)

    Raises :class:`CrashImageError` when a non-zero byte of `crashed` follows the first byte
    that differs from `reference` (the writer is not deterministic, or the files were touched).
    """
    ref_dir, crashed_dir = StorePaths(reference).commitlog, StorePaths(crashed).commitlog
    files = cl.store_files(ref_dir) if ref_dir.is_dir() else []
    names = {f.path.name for f in files}
    if crashed_dir.is_dir():
        for p in crashed_dir.iterdir():
            if p.is_file() and p.name not in names and np.fromfile(p, np.uint8).any():
                raise CrashImageError(f"{p}: a CommitLog file the uninterrupted run did not write")
    written_end = None
    for f, want, got in zip(files, _images(ref_dir, files), _images(crashed_dir, files)):
        if written_end is None:
            diff = np.flatnonzero(want != got)
            if len(diff):
                written_end = f.start_offset + int(diff[0])
                rest = np.flatnonzero(got[int(diff[0]):])
                if len(rest):
                    raise CrashImageError(f"{crashed_dir / f.path.name}: byte {int(diff[0]) + int(rest[0])} is "
                                          f"non-zero after the first byte that differs from the reference "
                                          f"({int(diff[0])})")
        elif got.any():
            raise CrashImageError(f"{crashed_dir / f.path.name}: written after a file the writer had not finished")
    if written_end is None:
        written_end = files[-1].start_offset + files[-1].size if files else 0
    msgs = cl.read_columns(ref_dir, body=False) if files else pd.DataFrame(
        {"phy_offset": np.zeros(0, np.int64), "total_size": np.zeros(0, np.int64)})
    whole = (msgs["phy_offset"] + msgs["total_size"]).to_numpy(np.int64) <= written_end
    return WrittenAtKill(msgs[whole].reset_index(drop=True), int(written_end), ref_dir)


# ------------------------------------------------------------------------------ lookups


@dataclass
class LookupCheck:
    """Every key of every message that must be found, looked up in verified mode."""

    messages: int                 # messages that must be found (written at the kill, or complete in the CommitLog)
    lookups: int                  # (message, key) pairs buildIndex indexes for them
    lost: int                     # pairs whose message the key does not find, or whose message is gone
    lost_examples: list[str] = field(default_factory=list)
    sample_checked: int = 0       # pairs also asked through Store.explain_key(...).verified
    sample_agree: bool = True     # ... with the same answer
    messages_lost: int = 0        # written messages no longer in the CommitLog byte for byte
    #: every lost pair: key (topic#key), phy_offset, store_timestamp, message_gone
    lost_pairs: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["key", "phy_offset", "store_timestamp", "message_gone"]))


def check_lookups(root: str | os.PathLike, *, hash_slot_num: int, index_num: int, sample: int = 0,
                  seed: int = 0, tz: _dt.tzinfo | None = None, written: WrittenAtKill | None = None) -> LookupCheck:
    """Is every message that must survive found by each of its keys in verified mode?

    The messages are `written`'s (what a killed writer had completely written: each must still
    be in the CommitLog byte for byte, else it counts in `messages_lost` and all its keys as
    lost) or, when `written` is None, the complete messages of the store's own CommitLog (which
    cannot see messages a recovery dropped).

    For each index file, every distinct ``topic#key`` of the complete messages is walked with the
    broker's chain walk but no early stop (max_num 2^31-1, time range [0, Long.MAX_VALUE]): the
    candidates verified mode (:mod:`rmqlab.store.keyquery`) reads, in C
    (``IndexFile.select_phy_offsets_many``). A message is found by a key when its offset is among
    the key's candidates: verified mode then reads it and keeps it, its topic and key being
    real. `sample` pairs are also asked through ``Store.explain_key(...).verified`` and must give
    the same answer (`sample_agree`). Read-only. Cost: O(keys x files) walks in C.
    """
    root = Path(root)
    d = StorePaths(root).commitlog
    if written is not None:
        msgs = written.messages
        intact = written.intact(root)
    else:
        msgs = cl.read_columns(d, body=False, on_error="report") if d.is_dir() and any(d.iterdir()) else pd.DataFrame()
        intact = np.ones(len(msgs), bool)
    missing = int((~intact).sum())
    rows = expected_index_rows(msgs)
    k = len(rows)
    if not k:
        return LookupCheck(len(msgs), 0, 0, messages_lost=missing)
    keys = np.asarray(rows.key_list(), dtype=object)
    ukeys, key_id = np.unique(keys, return_inverse=True)
    hashes = index_hash_many(list(ukeys))
    found_parts = []
    index_dir = StorePaths(root).index
    if index_dir.is_dir():
        with IndexService(index_dir, hash_slot_num, index_num, strict=False) as svc:
            for f in svc.files:
                res = f.select_phy_offsets_many(None, INT_MAX, 0, LONG_MAX, hashes=hashes)
                counts = res.counts()
                found_parts.append(pd.DataFrame({"k": np.repeat(np.arange(len(ukeys)), counts),
                                                 "p": np.asarray(res.phy_offsets, np.int64)}))
    want = pd.DataFrame({"k": key_id.astype(np.int64), "p": rows.phy_offsets})
    if found_parts:
        found = pd.concat(found_parts).drop_duplicates()
        hit = want.merge(found.assign(hit=1), on=["k", "p"], how="left")["hit"].notna().to_numpy(bool)
    else:
        hit = np.zeros(k, bool)
    # an index entry still pointing at a message's offset does not find it once its bytes are gone
    present = intact[np.asarray(rows.message_index, np.int64)]
    hit &= present
    lost_idx = np.flatnonzero(~hit)
    examples = [f"{keys[i]} @ {int(rows.phy_offsets[i])}{'' if present[i] else ' (message gone)'}"
                for i in lost_idx[:5]]
    lost_pairs = pd.DataFrame({"key": keys[lost_idx].astype(str), "phy_offset": rows.phy_offsets[lost_idx],
                               "store_timestamp": rows.store_timestamps[lost_idx], "message_gone": ~present[lost_idx]})
    out = LookupCheck(len(msgs), k, int(len(lost_idx)), examples, messages_lost=missing, lost_pairs=lost_pairs)
    if sample and index_dir.is_dir():
        rng = np.random.default_rng(seed)
        picks = rng.choice(k, size=min(sample, k), replace=False)
        if len(lost_idx):   # include lost ones: verified mode must miss them too
            picks = np.unique(np.concatenate([picks, lost_idx[:max(1, sample // 2)]]))
        store = Store(root, hash_slot_num=hash_slot_num, index_num=index_num, tz=tz)
        agree = True
        for i in picks:
            topic, key = str(keys[i]).split("#", 1)
            q = store.explain_key(topic, key)
            agree &= bool(int(rows.phy_offsets[i]) in set(q.verified["phy_offset"].tolist())) == bool(hit[i])
        out.sample_checked, out.sample_agree = len(picks), bool(agree)
    return out


def compare_stores(a: str | os.PathLike, b: str | os.PathLike) -> list[str]:
    """Differences between the ConsumeQueue files, index files and checkpoints of two stores
    (names and bytes); empty when they are byte-equal. An absent folder equals an empty one."""
    a, b = Path(a), Path(b)
    out = []

    def listing(root: Path, sub: str, pattern: Callable[[Path], bool]) -> dict[str, Path]:
        d = root / sub
        if not d.is_dir():
            return {}
        return {str(p.relative_to(root)): p for p in d.rglob("*") if p.is_file() and pattern(p)}

    for sub, pat in ((storepaths.CONSUMEQUEUE, lambda p: p.name.isdigit() and len(p.name) == 20),
                     (storepaths.INDEX, lambda p: is_index_file_name(p.name))):
        la, lb = listing(a, sub, pat), listing(b, sub, pat)
        for name in sorted(set(la) | set(lb)):
            if name not in la or name not in lb:
                out.append(f"{name}: only in {'the first' if name in la else 'the second'}")
            elif la[name].read_bytes() != lb[name].read_bytes():
                out.append(f"{name}: bytes differ")
    ca, cb = StorePaths(a).checkpoint, StorePaths(b).checkpoint
    if ca.exists() != cb.exists() or (ca.exists() and ca.read_bytes() != cb.read_bytes()):
        out.append("checkpoint: differs")
    return out


# ------------------------------------------------------------------------------ trials


@dataclass
class TrialResult:
    """One crash trial. Times in seconds; offsets in bytes."""

    phase: str
    seed: int
    trigger: str
    kill_event: int | None          # write trigger: the event the writer died before
    kill_delay: float | None        # time trigger: seconds after "ready" the parent sent SIGKILL
    killed: bool                    # False when the writer finished before the delay ran out
    events_total: int               # write events of an uninterrupted run
    elapsed: float                  # writer's life after "ready"
    messages_complete: int          # messages whose bytes were whole on disk at the kill (written_at_kill)
    messages_recovered: int         # complete messages in the recovered CommitLog
    kept_torn: bool                 # ... one of them the record cut at the kill after its body (the broker keeps it)
    messages_lost: int              # written at the kill, not in the recovered CommitLog byte for byte
    torn_bytes: int
    lookups: int                    # (message, key) pairs of the written messages
    lost_rmqlab: int                # ... not found after recover_store (a lost message loses all its keys)
    lost_broker: int                # ... not found after the broker's restart rule
    verify_ok: bool
    verify_errors: int
    fresh_equal: bool               # recovered CQ/index/checkpoint == a fresh one-go dispatch of the written messages
    fresh_diffs: list[str]
    atomic_ok: bool | None          # bulk: every file under a final name is complete
    temp_files: int                 # hidden temporary index files found (and removed by recover)
    recover_actions: dict[str, int]
    index_files_removed: int
    index_entries_added: int
    cq_units_dropped: int
    broker_files_deleted: int
    broker_keys_deleted: int
    broker_recovery_from: int
    sample_agree: bool
    seconds: float
    lost_examples: list[str] = field(default_factory=list)
    verify_examples: list[str] = field(default_factory=list)   # the first few of verify's errors

    def as_row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _copy(src: Path, dst: Path) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    return dst


def run_trial(workdir: str | os.PathLike, phase: str, seed: int, *, config: CrashConfig | None = None,
              trigger: str = "write", kill_at: int | None = None, delay: float | None = None,
              sample_verified: int = 3, compare_fresh: bool = True, keep: bool = False) -> TrialResult:
    """One crash trial (see the module docstring): prepare/calibrate the phase (cached), copy
    its template, run the writer and kill it where `seed` says (or at `kill_at` / after
    `delay`), tell the written messages from the crashed bytes (:func:`written_at_kill`), then
    recover copy A with :func:`rmqlab.store.recover.recover_store` and check it against them, apply
    the broker's restart to copy B and check it. Everything happens under `workdir`; the
    trial's folders are removed unless `keep`.
    Cost: a writer process (mostly its interpreter start-up) plus the checks, O(messages)."""
    if trigger not in TRIGGERS:
        raise ValueError(f"trigger must be one of {TRIGGERS}, got {trigger!r}")
    config = config or CrashConfig()
    workdir = Path(workdir)
    t0 = time.perf_counter()
    cal = calibrate(phase, config, workdir)
    rng = np.random.default_rng([int(seed), PHASES.index(phase), TRIGGERS.index(trigger)])
    tdir = workdir / f"trial-{phase}-{trigger}-{seed}"
    if tdir.exists():
        shutil.rmtree(tdir)
    crashed = _copy(cal.template, tdir / "crashed")
    if trigger == "write":
        kill_at = int(kill_at if kill_at is not None else rng.integers(1, cal.events + 1))
        run = run_writer(crashed, phase, config, kill_at=kill_at)
    else:
        delay = float(delay if delay is not None else rng.uniform(0.0, cal.seconds))
        run = run_writer(crashed, phase, config, delay=delay)
    geo = config.geometry()
    written = written_at_kill(crashed, cal.reference)
    index_dir = StorePaths(crashed).index
    temp = [p.name for p in index_dir.iterdir() if is_index_temp_name(p.name)] if index_dir.is_dir() else []
    atomic = None
    if phase == "bulk":
        atomic = True
        if index_dir.is_dir():
            for p in index_dir.iterdir():
                if is_index_file_name(p.name):
                    ref = StorePaths(cal.reference).index / p.name
                    atomic &= ref.exists() and ref.read_bytes() == p.read_bytes()
    a = _copy(crashed, tdir / "A")
    b = _copy(crashed, tdir / "B")
    rec = recover_store(a, consume_queue_file_size=config.consume_queue_file_size, tz=_UTC, **geo)
    la = check_lookups(a, hash_slot_num=config.hash_slot_num, index_num=config.index_num, sample=sample_verified,
                       seed=seed, tz=_UTC, written=written)
    recovered_dir = StorePaths(a).commitlog
    kept = (cl.read_columns(recovered_dir, body=False, on_error="report")["phy_offset"].to_numpy(np.int64)
            if recovered_dir.is_dir() and any(recovered_dir.iterdir()) else np.zeros(0, np.int64))
    # The record being copied at the kill, cut after its CRC-checked body (in TOPIC or
    # PROPERTIES, which no check reads), passes CommitLog.checkMessageAndReturnSize: the broker
    # keeps it, and so does recover. It is the one record recovery may keep beyond the written.
    extra = np.setdiff1d(kept, written.messages["phy_offset"].to_numpy(np.int64))
    kept_torn = len(extra) == 1 and int(extra[0]) == written.end
    from rmqlab.verify import verify_path

    # kind: a kill before the first write leaves an empty folder, still a store to verify
    ver = verify_path(a, kind="store", consume_queue_file_size=config.consume_queue_file_size, **geo)
    diffs: list[str] = []
    if compare_fresh:
        fresh = tdir / "fresh"
        fresh.mkdir(parents=True, exist_ok=True)
        if kept_torn:    # the written messages and the torn record kept: the recovered CommitLog
            shutil.copytree(recovered_dir, StorePaths(fresh).commitlog)
        elif len(written.messages):
            written.write_commitlog(StorePaths(fresh).commitlog)
        if StorePaths(fresh).has_commitlog():
            Store(fresh, **config.store_options()).dispatch()
        diffs = compare_stores(a, fresh)
    br = broker_restart(b, hash_slot_num=config.hash_slot_num, index_num=config.index_num,
                        commitlog_file_size=config.commitlog_file_size, tz=_UTC)
    lb = check_lookups(b, hash_slot_num=config.hash_slot_num, index_num=config.index_num, sample=sample_verified,
                       seed=seed + 1, tz=_UTC, written=written)
    kinds: dict[str, int] = {}
    for act in rec.actions:
        kinds[act.kind] = kinds.get(act.kind, 0) + 1
    res = TrialResult(
        phase=phase, seed=int(seed), trigger=trigger, kill_event=kill_at if trigger == "write" else None,
        kill_delay=delay if trigger == "time" else None, killed=run.killed, events_total=cal.events,
        elapsed=run.elapsed, messages_complete=la.messages, messages_recovered=len(kept),
        kept_torn=kept_torn,
        messages_lost=la.messages_lost, torn_bytes=rec.torn_bytes, lookups=la.lookups,
        lost_rmqlab=la.lost, lost_broker=lb.lost, verify_ok=ver.ok, verify_errors=len(ver.errors),
        fresh_equal=not diffs, fresh_diffs=diffs, atomic_ok=atomic, temp_files=len(temp), recover_actions=kinds,
        index_files_removed=len(rec.index_files_removed), index_entries_added=rec.index_entries_added,
        cq_units_dropped=rec.cq_units_dropped, broker_files_deleted=len(br.index_files_deleted),
        broker_keys_deleted=br.index_keys_deleted, broker_recovery_from=br.recovery_from_offset,
        sample_agree=la.sample_agree and lb.sample_agree, seconds=time.perf_counter() - t0,
        lost_examples=la.lost_examples, verify_examples=[str(e) for e in ver.errors[:3]])
    if not keep:
        shutil.rmtree(tdir, ignore_errors=True)
    return res


def run_trials(n: int, phases: tuple[str, ...] = PHASES, seed: int = 0, *, workdir: str | os.PathLike | None = None,
               config: CrashConfig | None = None, triggers: tuple[str, ...] = TRIGGERS, jobs: int = 1,
               progress: Callable[[int, TrialResult], None] | None = None, **trial_options) -> pd.DataFrame:
    """`n` trials, phases in turn and, within each phase, triggers in turn; trial i has seed
    ``seed * 100003 + i``. One row a trial (the fields of :class:`TrialResult`), in trial order.
    `jobs` trials run at once (threads, each waiting on its own writer process; the phases are
    calibrated first, one at a time). `workdir` None: a temporary folder, removed afterwards.
    Cost: :func:`run_trial`'s a trial (mostly the writer's interpreter start-up), divided by
    `jobs`, on as many cores."""
    from concurrent.futures import ThreadPoolExecutor

    config = config or CrashConfig()
    own = workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="rmqlab-crash-")) if own else Path(workdir)
    plan = [(phases[i % len(phases)], triggers[(i // len(phases)) % len(triggers)], seed * 100003 + i)
            for i in range(n)]
    rows: list[dict | None] = [None] * n
    try:
        for phase in dict.fromkeys(p for p, _, _ in plan):
            calibrate(phase, config, workdir)

        def one(i):
            phase, trigger, s = plan[i]
            return i, run_trial(workdir, phase, s, config=config, trigger=trigger, **trial_options)

        with ThreadPoolExecutor(max_workers=max(1, int(jobs))) as pool:
            for i, r in pool.map(one, range(n)):
                rows[i] = r.as_row()
                if progress is not None:
                    progress(i, r)
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)
    cols = [f.name for f in dataclasses.fields(TrialResult)]
    return pd.DataFrame(rows, columns=cols)


# ------------------------------------------------------------------------------ one crash, told


@dataclass
class RestartStory:
    """One real crash and the two restarts of it (see :func:`restart_story`). Times in ms since
    the epoch, offsets in bytes."""

    phase: str
    kill_at: int                        # the write event the writer died before
    events_total: int                   # write events of an uninterrupted run
    messages_written: int               # messages whole on disk at the kill
    lookups: int                        # (message, key) pairs buildIndex indexes for them
    checkpoint: dict[str, Any]          # the checkpoint as the crash left it
    index_files: pd.DataFrame           # the crashed index folder: name, begin/end timestamps, keys, deleted
    broker: Any                         # rmqlab.store.recover.BrokerRestartReport
    broker_lost: pd.DataFrame           # lost pairs after the broker's restart, with the file that held each
    recovered: Any                      # rmqlab.store.recover.RecoveryReport
    rmqlab_lost: pd.DataFrame           # lost pairs after rmqlab store recover (none expected)
    root: Path                          # the folder holding crashed/, broker/ and recovered/
    written_timestamps: np.ndarray      # store time of every message written before the kill
    lookup_timestamps: np.ndarray       # store time of the message of every lookup (one per key)
    recovery_from_timestamp: int | None  # store time of the first message the broker re-dispatched


def restart_story(workdir: str | os.PathLike, *, phase: str = "generate", kill_fraction: float = 0.6,
                  config: CrashConfig | None = None) -> RestartStory:
    """Kill a real writer with SIGKILL `kill_fraction` of the way through `phase` (its write
    events counted by an uninterrupted run), then restart two copies of the crashed store: the
    broker's abnormal-restart rule (:func:`rmqlab.store.recover.broker_restart`: index files whose
    endTimestamp > the checkpoint's indexMsgTimestamp deleted, re-dispatch only from the
    recovery file) and ``rmqlab store recover`` (:func:`rmqlab.store.recover.recover_store`). Every
    key of every message written before the kill is then looked up in both (:func:`check_lookups`).

    The folders stay under `workdir` (crashed/, broker/, recovered/) for a look. Cost: two
    writer processes (mostly their interpreter start-up) and the checks, O(messages).
    """
    if not 0 < kill_fraction < 1:
        raise ValueError(f"kill_fraction must be between 0 and 1, got {kill_fraction}")
    config = config or CrashConfig()
    workdir = Path(workdir)
    cal = calibrate(phase, config, workdir)
    kill_at = max(1, int(cal.events * kill_fraction))
    story_dir = workdir / f"story-{phase}-{kill_at}"
    crashed = _copy(cal.template, story_dir / "crashed")
    run = run_writer(crashed, phase, config, kill_at=kill_at)
    if not run.killed:
        raise RuntimeError(f"the writer finished before write event {kill_at}")
    written = written_at_kill(crashed, cal.reference)
    cp_path = StorePaths(crashed).checkpoint
    checkpoint = (cpf.read_checkpoint(cp_path, strict=False) if cp_path.exists() else cpf.StoreCheckpoint()).as_dict()
    index_dir = StorePaths(crashed).index
    rows = []
    if index_dir.is_dir():
        with IndexService(index_dir, config.hash_slot_num, config.index_num, strict=False) as svc:
            for f in svc.files:
                h = f.header
                rows.append((f.path.name, h.begin_timestamp, h.end_timestamp, h.begin_phy_offset, h.end_phy_offset,
                             h.keys, h.end_timestamp > checkpoint["index_msg_timestamp"]))
    files = pd.DataFrame(rows, columns=["name", "begin_timestamp", "end_timestamp", "begin_phy_offset",
                                        "end_phy_offset", "keys", "deleted_by_broker"])
    geo = config.geometry()
    broker_dir, recovered_dir = _copy(crashed, story_dir / "broker"), _copy(crashed, story_dir / "recovered")
    br = broker_restart(broker_dir, hash_slot_num=config.hash_slot_num, index_num=config.index_num,
                        commitlog_file_size=config.commitlog_file_size, tz=_UTC)
    rec = recover_store(recovered_dir, consume_queue_file_size=config.consume_queue_file_size, tz=_UTC, **geo)
    lookup = dict(hash_slot_num=config.hash_slot_num, index_num=config.index_num, tz=_UTC, written=written)
    lb, la = check_lookups(broker_dir, **lookup), check_lookups(recovered_dir, **lookup)
    lost = lb.lost_pairs.copy()
    # the crashed file that held each lost entry: the one whose CommitLog range covers the message
    held = []
    for phy in lost["phy_offset"].to_numpy(np.int64):
        hit = files[(files["begin_phy_offset"] <= phy) & (phy <= files["end_phy_offset"])]
        held.append(hit["name"].iloc[-1] if len(hit) else "-")
    lost["held_by"] = held
    msgs = written.messages
    again = msgs[msgs["phy_offset"].to_numpy(np.int64) >= br.recovery_from_offset]
    return RestartStory(phase, kill_at, cal.events, len(msgs), la.lookups, checkpoint, files, br, lost,
                        rec, la.lost_pairs, story_dir, msgs["store_timestamp"].to_numpy(np.int64),
                        np.asarray(expected_index_rows(msgs).store_timestamps, np.int64),
                        int(again["store_timestamp"].iloc[0]) if len(again) else None)


# ------------------------------------------------------------------------------ summaries


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per phase (and a total row): trials, writers killed, messages written at the kill and
    those of them lost by ``rmqlab store recover``, lookups, lookups lost after ``rmqlab store
    recover`` and under the broker's restart rule, trials where the broker rule lost keys,
    verify_path ok and byte-equal to a fresh dispatch of the written messages (counts).

    >>> row = dict(phase="bulk", killed=True, messages_complete=10, messages_lost=0, lookups=15, lost_rmqlab=0,
    ...            lost_broker=4, verify_ok=True, fresh_equal=True)
    >>> int(summary_table(pd.DataFrame([row])).loc["total", "lost_broker"])
    4
    """
    g = df.groupby("phase", sort=False)
    t = pd.DataFrame({
        "trials": g.size(),
        "killed": g["killed"].sum(),
        "messages_complete": g["messages_complete"].sum(),
        "messages_lost": g["messages_lost"].sum(),
        "lookups": g["lookups"].sum(),
        "lost_rmqlab": g["lost_rmqlab"].sum(),
        "lost_broker": g["lost_broker"].sum(),
        "trials_broker_lost": g["lost_broker"].apply(lambda s: int((s > 0).sum())),
        "verify_ok": g["verify_ok"].sum(),
        "fresh_equal": g["fresh_equal"].sum(),
    })
    t.loc["total"] = t.sum(numeric_only=True)
    return t.astype(np.int64)


def summary_markdown(df: pd.DataFrame) -> str:
    """:func:`summary_table` as a Markdown table."""
    t = summary_table(df)
    head = ["phase"] + list(t.columns)
    rule = "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|"
    lines = ["| " + " | ".join(head) + " |", rule]
    for name, row in t.iterrows():
        cells = [f"**{name}**" if name == "total" else str(name)] + [f"{int(v):,}" for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "writer":
        return _writer_main(argv[1:])
    print("usage: python -m rmqlab.lab.crash writer --phase PHASE --root DIR --config JSON [--kill-at N]",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
