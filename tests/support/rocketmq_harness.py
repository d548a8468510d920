"""Real RocketMQ releases write stores for the tests, and their own code records the answers.

For a release of :data:`RELEASES` and a scenario of :data:`SCENARIOS`, :func:`rocketmq_store`
returns a :class:`BrokerStore`: a store directory written by that release's own name server and
broker (separate JVMs, ``NamesrvStartup -c namesrv.conf`` and ``BrokerStartup -c broker.conf``,
as users run them), driven by the same release's client (``tests/brokers/rocketmq/src``), with
the broker's answers recorded as JSON before it stopped, and every CommitLog record decoded by the
release's own ``MessageDecoder`` after it stopped. Everything is built once into the cache of
:mod:`broker_harness` (outside the checkout) and reused; a cache entry's name carries the digest of
what made it (the driver source, the pom, :data:`BROKER_CONF`, the release, the scenario).

Scenarios:

``clean``      the workload, then the broker's answers, then SIGTERM (the broker's shutdown hook),
               then the store decoded.
``crash``      the workload, then a producer sending one message after another while the broker's
               JVM is killed with SIGKILL (the ``abort`` file stays); the answers are the send
               results acknowledged before the kill. From 4.6.0 on the broker runs with
               ``brokerIP1=::1``: clients reach it over IPv6, so born and store hosts are IPv6.
``recovered``  the crash store copied, the broker restarted on it (its own abnormal recovery),
               its answers recorded after the restart, then a clean stop.
``dledger``    as ``clean``, with a DLedger CommitLog (enableDLegerCommitLog, a one-node group;
               4.5.2, 4.9.7, 5.3.3: :data:`DLEDGER_RELEASES`); after the decode DLedgerLedger.java
               records what DLedger's own store reads after its load and recovery (ledger.json).
               On 5.x TimerState.java records what the release's timer classes (TimerWheel,
               TimerLog, TimerCheckpoint, TimerMetrics) read from the timer files (timers.json).
``dledger-group``  as ``dledger``, the group of three nodes (n0 the preferred leader, whose store
               is the scenario's; n1 and n2 followers, each a broker of its own whose store is
               under nodes/; 4.9.7 and 5.3.3, :data:`DLEDGER_GROUP_RELEASES`); the followers
               stop first, and DLedgerLedger.java reads each node's ledger (ledger-n1.json, ...).
``dledger-crash``  as ``crash``, with the DLedger CommitLog of ``dledger``.
``dledger-recovered``  the dledger-crash store copied, the broker restarted on it, as ``recovered``.
``rocksdb``    as ``clean``, with storeType=defaultRocksDB (5.2.0+): the ConsumeQueues are a RocksDB
               database in {store}/consumequeue (RocksDBConsumeQueueStore).
``rocksdb-crash``  as ``crash``, with the RocksDB ConsumeQueues of ``rocksdb`` (5.2.0, 5.3.3 and
               5.5.0, :data:`ROCKSDB_CRASH_RELEASES`): the queues' database as a kill -9 leaves it.
``rocksdb-recovered``  the rocksdb-crash store copied, the broker restarted on it, as ``recovered``.
``multipath``  as ``clean``, with the CommitLog over two folders (storePathCommitLog=
               {store}/commitlog,{store}/commitlog-b: MultiPathMappedFileQueue, 4.9.2+; 4.9.7 and
               5.3.3, :data:`MULTIPATH_RELEASES`); the release's own code decodes and answers through
               a folder of links to both (:meth:`_Run.java_view`).
``configv2``   as ``clean``, with the v2 config managers (configManagerVersion=v2, 5.3+: topics,
               subscription groups and consumer offsets in one RocksDB database, config/rdb;
               5.3.3 and 5.5.0, :data:`CONFIG_V2_RELEASES`).
``tiered``     as ``clean``, with the tiered store (messageStorePlugIn=TieredMessageStore, RIP-57) on
               its POSIX file system (PosixFileSegment, tieredStoreFilePath={entry}/tiered; 5.1.4,
               5.2.0, 5.3.3 and 5.5.0, :data:`TIERED_STORE_RELEASES`); the broker stays up after the
               workload until its dispatcher uploaded it (:data:`TIERED_UPLOAD_WAIT_S`).
``rocksdb-index``  as ``clean``, with 5.5's message RocksDB in use (rocksdbstore/,
               MessageRocksDBStorage): the index (indexRocksDBEnable, and indexFileReadEnable=false so
               that queryMessage answers from it), the transaction store (transRocksDBEnable) and the
               timer store (timerRocksDBEnable); 5.5.0, :data:`MESSAGE_ROCKSDB_RELEASES`.
``revived``    the clean store copied (5.0.0+), the broker restarted on it and left running until
               its PopReviveService revived the checkpoints PopConsumer.java left in flight (the
               held messages' revive time, from the clean run's pop.json, plus
               :data:`REVIVE_MARGIN_S`), then a clean stop: the store holds the broker's own
               re-puts into the pop retry topic.

The workload (tests/brokers/rocketmq/src/RocketMQDriver.java) reaches what the release has and
records what it skipped and why (:attr:`BrokerStore.skipped`); :meth:`BrokerStore.store_facts`
counts what the store holds (v2 records, IPv6 hosts, compressed bodies, __CRC32#, transaction
types). Releases before 4.3.0 also run LegacyTransactions.java (the older transaction API: their
stores hold PREPARED, COMMIT and ROLLBACK records), 5.x releases PopConsumer.java (pop
consumption: revive-log and pop-retry records) and FeatureTopics.java (a BatchCQ topic, and from
5.1.0 a compaction topic). Every store has ConsumeQueueExt files (enableConsumeQueueExt), and from
4.9.3 light message queues (INNER_MULTI_DISPATCH to %LMQ% queues).

Every broker run happens in a network namespace of its own with only the loopback
(:func:`broker_harness.loopback_only`): this module re-runs itself inside one (``_run``). A run
that fails is tried once more (its logs are kept in ``<entry>.failed``); right after a restart the
answers are asked again while some fail (the broker registers at the name server late).

``python tests/brokers/build_rocketmq.py [--release X ...] [--scenario S ...]`` builds them all
with progress and wall times (the cache warm-up of a CI job).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import broker_harness as bh

#: release -> the client release driving it (the same release: Maven Central has each one's client).
#: Substitutes: 5.3.3 for 5.3.0-5.3.2 (their rocketmq-namesrv jar is not on Maven Central), 5.5.0 for
#: 5.5.1 (client, namesrv, srvutil, filter, auth and tools 5.5.1 are not); 4.2.0 resolves only with
#: netty-tcnative excluded (see pom.xml). The crash stores of 4.6-4.8 are IPv4 (:func:`no_ipv6_reason`).
RELEASES: dict[str, str] = {
    "4.2.0": "4.2.0",
    "4.3.2": "4.3.2",
    "4.5.2": "4.5.2",
    "4.7.1": "4.7.1",
    "4.9.2": "4.9.2",
    "4.9.3": "4.9.3",
    "4.9.7": "4.9.7",
    "5.0.0": "5.0.0",
    "5.1.4": "5.1.4",
    "5.2.0": "5.2.0",
    "5.3.3": "5.3.3",
    "5.5.0": "5.5.0",
}
SCENARIOS = ("clean", "crash", "recovered")
#: the first release with a RocksDB ConsumeQueue store (storeType=defaultRocksDB)
ROCKSDB_SINCE = (5, 2, 0)
#: the releases whose RocksDB ConsumeQueue store is also killed and restarted (rocksdb-crash, -recovered)
ROCKSDB_CRASH_RELEASES = ("5.2.0", "5.3.3", "5.5.0")
#: the scenarios whose ConsumeQueues are a RocksDB database (storeType=defaultRocksDB)
ROCKSDB_CQ_SCENARIOS = ("rocksdb", "rocksdb-crash", "rocksdb-recovered")
#: the releases with a DLedger CommitLog scenario: the first DLedger line (dledger 0.1), the last
#: 4.9 and a 5.3 (dledger 0.3.1.2)
DLEDGER_RELEASES = ("4.5.2", "4.9.7", "5.3.3")
#: the scenarios whose CommitLog is a DLedger group's from the first message on
LEDGER_ONLY = ("dledger", "dledger-group", "dledger-crash", "dledger-recovered")
#: the releases with a plain CommitLog switched to DLedger (DLedgerCommitLog's mixed CommitLog)
DLEDGER_MIXED_RELEASES = ("4.9.7", "5.3.3")
#: the releases with a three-node DLedger group (dledger-group): the last 4.9 and a 5.3
DLEDGER_GROUP_RELEASES = ("4.9.7", "5.3.3")
#: scenarios only some releases run: name -> whether a release runs it
EXTRA_SCENARIOS: dict[str, Any] = {
    # a DLedger CommitLog (enableDLegerCommitLog, a one-node group), stopped cleanly
    "dledger": lambda release: release in DLEDGER_RELEASES,
    # the same, its broker killed with SIGKILL while a producer sends (abort file left)
    "dledger-crash": lambda release: release in DLEDGER_RELEASES,
    # the dledger-crash store, the broker restarted on it (DLedgerCommitLog's abnormal recovery)
    "dledger-recovered": lambda release: release in DLEDGER_RELEASES,
    # a plain CommitLog switched to DLedger: the clean workload on a plain CommitLog, then the
    # broker restarted with enableDLegerCommitLog; the ledger goes on from dividedCommitlogOffset
    "dledger-mixed": lambda release: release in DLEDGER_MIXED_RELEASES,
    # a three-node DLedger group (n0 preferred leader, n1 and n2 followers, each a broker with a
    # store of its own), the workload sent to the leader, every node stopped cleanly: the
    # scenario's store is n0's, the followers' are under nodes/ (BrokerStore.nodes)
    "dledger-group": lambda release: release in DLEDGER_GROUP_RELEASES,
    # as clean, with the ConsumeQueues in RocksDB (storeType=defaultRocksDB, RIP-66, 5.2.0+)
    "rocksdb": lambda release: version_tuple(release) >= ROCKSDB_SINCE,
    # as crash, with the ConsumeQueues in RocksDB; then the broker restarted on a copy of it
    "rocksdb-crash": lambda release: release in ROCKSDB_CRASH_RELEASES,
    "rocksdb-recovered": lambda release: release in ROCKSDB_CRASH_RELEASES,
    # the v2 config managers: config/rdb (configManagerVersion=v2, 5.3+)
    "configv2": lambda release: release in CONFIG_V2_RELEASES,
    # a CommitLog over two folders (storePathCommitLog with a comma, 4.9.2+)
    "multipath": lambda release: release in MULTIPATH_RELEASES,
    # the tiered store plugin on a POSIX file system beside the store (5.3+)
    "tiered": lambda release: release in TIERED_STORE_RELEASES,
    # 5.5's message RocksDB: the RocksDB index, transaction and timer stores
    "rocksdb-index": lambda release: release in MESSAGE_ROCKSDB_RELEASES,
    # the clean store, the broker restarted on it until it revived the pop checkpoints left in flight
    "revived": lambda release: version_tuple(release) >= (5, 0, 0),
}
ALL_SCENARIOS = (*SCENARIOS, *EXTRA_SCENARIOS)
#: the releases whose broker has the v2 config managers (configManagerVersion=v2)
CONFIG_V2_RELEASES = ("5.3.3", "5.5.0")
#: the releases with 5.5's message RocksDB (rocksdbstore/: RocksDB index, transaction and timer stores)
MESSAGE_ROCKSDB_RELEASES = ("5.5.0",)
#: the releases whose broker runs the tiered scenario (rocketmq-tiered-store, a dependency of the
#: broker since 5.1): 5.1.4 and 5.2.0 with the classes of 5.1-5.2 (TieredFlatFileManager, TieredFileSegment),
#: 5.3.3 and 5.5.0 with those of 5.3+ (FlatFileStore, FileSegment); both write the same layout
TIERED_STORE_RELEASES = ("5.1.4", "5.2.0", "5.3.3", "5.5.0")
#: the releases among them whose tiered classes are 5.1-5.2's (TieredFlatFileOracle.java reads them)
TIERED_FLATFILE_MANAGER_RELEASES = ("5.1.4", "5.2.0")
#: their tiered index files' hash slots and items (tieredStoreIndexFileMaxHashSlotNum / MaxIndexNum):
#: a few hundred keys fill one, so the workload seals and uploads several
TIERED_SMALL_INDEX = (64, 300)
#: the tiered scenario's file system, in the cache entry beside the store (tieredStoreFilePath)
TIERED_FOLDER = "tiered"
#: how long the tiered scenario's broker stays up after the workload: MessageStoreDispatcher runs
#: every 20 s, a queue's first round only sets its start offset, a later one uploads the messages
#: older than tieredStoreGroupCommitTimeout (1 s here, 30 s by default)
TIERED_UPLOAD_WAIT_S = 45.0
#: ... and after it, how long the tiered files must stay the same (a dispatcher round is 20 s)
TIERED_SETTLED_S = 25.0
#: ... and the longest the wait may take in all
TIERED_UPLOAD_MAX_S = 180.0
#: how long a clean stop may take (the broker's shutdown hooks: flushes, the tiered store's
#: uploads) before the broker is killed and the build fails
CLEAN_STOP_S = 240.0
#: the releases with a CommitLog over several paths: the last 4.9 and a 5.3
MULTIPATH_RELEASES = ("4.9.7", "5.3.3")
#: the multipath scenario's CommitLog folders, under the store root (the broker's storePathCommitLog)
COMMITLOG_PATHS = ("commitlog", "commitlog-b")
#: how long the 5.x crash scenarios send timer messages before the kill (TimerTail.java: one every
#: 20 ms, each due 1.5 s later): the kill then comes while the timer store enqueues and delivers
TIMER_TAIL_S = 6.0
#: restart scenario -> the scenario whose store it copies and restarts the broker on
#: the scenarios whose broker stops cleanly after the workload and the answers
CLEAN_STOPS = ("clean", "dledger", "dledger-group", "rocksdb", "multipath", "configv2", "tiered", "rocksdb-index")
RESTARTS = {"recovered": "crash", "dledger-recovered": "dledger-crash", "rocksdb-recovered": "rocksdb-crash",
            "revived": "clean"}
#: how long past the last held message's revive time the revived scenario keeps the broker up: the
#: timer wheel delivers the checkpoint 1 s before it, PopReviveService revives it once the revive
#: log is 2 s past it (reviveInterval 1 s, an idle scan moves its end time after 3 s)
REVIVE_MARGIN_S = 20.0
#: how long the revived scenario waits beyond that for the re-puts to show in the retry queue
REVIVE_POLL_S = 120.0


#: the core matrix (:func:`broker_harness.broker_matrix`): scenario -> the releases that run it.
#: :data:`CORE_RELEASES` write their clean stores (each line's first and last: the oldest, the
#: first DLedger release, the last 4.x, the first 5.x, 5.1 with its own tiered index, 5.3 and the
#: newest); each other scenario runs once, on the release whose code for it is the newest line,
#: and the tiered store once a generation of its classes (:data:`TIERED_FLATFILE_MANAGER_RELEASES`
#: and after). The rest, 4.3.2, 4.7.1, 4.9.2, 4.9.3 and 5.2.0 among them, runs in "all".
CORE_RELEASES = ("4.2.0", "4.5.2", "4.9.7", "5.0.0", "5.1.4", "5.3.3", "5.5.0")
CORE_MATRIX: dict[str, tuple[str, ...]] = {
    "clean": CORE_RELEASES,
    "crash": ("4.9.7", "5.5.0"),
    "recovered": ("4.9.7", "5.5.0"),
    "dledger": ("5.3.3",),
    "dledger-crash": ("5.3.3",),
    "dledger-recovered": ("5.3.3",),
    "dledger-mixed": ("5.3.3",),
    "dledger-group": ("5.3.3",),
    "rocksdb": ("5.5.0",),
    "rocksdb-crash": ("5.5.0",),
    "rocksdb-recovered": ("5.5.0",),
    "configv2": ("5.5.0",),
    "multipath": ("5.3.3",),
    "tiered": ("5.1.4", "5.5.0"),
    "rocksdb-index": ("5.5.0",),
    "revived": ("5.5.0",),
}


def scenarios(release: str) -> list[str]:
    """The scenarios `release` runs in the selected matrix (:func:`broker_harness.broker_matrix`):
    of :data:`SCENARIOS`, then of :data:`EXTRA_SCENARIOS`, those it has (all of them in "all",
    those :data:`CORE_MATRIX` names for it in "core")."""
    has = [*SCENARIOS, *(name for name, has in EXTRA_SCENARIOS.items() if has(release))]
    if bh.broker_matrix() == "all":
        return has
    return [s for s in has if release in CORE_MATRIX[s]]


def selected(release: str, scenario: str) -> bool:
    """Whether the tests build and read `release`'s `scenario` store (:func:`selected_releases`,
    :func:`scenarios`)."""
    return release in selected_releases() and scenario in scenarios(release)


def selected_releases() -> list[str]:
    """The releases the tests run against: ``$RMQLAB_ROCKETMQ_RELEASES`` (comma-separated, or
    "all"), else all of :data:`RELEASES`. A cold cache costs about 1.5-2.5 min a release."""
    wanted = os.environ.get("RMQLAB_ROCKETMQ_RELEASES", "all").strip()
    if wanted in ("", "all"):
        return list(RELEASES)
    names = [w.strip() for w in wanted.split(",") if w.strip()]
    unknown = [n for n in names if n not in RELEASES]
    if unknown:
        raise ValueError(f"RMQLAB_ROCKETMQ_RELEASES names unknown releases {unknown}; known: {list(RELEASES)}")
    return names

ROCKETMQ_DIR = bh.BROKERS_DIR / "rocketmq"
POM = ROCKETMQ_DIR / "pom.xml"
SOURCES = sorted((ROCKETMQ_DIR / "src").glob("*.java"))


#: driver sources compiled only for some releases: file name -> whether a release gets it
ONLY_FOR: dict[str, Any] = {
    "LegacyTransactions.java": lambda v: v < (4, 3, 0),   # the client API before TransactionListener
    "PopConsumer.java": lambda v: v >= (5, 0, 0),         # pop consumption (MessageRequestMode.POP)
    "FeatureTopics.java": lambda v: v >= (5, 0, 0),       # BatchCQ and compaction topics (topic attributes)
    "DLedgerLedger.java": lambda v: v >= (4, 5, 0),       # DLedger's own store, offline (dledger jar)
    "TimerState.java": lambda v: v >= (5, 0, 0),          # the timer store's own classes, offline
    "TimerTail.java": lambda v: v >= (5, 0, 0),           # timer messages due while the crash comes
}


def sources(release: str) -> list[Path]:
    """The driver sources compiled for `release` (see :data:`ONLY_FOR`)."""
    v = version_tuple(release)
    return [p for p in SOURCES if p.name not in ONLY_FOR or ONLY_FOR[p.name](v)]
ROOT = bh.CACHE / "rocketmq"

NAMESRV_PORT = 9876
BROKER_PORT = 10911
BROKER_NAME = "broker-a"
CLUSTER_NAME = "DefaultCluster"
#: a consumer group (5.x) whose retry topic, %RETRY% + 125 bytes, is longer than 127 bytes: a v2 record
LONG_GROUP = "G_long_" + "g" * 118

#: the store geometry every scenario uses (small, so files roll)
COMMITLOG_FILE_SIZE = 128 * 1024
CONSUME_QUEUE_FILE_SIZE = 20 * 100
#: mappedFileSizeConsumeQueueExt: every ConsumeQueue has its ConsumeQueueExt (enableConsumeQueueExt)
CONSUME_QUEUE_EXT_FILE_SIZE = 64 * 1024
#: the first release with light message queues (MultiDispatch: enableLmq, enableMultiDispatch)
LMQ_SINCE = (4, 9, 3)
HASH_SLOT_NUM = 400
INDEX_NUM = 1000
#: timerPrecisionMs of every run (the default), and mappedFileSizeTimerLog's default
TIMER_PRECISION_MS = 1000
TIMER_LOG_FILE_SIZE = 100 * 1024 * 1024

#: broker.conf of every run ({...} filled per run). Old and new spellings of a setting are both
#: given (mapedFileSize* before 4.9/5.0, mappedFileSize* after); a release ignores the others.
BROKER_CONF = f"""\
brokerClusterName={CLUSTER_NAME}
brokerName={BROKER_NAME}
brokerId=0
namesrvAddr=127.0.0.1:{NAMESRV_PORT}
brokerIP1={{broker_ip}}
listenPort={BROKER_PORT}
bindAddress=::
storePathRootDir={{store}}
storePathCommitLog={{store}}/commitlog
mapedFileSizeCommitLog={COMMITLOG_FILE_SIZE}
mappedFileSizeCommitLog={COMMITLOG_FILE_SIZE}
mapedFileSizeConsumeQueue={CONSUME_QUEUE_FILE_SIZE}
mappedFileSizeConsumeQueue={CONSUME_QUEUE_FILE_SIZE}
maxHashSlotNum={HASH_SLOT_NUM}
maxIndexNum={INDEX_NUM}
enableConsumeQueueExt=true
mappedFileSizeConsumeQueueExt={CONSUME_QUEUE_EXT_FILE_SIZE}
enableLmq=true
enableMultiDispatch=true
flushDiskType=ASYNC_FLUSH
autoCreateTopicEnable=true
autoCreateSubscriptionGroup=true
messageDelayLevel=1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h
transactionTimeOut=1000
transactionCheckInterval=2000
timerWheelEnable=true
timerPrecisionMs={TIMER_PRECISION_MS}
cleanFileForciblyEnable=false
{{extra}}"""
# cleanFileForciblyEnable=false: a broker whose disk is over diskSpaceCleanForciblyRatio (85 %, as
# used / (used + usable), UtilAll.getDiskPartitionSpaceUsedPercent) deletes CommitLog and queue
# files whatever their age (CleanCommitLogService, cleanImmediately); the stores must not depend on
# how full the machine's disk is. Past 90 % a broker refuses writes: see check_disk.
#: the disk use (used / (used + usable)) at which a broker marks its disk full and refuses writes
#: (diskSpaceWarningLevelRatio, capped at 0.90 in 5.x)
DISK_FULL_RATIO = 0.90


def check_disk(folder: Path) -> None:
    """Raise HarnessError when the disk holding `folder` is as full as a broker refuses writes at."""
    st = os.statvfs(folder)
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    usable = st.f_bavail * st.f_frsize
    ratio = used / (used + usable) if used + usable else 0.0
    if ratio >= DISK_FULL_RATIO:
        raise bh.HarnessError(f"the disk holding {folder} is {ratio:.0%} full: a RocketMQ broker refuses writes from "
                              f"{DISK_FULL_RATIO:.0%} (diskSpaceWarningLevelRatio); free some space")

NAMESRV_CONF = f"listenPort={NAMESRV_PORT}\nbindAddress=::\n"

LOGBACK = """<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log}</file>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} %-5level [%thread] %logger{{0}} - %msg%n</pattern></encoder>
  </appender>
  <root level="{level}"><appender-ref ref="FILE"/></root>
</configuration>
"""

#: Java 17 and the releases' reflection on NIO buffers (MappedFile's cleaner), Netty and fastjson
JVM_OPENS = [f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
    "java.nio", "sun.nio.ch", "jdk.internal.ref", "java.lang", "java.lang.reflect", "java.util", "java.io",
    "java.net", "java.util.concurrent", "jdk.internal.misc")] + ["--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
                                                                  "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED"]


@dataclass(frozen=True)
class BrokerStore:
    """A finished scenario: the store a real broker wrote and what the broker answered."""

    release: str
    client: str
    scenario: str
    folder: Path                  #: the cache entry
    store: Path                   #: storePathRootDir (commitlog/, consumequeue/, index/, checkpoint, config/)
    answers: dict[str, Any]       #: broker answers (answers.json), the sends, the workload's notes
    decoded: Path                 #: MessageDecoder's decode of every CommitLog record (JSON lines)
    checkpoint: dict[str, Any]    #: StoreCheckpoint's fields, read by the broker's own class
    reached: dict[str, Any] = field(default_factory=dict)   #: features the workload reached
    skipped: dict[str, str] = field(default_factory=dict)   #: features skipped, and why
    timings: dict[str, float] = field(default_factory=dict)
    broker_ip: str = "127.0.0.1"

    @property
    def commitlog_paths(self) -> list[str] | None:
        """The folders of a CommitLog over several paths (the multipath scenario), else None."""
        return list(COMMITLOG_PATHS) if self.scenario == "multipath" else None

    @property
    def tiered(self) -> Path | None:
        """The tiered store's file system (tieredStoreFilePath) of the tiered scenario, else None."""
        p = self.folder / TIERED_FOLDER
        return p if p.is_dir() else None

    @property
    def commitlog(self) -> Path:
        """The folder of the store's CommitLog files: commitlog/, a DLedger CommitLog's
        dledger-n0/data, or rmqlab's view of a CommitLog over several folders (multipath) or of
        a plain one switched to DLedger (dledger-mixed: the files of both folders)."""
        if self.commitlog_paths or self.scenario == "dledger-mixed":
            from rmqlab.formats.storepaths import StorePaths

            return StorePaths(self.store, self.commitlog_paths).commitlog
        ledger = self.store / f"dledger-{DLEDGER_SELF_ID}" / "data"
        return ledger if ledger.is_dir() else self.store / "commitlog"

    def timers(self) -> dict[str, Any] | None:
        """What the release's timer classes read from the store's timer files (TimerState.java's
        timers.json), else None (4.x)."""
        p = self.folder / "timers.json"
        return json.loads(p.read_text(encoding="utf-8")) if p.exists() else None

    def ledger(self, node: str | None = None) -> dict[str, Any] | None:
        """DLedger's own view of a DLedger CommitLog (DLedgerLedger.java's ledger.json; a
        dledger-group follower's ledger-{node}.json), else None."""
        p = self.folder / ("ledger.json" if node in (None, DLEDGER_SELF_ID) else f"ledger-{node}.json")
        return json.loads(p.read_text(encoding="utf-8")) if p.exists() else None

    def nodes(self) -> dict[str, Path]:
        """The dledger-group scenario's stores by DLedger selfId (n0 is :attr:`store`); else only
        the store itself under n0."""
        return {n: self.store if n == DLEDGER_SELF_ID else group_node_home(self.folder, n) / "store"
                for n in (GROUP_NODES if self.scenario == "dledger-group" else [DLEDGER_SELF_ID])}

    def misplaced_units(self, node: str | None = None) -> dict[tuple[str, int], list[tuple[int, int]]]:
        """The units the broker itself logged as appended at the wrong place, per (topic, queue id):
        (the unit's queue offset, the QUEUEOFFSET of its message), from ConsumeQueue.
        putMessagePositionInfo's "[BUG]logic queue order maybe wrong, expectLogicOffset: E
        currentLogicOffset: C Topic: T QID: q" lines in the broker's logs (20-byte units); of a
        dledger-group follower `node`, in its own logs."""
        out: dict[tuple[str, int], list[tuple[int, int]]] = {}
        pattern = re.compile(r"\[BUG\]logic queue order maybe wrong, expectLogicOffset: (\d+) currentLogicOffset: "
                             r"(\d+) Topic: (\S+) QID: (\d+)")
        logs = self.folder / "logs" if node in (None, DLEDGER_SELF_ID) else group_node_home(self.folder, node) / "logs"
        for log in sorted(logs.rglob("*.log")):
            for m in pattern.finditer(log.read_text(encoding="utf-8", errors="replace")):
                expect, current, topic, qid = int(m[1]), int(m[2]), m[3], int(m[4])
                out.setdefault((topic, qid), []).append((current // 20, expect // 20))
        return {k: sorted(set(v)) for k, v in out.items()}

    def records(self) -> list[dict[str, Any]]:
        """decoded.jsonl, one dict a CommitLog record (blank and torn markers included)."""
        with open(self.decoded, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]

    def store_facts(self) -> dict[str, Any]:
        """What the store holds, counted from MessageDecoder's decode: records, CommitLog and index
        files, topics, v2 records (topic over 127 bytes), IPv6 store/born hosts, compressed bodies
        (sysFlag 0x1), __CRC32# properties, transaction types (sysFlag 0xC), blank records."""
        msgs = [r for r in self.records() if "topic" in r]
        tx = {0x0: "not", 0x4: "prepared", 0x8: "commit", 0xC: "rollback"}
        return {"records": len(msgs), "topics": sorted({m["topic"] for m in msgs}),
                "commitlog_files": len(list(self.commitlog.iterdir())),
                "index_files": len(list((self.store / "index").iterdir())),
                "v2_records": sum(m["magic"] == 0xDAA320AB - (1 << 32) for m in msgs),
                "ipv6_store_hosts": sum(":" in m["storeHost"]["ip"] for m in msgs),
                "ipv6_born_hosts": sum(":" in m["bornHost"]["ip"] for m in msgs),
                "compressed": sum(bool(m["sysFlag"] & 0x1) for m in msgs),
                "crc32_property": sum("__CRC32#" in m["properties"] for m in msgs),
                "transactions": {name: sum(m["sysFlag"] & 0xC == flag for m in msgs) for flag, name in tx.items()},
                "blank_records": sum(bool(r.get("blank")) for r in self.records())}

    def store_kwargs(self) -> dict[str, Any]:
        """The arguments of :class:`rmqlab.store.directory.Store` for this store: its geometry, its
        ConsumeQueueExt, light message queues from 4.9.3, and the release."""
        lmq = version_tuple(self.release) >= LMQ_SINCE
        return {"hash_slot_num": HASH_SLOT_NUM, "index_num": INDEX_NUM, "commitlog_file_size": COMMITLOG_FILE_SIZE,
                "consume_queue_file_size": CONSUME_QUEUE_FILE_SIZE, "consume_queue_ext": True,
                "consume_queue_ext_file_size": CONSUME_QUEUE_EXT_FILE_SIZE, "enable_lmq": lmq,
                "enable_multi_dispatch": lmq, "broker_version": self.release,
                **({"commitlog_paths": self.commitlog_paths} if self.commitlog_paths else {})}


def version_tuple(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


def scenario_conf(scenario: str, release: str = "") -> str:
    """broker.conf lines of one scenario (of `release`, where they differ by release): the crash
    and recovered stores carry the __CRC32# property (enabledAppendPropCRC, 5.2+; older releases
    ignore the key); the dledger store's CommitLog is a one-node DLedger group's
    ({store}/dledger-n0/data), in the dledger scenarios."""
    if scenario in ("crash", "recovered"):
        return "enabledAppendPropCRC=true\n"
    if scenario in ROCKSDB_CQ_SCENARIOS:
        return "storeType=defaultRocksDB\n"
    if scenario == "configv2":
        return "configManagerVersion=v2\n"
    if scenario == "multipath":   # {store} is put in by write_conf
        return "storePathCommitLog=" + ",".join("{store}/" + p for p in COMMITLOG_PATHS) + "\n"
    if scenario == "rocksdb-index":
        # half messages into RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC, not the origin topic; the unresolved ones
        # kept (TransactionalMessageRocksDBService deletes a record after transactionCheckMax checks,
        # 15 by default: 32 s at the harness's transactionCheckInterval of 2 s)
        return ("indexRocksDBEnable=true\nindexFileReadEnable=false\ntransRocksDBEnable=true\n"
                "transWriteOriginTransHalfEnable=false\ntransactionCheckMax=100000\ntimerRocksDBEnable=true\n")
    if scenario == "tiered":   # {tiered} is put in by write_conf
        # the provider moved from provider.posix to provider in 5.3.0; 5.2's dispatcher commits
        # each batch at once and has no tieredStoreGroupCommitTimeout. 5.1's and 5.2's index
        # compacts and uploads a file only once it is full (5.3+ also at shutdown): small files
        # (TIERED_SMALL_INDEX) make it upload some
        if release in TIERED_FLATFILE_MANAGER_RELEASES:
            return ("messageStorePlugIn=org.apache.rocketmq.tieredstore.TieredMessageStore\n"
                    "tieredBackendServiceProvider=org.apache.rocketmq.tieredstore.provider.posix.PosixFileSegment\n"
                    "tieredStoreFilePath={tiered}\n"
                    f"tieredStoreIndexFileMaxHashSlotNum={TIERED_SMALL_INDEX[0]}\n"
                    f"tieredStoreIndexFileMaxIndexNum={TIERED_SMALL_INDEX[1]}\n")
        return ("messageStorePlugIn=org.apache.rocketmq.tieredstore.TieredMessageStore\n"
                "tieredBackendServiceProvider=org.apache.rocketmq.tieredstore.provider.PosixFileSegment\n"
                "tieredStoreFilePath={tiered}\ntieredStoreGroupCommitTimeout=1000\n")
    if scenario == "dledger-group":
        return group_node_conf(DLEDGER_SELF_ID)
    if scenario.startswith("dledger"):
        return (f"enableDLegerCommitLog=true\ndLegerGroup={DLEDGER_GROUP}\ndLegerSelfId={DLEDGER_SELF_ID}\n"
                f"dLegerPeers={DLEDGER_PEERS}\n")
    return ""


def broker_ip(release: str, scenario: str) -> str:
    """IPv6 (brokerIP1=::1) for the crash and recovered stores of releases whose broker stores
    IPv6 hosts (see :func:`no_ipv6_reason`), else 127.0.0.1."""
    return "::1" if scenario in ("crash", "recovered") and not no_ipv6_reason(release) else "127.0.0.1"


def no_ipv6_reason(release: str) -> str:
    """Why the release's stores have no IPv6 store host ("" when the crash scenario has one)."""
    v = version_tuple(release)
    if v < (4, 6, 0):
        return "no IPv6 hosts before 4.6.0 (MessageSysFlag.BORNHOST_V6_FLAG / STOREHOST_V6_FLAG)"
    if v < (4, 9, 0):
        return ("with brokerIP1=::1 the 4.7.1 broker answers a delayed send with java.nio.BufferOverflowException "
                "(HeapByteBuffer.put), so 4.6-4.8 run on IPv4")
    if (5, 1, 0) <= v < (5, 2, 0):
        return ("the 5.1.x client cannot reach an IPv6 address: NettyRemotingClient.getHostAndPort splits "
                "\"::1:10911\" on every ':' (address.split(\":\"), 5.1.0-5.1.4; lastIndexOf from 5.2.0)")
    return ""


# -- cache entries --------------------------------------------------------------------------

def jars(release: str) -> Path:
    """The release's jars (broker, name server, store, tools, client) with their dependencies."""
    client = RELEASES[release]
    entry = ROOT / f"jars-{release}-{bh.digest(POM, release, client)}"

    def build(tmp: Path) -> None:
        bh.maven_jars(POM, {"rocketmq.version": release, "rocketmq.client.version": client}, tmp / "lib",
                      log=tmp / "maven.log")

    bh.cached(entry, build)
    _prune(entry)
    return entry


def driver(release: str) -> Path:
    """The drivers compiled against the release's jars."""
    lib = jars(release) / "lib"
    entry = ROOT / f"driver-{release}-{bh.digest(*sources(release), lib.parent.name)}"

    def build(tmp: Path) -> None:
        bh.compile_java(sources(release), sorted(lib.glob("*.jar")), tmp / "classes", log=tmp / "javac.log")

    bh.cached(entry, build)
    _prune(entry)
    return entry


#: the one-node DLedger group of the dledger scenario (dLegerPeers: selfId-host:port)
DLEDGER_GROUP, DLEDGER_SELF_ID, DLEDGER_PORT = BROKER_NAME, "n0", 40911
DLEDGER_PEERS = f"{DLEDGER_SELF_ID}-127.0.0.1:{DLEDGER_PORT}"
#: the dledger-group scenario's nodes: selfId -> (the broker's listenPort, DLedger's port); n0 is
#: the harness's own broker, preferred as leader (preferredLeaderId) so the workload's broker
#: address is the leader's
GROUP_NODES = {"n0": (BROKER_PORT, DLEDGER_PORT), "n1": (BROKER_PORT + 10, DLEDGER_PORT + 1),
               "n2": (BROKER_PORT + 20, DLEDGER_PORT + 2)}
GROUP_PEERS = ";".join(f"{n}-127.0.0.1:{d}" for n, (_, d) in GROUP_NODES.items())


def group_node_home(folder: Path, self_id: str) -> Path:
    """A dledger-group follower's own folder in the scenario's cache entry: conf, logs, store."""
    return folder / "nodes" / self_id


def group_node_conf(self_id: str) -> str:
    """broker.conf lines of one node of the dledger-group scenario."""
    return (f"enableDLegerCommitLog=true\ndLegerGroup={DLEDGER_GROUP}\ndLegerSelfId={self_id}\n"
            f"dLegerPeers={GROUP_PEERS}\npreferredLeaderId={DLEDGER_SELF_ID}\n")


#: oracles run offline on a release's own classes, compiled apart from the drivers (a change to
#: one does not rebuild the stores)
ORACLE_DIR = ROCKETMQ_DIR / "oracle"
#: the releases with 5.5's message RocksDB (rocksdbstore/: RocksDB index, transaction and timer stores)
MESSAGE_ROCKSDB_RELEASES = ("5.5.0",)
#: the releases whose tiered store has IndexStoreFile (RIP-65, 5.2.0+)
TIERED_INDEX_RELEASES = ("5.2.0", "5.3.0", "5.3.1", "5.3.3", "5.5.0")
#: releases run only as a tiered-store oracle (no broker: Maven Central lacks their name server),
#: from the jars of rocketmq-tiered-store alone (TIERED_POM), beside the release they stand with
TIERED_ONLY_RELEASES = {"5.3.0": "5.3.3", "5.3.1": "5.3.3"}
TIERED_POM = ROCKETMQ_DIR / "tiered-pom.xml"


def tiered_jars(release: str) -> Path:
    """The jars of `release`'s tiered store: the release's own (:func:`jars`), or for a
    :data:`TIERED_ONLY_RELEASES` one rocketmq-tiered-store's and its dependencies'."""
    if release not in TIERED_ONLY_RELEASES:
        return jars(release)
    entry = ROOT / f"tiered-jars-{release}-{bh.digest(TIERED_POM, release)}"
    bh.cached(entry, lambda tmp: bh.maven_jars(TIERED_POM, {"rocketmq.version": release}, tmp / "lib",
                                               log=tmp / "maven.log"))
    _prune(entry)
    return entry


def tiered_index_releases() -> list[str]:
    """The :data:`TIERED_INDEX_RELEASES` the tests run: those selected, and each tiered-only one
    whose stand-in release is selected."""
    chosen = selected_releases()
    return [r for r in TIERED_INDEX_RELEASES if r in chosen or TIERED_ONLY_RELEASES.get(r) in chosen]


def tiered_index_oracle(release: str, rows: str, queries: str, slots: int, items: int) -> Path:
    """TieredIndexOracle.java on the release's tiered store classes: the index files it wrote
    for `rows` (TSV: topic, topicId, queueId, offset, size, storeTimestamp, keys), under
    ``<entry>/root/tiered_index_file/`` (compacted ones in ``compacting/``), and ``answers.json``
    for `queries` (TSV: topic, key, maxCount, begin, end). Built once per input into the cache."""
    if release not in TIERED_INDEX_RELEASES:
        raise ValueError(f"{release} has no IndexStoreFile; one of {TIERED_INDEX_RELEASES}")
    source = ORACLE_DIR / "TieredIndexOracle.java"
    classes = oracle_classes(release, source)
    lib = tiered_jars(release) / "lib"
    entry = ROOT / release / f"tiered-index-{bh.digest(source, lib.parent.name, rows, queries, str(slots), str(items))}"

    def build(tmp: Path) -> None:
        (tmp / "rows.tsv").write_text(rows, encoding="utf-8")
        (tmp / "queries.tsv").write_text(queries, encoding="utf-8")
        cp = os.pathsep.join([str(classes), str(lib / "*")])
        bh.run(["java", "-Xmx256m", *JVM_OPENS, "-cp", cp, source.stem, f"in={tmp / 'rows.tsv'}",
                f"queries={tmp / 'queries.tsv'}", f"out={tmp}", f"slots={slots}", f"items={items}"],
               log=tmp / "oracle.log", timeout=300, cwd=tmp)

    (ROOT / release).mkdir(parents=True, exist_ok=True)
    bh.cached(entry, build)
    return entry


def oracle_classes(release: str, source: Path, *helpers: Path) -> Path:
    """`source` (of :data:`ORACLE_DIR`), with the `helpers` it calls, compiled against the
    release's jars, once, into the cache."""
    bh.require_java_and_maven()
    lib = tiered_jars(release) / "lib" if release in TIERED_ONLY_RELEASES else jars(release) / "lib"
    classes = ROOT / f"oracle-{source.stem}-{release}-{bh.digest(source, *helpers, lib.parent.name)}"
    bh.cached(classes, lambda tmp: bh.compile_java([source, *helpers], sorted(lib.glob("*.jar")), tmp / "classes",
                                                   log=tmp / "javac.log"))
    return classes / "classes"


def tiered_segments_oracle(store: BrokerStore, queries: str = "") -> dict[str, Any]:
    """TieredSegmentsOracle.java (5.3+; TieredFlatFileOracle.java on the 5.1-5.2 classes of
    :data:`TIERED_FLATFILE_MANAGER_RELEASES`) on a copy of a tiered scenario's store and file
    system: what the release's tiered store serves from each queue (offsets, every ConsumeQueue
    item and the message it reads), and IndexStoreService's answer to each key query of
    `queries` (TSV: topic, key). Built once per store and queries into the cache."""
    if store.tiered is None:
        raise ValueError(f"{store.folder} has no tiered file system (the tiered scenario has one)")
    old_classes = store.release in TIERED_FLATFILE_MANAGER_RELEASES
    source = ORACLE_DIR / ("TieredFlatFileOracle.java" if old_classes else "TieredSegmentsOracle.java")
    output = ORACLE_DIR / "TieredOracleOutput.java"
    classes = oracle_classes(store.release, source, output)
    lib = jars(store.release) / "lib"
    entry = ROOT / store.release / \
        f"tiered-segments-{bh.digest(source, output, lib.parent.name, store.folder.name, queries)}"

    def build(tmp: Path) -> None:
        (tmp / "root" / "config").mkdir(parents=True)
        meta = store.store / "config" / "tieredStoreMetadata.json"
        if meta.exists():
            shutil.copy2(meta, tmp / "root" / "config" / meta.name)
        copy_store(store.tiered, tmp / "tiered")
        if (store.store / "tiered_index_file").is_dir():
            copy_store(store.store / "tiered_index_file", tmp / "root" / "tiered_index_file")
        (tmp / "queries.tsv").write_text(queries, encoding="utf-8")
        cp = os.pathsep.join([str(classes), str(lib / "*")])
        geometry = [f"slots={TIERED_SMALL_INDEX[0]}", f"items={TIERED_SMALL_INDEX[1]}"] if old_classes else []
        bh.run(["java", "-Xmx256m", *JVM_OPENS, f"-Duser.home={tmp}", "-cp", cp, source.stem,
                f"root={tmp / 'root'}", f"tiered={tmp / 'tiered'}", f"broker={BROKER_NAME}",
                f"cluster={CLUSTER_NAME}", f"out={tmp / 'segments.json'}", f"queries={tmp / 'queries.tsv'}",
                *geometry],
               log=tmp / "oracle.log", timeout=300, cwd=tmp)
        shutil.rmtree(tmp / "tiered")
        shutil.rmtree(tmp / "root")

    bh.cached(entry, build)
    return json.loads((entry / "segments.json").read_text(encoding="utf-8"))


def store_load_oracle(release: str, store: Path, scenario: str = "clean") -> bool:
    """StoreLoad.java: whether the release's DefaultMessageStore.load() accepts `store` (a copy:
    load recovers it), configured as the harness's brokers are (:data:`BROKER_CONF` with the
    scenario's lines). The broker would not start where this is False."""
    classes = oracle_classes(release, ORACLE_DIR / "StoreLoad.java")
    lib = jars(release) / "lib"
    work = store.parent / f"{store.name}-load"
    work.mkdir(exist_ok=True)
    extra = scenario_conf(scenario, release).replace("{store}", str(store))
    (work / "broker.conf").write_text(BROKER_CONF.format(broker_ip="127.0.0.1", store=store, extra=extra))
    cp = os.pathsep.join([str(classes), str(lib / "*")])
    bh.run(["java", "-Xmx256m", *JVM_OPENS, f"-Duser.home={work}", f"-Drocketmq.home.dir={work}", "-cp", cp,
            "StoreLoad", f"conf={work / 'broker.conf'}", f"out={work / 'load.json'}"],
           log=work / "load.log", timeout=120, cwd=work)
    return bool(json.loads((work / "load.json").read_text())["loaded"])


def store_query_oracle(release: str, store: Path, queries: list[tuple[str, str, int, int, int]],
                       scenario: str = "clean") -> list[list[tuple[int, int]]]:
    """StoreQuery.java: the release's DefaultMessageStore.queryMessage of each (topic, key, maxNum,
    begin, end) of `queries` on `store` (a copy: load() recovers it), configured as the harness's
    brokers are: for each query, the (PHYSICALOFFSET, TOTALSIZE) of each record returned, in
    order."""
    classes = oracle_classes(release, ORACLE_DIR / "StoreQuery.java", ORACLE_DIR / "StoreLoad.java")
    lib = jars(release) / "lib"
    work = store.parent / f"{store.name}-query"
    work.mkdir(exist_ok=True)
    extra = scenario_conf(scenario, release).replace("{store}", str(store))
    (work / "broker.conf").write_text(BROKER_CONF.format(broker_ip="127.0.0.1", store=store, extra=extra))
    (work / "queries.tsv").write_text("".join("\t".join(map(str, q)) + "\n" for q in queries), encoding="utf-8")
    cp = os.pathsep.join([str(classes), str(lib / "*")])
    bh.run(["java", "-Xmx256m", *JVM_OPENS, f"-Duser.home={work}", f"-Drocketmq.home.dir={work}", "-cp", cp,
            "StoreQuery", f"conf={work / 'broker.conf'}", f"queries={work / 'queries.tsv'}",
            f"out={work / 'answers.txt'}"],
           log=work / "query.log", timeout=180, cwd=work)
    lines = (work / "answers.txt").read_text(encoding="utf-8").split("\n")[:len(queries)]
    return [[(int(o), int(n)) for o, n in (pair.split(":") for pair in line.split())] for line in lines]


#: the releases whose static topic classes StaticTopicMapping.java reaches (remoting.protocol, 5.1+)
STATIC_TOPIC_RELEASES = ("5.1.4", "5.2.0", "5.3.3", "5.5.0")


def static_topic_mapping_oracle(release: str, seed: int, folder: Path) -> list[dict[str, Any]]:
    """StaticTopicMapping.java: a config/topicQueueMapping.json the release's own classes write into
    `folder` (mappings drawn from `seed`), and what its decoder reads back from it, with each
    item's offset conversions at probe offsets (mapping.json)."""
    classes = oracle_classes(release, ORACLE_DIR / "StaticTopicMapping.java")
    cp = os.pathsep.join([str(classes), str(jars(release) / "lib" / "*")])
    folder.mkdir(parents=True, exist_ok=True)
    bh.run(["java", "-Xmx128m", "-cp", cp, "StaticTopicMapping", f"seed={seed}", f"dir={folder}"],
           log=folder / "oracle.log", timeout=120, cwd=folder)
    return json.loads((folder / "mapping.json").read_text(encoding="utf-8"))


def scenario_key(release: str, scenario: str) -> str:
    return bh.digest(*sources(release), POM, BROKER_CONF, NAMESRV_CONF, LOGBACK, release, RELEASES[release], scenario,
                     broker_ip(release, scenario), scenario_conf(scenario, release))


def rocketmq_store(release: str, scenario: str, *, _crashed_again: bool = False) -> BrokerStore:
    """The finished `scenario` of `release`, built on first use (Java and Maven needed). A
    restart the release refuses because the crash left an empty last mapped file (before 5.1.3
    MappedFileQueue.doLoad fails on it, and the broker exits: tests/brokers/test_rocketmq_store_load.py)
    crashes the source store again, once, at another moment."""
    if release not in RELEASES:
        raise ValueError(f"unknown release {release!r}; one of {sorted(RELEASES)}")
    if scenario not in scenarios(release):
        raise ValueError(f"{release} has no scenario {scenario!r}; it has {scenarios(release)}")
    bh.require_java_and_maven()
    entry = ROOT / release / f"{scenario}-{scenario_key(release, scenario)}"
    if not (entry / ".done").exists():
        classes = driver(release) / "classes"
        lib = jars(release) / "lib"
        crash = rocketmq_store(release, RESTARTS[scenario]) if scenario in RESTARTS else None
        source = {"source_folder": str(crash.folder)} if crash is not None else {}

        def build(tmp: Path) -> None:
            t0 = time.monotonic()
            if crash is not None:
                copy_store(crash.store, tmp / "store")
            spec = {"release": release, "client": RELEASES[release], "scenario": scenario, "folder": str(tmp),
                    "lib": str(lib), "classes": str(classes), "broker_ip": broker_ip(release, scenario), **source}
            first_failure = ""
            for attempt in (1, 2):   # a broker run can fail on timing (a route not yet registered): once more
                try:
                    bh.run([*bh.loopback_only(), sys.executable, __file__, "_run", json.dumps(spec)],
                           log=tmp / "harness.log", timeout=600)
                    lost = disturbed(json.loads((tmp / "summary.json").read_text()))
                    if lost and attempt == 1:
                        raise bh.HarnessError("disturbed: " + "; ".join(lost))
                    break
                except bh.HarnessError:
                    if attempt == 2:
                        raise
                    first_failure = traceback.format_exc(limit=1)[-2000:]
                    failed = tmp.with_name(tmp.name.replace(".partial", ".failed"))   # its logs, for a look
                    shutil.rmtree(failed, ignore_errors=True)
                    tmp.rename(failed)
                    shutil.rmtree(failed / "store", ignore_errors=True)
                    tmp.mkdir()
                    if crash is not None:
                        copy_store(crash.store, tmp / "store")
            summary = json.loads((tmp / "summary.json").read_text())
            summary["timings"]["scenario_total_s"] = round(time.monotonic() - t0, 2)
            lost = disturbed(summary)
            if lost:
                raise bh.HarnessError(f"{release} {scenario}: the run was disturbed twice (a loaded machine): "
                                      + "; ".join(lost))
            if first_failure:
                summary["first_attempt_failed"] = first_failure
            (tmp / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False))

        try:
            bh.cached(entry, build)
        except bh.HarnessError:
            if crash is None or _crashed_again or not _refused_load(entry):
                raise
            shutil.rmtree(crash.folder, ignore_errors=True)
            return rocketmq_store(release, scenario, _crashed_again=True)
        _prune(entry)
    return _load(entry)


#: what a driver step records as skipped when the machine, not the release, stopped it: a request
#: timed out or was refused under load, or the broker's answers kept failing. A store with such a
#: step (of :data:`REQUIRED_STEPS`) lacks what its tests judge, so the build runs again, and fails
#: if the second run is disturbed as well.
DISTURBED = re.compile(r"Remoting(Timeout|SendRequest|TooMuchRequest|Connect)Exception|InvocationTargetException"
                       r"|broker answers failed")
#: the steps the tests require where the release has them (a step a release lacks, such as an IPv6
#: name server address, is skipped with the release's own exception, which is no disturbance)
REQUIRED_STEPS = ("batch_cq_topic", "compaction_topic", "pop_consumer", "answers")


def disturbed(summary: dict[str, Any]) -> list[str]:
    """The skipped steps of :data:`REQUIRED_STEPS` in a build's summary that :data:`DISTURBED`
    blames on the machine, as "step: reason"."""
    return [f"{step}: {reason}"[:300] for step, reason in summary.get("skipped", {}).items()
            if step in REQUIRED_STEPS and DISTURBED.search(str(reason))]


#: what MappedFileQueue.load logs before it fails on a file of another length (an empty last file
#: a crash left, before 5.1.3), after which the broker exits
REFUSED_LOAD = "length not matched message store config value"


def _refused_load(entry: Path) -> bool:
    """Whether the failed build of `entry` (its .partial and .failed folders) logged REFUSED_LOAD."""
    for folder in (entry.with_name(entry.name + ".partial"), entry.with_name(entry.name + ".failed")):
        for log in (folder / "logs").rglob("*.log") if (folder / "logs").is_dir() else []:
            if REFUSED_LOAD in log.read_text(encoding="utf-8", errors="replace"):
                return True
    return False


def _queue_units(folder: Path) -> int:
    """Units written in a ConsumeQueue folder (20-byte units not all zero), read while its broker
    may be writing (0 while it is absent)."""
    n = 0
    for f in sorted(folder.iterdir()) if folder.is_dir() else []:
        data = f.read_bytes()
        n += sum(1 for k in range(0, len(data) - 19, 20) if data[k:k + 20] != bytes(20))
    return n


def _lines(path: Path) -> int:
    """Lines in a file a driver appends to (0 while it is absent)."""
    return path.read_text(encoding="utf-8").count("\n") if path.exists() else 0


def copy_store(src: Path, dst: Path) -> None:
    """Copy a store directory keeping holes: a 5.x store's timerlog and timerwheel are sparse
    files of 100 MiB and 37 MiB that a plain copy would write out in full."""
    if shutil.which("cp"):
        bh.run(["cp", "-a", "--sparse=always", src, dst], log=dst.parent / "copy.log", timeout=300)
        (dst.parent / "copy.log").unlink(missing_ok=True)
    else:
        shutil.copytree(src, dst, symlinks=True)


def _prune(entry: Path) -> None:
    """Remove the finished entries of the same kind (jars, driver, or scenario of one release) made
    by other sources or configurations (their keys differ), so the cache holds one of each."""
    kind = entry.name.rsplit("-", 1)[0]
    for old in entry.parent.glob(kind + "-*"):
        # the same kind only: "dledger-<key>" must not take "dledger-crash-<key>", nor "rocksdb-<key>"
        # "rocksdb-index-<key>" (a prefix of another scenario's name)
        if old.name.endswith(".lock") or old.name.split(".", 1)[0].rsplit("-", 1)[0] != kind:
            continue
        try:
            stale = time.time() - old.stat().st_mtime > 3600   # a build interrupted an hour ago, not one running
        except FileNotFoundError:
            continue
        if old.name.endswith((".failed", ".partial")) and not old.name.startswith(entry.name + ".") and stale:
            shutil.rmtree(old, ignore_errors=True)
        elif old != entry and old.is_dir() and not old.name.endswith(".partial") and (old / ".done").exists():
            shutil.rmtree(old, ignore_errors=True)
            old.with_name(old.name + ".lock").unlink(missing_ok=True)


def _load(entry: Path) -> BrokerStore:
    summary = json.loads((entry / "summary.json").read_text())
    answers: dict[str, Any] = {}
    if (entry / "answers.json").exists():
        answers["broker"] = json.loads((entry / "answers.json").read_text(encoding="utf-8"))
    for name in ("sends", "acks"):
        p = entry / f"{name}.jsonl"
        if p.exists():
            answers[name] = [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    if (entry / "workload.json").exists():
        answers["workload"] = json.loads((entry / "workload.json").read_text(encoding="utf-8"))
    return BrokerStore(release=summary["release"], client=summary["client"], scenario=summary["scenario"], folder=entry,
                       store=entry / "store", answers=answers, decoded=entry / "decoded.jsonl",
                       checkpoint=json.loads((entry / "checkpoint.json").read_text()),
                       reached=summary.get("reached", {}), skipped=summary.get("skipped", {}),
                       timings=summary.get("timings", {}), broker_ip=summary.get("broker_ip", "127.0.0.1"))


# -- one scenario, inside the namespace -------------------------------------------------------

class _Run:
    def __init__(self, spec: dict[str, Any]):
        self.spec = spec
        self.release: str = spec["release"]
        self.scenario: str = spec["scenario"]
        self.folder = Path(spec["folder"])
        self.store = self.folder / "store"
        self.logs = self.folder / "logs"
        self.ip: str = spec["broker_ip"]
        self.classpath = os.pathsep.join([spec["classes"], str(Path(spec["lib"]) / "*")])
        self.procs: list[Any] = []
        self.timings: dict[str, float] = {}
        self.reached: dict[str, Any] = {}
        self.skipped: dict[str, str] = {}
        self.env = {**os.environ, "ROCKETMQ_HOME": str(self.folder)}
        self.broker_addr = f"{self.ip}:{BROKER_PORT}"

    def java(self, main: str, *args: str, heap: str = "192m", logback: str = "driver") -> list[str]:
        return ["java", f"-Xmx{heap}", "-Xss512k", "-XX:+UseSerialGC", *JVM_OPENS,
                f"-Duser.home={self.folder}", f"-Drocketmq.home.dir={self.folder}",
                f"-Drocketmq.client.logRoot={self.logs}", "-Drocketmq.client.logLevel=WARN",
                f"-Dlogback.configurationFile={self.folder / 'conf' / f'logback_{logback}.xml'}",
                "-Drocketmq.client.rebalance.waitInterval=1000",   # clients rebalance each second, not 20 s
                "-Djava.net.preferIPv4Stack=false", "-cp", self.classpath, main, *args]

    def write_conf(self, extra: str | None = None) -> None:
        """broker.conf with the scenario's lines (`extra`: these instead), the name server's and
        the logback files."""
        conf = self.folder / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        extra = scenario_conf(self.scenario, self.release) if extra is None else extra
        self.dledger_on = "enableDLegerCommitLog=true" in extra
        extra = extra.replace("{store}", str(self.store)).replace("{tiered}", str(self.folder / TIERED_FOLDER))
        (self.folder / "broker.conf").write_text(BROKER_CONF.format(broker_ip=self.ip, store=self.store, extra=extra))
        (self.folder / "namesrv.conf").write_text(NAMESRV_CONF)
        for name, level in (("broker", "INFO"), ("namesrv", "INFO"), ("driver", "WARN")):
            log = self.logs / f"{name}_logback.log"
            (conf / f"logback_{name}.xml").write_text(LOGBACK.format(log=log, level=level))

    def start_namesrv(self) -> None:
        t = time.monotonic()
        p = bh.start(self.java("org.apache.rocketmq.namesrv.NamesrvStartup", "-c", str(self.folder / "namesrv.conf"),
                               heap="128m", logback="namesrv"), log=self.logs / "namesrv.out", env=self.env,
                     cwd=self.folder)
        self.procs.append(p)
        bh.wait_for_port(NAMESRV_PORT, p, self.logs / "namesrv.out")
        self.namesrv = p
        self.timings["namesrv_start_s"] = round(time.monotonic() - t, 2)

    def start_broker(self, label: str) -> None:
        check_disk(self.folder)
        t = time.monotonic()
        p = bh.start(["java", "-Xms128m", "-XX:MaxDirectMemorySize=256m", *self.broker_jvm_flags(),
                      *self.java("org.apache.rocketmq.broker.BrokerStartup", "-c", str(self.folder / "broker.conf"),
                                 heap="384m", logback="broker")[1:]],
                     log=self.logs / f"broker-{label}.out", env=self.env, cwd=self.folder)
        self.procs.append(p)
        bh.wait_for_port(BROKER_PORT, p, self.logs / f"broker-{label}.out", timeout=120)
        self.broker = p
        if self.dledger_on:   # the broker takes messages once DLedger elected it
            # (4.x logs through the harness's logback file, 5.x through its own, rocketmqlogs/broker.log)
            bh.wait_for_line([self.logs / "broker_logback.log", self.logs / "rocketmqlogs" / "broker.log"],
                             "Finish to change to master", p, timeout=120 if self.scenario == "dledger-group" else 60)
        time.sleep(1.0)   # the first registration at the name server
        self.timings[f"broker_start_{label}_s"] = round(time.monotonic() - t, 2)

    def broker_jvm_flags(self) -> list[str]:
        """JVM flags of this release's broker beyond the common ones. 5.1-5.2's tiered store
        (TieredStoreExecutor) sizes its commit pool max(16, 4 x processors), and each flat file's
        commit task waits, on a thread of that pool, for its segment's upload, which PosixFileSegment
        queues on the same pool: with more flat files than threads committing at once every thread
        waits for a task none is left to run, and the broker never stops (a 5.1.4 jstack on two
        cores: all 16 TieredCommitExecutor threads in TieredFlatFile.commit, the tiered scenario's
        26 queues have 52 flat files). 16 processors make the pool 64 threads, more than the flat
        files; the files written are the same."""
        if self.scenario == "tiered" and self.release in TIERED_FLATFILE_MANAGER_RELEASES:
            return ["-XX:ActiveProcessorCount=16"]
        return []

    def driver(self, mode: str, timeout: float, **kw: str) -> None:
        t = time.monotonic()
        args = [f"{k}={v}" for k, v in kw.items()]
        bh.run(self.java("RocketMQDriver", mode, *args), log=self.logs / f"driver-{mode}.out", timeout=timeout,
               env=self.env, cwd=self.folder)
        self.timings[f"{mode}_s"] = round(time.monotonic() - t, 2)

    def common(self) -> dict[str, str]:
        return {"namesrv": f"127.0.0.1:{NAMESRV_PORT}", "broker": self.broker_addr, "brokerName": BROKER_NAME}

    def workload(self) -> None:
        kw = {**self.common(), "out": str(self.folder)}
        if version_tuple(self.release) >= LMQ_SINCE:
            kw["lmq"] = "true"
        if version_tuple(self.release) >= (5, 0, 0):
            kw["timer"] = "true"
            kw["longGroup"] = LONG_GROUP
        else:
            self.skipped["long_retry_topic"] = "4.x writes the topic length in one byte (no v2 records)"
        if self.scenario in ("crash", "recovered") and no_ipv6_reason(self.release):
            self.skipped["ipv6_store_host"] = no_ipv6_reason(self.release)
        self.driver("workload", 240, **kw)
        w = json.loads((self.folder / "workload.json").read_text(encoding="utf-8"))
        self.reached.update(w["reached"])
        self.skipped.update(w["skipped"])
        self.groups = ",".join([*w["push_groups"], "G_pull"])
        if any(p.name == "LegacyTransactions.java" for p in sources(self.release)):
            t = time.monotonic()
            bh.run(self.java("LegacyTransactions", f"namesrv=127.0.0.1:{NAMESRV_PORT}", f"out={self.folder}"),
                   log=self.logs / "driver-legacy.out", timeout=120, env=self.env, cwd=self.folder)
            self.timings["legacy_transactions_s"] = round(time.monotonic() - t, 2)
            legacy = json.loads((self.folder / "legacy.json").read_text(encoding="utf-8"))
            if "transactions" in legacy:
                self.reached["transactions"] = legacy["transactions"]
                self.skipped.pop("transactions", None)
            else:
                self.skipped["transactions"] = f"{self.skipped.get('transactions')}; old API: {legacy.get('error')}"
        if any(p.name == "PopConsumer.java" for p in sources(self.release)):
            t = time.monotonic()
            bh.run(self.java("PopConsumer", f"namesrv=127.0.0.1:{NAMESRV_PORT}", f"broker={self.broker_addr}",
                             f"out={self.folder}"), log=self.logs / "driver-pop.out", timeout=120, env=self.env,
                   cwd=self.folder)
            self.timings["pop_consumer_s"] = round(time.monotonic() - t, 2)
            pop = json.loads((self.folder / "pop.json").read_text(encoding="utf-8"))
            if "pop_consumer" in pop:
                self.reached["pop_consumer"] = pop["pop_consumer"]
                self.groups += ",G_pop"
            else:
                self.skipped["pop_consumer"] = pop.get("error", "?")
        else:
            self.skipped["pop_consumer"] = "5.x only (MessageRequestMode.POP)"
        if any(p.name == "FeatureTopics.java" for p in sources(self.release)):
            t = time.monotonic()
            compaction = str(version_tuple(self.release) >= (5, 1, 0)).lower()
            bh.run(self.java("FeatureTopics", f"namesrv=127.0.0.1:{NAMESRV_PORT}", f"broker={self.broker_addr}",
                             f"out={self.folder}", f"compaction={compaction}"), log=self.logs / "driver-features.out",
                   timeout=120, env=self.env, cwd=self.folder)
            self.timings["feature_topics_s"] = round(time.monotonic() - t, 2)
            features = json.loads((self.folder / "features.json").read_text(encoding="utf-8"))
            self.reached.update(features["reached"])
            self.skipped.update(features["skipped"])
        else:
            self.skipped["batch_cq_topic"] = "5.x only (BatchConsumeQueue)"
            self.skipped["compaction_topic"] = "5.1.0+ only (cleanup.policy)"

    def answers(self, groups: str) -> None:
        """The broker's answers; again (up to 3 times, 5 s apart) while some failed, as right after a
        restart, before the broker's registration at the name server completed (5.2.0 took 12 s)."""
        out = self.folder / "answers.json"
        for attempt in range(1, 4):
            self.driver("answers", 240, **self.common(), store=str(self.java_view()), out=str(out), groups=groups)
            a = json.loads(out.read_text(encoding="utf-8"))
            failed = (sum("error" in q for q in a["queues"]) + sum("error" in v for v in a["views"])
                      + sum("broker_error" in q for q in a["key_queries"]))
            self.timings["answers_attempts"] = attempt
            if not failed:
                return
            time.sleep(5)
        self.skipped["answers"] = f"{failed} broker answers failed 3 times (see answers.json)"

    def stop_clean(self, label: str) -> None:
        """Stop the broker as an operator does (SIGTERM, its shutdown hooks run). A broker still
        up after :data:`CLEAN_STOP_S` is killed, and the build fails: its files would be a
        killed broker's, not the clean stop the scenario's tests judge (a 5.1.4 tiered broker
        took more than 90 s to stop on a machine loaded by other builds)."""
        t = time.monotonic()
        rc = bh.stop(self.broker, timeout=CLEAN_STOP_S, stuck=self.logs / f"broker-{label}-stuck.jstack")
        self.timings[f"broker_stop_{label}_s"] = round(time.monotonic() - t, 2)
        self.reached[f"broker_exit_{label}"] = rc
        if time.monotonic() - t >= CLEAN_STOP_S:
            raise RuntimeError(f"{self.release} {self.scenario}: the broker did not stop within {CLEAN_STOP_S:.0f} s "
                               f"of SIGTERM and was killed; not a clean stop")

    def _start_tail(self, main: str, log: str, *args: str) -> Any:
        """A producer driver (RocketMQDriver's tail, TimerTail) started against this run's broker."""
        p = bh.start(self.java(main, *args), log=self.logs / log, env=self.env, cwd=self.folder)
        self.procs.append(p)
        return p

    def _watch(self, tails: list[tuple[Any, str]], until: Any) -> None:
        """Wait (at most 90 s) until `until()` holds; a producer of `tails` that exits first is an error."""
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not until():
            for p, log in tails:
                if p.poll() is not None:
                    raise bh.HarnessError(f"a tail producer exited early\n{bh.tail(self.logs / log)}")
            time.sleep(0.05)

    def _tail(self, tails: list[tuple[Any, str]]) -> Path:
        """RocketMQDriver's tail, one message after another until the broker stops answering, run
        until 200 of its sends were acknowledged (acks.jsonl, returned)."""
        args = [f"{k}={v}" for k, v in self.common().items()] + [f"out={self.folder}"]
        tails.append((self._start_tail("RocketMQDriver", "driver-tail.out", "tail", *args), "driver-tail.out"))
        acks = self.folder / "acks.jsonl"
        self._watch(tails, lambda: _lines(acks) >= 200)
        return acks

    def crash(self) -> None:
        """Kill the broker with SIGKILL while RocketMQDriver's tail sends (after 200 of its acks);
        on 5.x TimerTail.java sends timer messages from TIMER_TAIL_S before the tail starts, so
        the timer store is enqueueing and delivering at the kill."""
        tails: list[tuple[Any, str]] = []
        timers = self.folder / "timer-acks.jsonl"
        t0 = time.monotonic()
        if version_tuple(self.release) >= (5, 0, 0):
            args = (f"namesrv={self.common()['namesrv']}", f"out={self.folder}")
            tails.append((self._start_tail("TimerTail", "driver-timer-tail.out", *args), "driver-timer-tail.out"))
            self._watch(tails, lambda: time.monotonic() - t0 >= TIMER_TAIL_S and _lines(timers) >= TIMER_TAIL_S * 10)
        acks = self._tail(tails)
        bh.kill_group(self.broker.pid)      # kill -9 while the producers are sending
        self.broker.wait()
        self.reached["crash"] = f"broker killed with SIGKILL after {_lines(acks)} tail acks"
        if len(tails) > 1:
            self.reached["crash_timers"] = f"{_lines(timers)} timer messages sent over {time.monotonic() - t0:.1f} s"
        for p, _ in tails:
            try:
                p.wait(timeout=60)
            except Exception:
                bh.kill_group(p.pid)
                p.wait()
        self.reached["abort_file_left"] = (self.store / "abort").exists()

    def mixed_tail(self) -> None:
        """RocketMQDriver's tail into the DLedger CommitLog of the dledger-mixed scenario, stopped
        (its JVM killed, the broker left running) after 200 acks."""
        tails: list[tuple[Any, str]] = []
        acks = self._tail(tails)
        for p, _ in tails:
            bh.kill_group(p.pid)
            p.wait()
        self.reached["dledger_tail"] = f"{_lines(acks)} messages sent into the ledger"

    def java_view(self) -> Path:
        """The store as the driver reads it: the store itself, or for a CommitLog over several
        folders (multipath: the driver reads {store}/commitlog; dledger-mixed: commitlog/ and the
        ledger's data/) a folder of links to the store's entries whose commitlog/ links every
        CommitLog file of them all, made afresh at each call."""
        if self.scenario == "multipath":
            folders = [self.store / f for f in COMMITLOG_PATHS]
        elif self.scenario == "dledger-mixed":   # the plain files below dividedCommitlogOffset, the ledger's above
            folders = [self.store / "commitlog", self.store / f"dledger-{DLEDGER_SELF_ID}" / "data"]
        else:
            return self.store
        view = self.folder / "java-view"
        shutil.rmtree(view, ignore_errors=True)
        (view / "commitlog").mkdir(parents=True)
        for entry in self.store.iterdir():
            if entry not in folders and entry.name != f"dledger-{DLEDGER_SELF_ID}":
                os.symlink(entry, view / entry.name)
        for folder in folders:
            for f in sorted(folder.iterdir()) if folder.is_dir() else []:
                os.symlink(f, view / "commitlog" / f.name)
        return view

    def decode(self) -> None:
        self.driver("decode", 240, store=str(self.java_view()), out=str(self.folder))
        shutil.rmtree(self.folder / "java-view", ignore_errors=True)
        if self.scenario.startswith("dledger"):
            self.ledger()
        if (self.store / "timerwheel").exists():
            self.timer_state()

    def timer_state(self) -> None:
        """The release's timer classes (TimerState.java) on a copy of the timer files: timers.json.
        They open every file read-write, and TimerWheel sets the file's length."""
        t = time.monotonic()
        copy = self.folder / "timer-copy"
        (copy / "config").mkdir(parents=True)
        try:
            for name in ("timerwheel", "timerlog"):
                copy_store(self.store / name, copy / name)
            for name in ("timercheck", "timermetrics"):
                if (self.store / "config" / name).exists():
                    shutil.copy2(self.store / "config" / name, copy / "config" / name)
            logs = sorted((self.store / "timerlog").iterdir())
            size = logs[0].stat().st_size if logs else TIMER_LOG_FILE_SIZE
            bh.run(self.java("TimerState", f"root={copy}", f"precisionMs={TIMER_PRECISION_MS}",
                             f"timerLogFileSize={size}", f"out={self.folder / 'timers.json'}"),
                   log=self.logs / "driver-timer.out", timeout=180, env=self.env, cwd=self.folder)
        finally:
            shutil.rmtree(copy, ignore_errors=True)
        self.timings["timer_state_s"] = round(time.monotonic() - t, 2)

    def ledger(self) -> None:
        """DLedger's own store (DLedgerLedger.java: load, recover, get every entry) on a copy of
        the ledger folder: ledger.json; in the dledger-group scenario each follower's too
        (ledger-n1.json, ...)."""
        t = time.monotonic()
        group = self.scenario == "dledger-group"
        nodes = {DLEDGER_SELF_ID: self.store, **({n: self.node_store(n) for n in GROUP_NODES if n != DLEDGER_SELF_ID}
                                                 if group else {})}
        for node, store in nodes.items():
            copy = self.folder / "ledger-copy" / f"dledger-{node}"
            copy.parent.mkdir(exist_ok=True)
            copy_store(store / f"dledger-{node}", copy)
            out = self.folder / ("ledger.json" if node == DLEDGER_SELF_ID else f"ledger-{node}.json")
            try:
                bh.run(self.java("DLedgerLedger", f"ledger={copy}", f"selfId={node}", f"group={DLEDGER_GROUP}",
                                 f"peers={GROUP_PEERS if group else DLEDGER_PEERS}", f"fileSize={COMMITLOG_FILE_SIZE}",
                                 f"out={out}"),
                       log=self.logs / f"driver-ledger-{node}.out", timeout=120, env=self.env, cwd=self.folder)
            finally:
                shutil.rmtree(copy.parent, ignore_errors=True)
        self.timings["ledger_s"] = round(time.monotonic() - t, 2)

    def node_store(self, node: str) -> Path:
        return group_node_home(self.folder, node) / "store"

    def start_followers(self) -> None:
        """The dledger-group scenario's other nodes, each a broker with its own folder (conf,
        logs, store) and ports, started before n0 so that n0 finds a quorum."""
        t = time.monotonic()
        self.followers = {}
        for node, (port, _) in GROUP_NODES.items():
            if node == DLEDGER_SELF_ID:
                continue
            home = group_node_home(self.folder, node)
            (home / "conf").mkdir(parents=True, exist_ok=True)
            (home / "logs").mkdir(exist_ok=True)
            conf = BROKER_CONF.format(broker_ip=self.ip, store=self.node_store(node), extra=group_node_conf(node))
            (home / "broker.conf").write_text(conf.replace(f"listenPort={BROKER_PORT}\n", f"listenPort={port}\n"))
            (home / "conf" / "logback_broker.xml").write_text(
                LOGBACK.format(log=home / "logs" / "broker_logback.log", level="INFO"))
            cmd = ["java", "-Xms128m", "-Xmx384m", "-XX:MaxDirectMemorySize=256m", "-Xss512k", "-XX:+UseSerialGC",
                   *JVM_OPENS, f"-Duser.home={home}", f"-Drocketmq.home.dir={home}",
                   f"-Dlogback.configurationFile={home / 'conf' / 'logback_broker.xml'}",
                   "-Djava.net.preferIPv4Stack=false", "-cp", self.classpath,
                   "org.apache.rocketmq.broker.BrokerStartup", "-c", str(home / "broker.conf")]
            p = bh.start(cmd, log=home / "logs" / "broker.out", env={**self.env, "ROCKETMQ_HOME": str(home)},
                         cwd=home)
            self.procs.append(p)
            self.followers[node] = p
        for node, p in self.followers.items():
            bh.wait_for_port(GROUP_NODES[node][0], p, group_node_home(self.folder, node) / "logs" / "broker.out",
                             timeout=120)
        self.timings["followers_start_s"] = round(time.monotonic() - t, 2)

    def stop_followers(self) -> None:
        """Let the followers catch up with the leader, then stop them cleanly."""
        time.sleep(3.0)
        for node, p in self.followers.items():
            self.reached[f"broker_exit_{node}"] = bh.stop(p, timeout=90)

    def await_revive(self) -> None:
        """Keep the restarted broker up until the checkpoints the clean run left in flight are due
        and revived: the latest held message's popTime + invisibleTime (its POP_CK property:
        ExtraInfoUtil, "startOffset popTime invisibleTime reviveQid ...") plus REVIVE_MARGIN_S."""
        pop = json.loads((Path(self.spec["source_folder"]) / "pop.json").read_text(encoding="utf-8"))
        held = pop.get("held") or []
        if not held:
            raise bh.HarnessError(f"the clean run left no pop checkpoint in flight: {pop}")
        due_ms = max(int(h["popCk"].split()[1]) + int(h["popCk"].split()[2]) for h in held)
        wait = due_ms / 1000 + REVIVE_MARGIN_S - time.time()
        self.reached["revive_wait_s"] = round(max(wait, 0.0), 1)
        self.reached["held_in_flight"] = len(held)
        if wait > 0:
            time.sleep(min(wait, 240.0))
        # a restart long after the due time first reads the wheel's missed slots, then revives:
        # wait (at most REVIVE_POLL_S) until the retry queue holds a unit for each held message
        queue = self.store / "consumequeue" / "%RETRY%G_pop_hold_TopicOrder" / "0"
        t = time.monotonic()
        while time.monotonic() - t < REVIVE_POLL_S and _queue_units(queue) < len(held):
            time.sleep(0.5)
        self.reached["revive_poll_s"] = round(time.monotonic() - t, 1)

    def await_upload(self) -> None:
        """Keep the broker up until its MessageStoreDispatcher uploaded the workload to the tiered
        store: :data:`TIERED_UPLOAD_WAIT_S`, then while the tiered files still grow, until they
        stayed the same for :data:`TIERED_SETTLED_S` (longer than a dispatcher round; a loaded
        machine slows the rounds), at most :data:`TIERED_UPLOAD_MAX_S` in all; record the segment
        files it wrote."""
        def seen() -> tuple[int, int]:
            files = [p for p in (self.folder / TIERED_FOLDER).rglob("*") if p.is_file()]
            return len(files), sum(p.stat().st_size for p in files)

        t0 = time.monotonic()
        time.sleep(TIERED_UPLOAD_WAIT_S)
        last, since = seen(), time.monotonic()
        while time.monotonic() - since < TIERED_SETTLED_S and time.monotonic() - t0 < TIERED_UPLOAD_MAX_S:
            time.sleep(2.0)
            now = seen()
            if now != last:
                last, since = now, time.monotonic()
        self.reached["tiered_segments"], self.reached["tiered_bytes"] = last
        self.timings["tiered_upload_wait_s"] = round(time.monotonic() - t0, 1)

    def go(self) -> None:
        t0 = time.monotonic()
        self.write_conf()
        try:
            self.start_namesrv()
            if self.scenario in RESTARTS:
                self.reached["abort_file_before_restart"] = (self.store / "abort").exists()
                if RESTARTS[self.scenario].endswith("crash") and no_ipv6_reason(self.release):
                    self.skipped["ipv6_store_host"] = no_ipv6_reason(self.release)
                self.start_broker("restart")
                time.sleep(2.0)   # let dispatch catch up after recovery
                if self.scenario == "revived":
                    self.await_revive()
                long_group = [LONG_GROUP] if version_tuple(self.release) >= (5,) else []
                pop_group = ["G_pop"] if version_tuple(self.release) >= (5,) else []
                self.answers(",".join(["G_push", "G_pull", *long_group, *pop_group]))
                self.stop_clean("restart")
            elif self.scenario == "dledger-mixed":
                self.write_conf("")   # a plain CommitLog first
                self.start_broker("first")
                self.workload()
                self.stop_clean("first")
                self.write_conf()     # then DLedger on the same store
                self.start_broker("dledger")
                self.mixed_tail()
                self.answers(self.groups)
                self.stop_clean("dledger")
            else:
                if self.scenario == "dledger-group":
                    self.start_followers()
                self.start_broker("first")
                self.workload()
                if self.scenario == "tiered":
                    self.await_upload()
                if self.scenario in CLEAN_STOPS:
                    self.answers(self.groups)
                    if self.scenario == "dledger-group":
                        self.stop_followers()
                    self.stop_clean("first")
                else:
                    self.crash()
            bh.stop(self.namesrv, timeout=30)
        finally:
            for p in self.procs:
                if p.poll() is None:
                    bh.kill_group(p.pid)
                    p.wait()
        self.decode()
        self.timings["scenario_run_s"] = round(time.monotonic() - t0, 2)
        summary = {"release": self.release, "client": self.spec["client"], "scenario": self.scenario,
                   "broker_ip": self.ip, "reached": self.reached, "skipped": self.skipped, "timings": self.timings}
        (self.folder / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False))


def build_all(releases: list[str], wanted: list[str]) -> None:
    """Build every (release, scenario) of `wanted` the release has, printing progress and wall times."""
    for release in releases:
        t = time.monotonic()
        jars(release)
        driver(release)
        print(f"{release}: jars and driver ready in {time.monotonic() - t:.1f} s", flush=True)
        for scenario in [s for s in wanted if s in scenarios(release)]:
            t = time.monotonic()
            s = rocketmq_store(release, scenario)
            facts = s.store_facts()
            facts["topics"] = len(facts["topics"])
            print(f"{release} {scenario}: {time.monotonic() - t:.1f} s  reached={sorted(s.reached)} "
                  f"skipped={sorted(s.skipped)} store={facts}", flush=True)


def main(argv: list[str]) -> None:
    """The command line of tests/brokers/build_rocketmq.py (and of this module)."""
    import argparse

    ap = argparse.ArgumentParser(description="build the real-RocketMQ stores of the tests into the cache")
    ap.add_argument("--release", action="append", choices=sorted(RELEASES, key=version_tuple))
    ap.add_argument("--scenario", action="append", choices=ALL_SCENARIOS)
    a = ap.parse_args(argv)

    def _stop(signum, frame):   # SIGTERM: unwind, so a scenario run in progress stops its servers
        raise SystemExit(f"signal {signum}")

    signal.signal(signal.SIGTERM, _stop)
    t = time.monotonic()
    build_all(a.release or list(RELEASES), a.scenario or list(ALL_SCENARIOS))
    print(f"all built in {time.monotonic() - t:.1f} s (cache {ROOT})", flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "_run":
        def _stop(signum, frame):   # SIGTERM from a timeout: let go()'s finally stop the servers
            raise SystemExit(f"signal {signum}")

        signal.signal(signal.SIGTERM, _stop)
        _Run(json.loads(sys.argv[2])).go()
    else:
        main(sys.argv[1:])
