"""The ``rmqlab`` command line: inspect and query index files and index folders.

Results go to stdout (human-readable, or JSON with ``--json``); logs and errors go to stderr.
Exit status: 0 success, 2 usage error, 1 a bad file (a typed :class:`rmqlab.RmqlabError`, or
a file that cannot be opened) or a command whose optional extra is not installed
(:class:`rmqlab.extras.MissingExtraError`, naming the extra); the message is printed without a
traceback.

Examples::

    rmqlab index info store/index/20240610061524062 --hash-slot-num 64 --index-num 200 --json
    rmqlab index query store/index --topic TopicTest --key ORDER_1 --begin 0 --trace
    rmqlab index query store/index --key 'TopicTest#ORDER_1'     # the key as stored
    python -m rmqlab index info ...

Also callable from Python: ``rmqlab.cli.main(["index", "info", path])`` returns the exit status.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import logging
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmqlab.commands import UsageError
from rmqlab.errors import RmqlabError
from rmqlab.extras import MissingExtraError
from rmqlab.formats.indexfile import LONG_MAX, IndexFile
from rmqlab.jvm.hashcode import index_key
from rmqlab.store.indexservice import (
    DEFAULT_MAX_MSGS_NUM_BATCH,
    DEFAULT_QUERY_MAX_NUM,
    IndexService,
    query_trace_dict,
)

__all__ = ["main", "index_file_info"]

log = logging.getLogger("rmqlab")


def _utc(ms: int) -> str | None:
    """ISO-8601 UTC for a ms timestamp; None when out of datetime's range."""
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return None


def index_file_info(f: IndexFile) -> dict[str, Any]:
    """Summary statistics of one index file, JSON-ready.

    Chain lengths come from one ``np.bincount`` of ``key_hash % hash_slot_num`` over the used
    entries (in a healthy file every entry hashed to a slot is on that slot's chain), so the
    cost is O(entries + slots) in NumPy, no Python loop: about a second for a full default
    420 MB file.

    >>> import tempfile, os
    >>> with IndexFile.create(os.path.join(tempfile.mkdtemp(), "f"), 4, 8) as f:
    ...     _ = f.put_key("T#a", 10, 1000); _ = f.put_key("T#a", 20, 3000)
    ...     index_file_info(f)["longest_chain"]
    {'length': 2, 'slot': 2}
    """
    g, h = f.geometry, f.header
    e = f.used_entries
    key_hash = e["key_hash"].astype(np.int64)
    slot_of = key_hash[key_hash >= 0] % g.hash_slot_num     # a corrupt negative hash has no slot
    chain = np.bincount(slot_of, minlength=g.hash_slot_num)
    occupied = int(np.count_nonzero(chain))
    longest = int(chain.max()) if len(chain) else 0
    problems = f.problems()
    return {
        "path": str(f.path),
        "file_name": f.path.name,
        "header": h.as_dict(),
        "geometry": {"hash_slot_num": g.hash_slot_num, "index_num": g.index_num,
                     "file_size": g.file_size, "capacity": g.capacity},
        "keys": h.keys,
        "is_write_full": f.is_write_full,
        "fill_pct": 100.0 * h.keys / g.capacity if g.capacity else 0.0,
        "occupied_slots": occupied,
        "occupied_slots_pct": 100.0 * occupied / g.hash_slot_num,
        "longest_chain": {"length": longest, "slot": int(chain.argmax()) if longest else None},
        "mean_chain_length": float(len(slot_of) / occupied) if occupied else None,
        "time_span": {"begin_timestamp": h.begin_timestamp, "end_timestamp": h.end_timestamp,
                      "span_ms": h.end_timestamp - h.begin_timestamp,
                      "begin_utc": _utc(h.begin_timestamp), "end_utc": _utc(h.end_timestamp)},
        "invariants_ok": not problems,
        "problems": [str(p) for p in problems],
    }


def _print_info(info: dict[str, Any]) -> None:
    h, g, t = info["header"], info["geometry"], info["time_span"]
    lc = info["longest_chain"]
    mean = info["mean_chain_length"]
    lines = [
        f"file              {info['path']}",
        f"geometry          {g['hash_slot_num']} slots, {g['index_num']} entries, {g['file_size']} bytes",
        f"keys              {info['keys']} of {g['capacity']} ({info['fill_pct']:.2f}%)"
        + ("  FULL" if info["is_write_full"] else ""),
        *(f"  {k:<18}{v}" for k, v in h.items()),
        f"occupied slots    {info['occupied_slots']} ({info['occupied_slots_pct']:.2f}%)",
        f"longest chain     {lc['length']}" + (f" (slot {lc['slot']})" if lc["slot"] is not None else ""),
        f"mean chain        {mean:.3f}" if mean is not None else "mean chain        -",
        f"time span         {t['begin_utc']} .. {t['end_utc']} ({t['span_ms'] / 1000:.3f} s)",
        f"invariants        {'ok' if info['invariants_ok'] else 'VIOLATED'}",
        *(f"  {p}" for p in info["problems"]),
    ]
    print("\n".join(lines))


def _cmd_info(args) -> int:
    with IndexFile.open(args.file, args.hash_slot_num, args.index_num, strict=False) as f:
        info = index_file_info(f)
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        _print_info(info)
    return 0


def _cmd_query(args, parser) -> int:
    target = Path(args.target)
    if target.is_dir():
        return _query_dir(args, target)
    if args.unique_key:
        parser.error("--unique-key needs a folder (it is an IndexService query)")
    max_num = DEFAULT_MAX_MSGS_NUM_BATCH if args.max is None else args.max
    key = _stored_key(args.topic, args.key)
    with IndexFile.open(target, args.hash_slot_num, args.index_num) as f:
        trace = f.trace_query(key, max_num, args.begin, args.end) if args.trace else None
        offsets = trace.results if trace else f.select_phy_offsets(key, max_num, args.begin, args.end)
        matched = f.is_time_matched(args.begin, args.end)
    if args.json:
        out = {"path": str(target), "key": key, "max_num": max_num, "begin": args.begin,
               "end": args.end, "is_time_matched": matched, "phy_offsets": offsets}
        if trace:
            out["trace"] = query_trace_dict(trace)
        print(json.dumps(out, indent=2))
    else:
        if trace:
            print(trace)
        print(f"{len(offsets)} offsets for {key!r}" + (": " + ", ".join(map(str, offsets)) if offsets else ""))
        if not matched:
            print("note: the file's time range does not touch [begin, end]; a broker would not search it")
    return 0


def _stored_key(topic: str | None, key: str) -> str:
    """The string looked up: ``topic#key`` as the broker's buildIndex puts it, or, without a
    topic, `key` as stored (brokers' own tests and tools put raw keys)."""
    return key if topic is None else index_key(topic, key)


def _query_dir(args, target: Path) -> int:
    hsn, inum = args.hash_slot_num, args.index_num
    with IndexService(target, hsn, inum, max_msgs_num_batch=args.max_msgs_num_batch, read_only=True) as svc:
        if args.unique_key:
            if args.max is not None:
                log.warning("--max is ignored with --unique-key: the broker uses %d", DEFAULT_QUERY_MAX_NUM)
            max_num = DEFAULT_QUERY_MAX_NUM
        else:
            max_num = DEFAULT_MAX_MSGS_NUM_BATCH if args.max is None else args.max
        trace = svc.trace_query(args.topic, args.key, max_num, args.begin, args.end) if args.trace else None
        result = trace.result if trace else svc.query_offset(args.topic, args.key, max_num, args.begin, args.end)
        n_files = len(svc)
    if args.json:
        out = {"path": str(target), "key": _stored_key(args.topic, args.key), "files": n_files,
               "max_num": min(max_num, args.max_msgs_num_batch), "begin": args.begin, "end": args.end,
               **result.as_dict()}
        if trace:
            out["trace"] = trace.as_dict()
        print(json.dumps(out, indent=2))
    else:
        if trace:
            print(trace)
        offs = result.phy_offsets
        print(f"{len(offs)} offsets for {_stored_key(args.topic, args.key)!r} in {n_files} files"
              + (": " + ", ".join(map(str, offs)) if offs else ""))
        print(f"index last update: timestamp {result.index_last_update_timestamp}, "
              f"phy offset {result.index_last_update_phyoffset}")
    return 0


#: Other command groups, each a module with register(subparsers) (see rmqlab.commands).
COMMAND_GROUPS: tuple[str, ...] = ("rmqlab.commands.commitlog", "rmqlab.commands.store", "rmqlab.commands.spark",
                                   "rmqlab.commands.capacity", "rmqlab.commands.kafka",
                                   "rmqlab.commands.verify")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rmqlab", description="RocketMQ message-store formats, byte for byte.")
    p.add_argument("-v", "--verbose", action="count", default=0, help="more log output on stderr")
    sub = p.add_subparsers(dest="command", required=True)
    index = sub.add_parser("index", help="IndexFile files and index folders")
    isub = index.add_subparsers(dest="index_command", required=True)

    def geometry(sp):
        sp.add_argument("--hash-slot-num", type=int, metavar="N",
                        help="the broker's maxHashSlotNum (default: inferred; 5000000 for a default-size file)")
        sp.add_argument("--index-num", type=int, metavar="N",
                        help="the broker's maxIndexNum (default: inferred; 20000000 for a default-size file)")
        sp.add_argument("--json", action="store_true", help="print JSON to stdout")

    info = isub.add_parser("info", help="header, geometry, slot occupancy, chain lengths, invariants")
    info.add_argument("file", metavar="FILE")
    geometry(info)

    q = isub.add_parser("query", help="offsets of topic#key: one file (selectPhyOffset) "
                                      "or a folder (IndexService.queryOffset)")
    q.add_argument("target", metavar="FILE_OR_DIR")
    q.add_argument("--topic", help="the message's topic: KEY is looked up as TOPIC#KEY, as the broker indexes "
                                   "it (default: KEY as stored, for raw keys)")
    q.add_argument("--key", required=True)
    q.add_argument("--begin", type=int, default=0, metavar="MS", help="start of the time range, ms (default 0)")
    q.add_argument("--end", type=int, default=LONG_MAX, metavar="MS",
                   help="end of the time range, ms (default Long.MAX_VALUE)")
    q.add_argument("--max", type=int, metavar="N", help=f"maxNum (default {DEFAULT_MAX_MSGS_NUM_BATCH})")
    q.add_argument("--max-msgs-num-batch", type=int, default=DEFAULT_MAX_MSGS_NUM_BATCH, metavar="N",
                   help="folder queries: the broker's maxMsgsNumBatch cap on maxNum (default 64)")
    q.add_argument("--unique-key", action="store_true",
                   help=f"folder queries: KEY is a message id (UNIQ_KEY); maxNum {DEFAULT_QUERY_MAX_NUM} as the broker")
    q.add_argument("--trace", action="store_true", help="show every file and entry read and why the walk stopped")
    geometry(q)
    for module in COMMAND_GROUPS:
        importlib.import_module(module).register(sub)
    return p


#: library keywords whose command-line option has another name: the options tried, in order
KEYWORD_OPTION_ALIASES: dict[str, tuple[str, ...]] = {
    "mapped_file_size": ("consume_queue_file_size",),
}

_KEYWORD = re.compile(r"\b([a-z][a-z0-9_]*)=([^\s,;)]*)")


def invoked_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser of the command `args` were parsed for: ``rmqlab verify`` -> its parser."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subs[0].dest, None) if subs else None
        if name is None or name not in subs[0].choices:
            return parser
        parser = subs[0].choices[name]


def command_line_words(message: str, parser: argparse.ArgumentParser) -> str:
    """`message` with each ``keyword=value`` of the library written as the option of `parser`'s
    command that sets it (``pass kind=`` -> ``pass --kind``, ``hash_slot_num=64`` ->
    ``--hash-slot-num 64``, ``overwrite=True`` -> ``--overwrite``); other text is kept.

    Cost: one regular-expression pass over the message.

    >>> p = argparse.ArgumentParser(prog="rmqlab verify")
    >>> _ = p.add_argument("--kind"); _ = p.add_argument("--consume-queue-file-size", type=int)
    >>> command_line_words("cannot tell; pass kind=", p)
    'cannot tell; pass --kind'
    >>> command_line_words("every file is 600 bytes: pass mapped_file_size=600 to read them", p)
    'every file is 600 bytes: pass --consume-queue-file-size 600 to read them'
    """
    options = {a.dest: a for a in parser._actions if any(o.startswith("--") for o in a.option_strings)}

    def option(m: re.Match) -> str:
        action = next((options[d] for d in (m[1], *KEYWORD_OPTION_ALIASES.get(m[1], ())) if d in options), None)
        if action is None:
            return m[0]
        flag = next(o for o in action.option_strings if o.startswith("--"))
        if action.nargs == 0 or not m[2]:     # a switch (store_true), or no value given
            return flag
        return f"{flag} {m[2]}"

    return _KEYWORD.sub(option, message)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 bad file or missing extra, 2 usage)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:       # argparse: usage errors exit 2, --help exits 0
        return int(e.code or 0)
    _setup_logging(args.verbose)
    command = invoked_parser(parser, args)
    args.command_line_words = lambda message: command_line_words(message, command)
    for name in ("hash_slot_num", "index_num", "max"):
        v = getattr(args, name, None)
        if v is not None and v < (0 if name == "max" else 1):
            return _usage(parser, f"--{name.replace('_', '-')} must be {'>= 0' if name == 'max' else '> 0'}")
    if getattr(args, "max_msgs_num_batch", 1) < 0:
        return _usage(parser, "--max-msgs-num-batch must be >= 0")
    try:
        if hasattr(args, "run"):
            return int(args.run(args) or 0)
        if args.index_command == "info":
            return _cmd_info(args)
        return _cmd_query(args, parser)
    except SystemExit as e:
        return int(e.code or 0)
    except BrokenPipeError:
        # the reader of our output went away (`rmqlab kafka dump ... | head`): stop quietly, as
        # the Unix tools do; stdout is pointed at /dev/null so the interpreter's final flush
        # does not raise again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141   # 128 + SIGPIPE, what a shell reports for a reader that went away
    except UsageError as e:
        print(f"rmqlab: error: {command_line_words(str(e), command)}", file=sys.stderr)
        return 2
    # The library speaks in keyword names; on the command line they are options.
    except (RmqlabError, OSError, MissingExtraError) as e:   # OSError: a missing file, permissions
        print(f"rmqlab: error: {command_line_words(str(e), command)}", file=sys.stderr)
        return 1


def _usage(parser: argparse.ArgumentParser, message: str) -> int:
    try:
        parser.error(message)
    except SystemExit as e:
        return int(e.code)
    return 2  # pragma: no cover


def _setup_logging(verbose: int) -> None:
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    log.setLevel(level)
    if not any(getattr(h, "_rmqlab_cli", False) for h in log.handlers):
        h = _StderrHandler()
        h.setFormatter(logging.Formatter("rmqlab: %(levelname)s: %(message)s"))
        h._rmqlab_cli = True
        log.addHandler(h)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is at emit time (so test capture and redirection work)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
