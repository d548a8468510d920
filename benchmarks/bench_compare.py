"""rmqlab side by side with the brokers' own code, in one run: one fresh process a measurement, the
two sides alternating (the side that goes first alternates too), the same inputs, every answer
checked against the other side's.

Paths (``--paths``, default all):

* ``index``: RocketMQ's ``IndexFile.putKey`` on the reference workload (key n
  ``TopicTest#ORDER_n``, phyOffset 200*(n+1), storeTimestamp 1718000000000 + n // 10, --keys
  keys into a default-geometry file: benchmarks/java/IndexFileBench.java) against
  ``rmqlab.build_index_file`` of the same keys (its put loop on every usable core, and in a
  process of its own on one thread), then --lookups look-ups of key
  (i * 2654435761) mod N through ``selectPhyOffset`` against ``IndexFile.select_phy_offsets``
  called once a key from Python and the batch ``select_phy_offsets_many``. The two files must
  have the same SHA-256 and every look-up must find its key's offset. Beside them, the write
  limit: the file's size written through a fresh shared mapping (page faults included), and the
  same from a buffer with ``pwrite``.
* ``store``: a generated store of --messages messages (bench_scaling.py's workload, 64 MiB
  CommitLog files) with only its CommitLog: the broker's ``DefaultMessageStore`` load() and
  start() until every message is dispatched (benchmarks/java/StoreBench.java; at 5.3.3 load()
  does nearly all of it: CommitLog.recoverNormally dispatches each message past the
  ConsumeQueues' end as it checks it, so only the sum compares) against ``Store.dispatch``
  (``rmqlab store dispatch``); then --queries key queries,
  ``queryMessage`` against ``Store.query_message`` (the records, undecoded, as queryMessage returns
  them) and ``Store.query_by_key`` (a pandas frame) a key at a time, and ``Store.query_many``. The
  ConsumeQueue files both write must be byte-identical, the index files' bytes equal (their
  names are creation times), and every query's offsets the broker's, in order.
* ``decode``: the same CommitLog read whole with ``readinto`` and summed with NumPy over a map
  (the read limit) against ``read_columns(arrow=True)`` (CommitLog decode to columns).
* ``kafka``: segments a real Kafka broker rolled (ProducerPerformance, one record a batch,
  --kafka-records records of 100 bytes, 64 MiB segments; tests/support/kafka_harness.py): its
  ``kafka-dump-log --deep-iteration`` (DumpLogSegments, with kafka-run-class's JVM options)
  against ``rmqlab kafka dump --records``, both writing to a file (the batch and record counts
  must agree); its ``--index-sanity-check`` of every .index and .timeindex against
  ``rmqlab kafka verify`` of the partition, and the same with the .log files given too (then it
  also walks every batch and checks its CRC, as verify does); and each tool's start alone
  (``--help``), so the JVM's and Python's start can be taken apart.

Each measurement is a fresh process; a Java side reports its own in-process times beside the
whole process's wall time. The table gives the median and the spread (min-max) of each side and
the ratio reference / rmqlab (above 1: rmqlab is faster). The machine is shared: the load average
before and after is printed with the figures.

Run:  make bench-compare   (or: python benchmarks/bench_compare.py [--paths index,store] [--runs 3] [--record])
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import mmap
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import machine, publish, sha256_of

from rmqlab.tables.pool import usable_cores

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
JAVA_DIR = HERE / "java"
sys.path.insert(0, str(ROOT / "tests" / "support"))

#: the RocketMQ release whose store classes are the reference (the newest with a broker here)
ROCKETMQ_RELEASE = "5.3.3"
#: the Kafka release whose DumpLogSegments is the reference
KAFKA_RELEASE = "3.9.2"
#: kafka-run-class.sh's JVM options for a tool (KAFKA_HEAP_OPTS and KAFKA_JVM_PERFORMANCE_OPTS)
KAFKA_TOOL_JVM = ["-Xmx256M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                  "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                  "-Djava.awt.headless=true"]
INDEX_FILE_NAME = "20240610120000000"
LONG_MAX = 2**63 - 1
COMMITLOG_FILE_SIZE = 64 << 20
KAFKA_SEGMENT_BYTES = 64 << 20



def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# -- the measured sides, each run in a fresh process ----------------------------------------

def timed_process(cmd: list[str], *, stdout=subprocess.DEVNULL, cwd: Path | None = None,
                  env: dict[str, str] | None = None, timeout: float = 1800) -> float:
    """Wall seconds of one process, which must exit 0."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, cwd=cwd, env=env, timeout=timeout)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd[:6]))} ... exited {p.returncode}:\n"
                           f"{p.stderr.decode(errors='replace')[-3000:]}")
    return wall


def python_child(mode: str, *args: str) -> tuple[float, dict[str, Any]]:
    """(wall s, the JSON it printed) of this script run fresh with ``--child mode args``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.NamedTemporaryFile("w+", suffix=".json") as out:
        wall = timed_process([sys.executable, __file__, "--child", mode, out.name, *args], env=env, cwd=HERE)
        return wall, json.loads(Path(out.name).read_text())


def reference_workload(n: int) -> tuple[Any, Any, Any]:
    """IndexFileBench's keys (an Arrow string array ``TopicTest#ORDER_k``), phy offsets
    200*(k+1) and store times 1718000000000 + k // 10, for k in [0, n)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    numbers = np.arange(n, dtype=np.int64)
    keys = pc.binary_join_element_wise("TopicTest#ORDER_", pc.cast(pa.array(numbers), pa.string()), "")
    return keys, 200 * (numbers + 1), 1718000000000 + numbers // 10


def child_index(out: str, path: str, keys: str, lookups: str) -> dict[str, Any]:
    """rmqlab's side of ``index``: the build, then the look-ups, as IndexFileBench does them."""
    import gc

    import numpy as np

    import rmqlab
    from rmqlab.formats.indexfile import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM, IndexFile

    n, m = int(keys), int(lookups)
    key_array, phy, ts = reference_workload(n)
    picks = (np.arange(m, dtype=np.uint64) * np.uint64(2654435761)) % np.uint64(n)
    probe = [f"TopicTest#ORDER_{k}" for k in picks.tolist()]
    want = (200 * (picks.astype(np.int64) + 1)).tolist()
    target = Path(path)
    target.unlink(missing_ok=True)
    gc.collect()
    t0 = time.perf_counter()
    written = rmqlab.build_index_file(target, key_array, phy, ts, hash_slot_num=DEFAULT_HASH_SLOT_NUM,
                                      index_num=DEFAULT_INDEX_NUM)
    build_s = time.perf_counter() - t0
    gc.disable()   # as Java's loop: no collector pass over the key strings while timing
    with IndexFile.open(target) as f:
        select = f.select_phy_offsets
        t0 = time.perf_counter()
        answers = [select(k, 64, 0, LONG_MAX) for k in probe]
        single_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        one_thread = f.select_phy_offsets_many(probe, 64, 0, LONG_MAX, threads=1)
        batch_one_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        batch = f.select_phy_offsets_many(probe, 64, 0, LONG_MAX)     # every usable core
        batch_s = time.perf_counter() - t0
    gc.enable()
    found = sum(w in a for w, a in zip(want, answers))
    same = all(list(batch[i]) == list(a) == list(one_thread[i]) for i, a in enumerate(answers))
    return {"build_s": build_s, "written": written, "single_s": single_s, "batch_s": batch_s,
            "batch_one_s": batch_one_s, "found": found, "batch_same": same, "sha256": sha256_of(target)}


def child_build(out: str, path: str, keys: str, threads: str) -> dict[str, Any]:
    """The build of ``index`` alone, its put loop on `threads` threads (the hashing as always)."""
    import gc

    import rmqlab
    from rmqlab.formats.indexfile import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM

    key_array, phy, ts = reference_workload(int(keys))
    target = Path(path)
    target.unlink(missing_ok=True)
    gc.collect()
    t0 = time.perf_counter()
    written = rmqlab.build_index_file(target, key_array, phy, ts, hash_slot_num=DEFAULT_HASH_SLOT_NUM,
                                      index_num=DEFAULT_INDEX_NUM, threads=int(threads))
    build_s = time.perf_counter() - t0
    return {"build_s": build_s, "written": written, "sha256": sha256_of(target)}


def child_write_limit(out: str, path: str, size: str) -> dict[str, Any]:
    """The write limit of a file of `size` bytes: every byte stored through a fresh shared
    mapping of a new file (page faults included), then the same bytes written with pwrite
    from a buffer into another new file."""
    import numpy as np

    n, target = int(size), Path(path)
    target.unlink(missing_ok=True)
    t0 = time.perf_counter()
    with open(target, "w+b") as fh:
        fh.truncate(n)
        with mmap.mmap(fh.fileno(), n) as mm:
            np.frombuffer(mm, np.uint8)[:] = 1
    mapped_s = time.perf_counter() - t0
    target.unlink()
    buf = np.ones(n, np.uint8)
    t0 = time.perf_counter()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        done = 0
        while done < n:
            done += os.pwrite(fd, memoryview(buf)[done:done + (64 << 20)], done)
    finally:
        os.close(fd)
    pwrite_s = time.perf_counter() - t0
    target.unlink()
    return {"mapped_s": mapped_s, "pwrite_s": pwrite_s}


def child_store(out: str, folder: str, queries: str, answers: str) -> dict[str, Any]:
    """rmqlab's side of ``store``: dispatch, then the queries a key at a time and in one call."""
    import numpy as np

    from rmqlab.formats.commitlog import HEAD
    from rmqlab.store.directory import Store

    pairs = [line.split("\t", 1) for line in Path(queries).read_text(encoding="utf-8").splitlines() if line]
    t0 = time.perf_counter()
    store = Store(folder)
    report = store.dispatch()
    dispatch_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    records = []
    phy_offset, at = HEAD.field_struct("phy_offset"), HEAD.offset("phy_offset")   # StoreBench's getLong(28)
    for topic, key in pairs:   # the broker's own answer: each record's bytes, as StoreBench reads them
        found = store.query_message(topic, key, max_num=64)
        records.append(" ".join([str(phy_offset.unpack_from(b, at)[0]) for b in found.buffers]))
    message_s = time.perf_counter() - t0
    # again, the maps' pages now touched: as the broker's are, its load having read the whole
    # CommitLog and written the index through the maps its queries read
    t0 = time.perf_counter()
    for topic, key in pairs:
        store.query_message(topic, key, max_num=64)
    message_warm_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    lines = []
    for topic, key in pairs:
        offs = store.query_by_key(topic, key, max_num=64)["phy_offset"].to_numpy(np.int64)
        lines.append(" ".join(map(str, offs.tolist())))
    single_s = time.perf_counter() - t0
    assert records == lines, "query_message and query_by_key answered differently"
    topics, keys = [p[0] for p in pairs], [p[1] for p in pairs]
    t0 = time.perf_counter()
    table = store.query_many(topics, keys, max_num=64)
    many_s = time.perf_counter() - t0
    Path(answers).write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return {"dispatch_s": dispatch_s, "message_s": message_s, "message_warm_s": message_warm_s, "single_s": single_s,
            "many_s": many_s, "found": int(sum(len(x.split()) for x in lines)), "many_rows": len(table),
            "messages": int(getattr(report, "messages", -1))}


def child_decode(out: str, folder: str) -> dict[str, Any]:
    """The CommitLog read whole: readinto, a NumPy sum over the map, and read_columns to Arrow."""
    import numpy as np

    from rmqlab.formats import commitlog as cl

    files = sorted(p for p in Path(folder).iterdir() if p.name.isdigit())
    size = sum(p.stat().st_size for p in files)
    into = np.empty(max(p.stat().st_size for p in files), np.uint8)
    t0 = time.perf_counter()
    for p in files:
        with open(p, "rb", buffering=0) as fh:
            fh.readinto(into)
    readinto_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    total = 0
    for p in files:
        with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            total += int(np.frombuffer(mm, np.uint64).sum(dtype=np.uint64))
    sum_s = time.perf_counter() - t0
    # the first decode of a process pays one-time costs (pyarrow's and pandas' lazy imports and
    # kernels): paid here on one file, so that neither timed read carries them
    cl.read_columns(files[0], body=True, arrow=True, jobs=1)
    t0 = time.perf_counter()
    frame = cl.read_columns(folder, body=True, arrow=True, jobs=1)
    decode_one_s = time.perf_counter() - t0
    del frame
    t0 = time.perf_counter()
    frame = cl.read_columns(folder, body=True, arrow=True)    # a thread a file, on every usable core
    decode_s = time.perf_counter() - t0
    return {"readinto_s": readinto_s, "sum_s": sum_s, "decode_s": decode_s, "decode_one_s": decode_one_s,
            "rows": len(frame), "bytes": size}


CHILDREN: dict[str, Callable[..., dict[str, Any]]] = {
    "index": child_index, "build": child_build, "write-limit": child_write_limit, "store": child_store,
    "decode": child_decode}


# -- the references ---------------------------------------------------------------------------

def rocketmq_classpath(source: str) -> tuple[list[str], str]:
    """(java command prefix, class path) of a benchmarks/java class compiled against the
    RocketMQ release's jars (built once into the broker cache)."""
    import rocketmq_harness as rh

    helpers = [rh.ORACLE_DIR / "StoreLoad.java"] if source == "StoreBench" else []
    classes = rh.oracle_classes(ROCKETMQ_RELEASE, JAVA_DIR / f"{source}.java", *helpers)
    cp = os.pathsep.join([str(classes), str(rh.jars(ROCKETMQ_RELEASE) / "lib" / "*")])
    return ["java", *rh.JVM_OPENS], cp


def java_side(source: str, heap: str, *args: str, cwd: Path) -> tuple[float, dict[str, Any]]:
    """(wall s, the JSON it wrote) of one fresh JVM running benchmarks/java/<source>.java."""
    java, cp = rocketmq_classpath(source)
    out = cwd / f"{source}.json"
    out.unlink(missing_ok=True)
    wall = timed_process([*java, f"-Xmx{heap}", f"-Duser.home={cwd}", f"-Drocketmq.home.dir={cwd}", "-cp", cp,
                          source, *args, f"out={out}"], cwd=cwd)
    return wall, json.loads(out.read_text())


# -- the paths --------------------------------------------------------------------------------

class Series:
    """The times of one measured quantity across the runs."""

    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {}

    def add(self, name: str, seconds: float) -> None:
        self.values.setdefault(name, []).append(seconds)

    def add_all(self, got: dict[str, Any], names: dict[str, str]) -> None:
        """Each of a side's reported times: `names` maps a series to its key in `got`."""
        for name, key in names.items():
            self.add(name, got[key])

    def median(self, name: str) -> float:
        return statistics.median(self.values[name])

    def cell(self, name: str) -> str:
        v = self.values[name]
        return f"{statistics.median(v):.3f} s ({min(v):.3f}-{max(v):.3f})"


def alternate(runs: int, sides: list[Callable[[], None]]) -> None:
    """Each side `runs` times, interleaved; the order of the sides turns each run."""
    for r in range(runs):
        for side in sides[r % len(sides):] + sides[:r % len(sides)]:
            side()


def bench_index(work: Path, args, s: Series) -> list[tuple]:
    from rmqlab.formats.indexfile import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM, THREADED_PUT_KEYS, Geometry

    size = Geometry(DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM).file_size
    java_file, py_file = work / "java" / INDEX_FILE_NAME, work / "py" / INDEX_FILE_NAME
    java_file.parent.mkdir(parents=True, exist_ok=True)
    py_file.parent.mkdir(parents=True, exist_ok=True)
    hashes: set[str] = set()

    def java() -> None:
        java_file.unlink(missing_ok=True)
        wall, got = java_side("IndexFileBench", "3g", f"file={java_file}", f"keys={args.keys}",
                              f"lookups={args.lookups}", cwd=java_file.parent)
        assert got["found"] == args.lookups, f"Java's look-ups found {got['found']} of {args.lookups}"
        hashes.add(sha256_of(java_file))
        java_file.unlink()
        s.add("java process", wall)
        s.add_all(got, {"java putKey": "put_s", "java flush": "flush_s", "java lookups": "lookup_s"})

    def python() -> None:
        wall, got = python_child("index", str(py_file), str(args.keys), str(args.lookups))
        assert got["found"] == args.lookups, f"rmqlab's look-ups found {got['found']} of {args.lookups}"
        assert got["batch_same"], "the batch look-up differs from the single ones"
        hashes.add(got["sha256"])
        py_file.unlink()
        s.add("rmqlab process", wall)
        s.add_all(got, {"rmqlab build": "build_s", "rmqlab single": "single_s", "rmqlab batch": "batch_s",
                        "rmqlab batch one thread": "batch_one_s"})

    def one_thread() -> None:
        _, got = python_child("build", str(py_file), str(args.keys), "1")
        hashes.add(got["sha256"])
        py_file.unlink()
        s.add("rmqlab build one thread", got["build_s"])

    def limit() -> None:
        _, got = python_child("write-limit", str(py_file), str(size))
        s.add_all(got, {"write mapped": "mapped_s", "write pwrite": "pwrite_s"})

    alternate(args.runs, [java, python, one_thread, limit])
    assert len(hashes) == 1, f"Java's IndexFile and rmqlab wrote different bytes: {sorted(hashes)}"
    per = f"{args.lookups:,} look-ups"
    return [
        ("IndexFile: build", f"putKey x {args.keys:,}", s.cell("java putKey"),
         f"build_index_file ({usable_cores() if args.keys >= THREADED_PUT_KEYS else 1} threads)",
         s.cell("rmqlab build"), s.median("java putKey") / s.median("rmqlab build"), ">= 3x"),
        ("IndexFile: build, put loop on one thread", f"putKey x {args.keys:,}", s.cell("java putKey"),
         "build_index_file(threads=1)", s.cell("rmqlab build one thread"),
         s.median("java putKey") / s.median("rmqlab build one thread"), ""),
        ("IndexFile: build, then flush", "putKey + flush", f"{s.median('java putKey') + s.median('java flush'):.3f} s",
         "build_index_file (writes the header)", s.cell("rmqlab build"),
         (s.median("java putKey") + s.median("java flush")) / s.median("rmqlab build"), ""),
        ("IndexFile: write limit", "file's bytes through a fresh mapping", s.cell("write mapped"),
         "build_index_file", s.cell("rmqlab build"), s.median("write mapped") / s.median("rmqlab build"),
         ">= 0.67 (within 1.5x)"),
        ("IndexFile: write limit, pwrite", "file's bytes by pwrite", s.cell("write pwrite"), "build_index_file",
         s.cell("rmqlab build"), s.median("write pwrite") / s.median("rmqlab build"), ""),
        ("IndexFile: look-ups, one call a key", f"selectPhyOffset, {per}", s.cell("java lookups"),
         "select_phy_offsets from Python", s.cell("rmqlab single"),
         s.median("java lookups") / s.median("rmqlab single"), ">= 1x"),
        ("IndexFile: look-ups, batch, one thread", f"selectPhyOffset, {per}", s.cell("java lookups"),
         "select_phy_offsets_many(threads=1)", s.cell("rmqlab batch one thread"),
         s.median("java lookups") / s.median("rmqlab batch one thread"), ""),
        ("IndexFile: look-ups, batch", f"selectPhyOffset, {per}", s.cell("java lookups"),
         f"select_phy_offsets_many ({usable_cores()} threads)", s.cell("rmqlab batch"),
         s.median("java lookups") / s.median("rmqlab batch"), ">= 10x"),
        ("IndexFile: whole process", "java IndexFileBench", s.cell("java process"), "python child",
         s.cell("rmqlab process"), s.median("java process") / s.median("rmqlab process"), ""),
    ]


def make_store(work: Path, messages: int, queries: int) -> tuple[Path, Path]:
    """The CommitLog of a generated store (kept in `work`) and the query file (topic TAB key of
    `queries` random keyed messages)."""
    from bench_scaling import draw_keys, workload

    from rmqlab.lab.generate import generate_store

    source = work / f"store-{messages}"
    if not (source / "commitlog").is_dir():
        t0 = time.perf_counter()
        generate_store(source, workload(messages), dispatch=False, commitlog_file_size=COMMITLOG_FILE_SIZE)
        print(f"store: {messages:,} messages written in {time.perf_counter() - t0:.1f} s", flush=True)
    qfile = work / f"queries-{messages}-{queries}.tsv"
    if not qfile.exists():
        topics, keys, _ = draw_keys(source, queries)
        qfile.write_text("".join(f"{t}\t{k}\n" for t, k in zip(topics, keys)), encoding="utf-8")
    return source / "commitlog", qfile


def fresh_copy(commitlog: Path, into: Path) -> Path:
    """A store folder holding only a copy of `commitlog` (the files hard-linked: neither side
    writes the CommitLog)."""
    shutil.rmtree(into, ignore_errors=True)
    (into / "commitlog").mkdir(parents=True)
    for f in commitlog.iterdir():
        os.link(f, into / "commitlog" / f.name)
    return into


def broker_conf(store: Path) -> str:
    return (f"storePathRootDir={store}\nstorePathCommitLog={store}/commitlog\n"
            f"mappedFileSizeCommitLog={COMMITLOG_FILE_SIZE}\nflushDiskType=ASYNC_FLUSH\n"
            "brokerClusterName=bench\nbrokerName=bench\n")


def same_outputs(java_store: Path, py_store: Path) -> None:
    """ConsumeQueue files byte for byte; index files' bytes in name order."""
    def files(root: Path, sub: str) -> list[Path]:
        return sorted(p for p in (root / sub).rglob("*") if p.is_file())

    jq, pq = files(java_store, "consumequeue"), files(py_store, "consumequeue")
    assert [p.relative_to(java_store) for p in jq] == [p.relative_to(py_store) for p in pq], \
        "the ConsumeQueue folders differ"
    for a, b in zip(jq, pq):
        assert sha256_of(a) == sha256_of(b), f"{a.relative_to(java_store)} differs"
    ji, pi = files(java_store, "index"), files(py_store, "index")
    assert len(ji) == len(pi) and ji, f"index files: broker {len(ji)}, rmqlab {len(pi)}"
    for a, b in zip(ji, pi):
        assert sha256_of(a) == sha256_of(b), f"index file {a.name} (broker) differs from {b.name} (rmqlab)"


def bench_store(work: Path, args, s: Series) -> list[tuple]:
    commitlog, qfile = make_store(work, args.messages, args.queries)
    answers: dict[str, str] = {}

    def java() -> None:
        store = fresh_copy(commitlog, work / "java-store")
        conf = work / "java-broker.conf"
        conf.write_text(broker_conf(store))
        wall, got = java_side("StoreBench", "1g", f"conf={conf}", f"queries={qfile}",
                              f"answers={work / 'java-answers.txt'}", cwd=work)
        answers["java"] = (work / "java-answers.txt").read_text()
        s.add("java process", wall)
        s.add_all(got, {"java load": "load_s", "java dispatch": "dispatch_s", "java query": "query_s"})

    def python() -> None:
        store = fresh_copy(commitlog, work / "py-store")
        wall, got = python_child("store", str(store), str(qfile), str(work / "py-answers.txt"))
        answers["rmqlab"] = (work / "py-answers.txt").read_text()
        s.add("rmqlab process", wall)
        s.add_all(got, {"rmqlab dispatch": "dispatch_s", "rmqlab message": "message_s",
                        "rmqlab message warm": "message_warm_s", "rmqlab single": "single_s", "rmqlab many": "many_s"})

    alternate(args.runs, [java, python])
    same_outputs(work / "java-store", work / "py-store")
    assert answers["java"] == answers["rmqlab"], "the key queries' answers differ from queryMessage's"
    q = f"{args.queries:,} queries"
    return [
        ("Store: recovery + dispatch", f"load() + start() until dispatched, {args.messages:,} messages",
         f"{s.median('java load') + s.median('java dispatch'):.3f} s", "Store.dispatch",
         s.cell("rmqlab dispatch"), (s.median("java load") + s.median("java dispatch")) / s.median("rmqlab dispatch"),
         ">= 5x"),
        ("Store: key queries, one call a key", f"queryMessage, {q}", s.cell("java query"),
         "Store.query_message (the records, as queryMessage)", s.cell("rmqlab message"),
         s.median("java query") / s.median("rmqlab message"), ">= 1x"),
        ("Store: key queries, one call a key, maps touched", f"queryMessage, {q}", s.cell("java query"),
         "Store.query_message, the same queries again", s.cell("rmqlab message warm"),
         s.median("java query") / s.median("rmqlab message warm"), ""),
        ("Store: key queries, one table a key", f"queryMessage, {q}", s.cell("java query"),
         "Store.query_by_key (a pandas frame a call)", s.cell("rmqlab single"),
         s.median("java query") / s.median("rmqlab single"), ""),
        ("Store: key queries, batch", f"queryMessage, {q}", s.cell("java query"), "Store.query_many",
         s.cell("rmqlab many"), s.median("java query") / s.median("rmqlab many"), ""),
        ("Store: whole process", "java StoreBench", s.cell("java process"), "python child",
         s.cell("rmqlab process"), s.median("java process") / s.median("rmqlab process"), ""),
    ]


def bench_decode(work: Path, args, s: Series) -> list[tuple]:
    commitlog, _ = make_store(work, args.messages, args.queries)

    def run() -> None:
        _, got = python_child("decode", str(commitlog))
        assert got["rows"] == args.messages, f"decoded {got['rows']} of {args.messages} messages"
        for k in ("readinto_s", "sum_s", "decode_s", "decode_one_s"):
            s.add(k, got[k])

    run()   # the page cache warmed, not counted
    s.values.clear()
    alternate(args.runs, [run])
    size = sum(p.stat().st_size for p in commitlog.iterdir()) / 1e6
    every = f"read_columns(arrow=True), {usable_cores()} threads"
    return [
        ("CommitLog: decode vs read limit", f"readinto of {size:,.0f} MB", s.cell("readinto_s"),
         every, s.cell("decode_s"), s.median("readinto_s") / s.median("decode_s"), ">= 0.5 (within 2x)"),
        ("CommitLog: decode vs read limit, one thread", f"readinto of {size:,.0f} MB", s.cell("readinto_s"),
         "read_columns(arrow=True, jobs=1)", s.cell("decode_one_s"),
         s.median("readinto_s") / s.median("decode_one_s"), ""),
        ("CommitLog: decode vs NumPy pass", "NumPy sum over the map", s.cell("sum_s"),
         every, s.cell("decode_s"), s.median("sum_s") / s.median("decode_s"), ""),
    ]


def kafka_log_dir(records: int) -> Path:
    import kafka_harness as kh

    topics = {"bench": {"configs": {"segment.bytes": str(KAFKA_SEGMENT_BYTES)}, "records": records,
                        "record_size": 100, "throughput": -1}}
    return kh.kafka_sizing(KAFKA_RELEASE, topics, log=lambda m: print(m, flush=True)) / "bench-0"


def bench_kafka(work: Path, args, s: Series) -> list[tuple]:
    import kafka_harness as kh

    partition = kafka_log_dir(args.kafka_records)
    rel = kh.release(KAFKA_RELEASE)
    java = [rel.java(), *KAFKA_TOOL_JVM, "-cp", os.pathsep.join(map(str, kh.jars(rel, log=lambda m: None))),
            kh.main_class(rel, kh.Release.dump_classes)]
    logs = sorted(partition.glob("*.log"))
    indexes = sorted([*partition.glob("*.index"), *partition.glob("*.timeindex")])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rmqlab = [sys.executable, "-m", "rmqlab", "kafka"]
    counts: dict[str, tuple[int, int]] = {}

    def count(path: Path, batch_word: str, record_word: str) -> tuple[int, int]:
        batches = records = 0
        with open(path, "rb") as fh:
            for line in fh:
                if line.startswith(batch_word.encode()):
                    batches += 1
                elif line.startswith(record_word.encode()):
                    records += 1
        return batches, records

    def dump_java() -> None:
        with open(work / "java-dump.txt", "wb") as out:
            s.add("java dump", timed_process([*java, "--deep-iteration", "--files", ",".join(map(str, logs))],
                                             stdout=out))
        counts["java"] = count(work / "java-dump.txt", "baseOffset:", "| offset:")

    def dump_rmqlab() -> None:
        with open(work / "py-dump.txt", "wb") as out:
            s.add("rmqlab dump", timed_process([*rmqlab, "dump", "--records", *map(str, logs)], stdout=out, env=env))
        counts["rmqlab"] = count(work / "py-dump.txt", "baseOffset:", "| offset:")

    def sanity_java() -> None:
        s.add("java sanity", timed_process([*java, "--index-sanity-check", "--files", ",".join(map(str, indexes))]))

    def walk_java() -> None:
        # the same files rmqlab kafka verify reads: every batch of the logs (DumpLogSegments
        # prints each batch header with isValid, its CRC checked) and the index files' sanity
        s.add("java walk", timed_process([*java, "--index-sanity-check", "--files",
                                          ",".join(map(str, [*logs, *indexes]))]))

    def verify_rmqlab() -> None:
        s.add("rmqlab verify", timed_process([*rmqlab, "verify", str(partition)], env=env))

    def start_java() -> None:
        s.add("java start", timed_process([*java, "--version"]))

    def start_rmqlab() -> None:
        s.add("rmqlab start", timed_process([*rmqlab, "dump", "--help"], env=env))

    alternate(args.runs, [dump_java, dump_rmqlab, sanity_java, walk_java, verify_rmqlab, start_java, start_rmqlab])
    assert counts["java"] == counts["rmqlab"], f"batches and records: kafka-dump-log {counts['java']}, " \
                                               f"rmqlab {counts['rmqlab']}"
    size = sum(p.stat().st_size for p in logs) / 1e6
    b, r = counts["java"]
    jstart, pstart = s.median("java start"), s.median("rmqlab start")
    return [
        ("Kafka: dump", f"kafka-dump-log --deep-iteration, {len(logs)} segments, {size:,.0f} MB, {b:,} batches, "
         f"{r:,} records", s.cell("java dump"), "rmqlab kafka dump --records", s.cell("rmqlab dump"),
         s.median("java dump") / s.median("rmqlab dump"), ">= 3x"),
        ("Kafka: dump, start taken off", "the same less the JVM's start", f"{s.median('java dump') - jstart:.3f} s",
         "less Python's start", f"{s.median('rmqlab dump') - pstart:.3f} s",
         (s.median("java dump") - jstart) / max(s.median("rmqlab dump") - pstart, 1e-9), ""),
        # the target is held on the same segments, logs and indexes, that kafka verify reads; the
        # index files alone (200 KB here) are the next row, a check of other, smaller work
        ("Kafka: log walk and index check", f"kafka-dump-log --index-sanity-check of the {len(logs)} logs (each "
         f"batch's header and CRC) and {len(indexes)} index files", s.cell("java walk"),
         "rmqlab kafka verify (log, indexes, snapshots)", s.cell("rmqlab verify"),
         s.median("java walk") / s.median("rmqlab verify"), ">= 3x"),
        ("Kafka: index files alone", f"kafka-dump-log --index-sanity-check, {len(indexes)} index files",
         s.cell("java sanity"), "rmqlab kafka verify (log, indexes, snapshots)", s.cell("rmqlab verify"),
         s.median("java sanity") / s.median("rmqlab verify"), ""),
        ("Kafka: start alone", "DumpLogSegments --version", s.cell("java start"), "rmqlab kafka dump --help",
         s.cell("rmqlab start"), jstart / pstart, ""),
    ]


PATHS = {"index": bench_index, "store": bench_store, "decode": bench_decode, "kafka": bench_kafka}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--paths", default=",".join(PATHS), help=f"comma separated, of {', '.join(PATHS)}")
    ap.add_argument("--runs", type=int, default=3, help="measurements of each side (default 3)")
    ap.add_argument("--keys", type=int, default=19_999_999, help="index keys (default 19,999,999: a full file)")
    ap.add_argument("--lookups", type=int, default=1_000_000, help="index look-ups (default 1,000,000)")
    ap.add_argument("--messages", type=int, default=2_000_000, help="store messages (default 2,000,000)")
    ap.add_argument("--queries", type=int, default=10_000, help="store key queries (default 10,000)")
    ap.add_argument("--kafka-records", type=int, default=500_000, help="Kafka records (default 500,000)")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder, kept (default: a temporary one)")
    ap.add_argument("--record", action="store_true", help="append the table to RESULTS.md")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        mode, out, *rest = args.child
        Path(out).write_text(json.dumps(CHILDREN[mode](out, *rest)))
        return
    paths = [p for p in args.paths.split(",") if p]
    unknown = set(paths) - set(PATHS)
    if unknown:
        ap.error(f"unknown paths {sorted(unknown)}; of {', '.join(PATHS)}")
    load_before = load_average()
    started = time.perf_counter()
    rows: list[tuple] = []
    with tempfile.TemporaryDirectory(prefix="bench_compare_") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name in paths:
            print(f"{name} ...", flush=True)
            folder = work / ("store" if name == "decode" else name)   # decode reads the store path's CommitLog
            folder.mkdir(parents=True, exist_ok=True)
            rows += PATHS[name](folder, args, Series())
    lines = [f"## Side by side with the brokers' code, {dt.date.today().isoformat()}", "",
             f"`python benchmarks/bench_compare.py --paths {','.join(paths)} --runs {args.runs}` "
             f"(RocketMQ {ROCKETMQ_RELEASE} store classes, Kafka {KAFKA_RELEASE} DumpLogSegments). "
             f"Machine: {machine()}. Load average before {load_before}, after {load_average()}; "
             f"{time.perf_counter() - started:.0f} s in all. One fresh process a measurement, the sides "
             "alternating; times are medians (min-max) of the runs; ratio = reference / rmqlab.", "",
             "| path | reference | time | rmqlab | time | ratio | target |", "|---|---|---:|---|---:|---:|---|"]
    lines += [f"| {a} | {b} | {c} | {d} | {e} | {f:.2f}x | {g} |" for a, b, c, d, e, f, g in rows]
    publish("\n".join(lines) + "\n", args.record)


if __name__ == "__main__":
    main()
