"""Command groups of the `rmqlab` command line, one module per group beside `rmqlab.cli`.

Each module defines ``register(subparsers)``: it adds its group's parser and sets
``run=function(args) -> exit status`` on every leaf command. `rmqlab.cli` lists the modules in
``COMMAND_GROUPS``, parses, and applies the shared error handling (typed errors exit 1 with
their message, usage errors exit 2). Human-readable output by default; ``--json`` prints JSON to
stdout (one object per line for streams of records); logs go to stderr.
"""


class UsageError(Exception):
    """A command line that cannot run as given: `rmqlab.cli.main` prints the message (library
    keywords in it shown as the command's options) and exits 2. Commands raise it instead of
    printing, so that every message goes through the same wording."""
