"""Hostile-bytes fuzzing of every rmqlab reader: seeds, mutations, per-format harnesses, a runner.

Used by ``tests/test_fuzz.py`` (the default, fixed budget that ``make test`` runs) and
``benchmarks/bench_fuzz.py`` (the same properties with a much larger budget). Nothing here is
a test by itself.

**Seeds.** Each format starts from a few *valid* files written with the project's own writers
(small geometries: a few hundred bytes to a few KB), together with the positions of their
integer fields (:class:`Field`) and, for some formats, format-specific hostile edits (IndexFile
pointer cycles, ConsumeQueue file-name gaps, Kafka varints, ...).

**Mutations.** An input is a seed plus a short *program* of byte operations (:func:`apply`):
bit flips, byte and span overwrites, fields set to hostile values (0, -1, Integer.MIN/MAX,
Long.MIN/MAX, the file's own counts +- 1, huge counts), truncation at any offset, extension with
random bytes, random sizes, insertions, deletions, chunk copies, whole random contents, and the
format's special edits. Programs are printable tuples: a failure message carries the seed name
and the program, and :func:`replay` rebuilds the exact input.

**Choosers.** The same program generator (:func:`draw_program`) runs on a hypothesis ``draw``
(:class:`DrawChooser`: shrinkable) or on a seeded :class:`random.Random`
(:class:`RandomChooser`: about 100 times cheaper per input). Hypothesis costs close to a
millisecond per example on a small machine, so each hypothesis example runs its own program and
a *swarm* of further programs from a drawn seed; everything stays deterministic.

**Property** (checked by :class:`Runner` for every input): each reader call either returns or
raises an :class:`~rmqlab.errors.RmqlabError` subclass (a ``ValueError`` only where a call
documents it for its *arguments*); no other exception; no input runs longer than a timeout
(a per-input limit of CPU time, ``ITIMER_PROF``: a walk that never ends spends CPU, while a
loaded machine only stretches wall time; plus a ``faulthandler`` wall-clock watchdog that kills
the process with a traceback if C code hangs); the walks the API exposes are bounded (trace steps, probes, records);
and with memory checks on, the tracemalloc peak of an input stays under
``mem_factor * input size + mem_const``. Where two implementations of one reader exist (C walk
vs Python walk, columnar vs iterator CommitLog reader, vectorized vs scalar Kafka lookups) they
must also agree on the same hostile bytes.
"""
from __future__ import annotations

import faulthandler
import math
import os
import random
import shutil
import signal
import struct
import sys
import time
import traceback
import tracemalloc
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fuzz_models as fm  # the test-side models, standard library alone
import numpy as np
from oracles import MISSED, REAL_DATA, in_ci, missing

from rmqlab.errors import RmqlabError

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1

# ------------------------------------------------------------------------------- mutations

#: Hostile values per field width (bytes); a field may add its own (its file's counts +- 1).
HOSTILE = {
    1: (0, 1, -1, 2, 127, -128, 0x10, 0x20, 0x30, 0x40, 3),
    2: (0, 1, -1, 2, 32767, -32768, 0x7, 0x8, 0x10, 0x20, 0x40, 0x80, 255, 256),
    4: (0, 1, -1, 2, INT_MAX, INT_MIN, INT_MAX - 1, INT_MIN + 1, 20, 61, 91, 92, 4096, 65535, 65536,
        2**30, 2**24, -20, -91),
    8: (0, 1, -1, 2, LONG_MAX, LONG_MIN, LONG_MAX - 1, LONG_MIN + 1, INT_MAX, INT_MIN, 2**32, 2**53,
        1718000000000, 253402300799999, 253402300800000, -62135596800000, -62135596800001,
        9223372036854775, -9223372036854775, 2**62),
}

#: Zig-zag base-128 varints worth writing over a Kafka length: too long, max, negative, huge.
HOSTILE_VARINTS = (
    b"\x00", b"\x01", b"\x02", b"\x03", b"\x7f", b"\x80", b"\xff", b"\x80\x80", b"\xff\xff\xff\xff\x0f",
    b"\xfe\xff\xff\xff\x0f", b"\xff\xff\xff\xff\x7f", b"\xff\xff\xff\xff\xff", b"\x80\x80\x80\x80\x80\x01",
    b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01", b"\xff" * 10, b"\x80" * 11, b"\xc8\x01", b"\xc9\x01",
)


@dataclass(frozen=True)
class Field:
    """A big-endian signed integer of a seed: `size` bytes at `offset`; `extra` adds hostile
    values that depend on the file (its counts, sizes, magic numbers)."""

    name: str
    offset: int
    size: int
    extra: tuple[int, ...] = ()


@dataclass
class Seed:
    """A valid input to mutate: its bytes, its fields, interesting positions (`hot`: record and
    block starts), format-specific edits (`special(chooser, seed) -> list of ops`) and whatever
    the harness needs to read it (`meta`: geometry, keys to query, file layout)."""

    name: str
    data: bytes
    fields: list[Field] = field(default_factory=list)
    hot: list[int] = field(default_factory=list)
    special: Callable[[Any, Seed], list[tuple]] | None = None
    meta: dict = field(default_factory=dict)


def _wrap(value: int, size: int) -> int:
    bits = 8 * size
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def apply(data: bytes, ops: Sequence[tuple]) -> bytes:
    """The bytes of `data` after the program `ops` (see the module docstring). Positions that fall
    outside the current bytes wrap (flip, byte) or make the op a no-op (set, write). Ops whose
    first element is "layout" or "fixcrc" are for the harness, not the bytes, and skipped here."""
    b = bytearray(data)
    for op in ops:
        kind = op[0]
        n = len(b)
        if kind == "flip":
            if n:
                b[op[1] % n] ^= 1 << op[2]
        elif kind == "byte":
            if n:
                b[op[1] % n] = op[2]
        elif kind == "set":
            _, off, size, value = op
            if 0 <= off and off + size <= n:
                b[off:off + size] = _wrap(value, size).to_bytes(size, "big", signed=True)
        elif kind == "write":
            _, off, payload = op
            if 0 <= off <= n:
                b[off:off + len(payload)] = payload
        elif kind == "truncate":
            del b[op[1]:]
        elif kind == "extend":
            b += op[1]
        elif kind == "resize":
            if op[1] < n:
                del b[op[1]:]
            else:
                b += bytes(op[1] - n)
        elif kind == "insert":
            b[min(op[1], n):min(op[1], n)] = op[2]
        elif kind == "delete":
            del b[op[1]:op[1] + op[2]]
        elif kind == "copy":
            _, src, dst, k = op
            chunk = bytes(b[src:src + k])
            if 0 <= dst <= n:
                b[dst:dst + len(chunk)] = chunk
        elif kind == "random":
            b = bytearray(op[1])
        elif kind in ("layout", "fixcrc"):
            pass
        else:  # pragma: no cover - a bug in a generator
            raise AssertionError(f"unknown op {op!r}")
    return bytes(b)


class RandomChooser:
    """Choices from a seeded random.Random (the cheap swarm)."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def int(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def pick(self, seq: Sequence):
        return seq[self.rng.randrange(len(seq))]

    def bytes(self, lo: int, hi: int) -> bytes:
        return self.rng.randbytes(self.rng.randint(lo, hi))


class DrawChooser:
    """Choices from a hypothesis ``draw`` (shrinkable)."""

    def __init__(self, draw):
        from hypothesis import strategies as st

        self.draw, self.st = draw, st

    def int(self, lo: int, hi: int) -> int:
        return self.draw(self.st.integers(lo, hi))

    def pick(self, seq: Sequence):
        return self.draw(self.st.sampled_from(seq))

    def bytes(self, lo: int, hi: int) -> bytes:
        return self.draw(self.st.binary(min_size=lo, max_size=hi))


# Op kinds by weight: in-place edits dominate (they reach deepest into a reader), size changes
# and wholly random contents are rarer.
_KINDS = (["flip"] * 6 + ["byte"] * 3 + ["field"] * 8 + ["special"] * 6 + ["write"] * 3 + ["truncate"] * 2
          + ["extend"] * 2 + ["resize"] + ["insert"] + ["delete"] + ["copy"] + ["random"])


def _hostile_value(ch, f: Field, current: int) -> int:
    how = ch.int(0, 9)
    if how <= 5:
        return ch.pick(HOSTILE[f.size] + f.extra)
    if how <= 7:
        return current + ch.int(-3, 3)
    return ch.int(-(2 ** (8 * f.size - 1)), 2 ** (8 * f.size - 1) - 1)


def draw_op(ch, seed: Seed) -> list[tuple]:
    """One mutation (a list of primitive ops) of `seed`."""
    data = seed.data
    n = len(data)
    kind = ch.pick(_KINDS)
    if kind == "special" and seed.special is None:
        kind = "field"
    if kind == "field" and not seed.fields:
        kind = "flip"
    if kind in ("flip", "byte", "write", "copy", "delete", "insert") and n == 0:
        kind = "extend"
    if kind == "flip":
        return [("flip", ch.int(0, n - 1), ch.int(0, 7))]
    if kind == "byte":
        return [("byte", ch.int(0, n - 1), ch.pick((0, 1, 2, 0x7F, 0x80, 0xFF, ch.int(0, 255))))]
    if kind == "field":
        f = ch.pick(seed.fields)
        current = int.from_bytes(data[f.offset:f.offset + f.size], "big", signed=True)
        return [("set", f.offset, f.size, _hostile_value(ch, f, current))]
    if kind == "special":
        return seed.special(ch, seed)
    if kind == "write":
        at = ch.pick(seed.hot) if seed.hot and ch.int(0, 1) else ch.int(0, n - 1)
        payload = ch.pick(HOSTILE_VARINTS) if ch.int(0, 2) == 0 else ch.bytes(1, 12)
        return [("write", at, payload)]
    if kind == "truncate":
        return [("truncate", ch.int(0, n))]
    if kind == "extend":
        return [("extend", ch.bytes(1, 64) if ch.int(0, 2) else bytes(ch.int(1, 200)))]
    if kind == "resize":
        return [("resize", ch.pick((0, 1, 7, 8, 19, 20, 21, 40, 61, 91, n - 1, n + 1, 2 * n, ch.int(0, 2 * n + 64))))]
    if kind == "insert":
        return [("insert", ch.int(0, n), ch.bytes(1, 24))]
    if kind == "delete":
        return [("delete", ch.int(0, n - 1), ch.int(1, 24))]
    if kind == "copy":
        return [("copy", ch.int(0, n - 1), ch.int(0, n - 1), ch.int(1, 64))]
    return [("random", ch.bytes(0, min(2 * n + 64, 4096)))]


def draw_program(ch, seeds: Sequence[Seed], max_ops: int = 4) -> tuple[int, tuple]:
    """(seed index, ops): a seed and 1..max_ops mutations of it."""
    si = ch.int(0, len(seeds) - 1)
    ops: list[tuple] = []
    for _ in range(ch.int(1, max_ops)):
        ops += draw_op(ch, seeds[si])
    return si, tuple(ops)


def hypothesis_programs(seeds: Sequence[Seed], max_ops: int = 4):
    """A hypothesis strategy of (seed index, ops) over `seeds`."""
    from hypothesis import strategies as st

    @st.composite
    def programs(draw):
        return draw_program(DrawChooser(draw), seeds, max_ops)

    return programs()


def _layout_ops(ops) -> list[tuple]:
    return [op[1:] for op in ops if op[0] == "layout"]


# ------------------------------------------------------------------------------- the runner


class Hang(BaseException):
    """An input ran longer than the per-input timeout (BaseException: no reader may swallow it)."""


class FuzzFailure(AssertionError):
    """A property failed for one input; the message says how to rebuild it."""


@dataclass
class Failure:
    target: str
    seed: str
    ops: tuple
    label: str
    error: str
    detail: str

    def __str__(self) -> str:
        return (f"[{self.target}] seed {self.seed!r}, ops {self.ops!r}\n  {self.label}: {self.error}\n"
                f"  replay: fuzz_support.replay({self.target!r}, {self.seed!r}, {self.ops!r})\n{self.detail}")


def _on_alarm(signum, frame):
    raise Hang("input ran past the per-input CPU-time limit")


class Runner:
    """Runs inputs of one target and checks the property; counts inputs and reader calls.

    ``fail_fast`` (tests) raises :class:`FuzzFailure` at the first failure; otherwise failures
    are collected in :attr:`failures` (the benchmark). ``heavy_every``: the costly reader calls
    (pandas frames, folder services) run on every k-th input; ``mem_every``: the tracemalloc
    check runs on every k-th input (0 = never).
    """

    def __init__(self, target: Target, workdir: str | os.PathLike, *, fail_fast: bool = True,
                 timeout: float = 10.0, heavy_every: int | None = None, mem_every: int = 8,
                 watchdog: float = 1800.0, everything: bool = False):
        self.target = target
        self.everything = everything
        self.work = Path(workdir)
        self.work.mkdir(parents=True, exist_ok=True)
        self.fail_fast = fail_fast
        self.timeout = timeout
        self.heavy_every = target.heavy_every if heavy_every is None else max(int(heavy_every), 1)
        self.mem_every = mem_every
        self.watchdog = watchdog
        self.inputs = 0
        self.calls = 0
        self.typed_errors = 0
        self.allowed_errors = 0
        self.failures: list[Failure] = []
        #: label -> inputs on which a property was checked against a test-side model
        self.modelled: Counter[str] = Counter()
        self.max_peak_ratio = 0.0
        self.max_peak = 0
        self.measured = 0
        #: inputs on which a property against the target's test-side model ran; test_fuzz
        #: asserts a share, so a property that never gets to run cannot pass
        self.modelled_inputs = 0
        self._modelled_at: int | None = None
        self._warm = False
        self.seeds = target.seeds(self.work / "seeds")
        self._dir_no = 0
        self._current: Path | None = None
        self._ctx: tuple | None = None

    # -- per-input scratch folders --------------------------------------------------------

    def fresh_dir(self) -> Path:
        """An empty folder for this input's files: the previous input's files are unlinked (safe
        even if a reader still maps one; truncating it in place would not be). Sub-folders stay,
        emptied (creating and removing folders costs more than the reads on some file systems)."""
        if self._current is None:
            self._current = self.work / "input"
            self._current.mkdir()
        else:
            for root, _, files in os.walk(self._current):
                for f in files:
                    os.unlink(os.path.join(root, f))
        return self._current

    # -- checks -----------------------------------------------------------------------------

    def call(self, label: str, fn: Callable, *args, allow: tuple = (), **kw):
        """fn(*args, **kw): its value, or None after an allowed error. Allowed: any RmqlabError,
        and the classes in `allow` (a ValueError a call documents for its arguments)."""
        self.calls += 1
        try:
            return fn(*args, **kw)
        except RmqlabError as e:
            self.typed_errors += 1
            if e.path is None and e.offset is None and e.field is None and not self.target.anonymous_errors:
                self.fail(label, f"{type(e).__name__} names no file, offset or field: {e}")
            return None
        except allow:
            self.allowed_errors += 1
            return None
        except Exception as e:  # noqa: BLE001 - the property under test
            self.fail(label, f"{type(e).__name__}: {e}", traceback.format_exc())
            return None

    def want(self, rng: random.Random, p: float) -> bool:
        """Run an optional group of calls on this input? With probability `p` (always when the
        runner was made with ``everything=True``): every group still runs on thousands of
        inputs, and each input stays cheap."""
        return self.everything or rng.random() < p

    def expect(self, ok: bool, label: str, what: str) -> None:
        if not ok:
            self.fail(label, what)

    def agree(self, ok: bool, label: str, what: str) -> None:
        """A property checked against the target's test-side model (which shares no code with
        rmqlab): counted in :attr:`modelled` by label, and the input once in
        :attr:`modelled_inputs` (warm runs of the bare seeds do not count), so a test can
        require that it ran."""
        self.modelled[label] += 1
        if not self._warm and self._modelled_at != self.inputs:
            self._modelled_at = self.inputs
            self.modelled_inputs += 1
        self.expect(ok, label, what)

    def fail(self, label: str, error: str, detail: str = "") -> None:
        seed, ops = self._ctx
        f = Failure(self.target.name, seed.name, ops, label, error, detail)
        self.failures.append(f)
        if self.fail_fast:
            raise FuzzFailure(str(f))

    # -- inputs -----------------------------------------------------------------------------

    def run_program(self, si: int, ops: tuple, rng: random.Random | None = None, *,
                    mem: bool | None = None, warm: bool = False, heavy: bool | None = None,
                    again: bool = False) -> None:
        """Build the input of (seed si, ops) and run every reader call of the target on it.
        `mem` forces the memory check on or off (default: every mem_every-th input); a `warm`
        run (each seed once before counting: first imports and caches) is neither counted nor
        measured and runs the heavy calls. An input over the memory bound is run `again`, as
        the same calls, before it fails: its first run may be the first to reach a path the
        warm runs did not (a lazy import, a first cache), whose cost is not the input's."""
        seed = self.seeds[si]
        data = apply(seed.data, ops)
        if rng is None:
            rng = random.Random(zlib.crc32(data) ^ len(ops))
        self._ctx = (seed, ops)
        if not warm:
            self.inputs += 1
        self._warm = warm
        if heavy is None:
            heavy = warm or self.inputs % self.heavy_every == 0
        rng_state = rng.getstate()
        if mem is None:
            mem = self.mem_every > 0 and self.inputs % self.mem_every == 0
        mem = mem and not warm
        if mem:
            if not tracemalloc.is_tracing():
                tracemalloc.start()
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
        if self.timeout > 0:   # timeout 0: no alarm (under libFuzzer, which times inputs itself)
            signal.setitimer(signal.ITIMER_PROF, max(self.timeout, 120.0) if warm else self.timeout)   # warm: imports
        try:
            self.target.run(self, seed, data, ops, rng, heavy)
        except Hang:
            self.fail("timeout", f"input still running after {self.timeout} CPU-s (an unbounded walk?)",
                      traceback.format_exc())
        except FuzzFailure:
            raise
        except Exception as e:  # noqa: BLE001 - an error outside any guarded call
            self.fail("harness", f"{type(e).__name__}: {e}", traceback.format_exc())
        finally:
            if self.timeout > 0:
                signal.setitimer(signal.ITIMER_PROF, 0)
        if mem:
            peak = tracemalloc.get_traced_memory()[1] - base
            tracemalloc.stop()   # tracing slows every allocation: only measured inputs pay for it
            bound = self.target.mem_factor * len(data) + self.target.mem_const
            if peak > bound and not again:
                self.inputs -= 1
                if self._modelled_at is not None and self._modelled_at > self.inputs:   # counted again on the rerun
                    self.modelled_inputs -= 1
                    self._modelled_at = None
                rerun = random.Random()
                rerun.setstate(rng_state)
                self.run_program(si, ops, rerun, mem=True, heavy=heavy, again=True)
                return
            self.measured += 1
            self.max_peak = max(self.max_peak, peak)
            self.max_peak_ratio = max(self.max_peak_ratio, peak / bound)
            if peak > bound:
                self.fail("memory", f"tracemalloc peak {peak} bytes > {self.target.mem_factor} x "
                                    f"{len(data)} input bytes + {self.target.mem_const} (run twice)")

    def run_swarm(self, swarm_seed: int, count: int) -> None:
        rng = random.Random(swarm_seed)
        ch = RandomChooser(rng)
        for _ in range(count):
            si, ops = draw_program(ch, self.seeds, self.target.max_ops)
            self.run_program(si, ops, rng)

    def __enter__(self):
        if self.timeout > 0:
            self._old_alarm = signal.signal(signal.SIGPROF, _on_alarm)
            # Backstop for C code that never returns to Python (a signal handler cannot run
            # then): dump every thread's stack and exit.
            faulthandler.dump_traceback_later(self.watchdog, exit=True)
        self._started = time.perf_counter()
        self._cpu_started = time.process_time()
        for si in range(len(self.seeds)):   # every seed must pass, and first-call costs are paid here
            self.run_program(si, (), warm=True)
        return self

    def __exit__(self, *exc):
        if self.timeout > 0:
            faulthandler.cancel_dump_traceback_later()
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, self._old_alarm)
        if tracemalloc.is_tracing():
            tracemalloc.stop()
        if self._current is not None:
            shutil.rmtree(self._current, ignore_errors=True)
        self.elapsed = time.perf_counter() - self._started
        self.cpu = time.process_time() - self._cpu_started


class Target:
    """One format's harness: `seeds(workdir)` builds the valid seeds with the project's writers,
    `run(rt, seed, data, ops, rng, heavy)` calls every reader on one input through ``rt.call``."""

    name = ""
    max_ops = 4
    heavy_every = 1
    mem_factor = 64
    mem_const = 4 << 20
    anonymous_errors = False   # True where a reader gets bytes, not a file (no path to name)
    model_share = 0.05         # the least share of inputs the target's model must judge (test_fuzz)

    def seeds(self, workdir: Path) -> list[Seed]:
        raise NotImplementedError

    def run(self, rt: Runner, seed: Seed, data: bytes, ops: tuple, rng: random.Random, heavy: bool) -> None:
        raise NotImplementedError


def _write_chunks(folder: Path, data: bytes, chunk: int, first_start: int) -> list[Path]:
    """Split `data` into files of `chunk` bytes named by their 20-digit start offsets (the last
    file may be shorter)."""
    out = []
    for i in range(0, len(data), chunk):
        p = folder / f"{first_start + i:020d}"
        p.write_bytes(data[i:i + chunk])
        out.append(p)
    return out


# ------------------------------------------------------------------------------- IndexFile


class IndexFileTarget(Target):
    """IndexFile: open (strict and not, every geometry argument form), check/problems, the C and
    Python chain walks (select_phy_offsets, trace_query, select_phy_offsets_many, chain) and, on
    heavy inputs, indexstats.file_report and an IndexService folder query.

    Model: select_phy_offsets equals fuzz_models.index_select (IndexFile.selectPhyOffset in
    struct) wherever the file has the size of the geometry it is opened with."""

    name = "indexfile"
    heavy_every = 8
    NAME = "20240610061524062"

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.formats.indexfile import EVERY_PUT, NEW_SLOT, IndexFile

        workdir.mkdir(parents=True, exist_ok=True)
        specs = [
            ("collisions", 8, 24, [f"T#k{i % 7}" for i in range(20)], 0, 0, NEW_SLOT),
            ("full-every-put", 4, 12, [f"T#{c}" for c in "abcabcaaxyz"], 0, 0, EVERY_PUT),
            ("empty-flushed", 5, 6, [], 0, 0, NEW_SLOT),
            ("follow-on", 6, 10, ["T#Aa", "T#BB", "T#c", "T#Aa", "T#d"], 5000, 1717999999000, NEW_SLOT),
        ]
        out = []
        for name, hsn, num, keys, end_phy, end_ts, rule in specs:
            p = workdir / f"{name}-{self.NAME}"
            with IndexFile.create(p, hsn, num, end_phy, end_ts, slot_count_rule=rule) as f:
                for i, k in enumerate(keys):
                    f.put_key(k, 1000 + 100 * i, 1718000000000 + 700 * i)
                f.flush(sync=False)
                count = f.header.index_count
            data = p.read_bytes()
            fields = [Field(fl.name, fl.offset, fl.size, (num, num + 1, num - 1, count, count + 1, hsn))
                      for fl in _index_header_fields()]
            e0 = 40 + 4 * hsn
            fields += [Field(f"slot[{s}]", 40 + 4 * s, 4, (count, count + 1, num, num + 1, -1)) for s in range(hsn)]
            for n in range(1, count):
                b = e0 + 20 * n
                fields += [Field(f"entry[{n}].key_hash", b, 4, (INT_MIN, -1)),
                           Field(f"entry[{n}].phy_offset", b + 4, 8),
                           Field(f"entry[{n}].time_diff", b + 12, 4, (-1, INT_MIN)),
                           Field(f"entry[{n}].prev_index", b + 16, 4, (n, n + 1, count, count + 1, num, num + 1))]
            meta = dict(hsn=hsn, num=num, count=count, keys=sorted(set(keys)) or ["T#a"], rule=rule)
            out.append(Seed(name, data, fields, [], _index_special, meta))
        return out + self._java_seeds()

    def _java_seeds(self) -> list[Seed]:
        """The index files RocketMQ's own Java IndexFile wrote (tests/data/golden): bytes no
        rmqlab writer made, so the mutations start from the broker's layout as it is."""
        import json

        from rmqlab.formats.indexfile import NEW_SLOT

        out = []
        for case in sorted((Path(__file__).resolve().parents[1] / "data" / "golden").glob("*/case.json")):
            c = json.loads(case.read_text(encoding="utf-8"))
            data = (case.parent / c["fileName"]).read_bytes()
            hsn, num, count = c["hashSlotNum"], c["indexNum"], c["header"]["indexCount"]
            fields = [Field(fl.name, fl.offset, fl.size, (num, num + 1, num - 1, count, count + 1, hsn))
                      for fl in _index_header_fields()]
            keys = sorted({p["key"] for p in c["puts"]}) or ["T#a"]
            meta = dict(hsn=hsn, num=num, count=count, keys=keys[:64], rule=NEW_SLOT)
            out.append(Seed(f"java-{c['case']}", data, fields, [], _index_special, meta))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.analysis.indexstats import file_report
        from rmqlab.formats.indexfile import IndexFile
        from rmqlab.store.indexservice import IndexService

        m = seed.meta
        d = rt.fresh_dir()
        p = d / self.NAME
        p.write_bytes(data)
        geo = rng.choice([(m["hsn"], m["num"])] * 4 + [(m["hsn"], None), (None, m["num"]), (None, None)])
        f = rt.call("IndexFile.open(strict=True)", IndexFile.open, p, *geo, slot_count_rule=m["rule"])
        if f is not None:
            f.close()
        f = rt.call("IndexFile.open(strict=False)", IndexFile.open, p, *geo, slot_count_rule=m["rule"], strict=False)
        if f is not None:
            with f:
                self._queries(rt, f, m, rng)
                if geo == (m["hsn"], m["num"]):   # the model knows the geometry only from the seed
                    self._model(rt, f, data, m, rng)
        if heavy:
            rt.call("indexstats.file_report", file_report, p, top=3, hash_slot_num=geo[0], index_num=geo[1])
            for strict in (True, False):
                svc = rt.call(f"IndexService(strict={strict})", IndexService, d, geo[0], geo[1], strict=strict)
                if svc is not None:
                    with svc:
                        r = rt.call("IndexService.query_offset", svc.query_offset, "T", m["keys"][0][2:], 64)
                        t = rt.call("IndexService.trace_query", svc.trace_query, "T", m["keys"][0][2:], 64)
                        if r is not None and t is not None:
                            rt.expect(list(r.phy_offsets) == list(t.result.phy_offsets), "IndexService",
                                      "query_offset and trace_query disagree")

    @staticmethod
    def _model(rt, f, data, m, rng):
        """The C walk against the stdlib model of selectPhyOffset, for one key of the seed and
        one that matches no entry; the model answers (not None) when the file is the
        geometry's size, which most in-place mutations keep."""

        max_num = rng.choice((1, 3, 64))
        begin, end = rng.choice(((0, LONG_MAX), (LONG_MIN, LONG_MAX), (1718000003000, LONG_MAX)))
        for k in (rng.choice(m["keys"]), "T#absent"):
            want = fm.index_select(data, m["hsn"], m["num"], k, max_num, begin, end)
            if want is None:
                return
            got = rt.call("select_phy_offsets (model)", f.select_phy_offsets, k, max_num, begin, end)
            if got is not None:
                rt.agree(got == want, "select_phy_offsets", f"key {k!r}: {got} but selectPhyOffset's model {want}")

    @staticmethod
    def _queries(rt, f, m, rng):
        g = f.geometry
        h = f.header
        _ = f.is_write_full   # properties are read for the errors they may raise on damaged files
        f.is_time_matched(0, LONG_MAX)
        f.is_time_matched(h.end_timestamp, h.begin_timestamp)
        max_num = rng.choice((0, 1, 2, 5, 64, 64, 64, -1))
        begin, end = rng.choice([(0, LONG_MAX), (0, LONG_MAX), (LONG_MIN, LONG_MAX),
                                 (h.begin_timestamp, h.end_timestamp),
                                 (min(h.begin_timestamp + 3000, LONG_MAX), LONG_MAX), (5, 4)])
        keys = rng.sample(m["keys"], min(2, len(m["keys"]))) + ["T#absent"]
        bound = (max(max_num, 0) + 1) * g.index_num + 1
        singles = []
        for k in keys:
            res = rt.call("select_phy_offsets", f.select_phy_offsets, k, max_num, begin, end)
            singles.append(res)
            if res is not None:
                rt.expect(len(res) <= max(max_num, 0), "select_phy_offsets", f"{len(res)} results > max_num {max_num}")
            if k != "T#absent" and rt.want(rng, 0.5):
                t = rt.call("trace_query", f.trace_query, k, max_num, begin, end)
                if t is not None:
                    rt.expect(len(t.steps) <= bound, "trace_query", f"{len(t.steps)} entries read > bound {bound}")
                    if rt.want(rng, 0.1):
                        str(t), t.revisited
                    if res is not None:
                        rt.expect(t.results == res, "trace_query",
                                  f"Python walk {t.results} != C walk {res} ({t.stop})")
        if rt.want(rng, 0.5):
            b = rt.call("select_phy_offsets_many", f.select_phy_offsets_many, keys, max_num, begin, end)
            if b is not None:
                for i, res in enumerate(singles):
                    if res is not None:
                        rt.expect(b[i] == res, "select_phy_offsets_many", f"key {keys[i]!r}: {b[i]} != {res}")
                rt.expect(int(b.entries_read.max(initial=0)) <= bound, "select_phy_offsets_many",
                          f"{int(b.entries_read.max())} entries read > bound {bound}")
        if rt.want(rng, 0.5):
            probs = rt.call("problems", f.problems)
            for e in probs or ():
                rt.expect(isinstance(e, RmqlabError) and e.offset is not None and e.field is not None,
                          "problems", f"untyped or unlocated problem {e!r}")
        if rt.want(rng, 0.3):
            for s in {0, g.hash_slot_num - 1, rng.randrange(g.hash_slot_num)}:
                chain = rt.call("chain", lambda s=s: list(f.chain(s)))
                if chain is not None:
                    rt.expect(len(chain) <= g.index_num, "chain", f"{len(chain)} entries > index_num {g.index_num}")
        if rt.want(rng, 0.2):
            for n in {0, min(h.index_count, g.index_num) - 1, g.index_num - 1}:
                rt.call("entry", f.entry, max(n, 0))
            len(f.used_entries)


def _index_header_fields():
    from rmqlab.formats.indexfile import HEADER

    return HEADER.fields


def _index_special(ch, seed: Seed) -> list[tuple]:
    """Pointer edits: prev_index to itself / forward / past index_count, a two-entry cycle (also
    one whose entries match a query key, so the walk keeps finding results), slots past
    index_count, index_count beyond the geometry, negative time diffs."""
    from rmqlab.jvm.hashcode import index_hash

    m = seed.meta
    hsn, num, count = m["hsn"], m["num"], m["count"]
    e0 = 40 + 4 * hsn

    def ent(n, off):
        return e0 + 20 * n + off

    used = count - 1
    kind = ch.pick(("self", "forward", "past", "cycle", "match-cycle", "slot", "count", "neg-time", "wrong-slot",
                    "count-cycle"))
    if used < 1 and kind not in ("slot", "count"):
        kind = ch.pick(("slot", "count"))
    if kind == "slot":
        return [("set", 40 + 4 * ch.int(0, hsn - 1), 4,
                 ch.pick((count, count + 1, num, num + 1, INT_MAX, -1, INT_MIN)))]
    if kind == "count":
        return [("set", 36, 4, ch.pick((num, num + 1, num + 7, INT_MAX, 0, -1, 1, count + 1)))]
    a = ch.int(1, used)
    if kind == "self":
        return [("set", ent(a, 16), 4, a)]
    if kind == "forward":
        return [("set", ent(a, 16), 4, min(a + ch.int(1, 3), max(used, 1)))]
    if kind == "past":
        return [("set", ent(a, 16), 4, ch.pick((count, count + 1, num, num + 1, INT_MAX)))]
    if kind == "neg-time":
        return [("set", ent(a, 12), 4, ch.pick((-1, INT_MIN)))]
    if kind == "wrong-slot":
        return [("set", ent(a, 0), 4, ch.int(0, INT_MAX))]
    b = ch.int(1, used)
    if kind == "cycle":
        return [("set", ent(a, 16), 4, b), ("set", ent(b, 16), 4, a)]
    if kind == "count-cycle":   # a header (strict=False) claiming far more entries than the file, and a cycle
        return [("set", 36, 4, ch.pick((INT_MAX, num + 1, 10 * num))), ("set", ent(a, 16), 4, b),
                ("set", ent(b, 16), 4, a), ("set", 40 + 4 * ch.int(0, hsn - 1), 4, b)]
    key = ch.pick(m["keys"])
    h = index_hash(key)
    return [("set", ent(a, 0), 4, h), ("set", ent(b, 0), 4, h), ("set", ent(a, 12), 4, 0),
            ("set", ent(b, 12), 4, 0), ("set", ent(a, 16), 4, b), ("set", ent(b, 16), 4, a),
            ("set", 40 + 4 * (h % hsn), 4, b)]


# ------------------------------------------------------------------------------- ConsumeQueue

CQ_FILE = 100   # 5 units a file: many files from few bytes


#: real RocketMQ stores (read-only, beside the repository): bounded prefixes of their files are seeds
_REAL_ROCKETMQ = REAL_DATA / "rocketmq"
#: real Kafka partitions: their files are seeds too
REAL_KAFKA = REAL_DATA / "kafka"
_REAL_RMQ_STORE_420 = "store-ericpangopher-4.2.0"
_REAL_CQ_UNITS = 10          # one real ConsumeQueue file of the 4.2.0 store
_REAL_CL_MESSAGES = 4        # a real CommitLog seed keeps this many messages


def _real_bytes(path: Path) -> bytes | None:
    """The bytes of a real broker file. Missing, it is a missing oracle: with CI=true the fuzz
    target fails (oracles.missing); elsewhere it fuzzes on from its other seeds, and the run's
    list of missing oracles names the file."""
    if path.is_file():
        return path.read_bytes()
    if in_ci():
        missing(f"real broker data at {path}", "a fuzz target's real seed; it lives beside the repository")
    MISSED[f"real broker data at {path} (a fuzz seed)"] += 1
    return None


def _real_rocketmq_bytes(relative: str) -> bytes | None:
    return _real_bytes(_REAL_ROCKETMQ / relative)


class ConsumeQueueTarget(Target):
    """ConsumeQueue folders: open/read (strict and not), units, unit(i), tag and code masks,
    problems/check, offset_by_time with the 5.x, 5.0 and 4.x searches (probe counts bounded),
    read_queue_info; the input bytes are cut into 100-byte files (layout ops drop, rename, add
    files).

    Model: first_offset and max_offset equal fuzz_models.consumequeue_end (ConsumeQueue.recover
    in struct) wherever the files are whole and their names contiguous."""

    name = "consumequeue"
    heavy_every = 8

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.formats.consumequeue import ConsumeQueueWriter
        from rmqlab.rules.dispatch import tags_code

        out = []
        specs = {
            "three-files": [(100 * i, 90 + i, tags_code("TagA" if i % 3 else "TagB"), i) for i in range(13)],
            "pre-blank": [(5000 + 200 * i, 120, tags_code("TagA"), 3 + i) for i in range(6)],
            "later-start": [(9000 + 150 * i, 100, 1718000000000 + 1000 * i, 10 + i) for i in range(7)],
            "one-unit": [(0, 91, 0, 0)],
        }
        for name, units in specs.items():
            folder = workdir / name / "TopicTest" / "0"
            with ConsumeQueueWriter.create(folder, mapped_file_size=CQ_FILE) as w:
                for u in units:
                    w.put(*u)
            files = sorted(folder.iterdir())
            first = int(files[0].name)
            data = b"".join(p.read_bytes() for p in files)
            fields = []
            for k in range(len(data) // 20):
                b = 20 * k
                fields += [Field(f"unit[{k}].commitlog_offset", b, 8, (-1, 0)),
                           Field(f"unit[{k}].size", b + 8, 4, (0, -1, INT_MAX)),
                           Field(f"unit[{k}].tags_code", b + 12, 8)]
            out.append(Seed(name, data, fields, [], _cq_special, dict(first=first, nfiles=len(files))))
        return out + self._real_seeds()

    def _real_seeds(self) -> list[Seed]:
        """The first and last ConsumeQueue files of the real 4.2.0 store (10 units each, tagsCode
        holding ConsumeQueueExt addresses, the last with unwritten units), cut into this
        target's 100-byte files; none when ../shared is not beside the checkout."""
        out = []
        for name, first in (("real-4.2.0-first", 0), ("real-4.2.0-last", 1000)):
            data = _real_rocketmq_bytes(f"{_REAL_RMQ_STORE_420}/consumequeue/abc/0/{first:020d}")
            if data is None:
                continue
            data = data[:_REAL_CQ_UNITS * 20]
            fields = []
            for k in range(len(data) // 20):
                b = 20 * k
                fields += [Field(f"unit[{k}].commitlog_offset", b, 8, (-1, 0)),
                           Field(f"unit[{k}].size", b + 8, 4, (0, -1, INT_MAX)),
                           Field(f"unit[{k}].tags_code", b + 12, 8, (0, LONG_MIN, LONG_MIN + 20))]
            out.append(Seed(name, data, fields, [], _cq_special,
                            dict(first=first, nfiles=-(-len(data) // CQ_FILE))))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):

        from rmqlab.formats.consumequeue import ConsumeQueue, read_queue_info

        d = rt.fresh_dir() / "TopicTest" / "0"
        d.mkdir(parents=True, exist_ok=True)
        _cq_materialize(d, data, seed.meta["first"], _layout_ops(ops))
        cmax = rng.choice((None, 0, 5000, 10**6, LONG_MAX))
        if rt.want(rng, 0.35):
            q = rt.call("ConsumeQueue.open(strict=True)", ConsumeQueue.open, d, CQ_FILE)
            if q is not None:
                q.close()
        eager = rng.random() < 0.2
        opener = ConsumeQueue.read if eager else ConsumeQueue.open
        q = rt.call("ConsumeQueue.open(strict=False)", opener, d, CQ_FILE, strict=False)
        if q is None:
            return
        with q:
            info = q.info
            live = q.files
            first = seed.meta["first"]
            for op in _layout_ops(ops):
                first = op[1] if op[0] == "first" else first
            # the model's files are the input's chunks by name; other layout ops (files dropped,
            # renamed, added) or a name off the file size leave it undecided
            if all(op[0] == "first" for op in _layout_ops(ops)) and first % CQ_FILE == 0 and len(data) >= 20:
                files = [(first + i, data[i:i + CQ_FILE]) for i in range(0, len(data), CQ_FILE)]
                end = fm.consumequeue_end(files, CQ_FILE)
                if end is not None:
                    rt.agree((q.first_offset, q.max_offset) == (first // 20, end // 20), "ConsumeQueue",
                             f"offsets {q.first_offset}..{q.max_offset}, recover()'s model {first // 20}.."
                             f"{end // 20}")
            if all(b.start == a.start + CQ_FILE for a, b in zip(live, live[1:])):   # no gaps: bounded by the bytes
                rt.expect(0 <= q.count <= sum(f.size for f in live) // 20 and q.min_offset <= q.max_offset,
                          "ConsumeQueue", f"offsets min {q.min_offset} max {q.max_offset} count {q.count} "
                                          f"for {len(data)} bytes")
            len(q), q.blank_units, q.files, q.dirty_files
            if rt.want(rng, 0.4):
                units = rt.call("units", lambda: q.units)
                rt.call("raw_units", q.raw_units)
                rt.call("queue_offsets", lambda: q.queue_offsets)
                if units is not None:
                    rt.call("tag_mask", q.tag_mask, "TagA || TagB")
                    rt.call("code_mask", q.code_mask, [0, 1718000000000])
            if rt.want(rng, 0.4):
                for i in {q.first_offset, q.min_offset, q.max_offset - 1,
                          rng.randint(q.first_offset, max(q.max_offset - 1, q.first_offset))}:
                    if q.first_offset <= i < q.max_offset:
                        rt.call("unit", q.unit, i)
            if rt.want(rng, 0.5):
                probs = rt.call("problems", q.problems, cmax)
                for e in probs or ():
                    rt.expect(isinstance(e, RmqlabError) and e.path is not None, "problems", f"untyped problem {e!r}")
            if rt.want(rng, 0.6):
                broker = rng.choice(("5", "5", "5.0", "4"))
                ts = rng.choice((0, -5, 1, 1_000_000, 1_000_050, 1_000_000 + 5000, 1718000003000, LONG_MAX, LONG_MIN))
                fn = rng.choice((_store_time_monotone, _store_time_hostile))
                lm = None if broker == "5" else [1_000_000 + 500 * i for i in range(len(q.files))]
                res = rt.call("offset_by_time", q.offset_by_time, ts, fn, boundary=rng.choice(("lower", "upper")),
                              broker=broker, last_modified=lm)
                if res is not None:
                    bound = 2 * len(info.files) + 2 * q.units_per_file + 8
                    rt.expect(res.probes <= bound, "offset_by_time", f"{res.probes} probes > bound {bound}")
                    if rt.want(rng, 0.1):
                        str(res)
            if heavy:
                repr(q)
                rt.call("to_frame", q.to_frame)
        if heavy:
            rt.call("read_queue_info", read_queue_info, d, CQ_FILE, strict=False)


def _store_time_monotone(phys):
    phys = np.asarray(phys, np.int64)
    return np.where(phys >= 0, 1_000_000 + phys // 2, -1)


def _store_time_hostile(phys):
    phys = np.asarray(phys, np.int64)
    return np.where(phys % 7 == 3, -1, (phys * 7919) % 1_000_003 + 999_000)


def _cq_special(ch, seed: Seed) -> list[tuple]:
    nfiles = max(len(seed.data) // CQ_FILE, 1)
    kind = ch.pick(("drop", "rename", "junk", "empty-last", "first", "blank", "end-marker"))
    if kind == "drop":
        return [("layout", "drop", ch.int(0, nfiles - 1))]
    if kind == "rename":
        return [("layout", "rename", ch.int(0, nfiles - 1), ch.pick((0, 50, 100, 300, 10**6, 10**19)))]
    if kind == "junk":
        return [("layout", "junk", ch.pick(("abc", "0000000000000000000x", "1" * 21, "00000000000000000000.tmp")))]
    if kind == "empty-last":
        return [("layout", "empty-last")]
    if kind == "first":
        return [("layout", "first", ch.pick((0, 100, 120, 2000, 10**18)))]
    k = ch.int(0, max(len(seed.data) // 20 - 1, 0))
    if kind == "blank":   # a (0, Integer.MAX_VALUE, 0) filler where the broker never writes one
        return [("set", 20 * k, 8, 0), ("set", 20 * k + 8, 4, INT_MAX), ("set", 20 * k + 12, 8, 0)]
    return [("set", 20 * k, 8, ch.pick((-1, 0))), ("set", 20 * k + 8, 4, ch.pick((0, -1, 5)))]


def _cq_materialize(folder: Path, data: bytes, first: int, layout: list[tuple]) -> None:
    for op in layout:
        if op[0] == "first":
            first = op[1]
    names = [first + i for i in range(0, len(data), CQ_FILE)]
    chunks = [data[i:i + CQ_FILE] for i in range(0, len(data), CQ_FILE)]
    files = dict(zip(names, chunks))
    order = list(names)
    extra = []
    for op in layout:
        if op[0] == "drop" and order:
            files.pop(order.pop(op[1] % len(order)), None)
        elif op[0] == "rename" and order:
            old = order[op[1] % len(order)]
            if old in files and op[2] not in files:
                files[op[2]] = files.pop(old)
                order[order.index(old)] = op[2]
        elif op[0] == "junk":
            extra.append((op[1], b"\x00" * 20))
        elif op[0] == "empty-last":
            extra.append((f"{(max(files) if files else first) + CQ_FILE:020d}", b""))
    for start, chunk in files.items():
        (folder / f"{start:020d}").write_bytes(chunk)
    for name, chunk in extra:
        (folder / name).write_bytes(chunk)


# ------------------------------------------------------------------------------- CommitLog

CL_FILE = 768


def _commitlog_records() -> list[bytes]:
    from rmqlab.formats.commitlog import encode_message

    return [
        encode_message(topic="TopicTest", body=b"hello", queue_id=1, queue_offset=0, born_timestamp=1718000000000,
                       born_host="10.0.0.7:52000", store_timestamp=1718000000005, store_host="10.0.0.1:10911",
                       properties={"KEYS": "k1 k2", "UNIQ_KEY": "0A00000710921B6D35862FAF08000007",
                                   "TAGS": "TagA", "DELAY": "3"}),
        encode_message(topic="T" * 130, body=b"\x00\x01v2", version=2, born_host="[::1]:1",
                       store_host="[2001:db8::7]:10911", store_timestamp=1718000000100, sys_flag=0x8,
                       properties="KEYS\x01x\x02"),
        encode_message(topic="", body=b"", store_timestamp=1718000000200),
        encode_message(topic="T", body=b"z" * 40, sys_flag=0x1 | 0x4, properties={"TAGS": "t"},
                       append_prop_crc=True, store_timestamp=1718000000300),
        # a 4.9.1 to 5.1.x broker's form: the properties block without its final \x02
        encode_message(topic="TopicTest", body=b"494", properties={"KEYS": "k3", "TAGS": "TagB"},
                       broker_version="4.9.4", store_timestamp=1718000000400),
    ]


def _record_fields(at: int, rec: bytes) -> tuple[list[Field], list[int]]:
    """Fields (TOTALSIZE, MAGIC, BODYCRC, SYSFLAG, BODYLEN, TOPICLEN, PROPERTIESLENGTH) and hot
    positions of a record at `at`, found by decoding it."""
    from rmqlab.formats.commitlog import MAGIC_BLANK, MAGIC_V1, MAGIC_V2, read_message

    m = read_message(rec, 0)
    total = m.total_size
    bw = 16 if m.sys_flag & 0x10 else 4
    sw = 16 if m.sys_flag & 0x20 else 4
    o_tail = 48 + bw + 4 + 8 + sw + 4
    o_body = o_tail + 16
    o_tl = o_body + len(m.body)
    tlw = m.version
    o_pl = o_tl + tlw + len(m.topic.encode("utf-8", "surrogateescape"))
    sizes = (total, total + 1, total - 1, 90, 91, 92, CL_FILE, -total)
    fields = [Field("TOTALSIZE", at, 4, sizes),
              Field("MAGICCODE", at + 4, 4, (MAGIC_V1, MAGIC_V2, MAGIC_BLANK)),
              Field("BODYCRC", at + 8, 4),
              Field("SYSFLAG", at + 36, 4, (0x10, 0x20, 0x30, 0x1, 0xC, 0x4, 0x8)),
              Field("BODYLEN", at + o_tail + 12, 4, (len(m.body) + 1, total)),
              Field("TOPICLEN", at + o_tl, tlw, (len(m.topic) + 1, 127, 128)),
              Field("PROPERTIESLENGTH", at + o_pl, 2, (len(m.properties_raw) + 1, total))]
    return fields, [at, at + o_body, at + o_pl + 2, at + total - 1]


class CommitLogTarget(Target):
    """CommitLog files and folders: iter_messages (raise and report), the C walk against the
    Python model, min/max_offset, message re-encoding, and on heavy inputs read_columns (raise,
    report, start_offset; compared with the iterator's report) and read_at.

    Model: iter_messages' record positions equal fuzz_models.commitlog_file_walk's (the
    broker's framing in struct) wherever either side finds the store sound: every file framed
    soundly, and no records after a file whose records end in zeros (commitlog_store_sound)."""

    name = "commitlog"
    heavy_every = 12

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.formats.commitlog import BLANK, MAGIC_BLANK, blank_record

        recs = _commitlog_records()
        out = []

        def build(name, layout, first_start=0):
            data = bytearray()
            fields, hot = [], []
            for file_recs, tail in layout:
                start = len(data)
                for r in file_recs:
                    f, h = _record_fields(len(data), r)
                    fields += f
                    hot += h
                    data += r
                left = CL_FILE - (len(data) - start)
                if tail == "blank":
                    fields.append(Field("blank.TOTALSIZE", len(data), 4, (left, left + 1, left - 1, 8, 0)))
                    fields.append(Field("blank.MAGICCODE", len(data) + 4, 4, (MAGIC_BLANK,)))
                    data += blank_record(left) + bytes(left - BLANK.size)
                elif tail == "zeros":
                    data += bytes(left)
            out.append(Seed(name, bytes(data), fields, hot, _commitlog_special, dict(first=first_start)))

        build("two-files", [([recs[0], recs[2], recs[3], recs[0], recs[2]], "blank"),
                            ([recs[1], recs[0]], "zeros")])
        build("mixed", [([recs[0], recs[1], recs[2], recs[3]], "zeros")], first_start=CL_FILE * 4)
        build("ends-on-blank", [([recs[3]] * 4, "blank")])
        build("exact", [([recs[0]], None)])
        build("preallocated", [([recs[0], recs[1]], "blank"), ([recs[2]], "zeros"), ([], "zeros")])
        return out + _real_commitlog_seeds()

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab import _records
        from rmqlab.formats import commitlog as cl

        first = seed.meta["first"]
        for op in _layout_ops(ops):
            if op[0] == "first":
                first = op[1]
        file_size = seed.meta.get("file_size", CL_FILE)
        d = rt.fresh_dir() / "commitlog"
        d.mkdir(exist_ok=True)
        paths = _write_chunks(d, data, file_size, first)
        if rt.want(rng, 0.5):
            for i in range(len(paths)):   # the C walk against its Python model, on the raw bytes
                buf = data[i * file_size:(i + 1) * file_size]
                raw, stop, code = _records.walk(buf, 0, len(buf), -1)
                pos, stop2, code2 = cl.walk_py(buf, 0, len(buf))
                rt.expect((np.frombuffer(raw, np.int64).tolist(), stop, code) == (pos, stop2, code2),
                          "_records.walk", f"C walk {(stop, code)} != walk_py {(stop2, code2)}")
        loaded = rt.call("load_files", cl.load_files, d)
        if loaded is not None:
            rt.expect(loaded.data + loaded.preallocated + loaded.dropped == loaded.files
                      and (loaded.active is None) == (loaded.files == loaded.dropped), "load_files",
                      f"roles do not cover the files in order: {[loaded.role(f) for f in loaded.files]}")
        check_crc = rng.random() < 0.5
        it = cl.iter_messages(d, on_error="report", check_crc=check_crc)
        msgs = rt.call("iter_messages(report)", lambda: list(it))
        if rt.want(rng, 0.2):
            rt.call("iter_messages(raise)", lambda: sum(1 for _ in cl.iter_messages(d, check_crc=check_crc)))
        if rt.want(rng, 0.2):
            rt.call("min_offset", cl.min_offset, d)
        if msgs is not None:
            self._model(rt, data, paths, file_size, msgs, it.report, check_crc)
            rt.expect(len(msgs) <= len(data) // cl.MIN_MESSAGE_SIZE, "iter_messages",
                      f"{len(msgs)} messages from {len(data)} bytes")
            if msgs and rt.want(rng, 0.4):
                m = msgs[rng.randrange(len(msgs))]
                rt.call("Message.offset_msg_id", lambda: m.offset_msg_id)
                _ = (m.keys, m.tags, m.uniq_key, m.delay_level, m.crc_ok, m.transaction_type)  # must not raise
                enc = rt.call("Message.encode", m.encode)
                if enc is not None:
                    k = paths.index(Path(m.path))
                    raw = data[k * file_size + m.position:k * file_size + m.position + m.total_size]
                    rt.expect(enc == raw, "Message.encode", "re-encoded record differs from the bytes read")
        if not heavy:
            return
        rt.call("max_offset", cl.max_offset, d)
        how = rng.choice(("report", "raise", "start")) if not rt.everything else "all"
        if how in ("report", "all"):
            df = rt.call("read_columns(report)", cl.read_columns, d, on_error="report", check_crc=check_crc,
                         body=rng.random() < 0.5, arrow=rng.random() < 0.5)
            if df is not None and msgs is not None:
                a, b = df.attrs["report"], it.report
                rt.expect((len(df), a.end_phy_offset, [(x.offset, x.field) for x in a.damage],
                           a.torn_tail and (a.torn_tail.offset, a.torn_tail.field))
                          == (len(msgs), b.end_phy_offset, [(x.offset, x.field) for x in b.damage],
                              b.torn_tail and (b.torn_tail.offset, b.torn_tail.field)),
                          "read_columns", f"columnar report {a} != iterator report {b}")
        if how in ("raise", "all"):
            rt.call("read_columns(raise)", cl.read_columns, d, body=False, check_crc=check_crc)
        if how in ("start", "all") and msgs:
            start = msgs[rng.randrange(len(msgs))]
            p0 = int(Path(start.path).name) + start.position
            rt.call("read_columns(start_offset)", cl.read_columns, d, on_error="report", start_offset=p0)
        if msgs and rt.want(rng, 0.5):
            offs = [int(Path(m.path).name) + m.position for m in msgs[:4]]
            rt.call("read_at", cl.read_at, d, offs + [min(first + rng.randrange(max(len(data), 1)), LONG_MAX)],
                    check_crc=check_crc, allow=(ValueError,))


    @staticmethod
    def _model(rt, data, paths, file_size, msgs, report, check_crc):
        """Where rmqlab reports no damage and no torn tail, or (CRCs unchecked) where the model
        finds the store sound, both read the same records at the same places and agree it is."""

        files = [data[i * file_size:(i + 1) * file_size] for i in range(len(paths))]
        walks = [fm.commitlog_file_walk(f) for f in files]
        sound = fm.commitlog_store_sound(files, [end for _, end in walks])
        clean = not report.damage and report.torn_tail is None
        if clean or (sound and not check_crc):
            want = [(p.name, pos) for p, (found, _) in zip(paths, walks) for pos in found]
            got = [(Path(m.path).name, m.position) for m in msgs]
            rt.agree(got == want and clean == sound, "iter_messages",
                     f"records at {got[:6]}... (report clean: {clean}), the framing model's {want[:6]}... "
                     f"(sound: {sound})")


def _real_commitlog_prefix(relative: str) -> tuple[bytes, int] | None:
    """A real CommitLog file shortened to one small file: its first messages, cut at a record
    boundary, then the file's own end (the end-of-file blank and the bytes after it, stale or
    zero, for a full file; its unwritten zeros for the active one), and the file's start offset.
    None when the file is not there."""
    from rmqlab.formats.commitlog import MIN_MESSAGE_SIZE, STOP_BLANK, walk_py

    buf = _real_rocketmq_bytes(relative)
    if not buf:
        return None
    positions, stop, code = walk_py(buf, 0, len(buf))
    keep = min(_REAL_CL_MESSAGES, len(positions))
    cut = positions[keep] if keep < len(positions) else stop
    if code == STOP_BLANK:
        tail = buf[stop:]
    else:
        tail = bytes(MIN_MESSAGE_SIZE)   # a preallocated file's unwritten space
        if any(buf[len(buf) - len(tail):]):
            return None
    return buf[:cut] + tail, int(Path(relative).name)


def _real_commitlog_seeds() -> list[Seed]:
    """Bounded prefixes of the real CommitLog files (a 2021 broker's full file; the 4.2.0
    store's first file, stale bytes after its blank, and its active file ending in zeros), one
    file each; none when ../shared is not beside the checkout."""
    from rmqlab.formats.commitlog import MAGIC_BLANK, walk_py

    out = []
    for name, rel in (("real-2021-full", "store-4e25b979/commitlog/00000000000000000000"),
                      ("real-4.2.0-stale-after-blank", f"{_REAL_RMQ_STORE_420}/commitlog/00000000000000000000"),
                      ("real-4.2.0-active", f"{_REAL_RMQ_STORE_420}/commitlog/00000000000000024576")):
        got = _real_commitlog_prefix(rel)
        if got is None:
            continue
        data, start = got
        positions, stop, _ = walk_py(data, 0, len(data))
        fields, hot = [], []
        for at in positions:
            size = int.from_bytes(data[at:at + 4], "big")
            f, h = _record_fields(at, data[at:at + size])
            fields += f
            hot += h
        if stop + 8 <= len(data):
            left = len(data) - stop
            fields.append(Field("blank.TOTALSIZE", stop, 4, (left, left + 1, left - 1, 8, 0)))
            fields.append(Field("blank.MAGICCODE", stop + 4, 4, (MAGIC_BLANK,)))
        out.append(Seed(name, data, fields, hot, _commitlog_special, dict(first=start, file_size=len(data))))
    return out


def _commitlog_special(ch, seed: Seed) -> list[tuple]:
    kind = ch.pick(("props", "first", "shift", "zero-tail"))
    if kind == "first":
        return [("layout", "first", ch.pick((0, CL_FILE, CL_FILE * 3, 2**40, 10**19 - CL_FILE * 8)))]
    if kind == "props" and seed.hot:
        return [("write", ch.pick(seed.hot), ch.pick((b"\x02", b"\x01", b"\x02\x02", b"a\x01", b"\x01\x02", b"\x00")))]
    if kind == "shift" and seed.fields:
        f = ch.pick([x for x in seed.fields if x.name == "TOTALSIZE"] or seed.fields)
        cur = int.from_bytes(seed.data[f.offset:f.offset + 4], "big", signed=True)
        return [("set", f.offset, 4, cur + ch.pick((-8, -1, 1, 8, 91)))]
    n = len(seed.data)
    at = ch.int(0, max(n - 1, 0))
    return [("write", at, bytes(min(ch.int(1, 200), n - at)))]


# ------------------------------------------------------------------------------- one message


def _compressed_records() -> list[tuple[str, bytes]]:
    """Records whose bodies a producer compressed: zlib without type bits (a client before
    4.9.4), and LZ4, ZSTD and ZLIB with them."""
    import zlib

    import cramjam

    from rmqlab.formats import commitlog as cl

    text = ("压缩 line %d\n" * 300 % tuple(range(300))).encode()
    return [(f"compressed-{name}", cl.encode_message(topic="TopicBig", body=body, sys_flag=flag,
                                                    properties={"KEYS": "big-1", "TAGS": "big"}))
            for name, flag, body in (("zlib0", 0x1, zlib.compress(text)),
                                     ("lz4", 0x1 | 1 << 8, bytes(cramjam.lz4.compress(text))),
                                     ("zstd", 0x1 | 2 << 8, bytes(cramjam.zstd.compress(text))),
                                     ("zlib", 0x1 | 3 << 8, zlib.compress(text, 9)))]


class MessageTarget(Target):
    """One CommitLog record in a buffer: read_message at 0 and at other positions (with and
    without the CRC check), the decoded message's properties, ids and a byte-exact re-encode,
    a compressed body decompressed with the codec its SYSFLAG names (records compressed with
    zlib, LZ4 and ZSTD among the seeds); parse_properties of arbitrary spans.

    Model: a record read_message decodes has the fields fuzz_models.message_fields reads with
    struct (sizes, offsets, flags, body, topic and properties bytes); one whose length fields
    the model finds consistent is decoded, unless its CRC is checked."""

    name = "message"
    anonymous_errors = True
    max_ops = 3

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.formats.commitlog import blank_record

        out = []
        for i, rec in enumerate(_commitlog_records()):
            fields, hot = _record_fields(0, rec)
            out.append(Seed(f"record{i}", rec, fields, hot, _commitlog_special, {}))
        rec = _commitlog_records()[0]
        fields, hot = _record_fields(0, rec)
        out.append(Seed("record+blank", rec + blank_record(16) + bytes(8), fields, hot, _commitlog_special, {}))
        for name, rec in _compressed_records():
            fields, hot = _record_fields(0, rec)
            out.append(Seed(name, rec, fields, hot, _commitlog_special, {}))
        for name, rel in (("real-2021", "store-4e25b979/commitlog/00000000000000000000"),
                          ("real-4.2.0", f"{_REAL_RMQ_STORE_420}/commitlog/00000000000000024576")):
            buf = _real_rocketmq_bytes(rel)
            if buf:
                rec = buf[:int.from_bytes(buf[:4], "big")]
                fields, hot = _record_fields(0, rec)
                out.append(Seed(name, rec, fields, hot, _commitlog_special, {}))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):

        from rmqlab.formats import commitlog as cl

        crc = rng.random() < 0.5
        m = rt.call("read_message", cl.read_message, data, 0, check_crc=crc)
        want = fm.message_fields(data)
        if m is not None or (want is not None and not crc):
            got = m and {"total_size": m.total_size, "queue_id": m.queue_id, "flag": m.flag,
                         "queue_offset": m.queue_offset, "phy_offset": m.phy_offset, "sys_flag": m.sys_flag,
                         "body": bytes(m.body), "topic": m.topic.encode("utf-8", "surrogateescape"),
                         "properties": bytes(m.properties_raw)}
            rt.agree(got == want, "read_message", f"decoded {got}, the struct model {want}")
        if m is not None:
            m.keys, m.tags, m.uniq_key, m.delay_level, m.crc_ok, m.compressed, m.as_dict()
            rt.call("Message.offset_msg_id", lambda: m.offset_msg_id)
            enc = rt.call("Message.encode", m.encode)
            if enc is not None:
                rt.expect(enc == data[:m.total_size], "Message.encode", "re-encoded record differs from the input")
            rt.call("parse_properties", cl.parse_properties, m.properties_raw)
            if m.compressed:
                from rmqlab.formats.commitlog.body import decompress_body

                rt.call("decompress_body", decompress_body, m.body, m.sys_flag, offset=m.phy_offset)
        if data:
            rt.call("read_message(position)", cl.read_message, data, rng.randrange(len(data) + 1), check_crc=crc)
            a = rng.randrange(len(data))
            block = data[a:a + rng.randint(0, 80)]
            rt.call("parse_properties(span)", cl.parse_properties, block)
            cl.prop_crc_value(block)


# ------------------------------------------------------------------------------- checkpoint


#: real checkpoint files (4096 bytes each): a 4.2.0 store's, a 4.x and a 5.3.1 broker's root folder
_REAL_CHECKPOINTS = {"real-4.2.0": "store-ericpangopher-4.2.0/checkpoint",
                     "real-4.x": "config-shaoxubao-4.x/checkpoint",
                     "real-5.3.1": "config-guoming-5.3.1/checkpoint"}


class CheckpointTarget(Target):
    """StoreCheckpoint: read_checkpoint (strict and not) and everything a reader shows of it:
    describe() in UTC and the local zone, times(), layout, the recovery timestamps. Seeds: the
    three layouts written here and the real files of ../shared. Model
    (:func:`fuzz_models.checkpoint_model`): the fields read equal the struct's, and strict
    reading accepts exactly the files the model calls whole."""

    name = "checkpoint"

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.formats.checkpoint import CHECKPOINT, StoreCheckpoint, write_checkpoint

        workdir.mkdir(parents=True, exist_ok=True)
        out = []
        fields = [Field(f.name, f.offset, 8) for f in CHECKPOINT.fields]
        for layout, cp in (("4", StoreCheckpoint(1718000005000, 1718000004000, 1717990000000)),
                           ("5.0", StoreCheckpoint(1718000005000, 1718000004000, 0, 123456)),
                           ("5.1.1", StoreCheckpoint(1718000005000, 1718000009000, 1717990000000, 77, 99))):
            p = workdir / f"checkpoint-{layout}"
            write_checkpoint(p, cp, layout=layout, sync=False)
            out.append(Seed(f"layout-{layout}", p.read_bytes(), fields, [40, 41, 100, 4095], None, {}))
        for name, rel in _REAL_CHECKPOINTS.items():
            real = _real_rocketmq_bytes(rel)
            if real is not None:
                out.append(Seed(name, real, fields, [40, 48, 4095], None, {}))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.formats.checkpoint import read_checkpoint

        p = rt.fresh_dir() / "checkpoint"
        p.write_bytes(data)
        import datetime as dt

        want, whole = fm.checkpoint_model(data)
        strict = rt.call("read_checkpoint(strict=True)", read_checkpoint, p)
        rt.agree((strict is not None) == whole, "read_checkpoint(strict=True)",
                 f"{len(data)}-byte file {'refused' if whole else 'accepted'}; the model calls it "
                 f"{'whole' if whole else 'not a checkpoint the broker wrote'}")
        cp = rt.call("read_checkpoint(strict=False)", read_checkpoint, p, strict=False)
        if cp is None:
            return
        got = tuple(cp.as_dict()[k] for k in ("physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp",
                                               "master_flushed_offset", "confirm_phy_offset",
                                               "logics_physical_offset"))
        rt.agree(got == want, "read_checkpoint(strict=False)", f"fields {got} != struct's {want}")
        cp.min_timestamp, cp.min_timestamp_index, cp.recovery_timestamp(True), cp.layout, cp.as_dict()
        tz = rng.choice((dt.UTC, dt.timezone(dt.timedelta(hours=14)), dt.timezone(-dt.timedelta(hours=12)), None))
        rt.call("describe", cp.describe, tz)
        rt.call("times", cp.times)


# ------------------------------------------------------------------------------- ConsumeQueueExt

EXT_FILE = 84   # (84 - 4) // 20 = 4 bit-map-less units a file, then the -1 fill marker
#: the real 4.2.0 store's ConsumeQueueExt folder: two 840-byte files (its broker's mappedFileSizeConsumeQueueExt)
_REAL_EXT = (f"{_REAL_RMQ_STORE_420}/consumequeue_ext/abc/0", 840)


class ConsumeQueueExtTarget(Target):
    """ConsumeQueueExt folders: open/read (strict and not, given and inferred file size), the
    walk (units, count, end), get at unit starts and hostile addresses, locate/resolve (must
    agree with get), iter_units, to_frame, problems/check, read_ext_info; the input bytes are
    cut into 84-byte files (a real folder's seed into its own 840-byte files). Model
    (:func:`fuzz_models.ext_units_model`): the units walked, and end_offset, equal recover()'s walk done by
    struct."""

    name = "consumequeue_ext"
    heavy_every = 8

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.formats.consumequeue_ext import UNIT_HEADER, ConsumeQueueExtWriter

        out = []
        specs = {
            "three-files": [(2567159 + i % 2, 1532257321553 + i, b"") for i in range(10)],
            "bit-maps": [(-7 * i, 1718000000000 + i, bytes([i] * (i % 3 * 4))) for i in range(7)],
            "one-unit": [(0, 0, b"")],
        }
        for name, units in specs.items():
            d = workdir / name
            with ConsumeQueueExtWriter.create(d, mapped_file_size=EXT_FILE) as w:
                addrs = [w.put(t, s, b) for t, s, b in units]
            data = b"".join(p.read_bytes() for p in sorted(d.iterdir()))
            starts = [a + 2**63 for a in addrs]
            fields = [Field(f"unit@{at}.{f.name}", at + f.offset, f.size) for at in starts for f in UNIT_HEADER.fields]
            out.append(Seed(name, data, fields, starts, None, {"addresses": addrs}))
        folder, size = _REAL_EXT
        files = [_real_rocketmq_bytes(f"{folder}/{start:020d}") for start in (0, size)]
        if all(f is not None for f in files):
            data = b"".join(f for f in files if f is not None)
            starts = [u[0] for u in fm.ext_units_model(data, size)]
            fields = [Field(f"unit@{at}.{f.name}", at + f.offset, f.size) for at in starts[::7]
                      for f in UNIT_HEADER.fields]
            out.append(Seed("real-4.2.0", data, fields, starts, None,
                            {"addresses": [at + LONG_MIN for at in starts[::10]], "file_size": size}))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.formats import consumequeue_ext as cqx

        file_size = seed.meta.get("file_size", EXT_FILE)
        d = rt.fresh_dir() / "ext"
        d.mkdir(exist_ok=True)
        _write_chunks(d, data, file_size, 0)
        rt.call("open(strict)", cqx.ConsumeQueueExt.open, d, file_size)
        opener = cqx.ConsumeQueueExt.read if rng.random() < 0.3 else cqx.ConsumeQueueExt.open
        size = rng.choice((file_size, None))
        x = rt.call("open(strict=False)", opener, d, size, strict=False)
        if x is None:
            return
        with x:
            units = rt.call("units", lambda: x.units)
            if units is not None:
                want = fm.ext_units_model(data, file_size)
                got = list(zip(*(units[c].tolist() for c in ("offset", "size", "tags_code", "msg_store_time",
                                                            "bit_map_size"))))
                first = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
                rt.agree(got == want, "units", f"{len(got)} units walked, the struct walk finds {len(want)}; "
                                               f"first difference at unit {first}")
                _ = (x.count, x.min_address)
                end = rt.call("end_offset", lambda: x.end_offset)
                last = (len(data) - 1) // file_size * file_size if data else 0   # the last file's start
                last_units = [u for u in want if u[0] >= last]
                rt.agree(end is None or end == (last_units[-1][0] + last_units[-1][1] if last_units else last),
                         "end_offset", f"end_offset {end}: the struct walk's last file starts at {last}, "
                                       f"its units {last_units[-3:]}")
            asks = list(seed.meta["addresses"]) + [cqx.decorate(rng.randrange(0, len(data) + 8)), 1, LONG_MAX,
                                                  LONG_MIN, cqx.MAX_ADDR, cqx.decorate(cqx.MAX_REAL_OFFSET)]
            got = [rt.call("get", x.get, a) for a in asks]
            located = rt.call("locate", x.locate, asks)
            if units is not None and located is not None:
                idx, found = located
                for a, g, i, f in zip(asks, got, idx.tolist(), found.tolist()):
                    # a walked unit start: get reads the same header
                    if f and g is not None and g.tags_code != int(units["tags_code"][i]):
                        rt.fail("locate", f"address {a}: walked unit {units[i]} but get gives {g}")
                rt.call("resolve", x.resolve, asks)
            if rt.want(rng, 0.5):
                probs = rt.call("problems", x.problems)
                for e in probs or ():
                    rt.expect(isinstance(e, RmqlabError) and e.path is not None, "problems", f"untyped problem {e!r}")
                rt.call("check", x.check)
            if heavy:
                repr(x)
                rt.call("iter_units", lambda: list(x.iter_units()))
                rt.call("to_frame", x.to_frame)
        if heavy:
            rt.call("read_ext_info", cqx.read_ext_info, d, strict=False)


# ------------------------------------------------------------------------------- Kafka indexes

#: real segments whose .index and .timeindex are seeds (base offset in the name): a Connect
#: offsets topic, a compacted __consumer_offsets, a stock-market topic and a KRaft metadata log
_REAL_KAFKA_INDEX_SEGMENTS = (
    "flink-on-prem/connect-offsets-14/00000000000000000000",
    "kafka-3.6-compacted/__consumer_offsets-9/00000000000000009907",
    "kafka-3.6-compacted/stock-market-batch-0/00000000000000012910",
    "kraft-metadata-restart/__cluster_metadata-0/00000000000000000000",
)


class _KafkaIndexTarget(Target):
    kind = ""
    suffix = ""
    heavy_every = 8

    def _seed_entries(self):
        raise NotImplementedError

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.kafka import index as kx

        workdir.mkdir(parents=True, exist_ok=True)
        cls = kx.OffsetIndex if self.kind == "offset" else kx.TimeIndex
        build = kx.build_offset_index if self.kind == "offset" else kx.build_time_index
        size = cls.LAYOUT.size
        out = []
        for name, base, entries, trim in self._seed_entries():
            p = workdir / name / kx.segment_file_name(base, self.suffix)
            p.parent.mkdir()
            kw = {} if trim else dict(max_index_size=size * 24, trim=False)
            if entries:
                build(p, entries, **kw)
            else:
                p.write_bytes(b"")
            data = p.read_bytes()
            fields = []
            for i in range(len(data) // size):
                for f in cls.LAYOUT.fields:
                    fields.append(Field(f"entry[{i}].{f.name}", i * size + f.offset, f.size, (0, -1, i, -base)))
            out.append(Seed(name, data, fields, [], _kafka_index_special, dict(base=base)))
        for rel in _REAL_KAFKA_INDEX_SEGMENTS:
            data = _real_bytes(REAL_KAFKA / (rel + self.suffix))
            if data is not None:
                base = int(rel.rsplit("/", 1)[1])
                fields = [Field(f"entry[{i}].{f.name}", i * size + f.offset, f.size, (0, -1, i, -base))
                          for i in range(0, len(data) // size, 5) for f in cls.LAYOUT.fields]
                out.append(Seed("real-" + rel.split("/")[1], data, fields, [], _kafka_index_special, dict(base=base)))
        return out

    def model(self, data: bytes, base: int) -> list[tuple[int, int]] | None:
        """The index as AbstractIndex counts it (size // entry size whole entries) and lookup
        reads it, by struct: (key, value) pairs in slot order, with absolute offsets: (offset,
        position) for an offset index, (timestamp, offset) for a time index. None when the
        keys are not strictly increasing or an offset leaves the long range: the broker's
        binary search promises nothing there."""
        size, fmt = (8, ">ii") if self.kind == "offset" else (12, ">qi")
        pairs = [struct.unpack_from(fmt, data, i) for i in range(0, len(data) // size * size, size)]
        pairs = [(base + a, b) if self.kind == "offset" else (a, base + b) for a, b in pairs]
        if any(not LONG_MIN <= v <= LONG_MAX for p in pairs for v in p):
            return None
        keys = [p[0] for p in pairs]
        return pairs if all(a < b for a, b in zip(keys, keys[1:])) else None

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.kafka import index as kx

        base = seed.meta["base"]
        name = kx.segment_file_name(base, self.suffix)
        explicit = None
        for op in _layout_ops(ops):
            if op[0] == "name":
                name = op[1]
            elif op[0] == "base":
                explicit = op[1]
        p = rt.fresh_dir() / name
        p.write_bytes(data)
        cls = kx.OffsetIndex if self.kind == "offset" else kx.TimeIndex
        count = rng.choice(("broker", "dump"))
        args = (p, explicit)
        if rt.want(rng, 0.5):
            idx = rt.call("open(strict=True)", cls.open, *args, count=count, allow=(ValueError,))
            if idx is not None:
                idx.close()
        if rt.want(rng, 0.2):
            rt.call("entry_count", kx.entry_count, p, count=count)
            reader = kx.read_offset_index if self.kind == "offset" else kx.read_time_index
            rt.call("read_*_index", reader, *args, count=count, strict=False, allow=(ValueError,))
        idx = rt.call("open(strict=False)", cls.open, *args, count=count, strict=False, allow=(ValueError,))
        if idx is None:
            return
        with idx:
            n = idx.entry_count
            len(idx), idx.is_full, idx.untrimmed, idx.size_in_bytes, idx.max_entries
            rt.call("last_entry", lambda: idx.last_entry)
            keys = idx.entries["relative_offset" if self.kind == "offset" else "timestamp"]
            targets = {LONG_MIN, LONG_MAX, idx.base_offset, idx.base_offset - 1, 0, -1}
            for i in rng.sample(range(n), min(3, n)):
                k = int(keys[i]) + (idx.base_offset if self.kind == "offset" else 0)
                targets |= {k - 1, k, k + 1}
            targets = rng.sample(sorted({min(max(t, LONG_MIN), LONG_MAX) for t in targets}), min(4, len(targets)))
            probs = rt.call("problems", idx.problems) if rt.want(rng, 0.5) else None
            bound = 2 * (math.ceil(math.log2(n + 1)) + 2) + 2
            scalar = {}
            pairs, named = None, name.split(".")[0]
            known = explicit if explicit is not None else int(named) if named.isascii() and named.isdigit() else None
            if count == "broker" and known is not None:   # the model counts as AbstractIndex does
                pairs = self.model(data, known)
            empty = (known, 0) if self.kind == "offset" else (-1, known)
            for t in targets:
                algo = rng.choice(("warm", "classic"))
                scalar[t] = r = rt.call("lookup", idx.lookup, t, algorithm=algo)
                if pairs is not None and r is not None:   # the largest key <= t, by brute force
                    want = max((p for p in pairs if p[0] <= t), default=empty)
                    rt.agree(tuple(r) == want, "lookup", f"lookup({t}) = {tuple(r)}; the entries read by struct "
                                                         f"give {want}")
                if rt.want(rng, 0.3):
                    tr = rt.call("trace_lookup", idx.trace_lookup, t, algo)
                    if tr is not None:
                        rt.expect(tr.entries_read <= bound, "trace_lookup", f"{tr.entries_read} entries read > {bound}")
                        rt.expect(r is None or tr.result == r, "trace_lookup", f"{tr.result} != lookup {r}")
            if rt.want(rng, 0.4):
                many = rt.call("lookup_many", idx.lookup_many, targets)
                if many is not None and probs == []:   # vectorized == scalar lookup on a sound index
                    for i, t in enumerate(targets):
                        r = scalar[t]
                        got = tuple(int(x) for x in many[i])
                        rt.expect(r is None or got == tuple(r), "lookup_many", f"target {t}: {got} != lookup {r}")
            if rt.want(rng, 0.2):
                for i in {0, n - 1, rng.randrange(max(n, 1))}:
                    if 0 <= i < n:
                        rt.call("entry", idx.entry, i)
            if self.kind == "offset" and rt.want(rng, 0.3):
                _ = idx.positions   # must not raise
                pos = rng.choice((0, -1, INT_MAX, INT_MIN, 4096))
                rt.call("fetch_upper_bound_offset", idx.fetch_upper_bound_offset, (0, pos),
                        rng.choice((0, 1, 4096, INT_MAX)))
                rt.call("sanity_check(legacy)", idx.sanity_check, legacy=True)
            if heavy:
                repr(idx)
                rt.call("to_frame", idx.to_frame)


def _kafka_index_special(ch, seed: Seed) -> list[tuple]:
    kind = ch.pick(("name", "base", "unsort"))
    if kind == "name":
        name = ch.pick((f"{0:020d}", f"{2**63 - 100:020d}", "9" * 20, "x", "00000000000000000100", "", "-5", "١٢٣"))
        return [("layout", "name", name + ch.pick((".index", ".timeindex")))]
    if kind == "base":
        return [("layout", "base", ch.pick((0, 1, LONG_MAX, LONG_MAX - 5, -1, 2**31, INT_MAX)))]
    n = len(seed.data)
    if n < 16:
        return [("extend", bytes(8))]
    a, b = ch.int(0, n - 8), ch.int(0, n - 8)
    return [("copy", a, b, ch.pick((4, 8, 12)))]


class OffsetIndexTarget(_KafkaIndexTarget):
    """Kafka .index: open (strict/not, count broker/dump, name- or argument-given base offset),
    entry_count, read_offset_index, lookups (warm and classic; traces bounded and equal to
    lookup), lookup_many (equal to lookup on a sound index), fetch_upper_bound_offset,
    problems/check, the legacy sanity check."""

    name = "kafka-index"
    kind = "offset"
    suffix = ".index"

    def _seed_entries(self):
        return [("trimmed", 100, [(100 + 3 * i + 1, 70 * i + (i % 3)) for i in range(30)], True),
                ("untrimmed", 0, [(5, 4100), (9, 8200), (20, 12400)], False),
                ("near-max", 2**63 - 1000, [(2**63 - 990, 0), (2**63 - 900, 5000)], True),
                ("empty", 42, [], True)]


class TimeIndexTarget(_KafkaIndexTarget):
    """Kafka .timeindex: as the offset index, with time lookups."""

    name = "kafka-timeindex"
    kind = "time"
    suffix = ".timeindex"

    def _seed_entries(self):
        return [("trimmed", 100, [(1718000000000 + 10 * i, 100 + 2 * i) for i in range(25)], True),
                ("untrimmed", 0, [(5, 1), (6, 2), (900, 3)], False),
                ("negative-times", 7, [(-5, 8), (0, 9), (LONG_MAX - 1, 10)], True),
                ("empty", 42, [], True)]


# ------------------------------------------------------------------------------- Kafka log


#: real compressed segments (read-only, beside the repository): their first batches are seeds
_REAL_COMPRESSED_SEEDS = {
    "real-lz4-logappendtime": "flink-on-prem/_confluent-controlcenter-7-6-0-1-monitoring-trigger-event-rekey-0/"
                              "00000000000000000000.log",
    "real-gzip-idempotent": "idempotent-gzip/lsx1-0/00000000000000000000.log",
}
_REAL_SEED_BATCHES = 24


class KafkaLogTarget(Target):
    """Kafka .log segments: walk_batches, read_batches (compared with the walk: same batches or
    the same error), read_records (records bounded by the bytes and the headers' counts),
    scan_key, compressed_batch_problems; from bytes, and on some inputs from a file. A "fixcrc"
    op recomputes every walkable batch's CRC-32C (a legacy message's CRC-32) after the other
    edits, so mutations also reach the record decoder with verify_crc=True. Compressed seeds
    (each codec, written here, and the first batches of real lz4 and gzip segments when
    ../shared is there) reach the decompression and the compressed batches' record checks.
    Legacy seeds: magic v0/v1 message sets, plain and with compressed wrappers (their inner
    messages in decompressed bytes), and one mixing v1 and v2.

    Model: where walk_batches returns, its entries (position, size, magic, last offset) and
    so the count and the end offset equal fuzz_models.kafka_frames' (FileLogInputStream's
    framing in struct), which found no damage; a torn tail only under torn_tail="stop"."""

    name = "kafka-log"
    anonymous_errors = True
    heavy_every = 8

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.kafka import log as kl

        K = kl.KafkaRecord
        specs = {
            "batches": ([K(100 + i, 1718000000000 + i, b"k%d" % (i % 3), b"v" * (i % 5),
                           [("h", b"x")] if i % 2 else []) for i in range(9)], [3, 1, 4, 1]),
            "nulls": ([K(0, 5, None, None), K(1, 6, b"", b""), K(2, -1, b"k1", None, [("a", None), ("", b"")])], 3),
            "one": ([K(7, 1000, b"k1", b"value")], 1),
            "big-value": ([K(0, 0, b"k", b"x" * 300), K(5, 10, b"k1", b"y")], [1, 1]),
        }
        datas = {name: kl.encode_batches(records, records_per_batch=per).data.tobytes()
                 for name, (records, per) in specs.items()}
        records, per = specs["batches"]
        for codec in ("gzip", "snappy", "lz4", "zstd"):
            datas[codec] = (kl.encode_batches(records, records_per_batch=per, compression=codec).data.tobytes()
                            + kl.encode_batches([K(200, 5, b"k1", b"p")]).data.tobytes())
        for name, rel in _REAL_COMPRESSED_SEEDS.items():
            raw = _real_bytes(REAL_KAFKA / rel)
            if raw is not None:
                b = kl.read_batches(raw)
                datas[name] = raw[:int(b["position"].iloc[min(len(b), _REAL_SEED_BATCHES) - 1]
                                       + b["size"].iloc[min(len(b), _REAL_SEED_BATCHES) - 1])]
        out = []
        for name, data in datas.items():
            fields, hot = [], []
            batches = kl.read_batches(data)
            for p, size, comp in zip(batches["position"].tolist(), batches["size"].tolist(),
                                     batches["compression"].tolist()):
                fields += [Field(f"batch@{p}.{f.name}", p + f.offset, f.size, (size, size - 12, 49, 48, 61, -61))
                           for f in kl.HEADER.fields]
                if comp != "none":   # the codec's frame header, its first block, its end
                    hot += [p + 61, p + 62, p + 65, p + 70, p + size - 5, p + size - 1]
            rec = kl.read_records(data)
            for p, s in zip(rec["position"].tolist(), rec["size"].tolist()):
                if p >= 0:
                    hot += [p, p + 1, p + 2, p + s - 1]
            out.append(Seed(name, data, fields, sorted({h for h in hot if 0 <= h < len(data)}),
                            _kafka_log_special, {}))
        return out + self._legacy_seeds()

    def _legacy_seeds(self) -> list[Seed]:
        from rmqlab.kafka import legacy as lg
        from rmqlab.kafka import log as kl

        recs = [(10 + i, 1718000000000 + 7 * i, None if i % 3 == 2 else b"k%d" % (i % 2), b"v" * (i % 4))
                for i in range(6)]
        v1 = lg.encode_message_set(recs, magic=1)
        specs = {
            "legacy-v0": lg.encode_message_set(recs, magic=0),
            "legacy-v1": v1,
            "legacy-v0-gzip": lg.encode_message_set(recs, magic=0, compression="gzip", records_per_wrapper=4),
            "legacy-v1-lz4": lg.encode_message_set(recs, magic=1, compression="lz4", records_per_wrapper=3),
            "legacy-v1-snappy-lat": lg.encode_message_set(recs, magic=1, compression="snappy", records_per_wrapper=6,
                                                          timestamp_type="LogAppendTime", log_append_time=5),
            "legacy-v1-then-v2": v1 + kl.encode_batches([kl.KafkaRecord(16, 1718000000100, b"k1", b"v2")])
            .data.tobytes(),
        }
        out = []
        for name, data in specs.items():
            fields, hot = [], []
            for p, magic in zip(kl.read_batches(data)["position"].tolist(), kl.read_batches(data)["magic"].tolist()):
                size = 12 + int.from_bytes(data[p + 8:p + 12], "big")
                layout = kl.HEADER if magic == 2 else lg.MESSAGE_V1 if magic == 1 else lg.MESSAGE_V0
                fields += [Field(f"entry@{p}.{f.name}", p + f.offset, f.size, (size, size - 12, 14, 22, 0, 2, 4, 0x08))
                           for f in layout.fields]
                hot += [p + layout.size, p + layout.size + 4, p + size - 1]
            out.append(Seed(name, data, fields, hot, _kafka_log_special, {"legacy": True}))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.kafka import log as kl

        if any(op[0] == "fixcrc" for op in ops):
            data = _fix_crcs(data)
        src: Any = data
        if rng.random() < 0.1:
            src = rt.fresh_dir() / "00000000000000000000.log"
            src.write_bytes(data)
        vc = rng.random() < 0.3
        torn = rng.choice(("raise", "stop"))
        stream = kl.walk_batches(src, verify_crc=vc, torn_tail=torn)
        seen = {}

        def walk():
            try:
                return list(stream)
            except RmqlabError as e:
                seen["walk"] = e
                raise

        bs = rt.call("walk_batches", walk)
        if bs is not None:

            frames, how = fm.kafka_frames(bytes(data))
            got = [(b.position, b.size, b.magic, b.last_offset) for b in bs]
            rt.agree(got == frames and (how == "end" or how == "torn" and torn == "stop"), "walk_batches",
                     f"{len(got)} entries (torn_tail={torn}), the framing model's {len(frames)} ending {how!r}; "
                     f"first difference {next((x for x in zip(got, frames) if x[0] != x[1]), None)}")
        if bs is not None:   # every whole entry is at least 26 bytes (a v0 message)
            rt.expect(len(bs) <= len(data) // 26 + 1, "walk_batches", f"{len(bs)} batches from {len(data)} bytes")
            if rt.want(rng, 0.1):
                for b in bs[:2]:
                    _ = (b.compression, b.timestamp_type, b.is_control, b.last_offset)   # must not raise
        # the C framing of the entries against its pure-Python model (_spans), limited and not
        mv = memoryview(data)
        if rt.want(rng, 0.3):
            def both_walks(buf):
                model = list(kl._spans(buf, None))
                c_pos, c_stop, _, _ = kl._entry_positions(buf, None)
                return model, c_pos.tolist(), c_stop

            walks = rt.call("C walk (_entry_positions)", both_walks, mv)
            if walks is not None:
                model, c_pos, c_stop = walks
                stop = model[-1] if model and isinstance(model[-1], kl._Stop) else None
                m_pos = model[:-1] if stop is not None else model

                def key(s):
                    return None if s is None else (type(s.error), s.error.offset, s.error.field, s.torn)

                rt.expect(c_pos == m_pos and key(c_stop) == key(stop), "C walk (_entry_positions)",
                          f"C walk {len(c_pos)} entries / {key(c_stop)}, model {len(m_pos)} / {key(stop)}")
        # read_batches without its DataFrame: the batch table (walk, headers, CRC-32C in C) and
        # the first pending error, which the public call raises
        table = rt.call("read_batches core (_batch_table)", kl._batch_table, mv, None, vc, torn)
        if table is not None:
            cols, report, pending = table
            if bs is not None:
                rt.expect(pending is None and len(cols["position"]) == len(bs), "read_batches",
                          f"batch table {len(cols['position'])} rows / {pending!r}, walk_batches {len(bs)} batches")
                if pending is None and rt.want(rng, 0.3):   # the index rule's picks: C and model
                    from rmqlab.kafka import rebuild as rb

                    pos, cuts = cols["position"], np.arange(1, len(cols["position"]), 3, dtype=np.int64)
                    interval = rng.choice((0, 61, 100, 4096))
                    picks = rt.call("offset index picks", rb._offset_entry_batches, pos, cuts, interval)
                    if picks is not None:
                        model = rb._offset_entry_batches_py(pos, cuts, interval)
                        rt.expect(picks.tolist() == model.tolist(), "offset index picks",
                                  f"C {picks.tolist()[:8]}..., model {model.tolist()[:8]}...")
            else:
                a = seen.get("walk")
                rt.expect(pending is not None and (type(a), a.offset, a.field) == (type(pending), pending.offset,
                                                                                  pending.field),
                          "read_batches", f"walk_batches raised {a!r} but the batch table has {pending!r}")
        if rt.want(rng, 0.5):   # read_records without its DataFrame: every record decoded
            d = rt.call("read_records core (_decode)", kl._decode, mv, None, verify_crc=vc, torn_tail=torn,
                        compressed=rng.choice(("decode", "decode", "skip")))
            if d is not None:
                in_file = int((~d.compressed).sum())
                rt.expect(in_file <= len(data) // 7, "read_records", f"{in_file} records from {len(data)} bytes")
                counted = int(np.maximum(d.batches["records_count"], 0).sum())
                rt.expect(len(d.position) <= counted, "read_records",
                          f"{len(d.position)} records but the headers count {counted}")
                if d.legacy is not None:   # plain legacy records take 26 bytes or more of the file
                    plain = sum(c == "none" for c in d.legacy.compression)
                    rt.expect(plain <= len(data) // 26, "read_records",
                              f"{plain} legacy records from {len(data)} bytes")
                del d
        if rt.want(rng, 0.08):
            rt.call("read_batches", kl.read_batches, src, verify_crc=vc, torn_tail=torn)
        if rt.want(rng, 0.08):
            rt.call("read_records", kl.read_records, src, values=rng.random() < 0.7, headers=rng.random() < 0.7,
                    verify_crc=vc, torn_tail=torn, compressed=rng.choice(("decode", "skip")))
        if rt.want(rng, 0.1):
            problems = rt.call("compressed_batch_problems", kl.compressed_batch_problems, src)
            if problems is not None:
                rt.expect(all(isinstance(x, str) for x in problems), "compressed_batch_problems", repr(problems))
        if heavy:
            rt.call("scan_key", kl.scan_key, src, rng.choice((b"k1", "k0", b"")), torn_tail=torn)
        del mv


def _kafka_log_special(ch, seed: Seed) -> list[tuple]:
    if seed.meta.get("legacy"):
        return _kafka_legacy_special(ch, seed)
    kind = ch.pick(("varint", "varint", "fixcrc", "compress", "lat"))
    if kind == "varint" and seed.hot:
        return [("write", ch.pick(seed.hot), ch.pick(HOSTILE_VARINTS)), ("fixcrc",)]
    if kind == "compress" and seed.fields:
        f = ch.pick([x for x in seed.fields if x.name.endswith(".attributes")])
        return [("set", f.offset, 2, ch.pick((1, 2, 3, 4, 5, 7, 0x10, 0x20, 0x30, 0x40))), ("fixcrc",)]
    if kind == "lat" and seed.fields:
        f = ch.pick([x for x in seed.fields if x.name.endswith(".attributes")])
        return [("set", f.offset, 2, 0x08), ("fixcrc",)]
    return [("fixcrc",)]


def _kafka_legacy_special(ch, seed: Seed) -> list[tuple]:
    """Legacy entries: hostile key/value lengths and messageSizes, codec and timestamp-type bits
    changed (a plain message read as a wrapper, a wrapper as zstd), each with the CRC-32 fixed."""
    kind = ch.pick(("length", "length", "codec", "fixcrc"))
    if kind == "length" and seed.hot:
        return [("set", ch.pick(seed.hot), 4, ch.pick((-1, -2, 0, 1, 2**31 - 1, 14, 22, 100))), ("fixcrc",)]
    if kind == "codec":
        f = ch.pick([x for x in seed.fields if x.name.endswith(".attributes")])
        return [("set", f.offset, f.size, ch.pick((1, 2, 3, 4, 5, 7, 0x08, 0x0B, 0x10))), ("fixcrc",)]
    return [("fixcrc",)]


def _fix_crcs(data: bytes) -> bytes:
    """Recompute the CRC-32C of every v2 batch the walk can reach (attributes .. batch end) and
    the CRC-32 of every legacy message (magic .. end)."""
    from rmqlab._crc32c import crc32c

    b = bytearray(data)
    p = 0
    while p + 17 <= len(b):
        size = int.from_bytes(b[p + 8:p + 12], "big", signed=True) + 12
        magic = b[p + 16]
        if size < (61 if magic == 2 else 26) or p + size > len(b):
            break
        if magic == 2:
            b[p + 17:p + 21] = crc32c(bytes(b[p + 21:p + size])).to_bytes(4, "big")
        elif magic in (0, 1):
            b[p + 12:p + 16] = zlib.crc32(bytes(b[p + 16:p + size])).to_bytes(4, "big")
        else:
            break
        p += size
    return bytes(b)


# ------------------------------------------------------------------------------- Kafka internal topics


def _real_batches_prefix(relative: str, batches: int) -> bytes | None:
    """The first `batches` batches of a real segment (whole batches, by their length field)."""
    raw = _real_bytes(REAL_KAFKA / relative)
    if raw is None:
        return None
    p = 0
    for _ in range(batches):
        if p + 12 > len(raw):
            break
        p += 12 + struct.unpack_from(">i", raw, p + 8)[0]
    return raw[:p]


#: real __consumer_offsets segments whose first batches are seeds: Kafka 2.7.1, a compacted
#: 3.6 partition, a Confluent 7.6 cluster and a proof-of-concept cluster
_REAL_OFFSETS_SEGMENTS = (
    "kafka-2.7.1/__consumer_offsets-17/00000000000000000000.log",
    "kafka-3.6-compacted/__consumer_offsets-9/00000000000000009907.log",
    "flink-on-prem/__consumer_offsets-28/00000000000000000000.log",
    "LDI-POC/__consumer_offsets-6/00000000000000000000.log",
)


class KafkaInternalTopicsTarget(Target):
    """``__consumer_offsets`` / ``__transaction_state`` records: decode_group_record and
    decode_transaction_record on mutated keys and values (every schema version, flexible ones
    with tagged fields, consumer-protocol members), and the segment readers (group_records,
    committed_offsets, group_members, transaction_states, describe_records) on mutated
    segments of such records. The seeds come from the test-side encoder of
    test_kafka_internal_topics (nothing of rmqlab's decoder)."""

    name = "kafka-internal-topics"
    anonymous_errors = True
    heavy_every = 8

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.kafka.log import KafkaRecord, encode_batches
        from tests.kafka import test_internal_topics as enc

        member = dict(memberId="m-1", groupInstanceId="s", clientId="c", clientHost="/h", rebalanceTimeout=1,
                      sessionTimeout=2, subscription=enc.subscription(3, ["a"], b"u", [("a", [0])], 4, "r"),
                      assignment=enc.assignment(1, [("a", [0, 1])]))
        okey, gkey, tkey = enc.offset_key("g", "t", 1), enc.group_key("g"), enc.txn_key("tx")
        values = {f"offset-v{v}": ("offsets", okey,
                                   enc.offset_value(v, 5, "md", 9, 2, 3, {3: b"zz"} if v == 4 else None))
                  for v in range(5)}
        values.update({f"group-v{v}": ("offsets", gkey, enc.group_value(v, "consumer", 3, "range", "m-1", 7,
                                                                         [member, member]))
                       for v in range(5)})
        values["txn-v0"] = ("transaction-log", tkey, enc.txn_value(0, 1, 2, 3, 1, [("t", [0, 1])], 5, 6))
        values["txn-v1"] = ("transaction-log", tkey, enc.txn_value(1, 1, 2, 3, 1, [("t", [0])], 5, 6,
                                                                   {0: enc.i64(4), 2: enc.i16(1)}))
        out = [Seed(name, value, [Field("version", 0, 2, (5, 4, 1, 0, -1))], [], None,
                    dict(kind="value", decoder=decoder, key=key))
               for name, (decoder, key, value) in values.items()]
        for name, decoder, recs in (
                ("offsets-segment", "offsets", [(okey, values["offset-v3"][2]), (gkey, values["group-v3"][2]),
                                                (okey, None), (gkey, values["group-v4"][2])]),
                ("txn-segment", "transaction-log", [(tkey, values["txn-v1"][2]), (tkey, None)])):
            data = encode_batches([KafkaRecord(i, 1000 + i, k, v) for i, (k, v) in enumerate(recs)],
                                  records_per_batch=2).data.tobytes()
            out.append(Seed(name, data, [], [], None, dict(kind="segment", decoder=decoder)))
        for rel in _REAL_OFFSETS_SEGMENTS:
            data = _real_batches_prefix(rel, _REAL_SEED_BATCHES)
            if data is not None:
                hot = [b[0] for b in fm.whole_v2_batches(data) or ()]
                fields = [Field(f"batch@{p}.{n}", p + at, w) for p in hot for n, at, w in
                          (("batchLength", 8, 4), ("attributes", 21, 2), ("lastOffsetDelta", 23, 4),
                           ("recordCount", 57, 4))]
                out.append(Seed("real-" + rel.split("/")[0], data, fields, hot, None,
                                dict(kind="segment", decoder="offsets")))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.kafka import internal_topics as it

        offsets = seed.meta["decoder"] == "offsets"
        if seed.meta["kind"] == "value":
            decode = it.decode_group_record if offsets else it.decode_transaction_record
            r = rt.call("decode", decode, seed.meta["key"], data, path="f", value_offset=100)
            if offsets and r is not None and r.name == "OffsetCommit":
                want = fm.offset_commit_model(data)
                if want is not None:
                    got = dict(r.value or {}, version=r.value_version)
                    rt.agree(got == want, "decode", f"OffsetCommit value {got}; by struct {want}")
            if r is not None:
                text = it.format_offsets_record(r, 0) if offsets else it.format_transaction_record(r)
                rt.expect(isinstance(text[0], str), "format", f"key text {text[0]!r}")
            return
        if offsets:
            rows = rt.call("group_records", it.group_records, data)
            batches = fm.whole_v2_batches(data, crc=False)
            if rows is not None and batches is not None and not any(a & 0x07 for _, a, _, _ in batches):
                # whole, uncompressed batches read without error: a row per record (the count in
                # the batch header, which DefaultRecordBatch's iterator reads exactly) of every
                # batch but the control ones
                want = sum(n for _, a, _, n in batches if not a & 0x20)
                rt.agree(len(rows) == want, "group_records", f"{len(rows)} rows; the batch headers count {want} "
                                                             "records")
            if heavy:
                rt.call("committed_offsets", it.committed_offsets, data)
                rt.call("group_members", it.group_members, data)
        else:
            rt.call("transaction_states", it.transaction_states, data)
        if heavy:
            rt.call("describe_records", it.describe_records, data, seed.meta["decoder"])


# ------------------------------------------------------------------------------- message ids


class MsgIdTarget(Target):
    """Message id text: parse_offset_msg_id and parse_uniq_id (with hostile reference times and
    zones); a parsed id must re-encode to the same text. Ids are strings, so a ValueError for
    text that is not an id is the documented answer.

    Model: both parsers answer exactly where fuzz_models.id_fields finds an id (32 or 56 hex
    digits), and their address, port, offset, pid, class-loader hash, month offset and counter
    are the bytes it cuts out (ipaddress and int.from_bytes)."""

    name = "msgid"
    anonymous_errors = True
    mem_const = 1 << 20

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.formats import msgid as mi

        texts = {
            "offset-v4": mi.offset_msg_id("192.168.71.1:8123", 172),
            "offset-v6": mi.offset_msg_id("[2001:db8::1]:10911", 2**40 + 5),
            "offset-neg": mi.offset_msg_id("0.0.0.0:-1", -1),
            "uniq-v4": mi.create_uniq_id("10.0.0.7", 4242, 0x1B6D3586, 1718000000000, 7, tz="UTC"),
            "uniq-v6": mi.create_uniq_id("::1", 65535, -1, 1718000000000, 65535, tz="UTC"),
            "lower": mi.offset_msg_id("10.1.2.3:9876", 999).lower(),
        }
        out = []
        for name, text in texts.items():
            data = text.encode("ascii")
            hot = list(range(0, len(data), 8))
            out.append(Seed(name, data, [], hot, _msgid_special, {}))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        import ipaddress

        from rmqlab.formats import msgid as mi

        text = data.decode("latin-1") if rng.random() < 0.8 else data.decode("utf-8", "surrogateescape")
        o = rt.call("parse_offset_msg_id", mi.parse_offset_msg_id, text, allow=(ValueError,))
        want = fm.id_fields(text)
        if want is None:
            rt.agree(o is None, "parse_offset_msg_id", f"{text!r} is no id, yet it parses as {o}")
        else:
            ip, rest = want
            got = o and (ipaddress.ip_address(o.ip).packed, o.port, o.phy_offset)
            rt.agree(got == (ip, int.from_bytes(rest[:4], "big", signed=True), int.from_bytes(rest[4:], "big",
                                                                                            signed=True)),
                     "parse_offset_msg_id", f"{text!r} parses as {o}, the hex model's fields {want}")
        if o is not None:
            again = rt.call("offset_msg_id", mi.offset_msg_id, o.store_host, o.phy_offset)
            rt.expect(again == text.upper(), "parse_offset_msg_id", f"re-encoded {again!r} != {text.upper()!r}")
        now = rng.choice((None, 1718000000000, 0, -1, 1, LONG_MAX, LONG_MIN, 253402300799999, 253402300800000,
                          -62135596800000, -62135596800001, 2**53, -(2**53), 1718000000000 + 86400000 * 40))
        tz = rng.choice(("UTC", "Asia/Shanghai", "Pacific/Kiritimati", None))
        u = rt.call("parse_uniq_id", mi.parse_uniq_id, text, now=now, tz=tz, allow=(ValueError,))
        if want is not None and (u is not None or now is None):   # a `now` past datetime's years refuses
            ip, rest = want
            got = u and (ipaddress.ip_address(u.ip).packed, u.pid, u.class_loader_hash, u.month_offset_ms, u.counter)
            rt.agree(got == (ip, int.from_bytes(rest[:2], "big"), int.from_bytes(rest[2:6], "big", signed=True),
                             int.from_bytes(rest[6:10], "big"), int.from_bytes(rest[10:], "big")),
                     "parse_uniq_id", f"{text!r} parses as {u}, the hex model's fields {want}")
        elif want is None:
            rt.agree(u is None, "parse_uniq_id", f"{text!r} is no id, yet it parses as {u}")
        if u is not None and u.timestamp_ms is not None:
            start = u.timestamp_ms - u.month_offset_ms
            diff = _wrap(u.month_offset_ms, 4)
            if not -1_000_000 < diff < 0:   # createUniqID writes a small negative step as 0
                again = rt.call("create_uniq_id", mi.create_uniq_id, u.ip, u.pid, u.class_loader_hash,
                                u.timestamp_ms, u.counter, tz=tz, start_time_ms=start)
                rt.expect(again == text.upper(), "parse_uniq_id", f"re-encoded {again!r} != {text.upper()!r}")


def _msgid_special(ch, seed: Seed) -> list[tuple]:
    n = len(seed.data)
    return [("write", ch.int(0, max(n - 1, 0)), ch.pick((b"G", b"-", b" ", b"\xff", b"0x", b"\x00", "é".encode(),
                                                         b"\xc3", "٣".encode())))]


# ------------------------------------------------------------------------------- Kafka partition-directory files

def _real_seed(relative: str) -> bytes | None:
    return _real_bytes(REAL_KAFKA / relative)


class KafkaProducerSnapshotTarget(Target):
    """Producer-state ``.snapshot`` files: read_producer_snapshot (CRC checked and not), the
    problems check, the dump lines; seeds from encode_producer_snapshot and the real files.

    Model: fuzz_models.producer_snapshot (struct and a table CRC-32C): both reads answer
    exactly where it finds version 1, a whole entries array and (checked) a matching CRC, with
    its producer ids and its computed CRC."""

    name = "kafka-producer-snapshot"

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.kafka import producer_state as ps

        specs = {"empty": [], "one": [(1000, 0, 9, 99, 4, 1718000000000, -1, -1)],
                 "three": [(i, i % 3, 2**31 - 1 - i, 10 * i, i, 1718000000000 + i, i - 1, 5 * i - 1) for i in range(3)]}
        datas = {n: ps.encode_producer_snapshot(e) for n, e in specs.items()}
        real = _real_seed("producer-state-snapshots/client.order.report-0/00000000000000094751.snapshot")
        if real is not None:
            datas["real-3-producers"] = real
        out = []
        for name, data in datas.items():
            n = (len(data) - ps.HEADER.size) // ps.ENTRY.size
            fields = [Field(f.name, f.offset, f.size, (n, n + 1, 2**24)) for f in ps.HEADER.fields]
            for i in range(n):
                at = ps.HEADER.size + i * ps.ENTRY.size
                fields += [Field(f"entry[{i}].{f.name}", at + f.offset, f.size) for f in ps.ENTRY.fields]
            out.append(Seed(name, data, fields, [], _snapshot_special, {}))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):

        from rmqlab.kafka import producer_state as ps

        if any(op[0] == "fixcrc" for op in ops):
            data = _fix_snapshot_crc(data)
        p = rt.fresh_dir() / "00000000000000000100.snapshot"
        p.write_bytes(data)
        df = rt.call("read_producer_snapshot", ps.read_producer_snapshot, p)
        if df is not None:
            rt.expect(len(df) <= len(data) // ps.ENTRY.size, "read_producer_snapshot", f"{len(df)} entries")
            rt.call("producer_snapshot_lines", ps.producer_snapshot_lines, df)
        loose = rt.call("read_producer_snapshot(verify_crc=False)", ps.read_producer_snapshot, p, verify_crc=False)
        m = fm.producer_snapshot(data)
        readable = m is not None and m["version"] == 1 and m["ids"] is not None
        for got, crc_checked in ((df, True), (loose, False)):
            want = m["ids"] if readable and (not crc_checked or m["stored"] == m["computed"]) else None
            ids = None if got is None else got["producer_id"].tolist()
            rt.agree(ids == want and (got is None or got.attrs["computed_crc"] == m["computed"]),
                     "read_producer_snapshot", f"verify_crc={crc_checked}: producers {ids}, the model's {want} "
                                               f"({m and {k: v for k, v in m.items() if k != 'ids'}})")
        res = rt.call("producer_snapshot_problems", ps.producer_snapshot_problems, p)
        if res is not None:
            rt.expect(all(isinstance(x, str) for x in res[0]), "producer_snapshot_problems", "a problem is not text")


def _fix_snapshot_crc(data: bytes) -> bytes:
    from rmqlab._crc32c import crc32c

    if len(data) < 6:
        return data
    return data[:2] + crc32c(data[6:]).to_bytes(4, "big") + data[6:]


def _snapshot_special(ch, seed: Seed) -> list[tuple]:
    f = ch.pick(seed.fields)
    return [("set", f.offset, f.size, ch.pick(HOSTILE[f.size])), ("fixcrc",)]


class KafkaTxnIndexTarget(Target):
    """``.txnindex`` files: read_txn_index, the problems check, the dump lines.

    Model: read_txn_index answers exactly where fuzz_models.txn_index (the AbortedTxn entries in
    struct, a version byte above 0 refused) does, with its entries in file order."""

    name = "kafka-txnindex"

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.kafka.txnindex import ENTRY

        specs = {"empty": [], "one": [(0, 1000, 3, 7, 3)],
                 "four": [(0, 1000 + i, 10 * i, 10 * i + 5, 10 * i) for i in range(4)]}
        out = []
        for name, entries in specs.items():
            data = b"".join(ENTRY.pack(*e) for e in entries)
            fields = [Field(f"entry[{i}].{f.name}", i * ENTRY.size + f.offset, f.size)
                      for i in range(len(entries)) for f in ENTRY.fields]
            out.append(Seed(name, data, fields, [], None, {}))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.kafka import txnindex as tx

        p = rt.fresh_dir() / rng.choice(("00000000000000000000.txnindex", "00000000000000000020.txnindex"))
        p.write_bytes(data)
        df = rt.call("read_txn_index", tx.read_txn_index, p)

        want = fm.txn_index(data)
        got = None if df is None else list(df[["version", "producer_id", "first_offset", "last_offset",
                                              "last_stable_offset"]].itertuples(index=False, name=None))
        rt.agree(got == want, "read_txn_index", f"entries {got and got[:3]}..., the model's {want and want[:3]}...")
        if df is not None:
            rt.expect(len(df) <= len(data) // tx.ENTRY.size, "read_txn_index", f"{len(df)} entries")
            rt.call("txn_index_lines", tx.txn_index_lines, df)
        rt.call("txn_index_problems", tx.txn_index_problems, p)


class KafkaKraftTarget(Target):
    """KRaft metadata snapshots and control batches: decode_control / decode_metadata_record on
    every record the walk reaches (and on windows of the raw bytes), read_control_records,
    read_metadata_records, read_kraft_snapshot and its problems, dirfiles.check_file. Seeds:
    control and metadata batches written with encode_batches (control flag set, CRC
    recomputed) and the real snapshot and bootstrap files.

    Model: where read_metadata_records answers, its rows are, batch by batch, those of
    fuzz_models.kafka_v2_batches' whole batches (struct over the batch headers): as many as
    each header's recordsCount, control rows in control batches alone (a record's offsetDelta
    is read as stored: DefaultRecord.readFrom checks it against nothing)."""

    name = "kafka-kraft"
    heavy_every = 8

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.kafka import log as kl
        from rmqlab.kafka.control import CONTROL_KEY, END_TXN_MARKER

        K = kl.KafkaRecord
        lc = b"\x00\x00\x00\x00\x00\x01\x03\x00\x00\x00\x01\x00\x00\x00\x00\x02\x00\x02\x00\x00\x00\x01\x00\x00"
        header = b"\x00\x00" + (1718000000000).to_bytes(8, "big") + b"\x00"
        topic = b"\x01\x02\x00\x02t" + bytes(range(16)) + b"\x00"
        feature = b"\x01\x0c\x00\x11metadata.version\x00\x0e\x00"
        partition = (b"\x01\x03\x02" + (0).to_bytes(4, "big") + bytes(range(16)) + b"\x02\x00\x00\x00\x01" * 2
                     + b"\x01\x01" + (1).to_bytes(4, "big") + bytes(8) + b"\x01"
                     + b"\x02" + b"\x01\x05\x02\x00\x00\x00\x01" + b"\x02\x01\x00")   # tags 1 (ELR [1]), 2 (null)
        specs = {
            "snapshot": [[K(0, 5, CONTROL_KEY.pack(0, 3), header)], [K(1, 6, None, feature), K(2, 6, None, topic),
                                                                      K(3, 6, None, partition)],
                         [K(4, 7, CONTROL_KEY.pack(0, 4), b"\x00\x00\x00")]],
            "markers": [[K(0, 5, CONTROL_KEY.pack(0, 1), END_TXN_MARKER.pack(0, 3))],
                        [K(1, 5, CONTROL_KEY.pack(0, 2), lc)], [K(2, 5, CONTROL_KEY.pack(0, 9), b"")]],
        }
        datas = {}
        for name, groups in specs.items():
            enc = kl.encode_batches([r for g in groups for r in g], records_per_batch=[len(g) for g in groups])
            b = bytearray(enc.data.tobytes())
            for g, at in zip(groups, kl.read_batches(bytes(b))["position"].tolist()):
                if g[0].key is not None:   # control batches: the flag in the attributes' low byte
                    b[at + 22] |= 0x20
            datas[name] = _fix_crcs(bytes(b))
        for name, rel in (("real-snapshot", "producer-state-snapshots/__cluster_metadata-0/"
                                            "00000000000000004758-0000000001.checkpoint"),
                          ("real-bootstrap", "kraft-metadata-restart/bootstrap.checkpoint")):
            real = _real_seed(rel)
            if real is not None:
                datas[name] = real
        out = []
        for name, data in datas.items():
            fields, hot = [], []
            for p in kl.read_batches(data)["position"].tolist():
                size = 12 + int.from_bytes(data[p + 8:p + 12], "big")
                fields += [Field(f"batch@{p}.{f.name}", p + f.offset, f.size, (size, size - 12, 61))
                           for f in kl.HEADER.fields]
            rec = kl.read_records(data, headers=False)
            for p, sz in zip(rec["position"].tolist(), rec["size"].tolist()):
                hot += list(range(p, min(p + sz, p + 48)))
            out.append(Seed(name, data, fields, hot, _kraft_special, {}))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.kafka import control, dirfiles, kraft

        if any(op[0] == "fixcrc" for op in ops):
            data = _fix_crcs(data)
        for _ in range(4):   # the value decoders on raw windows: any bytes are a possible value
            a = rng.randrange(len(data) + 1)
            window = data[a:a + rng.randint(0, 64)]
            rt.call("decode_metadata_record", kraft.decode_metadata_record, window, path="w", offset=a)
            rt.call("decode_control", control.decode_control, window[:4], window[4:], path="w", key_offset=a,
                    value_offset=a + 4)
        if rt.want(rng, 0.3):
            torn = rng.choice(("raise", "stop"))
            recs = rt.call("read_metadata_records(bytes)", kraft.read_metadata_records, data, errors="keep",
                           torn_tail=torn)
            if recs is not None:

                batches = fm.kafka_v2_batches(data)
                if batches is not None:
                    got = [(int(b), int(o), bool(c)) for b, o, c in
                           zip(recs["batch_position"], recs["offset"], recs["is_control"])]
                    want = [(p, n, c, base, last) for p, n, c, base, last in batches]
                    per = {p: [x for x in got if x[0] == p] for p, *_ in want}
                    ok = len(got) == sum(len(v) for v in per.values()) and all(
                        len(per[p]) == n and all(ctl == c for _, _, ctl in per[p]) for p, n, c, _, _ in want)
                    rt.agree(ok, "read_metadata_records", f"rows by batch {[(p, len(v)) for p, v in per.items()]}, "
                                                          f"{len(got)} in all; the headers' model {want}")
        if rt.want(rng, 0.2):
            rt.call("read_control_records(bytes)", control.read_control_records, data)
        if heavy:
            p = rt.fresh_dir() / rng.choice(("00000000000000000010-0000000001.checkpoint", "bootstrap.checkpoint"))
            p.write_bytes(data)
            s = rt.call("read_kraft_snapshot", kraft.read_kraft_snapshot, p)
            if s is not None:
                rt.expect(len(s["records"]) <= len(data) // 7, "read_kraft_snapshot", f"{len(s['records'])} records")
            rt.call("kraft_snapshot_problems", kraft.kraft_snapshot_problems, p)
            c = rt.call("check_file", dirfiles.check_file, p)
            if c is not None:
                rt.expect(all(isinstance(x, str) for x in c.problems), "check_file", "a problem is not text")


def _kraft_special(ch, seed: Seed) -> list[tuple]:
    if seed.hot and ch.pick((True, True, False)):
        return [("write", ch.pick(seed.hot), ch.pick(HOSTILE_VARINTS)), ("fixcrc",)]
    return _kafka_log_special(ch, seed)



# ------------------------------------------------------------------------------- config JSON


class StoreConfigTarget(Target):
    """A store's config/ JSON (fastjson dialect): load_config_file with and without a .bak, for
    each kind, and read_store_config's frames. Hostile edits: deep nesting, wrong types, huge
    numbers, invalid UTF-8, bare keys, truncation (the generic ops).

    Model: where a file loads from the main file and fuzz_models.config_json reads it (JSON
    with fastjson's bare integer keys), the topics / groups are its table's keys, the delay
    levels and consumer offsets its integer entries."""

    name = "storeconfig"
    mem_const = 4 << 20
    model_share = 0.02   # most hostile edits leave no document that loads; the model judges those that do

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.formats.storeconfig_writer import config_documents

        out = []
        for version in ("4.2.0", "5.3.1"):
            docs = config_documents(broker_version=version, timestamp=1718000000000, topics={"T": 4, "%RETRY%G": 1},
                                    consumer_offsets={"T@G": {0: 5, 1: 2**40}, "T@G@broadcast": {3: 0}},
                                    delay_offsets={1: 7, 18: 0})
            for name, text in docs.items():
                data = text.encode("utf-8")
                hot = [i for i, b in enumerate(data) if b in b'{}[]:,"'][:64]
                out.append(Seed(f"{version}-{name}", data, [], hot, _config_special, {"file": name}))
        # a static topic's mapping (TopicQueueMappingSerializeWrapper in fastjson's form: bare int keys)
        item = '{{"bname":"{b}","endOffset":{e},"gen":{g},"logicOffset":{lo},"queueId":{q},"startOffset":{s},' \
               '"timeOfEnd":-1,"timeOfStart":-1}}'
        items = ",".join(item.format(b=b, e=e, g=g, lo=lo, q=q, s=s) for b, e, g, lo, q, s in
                         (("broker-b", 725, 0, 0, 3, 395), ("broker-a", -1, 1, 330, 2, 344)))
        mapping = ('{"dataVersion":{"counter":0,"stateVersion":0,"timestamp":1718000000000},'
                   '"topicQueueMappingInfoMap":{"S":{"bname":"broker-a","currIdMap":{0:2},"dirty":false,"epoch":7,'
                   f'"hostedQueues":{{0:[{items}]}},"scope":"__global__","topic":"S","totalQueues":2}}}}}}')
        data = mapping.encode("utf-8")
        hot = [i for i, b in enumerate(data) if b in b'{}[]:,"'][:64]
        out.append(Seed("5.3-topicQueueMapping.json", data, [], hot, _config_special,
                        {"file": "topicQueueMapping.json"}))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.formats import storeconfig as sc

        d = rt.fresh_dir()
        cfg = d / "config"
        cfg.mkdir(exist_ok=True)
        name = seed.meta["file"]
        kind = {v: k for k, v in sc.CONFIG_FILES.items()}[name]
        (cfg / name).write_bytes(data)
        if rng.random() < 0.3:
            (cfg / (name + ".bak")).write_bytes(data[: rng.randint(0, len(data))])
        load = rt.call("load_config_file", sc.load_config_file, cfg / name, kind)
        if load is not None:
            rt.expect(load.source in ("file", "bak", "none"), "load_config_file", f"source {load.source!r}")
        if load is not None and load.source == "file":
            self._model(rt, data, kind, load)
        other = rng.choice([k for k in sc.KINDS if k != kind])
        rt.call("load_config_file(other kind)", sc.load_config_file, cfg / name, other)
        if kind == "topics":
            batch = rt.call("batch_cq_topics", sc.batch_cq_topics, d)
            if batch is not None:
                rt.expect(isinstance(batch, frozenset), "batch_cq_topics", f"returned {type(batch).__name__}")
        if heavy:
            store_cfg = rt.call("read_store_config", sc.read_store_config, d)
            if store_cfg is not None:
                for frame in ("topics", "consumer_offsets", "delay_offsets", "subscription_groups"):
                    rt.call(frame, getattr(store_cfg, frame))


    @staticmethod
    def _model(rt, data, kind, load):
        """The rows of a file that loaded from the main file against the model's document: the
        topics and groups are the table's keys; the delay levels and the consumer offsets its
        (integer) entries. Where the model does not read the document, or a table holds values
        of other types (whose conversion is fastjson's), it stays undecided."""

        doc = fm.config_json(data)
        if not isinstance(doc, dict):
            return
        table = doc.get({"topics": "topicConfigTable", "subscription_groups": "subscriptionGroupTable",
                         "delay_offsets": "offsetTable", "consumer_offsets": "offsetTable"}.get(kind, ""))
        if not isinstance(table, dict):
            return

        def whole(v):
            return isinstance(v, int) and not isinstance(v, bool)

        if kind == "topics":
            got, want = sorted(r["topic"] for r in load.rows), sorted(table)
        elif kind == "subscription_groups":
            got, want = sorted(r["group"] for r in load.rows), sorted(table)
        elif kind == "delay_offsets":
            if not all(whole(k) and whole(v) for k, v in table.items()):
                return
            got, want = sorted((r["level"], r["offset"]) for r in load.rows), sorted(table.items())
        elif kind == "consumer_offsets":
            if not all(isinstance(q, dict) and all(whole(k) and whole(v) for k, v in q.items())
                       for q in table.values()):
                return
            got = sorted((r["key"], r["queue_id"], r["offset"]) for r in load.rows if r["table"] == "offsetTable")
            want = sorted((key, q, o) for key, qs in table.items() for q, o in qs.items())
        else:
            return
        rt.agree(got == want, "load_config_file", f"{kind}: rows {got[:4]}..., the model's {want[:4]}...")


def _config_special(ch, seed: Seed) -> list[tuple]:
    n = len(seed.data)
    at = ch.pick(seed.hot) if seed.hot else 0
    payload = ch.pick((b"[" * 5000, b"{" * 3000, b"9" * 5000, b"-9223372036854775809", b"1e999", b"1.5",
                       b"\xff\xfe", b"\xc3", b"null", b"true", b'"x"', b"[]", b"{}", b"0:", b"abc:",
                       b'"\\ud800"', b'"\\u12"', b"\x00", b"\xef\xbb\xbf", b",", b":"))
    how = ch.int(0, 2)
    if how == 0:
        return [("insert", min(at, n), payload)]
    if how == 1:
        return [("write", min(at, max(n - 1, 0)), payload)]
    return [("truncate", ch.int(0, n))]


# ------------------------------------------------------------------- Kafka's small text files

class KafkaTextFilesTarget(Target):
    """A partition directory's leader-epoch-checkpoint, partition.metadata and quorum-state,
    seeded with the real files when they are there. Hostile edits: huge and negative numbers,
    missing lines, invalid UTF-8, wrong JSON types, truncation (the generic ops).

    Model: read_leader_epoch_checkpoint answers as fuzz_models.leader_epoch_checkpoint
    (CheckpointFile's line rules in str and re) on ASCII text: its entries, or an error where
    Kafka throws, or a TruncatedFileError where the header lines are missing (Kafka reads no
    entries there; rmqlab refuses such a file, as documented)."""

    name = "kafka-textfiles"
    mem_const = 4 << 20

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.kafka import checkpoints as kc

        texts = {kc.LEADER_EPOCH_CHECKPOINT: b"0\n2\n1 0\n2 913\n",
                 kc.PARTITION_METADATA: b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ",
                 kc.QUORUM_STATE: b'{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
                                  b'"currentVoters":[{"voterId":1}],"data_version":0}'}
        out = [(f"synthetic-{name}", name, data) for name, data in texts.items()]
        real = sorted(p for p in REAL_KAFKA.glob("*/*/*") if p.name in texts) if REAL_KAFKA.is_dir() else []
        if not real:   # every real data set: none there is a missing oracle, not a quieter target
            _real_bytes(REAL_KAFKA / "*" / "*" / kc.LEADER_EPOCH_CHECKPOINT)
        for path in real:
            if path.name in texts:
                out.append((f"{path.parent.parent.name}-{path.parent.name}-{path.name}", path.name, path.read_bytes()))
        return [Seed(seed, data, [], [i for i, b in enumerate(data) if b in b'\n :{},"'][:64], _config_special,
                     {"file": name}) for seed, name, data in out]

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.kafka import checkpoints as kc

        path = rt.fresh_dir() / seed.meta["file"]
        path.write_bytes(data)
        for reader in (kc.read_leader_epoch_checkpoint, kc.read_partition_metadata, kc.read_quorum_state):
            rt.call(reader.__name__, reader, path)
        epochs = rt.call("read_leader_epoch_checkpoint", kc.read_leader_epoch_checkpoint, path)
        if seed.meta["file"] == kc.LEADER_EPOCH_CHECKPOINT:
            self._model(rt, data, path)
        if epochs is not None:
            rt.expect(list(epochs.columns) == ["epoch", "start_offset"], "read_leader_epoch_checkpoint",
                      f"columns {list(epochs.columns)}")


    @staticmethod
    def _model(rt, data, path):

        from rmqlab.kafka import checkpoints as kc

        want = fm.leader_epoch_checkpoint(data)
        if want is None:   # not ASCII: the model leaves it to the no-crash property
            return
        try:
            got: Any = list(kc.read_leader_epoch_checkpoint(path).itertuples(index=False, name=None))
        except RmqlabError:
            got = "refused"
        # a file without both header lines: Kafka reads no entries, rmqlab refuses it (documented)
        ok = got == "refused" if want == "short" else got == want
        rt.agree(ok, "read_leader_epoch_checkpoint", f"{data[:60]!r}: read {got}, CheckpointFile's model {want}")


# ------------------------------------------------------------------------ BatchConsumeQueue

BCQ_FILE = 46 * 4   # 4 units a file


class BatchConsumeQueueTarget(Target):
    """BatchConsumeQueue folders: open/read (strict and not), units, to_frame, find at every
    interesting message offset, offset_by_time (both boundaries), problems/check; the input is
    cut into 4-unit files (layout ops as for the ConsumeQueue).

    Model: unit_count equals fuzz_models.batch_queue_units (BatchConsumeQueue.recover in
    struct) wherever the files are whole."""

    name = "batchconsumequeue"
    heavy_every = 8

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.formats.batchconsumequeue import UNIT, BatchConsumeQueueWriter

        out = []
        specs = {
            "batches": [(100 * i, 90, 7, 1718000000000 + 10 * i, 3 * i, 3) for i in range(9)],
            "mixed": [(500 + 80 * i, 70, 0, 1718000000000 + (i // 2), i * (i + 1) // 2, i + 1) for i in range(6)],
            "one": [(0, 91, 0, 5, 0, 1)],
        }
        for name, units in specs.items():
            folder = workdir / name / "T" / "0"
            with BatchConsumeQueueWriter.create(folder, mapped_file_size=BCQ_FILE) as w:
                for u in units:
                    w.put(*u)
            files = sorted(folder.iterdir())
            data = b"".join(p.read_bytes() for p in files)
            fields = [Field(f"unit[{k}].{f.name}", 46 * k + f.offset, f.size, (0, -1))
                      for k in range(len(data) // 46) for f in UNIT.fields]
            out.append(Seed(name, data, fields, [], None, dict(first=0, nfiles=len(files))))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.formats.batchconsumequeue import BatchConsumeQueue

        d = rt.fresh_dir() / "T" / "0"
        d.mkdir(parents=True, exist_ok=True)
        _write_chunks(d, data, BCQ_FILE, 0)
        if rt.want(rng, 0.3):
            q = rt.call("BatchConsumeQueue.open(strict=True)", BatchConsumeQueue.open, d, BCQ_FILE)
            if q is not None:
                q.close()
        opener = BatchConsumeQueue.read if rng.random() < 0.2 else BatchConsumeQueue.open
        q = rt.call("BatchConsumeQueue.open(strict=False)", opener, d, BCQ_FILE, strict=False)
        if q is None:
            return
        with q:

            want = fm.batch_queue_units([data[i:i + BCQ_FILE] for i in range(0, len(data), BCQ_FILE)], BCQ_FILE)
            if want is not None:
                rt.agree(q.unit_count == want, "BatchConsumeQueue", f"{q.unit_count} units, recover()'s model {want}")
            rt.expect(q.unit_count <= len(data) // 46 + 1, "BatchConsumeQueue", f"{q.unit_count} units")
            len(q), q.files, q.dirty_files, repr(q)
            rt.call("units", lambda: q.units)
            for x in {q.min_offset, q.max_offset - 1, q.max_offset, 0, -1, rng.randint(-5, 40), 2**62}:
                rt.call("find", q.find, x)
            for ts in (0, 1718000000000, 1718000000045, 2**63 - 1, -(2**63)):
                rt.call("offset_by_time", q.offset_by_time, ts, rng.choice(("lower", "upper")))
            probs = rt.call("problems", q.problems, rng.choice((None, 0, 1000, 2**63 - 1)))
            for e in probs or ():
                rt.expect(isinstance(e, RmqlabError) and e.path is not None, "problems", f"untyped problem {e!r}")
            if heavy:
                rt.call("to_frame", q.to_frame)
                rt.call("check", q.check)


# ------------------------------------------------------------------------------- timer store

TIMER_LOG_FILE = 52 * 6 + 16 + 4   # six units, then a blank filler


class TimerTarget(Target):
    """The 5.x timer store: the input is the timer checkpoint (56 bytes), then `slots` wheel slots
    of 32 bytes (written at the seed's slot indexes of a sparse full-size wheel), then the timer
    log (files of ``meta["file_size"]`` bytes). Calls: read_timer_checkpoint, TimerLog.open,
    unit_at at every unit start and hostile positions, chain from every slot's last_pos,
    delayed_time, infer_precision; on heavy inputs TimerWheel.open, occupied, slot, all_num and
    verify_timer_store. Seeds: timer stores of the brute-force doEnqueue model
    (tests/support/timer_model.py) and, given `stores`, a broker's own timer files.

    Model: TimerLog's units are at the offsets fuzz_models.timer_log_units finds (the walk of
    recoverAndRevise in struct), wherever TimerLog.open answers."""

    name = "timer"
    heavy_every = 32
    mem_const = 96 << 20   # the wheel's 1.2 M slots: occupied() and all_num() pass over them all

    def __init__(self, stores: Sequence[Path] = (), *, only_stores: bool = False):
        self.stores = list(stores)
        self.only_stores = only_stores

    def _seed(self, name: str, cp: bytes, slots: list[tuple[int, bytes]], log: bytes, file_size: int) -> Seed:
        from rmqlab.formats import timer as tm

        data = cp[:56] + b"".join(b for _, b in slots) + log
        base = 56 + 32 * len(slots)
        fields = [Field(f.name, f.offset, f.size) for f in tm.TIMER_CHECKPOINT.fields]
        fields += [Field(f"slot[{k}].{f.name}", 56 + 32 * k + f.offset, f.size, (-1, -2, 52, base))
                   for k in range(len(slots)) for f in tm.SLOT.fields]
        fields += [Field(f"unit[{k}].{f.name}", base + 52 * k + f.offset, f.size, (-1, 0, 52, 16, tm.BLANK_MAGIC_CODE))
                   for k in range(min(len(log) // 52, 40)) for f in tm.UNIT.fields]
        hot = [base + 52 * k for k in range(min(len(log) // 52, 40))]
        return Seed(name, data, fields, hot, None, dict(indexes=[i for i, _ in slots], file_size=file_size))

    def seeds(self, workdir: Path) -> list[Seed]:
        from timer_model import TimerModel

        from rmqlab.formats import timer as tm

        workdir.mkdir(parents=True, exist_ok=True)
        out: list[Seed] = []
        t0 = 1718000000000
        plans = {"model-chains": [(0, 5000, False), (1, 5000, False), (2, 7000, True), (3, 5000, False)],
                 "model-roll": [(0, 60 * 3600_000, False), (1, 2000, False)]}
        for name, plan in () if self.only_stores else plans.items():
            m = TimerModel(file_size=TIMER_LOG_FILE)
            for i, (w, d, delete) in enumerate(plan):
                m.enqueue(t0 + w * 1000, t0 + w * 1000 + d, 100 * i, 90, "T", delete=delete)
            root = workdir / name
            m.write(root, last_read_time_ms=t0)
            out.append(self._seed_from(root, name, tm))
        for k, store in enumerate(self.stores):
            out.append(self._seed_from(store, f"broker-{k}", tm))
        return out

    def _seed_from(self, root: Path, name: str, tm) -> Seed:
        cp = (root / "config" / "timercheck").read_bytes()[:56]
        with tm.TimerWheel.open(root / "timerwheel") as w:
            occ = w.occupied()
            slots = [(int(i), bytes(w.slots[int(i)].tobytes())) for i in occ["index"][:16]]
        with tm.TimerLog.open(root / "timerlog") as log:
            size = log.file_size
            used = log.end - (log.files[0].start if log.files else 0)
        files = sorted((root / "timerlog").iterdir())
        raw = b"".join(f.read_bytes() for f in files)[:min(max(used, 0) + 52, 64 * 52)]
        return self._seed(name, cp, slots, raw, size if size <= 4096 else len(raw))

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.formats import timer as tm

        root = rt.fresh_dir()
        k = len(seed.meta["indexes"])
        (root / "config").mkdir(exist_ok=True)
        (root / "config" / "timercheck").write_bytes(data[:56])
        (root / "timerlog").mkdir(exist_ok=True)
        log_bytes = data[56 + 32 * k:]
        _write_chunks(root / "timerlog", log_bytes, max(seed.meta["file_size"], 1), 0)
        cp = rt.call("read_timer_checkpoint", tm.read_timer_checkpoint, root / "config" / "timercheck")
        log = rt.call("TimerLog.open", tm.TimerLog.open, root / "timerlog")
        slots = np.frombuffer(data[56:56 + 32 * k].ljust(32 * k, b"\0"), dtype=tm.SLOT.dtype)
        if log is None:
            return
        with log:

            size = max(seed.meta["file_size"], 1)
            want = fm.timer_log_units([(i, log_bytes[i:i + size]) for i in range(0, len(log_bytes), size)])
            got = log.positions.tolist()
            rt.agree(got == want, "TimerLog", f"units at {got[:6]}..., recoverAndRevise's model {want[:6]}...")
            rt.expect(len(log.units) <= len(log_bytes) // 52 + 1, "TimerLog", f"{len(log.units)} units")
            for pos in [*log.positions[:20].tolist(), -1, 1, 52 * 3 + 1, 2**62, -(2**63), len(log_bytes)]:
                rt.call("unit_at", log.unit_at, int(pos))
            for last in slots["last_pos"].tolist():
                got = rt.call("chain", log.chain, int(last), limit=10_000)
                rt.expect(got is None or len(got) <= len(log.units), "chain", f"{len(got or ())} units")
            log.delayed_time()
            rt.call("infer_precision", tm.infer_precision, slots, log)
        if not heavy:
            return
        with open(root / "timerwheel", "wb") as f:
            f.truncate(tm.WHEEL_SIZE)
            for i, idx in enumerate(seed.meta["indexes"]):
                f.seek(idx * 32)
                f.write(data[56 + 32 * i:56 + 32 * (i + 1)])
        w = rt.call("TimerWheel.open", tm.TimerWheel.open, root / "timerwheel")
        if w is not None:
            with w:
                w.occupied()
                for t in (0, -1, 2**62, _wrap(int(slots["time"][0]) * 1000, 8) if k else 5):
                    w.slot(t)
                if cp is not None:
                    w.all_num(cp.last_read_time_ms)
        from rmqlab.verify.check_timer import verify_timer_store

        if not rt.want(rng, 0.25):   # pandas frames: a quarter of the heavy inputs
            return
        rep = rt.call("verify_timer_store", verify_timer_store, root)
        for p in (rep.problems if rep is not None else ()):
            rt.expect(p.error.path is not None, "verify_timer_store", f"problem naming no file: {p.error}")


# ------------------------------------------------------------------------------- compaction store


class CompactionTarget(Target):
    """The 5.1+ compaction store of one queue: the input is the sparse queue's bytes (46-byte
    units, cut into 4-unit files, log files of the same names) and then the compaction log's
    (CommitLog records whose PHYSICALOFFSET is their log position). Calls: SparseQueue.open,
    iterate_from_or_next at every interesting offset, binary_search_right over hostile bounds,
    verify_compaction (heavy inputs), read_position_checkpoint on the log's bytes as text.

    Model: binary_search_right equals fuzz_models.first_base_at_least (a brute-force scan of
    the units' msgBaseOffsets) wherever those are in order."""

    name = "compaction"
    heavy_every = 8

    def __init__(self, stores: Sequence[Path] = (), *, only_stores: bool = False):
        self.stores = list(stores)
        self.only_stores = only_stores

    def _store_seed(self, k: int, root: Path) -> Seed:
        """Queue 0 of a broker's compaction topic: its queue's units and the log's records."""
        from rmqlab.formats import batchconsumequeue as bcq
        from rmqlab.formats import compaction as cpt

        qdir = next(d for d in sorted((root / cpt.COMPACTION_DIR / cpt.COMPACTION_CQ_DIR).iterdir()))
        with cpt.SparseQueue.open(qdir / "0") as q:
            units = q.queue.units.copy()
        cq = units.tobytes()[:46 * 8]
        end = int((units["commitlog_offset"][:8].astype(np.int64) + units["size"][:8]).max())
        log = sorted(cpt.log_dir(root, qdir.name, 0).iterdir())[0].read_bytes()[:end]
        fields = [Field(f"unit[{i}].{f.name}", 46 * i + f.offset, f.size, (0, -1, 46))
                  for i in range(len(cq) // 46) for f in bcq.UNIT.fields]
        return Seed(f"broker-{k}", cq + log, fields, [46 * i for i in range(len(cq) // 46)], None,
                    dict(cq_bytes=len(cq), offsets=units["msg_base_offset"][:8].tolist()))

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.formats import batchconsumequeue as bcq
        from rmqlab.formats.commitlog import CommitLogWriter

        out = [self._store_seed(k, root) for k, root in enumerate(self.stores)]
        plans = {"dense": [0, 1, 2, 3, 4, 5], "compacted": [0, 3, 4, 9, 10, 15, 22]}
        for name, gaps in () if self.only_stores else plans.items():
            d = workdir / name
            with CommitLogWriter(d / "log", file_size=1 << 16) as w:
                batch = w.append({"topic": ["T"] * len(gaps), "queue_id": [0] * len(gaps), "keys": ["k"] * len(gaps),
                                  "queue_offset": gaps, "body": [b"v" * (i + 1) for i in range(len(gaps))]})
            log = (d / "log" / f"{0:020d}").read_bytes()[:int(batch.end_offset)]
            sizes = np.diff(np.append(batch.phy_offset, batch.end_offset))
            units = b"".join(bcq.UNIT.pack(int(o), int(n), 0, 1718000000000 + i, g, 1, -1, 0)
                             for i, (o, n, g) in enumerate(zip(batch.phy_offset, sizes, gaps, strict=True)))
            fields = [Field(f"unit[{k}].{f.name}", 46 * k + f.offset, f.size, (0, -1, 46))
                      for k in range(len(gaps)) for f in bcq.UNIT.fields]
            out.append(Seed(name, units + log, fields, [46 * k for k in range(len(gaps))], None,
                            dict(cq_bytes=len(units), offsets=gaps)))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.formats import compaction as cpt

        root = rt.fresh_dir()
        cut = seed.meta["cq_bytes"]
        qdir, ldir = cpt.cq_dir(root, "T", 0), cpt.log_dir(root, "T", 0)
        qdir.mkdir(parents=True, exist_ok=True)
        ldir.mkdir(parents=True, exist_ok=True)
        names = _write_chunks(qdir, data[:cut], BCQ_FILE, 0)
        if names and names[-1].stat().st_size < BCQ_FILE and rng.random() < 0.8:   # the broker preallocates
            with open(names[-1], "ab") as f:
                f.write(bytes(BCQ_FILE - names[-1].stat().st_size))
        log = data[cut:]
        for k, p in enumerate(names):   # log files of the queue files' names (sanityCheck)
            (ldir / p.name).write_bytes(log if k == 0 else b"")
        q = rt.call("SparseQueue.open", cpt.SparseQueue.open, qdir, BCQ_FILE)
        if q is None:
            return
        with q:
            for x in {*seed.meta["offsets"], q.min_offset, q.max_offset, q.max_offset - 1, -1, 0, 2**62,
                      rng.randint(-3, 40)}:
                got = rt.call("iterate_from_or_next", q.iterate_from_or_next, x)
                n = 0 if got is None else len(got)
                rt.expect(n <= BCQ_FILE // 46, "iterate_from_or_next", f"{n} units")

        buf = data[:cut]
        last = (len(buf) // 46 - 1) * 46
        for left, right in ((0, last), (0, len(buf) - 46), (-46, 46), (0, 10**6), (46, 0), (46, last)):
            if 0 <= left and right + 46 <= len(buf):
                target = rng.randint(-2, 30)
                got = cpt.binary_search_right(buf, left, right, target)
                want = fm.first_base_at_least(buf, left, right, target) if left <= right and right % 46 == 0 else None
                if want is not None:
                    rt.agree(got == want, "binary_search_right", f"units {left}..{right}, target {target}: {got}, "
                                                                 f"the brute-force scan's {want}")
        if heavy:
            from rmqlab.verify.check_compaction import verify_compaction

            rt.call("verify_compaction", verify_compaction, root)
            checkpoint = root / "compaction" / "position-checkpoint"
            checkpoint.write_bytes(log[:200])
            rt.call("read_position_checkpoint", cpt.read_position_checkpoint, checkpoint)


class RevivelogTarget(Target):
    """The bodies of a 5.x revive log (fastjson PopCheckPoint, AckMsg, BatchAckMsg): the input is
    one body, parsed under its tag; a checkpoint that parses is asked for its offsets, ack indexes
    and problems. Seeds: bodies written from the Java classes' field names (short, and 5.0.0's
    long ack names), or the ck/ack/bAck bodies of broker stores (`stores`; with `only_stores`,
    those alone).

    Model: where a body parses, its start offset, pop time, queue id, topic and count (a
    checkpoint) or acknowledged offsets (an ack) are those of fuzz_models.revive_fields (the
    document read by a stdlib JSON reader, fields by their Java names)."""

    name = "revivelog"
    model_share = 0.03   # most edits leave a body that is no JSON document; the model judges the rest (5-7 %)

    def __init__(self, stores: Sequence[Path] = (), *, only_stores: bool = False, store_kwargs=None):
        self.stores = list(stores)
        self.only_stores = only_stores
        self.store_kwargs = store_kwargs or {}

    def _store_seeds(self, k: int, root: Path) -> list[Seed]:
        from rmqlab.formats import commitlog as cl
        from rmqlab.rules.properties import property_values
        from rmqlab.store.directory import Store

        # every revive-log body the store holds, in the revive topic or still on the timer wheel
        # for it, read or not by the revive service (a restarted broker may have revived them all)
        m = cl.read_columns(Store(root, **self.store_kwargs).commitlog_dir, body=True, on_error="report")
        real = property_values(m["properties"], "REAL_TOPIC").fillna("").astype(str)
        m = m[m["topic"].astype(str).str.startswith("rmq_sys_REVIVE_LOG_")
              | ((m["topic"] == "rmq_sys_wheel_timer") & real.str.startswith("rmq_sys_REVIVE_LOG_")).to_numpy()]
        out = []
        for tag in ("ck", "ack", "bAck"):
            mine = m[m["tags"] == tag]
            if len(mine):
                body = bytes(mine["body"].iloc[0])
                out.append(Seed(f"broker-{k}-{tag}", body, [], [i for i, b in enumerate(body) if b in b'{}[]:,"'],
                                _config_special, {"tag": tag}))
        return out

    def seeds(self, workdir: Path) -> list[Seed]:
        out = [s for k, root in enumerate(self.stores) for s in self._store_seeds(k, root)]
        if self.only_stores:
            return out
        bodies = {
            "ck": b'{"bm":3,"bn":"b","c":"G","d":[0,2,5],"it":60000,"n":3,"pt":1718000000000,"q":1,'
                  b'"reviveTime":1718000060000,"ro":7,"rp":"2","so":40,"t":"T"}',
            "ck-old": b'{"bitMap":0,"cid":"G","invisibleTime":1,"num":4,"popTime":5,"queueId":0,"startOffset":9,'
                      b'"topic":"T"}',
            "ack": b'{"ao":42,"bn":"b","c":"G","pt":1718000000000,"q":1,"so":40,"t":"T"}',
            "ack-long": b'{"ackOffset":42,"consumerGroup":"G","popTime":1,"queueId":1,"startOffset":40,"topic":"T"}',
            "bAck": b'{"aol":[40,45],"bn":"b","c":"G","pt":1718000000000,"q":1,"so":40,"t":"T"}',
        }
        for name, body in bodies.items():
            out.append(Seed(name, body, [], [i for i, b in enumerate(body) if b in b'{}[]:,"'], _config_special,
                            {"tag": name.split("-")[0]}))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.formats import revivelog as rl

        tag = seed.meta["tag"] if rng.random() < 0.8 else rng.choice(["ck", "ack", "bAck", "other"])
        got = rt.call("parse_revive_body", rl.parse_revive_body, tag, data, path="revive-body", offset=0)
        if isinstance(got, (rl.PopCheckPoint, rl.PopAck)):

            ck = isinstance(got, rl.PopCheckPoint)
            names = ("start_offset", "pop_time", "queue_id", "topic") + (("num",) if ck else ())
            want = fm.revive_fields(data, names + (() if ck else ("ack_offsets",) if got.batch else ("ack_offset",)))
            if want is not None:
                have = {f: getattr(got, f) for f in names}
                if not ck:
                    have.update({"ack_offsets": list(got.offsets)} if got.batch else {"ack_offset": got.offsets[0]})
                rt.agree(have == want, "parse_revive_body", f"{tag}: {have}, the JSON model's {want}")
        if isinstance(got, rl.PopCheckPoint):
            offsets = got.offsets()
            rt.expect(len(offsets) <= max(got.num, 0), "offsets", f"{len(offsets)} offsets for n={got.num}")
            for o in offsets[:8]:
                i = got.index_of_ack(o)
                rt.expect(-1 <= i < max(got.num, 0), "index_of_ack", f"bit {i} of a checkpoint of {got.num}")
            got.problems()
            got.reput_count()
        elif isinstance(got, rl.PopAck):
            rt.expect(len(got.offsets) >= (0 if got.batch else 1), "offsets", "an ack without its offset")


class TieredIndexTarget(Target):
    """The tiered store's index files (RIP-65): the input is one local file (28-byte header,
    8-byte slots, 32-byte items) of a small geometry, read as a local file and its compaction as
    a compacted one. Calls: TieredIndexFile.open, query at every key of the seed, items, check,
    compacted_bytes (and the compacted form read back). Seeds: files written by
    write_local_file, or (`files`) files the release's IndexStoreFile wrote.

    Model: items() lists the items 1..itemCount that fuzz_models.tiered_local_items reads
    with struct, wherever the file is whole items after its slots."""

    name = "tiered-index"
    heavy_every = 4

    def __init__(self, files: Sequence[Path] = (), *, hash_slot_num: int = 7, only_files: bool = False):
        self.files = list(files)
        self.hash_slot_num = hash_slot_num
        self.only_files = only_files

    def _seed(self, name: str, data: bytes, slots: int, keys: list[tuple[str, str]]) -> Seed:
        from rmqlab.formats import tieredindex as ti

        items_at = ti.HEADER.size + slots * ti.SLOT.size
        n = (len(data) - items_at) // ti.ITEM.size
        hostile = (n, n - 1, n + 1, slots, ti.BEGIN_MAGIC_CODE, ti.END_MAGIC_CODE)
        fields = [Field(f"header.{f.name}", f.offset, f.size, hostile) for f in ti.HEADER.fields]
        fields += [Field(f"slot[{i}].value", ti.HEADER.size + i * 8, 4, hostile) for i in range(slots)]
        fields += [Field(f"item[{k}].{f.name}", items_at + k * ti.ITEM.size + f.offset, f.size, hostile)
                   for k in range(1, min(n, 24)) for f in ti.ITEM.fields]
        return Seed(name, data, fields, [items_at + k * ti.ITEM.size for k in range(1, min(n, 24))], None,
                    {"slots": slots, "keys": keys})

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.formats import tieredindex as ti

        out = [self._seed(f"release-{k}", p.read_bytes(), self.hash_slot_num, [("TopicA", "k0")])
               for k, p in enumerate(self.files)]
        if self.only_files:
            return out
        rows = [("T", 1, i % 3, [f"k{i % 5}", f"u{i}"], 4096 * i, 300 + i, 1718000000000 + 700 * i) for i in range(9)]
        p = ti.write_local_file(workdir / "1718000000000", ti.TieredIndexGeometry(7, 24), 1718000000000, rows)
        out.append(self._seed("model", p.read_bytes(), 7, [("T", f"k{i}") for i in range(5)] + [("T", "u3")]))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.formats import tieredindex as ti

        d = rt.fresh_dir()
        path = d / "1718000000000"
        path.write_bytes(data)
        f = rt.call("open", ti.TieredIndexFile.open, path, hash_slot_num=seed.meta["slots"], form="local")
        if f is None:
            return
        with f:
            for topic, key in seed.meta["keys"]:
                got = rt.call("query", f.query, topic, key, rng.choice([1, 4, 64]), 0, 1 << 62)
                if got is not None:
                    rt.expect(len(got) <= 65, "query", f"{len(got)} items for at most 65")
            items = rt.call("items", f.items)
            if items is not None:

                want = fm.tiered_local_items(data, seed.meta["slots"])
                if want is not None:
                    got = list(items[["hash_code", "topic_id", "queue_id", "offset", "size", "time_diff", "item_index"]]
                               .itertuples(index=False, name=None))
                    rt.agree(got == want, "items", f"{len(got)} items, the struct model's {len(want)}: "
                                                   f"{next((x for x in zip(got, want) if x[0] != x[1]), None)}")
            rt.call("check", f.check)
            packed = rt.call("compacted_bytes", f.compacted_bytes) if heavy else None
        if packed is not None:
            c = d / ti.COMPACTING / path.name
            c.parent.mkdir(exist_ok=True)
            c.write_bytes(packed)
            back = rt.call("open compacted", ti.TieredIndexFile.open, c, hash_slot_num=seed.meta["slots"])
            if back is not None:
                with back:
                    for topic, key in seed.meta["keys"]:
                        rt.call("query compacted", back.query, topic, key, 64, 0, 1 << 62)
                    rt.call("check compacted", back.check)


class TieredIndex51Target(Target):
    """5.1's tiered index (TieredIndexFile): the input is an uploaded (compacted) file then a full
    local one (40 + 8 x slots + 32 x items + 4 bytes; the split at the seed's compacted length).
    Calls: uploaded_slot_items and local_slot_items at every key of the seed, startup_upload and
    query_uploaded over both, check_compacted and check_local (local_geometries in heavy runs).
    Seeds: files of 5.1's layout packed here from its rules, or (`files`: (uploaded, local)
    pairs) files the 5.1 broker wrote.

    Model: uploaded_slot_items and local_slot_items answer as fuzz_models.tiered51_uploaded_slot
    and tiered51_local_slot (the files' layouts and CompactTask's chain walk in struct): the
    same items in the same order, or an error where the model refuses the file."""

    name = "tiered-index-51"

    def __init__(self, files: Sequence[tuple[Path, Path]] = (), *, hash_slot_num: int = 7,
                 only_files: bool = False):
        self.files = list(files)
        self.hash_slot_num = hash_slot_num
        self.only_files = only_files

    @staticmethod
    def _pack(slots: int, items: int, put: list[tuple[int, int, int, int, int, int]]) -> tuple[bytes, bytes]:
        """(compacted, local) files of the items `put` (hash, topic id, queue id, offset, size, ms)."""
        from rmqlab.formats import tieredindex as ti

        local = bytearray(40 + 8 * slots + 32 * items + 4)
        heads = [-1] * slots
        for n, it in enumerate(put):
            local[28 + 8 * slots + 32 * n:28 + 8 * slots + 32 * (n + 1)] = \
                struct.pack(">iiiqiii", *it, heads[it[0] % slots])
            heads[it[0] % slots] = n
        for k, h in enumerate(heads):
            struct.pack_into(">i", local, 28 + 8 * k, h)
        struct.pack_into(">iqqii", local, 0, ti.BEGIN_MAGIC_CODE, 1718000000000, 1718000009000, 0, len(put))
        struct.pack_into(">i", local, len(local) - 4, ti.END_MAGIC_CODE)
        table, body = bytearray(8 * slots), bytearray()
        for k in range(slots):
            chain = [it for it in reversed(put) if it[0] % slots == k]
            if chain:
                struct.pack_into(">ii", table, 8 * k, 28 + 8 * slots + len(body), 28 * len(chain))
                body += b"".join(struct.pack(">iiiqii", *it) for it in chain)
        head = struct.pack(">iqqii", ti.END_MAGIC_CODE, 1718000000000, 1718000009000, slots, len(put))
        return head + bytes(table) + bytes(body) + struct.pack(">i", ti.BEGIN_MAGIC_CODE), bytes(local)

    def _seed(self, name: str, compacted: bytes, local: bytes, slots: int, keys: list[tuple[str, str]]) -> Seed:
        hostile = (slots, len(compacted), len(local), -1, 0)
        fields = [Field(f"compacted.slot[{i}]", 28 + 8 * i, 4, hostile) for i in range(slots)]
        fields += [Field(f"local.slot[{i}]", len(compacted) + 28 + 8 * i, 4, hostile) for i in range(slots)]
        fields += [Field("compacted.header.slot_count", 20, 4, hostile)]
        return Seed(name, compacted + local, fields, [28 + 8 * slots, len(compacted) + 28 + 8 * slots], None,
                    {"cut": len(compacted), "slots": slots, "keys": keys})

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.formats import tieredindex51 as t51

        out = [self._seed(f"release-{k}", up.read_bytes(), loc.read_bytes(), self.hash_slot_num, [("TopicA", "k0")])
               for k, (up, loc) in enumerate(self.files)]
        if self.only_files:
            return out
        keys = [("T", f"k{i % 4}") for i in range(12)]
        put = [(t51.legacy_hash(t, k), 1, i % 3, 4096 * i, 300 + i, 700 * i) for i, (t, k) in enumerate(keys)]
        out.append(self._seed("model", *self._pack(7, 16, put), 7, sorted(set(keys))))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.formats import tieredindex51 as t51

        d = rt.fresh_dir()
        up, folder = d / "up", d / "tiered_index_file"
        folder.mkdir(exist_ok=True)
        cut = min(seed.meta["cut"], len(data))
        up.write_bytes(data[:cut])
        (folder / "0000").write_bytes(data[cut:])

        def rows(a):
            return "refused" if a is None else [tuple(int(x) for x in r) for r in a.tolist()]

        for topic, key in seed.meta["keys"]:
            h = t51.legacy_hash(topic, key)
            got = rt.call("uploaded_slot_items", t51.uploaded_slot_items, up, h)
            if got is not None:
                rt.expect(len(got) * 28 <= cut, "uploaded_slot_items", f"{len(got)} items from {cut} bytes")
            want = fm.tiered51_uploaded_slot(data[:cut], h)
            if want is not None:
                rt.agree(rows(got) == want, "uploaded_slot_items", f"{rows(got)}, the struct model's {want}")
            got = rt.call("local_slot_items", t51.local_slot_items, folder / "0000", h, seed.meta["slots"])
            if got is not None:
                rt.expect(len(got) * 32 <= len(data) - cut, "local_slot_items", f"{len(got)} items")
            want = fm.tiered51_local_slot(data[cut:], h, seed.meta["slots"])
            if want is not None:
                rt.agree(rows(got) == want, "local_slot_items", f"{rows(got)}, the chain model's {want}")
        local = rt.call("startup_upload", t51.startup_upload, folder)
        for topic, key in seed.meta["keys"][:3]:
            got = rt.call("query_uploaded", t51.query_uploaded, [(up, 0, 1 << 62)], topic, key, 1,
                          rng.choice([1, 4, 64]), 0, 1 << 62, local=local)
            if got is not None:
                rt.expect(len(got) <= 64, "query_uploaded", f"{len(got)} rows")
        rt.call("check_compacted", t51.check_compacted, up)
        rt.call("check_local", t51.check_local, folder / "0000", seed.meta["slots"])
        if heavy:
            rt.call("local_geometries", t51.local_geometries, folder / "0000")


class TieredSegmentTarget(Target):
    """The tiered store's segments on its file system (RIP-57): the input is one queue's
    CommitLog segment then its ConsumeQueue segment (one file each, the split at the seed's
    CommitLog length), laid out under a cluster folder as PosixFileSegment names them. Calls:
    tiered_queues, min_offset, items, messages, and verify_tiered_segments beside an empty
    store. Seeds: a queue written by write_queue, or (`queues`: CommitLog and ConsumeQueue
    segment paths and the first queue offset) a real broker's.

    Model: items() returns the rows of fuzz_models.tiered_queue_items (the ConsumeQueue
    segment's items in struct, from the larger of its first offset and the first record's
    QUEUEOFFSET), and messages() one row an item."""

    name = "tiered-segment"
    heavy_every = 8   # verify (a walk of the segment, pandas frames) costs several times the reads

    def __init__(self, queues: Sequence[tuple[Path, Path, int]] = (), *, only_queues: bool = False):
        self.queues = list(queues)
        self.only_queues = only_queues

    @staticmethod
    def _seed(name: str, cl: bytes, cq: bytes, first: int) -> Seed:
        from rmqlab.formats import tieredsegment as ts
        from rmqlab.formats.commitlog import HEAD

        n = len(cq) // ts.ITEM.size
        starts = [int.from_bytes(cq[i * 20:i * 20 + 8], "big") for i in range(n)]
        hostile = (0, len(cl), len(cl) - 1, len(cq), first, first * 20)
        fields = [Field(f"item[{i}].{f.name}", len(cl) + i * 20 + f.offset, f.size, hostile)
                  for i in range(min(n, 16)) for f in ts.ITEM.fields]
        fields += [Field(f"record@{o}.{f}", o + HEAD.offset(f), HEAD.field(f).size, hostile)
                   for o in starts[:16] if 0 <= o < len(cl) - 40 for f in ("total_size", "queue_offset", "phy_offset")]
        return Seed(name, cl + cq, fields, [o for o in starts if 0 <= o < len(cl)] + [len(cl)], None,
                    {"cl": len(cl), "first": first})

    def seeds(self, workdir: Path) -> list[Seed]:
        from rmqlab.formats import tieredsegment as ts
        from rmqlab.formats.commitlog import encode_message

        out = [self._seed(f"broker-{k}", cl.read_bytes(), cq.read_bytes(), first)
               for k, (cl, cq, first) in enumerate(self.queues)]
        if self.only_queues:
            return out
        recs = [encode_message(topic="T", queue_id=0, body=b"x" * i, queue_offset=3 + i,
                               properties={"KEYS": f"k{i}"}) for i in range(5)]
        ts.write_queue(workdir / "model", cluster="C", broker="b", topic="T", queue_id=0, records=recs,
                       tags_codes=[7] * 5, first_offset=3)
        q = workdir / "model" / ts.cluster_folder("C") / "b" / "T" / "0"
        out.append(self._seed("model", next((q / "COMMIT_LOG").iterdir()).read_bytes(),
                              next((q / "CONSUME_QUEUE").iterdir()).read_bytes(), 3))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.formats import tieredsegment as ts
        from rmqlab.store.directory import Store
        from rmqlab.verify.check_tiered import verify_tiered_segments

        d = rt.fresh_dir()
        q = d / "tiered" / ts.cluster_folder("C") / "b" / "T" / "0"
        cut = min(seed.meta["cl"], len(data))
        for kind, part, base in (("COMMIT_LOG", data[:cut], 0), ("CONSUME_QUEUE", data[cut:],
                                                                  seed.meta["first"] * ts.ITEM.size)):
            (q / kind).mkdir(parents=True, exist_ok=True)
            (q / kind / ts.segment_name(base)).write_bytes(part)
        (d / "store").mkdir(exist_ok=True)
        got = rt.call("tiered_queues", ts.tiered_queues, d / "tiered")
        if not got:
            return
        queue = got[0]
        rt.call("min_offset", lambda: queue.min_offset)
        items = rt.call("items", queue.items)
        if items is not None:

            want = fm.tiered_queue_items(data[:cut], data[cut:], seed.meta["first"])
            got = list(items[["queue_offset", "commitlog_offset", "size", "tags_code"]]
                       .itertuples(index=False, name=None))
            rt.agree(got == want, "items", f"{len(got)} items {got[:3]}..., the model's {len(want)} {want[:3]}...")
            rt.expect(len(items) <= max(len(data) - cut, 0) // ts.ITEM.size, "items", f"{len(items)} items")
            msgs = rt.call("messages", queue.messages, body=heavy)
            if msgs is not None:
                rt.expect(len(msgs) == len(items), "messages", f"{len(msgs)} messages for {len(items)} items")
        if heavy:
            rt.call("verify_tiered_segments", verify_tiered_segments, Store(d / "store"), d / "tiered")


class MessageRocksDBTarget(Target):
    """5.5's message RocksDB records (rocksdbstore/: index, timer and transaction column
    families): the input is a run of records, each a family byte (0 default, 1 timer, 2 trans),
    a 2-byte key length, the key, a 2-byte value length and the value, decoded by
    decode_families and, where that answers, asked key queries of every type. Seeds: records
    written as the 5.5 classes write them, or (`families`) a real broker's.

    Model: decode_families refuses where fuzz_models.rocksdb_message_records does, and where
    it answers, its index, timer and transaction counts, last offsets and timer rows are the
    model's (the families' records read with struct by the 5.5 stores' layouts)."""

    name = "message-rocksdb"
    anonymous_errors = False
    _FAMILIES = ("default", "timer", "trans")

    def __init__(self, families: dict | None = None, *, only_broker: bool = False):
        self.families = families
        self.only_broker = only_broker

    @classmethod
    def pack(cls, families: dict) -> tuple[bytes, list[int]]:
        out, hot = bytearray(), []
        for f, name in enumerate(cls._FAMILIES):
            for k, v in families.get(name, []):
                hot.append(len(out))
                out += bytes([f]) + len(k).to_bytes(2, "big") + k + len(v).to_bytes(2, "big") + v
        return bytes(out), hot

    @classmethod
    def unpack(cls, data: bytes) -> dict:
        fams: dict = {n: [] for n in cls._FAMILIES}
        i = 0
        while i + 3 <= len(data):
            f, kl = data[i] % 3, int.from_bytes(data[i + 1:i + 3], "big")
            k = data[i + 3:i + 3 + kl]
            vl = int.from_bytes(data[i + 3 + kl:i + 5 + kl], "big")
            v = data[i + 5 + kl:i + 5 + kl + vl]
            fams[cls._FAMILIES[f]].append((k, v))
            i += 5 + kl + vl
        return {n: sorted(p) for n, p in fams.items()}   # RocksDB keeps each family in key order

    def seeds(self, workdir: Path) -> list[Seed]:
        import struct

        from rmqlab.formats import messagerocksdb as mr

        out = []
        if self.families:
            data, hot = self.pack(self.families)
            out.append(Seed("broker", data, [], hot, None, {}))
        if self.only_broker:
            return out
        h = 1_718_000_000_000 // mr.HOUR_MS * mr.HOUR_MS
        fams = {"default": [(mr.index_key(h, "T", "K", "k@1", "U1", 8), struct.pack(">q", h + 5)),
                            (mr.index_key(h, "T", "T", "tag", "U1", 8), struct.pack(">q", h + 5)),
                            (mr.index_key(h, "T", "U", None, "U1", 8), struct.pack(">q", h + 5)),
                            (b"lastOffsetPy", struct.pack(">q", 8))],
                "timer": [(struct.pack(">q", h + 9000) + b"U1", struct.pack(">iq", 300, 8)),
                          (b"timeline_checkpoint", struct.pack(">q", h))],
                "trans": [(struct.pack(">q", 8) + b"@T@U1", struct.pack(">ii", 0, 300))]}
        data, hot = self.pack(fams)
        fields = [Field(f"record@{p}.key_length", p + 1, 2, (0, 7, 8, 16, 255)) for p in hot]
        out.append(Seed("model", data, fields, hot, None, {}))
        return out

    def run(self, rt, seed, data, ops, rng, heavy):
        from rmqlab.formats import messagerocksdb as mr

        families = self.unpack(data)
        db = rt.call("decode_families", mr.decode_families, families, path="rocksdbstore")

        want = fm.rocksdb_message_records(families)
        # RocksDB holds each key once; two records of one key (the framing's, not a store's) leave
        # which one counts to the reader, so the model judges only inputs without
        if all(len({k for k, _ in recs}) == len(recs) for recs in families.values()):
            got = None if db is None else {
                "index": len(db.index), "last_offset": db.index_last_offset, "last_time": db.index_last_store_timestamp,
                "timers": list(db.timers[["deliver_ms", "size", "phy_offset"]].itertuples(index=False, name=None)),
                "trans": len(db.transactions), "trans_last": db.transactions_last_offset}
            if want == "refused" or got is not None:   # the index keys' own rules are not the model's
                rt.agree(got is None if want == "refused" else got == want, "decode_families",
                         f"{got}, the struct model's {want}")
        if db is None:
            return
        for topic, key in list(zip(db.index["topic"], db.index["key"].fillna("k")))[:4] + [("T", "k@1")]:
            for kind in (None, "K", "T", "U"):
                got = rt.call("query_index", mr.query_index, db, str(topic), str(key), max_num=rng.choice([1, 64, 500]),
                              index_type=kind, now=1_718_100_000_000)
                if got is not None:
                    rt.expect(len(got) <= mr.MAX_MSGS_NUM_BATCH, "query_index", f"{len(got)} offsets")


TARGETS: dict[str, Target] = {t.name: t for t in (
    IndexFileTarget(), ConsumeQueueTarget(), ConsumeQueueExtTarget(), CommitLogTarget(), MessageTarget(),
    CheckpointTarget(), OffsetIndexTarget(), TimeIndexTarget(), KafkaLogTarget(), MsgIdTarget(), StoreConfigTarget(),
    BatchConsumeQueueTarget(), KafkaTextFilesTarget(), KafkaInternalTopicsTarget(), KafkaProducerSnapshotTarget(),
    KafkaTxnIndexTarget(), KafkaKraftTarget(), TimerTarget(), CompactionTarget(), RevivelogTarget(),
    TieredIndexTarget(), TieredIndex51Target(), TieredSegmentTarget(), MessageRocksDBTarget())}


def budget(default: int = 3_000) -> int:
    """Inputs per format: RMQLAB_FUZZ_EXAMPLES, else `default`."""
    return int(os.environ.get("RMQLAB_FUZZ_EXAMPLES", default))


def replay(target: str, seed: str, ops: tuple, workdir: str | os.PathLike | None = None) -> Runner:
    """Run one input again (the one a failure message names), failing fast. Returns the runner."""
    import tempfile

    t = TARGETS[target]
    with Runner(t, workdir or tempfile.mkdtemp(prefix="rmqlab-fuzz-"), heavy_every=1, everything=True) as rt:
        si = [s.name for s in rt.seeds].index(seed)
        rt.run_program(si, tuple(ops))
    return rt


def run_budget(target: str | Target, inputs: int, workdir: str | os.PathLike, *, swarm: int = 32, seed: int = 0,
               fail_fast: bool = False, heavy_every: int | None = None, mem_every: int = 8,
               timeout: float = 10.0, everything: bool = False) -> Runner:
    """Run `inputs` inputs of `target` (a name of :data:`TARGETS`, or a target made with other
    seeds, such as a broker's files) without hypothesis (the benchmark's long runs, the broker
    tests): swarms of `swarm` programs from seeds seed, seed+1, ..."""
    t = TARGETS[target] if isinstance(target, str) else target
    with Runner(t, workdir, fail_fast=fail_fast, heavy_every=heavy_every, mem_every=mem_every,
                timeout=timeout, everything=everything) as rt:
        k = seed
        while rt.inputs < inputs:
            rt.run_swarm(k, min(swarm, inputs - rt.inputs))
            k += 1
    return rt


__all__ = ["TARGETS", "Runner", "Seed", "Field", "apply", "draw_program", "hypothesis_programs", "replay",
           "run_budget", "budget", "Failure", "FuzzFailure", "Hang"]

if __name__ == "__main__":   # python tests/support/fuzz_support.py TARGET [INPUTS]: a quick local run
    name = sys.argv[1]
    import tempfile

    r = run_budget(name, int(sys.argv[2]) if len(sys.argv) > 2 else 1000, tempfile.mkdtemp())
    print(f"{name}: {r.inputs} inputs, {r.calls} calls, {r.typed_errors} typed errors, "
          f"{len(r.failures)} failures, {r.elapsed:.1f} s")
    for f in r.failures[:5]:
        print(f)
