"""How the command line shows a message body (RocketMQ) or a record's key and value (Kafka):
``--body text|hex|base64|json|none``, ``--charset`` and ``--decoder pkg.mod:fn``.

A decoder is any Python callable a user already has, named by import path as in
``kafka-dump-log --value-decoder-class``: it gets the bytes (a RocketMQ body after
decompression, a Kafka key or value) and returns what to show: a str, or any JSON-ready value.
Avro and Protobuf decoders are a few lines over the libraries users already use; the README
shows both. A decoder that raises shows the bytes as base64 with the error beside them, so one
bad body does not stop a dump.

>>> show = BodyView("hex")
>>> show.render(b"\\x00\\xff")
{'body': '00ff', 'body_encoding': 'hex'}
>>> BodyView("text", charset="latin-1").render(b"caf\\xe9")
{'body': 'café', 'body_encoding': 'latin-1'}
"""
from __future__ import annotations

import base64
import codecs
import importlib
import json
from collections.abc import Callable
from typing import Any

from rmqlab.commands import UsageError

__all__ = ["BODY_MODES", "BodyView", "add_body_options", "body_view"]

#: what --body can show
BODY_MODES = ("text", "hex", "base64", "json", "none")


def add_body_options(p, *, default: str | None = "text", what: str = "body", decoder: bool = True,
                     default_help: str | None = None) -> None:
    """--body, --charset and --decoder on parser `p` (`what`: "body", or "key and value").
    `decoder` False leaves --decoder out (a command with decoders of its own); `default` None
    is a command's own rendering, which `default_help` describes."""
    p.add_argument("--body", choices=BODY_MODES, default=default,
                   help=f"how to show the {what}: text in --charset (undecodable bytes as base64), hex, base64, "
                        f"json (parsed), or none (default {default_help or default})")
    p.add_argument("--charset", default="utf-8", metavar="NAME",
                   help="the charset of --body text (default utf-8; mqadmin printMsg -c)")
    if decoder:
        p.add_argument("--decoder", default=None, metavar="MODULE:FUNCTION",
                       help=f"a Python callable that gets the {what}'s bytes and returns what to show (a str or "
                            f"any JSON value), e.g. myproject.codecs:decode_order")


def body_view(args) -> BodyView:
    """The :class:`BodyView` of a command's --body / --charset / --decoder."""
    return BodyView(args.body, charset=args.charset, decoder=args.decoder)


def _load_decoder(spec: str, option: str = "--decoder") -> Callable[[bytes], Any]:
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise UsageError(f"{option} {spec!r}: give MODULE:FUNCTION, e.g. json:loads")
    try:
        fn: Any = importlib.import_module(module)
        for part in name.split("."):
            fn = getattr(fn, part)
    except (ImportError, AttributeError) as e:
        raise UsageError(f"{option} {spec!r}: {e}") from None
    if not callable(fn):
        raise UsageError(f"{option} {spec!r}: {name} is not callable")
    return fn


class BodyView:
    """Renders bytes as a command was asked to: `mode` one of :data:`BODY_MODES`, text in
    `charset`, or through `decoder` ("module:function"; `option` names it in a usage error).
    Cost: O(bytes) a call."""

    def __init__(self, mode: str = "text", *, charset: str = "utf-8", decoder: str | None = None,
                 option: str = "--decoder"):
        if mode not in BODY_MODES:
            raise UsageError(f"--body {mode!r}: one of {', '.join(BODY_MODES)}")
        try:
            codecs.lookup(charset)
        except LookupError:
            raise UsageError(f"--charset {charset!r}: not a charset Python knows") from None
        self.mode, self.charset = mode, charset
        self.decoder = _load_decoder(decoder, option) if decoder else None

    @property
    def shown(self) -> bool:
        """Whether bodies are shown at all (not ``--body none`` without a decoder)."""
        return self.mode != "none" or self.decoder is not None

    def render(self, data: bytes | None, field: str = "body") -> dict[str, Any]:
        """`data` as ``{field: shown, field_encoding: how}``; a None key or value (Kafka) is
        None; with ``--body none`` and no decoder, nothing."""
        enc = f"{field}_encoding"
        if data is None:
            return {field: None}
        if self.decoder is not None:
            try:
                value = self.decoder(bytes(data))
                json.dumps(value, default=str)
                return {field: value, enc: "decoder"}
            except Exception as e:      # a user's decoder: any failure shows the bytes, not a traceback
                return {field: base64.b64encode(data).decode("ascii"), enc: "base64",
                        f"{field}_error": f"decoder: {type(e).__name__}: {e}"}
        if self.mode == "none":
            return {}
        if self.mode == "hex":
            return {field: bytes(data).hex(), enc: "hex"}
        if self.mode == "base64":
            return {field: base64.b64encode(data).decode("ascii"), enc: "base64"}
        try:
            text = bytes(data).decode(self.charset)
        except UnicodeDecodeError:
            return {field: base64.b64encode(data).decode("ascii"), enc: "base64",
                    f"{field}_error": f"not {self.charset}"}
        if self.mode == "json":
            try:
                return {field: json.loads(text), enc: "json"}
            except ValueError as e:
                return {field: text, enc: self.charset, f"{field}_error": f"not JSON: {e}"}
        return {field: text, enc: self.charset}

    def text(self, data: bytes | None, field: str = "body", width: int = 200) -> str:
        """The rendering as one line of text, cut to `width` characters."""
        r = self.render(data, field)
        if field not in r:
            return ""
        v = r[field]
        s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
        s = s if len(s) <= width else s[:width] + "..."
        label = r.get(f"{field}_encoding", "")
        err = f"; {r[f'{field}_error']}" if f"{field}_error" in r else ""
        return f"{field} ({label}{err}): {s}"
