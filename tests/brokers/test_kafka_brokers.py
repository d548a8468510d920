"""Real Kafka brokers judge rmqlab (tests/support/kafka_harness.py builds the partitions).

For each release and scenario (a clean stop; a crash while producing, then the broker's own
recovery; two restarts inside one segment; the clean stop's log dir with its indexes deleted,
rebuilt by the broker), on every partition directory the broker left:

1. rmqlab's log walk (:func:`rmqlab.commands.kafka.dump_file`, what ``rmqlab kafka dump``
   prints) equals the release's own DumpLogSegments on every batch and record: offsets,
   positions, sizes, CRCs and their validity, timestamps and their type, magic, codec, producer
   fields, control records, header keys, keys and payloads (decoded for ``__consumer_offsets``,
   ``__transaction_state`` and ``__cluster_metadata``), and on every ``.index`` / ``.timeindex``
   entry; every index passes the tool's ``--index-sanity-check``;
2. ``rmqlab kafka verify`` reports no failure on any partition of any scenario (each ends with a
   clean stop, the crash scenario after its recovery);
3. ``rmqlab kafka rebuild-index`` writes the broker's own index bytes for the segments whose
   indexing history the scenario fixes: written in one go and rolled or closed at shutdown, or
   rebuilt by the broker's recovery after the crash, or appended to across the restarts the
   scenario made (given as ``--restart-at``, the offsets the scenario's driver produced, not
   read back from rmqlab). The time entries' form follows the release: the batch's last offset
   from 3.8 (KAFKA-16310), the record with the batch's largest timestamp before; recovery
   (LogSegment.recover) and the log cleaner write the last offset in every release. The
   "reindexed" scenario is the broker's own rebuild: the clean scenario's log dir with every
   index deleted, loaded by the same release (LogSegment.recover rebuilds each), stopped
   cleanly: rebuild-index equals those bytes on every segment, and it is the oracle for the
   segments whose first indexes came from LogSegment.append calls of several batches;
4. index files with no ``.log`` (planted in a copy of a partition, the "orphans" scenario):
   ``rmqlab kafka verify`` passes and names them, and the broker deletes exactly them;
5. the release's kafka-consumer-groups ``--describe``: its CURRENT-OFFSET is the last commit
   rmqlab reads from ``__consumer_offsets``, its LOG-END-OFFSET the partition's end offset.

Nothing here compares rmqlab with a value rmqlab produced: every expectation is the broker's
bytes or its tool's text.
"""
from __future__ import annotations

import base64
import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

import kafka_harness as kh
import pytest

from rmqlab.cli import main as rmqlab_main
from rmqlab.commands.kafka import dump_file

CASES = kh.cases()
IDS = [f"{v}-{s}" for v, s in CASES]

#: index.interval.bytes: the harness sets 512 for every topic (log.index.interval.bytes and the
#: topics' own config); the KRaft metadata log builds its LogConfig without the broker's
#: log.* settings (KafkaMetadataLog), so it keeps Kafka's default, 4096
INTERVAL = 512
METADATA_INTERVAL = 4096


@pytest.fixture(scope="module")
def built():
    kh.bh.require_java_and_maven()
    cache: dict[tuple[str, str], kh.KafkaScenario] = {}

    def get(version: str, scenario: str) -> kh.KafkaScenario:
        if (version, scenario) not in cache:
            cache[version, scenario] = kh.kafka_partitions(version, scenario, log=lambda m: None)
        return cache[version, scenario]

    return get


def _interval(partition: Path) -> int:
    return METADATA_INTERVAL if partition.name.startswith("__cluster_metadata-") else INTERVAL


def _decoder(partition: Path) -> str | None:
    if partition.name.startswith("__consumer_offsets-"):
        return "offsets"
    if partition.name.startswith("__transaction_state-"):
        return "transaction-log"
    return None


def _segments(sc: kh.KafkaScenario, suffix: str = ".log") -> list[Path]:
    return [f for p in sc.partitions() for f in sorted(p.glob(f"*{suffix}"))]


# ---------------------------------------------------------------------------- the dump parser

def test_parser_reads_each_release_format(built):
    """The parser of DumpLogSegments' text on each release's real output: every batch line and
    record line of every dump yields its fields (formats differ: 2.8 has no lastSequence nor
    deleteHorizonMs; legacy entries are one-line message sets)."""
    for version in [r.version for r in kh.RELEASES if kh.selected(r.version, "clean")]:
        sc = built(version, "clean")
        seen_batches = seen_records = seen_index = 0
        for log in _segments(sc):
            text = sc.dump_of(log).read_text()
            d = kh.parse_dump(text)
            assert d.file.endswith(log.name)
            assert not [x for x in d.other if x.startswith(("baseOffset", "| offset", "offset:"))], d.other[:3]
            for b in d.batches:
                assert {"position", "size", "magic", "crc", "isvalid", "compresscodec", "timestamp"} <= b.keys(), b
            for r in d.records:
                assert {"offset", "keySize", "valueSize", "timestamp"} <= r.keys(), r
            seen_batches += len(d.batches)
            seen_records += len(d.records)
            n_lines = sum(1 for x in text.splitlines() if x.startswith("| offset"))
            assert len(d.records) == n_lines
        for idx in _segments(sc, ".index") + _segments(sc, ".timeindex"):
            seen_index += len(kh.parse_dump_file(sc.dump_of(idx)).index)
        assert seen_batches > 100 and seen_records > 1000 and seen_index > 50, (version, seen_batches, seen_records)


# ---------------------------------------------------------------------- 1. rmqlab dump == tool

_BATCH = {"baseOffset": "base_offset", "lastOffset": "last_offset", "count": "records_count",
          "producerId": "producer_id", "producerEpoch": "producer_epoch", "baseSequence": "base_sequence",
          "partitionLeaderEpoch": "partition_leader_epoch", "isTransactional": "is_transactional",
          "isControl": "is_control", "position": "position", "size": "size", "magic": "magic",
          "compresscodec": "compression", "crc": "crc", "isvalid": "crc_ok"}


def _batch_disagreements(where: str, tool: dict, ours: dict) -> list[str]:
    out = []
    for k, ok in _BATCH.items():
        # 2.8 names codecs in capitals (CompressionCodec: NONE, GZIP ...), 3.x+ in lower case
        if k in tool and (str(tool[k]).lower(), tool[k])[k != "compresscodec"] != ours[ok]:
            out.append(f"{where}: {k} tool {tool[k]!r} rmqlab {ours[ok]!r}")
    if ours["magic"] < 2 and "offset" in tool and tool["offset"] != ours["last_offset"]:
        out.append(f"{where}: offset tool {tool['offset']} rmqlab {ours['last_offset']}")
    if (tool["timestampType"], tool["timestamp"]) != (ours["timestamp_type"], ours["max_timestamp"]):
        out.append(f"{where}: timestamp tool {tool['timestampType']} {tool['timestamp']} rmqlab "
                   f"{ours['timestamp_type']} {ours['max_timestamp']}")
    return out


def _record_disagreements(where: str, tool: dict, ours: dict, partition: Path) -> list[str]:
    out = []
    pairs = [("offset", "offset"), ("keySize", "key_size"), ("valueSize", "value_size"), ("sequence", "sequence")]
    for k, ok in pairs:
        if k in tool and tool[k] != ours[ok]:
            out.append(f"{where}: {k} tool {tool[k]!r} rmqlab {ours[ok]!r}")
    if (tool["timestampType"], tool["timestamp"]) != (ours["timestamp_type"], ours["timestamp"]):
        out.append(f"{where}: timestamp tool {tool['timestampType']} {tool['timestamp']} rmqlab "
                   f"{ours['timestamp_type']} {ours['timestamp']}")
    if "headerKeys" in tool and tool["headerKeys"] != ours["header_keys"]:
        out.append(f"{where}: headerKeys tool {tool['headerKeys']} rmqlab {ours['header_keys']}")
    if "control" in ours or "endTxnMarker" in tool:
        m = dict(re.findall(r"(endTxnMarker|coordinatorEpoch): (\S+)", ours.get("control", "")))
        for k in ("endTxnMarker", "coordinatorEpoch"):
            if k in tool and str(tool[k]) != m.get(k):
                out.append(f"{where}: {k} tool {tool[k]!r} rmqlab {m.get(k)!r}")
        # 3.x prints "controlType: LEADER_CHANGE(2)", 4.4 "LeaderChange: {...}"; rmqlab both
        if "rest" in tool and tool["rest"] not in ours.get("control", ""):
            out.append(f"{where}: control record tool {tool['rest']!r} rmqlab {ours.get('control')!r}")
        return out
    key, payload = ours.get("key"), ours.get("payload")
    if "metadata" in ours:
        payload = ours["metadata"]
        mine = json.loads(payload)
        if mine["data"] is None:
            # rmqlab decodes the bodies of TopicRecord, FeatureLevelRecord and PartitionRecord
            # only (the README says so): of the others, the type and version
            theirs = json.loads(tool.get("payload") or "{}")
            if (theirs.get("type"), theirs.get("version")) != (mine["type"], mine["version"]):
                out.append(f"{where}: metadata record tool {tool.get('payload')!r} rmqlab {payload!r}")
            payload = tool.get("payload")
    if partition.name.startswith("__consumer_offsets-") and not (tool.get("key") or "{").startswith("{"):
        # kafka-dump-log before 3.8 prints GroupMetadataManager.formatRecordKeyAndValue's text
        # ("offset_commit::group=G,partition=T-0" / "offset=N,metadata=M"); rmqlab prints the
        # JSON of 3.8+: the fields the old text holds, compared one by one
        theirs, mine = _offsets_from_text(tool.get("key"), tool.get("payload")), _offsets_from_json(key, payload)
        if theirs != mine:
            out.append(f"{where}: offsets record tool {theirs} rmqlab {mine}")
        return out
    if partition.name.startswith("__transaction_state-") and (tool.get("key") or "").startswith("{"):
        # kafka-dump-log from 4.1 (the tool rewritten in Java) prints the transaction log as the
        # JSON of TransactionLogKey/Value; rmqlab prints TransactionLog.formatRecordKeyAndValue's
        # text of 2.x-3.x releases: the same fields, compared one by one
        theirs, mine = _txn_from_json(tool.get("key"), tool.get("payload")), _txn_from_text(key, payload)
        if theirs != mine:
            out.append(f"{where}: transaction log record tool {theirs} rmqlab {mine}")
        return out
    if tool.get("key") != key:
        out.append(f"{where}: key tool {tool.get('key')!r} rmqlab {key!r}")
    if tool.get("payload") != payload:
        out.append(f"{where}: payload tool {tool.get('payload')!r} rmqlab {payload!r}")
    return out


#: one member of the tool's assignment text: ``id=[t-0, t-1]``, ``id=[t-0]:HEX`` or ``id=HEX``
_MEMBER = re.compile(r"([^{},=]+)=(?:\[([^\]]*)\](?::([0-9A-F]*))?|([0-9A-F]*))(?=,|\}$)")


def _offsets_from_text(key: str | None, payload: str | None) -> dict:
    """The fields of GroupMetadataManager.formatRecordKeyAndValue's text (kafka-dump-log before
    3.8): ``offset=N`` with ``,metadata=M`` only when M is not empty; a group's assignment as
    ``{member=[t-0, t-1]:USERDATA,...}`` for the consumer protocol (USERDATA only when there is
    some) and ``{member=BYTES}`` for others, both in the tool's hex, which is the bytes as one
    unsigned number (``"%X".format(BigInt(1, bytes))``: leading zero bytes dropped), so they are
    kept as that number; a tombstone is ``<DELETE>``."""
    m = re.fullmatch(r"offset_commit::group=(.*),partition=(.*)-(\d+)", key or "")
    if m:
        out: dict = {"group": m.group(1), "topic": m.group(2), "partition": int(m.group(3))}
        v = re.fullmatch(r"offset=(-?\d+)(?:,metadata=(.*))?", payload or "", re.S)
        return {**out, **({"offset": int(v.group(1)), "metadata": v.group(2) or ""} if v else {"value": payload})}
    m = re.fullmatch(r"group_metadata::group=(.*)", key or "")
    if m is None:
        return {"key": key, "value": payload}
    if payload in (None, "<DELETE>"):
        return {"group": m.group(1), "value": payload}
    v = json.loads(payload)
    members: dict = {}
    for member, parts, user_data, raw in _MEMBER.findall(v.get("assignment", "")):
        if v["protocolType"] == "consumer":
            members[member.strip()] = {"partitions": sorted(x.strip() for x in parts.split(",") if x.strip()),
                                       "userData": int(user_data or "0", 16)}
        else:
            members[member.strip()] = {"bytes": int(raw or "0", 16)}
    return {"group": m.group(1), "protocolType": v["protocolType"], "protocol": v["protocol"],
            "generation": v["generationId"], "assignment": members}


def _as_number(b64: str | None) -> int:
    return int.from_bytes(base64.b64decode(b64 or ""), "big")


def _offsets_from_json(key: str | None, payload: str | None) -> dict:
    """rmqlab's JSON of the same record, as :func:`_offsets_from_text` gives the tool's."""
    k = json.loads(key or "{}")
    if k.get("type") in ("0", "1"):
        out: dict = dict(k["data"])
        if payload in (None, "<DELETE>"):
            return {**out, "value": payload}
        v = json.loads(payload)["data"]
        return {**out, "offset": v["offset"], "metadata": v["metadata"]}
    if k.get("type") != "2":
        return {"key": key, "value": payload}
    if payload in (None, "<DELETE>"):
        return {"group": k["data"]["group"], "value": payload}
    v = json.loads(payload)["data"]
    members: dict = {}
    for mem in v["members"]:
        a = mem.get("assignment")
        if isinstance(a, dict):
            members[mem["memberId"]] = {
                "partitions": sorted(f"{t['topic']}-{p}" for t in (a.get("assignedPartitions") or [])
                                     for p in t["partitions"]),
                "userData": _as_number(a.get("userData"))}
        else:
            members[mem["memberId"]] = {"bytes": _as_number(a)}
    return {"group": k["data"]["group"], "protocolType": v["protocolType"], "protocol": v["protocol"],
            "generation": v["generation"], "assignment": members}


#: TransactionState.fromId (kafka.coordinator.transaction.TransactionMetadata, 3.x): the
#: transaction log's status byte, which 4.1-4.3's kafka-dump-log prints as the number (4.4 as
#: the name)
TXN_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
              "PrepareEpochFence")


def _txn_from_json(key: str | None, payload: str | None) -> dict:
    k = json.loads(key or "{}").get("data", {})
    out = {"transactionalId": k.get("transactionalId")}
    if payload in (None, "<DELETE>"):
        return {**out, "value": payload}
    v = json.loads(payload)["data"]
    parts = sorted(f"{t['topic']}-{p}" for t in v.get("transactionPartitions") or [] for p in t["partitionIds"])
    state = v["transactionStatus"]
    state = TXN_STATES[state] if isinstance(state, int) and 0 <= state < len(TXN_STATES) else state
    return {**out, "producerId": v["producerId"], "producerEpoch": v["producerEpoch"], "state": state,
            "partitions": parts, "txnLastUpdateTimestamp": v["transactionLastUpdateTimestampMs"],
            "txnTimeoutMs": v["transactionTimeoutMs"]}


def _txn_from_text(key: str | None, payload: str | None) -> dict:
    out = {"transactionalId": (key or "").split("transactionalId=", 1)[-1] if key else None}
    if payload in (None, "<DELETE>"):
        return {**out, "value": payload}
    m = re.fullmatch(r"producerId:(-?\d+),producerEpoch:(-?\d+),state=(\w+),partitions=\[(.*)\],"
                     r"txnLastUpdateTimestamp=(-?\d+),txnTimeoutMs=(-?\d+)", payload)
    if m is None:
        return {**out, "unparsed": payload}
    parts = sorted(x for x in m.group(4).split(",") if x)
    return {**out, "producerId": int(m.group(1)), "producerEpoch": int(m.group(2)), "state": m.group(3),
            "partitions": parts, "txnLastUpdateTimestamp": int(m.group(5)), "txnTimeoutMs": int(m.group(6))}


def dump_disagreements(sc: kh.KafkaScenario, log: Path, source: Path | None = None) -> list[str]:
    """Every difference between the tool's dump of `log` (a file of `sc`) and rmqlab's walk of
    `source` (the same bytes elsewhere: the real data the harness copied), else of `log`."""
    tool = kh.parse_dump_file(sc.dump_of(log))
    ours = dump_file(source or log, print_data=True, decoder=_decoder(log.parent))
    where = f"{sc.release}/{sc.scenario}/{log.parent.name}/{log.name}"
    out = []
    if len(tool.batches) != len(ours["batches"]):
        out.append(f"{where}: {len(tool.batches)} batches (tool) vs {len(ours['batches'])} (rmqlab)")
    for t, o in zip(tool.batches, ours["batches"]):
        out += _batch_disagreements(f"{where} batch at {o['position']}", t, o)
    records = ours.get("records", [])
    # 2.8's --deep-iteration prints the inner messages of legacy (magic 0/1) wrappers as record
    # lines too (3.x+ no longer writes legacy formats here)
    tool_records = tool.records
    ours_records = records
    if len(tool_records) != len(ours_records):
        out.append(f"{where}: {len(tool_records)} records (tool) vs {len(ours_records)} (rmqlab)")
    for t, o in zip(tool_records, ours_records):
        out += _record_disagreements(f"{where} offset {o['offset']}", t, o, log.parent)
    return out


@pytest.mark.parametrize(("version", "scenario"), CASES, ids=IDS)
def test_log_walk_equals_dump_log_segments(built, version, scenario):
    sc = built(version, scenario)
    logs = _segments(sc)
    assert logs
    problems = [p for log in logs for p in dump_disagreements(sc, log)]
    assert not problems, f"{len(problems)} disagreements; first:\n" + "\n".join(problems[:30])


@pytest.mark.parametrize(("version", "scenario"), CASES, ids=IDS)
def test_index_entries_equal_dump_log_segments(built, version, scenario):
    sc = built(version, scenario)
    problems = []
    for idx in _segments(sc, ".index") + _segments(sc, ".timeindex"):
        tool = kh.parse_dump_file(sc.dump_of(idx)).index
        ours = dump_file(idx)["entries"]   # what `rmqlab kafka dump` prints
        if tool != ours:
            problems.append(f"{idx}: tool {tool[:3]}... ({len(tool)}) rmqlab {ours[:3]}... ({len(ours)})")
        sanity = sc.dump_of(idx, sanity=True).read_text()
        # "passed sanity check", or "is empty." (the tool checks no empty index); a time index
        # left preallocated (entries, then zeros) fails TimeIndex.sanityCheck, which 4.4's tool
        # throws out of main: accepted only for such a file
        width = 8 if idx.suffix == ".index" else 12
        preallocated = idx.stat().st_size > width * len(tool)
        if not (re.search(r"passed sanity check\.|is empty\.", sanity)
                or (preallocated and "Corrupt time index found" in sanity)):
            problems.append(f"{idx}: the tool's --index-sanity-check: {sanity.splitlines()[1:3]}")
    assert not problems, "\n".join(problems[:20])


# ------------------------------------------------------------------------------- 2. verify

#: Segments whose entries the broker made per LogSegment.append *call* of several batches
#: (every release: at most one offset entry per call, at the call's first position): verify
#: checks them against the calls the entries name (rmqlab.kafka.rebuild.append_calls), but
#: the call boundaries are not on disk, so rebuild-index, which indexes batch by batch as
#: LogSegment.recover does, cannot give the bytes the broker first wrote: for these, the bytes
#: the same release rebuilt (the "reindexed" scenario) are the oracle. (release, partition
#: prefix) -> why.
KNOWN = {
    ("2.8.2", "legacy-v0-none-"): "uncompressed magic v0 messages: the broker appends a produce request's whole "
                                  "message set in one LogSegment.append",
    ("2.8.2", "legacy-v1-none-"): "uncompressed magic v1 messages: one LogSegment.append per produce request",
    ("2.8.2", "compacted-"): "a segment the log cleaner rewrote: one LogSegment.append per read chunk of retained "
                             "batches (LogCleaner.cleanInto)",
    ("3.6.2", "compacted-"): "a segment the log cleaner rewrote: one LogSegment.append per read chunk of retained "
                             "batches (LogCleaner.cleanInto)",
}


def _known(version: str, partition: str) -> str | None:
    return next((why for (v, prefix), why in KNOWN.items() if v == version and partition.startswith(prefix)), None)


@pytest.mark.parametrize("interval", ["given", "from the files"])
@pytest.mark.parametrize(("version", "scenario"), CASES, ids=IDS)
def test_verify_reports_no_failure(built, version, scenario, interval):
    """With the topics' index.interval.bytes given, and without it: then verify reads it off
    each segment's offset entries (the harness's brokers use 512, not the default 4096), call
    by call where a call appended several batches (the KNOWN partitions)."""
    sc = built(version, scenario)
    failed = []
    for part in sc.partitions():
        given = ["--index-interval-bytes", str(_interval(part))] if interval == "given" else []
        out = io.StringIO()
        with redirect_stdout(out):
            rc = rmqlab_main(["kafka", "verify", str(part), *given])
        if rc != 0:
            failed.append(f"{part.name} (exit {rc}):\n" + "\n".join(
                line for line in out.getvalue().splitlines() if "error" in line or "expected" in line
                or "FAILED" in line)[:2000])
    assert not failed, "\n".join(failed)


# ------------------------------------------------------------------------------ 3. rebuild

#: from the driver (KafkaWorkload.produce): each of the three broker runs of "restarts"
#: appends 300 records to restarts-0, so runs 2 and 3 start at offsets 300 and 600
RESTARTS_AT = (300, 600)


def _time_form(version: str, how: str, partition: str) -> str:
    """The offset a time entry names: recovery and the cleaner write the batch's last offset in
    every release, and so does the KRaft metadata log (the raft leader appends with origin
    RAFT_LEADER, which skips LogValidator: ``analyzeAndValidateRecords`` takes each batch's
    lastOffset, UnifiedLog at 3.6.2); a leader's appends from 3.8 (KAFKA-16310) too, before it
    the record holding the batch's largest timestamp."""
    if how in ("recovered", "cleaned") or kh.release(version).key >= (3, 8):
        return "last"
    if partition.startswith("__cluster_metadata-"):
        return "last"
    return "record"


def _next_offset(sc: kh.KafkaScenario, log: Path) -> int:
    """The offset after the last batch of `log` as the release's DumpLogSegments printed it."""
    batches = kh.parse_dump_file(sc.dump_of(log)).batches
    return max(b.get("lastOffset", b.get("offset", -1)) for b in batches) + 1


def grown_since_clean(sc: kh.KafkaScenario, clean: kh.KafkaScenario) -> dict[Path, tuple[int, ...]]:
    """The segments of a scenario derived from `clean` that its broker run appended to (the
    KRaft metadata log: the new run's leader change and registration): the offset the run's
    appends start at (the tool's next offset after the clean copy's batches), where the run's
    own indexing starts afresh after LogSegment.recover. Any other change of a ``.log`` is an
    error here (the run only loads and stops)."""
    out: dict[Path, tuple[int, ...]] = {}
    for part in sc.partitions():
        for log in sorted(part.glob("*.log")):
            before = clean.log_dir / part.name / log.name
            now = log.read_bytes()
            if before.exists() and before.read_bytes() == now:
                continue
            assert before.exists() and now.startswith(before.read_bytes()), f"{log} rewritten by the broker run"
            out[log] = (_next_offset(clean, before),)
    return out


def rebuild_cases(sc: kh.KafkaScenario, grown: dict[Path, tuple[int, ...]] | None = None,
                  ) -> list[tuple[Path, str, tuple[int, ...], str]]:
    """(segment, how, restarts, why-not) for every segment: how the broker wrote its indexes,
    and an empty why-not when the rule fixes them. `grown`: for the reindexed scenario, the
    segments its broker run appended to after recovering them (:func:`grown_since_clean`)."""
    out = []
    for part in sc.partitions():
        logs = sorted(part.glob("*.log"))
        for log in logs:
            how, restarts, why_not = "one go", (), ""
            if sc.scenario == "reindexed":
                # every segment rebuilt by LogSegment.recover; the metadata log then appended to
                how, restarts = "recovered", (grown or {}).get(log, ())
            elif part.name.startswith("__cluster_metadata-"):
                # the KRaft metadata log: each broker run appends (restarts not fixed by the scenario)
                if sc.scenario != "clean":
                    why_not = "the metadata log is appended to by every broker run of the scenario"
            elif sc.scenario == "crash":
                how = "recovered"
            elif sc.scenario == "restarts":
                restarts = RESTARTS_AT if part.name == "restarts-0" else ()
                if part.name != "restarts-0":
                    why_not = "appended to by several broker runs"
            elif part.name.startswith("compacted-"):
                how = "cleaned" if log != logs[-1] else "one go"
            out.append((log, how, restarts, why_not))
    return out


def _rebuild(log: Path, out: Path, version: str, how: str, restarts: tuple[int, ...], active: bool) -> Path:
    """`rmqlab kafka rebuild-index` of `log` into `out` (the broker's settings and the
    scenario's history as its options)."""
    args = ["kafka", "rebuild-index", str(log), "--out", str(out), "--overwrite",
            "--index-interval-bytes", str(_interval(log.parent)),
            "--time-entry-offset", _time_form(version, how, log.parent.name)]
    args += [a for r in restarts for a in ("--restart-at", str(r))] or ["--no-restarts"]
    args += ["--active"] if active else []
    with redirect_stdout(io.StringIO()):
        assert rmqlab_main(args) == 0
    return out


@pytest.mark.parametrize(("version", "scenario"), CASES, ids=IDS)
def test_rebuild_index_equals_broker_bytes(built, version, scenario, tmp_path):
    """rebuild-index against the broker's index bytes, segment by segment. A segment of a KNOWN
    partition (indexed per append call) of the clean scenario whose first-written indexes differ
    is judged against the same release's rebuild of it instead (the reindexed scenario, whose
    ``.log`` must be the same bytes), with the form recovery writes."""
    sc = built(version, scenario)
    grown = grown_since_clean(sc, built(version, "clean")) if scenario == "reindexed" else None
    problems, checked, judged_by_rebuild = [], 0, set()

    def differences(oracle: Path, out: Path, active: bool) -> list[str]:
        found = []
        for suffix in (".index", ".timeindex"):
            theirs, ours = oracle.with_suffix(suffix).read_bytes(), (out / (oracle.stem + suffix)).read_bytes()
            if active:
                theirs = theirs[:len(ours)] if not theirs[len(ours):].strip(b"\0") else theirs + b"(nonzero tail)"
            if theirs != ours:
                found.append(f"{suffix}: broker {len(theirs)} bytes, rmqlab {len(ours)} bytes")
        return found

    for log, how, restarts, why_not in rebuild_cases(sc, grown):
        if why_not:
            continue
        # an index the broker left preallocated (Kafka 4.4 does so for the metadata log's active
        # segment even at a clean shutdown): the segment is still active, no closing time entry,
        # and the broker's file is the rebuilt bytes then zeros
        active = log.with_suffix(".index").stat().st_size >= 1 << 20
        out = _rebuild(log, tmp_path / log.parent.name, version, how, restarts, active)
        found = differences(log, out, active)
        known = _known(version, log.parent.name) if scenario == "clean" else None
        if found and known:
            # the broker's own rebuild of this segment: same .log bytes, indexes by LogSegment.recover
            oracle = built(version, "reindexed").log_dir / log.parent.name / log.name
            assert oracle.read_bytes() == log.read_bytes(), f"{oracle}: not the clean scenario's {log}"
            out = _rebuild(log, tmp_path / "recovered" / log.parent.name, version, "recovered", (), active)
            found = [f"{x} (judged by the reindexed copy: {known})" for x in differences(oracle, out, active)]
            judged_by_rebuild.add(next(p for (v, p) in KNOWN if v == version and log.parent.name.startswith(p)))
        problems += [f"{log.parent.name}/{log.stem}{x} ({how}, restarts {restarts})" for x in found]
        checked += 1
    assert checked
    assert not problems, "\n".join(problems)
    if scenario == "clean":
        # every KNOWN partition still differs from its first-written indexes (else it is not
        # known any more: drop it from KNOWN)
        assert judged_by_rebuild == {prefix for (v, prefix) in KNOWN if v == version}


@pytest.mark.parametrize("version", [r.version for r in kh.RELEASES if kh.selected(r.version, "reindexed")])
def test_reindexed_scenario_is_the_brokers_rebuild(built, version):
    """The reindexed scenario is what it claims: the broker logged, for every segment whose
    ``.index`` the harness deleted, that it found none and rebuilt the indexes (LogLoader;
    the KRaft metadata log, loaded with no clean-shutdown mark, is recovered as unflushed
    instead: "Recovering unflushed segment"), every ``.index`` and ``.timeindex`` is back, and
    every ``.log`` is the clean scenario's bytes (the metadata log's run appended to only)."""
    sc, clean = built(version, "reindexed"), built(version, "clean")
    said = (sc.root / "broker-1.log").read_text(errors="replace")
    deleted = json.loads((sc.root / "derived.json").read_text())["deleted"]
    assert deleted
    missing = []
    for rel in deleted:
        f = sc.log_dir / rel
        if not f.exists():
            missing.append(f"{rel}: not rebuilt")
        log = f.with_suffix(".log")
        if f.suffix == ".index" and not f.parent.name.startswith("__cluster_metadata-"):
            if not re.search(r"Could not find offset index file corresponding to log file \S*"
                             + re.escape(f"{f.parent.name}/{log.name}"), said):
                missing.append(f"{rel}: the broker did not log rebuilding it")
    assert not missing, "\n".join(missing)
    grown = grown_since_clean(sc, clean)
    assert all(p.parent.name.startswith("__cluster_metadata-") for p in grown), grown


#: one release of each line for the orphans scenario (ZooKeeper-mode Log.loadSegmentFiles, and
#: 4.x's LogLoader)
ORPHAN_RELEASES = ("2.8.2", "4.4.0")


@pytest.mark.parametrize("version", ORPHAN_RELEASES)
def test_orphaned_index_files_are_what_the_broker_deletes(version):
    """Index files with no ``.log`` of their base offset, planted in a copy of a partition: on
    the partition as planted (``before/``), ``rmqlab kafka verify`` passes and names each as an
    orphan; then the broker, loading it, logged "Found an orphaned index file" for each and
    deleted exactly those files."""
    kh.bh.require_java_and_maven()
    sc = kh.kafka_partitions(version, "orphans", log=lambda m: None)
    planted = {Path(p).name for p in json.loads((sc.root / "derived.json").read_text())["planted"]}
    assert len(planted) == len(kh.ORPHANS)
    before = sc.root / "before" / kh.ORPHAN_PARTITION
    out = io.StringIO()
    with redirect_stdout(out):
        rc = rmqlab_main(["kafka", "verify", str(before), "--index-interval-bytes", str(INTERVAL)])
    text = out.getvalue()
    assert rc == 0, text[-3000:]
    named = {Path(m.group(1)).name for m in re.finditer(r"^(\S+): ok: orphaned index file", text, re.M)}
    assert named == planted, f"rmqlab verify named {sorted(named)} of {sorted(planted)}:\n{text[-2000:]}"
    after = sc.log_dir / kh.ORPHAN_PARTITION
    gone = {f.name for f in before.iterdir()} - {f.name for f in after.iterdir()}
    assert gone == planted
    said = (sc.root / "broker-1.log").read_text(errors="replace")
    logged = set(re.findall(r"Found an orphaned index file \S*/" + re.escape(kh.ORPHAN_PARTITION) + r"/(\S+?),",
                            said))
    assert logged == planted


# ---------------------------------------------------------------- 5. kafka-consumer-groups

def parse_describe(text: str) -> list[dict[str, str]]:
    """kafka-consumer-groups ``--describe``'s table: one dict a row, by its header's columns."""
    lines = [x for x in text.splitlines() if x.strip()]
    head = next(i for i, x in enumerate(lines) if x.split()[:2] == ["GROUP", "TOPIC"])
    names = lines[head].split()
    return [dict(zip(names, x.split())) for x in lines[head + 1:] if len(x.split()) == len(names)]


@pytest.mark.parametrize("version", [r.version for r in kh.RELEASES if kh.selected(r.version, "clean")])
def test_committed_offsets_equal_kafka_consumer_groups(built, version):
    """The release's kafka-consumer-groups ``--describe`` (recorded before the clean scenario's
    shutdown, with the group's consumer gone) against rmqlab: CURRENT-OFFSET is the group's
    last commit rmqlab reads from ``__consumer_offsets``
    (:func:`rmqlab.kafka.internal_topics.committed_offsets` of every partition of it), row for
    row and no commit more, and LOG-END-OFFSET the partition's end offset rmqlab reads (the
    last batch's last offset + 1)."""
    from rmqlab.kafka.internal_topics import committed_offsets
    from rmqlab.kafka.partition import read_partition

    sc = built(version, "clean")
    rows = parse_describe(sc.consumer_groups)
    assert rows, sc.consumer_groups
    ours = {}
    for part in sc.partitions():
        if part.name.startswith("__consumer_offsets-"):
            for r in committed_offsets(part).itertuples():
                ours[r.group, r.topic, r.partition] = r.offset
    theirs = {(r["GROUP"], r["TOPIC"], int(r["PARTITION"])): int(r["CURRENT-OFFSET"]) for r in rows}
    assert {k: v for k, v in ours.items() if k[0] in {g for g, _, _ in theirs}} == theirs
    for r in rows:
        end = int(read_partition(sc.log_dir / f"{r['TOPIC']}-{r['PARTITION']}")["last_offset"].max()) + 1
        assert end == int(r["LOG-END-OFFSET"]), r


@pytest.mark.parametrize("version", [r.version for r in kh.RELEASES if kh.selected(r.version, "clean")])
def test_kafka_verify_jobs_reports_what_one_process_reports(built, version):
    """`rmqlab kafka verify LOGDIR --jobs 2` of the log directory each release wrote in its clean
    scenario: the output of one process, text and JSON, byte for byte, with its segments checked
    in worker processes (tests/commands/test_jobs.py checks the real-data log directories)."""
    import os

    from rmqlab.tables.pool import RUNS

    log_dir = built(version, "clean").log_dir
    out = {}
    for jobs in ("1", "2"):
        for form in ((), ("--json",)):
            buf = io.StringIO()
            with redirect_stdout(buf):
                status = rmqlab_main(["kafka", "verify", str(log_dir), *form, "--jobs", jobs])
            out[jobs, form] = (status, buf.getvalue())
            assert RUNS[-1].jobs == int(jobs)
            assert (os.getpid() in RUNS[-1].pids) == (jobs == "1"), RUNS[-1]
    assert out["1", ()] == out["2", ()] and out["1", ("--json",)] == out["2", ("--json",)]
    assert out["1", ()][1].count(".log: ") == len(list(log_dir.glob("*/*.log")))

