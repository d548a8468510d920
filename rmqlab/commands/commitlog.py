"""`rmqlab commitlog ...`: look inside CommitLog files.

    rmqlab commitlog dump store/commitlog                   # every message, one block each
    rmqlab commitlog dump store/commitlog/00000000000000000000 --json --limit 10
    rmqlab commitlog dump store/commitlog --max-bytes 1048576 --body hex
    rmqlab commitlog dump store/commitlog --decoder myproject.codecs:decode_order

``dump`` reads with the message iterator (read-only memory maps) and prints, per message,
its position and every field, properties as an object, the body as ``--body`` asks
(:mod:`rmqlab.commands.bodies`: by default text in ``--charset``, UTF-8, and base64 with
``"body_encoding": "base64"`` when it is not; hex, base64, parsed JSON, none, or what a
``--decoder`` returns) and whether the body CRC matches. A compressed body (SYSFLAG 0x1) is
shown decompressed, as the consumer gets it (and as a decoder gets it), with its codec
(``"body_codec"``: zlib, lz4 or zstd) and stored size; ``--raw-body`` shows the stored bytes.
A body that cannot be shown as asked (not in the charset, not JSON, a decoder that raises) is
shown as base64 (or as text) with ``body_error`` saying why, and the dump goes on.
``--max-bytes N`` reads whole records adding up to at most N bytes and no further (the files
are mapped no further than that), then says on stderr at which CommitLog offset it stopped and
that the rest was not read (exit 0 unless damage was found in the bytes read).
A torn tail of the last file is reported on stderr (exit 0); damage inside a file is a typed
error (exit 1) unless ``--keep-going``, which reports it on stderr and continues with the next
file (exit 1 at the end).
"""
from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from rmqlab.commands import UsageError
from rmqlab.commands.bodies import BodyView, add_body_options, body_view

if TYPE_CHECKING:
    from rmqlab.formats.commitlog import Message


def message_dict(m: Message, *, decompress: bool = True, view: BodyView | None = None) -> dict[str, Any]:
    """One message as a JSON-ready dict (the `dump --json` line); with `decompress`, a compressed
    body as the consumer gets it (:func:`rmqlab.formats.commitlog.body.decompress_body`), else as
    stored. A body that does not decompress is shown as stored, with ``body_error``. `view`
    renders the body (``body``, ``body_encoding``, and ``body_error`` when it cannot be shown as
    asked); the default is text in UTF-8, base64 when it is not. Cost: O(body bytes).

    >>> from rmqlab.formats.commitlog import encode_message, read_message
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "00000000000000000000")
    >>> _ = open(f, "wb").write(encode_message(topic="T", body=b"hi"))
    >>> d = message_dict(read_message(f, 0), view=BodyView("hex"))
    >>> d["body"], d["body_encoding"], d["crc_ok"]
    ('6869', 'hex', True)
    """
    from rmqlab.errors import FormatError
    from rmqlab.formats.commitlog.body import codec_of, decompress_body

    out: dict[str, Any] = {
        "phy_offset": m.phy_offset, "position": m.position, "total_size": m.total_size,
        "version": m.version, "body_crc": m.body_crc, "queue_id": m.queue_id, "flag": m.flag,
        "queue_offset": m.queue_offset, "sys_flag": m.sys_flag, "born_timestamp": m.born_timestamp,
        "born_host": m.born_host, "store_timestamp": m.store_timestamp, "store_host": m.store_host,
        "reconsume_times": m.reconsume_times,
        "prepared_transaction_offset": m.prepared_transaction_offset, "topic": m.topic,
        "properties": m.properties,
    }
    body = m.body
    errors = []
    out["body_codec"] = codec_of(m.sys_flag)
    if out["body_codec"] is not None:
        out["stored_body_size"] = len(m.body)
        if decompress:
            try:
                body = decompress_body(m.body, m.sys_flag, path=m.path, offset=m.phy_offset)
            except FormatError as e:
                errors.append(e.reason)
    shown = (view or BodyView()).render(body)
    if "body_error" in shown:
        errors.append(shown.pop("body_error"))
    out.update(shown)
    if errors:
        out["body_error"] = "; ".join(errors)
    out["crc_ok"] = m.crc_ok
    out["offset_msg_id"] = m.offset_msg_id
    return out


def commitlog_target(target: str):
    """The CommitLog `target` names: a file, a folder of CommitLog files, or a store directory
    (its CommitLog: ``commitlog/``, a DLedger ledger's ``data/``). Raises InputError for a path
    that is none of them."""
    import re
    from pathlib import Path

    from rmqlab.errors import InputError
    from rmqlab.formats.storepaths import StorePaths

    p = Path(target)
    if not p.exists():
        raise InputError("no such file or directory", path=target)
    if p.is_file():
        return p
    if StorePaths(p).is_store() and not any(re.fullmatch(r"\d{20}", c.name) for c in p.iterdir()):
        return StorePaths(p).commitlog
    if not any(re.fullmatch(r"\d{20}", c.name) and c.is_file() for c in p.iterdir()):
        raise InputError("not a CommitLog folder or a store directory: it holds no file named by a 20-digit "
                         "offset", path=target)
    return p


def _cmd_dump(args) -> int:
    from rmqlab.formats.commitlog import iter_messages
    from rmqlab.tables.times import ms_to_iso

    if args.max_bytes is not None and args.max_bytes < 0:
        raise UsageError("--max-bytes must be >= 0")
    view = body_view(args)
    stream = iter_messages(commitlog_target(args.target), check_crc=False,
                           on_error="report" if args.keep_going else "raise", max_bytes=args.max_bytes)
    n = 0
    for m in stream:
        if args.limit is not None and n >= args.limit:
            break
        d = message_dict(m, decompress=not args.raw_body, view=view)
        if args.json:
            print(json.dumps(d, ensure_ascii=False, default=str))   # a decoder may return any value
        else:
            props = " ".join(f"{k}={v}" for k, v in d["properties"].items())
            print(f"phy {d['phy_offset']:>12}  size {d['total_size']:>6}  v{d['version']}  "
                  f"{d['topic']}[{d['queue_id']}]@{d['queue_offset']}  sysflag 0x{d['sys_flag'] & 0xFFFFFFFF:X}  "
                  f"msgId {d['offset_msg_id']}  uniqKey {d['properties'].get('UNIQ_KEY', '-')}\n"
                  f"    born {d['born_timestamp']} ({ms_to_iso(d['born_timestamp'])}) {d['born_host']}  "
                  f"store {d['store_timestamp']} ({ms_to_iso(d['store_timestamp'])}) {d['store_host']}  "
                  f"reconsume {d['reconsume_times']}  prepared {d['prepared_transaction_offset']}  "
                  f"flag {d['flag']}  crc {d['body_crc']} {'ok' if d['crc_ok'] else 'MISMATCH'}\n"
                  f"    properties: {props}" + (f"\n    body ({_body_label(d)}): {_body_text(d)}" if "body" in d
                                                   else ""))
        n += 1
    rep = stream.report
    if rep.unread_from is not None:
        print(f"rmqlab: --max-bytes {args.max_bytes}: stopped at CommitLog offset {rep.unread_from} "
              f"({rep.unread_reason}); the rest of the log was not read", file=sys.stderr)
    if rep.torn_tail is not None:
        print(f"rmqlab: warning: torn tail: {rep.torn_tail}", file=sys.stderr)
    for dmg in rep.damage:
        print(f"rmqlab: error: damage (rest of that file unreadable): {dmg}", file=sys.stderr)
    return 1 if rep.damage else 0


def _body_label(d: dict[str, Any]) -> str:
    what = d["body_encoding"]
    if d["body_codec"] is not None:
        what += f", {d['body_codec']}, {d['stored_body_size']} bytes stored"
    return what + (f"; {d['body_error']}" if "body_error" in d else "")


def _body_text(d: dict[str, Any]) -> str:
    """The body on the text dump's line: a str as it is, any other value (parsed JSON, what a
    decoder returned) as JSON; its first 200 characters."""
    v = d["body"]
    return (v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str))[:200]


def register(subparsers) -> None:
    p = subparsers.add_parser("commitlog", help="CommitLog files and folders")
    sub = p.add_subparsers(dest="commitlog_command", required=True)
    d = sub.add_parser("dump", help="print every message of a CommitLog file or commitlog/ folder")
    d.add_argument("target", metavar="FILE_OR_DIR")
    d.add_argument("--json", action="store_true", help="one JSON object per message per line")
    d.add_argument("--limit", type=int, metavar="N", help="print at most N messages")
    d.add_argument("--raw-body", action="store_true", help="show compressed bodies as stored, not decompressed")
    add_body_options(d)
    d.add_argument("--max-bytes", type=int, default=None, metavar="N",
                   help="read whole records adding up to at most N bytes (TOTALSIZE) and no further; stderr says "
                        "at which CommitLog offset the dump stopped")
    d.add_argument("--keep-going", action="store_true",
                   help="report damage on stderr and go on with the next file (exit 1)")
    d.set_defaults(run=_cmd_dump)
