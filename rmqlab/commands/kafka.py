"""`rmqlab kafka dump|verify|rebuild-index`: Kafka segment files, as ``kafka-dump-log`` shows them.

``rmqlab kafka dump FILE...`` prints each ``.index`` (offset, position), ``.timeindex``
(timestamp, offset) or ``.log`` (one line a batch; ``--records`` adds one a record under
it, compressed batches decompressed and control records decoded, ``--print-data-log`` also
its key and payload) file, and the other files of a partition directory: producer-state
``.snapshot``, ``.txnindex``, KRaft ``.checkpoint`` snapshots (``bootstrap.checkpoint`` too),
``leader-epoch-checkpoint``, ``partition.metadata`` and ``quorum-state``; ``rmqlab kafka
dump DIR`` dumps every such file of a partition directory, segment by segment, or of each
partition of a log directory in order. A damaged ``.log`` (torn tail, a batch or record that
cannot be read) is dumped up to the damage, which is then named on stderr (file, byte offset,
field, why) after kafka-dump-log's "Found N invalid bytes at the end of ..." line, and the dump
goes on with the next file; a batch whose CRC does not verify is shown (``isvalid: false``)
and named too. Exit 1 when any file was damaged (there is no separate "damage found" status).
``--max-bytes N`` reads each ``.log`` only up to its first N bytes, as kafka-dump-log's
``--max-bytes`` slices the file: the batches that end within them are dumped, stderr says at
which position the dump stopped, and the rest is not read (nor judged). Keys and payloads are
shown as kafka-dump-log's StringDecoder shows them, or by ``--body`` / ``--charset``
(:mod:`rmqlab.commands.bodies`) and ``--key-decoder`` / ``--value-decoder MODULE:FUNCTION``
(its ``--key-decoder-class`` / ``--value-decoder-class``); bytes a decoder fails on are shown as
base64 with the error, counted on stderr, and the dump goes on.
``rmqlab kafka verify DIR|SEGMENT.log`` checks every segment's batches and index files against
the broker's indexing rule, restarts included (each named with its evidence), and reports every
mismatch (exit 1 if any is unexplained; absent or preallocated index files are notes); a
damaged segment's whole batches are checked, its problems listed in file order and the damage
last, and index entries written for bytes past the damage are problems; ``--jobs N`` checks
the segments of a DIR in N processes, the output the same as with one;
``rmqlab kafka rebuild-index SEGMENT.log --out DIR [--restart-at OFFSET]...`` writes the
``.index`` and ``.timeindex`` the broker would have written. ``--json`` prints JSON instead. Inputs are only read.

A log directory (partition folders beside ``recovery-point-offset-checkpoint`` and the other
files of :mod:`rmqlab.kafka.logdir`): ``verify DIR`` checks every partition in it and the
directory's own files against them; ``dump`` prints those files; ``rmqlab kafka logdir DIR``
shows, per partition, what its folder holds beside what each checkpoint says (the offline
``kafka-log-dirs --describe``); ``rmqlab kafka groups DIR...`` the consumer groups' committed
offsets, log end offsets and lag (the offline ``kafka-consumer-groups --describe``,
:mod:`rmqlab.kafka.groups`).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rmqlab.commands import UsageError
from rmqlab.commands.bodies import BodyView, add_body_options

#: Exit status when verify finds a problem, or dump a damaged file: damage found
#: (rmqlab.cli.EXIT_STATUS: 0 ok, 1 damage, 2 usage, 3 bad input).
VERIFY_FAILED = DAMAGE_FOUND = 1
#: kafka-dump-log's --max-bytes default (Integer.MAX_VALUE): with it, and only with it, the tool
#: ends a .log's dump with "Found N invalid bytes at the end of FILE"
KAFKA_MAX_BYTES = 2**31 - 1
# the files at the top of a log directory that dump prints (rmqlab.kafka.logdir)
_LOG_DIR_KINDS = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint",
                  "cleaner-offset-checkpoint", "meta.properties", ".kafka_cleanshutdown")


def register(sub: argparse._SubParsersAction) -> None:
    k = sub.add_parser("kafka", help="Kafka segments and log dirs: dump, verify, rebuild indexes, groups, logdir")
    ksub = k.add_subparsers(dest="kafka_command", required=True)

    p = ksub.add_parser("dump", help="print .index / .timeindex entries, .log batches, and every other file of a "
                                     "partition directory (.snapshot, .txnindex, .checkpoint, checkpoints)")
    p.add_argument("files", nargs="+", metavar="FILE|DIR",
                   help="files, partition directories (every file of it, segment by segment) or log directories "
                        "(each partition in order)")
    p.add_argument("--base-offset", type=int, metavar="N",
                   help=".index/.timeindex: the base offset, for a file whose name does not say it")
    p.add_argument("--records", action="store_true",
                   help=".log: also one line a record under its batch (compressed batches decompressed)")
    p.add_argument("--print-data-log", action="store_true",
                   help=".log: also each record's key and payload as UTF-8 text (implies --records)")
    p.add_argument("--json", action="store_true", help="one JSON object a file on stdout")
    decoders = p.add_mutually_exclusive_group()
    decoders.add_argument("--offsets-decoder", dest="decoder", action="store_const", const="offsets",
                          help=".log of __consumer_offsets: decode each record's key and payload (implies --records)")
    decoders.add_argument("--transaction-log-decoder", dest="decoder", action="store_const", const="transaction-log",
                          help=".log of __transaction_state: decode each record's key and payload (implies --records)")
    decoders.add_argument("--share-group-state-decoder", dest="decoder", action="store_const",
                          const="share-group-state",
                          help=".log of __share_group_state: decode each record's key and payload (implies --records)")
    decoders.add_argument("--remote-log-metadata-decoder", dest="decoder", action="store_const",
                          const="remote-log-metadata",
                          help=".log of __remote_log_metadata: decode each record's payload (implies --records)")
    p.add_argument("--max-bytes", type=int, default=None, metavar="N",
                   help=".log and .checkpoint: read only each file's first N bytes, the batches that end within "
                        "them (kafka-dump-log --max-bytes; the rest of the file is not read, and said so on stderr)")
    p.add_argument("--key-decoder", default=None, metavar="MODULE:FUNCTION",
                   help="a Python callable that gets each record's key bytes and returns what to show (a str or "
                        "any JSON value); implies --print-data-log (kafka-dump-log --key-decoder-class)")
    p.add_argument("--value-decoder", default=None, metavar="MODULE:FUNCTION",
                   help="the same for each record's value (kafka-dump-log --value-decoder-class)")
    add_body_options(p, default=None, what="key and value", decoder=False,
                     default_help="kafka-dump-log's StringDecoder: UTF-8, malformed bytes replaced; "
                                  "a mode other than none implies --print-data-log")
    p.set_defaults(run=_dump)

    p = ksub.add_parser("verify", help="check every segment's CRCs and index entries against the broker's rule")
    p.add_argument("target", metavar="DIR|SEGMENT.log")
    p.add_argument("--base-offset", type=int, metavar="N",
                   help="SEGMENT.log: its base offset, for a file whose name does not say it (its index files are "
                        "looked for under that offset's names)")
    p.add_argument("--index-interval-bytes", type=int, default=None, metavar="N",
                   help="index.interval.bytes of the topic (default: what each segment's offset entries "
                        "fit, 4096 when they fit it or no value; a note says which)")
    p.add_argument("--active", action="store_true",
                   help="the segments were not rolled or closed: no final time entry is expected "
                        "(default: decided per segment: a later segment or trimmed index files mean "
                        "rolled or closed, preallocated ones mean active)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="DIR: processes to spread the segments over, the reports taken in order, so the output is "
                        "the same with any N (default: the usable cores, at most one a segment, and 1 under 256 MiB "
                        "of segments; 1: one process)")
    p.add_argument("--json", action="store_true", help="print JSON to stdout")
    p.set_defaults(run=_verify)

    p = ksub.add_parser("rebuild-index", help="write the .index and .timeindex the broker writes for a segment")
    p.add_argument("log", metavar="SEGMENT.log")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the two files (created if missing)")
    p.add_argument("--index-interval-bytes", type=int, default=4096, metavar="N",
                   help="index.interval.bytes of the topic (default 4096)")
    p.add_argument("--active", action="store_true", help="as an active segment: no final time entry")
    p.add_argument("--overwrite", action="store_true", help="replace index files already in --out")
    p.add_argument("--restart-at", type=int, action="append", metavar="OFFSET", dest="restart_at",
                   help="the broker restarted at this batch's first offset (repeatable): the bytes-since-"
                        "last-entry count starts again there and the closing time entry is offered. "
                        "Without it the evidence beside the segment decides: producer-state snapshots and "
                        "leader-epoch starts inside it, applied where the index files there agree (a "
                        "snapshot alone when there are no index files)")
    p.add_argument("--no-restarts", action="store_true", help="ignore the evidence: no restarts")
    p.add_argument("--time-entry-offset", choices=("last", "record"),
                   help="the offset a time entry names: 'last', the batch's last offset (recovery, followers, "
                        "the cleaner, leaders from 3.8); 'record', the first record holding the batch's max "
                        "timestamp (leaders before 3.8, uncompressed CreateTime batches). Default: the form "
                        "the segment's own .timeindex shows, 'last' without one")
    p.add_argument("--broker-release", metavar="X.Y[.Z]",
                   help="the rule of that broker release: before 2.0 an entry names each batch's (legacy "
                        "message set's) first offset, and before 0.10.1 there is no time index (default: today's)")
    p.set_defaults(run=_rebuild)
    _register_log_dir(ksub)


# dirfiles.file_kind -> the kind dump reports
_DUMP_KINDS = {"index": "index", "timeindex": "timeindex", "log": "log", "producer-snapshot": "snapshot",
               "txnindex": "txnindex", "kraft-snapshot": "checkpoint",
               "leader-epoch-checkpoint": "leader-epoch-checkpoint", "partition.metadata": "partition.metadata",
               "quorum-state": "quorum-state", **{k: k for k in _LOG_DIR_KINDS}}


def _kind(path: Path) -> str:
    from rmqlab.errors import InputError
    from rmqlab.kafka.dirfiles import file_kind

    if not path.exists():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    kind = _DUMP_KINDS.get(file_kind(path))
    if kind is None:
        raise InputError("not a .index, .timeindex, .log, .snapshot, .txnindex, .checkpoint, "
                         "leader-epoch-checkpoint, partition.metadata or quorum-state file, nor a log "
                         "directory's checkpoint, meta.properties or .kafka_cleanshutdown", path=path)
    return kind


def _plain(row: dict) -> dict:
    return {c: (v.item() if hasattr(v, "item") else v) for c, v in row.items()}


def _dump_other(path: Path, kind: str, out: dict[str, Any]) -> None:
    """The kinds besides segments and their indexes."""
    if kind in _LOG_DIR_KINDS:
        return _dump_log_dir_file(path, kind, out)
    if kind == "snapshot":
        from rmqlab.kafka.producer_state import read_producer_snapshot

        df = read_producer_snapshot(path)
        out.update({k: df.attrs[k] for k in ("offset", "version", "crc", "crc_ok")})
        out["entries"] = [_plain(r) for r in df.to_dict(orient="records")]
    elif kind == "txnindex":
        from rmqlab.kafka.txnindex import read_txn_index

        df = read_txn_index(path)
        out["base_offset"] = df.attrs["base_offset"]
        out["entries"] = [_plain(r) for r in df.to_dict(orient="records")]
    elif kind == "leader-epoch-checkpoint":
        from rmqlab.kafka.checkpoints import read_leader_epoch_checkpoint

        out["entries"] = [_plain(r) for r in read_leader_epoch_checkpoint(path).to_dict(orient="records")]
    elif kind == "partition.metadata":
        from rmqlab.kafka.checkpoints import read_partition_metadata

        out.update(read_partition_metadata(path))
    else:
        from rmqlab.kafka.checkpoints import read_quorum_state

        out["state"] = read_quorum_state(path)


def _sequences(base_sequence, offset_delta):
    """:func:`_sequence` of arrays (int64), element by element."""
    import numpy as np

    base, delta = np.asarray(base_sequence, np.int64), np.asarray(offset_delta, np.int64)
    int_max = 2**31 - 1
    return np.where(base < 0, -1, np.where(base > int_max - delta, delta - (int_max - base) - 1, base + delta))


def _record_extras(path: Path, kind: str, batches, records: list[dict], source) -> None:
    """Decoded control records (and KRaft metadata payloads, for snapshots and the
    ``__cluster_metadata`` partition) added to the record dicts, by record offset (the records
    of a compressed batch have no file position). `source`: the file's whole batches (the
    path, or its bytes up to the damage)."""
    from rmqlab.kafka.control import CONTROL_TYPES, control_text
    from rmqlab.kafka.kraft import metadata_text, read_metadata_records

    metadata = kind == "checkpoint" or path.parent.name.startswith("__cluster_metadata-")
    if not metadata and not bool(batches["is_control"].any()):
        return
    by_offset = {r["offset"]: r for r in records}
    ids = {name: t for t, name in CONTROL_TYPES.items()}
    if metadata:
        decoded = read_metadata_records(source, errors="keep")
    else:
        from rmqlab.kafka.control import read_control_records

        decoded = read_control_records(source)
        decoded["is_control"], decoded["error"] = True, None
    for row in decoded.to_dict(orient="records"):
        r = by_offset.get(row["offset"])
        if r is None:
            continue
        if row["error"] is not None:
            r["decode_error"] = row["error"]
        elif row["is_control"]:
            name = row["type"] if metadata else row["name"]
            type_id = ids.get(name, -1) if metadata else row["type"]
            r["control"] = control_text({"type": type_id, "name": name, "data": row["data"]})
        else:
            r["metadata"] = metadata_text({"type": row["type"], "version": row["version"], "data": row["data"],
                                          "api_key": None})


def _sequence(base_sequence: int, offset_delta: int) -> int:
    """A record's producer sequence (DefaultRecord.sequence): the batch's baseSequence plus the
    record's offsetDelta, wrapping past Integer.MAX_VALUE to 0
    (DefaultRecordBatch.incrementSequence); -1 without one."""
    if base_sequence < 0:
        return -1
    int_max = 2**31 - 1
    if base_sequence > int_max - offset_delta:
        return offset_delta - (int_max - base_sequence) - 1
    return base_sequence + offset_delta


def _text(b) -> str | None:
    # kafka-dump-log's StringDecoder: new String(bytes, UTF-8), malformed input replaced
    return None if b is None else bytes(b).decode("utf-8", "replace")


def _shown(data, field: str, view: BodyView | None) -> dict[str, Any]:
    """A record's key or value as the dump shows it: kafka-dump-log's StringDecoder without a
    `view`, else the view's rendering (``field``, ``field_encoding``, ``field_error``)."""
    return {field: _text(data)} if view is None else view.render(None if data is None else bytes(data), field)


def _head(path: Path, n: int) -> bytes:
    """The first `n` bytes of the file at `path` (only those are read)."""
    with open(path, "rb") as fh:
        return fh.read(n)


def dump_file(path: str | Path, *, records: bool = False, print_data: bool = False,
              decoder: str | None = None, base_offset: int | None = None, max_bytes: int | None = None,
              key_view: BodyView | None = None, value_view: BodyView | None = None) -> dict[str, Any]:
    """One file's contents as a JSON-ready dict: ``file``, ``kind`` and ``entries`` (index
    files, absolute offsets) or ``batches`` (and ``records``, every record of every batch,
    compressed ones decompressed; ``print_data`` adds ``key`` and ``payload`` as text) for a
    ``.log``. `decoder` ("offsets", "transaction-log", "share-group-state", "remote-log-metadata")
    makes ``key`` and ``payload`` each data record's decoded key and value as kafka-dump-log's
    decoder of that name prints them; `key_view` / `value_view`
    (:class:`rmqlab.commands.bodies.BodyView`) show them as the view renders them (with
    ``key_encoding`` / ``payload_encoding``, and ``key_error`` / ``payload_error`` where a decoder
    failed: the bytes are then base64), else as kafka-dump-log's StringDecoder does (UTF-8,
    malformed bytes replaced).
    `base_offset`: an index file's, when its name does not say it.

    `max_bytes` (``kafka-dump-log --max-bytes``): a ``.log`` / ``.checkpoint`` is read up to
    its first `max_bytes` bytes only (:func:`rmqlab.kafka.log.read_batches`): the batches that
    end within them; ``unread_from`` is where the first batch not read starts (None when the
    bound cut nothing), ``unread_bytes`` the bytes from there to the end of the file, and
    ``unread_reason`` why that batch was not read. Cost: O(bytes read) plus the decode of the
    records asked for.

    >>> import tempfile
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> log = write_segment(tempfile.mkdtemp(), 0, [KafkaRecord(i, 1000, b"k", b"v") for i in range(3)])
    >>> d = dump_file(log, max_bytes=150)
    >>> [b["base_offset"] for b in d["batches"]], d["unread_from"], d["unread_bytes"]
    ([0, 1], 140, 70)

    A ``.log`` (or ``.checkpoint``) is read up to its first damage (a torn tail, a batch
    header or record that makes no sense): ``batches`` / ``records`` are the whole ones before
    it, ``damage`` says where and why (:class:`rmqlab.kafka.log.SegmentDamage` as a dict, None
    when every byte was read), ``valid_bytes`` where the whole batches end and
    ``invalid_bytes`` the rest of the file (what kafka-dump-log reports as "Found N invalid
    bytes at the end of ..."). ``crc_errors`` counts the batches whose CRC does not verify
    (each shown, with ``crc_ok`` false, as kafka-dump-log shows it)."""
    from rmqlab.kafka.index import OffsetIndex, TimeIndex
    from rmqlab.kafka.log import read_batches, read_records

    path = Path(path)
    kind = _kind(path)
    out: dict[str, Any] = {"file": str(path), "kind": kind}
    if kind == "checkpoint":
        from rmqlab.kafka.kraft import parse_snapshot_name

        out["end_offset"], out["epoch"] = parse_snapshot_name(path) or (None, None)
    if kind not in ("index", "timeindex", "log", "checkpoint"):
        _dump_other(path, kind, out)
    elif kind == "index":
        # kafka-dump-log's rule: no sanity check, entries up to a preallocated file's zero tail
        # (an untrimmed active segment's index, as a crash or Kafka 4.4's metadata log leaves it)
        with OffsetIndex.open(path, base_offset, count="dump", strict=False) as idx:
            out["base_offset"] = idx.base_offset
            out["entries"] = [{"offset": int(o), "position": int(p)} for o, p in zip(idx.offsets, idx.positions)]
    elif kind == "timeindex":
        with TimeIndex.open(path, base_offset, count="dump", strict=False) as idx:
            out["base_offset"] = idx.base_offset
            out["entries"] = [{"timestamp": int(t), "offset": int(o)} for t, o in zip(idx.timestamps, idx.offsets)]
    else:
        # every whole batch before the first damage, as kafka-dump-log prints the batches up to
        # a tear (FileLogInputStream stops there) and LogSegment.recover keeps them
        batches = read_batches(path, on_damage="report", max_bytes=max_bytes)
        walk = batches.attrs["report"]
        damage = walk.damage
        if records or print_data or decoder:
            recs = read_records(path, values=print_data, on_damage="report", max_bytes=max_bytes)
            if recs.attrs["report"].damage is not None:   # a record that does not decode, before it
                damage = recs.attrs["report"].damage
                batches = batches[batches["position"] < damage.position]
        cols = ["position", "size", "base_offset", "last_offset", "records_count", "base_timestamp",
                "max_timestamp", "compression", "timestamp_type", "is_transactional", "is_control",
                "producer_id", "producer_epoch", "base_sequence", "partition_leader_epoch", "magic", "crc", "crc_ok"]
        out["batches"] = [{c: (v.item() if hasattr(v, "item") else v) for c, v in row.items()}
                          for row in batches[cols].to_dict(orient="records")]
        out["max_bytes"] = max_bytes
        out["unread_from"] = walk.unread_from if damage is None else None
        out["unread_bytes"] = 0 if out["unread_from"] is None else walk.file_size - out["unread_from"]
        out["unread_reason"] = walk.unread_reason if out["unread_from"] is not None else None
        out["valid_bytes"] = (walk.file_size if damage is None else damage.position) - out["unread_bytes"]
        out["invalid_bytes"] = walk.file_size - out["valid_bytes"] - out["unread_bytes"]
        out["crc_errors"] = int((~batches["crc_ok"]).sum())
        out["damage"] = None if damage is None else damage.as_dict()
        if records or print_data or decoder:
            # the decoders read the whole batches only: the bytes from the damage on would raise,
            # and those past --max-bytes are not to be read
            whole = path if out["valid_bytes"] == walk.file_size else _head(path, out["valid_bytes"])
            batch_of = {b["position"]: b for b in out["batches"]}
            rows = []
            for r in recs.to_dict(orient="records"):
                b = batch_of[int(r["batch_position"])]
                row = {c: int(r[c]) for c in ("position", "inner_position", "batch_position", "offset", "timestamp",
                                              "key_size", "value_size", "headers_count")}
                row["timestamp_type"] = b["timestamp_type"]
                row["sequence"] = _sequence(b["base_sequence"], int(r["offset_delta"]))
                row["header_keys"] = [k for k, _ in r["headers"]]
                if print_data and not b["is_control"]:
                    row.update(_shown(r["key"], "key", key_view))
                    row.update(_shown(r["value"], "payload", value_view))
                rows.append(row)
            out["records"] = rows
            _record_extras(path, kind, batches, out["records"], whole)
            if decoder:
                _add_decoded(out["records"], whole, decoder)
    return out


def _add_decoded(records: list[dict[str, Any]], source, decoder: str) -> None:
    from rmqlab.kafka.internal_topics import describe_records

    decoded = describe_records(source, decoder)
    for r in records:
        if r["offset"] in decoded:
            r["key"], r["payload"] = decoded[r["offset"]]


def _dump_files(names: list[str]) -> list[Path]:
    """The files a dump reads: each FILE as given, each DIR's files in order
    (:func:`rmqlab.kafka.dirfiles.dump_order`: a partition directory segment by segment, a log
    directory partition by partition). Raises UsageError for a file of another kind and a
    directory with nothing to dump."""
    from rmqlab.errors import InputError
    from rmqlab.kafka.dirfiles import dump_order

    files: list[Path] = []
    for name in names:
        target = Path(name)
        if target.is_dir():
            found = dump_order(target)
            if not found:
                raise InputError("no Kafka partition files (.log, .index, .timeindex, .snapshot, ...) and no "
                                 "partition directories (<topic>-<partition>) in it", path=target)
            files.extend(found)
            continue
        _kind(target)
        files.append(target)
    return files


def _dump(args) -> int:
    """Dump every file; a damaged one is dumped up to its damage, which is then reported on
    stderr, and the next file follows. Exit 1 when any file was damaged (a torn tail, a batch
    that cannot be read, a CRC that does not verify), as for any bad input."""
    if args.max_bytes is not None and args.max_bytes < 0:
        raise UsageError("--max-bytes must be >= 0")
    decoder = getattr(args, "decoder", None)
    key_view, value_view = _record_views(args, decoder)
    print_data = args.print_data_log or key_view is not None or value_view is not None
    damaged = 0
    for path in _dump_files(args.files):
        fast = None if args.json or print_data or decoder else _log_text(path, args.records, args.max_bytes)
        if fast is not None:
            text, d = fast
            _write_bytes(text)
            _report_bound(d)
            continue
        d = dump_file(path, records=args.records, print_data=print_data, decoder=decoder,
                      base_offset=args.base_offset, max_bytes=args.max_bytes, key_view=key_view,
                      value_view=value_view)
        if args.json:
            print(json.dumps(d, default=str))     # a decoder may return values JSON has no type for
        else:
            _print_dump(d)
        _report_bound(d)
        _report_decode_errors(d)
        damaged += _report_damage(d, args.command_line_words)
    if not args.json:
        _print_dump_leftovers(args.files)
    return DAMAGE_FOUND if damaged else 0


def _record_views(args, decoder: str | None) -> tuple[BodyView | None, BodyView | None]:
    """The views of keys and values that --body, --charset, --key-decoder and --value-decoder
    ask for; None for kafka-dump-log's StringDecoder (the default, kept character for
    character). A decoder, or a --body other than none, implies --print-data-log as
    kafka-dump-log's decoder classes do."""
    mode = args.body
    if mode is None and args.charset.replace("_", "-").lower() not in ("utf-8", "utf8"):
        mode = "text"        # another charset is asked for: text in it, not UTF-8
    if decoder and (mode is not None or args.key_decoder or args.value_decoder):
        raise UsageError(f"--{decoder}-decoder shows the records it decodes: --body, --charset, --key-decoder and "
                         f"--value-decoder do not apply")

    def view(spec: str | None, option: str) -> BodyView | None:
        if spec is None and mode is None:
            return None
        return BodyView(mode or "text", charset=args.charset, decoder=spec, option=option)
    return view(args.key_decoder, "--key-decoder"), view(args.value_decoder, "--value-decoder")


def _report_bound(d: dict[str, Any]) -> None:
    """Say on stderr where --max-bytes stopped a file's dump and that the rest was not read."""
    if d.get("unread_from") is None:
        return
    at, rest = d["unread_from"], d["unread_bytes"]
    print(f"rmqlab: {d['file']}: --max-bytes {d['max_bytes']}: stopped at position {at}, before the batch there "
          f"({d['unread_reason']}); the last {rest:,} byte{'s' * (rest != 1)} of the file were not read",
          file=sys.stderr)


def _report_decode_errors(d: dict[str, Any]) -> None:
    """Say on stderr how many keys and values a decoder (or --charset) could not show; they are
    shown as base64 with the error, and the dump went on."""
    for field, what in (("key", "key"), ("payload", "value")):
        bad = [r for r in d.get("records", []) if f"{field}_error" in r]
        if bad:
            print(f"rmqlab: warning: {d['file']}: {len(bad)} {what}{'s' * (len(bad) != 1)} shown as base64, the "
                  f"first at offset {bad[0]['offset']}: {bad[0][f'{field}_error']}", file=sys.stderr)


def _print_dump_leftovers(names: list[str]) -> None:
    """The files of a partition directory a dump skips because a restart removes or renames
    them (``.deleted``, ``.cleaned``, ``.swap``, ...): what the next load does with each."""
    from rmqlab.kafka.loader import load_plan
    from rmqlab.kafka.logdir import is_log_dir

    for name in names:
        target = Path(name)
        if not target.is_dir() or is_log_dir(target):
            continue
        plan = load_plan(target)
        for r in plan[plan["kind"].str.contains(":") | plan["kind"].isin(["deleted", "cleaned", "swap", "tmp"])]\
                .to_dict(orient="records"):
            print(f"Left over: {target / r['file']}: {r['action']} on the next load ({r['reason']})")


def _report_damage(d: dict[str, Any], words) -> int:
    """Say on stderr where and why a file's dump stopped, and which batches' CRCs fail: 1 when
    there was anything to say."""
    if d.get("crc_errors"):
        bad = [b for b in d["batches"] if not b["crc_ok"]]
        print(f"rmqlab: error: {d['file']}: {len(bad)} batch{'es' * (len(bad) != 1)} whose CRC-32C does not "
              f"verify (isvalid: false), the first at position {bad[0]['position']}", file=sys.stderr)
    damage = d.get("damage")
    if damage is not None:
        from rmqlab.kafka.log import SegmentDamage

        text = str(SegmentDamage(**{k: v for k, v in damage.items() if k not in ("file", "invalid_bytes")},
                                 path=damage["file"]))
        whole = len(d["batches"])
        print(f"rmqlab: error: {words(text)}; dumped the {whole} whole batch{'es' * (whole != 1)} before it "
              f"({damage['position']:,} bytes), {damage['invalid_bytes']:,} bytes not read", file=sys.stderr)
    return int(bool(d.get("crc_errors")) or damage is not None)


def _print_dump(d: dict[str, Any]) -> None:
    """One file's dump as text, as kafka-dump-log prints it."""
    print(f"Dumping {d['file']}")
    if d["kind"] not in ("index", "timeindex", "log", "checkpoint"):
        _print_other(d)
        return
    if d["kind"] == "checkpoint":
        print("KRaft bootstrap snapshot" if d["end_offset"] is None
              else f"Snapshot end offset: {d['end_offset']}, epoch: {d['epoch']}")
    if d["kind"] == "index":
        for e in d["entries"]:
            print(f"offset: {e['offset']} position: {e['position']}")
    elif d["kind"] == "timeindex":
        for e in d["entries"]:
            print(f"timestamp: {e['timestamp']} offset: {e['offset']}")
    else:
        records_of: dict[int, list] = {}
        for r in d.get("records", []):
            records_of.setdefault(r["batch_position"], []).append(r)
        for b in d["batches"]:
            print(_batch_line(b))
            for r in records_of.get(b["position"], []):
                print(_record_line(r))
        if d["invalid_bytes"] and d.get("max_bytes") in (None, KAFKA_MAX_BYTES):
            # DumpLogSegments.dumpLog's last line for bytes its batch iteration did not reach,
            # printed only when --max-bytes is its default (Integer.MAX_VALUE)
            print(f"Found {d['invalid_bytes']} invalid bytes at the end of {Path(d['file']).name}")


def _write_bytes(data: bytes) -> None:
    """`data` to stdout after what was printed before it, 64 KiB a write: one write of megabytes
    into a pipe whose reader went away ends short without an error, where the next write of a
    piece raises the BrokenPipeError the command line turns into the SIGPIPE status."""
    sys.stdout.flush()
    if not hasattr(sys.stdout, "buffer"):      # a text stream (a test's StringIO)
        sys.stdout.write(data.decode())
        return
    view = memoryview(data)
    for at in range(0, len(view), 1 << 16):
        sys.stdout.buffer.write(view[at:at + (1 << 16)])
    sys.stdout.buffer.flush()


def _log_text(path: Path, records: bool, max_bytes: int | None) -> tuple[bytes, dict[str, Any]] | None:
    """A ``.log``'s text dump (UTF-8) as :func:`_print_dump` prints :func:`dump_file`'s dict, made column
    by column in C (:func:`rmqlab.tables.text.format_rows`) instead of a line at a time, and the
    dict's fields the stderr reports read; None where it does not apply (another file, a KRaft
    metadata log, control or magic 0/1 batches, damage, a CRC that does not verify: the
    line-by-line path prints those). Cost: O(batches + records) in C, two passes over the
    columns; a Python string only for a record's header keys, where it has headers."""
    import numpy as np

    from rmqlab.kafka.log import (
        COMPRESSION_CODEC_MASK,
        TIMESTAMP_TYPE_MASK,
        TIMESTAMP_TYPES,
        compression_name,
        read_batches,
        read_records,
    )
    from rmqlab.tables.text import format_rows, interleave

    if _kind(path) != "log" or path.parent.name.startswith("__cluster_metadata-"):
        return None
    batches = read_batches(path, on_damage="report", max_bytes=max_bytes)
    walk = batches.attrs["report"]
    if (walk.damage is not None or not bool(batches["crc_ok"].all()) or bool(batches["is_control"].any())
            or bool((batches["magic"] < 2).any())):
        return None
    n = len(batches)

    def col(name: str) -> np.ndarray:
        return batches[name].to_numpy(np.int64)

    attrs = col("attributes")
    ts_type = ((attrs & TIMESTAMP_TYPE_MASK) >> 3, TIMESTAMP_TYPES)
    flags = ("false", "true")
    batch_text, batch_ends = format_rows([
        "baseOffset: ", col("base_offset"), " lastOffset: ", col("last_offset"), " count: ", col("records_count"),
        " producerId: ", col("producer_id"), " producerEpoch: ", col("producer_epoch"),
        " baseSequence: ", col("base_sequence"), " partitionLeaderEpoch: ", col("partition_leader_epoch"),
        " isTransactional: ", (batches["is_transactional"].to_numpy(bool), flags), " isControl: false position: ",
        col("position"), " ", ts_type, ": ", col("max_timestamp"), " size: ", col("size"),
        " magic: 2 compresscodec: ", (attrs & COMPRESSION_CODEC_MASK, tuple(compression_name(c) for c in range(8))),
        " crc: ", col("crc"), " isvalid: true\n"], n)
    body = batch_text
    if records and n:
        recs = read_records(path, values=False, headers=False, on_damage="report", max_bytes=max_bytes)
        if recs.attrs["report"].damage is not None:
            return None
        if bool((recs["headers_count"].to_numpy(np.int64) > 0).any()):   # their keys are shown: read them
            recs = read_records(path, values=False, on_damage="report", max_bytes=max_bytes)
        of = np.searchsorted(col("position"), recs["batch_position"].to_numpy(np.int64))
        if bool((np.diff(of) < 0).any()):
            return None
        seq = _sequences(col("base_sequence")[of], recs["offset_delta"].to_numpy(np.int64))
        with_headers = np.flatnonzero(recs["headers_count"].to_numpy(np.int64) > 0)
        headers: Any = "[]"
        if len(with_headers):
            shown = ["[]"] * len(recs)
            for i in with_headers.tolist():
                shown[i] = "[" + ",".join(k for k, _ in recs["headers"].iat[i]) + "]"
            headers = shown
        record_text, record_ends = format_rows([
            "| offset: ", recs["offset"].to_numpy(np.int64), " ", (ts_type[0][of], TIMESTAMP_TYPES), ": ",
            recs["timestamp"].to_numpy(np.int64), " keySize: ", recs["key_size"].to_numpy(np.int64),
            " valueSize: ", recs["value_size"].to_numpy(np.int64), " sequence: ", seq, " headerKeys: ", headers,
            "\n"], len(recs))
        # each batch's line, then its records' lines (they are in file order, batch by batch)
        body = interleave(batch_text, batch_ends, record_text, record_ends, np.bincount(of, minlength=n))
    unread_from = walk.unread_from
    unread_bytes = 0 if unread_from is None else walk.file_size - unread_from
    valid = walk.file_size - unread_bytes
    d = {"file": str(path), "kind": "log", "max_bytes": max_bytes, "unread_from": unread_from,
         "unread_bytes": unread_bytes, "unread_reason": walk.unread_reason if unread_from is not None else None,
         "valid_bytes": valid, "invalid_bytes": 0, "crc_errors": 0, "damage": None}
    return f"Dumping {path}\n".encode() + body, d


def _batch_line(b: dict[str, Any]) -> str:
    """A batch as kafka-dump-log prints it (DumpLogSegments.dumpLog): a v2 batch with its
    producer fields, a legacy (magic 0/1) entry by its offset alone."""
    tail = (f"{b['timestamp_type']}: {b['max_timestamp']} size: {b['size']} magic: {b['magic']} "
            f"compresscodec: {b['compression']} crc: {b['crc']} isvalid: {str(b['crc_ok']).lower()}")
    if b["magic"] < 2:
        return f"offset: {b['last_offset']} position: {b['position']} " + tail
    return (f"baseOffset: {b['base_offset']} lastOffset: {b['last_offset']} count: {b['records_count']} "
            f"producerId: {b['producer_id']} producerEpoch: {b['producer_epoch']} "
            f"baseSequence: {b['base_sequence']} partitionLeaderEpoch: {b['partition_leader_epoch']} "
            f"isTransactional: {str(b['is_transactional']).lower()} "
            f"isControl: {str(b['is_control']).lower()} position: {b['position']} " + tail)


def _record_line(r: dict[str, Any]) -> str:
    """A record as kafka-dump-log prints it under its batch (DumpLogSegments.dumpLog)."""
    line = (f"| offset: {r['offset']} {r['timestamp_type']}: {r['timestamp']} keySize: {r['key_size']} "
            f"valueSize: {r['value_size']} sequence: {r['sequence']} headerKeys: [{','.join(r['header_keys'])}]")
    if r.get("key") is not None:
        line += f" key: {_shown_text(r, 'key')}"
    if r.get("payload") is not None and "metadata" not in r:
        # a KRaft metadata record: its payload is the decoded record alone, as the tool's
        # --cluster-metadata-decoder prints it (never the raw bytes before it)
        line += f" payload: {_shown_text(r, 'payload')}"
    return line + _decoded_suffix(r)


def _shown_text(r: dict[str, Any], field: str) -> str:
    """A key or payload on a record line: a str as it is (kafka-dump-log prints the decoder's
    toString), any other value a decoder gave as JSON; bytes it could not show as base64 with
    the error after them in brackets."""
    v = r[field]
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
    if f"{field}_error" in r:
        text += f" [{r[f'{field}_encoding']}: {r[f'{field}_error']}]"
    return text


def _decoded_suffix(r: dict) -> str:
    """What follows a record line: its decoded control record or metadata payload."""
    if "control" in r:
        return f" {r['control']}"
    if "metadata" in r:
        return f" payload: {r['metadata']}"
    if "decode_error" in r:
        return f" payload: Error at {r['offset']}, skipping. {r['decode_error']}"
    return ""


def _print_other(d: dict) -> None:
    """The kinds besides segments, as kafka-dump-log prints those it knows (.snapshot, .txnindex)."""
    kind = d["kind"]
    if kind in _LOG_DIR_KINDS:
        return _print_log_dir_file(d)
    if kind == "snapshot":
        import pandas as pd

        from rmqlab.kafka.producer_state import producer_snapshot_lines

        for line in producer_snapshot_lines(pd.DataFrame(d["entries"])) if d["entries"] else []:
            print(line)
    elif kind == "txnindex":
        import pandas as pd

        from rmqlab.kafka.txnindex import txn_index_lines

        for line in txn_index_lines(pd.DataFrame(d["entries"])) if d["entries"] else []:
            print(line)
    elif kind == "leader-epoch-checkpoint":
        for e in d["entries"]:
            print(f"epoch: {e['epoch']} startOffset: {e['start_offset']}")
    elif kind == "partition.metadata":
        print(f"version: {d['version']} topicId: {d['topic_id']} ({d['topic_uuid']})")
    else:
        print(" ".join(f"{k}: {json.dumps(v, separators=(',', ':'))}" for k, v in d["state"].items()))


def _verify(args) -> int:
    if args.index_interval_bytes is not None and args.index_interval_bytes < 0:
        print("rmqlab: error: --index-interval-bytes must be >= 0", file=sys.stderr)
        return 2
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be >= 1")
    target = Path(args.target)
    if not target.exists():
        raise FileNotFoundError(2, "No such file or directory", str(target))
    opts = dict(index_interval_bytes=args.index_interval_bytes, rolled=False if args.active else None)
    if target.is_dir() and args.base_offset is not None:
        raise UsageError("--base-offset names one segment's base offset: give SEGMENT.log, not a directory")
    reports, files = _verify_target(target, opts, args.base_offset, args.jobs)
    words = args.command_line_words
    failed = sum(not r.ok for r in reports)
    bad_files = sum(not f.ok for f in files)
    if args.json:
        print(json.dumps({"target": str(target), "segments": len(reports), "failed": failed,
                          "reports": [_worded(r.as_dict(), words) for r in reports],
                          "files": [{"file": str(f.file), "kind": f.kind, "ok": f.ok, "summary": f.summary,
                                     "problems": list(f.problems), "notes": list(f.notes)} for f in files],
                          "files_failed": bad_files}, indent=2))
    else:
        for r in reports:
            print(r.summary())
            for restart in r.restarts:
                print(f"  {restart.describe()}")
            for note in r.notes:
                print(f"  note: {words(note)}")
            for e in r.errors:
                print(f"  error: {words(e)}")
            for m in r.mismatches:
                line = f"  {m.kind} {m.entry}: expected {m.expected}, found {m.found}"
                print(line + (f": {m.explanation}" if m.explanation else ""))
        for f in files:
            print(f"{f.file}: {'ok' if f.ok else 'FAILED'}: {f.summary}")
            for note in f.notes:
                print(f"  note: {note}")
            for problem in f.problems:
                print(f"  error: {problem}")
        print(f"{len(reports)} segments, {failed} failed" + (f"; {len(files)} other files, {bad_files} failed"
                                                             if files else ""))
    return VERIFY_FAILED if failed or bad_files else 0


def _worded(report: dict[str, Any], words) -> dict[str, Any]:
    """A segment report's notes and errors in command-line words (options, not keywords)."""
    return {**report, "notes": [words(n) for n in report["notes"]], "errors": [words(e) for e in report["errors"]]}


def _rebuild(args) -> int:
    from rmqlab.kafka.rebuild import rebuild_indexes

    if args.index_interval_bytes < 0:
        print("rmqlab: error: --index-interval-bytes must be >= 0", file=sys.stderr)
        return 2
    if args.restart_at and args.no_restarts:
        raise UsageError("--restart-at and --no-restarts exclude each other")
    restarts = () if args.no_restarts else args.restart_at
    try:
        index, timeindex = rebuild_indexes(args.log, args.out, index_interval_bytes=args.index_interval_bytes,
                                           rolled=not args.active, overwrite=args.overwrite, restarts=restarts,
                                           broker=args.broker_release, time_entry_offset=args.time_entry_offset)
    except (FileExistsError, ValueError) as e:
        raise UsageError(str(e)) from e
    from rmqlab.kafka.index import entry_count

    print(f"wrote {index} ({entry_count(index)} entries) and {timeindex} ({entry_count(timeindex)} entries)")
    return 0


# ------------------------------------------------------------------ a log directory as a whole
# `rmqlab kafka groups DIR...` answers kafka-consumer-groups --describe from the files;
# `rmqlab kafka logdir DIR` is the offline kafka-log-dirs --describe: what the broker's own files
# at the top of the directory say of each partition, beside what its folder holds. Both are
# their own commands, not sections of dump (one file as written) or verify (a verdict).


def _register_log_dir(ksub) -> None:
    p = ksub.add_parser("groups", help="consumer groups of a log directory: committed offsets, log end offsets, lag")
    p.add_argument("dirs", nargs="+", metavar="DIR",
                   help="a Kafka log directory (or a __consumer_offsets-N folder); partitions are looked for in all")
    p.add_argument("--json", action="store_true", help="one JSON object a (group, topic, partition) on stdout")
    p.set_defaults(run=_groups)

    p = ksub.add_parser("logdir", help="a log directory's checkpoints, meta.properties and clean-shutdown marker "
                                       "against its partitions")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--all", action="store_true", help="also the partitions named in a checkpoint but not here")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(run=_logdir)


def _verify_target(target: Path, opts: dict[str, Any], base_offset: int | None = None,
                   jobs: int | None = None) -> tuple[list, list]:
    """verify's reports: a segment (its base offset `base_offset` where its name does not say
    it), a partition folder, or every folder of a log directory and the directory's own files
    (their segments over `jobs` processes)."""
    from rmqlab.kafka.logdir import is_log_dir, verify_log_dir
    from rmqlab.kafka.rebuild import verify_partition, verify_segment

    if not target.is_dir():
        return [verify_segment(target, base_offset=base_offset, **opts)], []
    return (verify_log_dir(target, jobs=jobs, **opts) if is_log_dir(target)
            else verify_partition(target, jobs=jobs, **opts))


def _json_value(v: Any) -> Any:
    import math

    import pandas as pd

    if v is None or v is pd.NA:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    return v.item() if hasattr(v, "item") else v


def _table(header: list[str], rows: list[list[Any]], indent: str = "") -> list[str]:
    cells = [header] + [["-" if _json_value(c) is None else str(_json_value(c)) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]


def _groups(args) -> int:
    from rmqlab.kafka.groups import consumer_lag

    for d in args.dirs:
        if not Path(d).is_dir():
            raise UsageError(f"{d}: not a directory")
    df = consumer_lag(args.dirs)
    if args.json:
        for r in df.to_dict(orient="records"):
            print(json.dumps({k: _json_value(v) for k, v in r.items()}))
        return 0
    if not len(df):
        print("no consumer group: no __consumer_offsets partition here holds one")
        return 0
    for n, (group, rows) in enumerate(df.groupby("group", sort=True)):
        g = rows.iloc[0]
        protocol = "/".join(str(x) for x in (g["protocol_type"], g["protocol"]) if _json_value(x) is not None)
        generation = _json_value(g["generation"])
        meta = _json_value(g["metadata_record_offset"])
        print(("\n" if n else "") + f"GROUP {group}: {g['state']}" + (f", {protocol}" if protocol else "")
              + (f", generation {generation}" if generation is not None else "")
              + f", {int(g['member_count'])} member(s) (in __consumer_offsets-{int(g['offsets_partition'])}"
              + (f", last group metadata at offset {meta})" if meta is not None else ", no group metadata)"))
        parts = rows[rows["topic"].notna()]
        if not len(parts):
            print("  no committed offsets")
            continue
        body = [[r["topic"], r["partition"], r["committed_offset"], r["log_end_offset"],
                 r["note"] if r["note"] is not None else r["lag"], r["consumer_id"], r["client_host"], r["client_id"]]
                for r in parts.to_dict(orient="records")]
        for line in _table(["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                            "CLIENT-ID"], body, "  "):
            print(line)
    return 0


def _logdir(args) -> int:
    from rmqlab.errors import RmqlabError
    from rmqlab.kafka.logdir import (
        CLEAN_SHUTDOWN,
        META_PROPERTIES,
        check_log_dir,
        log_dir_partitions,
        read_clean_shutdown,
        read_meta_properties,
    )

    d = Path(args.dir)
    if not d.is_dir():
        raise UsageError(f"{d}: not a directory")
    checks = check_log_dir(d)
    # a file the broker refuses leaves its part out here; its check below says why
    try:
        parts = log_dir_partitions(d)
    except RmqlabError:
        parts = None
    try:
        meta = read_meta_properties(d / META_PROPERTIES) if (d / META_PROPERTIES).exists() else None
    except RmqlabError:
        meta = None
    shutdown = read_clean_shutdown(d / CLEAN_SHUTDOWN)
    if args.json:
        out = {"log_dir": str(d), "meta_properties": meta, "clean_shutdown": shutdown,
               "partitions": [] if parts is None else
               [{k: _json_value(v) for k, v in r.items()} for r in parts.to_dict(orient="records")
                if args.all or r["directory"] is not None],
               "files": [{"file": str(c.file), "kind": c.kind, "ok": c.ok, "summary": c.summary,
                          "problems": list(c.problems), "notes": list(c.notes)} for c in checks],
               "load_plan": _load_plan_rows(d)}
        print(json.dumps(out))
        return 0
    print(f"Log directory {d}")
    if parts is not None:
        shown = parts if args.all else parts[parts["directory"].notna()]
        body = []
        for r in shown.to_dict(orient="records"):
            start = _json_value(r["first_base_offset"])
            lso = _json_value(r["log_start_checkpoint"])
            if start is not None and lso is not None:
                start = max(start, lso)      # LogLoader: max(checkpoint, first segment's base offset)
            rec = _json_value(r["recovery_from"])
            body.append([r["topic"], r["partition"], r["directory"], r["segments"], r["segments_bytes"], start,
                         r["log_end_offset"], r["high_watermark"], r["recovery_point"], r["cleaner_offset"],
                         "-" if rec is None else f"from {rec}: {int(r['recovery_bytes'])} B"])
        for line in _table(["TOPIC", "PARTITION", "FOLDER", "SEGMENTS", "BYTES", "LOG-START", "LOG-END-OFFSET",
                            "HIGH-WATERMARK", "RECOVERY-POINT", "CLEANER-OFFSET", "UNCLEAN-RESTART-RECHECKS"], body):
            print(line)
    for c in checks:
        print(f"{c.file.name}: {'ok' if c.ok else 'PROBLEM'}: {c.summary}")
        for note in c.notes:
            print(f"  note: {note}")
        for problem in c.problems:
            print(f"  problem: {problem}")
    _print_load_plan(_load_plan_rows(d))
    return 0


def _load_plan_rows(log_dir: Path) -> list[dict[str, Any]]:
    """What the next broker start does with the log directory's files beyond keeping or
    recovering segments (:func:`rmqlab.kafka.loader.log_dir_plan`), as JSON rows."""
    from rmqlab.kafka.loader import log_dir_plan

    return [{k: _json_value(v) for k, v in r.items()} for r in log_dir_plan(log_dir).to_dict(orient="records")]


def _print_load_plan(rows: list[dict[str, Any]]) -> None:
    if rows:
        print("Next load (LogLoader):")
    for r in rows:
        print(f"  {r['partition']}/{r['file']}: {r['action']}: {r['reason']}"
              + (f" PROBLEM: {r['problem']}" if r["problem"] else ""))


def _dump_log_dir_file(path: Path, kind: str, out: dict[str, Any]) -> None:
    from rmqlab.kafka import logdir

    if kind == logdir.META_PROPERTIES:
        out.update(logdir.read_meta_properties(path))
    elif kind == logdir.CLEAN_SHUTDOWN:
        out.update(logdir.read_clean_shutdown(path))
    else:
        df = logdir.read_offset_checkpoint(path)
        out["version"] = 0
        out["entries"] = [_plain(r) for r in df.to_dict(orient="records")]


def _print_log_dir_file(d: dict[str, Any]) -> None:
    """A log directory's file as dump prints it: the checkpoint's header and lines, the
    properties, the marker's content."""
    if d["kind"] == "meta.properties":
        for k, v in d["properties"].items():
            print(f"{k}={v}")
    elif d["kind"] == ".kafka_cleanshutdown":
        epoch = d["broker_epoch"]
        print("clean shutdown marker" + ("" if epoch is None else f": version {d['version']} brokerEpoch {epoch}")
              + (f" ({d['note']})" if d["note"] else ""))
    else:
        print(f"version: {d['version']} entries: {len(d['entries'])}")
        for e in d["entries"]:
            print(f"topic: {e['topic']} partition: {e['partition']} offset: {e['offset']}")
