"""Real Kafka brokers write partitions, and the release's own kafka-dump-log describes them.

For each release in :data:`RELEASES` and each scenario in :data:`SCENARIOS`, the harness
resolves the release's jars from Maven Central (``tests/brokers/kafka/pom.xml``), compiles the
client driver (``tests/brokers/kafka/src/KafkaWorkload.java``) against them, runs the broker
(KRaft combined controller+broker from 3.x, ZooKeeper mode with an embedded ZooKeeper on 2.8)
inside a private loopback-only network namespace, and stops it as the scenario says:

``clean``     the whole workload (one topic per codec, LogAppendTime, idempotent and
              transactional producers with commits and aborts, old message formats v0/v1 on
              2.8, a consumer group leaving lag, a compacted topic cleaned by the log cleaner),
              then a clean shutdown (SIGTERM)
``crash``     a producer sending while the broker is killed (SIGKILL), a restart (the broker's
              own recovery), a clean shutdown
``restarts``  three broker runs each appending to one segment that never rolls: two restarts
              inside one segment, each stop clean
``reindexed`` a copy of the clean scenario's log dir with every ``.index`` and ``.timeindex``
              deleted, and one broker run on it: the broker finds each offset index missing
              ("Could not find offset index file ..., recovering segment and rebuilding index
              files", LogLoader / Log.loadSegmentFiles), rebuilds both indexes with
              LogSegment.recover, and writes them out at the clean shutdown
``orphans``   a copy of the clean scenario's log dir with index files of no segment (an
              ``.index``, a ``.timeindex`` and a ``.txnindex`` holding a few bytes, base offsets
              no ``.log`` has) planted in one partition, that partition kept as it was before
              the broker ran (``before/``), and one broker run on it: the broker deletes each
              ("Found an orphaned index file ..., with no corresponding log file.")

The two last are *derived*: they start from the clean scenario's entry, copied (a cache entry
is never changed in place); on 2.8 its ZooKeeper data is copied with it, and nothing is
formatted.

Then, with the broker stopped, the release's DumpLogSegments prints every ``.log``, ``.index``
and ``.timeindex`` of every partition directory (``--deep-iteration --print-data-log``, the
decoders of the internal topics, ``--index-sanity-check`` on indexes), one text file per file
under ``dumps/``, and :func:`parse_dump` reads that text back into batches, records and index
entries. Everything lands in :data:`broker_harness.CACHE`, keyed by what made it.

``python tests/brokers/build_kafka.py [--release X]`` builds them all ahead of the tests.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import broker_harness as bh

KAFKA_DIR = bh.BROKERS_DIR / "kafka"
POM = KAFKA_DIR / "pom.xml"
DRIVER_SOURCES = tuple(sorted((KAFKA_DIR / "src").glob("*.java")))
#: a newer Java for releases that need one (else the `java` on PATH, 17)
JAVA25 = Path("/usr/lib/jvm/temurin-25-jdk-amd64")
#: bump when the broker settings or the scenario steps below change: old cache entries then
#: are not taken for new ones
SCENARIO_FORMAT = "2"

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"
BOOTSTRAP = "127.0.0.1:9092"
GROUP = "rmqlab-group"
JVM = ["-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true"]


@dataclasses.dataclass(frozen=True)
class Release:
    """One Kafka release and how to run it. Its tools move between modules (DumpLogSegments in
    core up to 4.0, org.apache.kafka.tools in 4.4; ConsumerGroupCommand in core up to 3.6, in
    kafka-tools from 3.7): :func:`main_class` finds each in the release's jars. Java 17 (the
    `java` on PATH) runs every release listed, 4.4.0 included."""
    version: str

    @property
    def key(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.version.split("."))

    @property
    def kraft(self) -> bool:
        return self.key >= (3, 0)

    @property
    def legacy_formats(self) -> bool:
        """Topics can still ask for message format v0/v1 (message.format.version, gone in 3.0's
        IBP 3.0 and removed in 4.0)."""
        return self.key < (3, 0)

    @property
    def with_tools(self) -> bool:
        return self.key >= (3, 0)

    #: where each tool's main class may be, newest first (the first the release's jars hold runs)
    dump_classes = ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")
    group_classes = ("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "kafka.admin.ConsumerGroupCommand")
    storage_classes = ("kafka.tools.StorageTool", "org.apache.kafka.tools.StorageTool")
    topic_classes = ("org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand")
    perf_classes = ("org.apache.kafka.tools.ProducerPerformance",)

    #: the small segment size of the workload's topics, so that segments roll
    segment_bytes = 32 << 10

    @property
    def segment_config(self) -> str:
        """The topic config setting it: segment.bytes, at least 1 MiB from 4.1 (KAFKA-19080),
        which added internal.segment.bytes for tests."""
        return "internal.segment.bytes" if self.key >= (4, 1) else "segment.bytes"

    @property
    def broker_segment_bytes(self) -> int:
        """log.segment.bytes (the internal topics): at least 1 MiB from 4.0 (KIP-1030)."""
        return 1 << 20 if self.key >= (4, 0) else 32 << 10

    @property
    def java_home(self) -> Path | None:
        return None

    def java(self) -> str:
        home = self.java_home
        return str(home / "bin" / "java") if home else "java"

    def javac(self) -> str:
        home = self.java_home
        return str(home / "bin" / "javac") if home else "javac"


RELEASES: tuple[Release, ...] = tuple(Release(v) for v in (
    "3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.4.0", "3.6.2", "2.8.2"))
#: the scenarios every test runs over (the orphans scenario is built on demand by its test)
SCENARIOS = ("clean", "crash", "restarts", "reindexed")
#: the core matrix (:func:`broker_harness.broker_matrix`): the clean partitions of the first
#: release here, the release of the real-data dumps, the last 3.x and the newest (ZooKeeper-era
#: 2.8, 3.x, KRaft-only 4.x), and the crash, restarts and reindexed scenarios on the two newest
CORE_RELEASES = ("2.8.2", "3.6.2", "3.9.2", "4.4.0")
CORE_SCENARIO_RELEASES = ("3.6.2", "4.4.0")


def selected(version: str, scenario: str) -> bool:
    """Whether the tests build and read `version`'s `scenario` in the selected matrix: every one
    in "all"; in "core" the clean (and orphans) of :data:`CORE_RELEASES`, the rest on
    :data:`CORE_SCENARIO_RELEASES`."""
    if bh.broker_matrix() == "all":
        return True
    return version in (CORE_RELEASES if scenario in ("clean", "orphans") else CORE_SCENARIO_RELEASES)


def cases() -> list[tuple[str, str]]:
    """(release, scenario) of :data:`RELEASES` x :data:`SCENARIOS` in the selected matrix."""
    return [(r.version, s) for r in RELEASES for s in SCENARIOS if selected(r.version, s)]
#: the orphans scenario: the partition that gets the planted files, and each file (base offset,
#: suffix, bytes): the partition's segments start at 0, 185, 370 and 555, so one inside the first
#: segment's range, one inside the second's, one at 600 (the producer-state snapshot's offset,
#: past the last segment: a .snapshot and no .log there) and one far past; each index kind once
#: at least, each holding an entry of its kind or arbitrary bytes (nobody should read them)
ORPHAN_PARTITION = "codec-none-0"
ORPHANS = ((1, ".index", (1).to_bytes(4, "big") + (0).to_bytes(4, "big")),
           (186, ".timeindex", (1_700_000_000_000).to_bytes(8, "big") + (2).to_bytes(4, "big")),
           (600, ".txnindex", bytes(range(34))),
           (99_999_999, ".index", bytes(8)))
#: scenarios made from a copy of the clean scenario's log dir, with what each does to the copy
#: (part of their cache key)
DERIVED = {
    "reindexed": "delete every .index and .timeindex of every partition; one broker run, clean stop",
    "orphans": f"plant {ORPHANS!r} in {ORPHAN_PARTITION}, keep it in before/; one broker run, clean stop",
}


def release(version: str) -> Release:
    for r in RELEASES:
        if r.version == version:
            return r
    return Release(version)


@dataclasses.dataclass(frozen=True)
class KafkaScenario:
    """A finished scenario: the broker's log dir as it stopped, the dumps of every file."""
    release: str
    scenario: str
    root: Path
    features_reached: tuple[str, ...]
    features_skipped: dict[str, str]
    timings: dict[str, float]

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    @property
    def dumps_dir(self) -> Path:
        return self.root / "dumps"

    def partitions(self) -> list[Path]:
        return sorted(p for p in self.log_dir.iterdir() if p.is_dir() and re.search(r"-\d+$", p.name))

    def dump_of(self, file: Path, *, sanity: bool = False) -> Path:
        """The DumpLogSegments text of `file` (a path inside :attr:`log_dir`)."""
        rel = Path(file).relative_to(self.log_dir)
        return self.dumps_dir / rel.parent / (rel.name + (".sanity.txt" if sanity else ".txt"))

    @property
    def consumer_groups(self) -> str:
        p = self.dumps_dir / "consumer-groups.txt"
        return p.read_text() if p.exists() else ""


# ---------------------------------------------------------------------------------------- build

def _pom_properties(rel: Release) -> dict[str, str]:
    return {"kafka.version": rel.version, "with.tools": "true" if rel.with_tools else "false"}


def jars(rel: Release, log=print) -> list[Path]:
    """The release's jars (broker, tools, dependencies), resolved once into the cache."""
    bh.require_java_and_maven()
    entry = bh.CACHE / "kafka" / f"jars-{rel.version}-{bh.digest(POM)}"

    def build(tmp: Path) -> None:
        t = time.monotonic()
        bh.maven_jars(POM, _pom_properties(rel), tmp / "lib", log=tmp / "maven.log")
        (tmp / "seconds").write_text(f"{time.monotonic() - t:.1f}\n")
        log(f"kafka {rel.version}: jars resolved in {time.monotonic() - t:.1f} s")

    return sorted((bh.cached(entry, build) / "lib").glob("*.jar"))


def driver(rel: Release, log=print) -> Path:
    """The compiled client driver for the release (a class folder)."""
    lib = jars(rel, log)
    entry = bh.CACHE / "kafka" / f"driver-{rel.version}-{bh.digest(*DRIVER_SOURCES, POM)}"

    def build(tmp: Path) -> None:
        t = time.monotonic()
        (tmp / "classes").mkdir()
        bh.run([rel.javac(), "-nowarn", "-encoding", "UTF-8", "-cp", os.pathsep.join(map(str, lib)),
                "-d", tmp / "classes", *DRIVER_SOURCES], log=tmp / "javac.log", timeout=300)
        log(f"kafka {rel.version}: driver compiled in {time.monotonic() - t:.1f} s")

    return bh.cached(entry, build) / "classes"


def main_class(rel: Release, candidates: tuple[str, ...]) -> str:
    """The first of `candidates` the release's jars hold (tools move between modules)."""
    import zipfile

    names: set[str] = set()
    for jar in jars(rel, log=lambda m: None):
        if jar.name.startswith("kafka"):
            with zipfile.ZipFile(jar) as z:
                names.update(z.namelist())
    for c in candidates:
        if c.replace(".", "/") + ".class" in names:
            return c
    raise bh.HarnessError(f"kafka {rel.version}: none of {candidates} in its jars")


def classpath(rel: Release, log=print) -> str:
    return os.pathsep.join([str(driver(rel, log)), *map(str, jars(rel, log))])


#: zookeeper.session.timeout.ms's default in 2.8 (KafkaConfig), in seconds
ZK_SESSION_TIMEOUT_S = 18


def server_properties(rel: Release, log_dir: Path, data_dir: Path) -> str:
    common = {
        "log.dirs": str(log_dir),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "2",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "2",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
        "log.cleaner.backoff.ms": "300",
        "log.index.interval.bytes": "512",
        "log.segment.bytes": str(rel.broker_segment_bytes),
        "num.io.threads": "2",
        "num.network.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "log.flush.offset.checkpoint.interval.ms": "60000",
    }
    if rel.kraft:
        common.update({
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": "1@127.0.0.1:9093",
            "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            "advertised.listeners": "PLAINTEXT://127.0.0.1:9092",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        })
    else:
        common.update({
            "broker.id": "1",
            "zookeeper.connect": "127.0.0.1:2181",
            "zookeeper.connection.timeout.ms": "30000",
            "listeners": "PLAINTEXT://127.0.0.1:9092",
            "controlled.shutdown.enable": "true",
        })
    return "".join(f"{k}={v}\n" for k, v in common.items())


def _scenario_key(rel: Release, scenario: str) -> str:
    props = server_properties(rel, Path("LOGS"), Path("DATA"))
    return bh.digest(*DRIVER_SOURCES, POM, rel.version, scenario, SCENARIO_FORMAT, props)


def kafka_partitions(version: str, scenario: str, log=print) -> KafkaScenario:
    """The finished `scenario` of release `version`, built into the cache on first use (a
    derived scenario builds the clean one first)."""
    rel = release(version)
    base = kafka_partitions(version, "clean", log) if scenario in DERIVED else None
    key = _scenario_key(rel, scenario)
    if base is not None:
        key = bh.digest(key, base.root.name, DERIVED[scenario])
    entry = bh.CACHE / "kafka" / rel.version / f"{scenario}-{key}"

    def build(tmp: Path) -> None:
        if base is not None:
            _derive(base, scenario, tmp)
        _build_scenario(rel, scenario, tmp, log)

    root = bh.cached(entry, build)
    meta = json.loads((root / "scenario.json").read_text())
    return KafkaScenario(rel.version, scenario, root, tuple(meta["reached"]), dict(meta["skipped"]),
                         dict(meta["timings"]))


def _derive(base: KafkaScenario, scenario: str, tmp: Path) -> None:
    """The start of a derived scenario in `tmp`: a copy of `base`'s log dir (and ZooKeeper data,
    2.8), changed as :data:`DERIVED` says; what was changed is listed in ``derived.json``."""
    t = time.monotonic()
    shutil.copytree(base.log_dir, tmp / "logs", symlinks=True)
    if (base.root / "zk").is_dir():
        shutil.copytree(base.root / "zk", tmp / "zk", symlinks=True)
    logs = tmp / "logs"
    parts = sorted(p for p in logs.iterdir() if p.is_dir() and re.search(r"-\d+$", p.name))
    changed: dict[str, object] = {"copied_from": str(base.root), "deleted": [], "planted": []}
    if scenario == "reindexed":
        for part in parts:
            for f in sorted(part.iterdir()):
                if f.suffix in (".index", ".timeindex"):
                    f.unlink()
                    changed["deleted"].append(str(f.relative_to(logs)))  # type: ignore[union-attr]
    elif scenario == "orphans":
        part = logs / ORPHAN_PARTITION
        for offset, suffix, data in ORPHANS:
            f = part / f"{offset:020d}{suffix}"
            assert not f.with_suffix(".log").exists(), f
            f.write_bytes(data)
            changed["planted"].append(str(f.relative_to(logs)))  # type: ignore[union-attr]
        shutil.copytree(part, tmp / "before" / part.name)
    else:
        raise ValueError(f"unknown derived scenario {scenario!r}")
    changed["copy_seconds"] = round(time.monotonic() - t, 1)
    (tmp / "derived.json").write_text(json.dumps(changed, indent=2) + "\n")


#: bump when how a sizing run creates or fills its topics changes (part of its cache key)
SIZING_FORMAT = "sizing 1"


def kafka_sizing(version: str, topics: dict[str, dict], log=print) -> Path:
    """The log dir of one broker run that rolled segments for the segment sizing test: for each
    topic of `topics` (name -> {"configs": topic configs, "records": n, "record_size": value
    bytes, "throughput": records a second}), the release's TopicCommand creates it (one
    partition) and its ProducerPerformance sends the records (null keys, values of that size,
    one record a batch: batch.size=1, linger.ms=0, no compression), then a clean stop. Built
    into the cache on first use, keyed by the release, the broker settings and `topics`."""
    rel = release(version)
    props = server_properties(rel, Path("LOGS"), Path("DATA"))
    key = bh.digest(POM, rel.version, SIZING_FORMAT, props, json.dumps(topics, sort_keys=True))
    entry = bh.CACHE / "kafka" / rel.version / f"sizing-{key}"

    def build(tmp: Path) -> None:
        spec = {"release": rel.version, "scenario": "sizing", "root": str(tmp), "classpath": classpath(rel, log),
                "topics": topics}
        cmd = [*bh.loopback_only(), sys.executable, __file__, "_inside", json.dumps(spec)]
        bh.run(cmd, log=tmp / "scenario.log", timeout=600,
               env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)})

    return bh.cached(entry, build) / "logs"


def _fill_sizing_topics(b: _Broker, topics: dict[str, dict]) -> None:
    topic_cmd = main_class(b.rel, Release.topic_classes)
    perf = main_class(b.rel, Release.perf_classes)
    for name, t in topics.items():
        configs = [x for k, v in t["configs"].items() for x in ("--config", f"{k}={v}")]
        bh.run(b.java(topic_cmd, "--bootstrap-server", BOOTSTRAP, "--create", "--topic", name, "--partitions", "1",
                      "--replication-factor", "1", *configs), log=b.root / "tools.log", timeout=120)
        bh.run(b.java(perf, "--topic", name, "--num-records", str(t["records"]), "--record-size",
                      str(t["record_size"]), "--throughput", str(t["throughput"]), "--producer-props",
                      f"bootstrap.servers={BOOTSTRAP}", "batch.size=1", "linger.ms=0", "acks=all",
                      "compression.type=none"), log=b.root / "tools.log", timeout=300)
        print(f"sizing topic {name}: {t['records']} records sent", flush=True)


def _build_scenario(rel: Release, scenario: str, tmp: Path, log) -> None:
    t0 = time.monotonic()
    cp = classpath(rel, log)
    t1 = time.monotonic()
    spec = {"release": rel.version, "scenario": scenario, "root": str(tmp), "classpath": cp,
            "derived": scenario in DERIVED}
    cmd = [*bh.loopback_only(), sys.executable, __file__, "_inside", json.dumps(spec)]
    bh.run(cmd, log=tmp / "scenario.log", timeout=600, env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)})
    t2 = time.monotonic()
    dump_all(rel, tmp / "logs", tmp / "dumps", cp)
    t3 = time.monotonic()
    reached, skipped = _features(tmp / "scenario.log")
    meta = {"release": rel.version, "scenario": scenario, "reached": reached, "skipped": skipped,
            "timings": {"build": round(t1 - t0, 1), "broker": round(t2 - t1, 1), "dump": round(t3 - t2, 1)}}
    (tmp / "scenario.json").write_text(json.dumps(meta, indent=2) + "\n")
    log(f"kafka {rel.version} {scenario}: broker runs {t2 - t1:.1f} s, dumps {t3 - t2:.1f} s; "
        f"reached {', '.join(reached) or '-'}" + (f"; skipped {', '.join(skipped)}" if skipped else ""))


def _features(log: Path) -> tuple[list[str], dict[str, str]]:
    reached: list[str] = []
    skipped: dict[str, str] = {}
    for line in log.read_text(errors="replace").splitlines():
        m = re.match(r"FEATURE (reached|skipped) ([\w.-]+)(?:: (.*))?$", line.strip())
        if m and m.group(1) == "reached" and m.group(2) not in reached:
            reached.append(m.group(2))
        elif m and m.group(1) == "skipped":
            skipped[m.group(2)] = m.group(3) or ""
    return reached, skipped


# ------------------------------------------------------------------ inside the network namespace

LOG4J = """log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka.clients=WARN
"""
LOG4J2 = """appender.out.type=Console
appender.out.name=STDOUT
appender.out.layout.type=PatternLayout
appender.out.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.out.ref=STDOUT
"""


class _Broker:
    """The broker of one scenario (and its ZooKeeper on 2.8), started and stopped by PID."""

    def __init__(self, rel: Release, root: Path, cp: str):
        self.rel, self.root, self.cp = rel, root, cp
        self.log_dir = root / "logs"
        self.props = root / "server.properties"
        self.proc: subprocess.Popen | None = None
        self.zk: subprocess.Popen | None = None
        self.runs = 0

    def java(self, main: str, *args: str | Path, heap: str = "-Xmx384m") -> list[str]:
        return [self.rel.java(), heap, *JVM[1:], "-cp", self.cp, main, *map(str, args)]

    def prepare(self, *, formatted: bool = False) -> None:
        """The properties file, the log dir formatted (KRaft) or ZooKeeper started (2.8);
        `formatted`: the log dir (and ZooKeeper's data) are a copy of a finished scenario's."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.props.write_text(server_properties(self.rel, self.log_dir, self.root / "zk"))
        if self.rel.kraft and formatted:
            pass
        elif self.rel.kraft:
            storage = main_class(self.rel, Release.storage_classes)
            bh.run(self.java(storage, "format", "-t", CLUSTER_ID, "-c", self.props),
                   log=self.root / "storage-format.log", timeout=120)
        else:
            (self.root / "zk").mkdir(exist_ok=True)
            self.zk = bh.start([self.rel.java(), "-Xmx128m", *JVM[1:], "-Dzookeeper.admin.enableServer=false",
                                "-cp", self.cp, "org.apache.zookeeper.server.ZooKeeperServerMain", "2181",
                                self.root / "zk"], log=self.root / "zookeeper.log")
            bh.wait_for_port(2181, self.zk, self.root / "zookeeper.log")

    def start(self) -> None:
        self.runs += 1
        log = self.root / f"broker-{self.runs}.log"
        # the broker's own log on its output, whichever logging backend the release binds
        # (reload4j up to 3.x, log4j2 in 4.x, slf4j-simple otherwise)
        log4j, log4j2 = self.root / "log4j.properties", self.root / "log4j2.properties"
        log4j.write_text(LOG4J)
        log4j2.write_text(LOG4J2)
        self.proc = bh.start([self.rel.java(), "-Xmx512m", *JVM[1:], f"-Dlog4j.configuration=file:{log4j}",
                              f"-Dlog4j2.configurationFile={log4j2}", "-cp", self.cp, "kafka.Kafka", str(self.props)],
                             log=log)
        bh.wait_for_port(9092, self.proc, log, timeout=120)
        # the port opens before the broker has loaded its logs (KRaft binds its acceptors early):
        # wait for the line it logs once started
        deadline = time.monotonic() + 120
        started = re.compile(r"Kafka Server started|\[KafkaServer id=\d+\] started")
        while not started.search(log.read_text(errors="replace")):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise bh.HarnessError(f"broker run {self.runs} did not log that it started\n{bh.tail(log)}")
            time.sleep(0.2)
        print(f"broker run {self.runs} up", flush=True)

    def stop(self) -> None:
        assert self.proc is not None
        rc = bh.stop(self.proc, timeout=120)
        print(f"broker run {self.runs} stopped cleanly, exit status {rc}", flush=True)
        self.proc = None

    def crash(self) -> None:
        assert self.proc is not None
        bh.kill_group(self.proc.pid)
        self.proc.wait()
        print(f"broker run {self.runs} killed (SIGKILL)", flush=True)
        self.proc = None
        if not self.rel.kraft:
            # the killed broker's ephemeral /brokers/ids node lives until its ZooKeeper session
            # expires (zookeeper.session.timeout.ms, 18 s in 2.8); a broker started before then
            # exits with NodeExistsException
            time.sleep(ZK_SESSION_TIMEOUT_S + 2)

    def close(self) -> None:
        if self.proc is not None:
            bh.kill_group(self.proc.pid)
            self.proc.wait()
        if self.zk is not None:
            bh.stop(self.zk, timeout=30)

    def driver(self, *args: str | Path, timeout: float = 300) -> None:
        bh.run(self.java("KafkaWorkload", *args), log=self.root / "driver.log", timeout=timeout)

    def describe_group(self) -> None:
        out = self.root / "dumps" / "consumer-groups.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        group = main_class(self.rel, Release.group_classes)
        _capture(self.java(group, "--bootstrap-server", BOOTSTRAP, "--describe", "--group", GROUP),
                 out, self.root / "tools.log", timeout=120)


def _inside(spec: dict) -> None:
    rel, root, scenario = release(spec["release"]), Path(spec["root"]), spec["scenario"]
    b = _Broker(rel, root, spec["classpath"])
    try:
        b.prepare(formatted=spec.get("derived", False))
        if scenario == "sizing":
            b.start()
            _fill_sizing_topics(b, spec["topics"])
            b.stop()
        elif scenario in DERIVED:
            b.start()
            b.stop()
            said = (root / "broker-1.log").read_text(errors="replace")
            if "rebuilding index files" in said:
                print("FEATURE reached indexes-rebuilt", flush=True)
            if "Found an orphaned index file" in said:
                print("FEATURE reached orphans-deleted", flush=True)
        elif scenario == "clean":
            b.start()
            b.driver("workload", BOOTSTRAP, b.log_dir, rel.segment_config, str(rel.segment_bytes),
                     str(rel.legacy_formats).lower())
            b.describe_group()
            b.stop()
        elif scenario == "crash":
            b.start()
            producer = bh.start(b.java("KafkaWorkload", "produce-forever", BOOTSTRAP, "crash",
                                       rel.segment_config),
                                log=root / "driver.log")
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and "SENT 3000" not in (root / "driver.log").read_text(errors="replace"):
                if producer.poll() is not None:
                    raise bh.HarnessError(f"producer exited early\n{bh.tail(root / 'driver.log')}")
                time.sleep(0.2)
            b.crash()
            print("FEATURE reached crash-while-producing", flush=True)
            bh.kill_group(producer.pid)
            producer.wait()
            b.start()
            print("FEATURE reached recovered", flush=True)
            b.stop()
        elif scenario == "restarts":
            for rnd in range(3):
                b.start()
                b.driver("produce", BOOTSTRAP, "restarts", "300", str(rnd))
                b.stop()
            print("FEATURE reached two-restarts-in-one-segment", flush=True)
        else:
            raise ValueError(f"unknown scenario {scenario!r}")
        for log in sorted(root.glob("driver.log")):
            print(log.read_text(errors="replace"), flush=True)
    finally:
        b.close()


def _capture(cmd: list[str], out: Path, log: Path, *, timeout: float) -> None:
    """Run `cmd`, its stdout into `out` and its stderr onto `log`; HarnessError when it fails."""
    with open(out, "wb") as fo, open(log, "ab") as fe:
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            bh.kill_group(proc.pid)
            proc.wait()
            raise bh.HarnessError(f"timed out: {' '.join(cmd)}") from None
    if rc != 0:
        raise bh.HarnessError(f"exit status {rc}: {' '.join(cmd[-6:])}\n{bh.tail(log)}")


# ---------------------------------------------------------------------------- the real data

#: the releases whose DumpLogSegments reads the real partitions (oracles.REAL_DATA / "kafka"):
#: for each directory the newest of them at or below the Kafka version its README names, the
#: oldest for older data, the newest when the README names none
REAL_DATA_RELEASES = ("2.8.2", "3.6.2")
#: bump when what is dumped of the real data changes (part of the cache key)
REAL_DATA_FORMAT = "real-data 3"


def real_data_version(directory: Path) -> tuple[int, ...] | None:
    """The Kafka version the directory's README says wrote it ("Apache Kafka 3.6.x", "Kafka
    0.11.0", a "kafka:3.7.0" image; a Confluent Platform tag such as "cp-kafka:7.6.0" is not
    Kafka's), as (major, minor), (major,) for "3.x"; None when it names none."""
    readme = directory / "README.md"
    text = readme.read_text(errors="replace") if readme.exists() else ""
    for pattern in (r"Apache Kafka (\d+)\.(\d+|x)\b", r"\bKafka (\d+)\.(\d+|x)\b", r"(?<!cp-)kafka:(\d+)\.(\d+)\b"):
        m = re.search(pattern, text)
        if m:
            return (int(m.group(1)),) + ((int(m.group(2)),) if m.group(2) != "x" else ())
    return None


def real_data_release(directory: Path) -> Release:
    """The release of :data:`REAL_DATA_RELEASES` that dumps `directory` (see there)."""
    rels = sorted((release(v) for v in REAL_DATA_RELEASES), key=lambda r: r.key)
    v = real_data_version(directory)
    if v is None:
        return rels[-1]
    below = [r for r in rels if r.key[:len(v)] <= v]
    return below[-1] if below else rels[0]


def real_data_dumps(directory: Path, log=print) -> KafkaScenario:
    """DumpLogSegments of every ``.log``, ``.index`` and ``.timeindex`` of every partition
    directory of `directory` (one directory of the real data), by the release
    :func:`real_data_release` picks, as :func:`dump_all` does for the scenarios, and of every
    KRaft ``.checkpoint`` snapshot in it (``--cluster-metadata-decoder``; 3.x releases), and of
    every ``__cluster_metadata`` segment again by the newest of :data:`RELEASES` into
    ``dumps-<release>/`` when it is of a newer line (it prints control records' bodies). The files are
    copied into the cache entry first (``logs/``) and the tool reads the copy: nothing is ever
    opened for writing beside the real data. The entry's key is the files' names and bytes,
    the release and the harness's format."""
    directory = Path(directory)
    rel = real_data_release(directory)
    files = sorted(f for f in directory.rglob("*") if f.is_file())
    key = bh.digest(rel.version, REAL_DATA_FORMAT, POM, *(x for f in files for x in (str(f.relative_to(directory)), f)))
    entry = bh.CACHE / "kafka" / "real-data" / f"{directory.name}-{rel.version}-{key}"

    def build(tmp: Path) -> None:
        t0 = time.monotonic()
        cp = classpath(rel, log)
        shutil.copytree(directory, tmp / "logs", symlinks=True)
        for f in (tmp / "logs").rglob("*"):
            f.chmod(f.stat().st_mode | 0o200)   # the copy only: a read-only tree cannot be removed later
        t1 = time.monotonic()
        dump_all(rel, tmp / "logs", tmp / "dumps", cp)
        checkpoints = sorted((tmp / "logs").rglob("*.checkpoint"))
        if checkpoints and rel.kraft:
            # KRaft snapshots (a partition's and the bootstrap one), wherever they are
            java = [rel.java(), "-Xmx384m", *JVM[1:], "-cp", cp, main_class(rel, Release.dump_classes)]
            opts = ["--deep-iteration", "--print-data-log", "--cluster-metadata-decoder"]
            parts = _dump_files(java, opts, checkpoints, tmp / "dumps" / "raw-checkpoints.txt",
                                tmp / "dumps" / "tools.log")
            for file, text in parts.items():
                target = tmp / "dumps" / (str(Path(file).relative_to(tmp / "logs")) + ".txt")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        metadata_logs = sorted((tmp / "logs").glob("__cluster_metadata-*/*.log"))
        newest = max(RELEASES, key=lambda r: r.key)
        if metadata_logs and newest.key[0] > rel.key[0]:
            # the metadata log again by the newest release: 4.x prints the control records'
            # bodies (LeaderChange: {...}), 3.x their type alone
            ncp = classpath(newest, log)
            java = [newest.java(), "-Xmx384m", *JVM[1:], "-cp", ncp, main_class(newest, Release.dump_classes)]
            opts = ["--deep-iteration", "--print-data-log", "--cluster-metadata-decoder"]
            parts = _dump_files(java, opts, metadata_logs, tmp / "dumps" / f"raw-metadata-{newest.version}.txt",
                                tmp / "dumps" / "tools.log")
            for file, text in parts.items():
                target = tmp / f"dumps-{newest.version}" / (str(Path(file).relative_to(tmp / "logs")) + ".txt")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        t2 = time.monotonic()
        meta = {"release": rel.version, "scenario": f"real-data/{directory.name}", "source": str(directory),
                "reached": [], "skipped": {}, "timings": {"build": round(t1 - t0, 1), "dump": round(t2 - t1, 1)}}
        (tmp / "scenario.json").write_text(json.dumps(meta, indent=2) + "\n")
        log(f"kafka {rel.version} dumps real-data {directory.name} in {t2 - t1:.1f} s")

    root = bh.cached(entry, build)
    meta = json.loads((root / "scenario.json").read_text())
    return KafkaScenario(rel.version, meta["scenario"], root, (), {}, dict(meta["timings"]))


# ----------------------------------------------------------------------------- kafka-dump-log

def _decoder(partition: str, rel: Release) -> list[str]:
    if partition.startswith("__consumer_offsets-"):
        return ["--offsets-decoder"]
    if partition.startswith("__transaction_state-"):
        return ["--transaction-log-decoder"]
    if partition.startswith("__cluster_metadata-") and rel.kraft:
        return ["--cluster-metadata-decoder"]
    return []


def dump_all(rel: Release, log_dir: Path, dumps: Path, cp: str) -> None:
    """DumpLogSegments over every .log/.index/.timeindex of every partition directory of
    `log_dir` (one JVM per decoder, ``--files`` a comma-separated list), each file's part of the
    output in ``dumps/<partition>/<file>.txt``; the indexes again with ``--index-sanity-check``
    into ``<file>.sanity.txt``."""
    groups: dict[tuple[str, ...], list[Path]] = {}
    indexes: list[Path] = []
    for part in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        for f in sorted(part.iterdir()):
            if f.suffix in (".log", ".index", ".timeindex"):
                groups.setdefault(tuple(_decoder(part.name, rel)), []).append(f)
                if f.suffix != ".log":
                    indexes.append(f)
    java = [rel.java(), "-Xmx384m", *JVM[1:], "-cp", cp, main_class(rel, Release.dump_classes)]
    runs = [(["--deep-iteration", "--print-data-log", *dec], files, "") for dec, files in groups.items()]
    if indexes:
        runs.append((["--index-sanity-check"], indexes, ".sanity"))
    dumps.mkdir(parents=True, exist_ok=True)
    for n, (opts, files, suffix) in enumerate(runs):
        raw = dumps / f"raw-{n}{suffix}.txt"
        (dumps / f"raw-{n}{suffix}.cmd").write_text(" ".join(opts) + "\n")
        parts = _dump_files(java, opts, files, raw, dumps / "tools.log")
        for file, text in parts.items():
            p = Path(file)
            target = dumps / p.parent.name / (p.name + suffix + ".txt")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)


def _dump_files(java: list[str], opts: list[str], files: list[Path], raw: Path, log: Path) -> dict[str, str]:
    """One DumpLogSegments run over `files`, by file. The tool stops at the first file it
    throws on (4.4's --index-sanity-check throws CorruptIndexException out of main on an
    untrimmed time index): that file's part gets the exception, and a new run takes the files
    after it."""
    parts: dict[str, str] = {}
    rest = list(files)
    with open(raw, "w") as all_out:
        while rest:
            out, err = raw.with_suffix(".part"), raw.with_suffix(".err")
            with open(out, "wb") as fo, open(err, "wb") as fe:
                rc = subprocess.run([*java, *opts, "--files", ",".join(map(str, rest))], stdout=fo, stderr=fe,
                                    timeout=600).returncode
            text = out.read_text(errors="replace")
            errors = err.read_text(errors="replace")
            with open(log, "a") as fl:
                fl.write(errors)
            all_out.write(text)
            got = split_dump(text)
            parts.update(got)
            if rc == 0:
                break
            if not got:
                raise bh.HarnessError(f"DumpLogSegments {' '.join(opts)} failed (exit {rc}) before its first "
                                      f"file {rest[0]}\n{errors[-3000:]}")
            failed = list(got)[-1]
            thrown = [x for x in errors.splitlines() if "Exception" in x][:1]
            parts[failed] += "".join(f"THROWN: {x}\n" for x in thrown)
            all_out.write("".join(f"THROWN: {x}\n" for x in thrown))
            names = [str(f) for f in rest]
            rest = rest[names.index(failed) + 1:] if failed in names else []
            out.unlink()
            err.unlink()
    return parts


def split_dump(text: str) -> dict[str, str]:
    """DumpLogSegments' output of several files, by file: each part starts at its
    ``Dumping FILE`` line; what follows the last file's part (the index mismatch summaries,
    naming their files) goes with the file it names."""
    parts: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        m = re.match(r"Dumping (\S+)$", line)
        if m:
            current = parts.setdefault(m.group(1), [])
        if current is not None:
            current.append(line)
    return {f: "\n".join(lines) + "\n" for f, lines in parts.items()}


# ------------------------------------------------------------------------------------- parser

_INT = re.compile(r"-?\d+")


def _fields(line: str) -> dict[str, str]:
    """``name: value`` pairs of a DumpLogSegments line, up to the key/payload text."""
    out: dict[str, str] = {}
    for m in re.finditer(r"(\w+): (\S*)", line):
        out.setdefault(m.group(1), m.group(2))
    return out


@dataclasses.dataclass
class Dump:
    """One file's DumpLogSegments output, parsed."""
    file: str
    batches: list[dict]
    records: list[dict]
    index: list[dict]
    other: list[str]


def parse_dump(text: str) -> Dump:
    """A file's part of DumpLogSegments' output as batches, records and index entries.

    Batch lines (``baseOffset: ... isvalid: true``; legacy message sets ``offset: ... position:
    ...`` in 2.x's one-line form) and record lines (``| offset: ...``; 2.x prints ``| offset``
    too) keep their fields as ints and booleans where the tool prints numbers; a record's
    ``key`` and ``payload`` are the text after ``key: `` up to `` payload: `` and after
    ``payload: `` (payloads may hold anything but a newline); ``headerKeys`` a list; the
    control record's ``endTxnMarker`` and ``coordinatorEpoch``. Index lines give ``offset`` and
    ``position`` (.index) or ``timestamp`` and ``offset`` (.timeindex)."""
    lines = text.splitlines()
    file = lines[0][len("Dumping "):] if lines and lines[0].startswith("Dumping ") else ""
    d = Dump(file, [], [], [], [])
    for line in lines[1:]:
        if line.startswith("| "):
            d.records.append(_record(line[2:]))
        elif line.startswith("baseOffset: ") or (line.startswith("offset: ") and " position: " in line
                                                 and "compresscodec" in line):
            d.batches.append(_batch(line))
        elif re.match(r"offset: -?\d+ position: -?\d+$", line):
            f = _fields(line)
            d.index.append({"offset": int(f["offset"]), "position": int(f["position"])})
        elif re.match(r"timestamp: -?\d+ offset: -?\d+$", line):
            f = _fields(line)
            d.index.append({"timestamp": int(f["timestamp"]), "offset": int(f["offset"])})
        else:
            d.other.append(line)
    return d


def _typed(name: str, value: str):
    if value in ("true", "false"):
        return value == "true"
    if _INT.fullmatch(value) and name not in ("compresscodec",):
        return int(value)
    return value


def _batch(line: str) -> dict:
    f = _fields(line)
    out = {k: _typed(k, v) for k, v in f.items()}
    for ts in ("CreateTime", "LogAppendTime", "NoTimestampType"):
        if ts in f:
            out["timestampType"], out["timestamp"] = ts, _typed(ts, f[ts])
    return out


def _record(line: str) -> dict:
    head = line
    key = payload = None
    # the key and payload texts: everything after their markers (a payload can hold ": ")
    pm = line.find(" payload: ")
    km = line.find(" key: ")
    if km >= 0 and (pm < 0 or km < pm):
        head = line[:km]
        key = line[km + len(" key: "):pm] if pm >= 0 else line[km + len(" key: "):]
    if pm >= 0:
        head = head if km >= 0 and km < pm else line[:pm]
        payload = line[pm + len(" payload: "):]
    if key is None and payload is None:
        # a control record's text: "endTxnMarker: COMMIT coordinatorEpoch: 0", or a KRaft control
        # record's name and JSON
        head = line
    f = _fields(head.split(" headerKeys: ")[0])
    out: dict = {k: _typed(k, v) for k, v in f.items()}
    for ts in ("CreateTime", "LogAppendTime", "NoTimestampType"):
        if ts in f:
            out["timestampType"], out["timestamp"] = ts, _typed(ts, f[ts])
    hk = re.search(r"headerKeys: \[(.*?)\]", head)
    if hk is not None:
        out["headerKeys"] = [k for k in hk.group(1).split(",") if k] if hk.group(1) else []
        rest = head[hk.end():].strip()
        if rest:
            out["rest"] = rest
            for m in re.finditer(r"(endTxnMarker|coordinatorEpoch): (\S+)", rest):
                out[m.group(1)] = _typed(m.group(1), m.group(2))
    if key is not None:
        out["key"] = key
    if payload is not None:
        out["payload"] = payload
    return out


def parse_dump_file(path: Path) -> Dump:
    return parse_dump(Path(path).read_text(errors="replace"))


def scenarios(versions: Iterable[str] | None = None, names: Iterable[str] = SCENARIOS, log=print):
    for v in versions or [r.version for r in RELEASES]:
        for s in names:
            yield kafka_partitions(v, s, log)


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "_inside":
    _inside(json.loads(sys.argv[2]))
