"""`rmqlab completion bash|zsh`, judged by the shells themselves: bash runs the script's
completion function on COMP_WORDS and answers in COMPREPLY; zsh loads it from fpath through
compinit and completes typed lines in an interactive shell on a pseudo-terminal (its zpty
module), every match caught on its way into compadd. What must be proposed comes from a walk
of the real parser here, so a new command, option or choice the script lacks fails a test.

zsh is installed by `make test` (.ci/ensure-shells, as root); without it its tests skip, and
fail with CI=true."""
from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import oracles
import pytest

import rmqlab.cli as cli
from rmqlab.commands import completion


def parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(words after rmqlab, parser) of every parser of the tree, the root first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*path, name))


def commands(parser: argparse.ArgumentParser) -> list[str]:
    return [name for a in parser._actions if isinstance(a, argparse._SubParsersAction) for name in a.choices]


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS]


FULL = cli._parser()
TREE = list(parsers(FULL))
#: a metavar that names a path: its value must complete to files or directories
PATHLIKE = re.compile(r"DIR|FILE|PATH|[A-Z]\.[a-z]+\b")


@pytest.fixture(scope="module")
def scripts(tmp_path_factory) -> dict[str, Path]:
    """Each shell's script, as `python -m rmqlab completion SHELL` prints it (a fresh process,
    outside the checkout). Cost: two interpreter starts, about 0.5 s."""
    d = tmp_path_factory.mktemp("completion")
    out = {}
    for shell in completion.SHELLS:
        p = subprocess.run([sys.executable, "-m", "rmqlab", "completion", shell], cwd=d,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and p.stderr == "", p.stderr
        out[shell] = d / f"rmqlab.{shell}"
        out[shell].write_text(p.stdout)
    return out


@pytest.fixture
def files(tmp_path) -> Path:
    """A working folder to complete paths in: a folder, and files of several kinds."""
    (tmp_path / "sub").mkdir()
    for name in ("a.log", "b.txt", "plan.toml", "my file.txt"):
        (tmp_path / name).write_text("x")
    return tmp_path


def test_the_command_prints_the_script_of_the_whole_parser(scripts, capsys):
    for shell, make in completion.SCRIPTS.items():
        assert cli.main(["completion", shell]) == 0
        out = capsys.readouterr().out
        assert out == make(FULL) == scripts[shell].read_text()
        assert all(f"{group} " in out for group in cli.COMMAND_GROUPS if group != "completion")


def test_the_help_names_the_group(capsys):
    assert cli.main(["--help"]) == 0
    assert "completion" in capsys.readouterr().out
    assert cli.main(["completion"]) == 2           # a shell is required
    assert "bash,zsh" in capsys.readouterr().err


# -- bash --------------------------------------------------------------------------------------


def bash_complete(script: Path, lines: list[list[str]], cwd: Path | None = None) -> list[list[str]]:
    """COMPREPLY of the script's _rmqlab for each command line, its words as COMP_WORDS (the
    last, maybe empty, is being completed), in one `bash` process."""
    body = [f"source {shlex.quote(str(script))} || exit 9"]
    for words in lines:
        body.append(f"COMP_WORDS=({' '.join(map(shlex.quote, words))}); COMP_CWORD={len(words) - 1}; "
                    "COMPREPLY=(); _rmqlab; printf '%s\\n' \"${COMPREPLY[@]}\"; echo '<end>'")
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", "\n".join(body)], cwd=cwd,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    answers = p.stdout.split("<end>\n")
    assert answers[-1] == "" and len(answers) == len(lines) + 1
    return [[w for w in a.split("\n") if w] for a in answers[:-1]]


def test_bash_registers_the_function(scripts):
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", f"source {shlex.quote(str(scripts['bash']))}; "
                        "complete -p rmqlab"], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "complete -F _rmqlab rmqlab", p.stderr


def test_bash_groups_commands_options_choices(scripts, files):
    store_query = FULL._subparsers._group_actions[0].choices["store"]._subparsers._group_actions[0].choices["query"]
    long_options = [s for a in options(store_query) for s in a.option_strings if s.startswith("--")]
    got = bash_complete(scripts["bash"], [
        ["rmqlab", ""],
        ["rmqlab", "st"],
        ["rmqlab", "-v", "store", ""],
        ["rmqlab", "store", "query", "--"],
        ["rmqlab", "store", "query", "--mode", ""],
        ["rmqlab", "store", "query", "--mode", "v"],
        ["rmqlab", "store", "query", "--mode", "=", "v"],        # --mode=v as bash splits it
        ["rmqlab", "store", "query", "--mode=v"],                # ... and as one word
        ["rmqlab", "store", "transactions", "--state", "r"],     # a choice with a space, escaped
        ["rmqlab", "store", "query", "--keys-file", ""],
        ["rmqlab", "store", "query", "--keys-file", "my"],
        ["rmqlab", "store", "query", ""],                        # DIR: directories only
        ["rmqlab", "store", "query", "--topic", "T", ""],        # --topic's value is not DIR
        ["rmqlab", "store", "query", "--json", ""],              # --json takes none
        ["rmqlab", "store", "query", "x", ""],                   # after DIR: nothing
        ["rmqlab", "kafka", "verify", ""],                       # DIR|SEGMENT.log
        ["rmqlab", "kafka", "dump", "a.log", "b"],               # FILE|DIR, one or more
        ["rmqlab", "capacity", "estimate", ""],                  # PLAN.toml
        ["rmqlab", "store", "query", "--", "-"],                 # after --, a positional
    ], cwd=files)
    assert got[0] == list(cli.COMMAND_GROUPS)
    assert got[1] == ["store"]
    assert got[2] == commands(FULL._subparsers._group_actions[0].choices["store"])
    assert got[3] == long_options and "--mode" in long_options
    assert got[4] == ["broker", "verified"]
    assert got[5] == got[6] == ["verified"]
    assert got[7] == ["--mode=verified"]
    assert got[8] == ["rolled\\ back"]
    assert sorted(got[9]) == ["a.log", "b.txt", "my file.txt", "plan.toml", "sub"]
    assert got[10] == ["my file.txt"]
    assert got[11] == got[12] == got[13] == ["sub"]
    assert got[14] == []
    assert sorted(got[15]) == ["a.log", "sub"]
    assert got[16] == ["b.txt"]
    assert sorted(got[17]) == ["plan.toml", "sub"]
    assert got[18] == []


def _every_word_cases() -> list[tuple[list[str], str, set[str]]]:
    """(command line, what, the completions it must offer) for every command, option and choice
    of the real parser, and a folder for every value whose metavar names a path."""
    cases = []
    for path, p in TREE:
        if commands(p):
            cases.append((["rmqlab", *path, ""], "commands", set(commands(p))))
        cases.append((["rmqlab", *path, "-"], "options", {s for a in options(p) for s in a.option_strings}))
        for a in options(p):
            if a.nargs == 0:
                continue
            if a.choices is not None:
                cases.append((["rmqlab", *path, a.option_strings[-1], ""], "choices", set(map(str, a.choices))))
            elif isinstance(a.metavar, str) and PATHLIKE.search(a.metavar):
                cases.append((["rmqlab", *path, a.option_strings[-1], ""], "path", {"sub"}))
        positionals = [a for a in p._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]
        if positionals and isinstance(positionals[0].metavar, str) and PATHLIKE.search(positionals[0].metavar):
            cases.append((["rmqlab", *path, ""], "path", {"sub"}))
    return cases


def test_bash_offers_every_command_option_and_choice_of_the_parser(scripts, files):
    cases = _every_word_cases()
    assert len([c for c in cases if c[1] == "options"]) == len(TREE) > 30
    assert {"choices", "path"} <= {c[1] for c in cases}
    got = bash_complete(scripts["bash"], [words for words, _, _ in cases], cwd=files)
    for (words, what, want), answer in zip(cases, got, strict=True):
        # the shell reads each choice back as itself ("rolled\ back" -> "rolled back")
        offered = {shlex.split(w)[0] for w in answer} if what == "choices" else set(answer)
        assert want <= offered, f"{' '.join(words)!r}: {what} {sorted(want - offered)} not offered"
        if what != "path":
            assert offered == want, f"{' '.join(words)!r}: offers {sorted(offered - want)} too"


# -- zsh ---------------------------------------------------------------------------------------

#: Drives an interactive `zsh -f` on a pseudo-terminal (zsh/zpty): fpath gets the folder of
#: _rmqlab, compinit loads it as a real user's shell would; compadd is wrapped so that every
#: match zsh adds is also written to OUT, and each completion ends with "<end>" there (a
#: completion post-function, which also drops the listing so that zsh never asks "do you wish
#: to see all N possibilities?"). Each line is typed after ^U (kill the line), then Tab; a line
#: whose completion does not end within 10 s is given up (the next is typed).
ZSH_DRIVER = textwrap.dedent(r"""
    zmodload zsh/zpty || exit 9
    fdir=$1 out=$2; shift 2
    zpty z zsh -f -i
    zpty -w z "PS1= RPS1=; fpath=(${(q)fdir} \$fpath); autoload -Uz compinit; compinit -u -D; _out=${(q)out}"
    # (no comments inside the typed text: an interactive zsh -f takes # for a command.) compadd
    # calls that only ask for the matches (-O, -A, -D) are compsys internals: passed on as they are
    zpty -w z 'compadd() {
      if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi
      local -a hits; builtin compadd -A hits "$@"; builtin compadd "$@"
      (( $#hits )) && print -rl -- $hits >> $_out
    }'
    zpty -w z '_end() { compstate[list]=; compstate[insert]=; print -r -- "<end>" >> $_out }'
    # compsys empties comppostfuncs once it has run them: Tab sets it again before each completion
    zpty -w z '_tab() { comppostfuncs=(_end); zle complete-word }; zle -N _tab; bindkey "^I" _tab'
    zpty -w z 'bindkey "^U" kill-whole-line'
    integer n=0 i
    for line; do
      n+=1
      zpty -n -w z $'\C-u'"$line"$'\t'
      for (( i = 0; i < 200; i++ )); do
        [[ -e $out && $(grep -c '^<end>$' $out) -ge n ]] && break
        while zpty -rt z echoed; do :; done     # read what the terminal shows, so it never fills up
        sleep 0.05
      done
    done
    zpty -d z
""")


@pytest.fixture(scope="module")
def zsh() -> str:
    path = shutil.which("zsh")
    if path is None:
        oracles.missing("zsh, to judge `rmqlab completion zsh`", "apt-get install zsh, or .ci/ensure-shells as root")
    return path


def zsh_complete(zsh: str, script: Path, lines: list[str], tmp: Path, cwd: Path) -> list[list[str]]:
    """The matches zsh's compsys adds for each typed line (Tab at its end), the script installed
    as _rmqlab in a folder of fpath."""
    fdir = tmp / "site-functions"
    fdir.mkdir(exist_ok=True)
    shutil.copy(script, fdir / "_rmqlab")
    driver, out = tmp / "driver.zsh", tmp / "matches"
    driver.write_text(ZSH_DRIVER)
    out.unlink(missing_ok=True)
    p = subprocess.run([zsh, "-f", str(driver), str(fdir), str(out), *lines], cwd=cwd,
                       capture_output=True, text=True, timeout=30 + len(lines))
    assert p.returncode == 0, p.stderr
    answers = out.read_text().split("<end>\n")
    assert answers[-1] == "" and len(answers) == len(lines) + 1, f"zsh answered {len(answers) - 1} of {len(lines)}"
    return [[w for w in a.split("\n") if w] for a in answers[:-1]]


def test_zsh_parses_the_script(zsh, scripts):
    p = subprocess.run([zsh, "-n", str(scripts["zsh"])], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stderr


def test_zsh_groups_commands_options_choices_and_files(zsh, scripts, files, tmp_path_factory):
    got = zsh_complete(zsh, scripts["zsh"], [
        "rmqlab ",
        "rmqlab -v store ",
        "rmqlab store query --",
        "rmqlab store query --mode ",
        "rmqlab store query --mode=v",
        "rmqlab store transactions --state r",
        "rmqlab store query --keys-file ",
        "rmqlab store query ",
        "rmqlab store query --topic T ",
        "rmqlab kafka verify ",
        "rmqlab capacity estimate ",
    ], tmp_path_factory.mktemp("zsh"), files)
    store = FULL._subparsers._group_actions[0].choices["store"]
    store_query = store._subparsers._group_actions[0].choices["query"]
    assert got[0] == list(cli.COMMAND_GROUPS)
    assert got[1] == commands(store)
    assert set(got[2]) == {s for a in options(store_query) for s in a.option_strings if s.startswith("--")}
    assert got[3] == ["broker", "verified"]
    assert got[4] == ["verified"]
    assert got[5] == ["rolled\\ back"]                # as zsh inserts it (compadd -A gives them quoted)
    assert set(got[6]) == {"a.log", "b.txt", "my\\ file.txt", "plan.toml", "sub"}
    assert set(got[7]) == set(got[8]) == {"sub"}
    assert set(got[9]) == {"a.log", "sub"}
    assert set(got[10]) == {"plan.toml", "sub"}


def test_zsh_offers_every_command_option_and_choice_of_the_parser(zsh, scripts, files, tmp_path_factory):
    cases = _every_word_cases()
    got = zsh_complete(zsh, scripts["zsh"], [" ".join(map(shlex.quote, words[:-1])) + " " + words[-1]
                                             for words, _, _ in cases], tmp_path_factory.mktemp("zsh"), files)
    for (words, what, want), answer in zip(cases, got, strict=True):
        offered = {shlex.split(w)[0] for w in answer}      # as inserted: "rolled\ back"
        assert want <= offered, f"{' '.join(words)!r}: {what} {sorted(want - offered)} not offered"
        if what != "path":
            assert offered == want, f"{' '.join(words)!r}: offers {sorted(offered - want)} too"
