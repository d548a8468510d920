"""Safe by default: every command that reads leaves its inputs exactly as they were.

Each read command of the CLI runs on a generated store (and a Kafka partition, and a plan);
afterwards every input file has the same size, modification time and SHA-256, and no file
was added or removed. The commands open their inputs read-only, so a write would fail rather
than corrupt; this checks the result from outside."""
from __future__ import annotations

from pathlib import Path

import pytest
from snapshot_support import snapshot

from rmqlab.cli import main
from rmqlab.kafka.log import KafkaRecord, write_segment
from rmqlab.kafka.rebuild import rebuild_indexes
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload

GEOMETRY = ["--hash-slot-num", "50", "--index-num", "400"]
STORE = ["--hash-slot-num", "50", "--index-num", "400", "--commitlog-file-size", str(1 << 18)]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs")
    store = generate_store(root / "store", Workload(messages=3000, seed=8, rate=500.0),
                           commitlog_file_size=1 << 18, hash_slot_num=50, index_num=400)
    log = write_segment(root / "kafka" / "t-0", 0, [KafkaRecord(i, 1000 * i, b"k", bytes(500)) for i in range(40)])
    rebuild_indexes(log, log.parent)
    plan = root / "plan.toml"
    plan.write_text("[traffic]\nmessages_per_second = 50\n[index]\nhash_slot_num = 1000\nindex_num = 4000\n")
    return root, store


def read_commands(root: Path, store) -> list[list[str]]:
    index_file = sorted(store.index_dir.iterdir())[0]
    commitlog_file = sorted(store.commitlog_dir.iterdir())[0]
    seg = root / "kafka" / "t-0"
    return [
        ["index", "info", str(index_file), *GEOMETRY, "--json"],
        ["index", "query", str(store.index_dir), "--topic", "TopicTest", "--key", "USER_1", "--trace", *GEOMETRY],
        ["commitlog", "dump", str(commitlog_file), "--limit", "5"],
        ["commitlog", "dump", str(store.commitlog_dir), "--json", "--limit", "5"],
        ["store", "info", str(store.root), *STORE],
        ["store", "query", str(store.root), "--topic", "TopicTest", "--key", "USER_1", "--explain", *STORE],
        ["store", "query", str(store.root), "--topic", "TopicTest", "--key", "USER_1", "--mode", "verified", *STORE],
        ["verify", str(store.root), *STORE],
        ["verify", str(index_file), *GEOMETRY, "--json"],
        ["kafka", "dump", *(str(p) for p in sorted(seg.iterdir())), "--records"],
        ["kafka", "verify", str(seg), "--json"],
        ["capacity", "estimate", str(root / "plan.toml")],
    ]


def test_every_read_command_leaves_its_inputs_untouched(inputs, capsys):
    root, store = inputs
    before = snapshot(root)
    assert len(before) > 20
    for argv in read_commands(root, store):
        status = main(argv)
        out = capsys.readouterr()
        assert status == 0, (argv, out.err[-2000:])
        assert snapshot(root) == before, argv


def test_a_repair_command_is_not_among_them(inputs):
    # the commands above are the read commands: none of them is documented to write
    root, store = inputs
    for argv in read_commands(root, store):
        assert not {"dispatch", "generate", "rebuild-index", "recover", "build", "report"} & set(argv)


def test_no_data_is_evaluated_as_code():
    """No module of the package calls eval / exec / compile, unpickles, or runs a shell: file
    contents and plans are parsed (struct, NumPy, tomllib, json), never executed. The one
    exception, named below, is a Spark task's result, not data read from a file."""
    import ast

    banned_names = {"eval", "exec", "compile", "__import__"}
    banned_attrs = {("pickle", "load"), ("pickle", "loads"), ("marshal", "load"), ("marshal", "loads"),
                    ("os", "system"), ("os", "popen"), ("yaml", "load")}
    # The one unpickling allowed: the result a SparkPool task sends back to its driver, which
    # rmqlab's own unit function made in an executor (the channel multiprocessing's pools use
    # for their workers' results), never a file's contents. Exactly one call, there.
    allowed = {("spark/pool.py", "pickle.loads()")}
    package = Path(__file__).resolve().parents[2] / "rmqlab"
    found, exempt = [], []
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        where = path.relative_to(package).as_posix()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            call = None
            if isinstance(f, ast.Name) and f.id in banned_names:
                call = f"{f.id}()"
            elif (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                  and (f.value.id, f.attr) in banned_attrs):
                call = f"{f.value.id}.{f.attr}()"
            if call is not None:
                (exempt if (where, call) in allowed else found).append(f"{where}:{node.lineno} {call}")
            for kw in node.keywords:
                if kw.arg == "shell" and isinstance(kw.value, ast.Constant) and kw.value.value is True:
                    found.append(f"{where}:{node.lineno} shell=True")
    assert len(list(package.rglob("*.py"))) > 30
    assert found == []
    assert len(exempt) == 1, exempt
