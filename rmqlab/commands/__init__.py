"""Command groups of the `rmqlab` command line, one module per group beside `rmqlab.cli`.

Each module defines ``register(subparsers)``: it adds its group's parser and sets
``run=function(args) -> exit status`` on every leaf command. `rmqlab.cli` lists the modules in
``COMMAND_GROUPS`` (with each group's one-line help, so that ``rmqlab --help`` imports none of
them), imports the one a command line names, parses, and applies the shared error handling
(typed errors exit 1 with their message, usage errors exit 2); ``args.full_parser()`` gives a
command the parser with every group registered (`rmqlab completion` describes the whole command
line; this layer may not import `rmqlab.cli`). Human-readable output by default;
``--json`` prints JSON to stdout (one object per line for streams of records); logs go to stderr.

Start-up: at module level a group imports the standard library, this package and
:mod:`rmqlab.commands.defaults` (the defaults and choices its parser shows) only; NumPy,
pandas, PyArrow and the library modules that use them are imported inside the functions that
run commands, so ``rmqlab GROUP --help`` starts at once (tests/commands/test_startup.py).
"""


class UsageError(Exception):
    """A command line that cannot run as given: `rmqlab.cli.main` prints the message (library
    keywords in it shown as the command's options) and exits 2. Commands raise it instead of
    printing, so that every message goes through the same wording."""
