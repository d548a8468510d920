"""Hostile bytes: every reader, fed valid files mutated at random, either answers or raises a
typed :class:`~rmqlab.errors.RmqlabError` (a ValueError only where a call documents it for its
arguments): never another exception, never a hang, never memory beyond a small multiple of the
input. Where a reader has two implementations (C and Python walks, columnar and iterator
CommitLog readers, vectorized and scalar Kafka lookups) they must agree on the same bytes.

One test per format. The inputs are valid files written with rmqlab's own writers (small
geometries), mutated by bit flips, byte and span overwrites, fields set to hostile values (0,
-1, Integer/Long MIN/MAX, the file's own counts +- 1), truncation at any offset, extension,
random sizes, insertions, deletions, chunk copies, wholly random contents and format-specific
edits (IndexFile prev_index self-loops, forward pointers, two-entry cycles, also ones that keep
matching the query key; slots past index_count; ConsumeQueue file gaps and bad names; hostile
Kafka varints with the batch CRC recomputed; CommitLog names past Long.MAX_VALUE). The
machinery is in ``fuzz_support.py``.

Budget. Each test runs at least ``RMQLAB_FUZZ_EXAMPLES`` inputs (default 3,000) of its
format, the same every run, then an eighth more from a fresh seed printed with the test's
output (``RMQLAB_FUZZ_SEED=N`` runs those again). At the former default of 10,000 the 24
formats took about 1,000 s of a loaded 2-core machine, a quarter of the suite; the deep runs
(40,000 inputs a format and more) are ``benchmarks/bench_fuzz.py``'s, recorded in
benchmarks/RESULTS.md. The seeds are rmqlab's writers' files and,
where they exist, files no rmqlab code wrote: the Java IndexFile's golden files and the real
Kafka files. A hypothesis example (derandomized, no database: the same inputs every run) runs its own
shrinkable mutation program plus a swarm of ``SWARM - 1`` programs from a seed it draws:
hypothesis costs close to a millisecond an example on a small machine, a swarm input a few
microseconds to build. Each input opens/walks its file; the optional query groups and the
pandas-building calls run on a deterministic share of the inputs (see ``fuzz_support``), so
every call still sees hundreds of inputs or more (input files go to /dev/shm where there is
one). Per input: a CPU-time
limit (default 10 CPU-s; ``RMQLAB_FUZZ_TIMEOUT``; CPU, so a loaded machine cannot trip it),
a faulthandler watchdog for C code, bounded walk
counters (trace steps, probes, records, chain lengths), and a tracemalloc peak check on every
hypothesis input and every 16th swarm input: peak < 64 x input bytes + 4 MiB (a reader that
sizes anything by a count read from the file fails it; the peaks seen stay under 100 KB).
``benchmarks/bench_fuzz.py`` runs the same properties with a far larger budget.

A failure message names the seed and the mutation program; ``fuzz_support.replay(target, seed,
ops)`` rebuilds the input. Put a minimized copy in ``tests/data/corrupt/`` (make_corpus.py) when
fixing the reader.
"""
from __future__ import annotations

import math
import os
import shutil
import tempfile

import fuzz_support as fs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BUDGET = fs.budget()                                       # inputs per format
SWARM = 64                                                 # inputs per hypothesis example
TIMEOUT = float(os.environ.get("RMQLAB_FUZZ_TIMEOUT", 10))  # seconds per input
MEM_EVERY = 16                                             # tracemalloc check: every 16th swarm input
#: a fresh seed each run (printed; RMQLAB_FUZZ_SEED=N replays a run) beside the fixed inputs, so
#: every run also explores inputs no earlier run tried
FRESH_SEED = int(os.environ.get("RMQLAB_FUZZ_SEED") or int.from_bytes(os.urandom(4), "big"))
FRESH_SHARE = 8                                            # 1/8 of the budget more, from FRESH_SEED


def run_target(name: str, workdir, budget: int = BUDGET) -> fs.Runner:
    target = fs.TARGETS[name]
    with fs.Runner(target, workdir, timeout=TIMEOUT, mem_every=MEM_EVERY) as rt:
        programs = fs.hypothesis_programs(rt.seeds, target.max_ops)

        @settings(max_examples=math.ceil(budget / SWARM), deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
        @given(program=programs, swarm=st.integers(0, 2**32 - 1))
        def prop(program, swarm):
            si, ops = program
            rt.run_program(si, ops, mem=True)
            rt.run_swarm(swarm, SWARM - 1)

        prop()
        k = 0
        while rt.inputs < budget:   # hypothesis skips duplicate examples: top up deterministically
            rt.run_swarm(2**40 + k, min(SWARM, budget - rt.inputs))
            k += 1
        try:
            rt.run_swarm(2**41 + FRESH_SEED, max(budget // FRESH_SHARE, 1))
        except fs.FuzzFailure as e:
            raise fs.FuzzFailure(f"{e}\n(fresh inputs of RMQLAB_FUZZ_SEED={FRESH_SEED})") from None
    return rt


@pytest.fixture
def scratch(tmp_path):
    """Where each input's files are written: a memory file system when the OS has one (Linux's
    /dev/shm; opening and writing a small file there costs half what it does on a disk, and the
    fuzzer writes one or more files per input), else pytest's tmp_path."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        d = tempfile.mkdtemp(prefix="rmqlab-fuzz-", dir=shm)
        yield d
        shutil.rmtree(d, ignore_errors=True)
    else:
        yield tmp_path


@pytest.mark.parametrize("name", list(fs.TARGETS))
def test_fuzz(name, scratch):
    rt = run_target(name, scratch)
    print(f"\n{name} (RMQLAB_FUZZ_SEED={FRESH_SEED}): {rt.inputs} inputs, {rt.calls} reader calls, "
          f"{rt.modelled_inputs} judged by the model ({rt.typed_errors} typed errors, "
          f"{rt.allowed_errors} documented ValueErrors), {rt.measured} memory-checked (max peak "
          f"{rt.max_peak} bytes, {rt.max_peak_ratio:.3f} of the bound), {rt.elapsed:.1f} s ({rt.cpu:.1f} s CPU)")
    assert not rt.failures, "\n".join(map(str, rt.failures[:3]))
    assert rt.inputs >= BUDGET
    # the mutations must not only produce garbage: most calls reach past the first check
    assert 0 < rt.typed_errors + rt.allowed_errors < rt.calls
    # beyond "no crash": the target's property against its independent model (fuzz_models) ran
    # on a meaningful share of the inputs (Target.model_share, 5 % unless the target says why
    # not), so it cannot pass by never running
    share = fs.TARGETS[name].model_share
    assert rt.modelled_inputs >= share * rt.inputs, (
        f"the model judged {rt.modelled_inputs} of {rt.inputs} inputs, under {share:.0%}")


# ------------------------------------------------------------------ the checker checks itself


class _Broken(fs.Target):
    """A target whose "reader" misbehaves as told."""

    name = "broken"
    mem_const = 1 << 20

    def __init__(self, how):
        self.how = how

    def seeds(self, workdir):
        return [fs.Seed("s", b"\x00" * 64, [fs.Field("f", 0, 4)])]

    def run(self, rt, seed, data, ops, rng, heavy):
        if not ops:          # the warm-up run of the unmutated seed passes
            return
        if self.how == "untyped":
            rt.call("reader", lambda: {}["missing"])
        elif self.how == "typed":
            from rmqlab.errors import FormatError

            def reader():
                raise FormatError("bad", path="f", offset=1, field="x")

            rt.call("reader", reader)
        elif self.how == "hang":      # an unbounded walk: it spends CPU, which the limit counts
            n = 0
            while True:
                n += 1
        elif self.how == "memory":
            blob = bytearray(8 << 20)
            assert len(blob)


@pytest.mark.parametrize("how, label", [("untyped", "reader"), ("hang", "timeout"), ("memory", "memory")])
def test_runner_catches(how, label, tmp_path):
    with fs.Runner(_Broken(how), tmp_path, timeout=0.3) as rt:
        with pytest.raises(fs.FuzzFailure, match=label) as exc:
            rt.run_program(0, (("flip", 0, 1),), mem=True)
    assert "replay: fuzz_support.replay('broken', 's', (('flip', 0, 1),))" in str(exc.value)


def test_runner_accepts_typed_errors(tmp_path):
    with fs.Runner(_Broken("typed"), tmp_path) as rt:
        rt.run_program(0, (("flip", 0, 1),), mem=True)
    assert rt.typed_errors == 1 and not rt.failures


def test_mutations_are_deterministic():
    seeds = [fs.Seed("s", bytes(range(200)), [fs.Field("f", 8, 4)])]
    import random

    a = [fs.draw_program(fs.RandomChooser(random.Random(7)), seeds) for _ in range(50)]
    b = [fs.draw_program(fs.RandomChooser(random.Random(7)), seeds) for _ in range(50)]
    assert a == b
    assert fs.apply(b"\x00\x01\x02\x03", (("set", 0, 2, -1), ("truncate", 3), ("extend", b"zz"))) == b"\xff\xff\x02zz"
    assert fs.apply(b"abc", (("flip", 4, 0), ("resize", 5))) == b"acc\x00\x00"


@pytest.mark.parametrize("name", ["consumequeue", "commitlog"])
def test_a_missing_real_seed_is_a_missing_oracle(name, monkeypatch, tmp_path):
    """A real seed whose file is gone fails the target with CI=true, as any missing oracle;
    elsewhere the target fuzzes on from its other seeds and the run lists the file."""
    import oracles

    monkeypatch.setattr(fs, "_REAL_ROCKETMQ", tmp_path / "empty")
    saved = oracles.MISSED.copy()           # the run's own list of missing oracles is left as it was
    try:
        monkeypatch.setenv("CI", "true")
        with pytest.raises(pytest.fail.Exception, match="missing oracle: real broker data at"):
            fs.TARGETS[name].seeds(tmp_path / "w1")
        monkeypatch.setenv("CI", "false")
        oracles.MISSED.clear()
        seeds = fs.TARGETS[name].seeds(tmp_path / "w2")
        assert seeds and not any(s.name.startswith("real-") for s in seeds)
        assert all(str(tmp_path / "empty") in what for what in oracles.MISSED) and oracles.MISSED
    finally:
        oracles.MISSED.clear()
        oracles.MISSED.update(saved)


def test_the_models_share_no_code_with_rmqlab():
    """The fuzz properties' models are judges only while they import nothing of the package
    (nor of the test helpers that do): the standard library, and test-side modules beside them
    that import the standard library alone, followed to the end."""
    import ast
    import sys
    from pathlib import Path

    support = Path(fs.__file__).parent
    seen, todo = set(), ["fuzz_models"]
    while todo:
        mod = todo.pop()
        seen.add(mod)
        tree = ast.parse((support / f"{mod}.py").read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        for name in {n.split(".")[0] for n in names} - set(sys.stdlib_module_names) - seen:
            assert (support / f"{name}.py").is_file(), f"{mod} imports {name}, neither the standard library nor a model"
            todo.append(name)
    assert {"fuzz_models", "kafka_stdlib", "indexfile_stdlib"} <= seen and not any("rmqlab" in m for m in seen)


def _off_by_one(value):
    """A model's answer made wrong: one record fewer (or a made-up one), a count 20 more, a
    changed field; None (undecided) stays None."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], list):   # (records, how it ended)
        return (value[0][:-1] if value[0] else [0]), value[1]
    if isinstance(value, list):
        return value[:-1] if value else [(0,)]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):   # + 20: a count, or a ConsumeQueue byte offset one unit on
        return value + 20
    if isinstance(value, str):
        return [(0,)]
    if isinstance(value, tuple):   # id_fields: (address, rest)
        return value[0], value[1][:-1] + bytes([value[1][-1] ^ 1])
    if isinstance(value, dict):
        first = next(iter(value), None)
        return {**value, first: [(0,)]} if first is not None else {0: 0}
    return value


#: each target's model functions (fuzz_models), made wrong by _off_by_one unless said otherwise
_MODELS = {"indexfile": ["index_select"], "consumequeue": ["consumequeue_end"], "commitlog": ["commitlog_file_walk"],
           "message": ["message_fields"], "kafka-log": ["kafka_frames"], "msgid": ["id_fields"],
           "kafka-producer-snapshot": ["producer_snapshot"], "kafka-txnindex": ["txn_index"],
           "kafka-kraft": ["kafka_v2_batches"],
           "kafka-textfiles": ["leader_epoch_checkpoint"], "storeconfig": ["config_json"],
           "batchconsumequeue": ["batch_queue_units"], "timer": ["timer_log_units"],
           "compaction": ["first_base_at_least"], "revivelog": ["revive_fields"],
           "tiered-index": ["tiered_local_items"], "tiered-index-51": ["tiered51_uploaded_slot", "tiered51_local_slot"],
           "tiered-segment": ["tiered_queue_items"], "message-rocksdb": ["rocksdb_message_records"]}


@pytest.mark.parametrize("name", list(_MODELS))
def test_a_wrong_model_fails_the_target(name, monkeypatch, tmp_path):
    """The property can fail: with its model's answers made wrong, the target fails within a few
    hundred inputs (so it is not a check that holds whatever the model says)."""
    import fuzz_models as fm

    for fn in _MODELS[name]:
        right = getattr(fm, fn)
        if fn == "config_json":   # a document's tables gain an entry no file has
            def wrong(data, right=right):
                doc = right(data)
                return {k: {**v, "made-up": 1} if isinstance(v, dict) else v for k, v in doc.items()} \
                    if isinstance(doc, dict) else doc
        elif fn == "producer_snapshot":
            def wrong(data, right=right):
                m = right(data)
                return m and {**m, "computed": m["computed"] ^ 1}
        elif fn == "revive_fields":
            def wrong(data, fields, right=right):
                m = right(data, fields)
                return m and {**m, "queue_id": -99}
        else:
            def wrong(*args, right=right):
                return _off_by_one(right(*args))
        monkeypatch.setattr(fm, fn, wrong)
    with pytest.raises(fs.FuzzFailure):
        fs.run_budget(name, 400, tmp_path, fail_fast=True)


def _seed_files_by_target(workdir) -> dict[str, list]:
    """Every real file each target's seeds read (through fs._real_bytes), target by target."""
    asked: dict[str, list] = {}
    read = fs._real_bytes
    for name, target in fs.TARGETS.items():
        paths: list = []

        def recording(path, _paths=paths):
            _paths.append(path)
            return read(path)

        fs._real_bytes = recording
        try:
            target.seeds(workdir / name)
        finally:
            fs._real_bytes = read
        if paths:
            asked[name] = paths
    return asked


def _linked_copy(src, dst, leave_out: set) -> None:
    """`src` rebuilt under `dst` as a tree of symbolic links to its files, minus `leave_out`."""
    for root, _, files in os.walk(src):
        rel = os.path.relpath(root, src)
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for f in files:
            path = os.path.join(root, f)
            if os.path.abspath(path) not in leave_out:
                os.symlink(os.path.abspath(path), os.path.join(dst, rel, f))


def test_ci_fails_on_each_real_seed_removed_and_names_it(tmp_path):
    """A copy of ../shared lacking one real seed file of every target that has real seeds, given
    as RMQLAB_SHARED with CI=true: each of those fuzz tests fails, naming the file it lacks."""
    import subprocess
    import sys

    import oracles

    oracles.require_path(oracles.REAL_DATA, "the real broker data (the fuzz targets' real seeds)")
    asked = _seed_files_by_target(tmp_path / "seeds")
    # the readers the real data feeds: every one of them has real seeds
    assert {"checkpoint", "consumequeue", "consumequeue_ext", "commitlog", "kafka-index", "kafka-timeindex",
            "kafka-log", "kafka-internal-topics", "kafka-producer-snapshot"} <= set(asked), sorted(asked)
    removed = {name: os.path.abspath(paths[0]) for name, paths in asked.items()}
    copy = tmp_path / "shared"
    _linked_copy(oracles.SHARED, copy, set(removed.values()))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, CI="true", RMQLAB_SHARED=str(copy), RMQLAB_FUZZ_EXAMPLES="64")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", "--no-header",
                          *[f"tests/test_fuzz.py::test_fuzz[{name}]" for name in removed]],
                         cwd=root, env=env, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-3000:]
    for name, path in removed.items():
        lacking = os.path.join(copy, os.path.relpath(path, oracles.SHARED))
        failed = [line for line in out.splitlines() if line.startswith(f"FAILED tests/test_fuzz.py::test_fuzz[{name}]")]
        assert failed and f"missing oracle: real broker data at {lacking}" in failed[0], (name, out[-3000:])
