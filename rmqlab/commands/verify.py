"""`rmqlab verify DIR|FILE`: every check of every file of a store, and across files.

    rmqlab verify store/                                  # a whole store directory
    rmqlab verify store/commitlog --json                  # a CommitLog folder, JSON report
    rmqlab verify store/index/20240610061524062 --hash-slot-num 64 --index-num 512
    rmqlab verify some/file --kind consumequeue --consume-queue-file-size 6000000
    rmqlab verify store/ --jobs 4                         # four processes; the same report

Prints one summary line a file (like ``kafka-dump-log`` / ``rmqlab kafka verify``), each
problem under its file (``error:`` or ``warning:``, check code, file, byte offset, field),
the cross-file line for a store, notes, and a total. Exit status: 0 when no error was found
(warnings allowed), 1 when one was (or the target cannot be read), 2 for a usage error. Inputs
are only read (see :mod:`rmqlab.verify`).

>>> import argparse
>>> p = argparse.ArgumentParser(prog="rmqlab"); register(p.add_subparsers(dest="command"))
>>> args = p.parse_args(["verify", "store", "--kind", "store", "--json"])
>>> args.target, args.kind, args.json, args.run is run
('store', 'store', True, True)
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from rmqlab.commands import UsageError
from rmqlab.commands.defaults import VERIFY_KINDS as KINDS

if TYPE_CHECKING:
    from rmqlab.verify import VerifyReport

#: Exit status when verify finds an error: the same as a bad file.
VERIFY_FAILED = 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="check every file of a store (or one file) and the files against each other")
    add_target_arguments(p)
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="processes to spread the work over: each CommitLog file and index file is checked in a "
                        "worker, the files joined in order, so the report is the same with any N (default: the "
                        "usable cores, at most one a file, and 1 for a store under 256 MiB; 1: one process)")
    p.add_argument("--json", action="store_true", help="print the report as JSON to stdout")
    p.set_defaults(run=run)


def add_target_arguments(p: argparse.ArgumentParser, uri_help: str | None = None) -> None:
    """The target and its settings, shared by ``rmqlab verify`` and ``rmqlab spark verify``
    (whose target may also be a URI: `uri_help` says how it is read)."""
    p.add_argument("target", metavar="DIR|FILE|URI" if uri_help else "DIR|FILE",
                   help="a store directory, a commitlog/, index/ or ConsumeQueue folder, or one file"
                        + (f"; or a URI: {uri_help}" if uri_help else ""))
    p.add_argument("--kind", choices=KINDS, help="what TARGET is (default: detected from its location, "
                                                  "name and first bytes)")
    p.add_argument("--hash-slot-num", type=int, metavar="N",
                   help="maxHashSlotNum of the index files (default: inferred from each file)")
    p.add_argument("--index-num", type=int, metavar="N",
                   help="maxIndexNum of the index files (default: inferred from each file)")
    p.add_argument("--commitlog-file-size", type=int, metavar="BYTES",
                   help="mappedFileSizeCommitLog (default: the most common CommitLog file size)")
    p.add_argument("--consume-queue-file-size", type=int, metavar="BYTES",
                   help="mappedFileSizeConsumeQueue (default: the most common ConsumeQueue file size)")
    p.add_argument("--slot-count-rule", choices=["new-slot", "every-put"], default="new-slot",
                   help="hash_slot_count rule: new-slot (RocketMQ >= 4.7.1, default) or every-put (<= 4.7.0)")
    p.add_argument("--broker-version", metavar="X.Y.Z",
                   help="the RocketMQ release that wrote the store, where its rules differ (e.g. 4.9.4: its "
                        "multi-dispatch rule); default: the newest rules")
    p.add_argument("--no-crc", action="store_true", help="skip the BODYCRC check of every message")
    p.add_argument("--commitlog-paths", default=None, metavar="P1,P2",
                   help="the folders of a CommitLog kept over several paths (the broker's storePathCommitLog "
                        "with commas, plus readOnlyCommitLogStorePaths); relative ones under DIR")
    p.add_argument("--tiered-index-geometry", default=None, metavar="SLOTS,ITEMS",
                   help="tieredStoreIndexFileMaxHashSlotNum,MaxIndexNum of tiered_index_file/ (default: from the "
                        "file size, else 5000000,20000000)")
    p.add_argument("--tiered-path", default=None, metavar="DIR",
                   help="the tiered store's file system (tieredStoreFilePath): check its segments against the store")


def print_report(report: VerifyReport, words: Callable[[str], str] = str) -> None:
    """The text form: per file its summary line and problems; cross-file problems; notes; total.
    `words` rewrites each problem and note for the command line (library keywords as options)."""
    for f in report.files:
        print(f.summary())
        for p in f.problems:
            print(f"  {words(str(p))}")
    lines = report.summary()[len(report.files):]
    if report.kind == "store":
        print(lines[0])
        for p in report.cross:
            print(f"  {words(str(p))}")
        lines = lines[1:]
    elif report.cross:
        for p in report.cross:
            print(f"  {words(str(p))}")
    for n in report.notes:
        print(f"note: {words(n)}")
    print(lines[-1])


def run(args) -> int:
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be >= 1")
    if args.jobs is None or args.jobs > 1:
        # the workers' fork server imports their modules while this process imports its own
        from rmqlab.commands.defaults import VERIFY_WORKER_MODULES
        from rmqlab.tables.pool import start_fork_server

        start_fork_server(VERIFY_WORKER_MODULES)
    from rmqlab.verify import verify_path

    return verified(args, lambda **settings: verify_path(args.target, jobs=args.jobs, **settings))


def verified(args, verify: Callable[..., VerifyReport]) -> int:
    """Run ``verify(**settings)`` with the settings `args` give (each checked first), show a
    progress line on a terminal, print the report (text or ``--json``) and return the exit
    status: the one flow of ``rmqlab verify`` and ``rmqlab spark verify``."""
    for name in ("commitlog_file_size", "consume_queue_file_size"):
        v = getattr(args, name)
        if v is not None and v <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be > 0")
    shown = []

    def progress(done: int, total: int) -> None:     # on a terminal only: logs and pipes stay clean
        print(f"\r{done / 2**20:,.1f} / {total / 2**20:,.1f} MiB of CommitLog checked", end="", file=sys.stderr,
              flush=True)
        shown.append(done)

    quiet = args.json or getattr(args, "quiet", False)
    try:
        report = verify(kind=args.kind, hash_slot_num=args.hash_slot_num, index_num=args.index_num,
                        commitlog_file_size=args.commitlog_file_size,
                        consume_queue_file_size=args.consume_queue_file_size, slot_count_rule=args.slot_count_rule,
                        check_crc=not args.no_crc, broker_version=args.broker_version,
                        commitlog_paths=[c for c in (args.commitlog_paths or "").split(",") if c] or None,
                        tiered_index_geometry=_geometry(args.tiered_index_geometry), tiered_path=args.tiered_path,
                        progress=progress if sys.stderr.isatty() and not quiet else None)
    except ValueError as e:       # cannot tell what the target is: the user must say
        raise UsageError(str(e)) from e
    if shown:
        print(file=sys.stderr)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, default=str))
    else:
        print_report(report, getattr(args, "command_line_words", str))
    return 0 if report.ok else VERIFY_FAILED


def _geometry(text: str | None) -> tuple[int | None, int | None]:
    """--tiered-index-geometry SLOTS,ITEMS (either may be empty)."""
    if not text:
        return (None, None)
    slots, _, items = text.partition(",")
    return (int(slots) if slots else None, int(items) if items else None)
