"""`rmqlab completion bash|zsh`: print a shell completion script for the whole command line.

    source <(rmqlab completion bash)                      # bash, this shell only
    rmqlab completion zsh > ~/.zfunc/_rmqlab              # zsh: with fpath=(~/.zfunc $fpath)
                                                          # before compinit in ~/.zshrc

The script is static: generated once from the parser tree (every group, command and option; the
choices of options with ``choices=``; directories or files for positionals and options whose
metavar names a path, see :func:`path_value`), so completing a word runs no Python and needs no
package beyond the shell (argcomplete would start the interpreter on every Tab). The price is
that a script goes stale when the command line changes: ``make`` rewrites the copies in the
virtual environment (bash's is loaded by ``.venv/bin/activate``), others regenerate theirs.

Cost: building the full parser imports every group's module (standard library only, about
0.1 s), writing a script 0.01 s; the bash script is about 17 KB, the zsh one (with the help of
every command and option) 40 KB. Completing a word: the shell's own time, a few milliseconds.

>>> import argparse
>>> p = argparse.ArgumentParser(prog="rmqlab"); sub = p.add_subparsers(dest="command")
>>> q = sub.add_parser("query"); _ = q.add_argument("dir", metavar="DIR")
>>> _ = q.add_argument("--mode", choices=["broker", "verified"]); _ = q.add_argument("--out", metavar="FILE.html")
>>> [(n.path, n.commands, [o.strings for o in n.options], n.positionals) for n in tree(p)][1]
(('query',), (), [('-h', '--help'), ('--mode',), ('--out',)], (Value(kind='dirs', words=()),))
>>> [o.value for o in tree(p)[1].options]
[None, Value(kind='choices', words=('broker', 'verified')), Value(kind='files', words=('*.html',))]
>>> "'query --mode') _rmqlab_choices \\"$3\\" broker verified ;;" in bash_script(p)
True
"""
from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass

#: the shells a script is generated for
SHELLS = ("bash", "zsh")

#: metavar words naming a directory (OUT: a new folder to write into)
DIR_WORDS = {"DIR", "OUT"}
#: metavar words naming any file or directory
FILE_WORDS = {"FILE", "PATH"}
#: metavar words for a value that may also be a path but has no local completion (a URI): an
#: alternative beside path words, it leaves their completion as it is
REMOTE_WORDS = {"URI"}
#: a file of one extension: SEGMENT.log, PLAN.toml, FILE.html
_EXTENSION = re.compile(r"[A-Z][A-Z0-9_]*\.([A-Za-z0-9]+)")


@dataclass(frozen=True)
class Value:
    """How a value is completed: ``kind`` "choices" (``words`` are them), "dirs" (directories),
    or "files" (any file, or only those of the globs in ``words``, and the directories to walk
    down to them)."""
    kind: str
    words: tuple[str, ...] = ()


@dataclass(frozen=True)
class Option:
    """An option: its strings, a one-line help, and how its value is completed (``None``: it
    takes no value; a ``Value`` of kind "none": a value nothing completes, such as a topic)."""
    strings: tuple[str, ...]
    help: str
    value: Value | None


#: a value the script cannot propose (a topic, a number): the option still takes the next word
FREE = Value("none")


@dataclass(frozen=True)
class Node:
    """A parser of the tree: its words after ``rmqlab``, its commands (name, help), its options,
    how each positional is completed (``FREE`` when nothing is proposed), and the index of the
    positional that takes every remaining word (``nargs`` "+" or "*"), or -1."""
    path: tuple[str, ...]
    commands: tuple[tuple[str, str], ...]
    options: tuple[Option, ...]
    positionals: tuple[Value, ...]
    rest: int = -1


def path_value(metavar: str | None) -> Value | None:
    """The completion of a value shown as `metavar`, when it names a path: alternatives split
    at ``|`` and ``_OR_``; DIR and OUT are directories, FILE and PATH any file, ``NAME.ext`` files
    of that extension (and directories); URI beside them adds nothing to propose; any other metavar
    (N, TOPIC, P1,P2, URI alone): None.

    >>> [path_value(m) for m in ("DIR", "FILE_OR_DIR", "DIR|SEGMENT.log", "PLAN.toml", "N", "P1,P2")]
    ... # doctest: +NORMALIZE_WHITESPACE
    [Value(kind='dirs', words=()), Value(kind='files', words=()), Value(kind='files', words=('*.log',)),
     Value(kind='files', words=('*.toml',)), None, None]
    >>> path_value("DIR|FILE|URI"), path_value("URI")
    (Value(kind='files', words=()), None)
    """
    if not metavar:
        return None
    parts = [p for p in re.split(r"\||_OR_", metavar) if p not in REMOTE_WORDS]
    if not parts:
        return None
    globs = tuple(f"*.{m[1]}" for m in map(_EXTENSION.fullmatch, parts) if m)
    known = sum(p in DIR_WORDS or p in FILE_WORDS for p in parts) + len(globs)
    if known != len(parts):         # some alternative is not a path: propose nothing rather than files
        return None
    if any(p in FILE_WORDS for p in parts):
        return Value("files")
    return Value("files", globs) if globs else Value("dirs")


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The action's help on one line, its ``%(default)s`` expanded, cut to 100 characters."""
    text = action.help or ""
    if text and "%" in text:
        try:
            text = parser._get_formatter()._expand_help(action)
        except (KeyError, TypeError, ValueError):    # a literal % the help did not escape
            pass
    text = " ".join(text.split())
    return text if len(text) <= 100 else text[:99] + "…"


def _value(action: argparse.Action) -> Value:
    if action.choices is not None:
        return Value("choices", tuple(map(str, action.choices)))
    metavar = action.metavar if isinstance(action.metavar, str) else None
    if metavar is None and not action.option_strings:
        metavar = action.dest.upper()        # argparse shows a positional without metavar by its dest
    return path_value(metavar) or FREE


def tree(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[Node]:
    """Every parser under `parser` (itself first, then depth first in the order of the help),
    as :class:`Node`. Options whose help is ``argparse.SUPPRESS`` are left out, as the help
    leaves them out. Cost: one pass over the actions."""
    commands: list[tuple[str, str]] = []
    options: list[Option] = []
    positionals: list[Value] = []
    rest = -1
    below: list[Node] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            primary = {id(p): name for name, p in reversed(action.choices.items())}
            for name, sub in action.choices.items():
                commands.append((name, " ".join(helps.get(primary[id(sub)], "").split())))
                below += tree(sub, (*path, name))       # an alias is walked again, under its own name
        elif action.option_strings:
            if action.help == argparse.SUPPRESS:
                continue
            options.append(Option(tuple(action.option_strings), _help(parser, action),
                                  None if action.nargs == 0 else _value(action)))
        elif rest < 0:
            if action.nargs in ("+", "*", argparse.REMAINDER):
                rest = len(positionals)
                positionals.append(_value(action))
            else:
                positionals += [_value(action)] * (action.nargs if isinstance(action.nargs, int) else 1)
    return [Node(path, tuple(commands), tuple(options), tuple(positionals), rest), *below]


def _words(values) -> str:
    """Words for a shell script's source, each quoted when it needs to be (bash and zsh alike)."""
    return " ".join(shlex.quote(str(v)) for v in values)


def _key(node: Node, what: str) -> str:
    """The case label of a value: the node's words, then the option or ``#N`` (positional N)."""
    return shlex.quote(" ".join(node.path) + " " + what)


def _backslashed(word: str) -> str:
    """`word` as typed on a bash command line, special characters escaped by backslashes (what
    bash itself inserts for a file name): ``rolled back`` -> ``rolled\\ back``."""
    return re.sub(r"([^\w.,:+=@%/-])", r"\\\1", word)


def _values(nodes: list[Node]) -> list[tuple[Node, str, Value]]:
    """Every value the script completes: (node, option or #N, how)."""
    out = []
    for node in nodes:
        out += [(node, o.strings[i], o.value) for o in node.options if o.value and o.value.kind != "none"
                for i in range(len(o.strings))]
        out += [(node, f"#{i}", v) for i, v in enumerate(node.positionals) if v.kind != "none"]
    return out


BASH_HEAD = """\
# bash completion for rmqlab, generated by `rmqlab completion bash` from its parser: every group,
# command and option, the choices of options, and directories or files where a path is expected.
# Load it with: source <(rmqlab completion bash); `make` installs it into .venv, which loads it.
# Static on purpose: no Python runs on Tab. Regenerate after an upgrade of rmqlab.

# _rmqlab_node NODE: the subcommands, options and options taking a value of the command NODE
# (its words after rmqlab), and the positional from which on every word is of one kind (-1: none)
_rmqlab_node() {
    case $1 in
"""

BASH_MIDDLE = """\
        *) _rmqlab_subs=''; _rmqlab_opts=''; _rmqlab_valopts=''; _rmqlab_rest=-1 ;;
    esac
}

# _rmqlab_choices CUR WORD...: the WORDs (already quoted for the command line) that start with CUR
_rmqlab_choices() {
    local cur=$1 word
    shift
    for word; do
        [[ $word == "$cur"* ]] && COMPREPLY+=("$word")
    done
    return 0
}

# _rmqlab_paths CUR d|f [GLOB...]: directories (d), or files (f): all, or those matching a GLOB
# and the directories to reach them
_rmqlab_paths() {
    local cur=$1 kind=$2 glob name
    shift 2
    # the word as typed may escape a space or open a quote; compgen wants the name itself
    cur=${cur//\\\\/}
    cur=${cur#[\\"\\']}
    # bash quotes the names it inserts and ends a directory with /; compopt exists in bash 4+,
    # and only while completing (not when a test calls the function)
    compopt -o filenames 2>/dev/null
    while IFS= read -r name; do
        COMPREPLY+=("$name")
    done < <(
        if [[ $kind == d ]]; then
            compgen -d -- "$cur"
        elif (($# == 0)); then
            compgen -f -- "$cur"
        else
            compgen -d -- "$cur"
            for glob; do compgen -f -X "!$glob" -- "$cur"; done
        fi
    )
    return 0
}

# _rmqlab_value NODE WHAT CUR: the completions of CUR as the value of option WHAT, or of the
# positional #N, of the command NODE
_rmqlab_value() {
    case "$1 $2" in
"""

BASH_TAIL = """\
    esac
    return 0
}

_rmqlab() {
    local cur=${COMP_WORDS[COMP_CWORD]} node='' word expect='' i n=0 dashdash=0
    local _rmqlab_subs _rmqlab_opts _rmqlab_valopts _rmqlab_rest
    COMPREPLY=()
    _rmqlab_node ''
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if [[ -n $expect ]]; then
            # bash splits --option=value into three words (= is in COMP_WORDBREAKS): skip the =
            [[ $word == = ]] || expect=''
            continue
        fi
        if ((!dashdash)) && [[ $word == -* ]]; then
            if [[ $word == -- ]]; then
                dashdash=1
            elif [[ $word != *=* && " $_rmqlab_valopts " == *" $word "* ]]; then
                expect=$word
            fi
        elif ((n == 0)) && [[ " $_rmqlab_subs " == *" $word "* ]]; then
            node=${node:+$node }$word
            _rmqlab_node "$node"
        else
            n=$((n + 1))
        fi
    done
    if [[ -n $expect ]]; then
        [[ $cur == = ]] && cur=''
        _rmqlab_value "$node" "$expect" "$cur"
    elif ((!dashdash)) && [[ $cur == --*=* ]]; then
        # --option=value as one word (a COMP_WORDBREAKS without =): complete the value, keep the option
        _rmqlab_value "$node" "${cur%%=*}" "${cur#*=}"
        ((${#COMPREPLY[@]})) && COMPREPLY=("${COMPREPLY[@]/#/${cur%%=*}=}")
    elif ((!dashdash)) && [[ $cur == -* ]]; then
        _rmqlab_choices "$cur" $_rmqlab_opts
    elif ((n == 0)) && [[ -n $_rmqlab_subs ]]; then
        _rmqlab_choices "$cur" $_rmqlab_subs
    else
        ((_rmqlab_rest >= 0 && n > _rmqlab_rest)) && n=$_rmqlab_rest
        _rmqlab_value "$node" "#$n" "$cur"
    fi
    return 0
}

complete -F _rmqlab rmqlab
"""


def bash_script(parser: argparse.ArgumentParser) -> str:
    """The bash completion script of `parser` (``prog`` "rmqlab"): ``complete -F _rmqlab
    rmqlab`` and its functions, for bash 3.2 and later (no associative arrays).
    Cost: one walk of the tree (:func:`tree`)."""
    nodes = tree(parser)
    lines = [BASH_HEAD]
    for n in nodes:
        values = [s for o in n.options if o.value for s in o.strings]
        lines.append(f"        {shlex.quote(' '.join(n.path))}) "
                     f"_rmqlab_subs={shlex.quote(' '.join(c for c, _ in n.commands))}; "
                     f"_rmqlab_opts={shlex.quote(' '.join(s for o in n.options for s in o.strings))}; "
                     f"_rmqlab_valopts={shlex.quote(' '.join(values))}; _rmqlab_rest={n.rest} ;;\n")
    lines.append(BASH_MIDDLE)
    for node, what, v in _values(nodes):
        if v.kind == "choices":
            call = '_rmqlab_choices "$3" ' + _words(map(_backslashed, v.words))
        else:
            call = '_rmqlab_paths "$3" ' + ("d" if v.kind == "dirs" else "f " + _words(v.words))
        lines.append(f"        {_key(node, what)}) {call.rstrip()} ;;\n")
    lines.append(BASH_TAIL)
    return "".join(lines)


ZSH_HEAD = """\
#compdef rmqlab
# zsh completion for rmqlab, generated by `rmqlab completion zsh` from its parser: every group,
# command and option with its help, the choices of options, and directories or files where a
# path is expected. Install it as _rmqlab in a folder of fpath before compinit runs:
#   rmqlab completion zsh > ~/.zfunc/_rmqlab      # and in ~/.zshrc: fpath=(~/.zfunc $fpath)
# or, after compinit: source <(rmqlab completion zsh). Regenerate after an upgrade of rmqlab.

# _rmqlab_node NODE: the subcommands (name:help), their names, the options (name:help), the
# options taking a value, and the positional from which on every word is of one kind (-1: none)
# of the command NODE (its words after rmqlab)
_rmqlab_node() {
    case $1 in
"""

ZSH_MIDDLE = """\
        (*) subs=(); subnames=(); opts=(); valopts=(); rest=-1 ;;
    esac
}

# _rmqlab_value NODE WHAT: the completions of the value of option WHAT, or of the positional #N,
# of the command NODE
_rmqlab_value() {
    case "$1 $2" in
"""

ZSH_TAIL = """\
        (*) return 1 ;;
    esac
}

_rmqlab() {
    local node='' word expect='' cur=${words[CURRENT]}
    local -a subs subnames opts valopts
    integer i n=0 dashdash=0 rest=-1
    _rmqlab_node ''
    for (( i = 2; i < CURRENT; i++ )); do
        word=${words[i]}
        if [[ -n $expect ]]; then
            expect=''
            continue
        fi
        if (( !dashdash )) && [[ $word == -* ]]; then
            if [[ $word == -- ]]; then
                dashdash=1
            elif [[ $word != *=* ]] && (( ${valopts[(Ie)$word]} )); then
                expect=$word
            fi
        elif (( n == 0 )) && (( ${subnames[(Ie)$word]} )); then
            node=${node:+$node }$word
            _rmqlab_node $node
        else
            n+=1
        fi
    done
    if [[ -n $expect ]]; then
        _rmqlab_value "$node" "$expect"
    elif (( !dashdash )) && [[ $cur == --*=* ]]; then
        compset -P '*='
        _rmqlab_value "$node" "${cur%%=*}"
    elif (( !dashdash )) && [[ $cur == -* ]]; then
        _describe -t options option opts
    elif (( n == 0 && ${#subs} )); then
        _describe -t commands command subs
    else
        (( rest >= 0 && n > rest )) && n=rest
        _rmqlab_value "$node" "#$n"
    fi
}

# autoloaded from fpath, this file is the body of _rmqlab: run it; sourced, register it
if [[ $funcstack[1] == _rmqlab ]]; then
    _rmqlab "$@"
else
    compdef _rmqlab rmqlab
fi
"""


def _described(name: str, text: str) -> str:
    """``name:help`` for zsh's _describe (a colon in the name escaped)."""
    return name.replace(":", r"\:") + (":" + text if text else "")


def zsh_script(parser: argparse.ArgumentParser) -> str:
    """The zsh completion script of `parser` (``prog`` "rmqlab"): a compsys function
    ``_rmqlab`` (``#compdef rmqlab``), with the help of every command and option shown beside
    it. Cost: one walk of the tree (:func:`tree`)."""
    nodes = tree(parser)
    lines = [ZSH_HEAD]
    for n in nodes:
        values = [s for o in n.options if o.value for s in o.strings]
        lines.append(f"        ({shlex.quote(' '.join(n.path))}) "
                     f"subs=({_words(_described(c, h) for c, h in n.commands)}); "
                     f"subnames=({_words(c for c, _ in n.commands)}); "
                     f"opts=({_words(_described(s, o.help) for o in n.options for s in o.strings)}); "
                     f"valopts=({_words(values)}); rest={n.rest} ;;\n")
    lines.append(ZSH_MIDDLE)
    for node, what, v in _values(nodes):
        if v.kind == "choices":
            call = "compadd -- " + _words(v.words)
        elif v.kind == "dirs":
            call = "_files -/"
        elif v.words:
            globs = v.words[0] if len(v.words) == 1 else "(" + "|".join(v.words) + ")"
            call = "_files -g " + shlex.quote(globs)
        else:
            call = "_files"
        lines.append(f"        ({_key(node, what)}) {call} ;;\n")
    lines.append(ZSH_TAIL)
    return "".join(lines)


SCRIPTS: dict[str, Callable[[argparse.ArgumentParser], str]] = {"bash": bash_script, "zsh": zsh_script}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("completion", help="print a bash or zsh completion script: source <(rmqlab completion bash)")
    csub = p.add_subparsers(dest="completion_command", required=True)
    for shell, how in (("bash", "load it with: source <(rmqlab completion bash)"),
                       ("zsh", "save it as _rmqlab in a folder of fpath: rmqlab completion zsh > ~/.zfunc/_rmqlab")):
        c = csub.add_parser(shell, help=f"the {shell} completion script; {how}")
        c.set_defaults(run=_print, shell=shell)


def _print(args) -> int:
    # every group's parser, not only this one's: cli.main gives the whole tree (this layer may
    # not import the command line itself)
    sys.stdout.write(SCRIPTS[args.shell](args.full_parser()))
    return 0
