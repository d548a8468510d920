"""The ``rmqlab`` command line: the top-level parser, the dispatch to command groups, and the
error handling they share. Each group is a module of :mod:`rmqlab.commands` (``rmqlab index``
is :mod:`rmqlab.commands.index`, ...).

Results go to stdout (human-readable, or JSON with ``--json``); logs and errors go to stderr.
Exit status, one for each kind of failure (:data:`EXIT_STATUS`), its message printed once,
``rmqlab: error: PATH: ...``, without a traceback:

- 0: done, and nothing wrong was found;
- 1: damage: the files were read and something in them is wrong (``verify`` found problems, a
  dump stopped at a bad record, a typed :class:`rmqlab.RmqlabError` naming file, offset and
  field), or a command whose optional extra is not installed
  (:class:`rmqlab.extras.MissingExtraError`, naming the extra);
- 2: usage: an option is wrong or missing, including a setting the files leave a choice of
  (:class:`rmqlab.errors.AmbiguousSettingError`, listing the choices);
- 3: bad input: the path is not what the command reads (``PATH: no such file or directory``,
  not a store directory, not a file of that kind: :class:`rmqlab.errors.InputError`).

Examples::

    rmqlab index info store/index/20240610061524062 --hash-slot-num 64 --index-num 200 --json
    rmqlab index query store/index --topic TopicTest --key ORDER_1 --begin 0 --trace
    rmqlab store query store --topic TopicTest --key ORDER_1 --json
    python -m rmqlab index info ...

Start-up: only the group a command line names is imported (``rmqlab --help`` imports none), and
a group's module imports its heavy dependencies (NumPy, pandas, PyArrow, Spark) inside the
functions that run commands, so its parser is built from the standard library alone.

Also callable from Python: ``rmqlab.cli.main(["index", "info", path])`` returns the exit status.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import sys
from collections.abc import Sequence

from rmqlab.commands import UsageError
from rmqlab.errors import AmbiguousSettingError, InputError, RmqlabError
from rmqlab.extras import MissingExtraError

__all__ = ["main", "COMMAND_GROUPS", "EXIT_STATUS"]

#: the exit status of each kind of outcome
EXIT_STATUS = {"ok": 0, "damage": 1, "usage": 2, "bad input": 3}

log = logging.getLogger("rmqlab")

#: The command groups, in the order ``rmqlab --help`` lists them: name -> (module, one-line
#: help). Each module defines ``register(subparsers)``, which adds the group's parser with this
#: help (tests/commands/test_startup.py checks they agree). Only the module of the group a command
#: line names is imported; the others are listed by name and help alone.
COMMAND_GROUPS: dict[str, tuple[str, str]] = {
    "index": ("rmqlab.commands.index", "IndexFile files and index folders"),
    "commitlog": ("rmqlab.commands.commitlog", "CommitLog files and folders"),
    "store": ("rmqlab.commands.store", "a store directory: commitlog/, consumequeue/, index/, checkpoint"),
    "spark": ("rmqlab.commands.spark", "build and analyse index files, verify stores, with Spark "
                                       "(local[*], --master URL or --remote sc://HOST:PORT)"),
    "capacity": ("rmqlab.commands.capacity",
                 "capacity planning: disk, index files, query cost from a plan (TOML)"),
    "kafka": ("rmqlab.commands.kafka", "Kafka segments and log dirs: dump, verify, rebuild indexes, groups, logdir"),
    "verify": ("rmqlab.commands.verify",
               "check every file of a store (or one file) and the files against each other"),
    "completion": ("rmqlab.commands.completion",
                   "print a bash or zsh completion script: source <(rmqlab completion bash)"),
}


def _version() -> str:
    """The installed distribution's version (importlib.metadata: no import of the package's
    modules), or "unknown" when run from a checkout that was never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rmqlab")
    except PackageNotFoundError:
        return "unknown"


def _named_group(argv: Sequence[str]) -> str | None:
    """The command group `argv` names: its first word that is not an option (the top-level
    options, -h and -v, take no value), or None."""
    words = [str(w) for w in argv]
    for i, word in enumerate(words):
        if word == "--":
            return words[i + 1] if i + 1 < len(words) else None
        if not word.startswith("-"):
            return word
    return None


def _parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of `argv`: the top level with every group, the group `argv` names (all of them
    when `argv` is None) registered by its module, the others by name and help only."""
    p = argparse.ArgumentParser(prog="rmqlab", description="RocketMQ message-store formats, byte for byte.")
    p.add_argument("-v", "--verbose", action="count", default=0, help="more log output on stderr")
    p.add_argument("--version", action="version", version=f"rmqlab {_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    named = None if argv is None else _named_group(argv)
    for name, (module, help_text) in COMMAND_GROUPS.items():
        if argv is None or name == named:
            importlib.import_module(module).register(sub)
        else:       # listed in the help and the choices; never parsed (its group is not named)
            sub.add_parser(name, help=help_text, add_help=False)
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
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:       # argparse: usage errors exit 2, --help exits 0
        return int(e.code or 0)
    _setup_logging(args.verbose)
    command = invoked_parser(parser, args)
    args.command_line_words = lambda message: command_line_words(message, command)
    # the whole command line, every group registered: for commands that describe it (completion)
    args.full_parser = lambda: _parser(None)
    for name in ("hash_slot_num", "index_num", "max"):
        v = getattr(args, name, None)
        if v is not None and v < (0 if name == "max" else 1):
            return _usage(parser, f"--{name.replace('_', '-')} must be {'>= 0' if name == 'max' else '> 0'}")
    if getattr(args, "max_msgs_num_batch", 1) < 0:
        return _usage(parser, "--max-msgs-num-batch must be >= 0")
    try:
        return int(args.run(args) or 0)
    except SystemExit as e:
        return int(e.code or 0)
    except BrokenPipeError:
        # the reader of our output went away (`rmqlab kafka dump ... | head`): stop quietly, as
        # the Unix tools do; stdout is pointed at /dev/null so the interpreter's final flush
        # does not raise again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141   # 128 + SIGPIPE, what a shell reports for a reader that went away
    except (UsageError, AmbiguousSettingError) as e:   # an option is missing; nothing is wrong with the files
        return _fail("usage", e, command)
    except (InputError, FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError) as e:
        return _fail("bad input", e, command)
    except (RmqlabError, OSError, MissingExtraError) as e:
        return _fail("damage", e, command)


def _fail(kind: str, e: BaseException, command: argparse.ArgumentParser) -> int:
    """Print `e` once, as the command line words it, and return the exit status of `kind`.
    An OSError of the system (``[Errno 2] No such file or directory: 'x'``) is worded as every
    other path error: ``x: no such file or directory``. The library speaks in keyword names;
    on the command line they are options."""
    if isinstance(e, OSError) and e.filename is not None and e.strerror:
        text = f"{e.filename}: {e.strerror[0].lower()}{e.strerror[1:]}"
    else:
        text = str(e)
    print(f"rmqlab: error: {command_line_words(text, command)}", file=sys.stderr)
    return EXIT_STATUS[kind]


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
