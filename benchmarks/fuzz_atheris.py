"""Coverage-guided fuzzing of one rmqlab reader with atheris (libFuzzer for Python). Not part of
``make test``, and atheris is not a project dependency: install it somewhere else, e.g. a scratch
virtual environment that also sees this project's packages::

    python3.11 -m venv /tmp/atheris-venv
    /tmp/atheris-venv/bin/pip install atheris        # a manylinux wheel: no compiler needed
    echo 'import site; site.addsitedir("<this repo>/.venv/lib/python3.11/site-packages")' \\
        > /tmp/atheris-venv/lib/python3.11/site-packages/zz_rmqlab.pth
    /tmp/atheris-venv/bin/python benchmarks/fuzz_atheris.py indexfile -runs=100000 -timeout=10

The first argument is a format of tests/support/fuzz_support.py (indexfile, consumequeue, commitlog,
message, checkpoint, kafka-index, kafka-timeindex, kafka-log, msgid); the rest goes to
libFuzzer (-runs, -max_total_time, -timeout, -rss_limit_mb, a corpus folder, ...). Without a
corpus folder one is made from the format's valid seeds (the files the writers produce) in a
scratch folder the script prints: libFuzzer exits from C, so nothing removes it (delete it
afterwards); pass your own corpus folder to keep what libFuzzer finds. Each input is the whole
file, as libFuzzer mutates it, run through the same reader calls and checks as
tests/test_fuzz.py (every call on every input; the geometry and names come from the format's
first seed). A non-typed exception, a broken bound or a disagreement between two
implementations is raised as a crash; libFuzzer saves the input (crash-<sha1>),
and ``fuzz_support.replay(format, seed_name, (("random", data),))`` reruns it.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import atheris

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "support"))

with atheris.instrument_imports(include=["rmqlab"]):
    import rmqlab.analysis.indexstats  # noqa: F401  (file_report: the heavy calls)
    import rmqlab.formats.checkpoint  # noqa: F401
    import rmqlab.formats.commitlog  # noqa: F401
    import rmqlab.formats.consumequeue  # noqa: F401
    import rmqlab.formats.indexfile  # noqa: F401
    import rmqlab.formats.msgid  # noqa: F401
    import rmqlab.kafka.index  # noqa: F401
    import rmqlab.kafka.log  # noqa: F401
    import rmqlab.store.indexservice  # noqa: F401

import fuzz_support as fs  # noqa: E402


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] not in fs.TARGETS:
        sys.exit(f"usage: {argv[0]} FORMAT [libFuzzer options] [corpus folder]; FORMAT one of "
                 f"{', '.join(fs.TARGETS)}")
    target = fs.TARGETS[argv[1]]
    work = tempfile.mkdtemp(prefix=f"atheris-{target.name}-")
    print(f"scratch folder (input files, seed corpus): {work}; libFuzzer exits without cleaning it up",
          file=sys.stderr)
    # timeout=0: no SIGALRM of our own (libFuzzer's -timeout uses it); tracemalloc off (libFuzzer's
    # -rss_limit_mb bounds memory)
    rt = fs.Runner(target, work, fail_fast=True, timeout=0, heavy_every=1, mem_every=0, everything=True)
    rt.__enter__()
    args = [argv[0]] + argv[2:]
    if not any(not a.startswith("-") for a in argv[2:]):   # no corpus folder given: seed one
        corpus = Path(work) / "corpus"
        corpus.mkdir()
        first = rt.seeds[0]
        for i, s in enumerate(rt.seeds):
            if s.meta == first.meta:   # inputs are read with the first seed's geometry and names
                (corpus / f"seed-{i}").write_bytes(s.data)
        args.append(str(corpus))

    def test_one_input(data: bytes) -> None:
        rt.run_program(0, (("random", bytes(data)),))

    atheris.Setup(args, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
