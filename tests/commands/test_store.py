"""`rmqlab store generate|info|dispatch|query` and `rmqlab commitlog dump` on a small generated
store, through rmqlab.cli.main: output formats, agreement with the library, exit codes."""
from __future__ import annotations

import datetime
import json
import shutil

import pytest

from rmqlab.cli import main
from rmqlab.formats import commitlog as cl
from rmqlab.store.directory import Store
from rmqlab.store.keyquery import REASONS

# small geometry: 2,000 messages fill several index files and 64 KiB CommitLog files
GEO = ["--hash-slot-num", "64", "--index-num", "1024", "--commitlog-file-size", "65536"]
STORE_OPTIONS = dict(hash_slot_num=64, index_num=1024, commitlog_file_size=65536)
RESULT_KEYS = {"phy_offset", "store_timestamp", "topic", "keys"}


def generate(path, capsys, *extra: str) -> dict:
    argv = ["store", "generate", str(path), *GEO, "--messages", "2000", "--seed", "5", "--topics", "A,B",
            "--collision-pairs", "2", "--rate", "500", *extra, "--json"]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert out.err == ""                 # --json: no progress on stderr
    lines = out.out.splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


@pytest.fixture
def store_dir(tmp_path, capsys):
    d = tmp_path / "store"
    generate(d, capsys)
    return d


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_generate_writes_and_reports_a_dispatched_store(tmp_path, capsys):
    d = tmp_path / "s"
    info = generate(d, capsys)
    w = info.pop("workload")
    assert w["messages"] == 2000 and w["seed"] == 5 and w["topics"] == ["A", "B"] and w["collision_pairs"] == 2
    assert info["messages"] == 2000 and info["topics"] == ["A", "B"]
    assert info["commitlog_files"] >= 2 and info["index_files"] >= 2      # both rolled over
    assert info["consume_queue_units"] == 2000 and info["index_keys"] > 2000
    again = json.loads(json.dumps(Store(d, **STORE_OPTIONS).info(), default=str))
    # generate reports the settings it wrote with; the store reopened says them from its files
    values = {k: v["value"] for k, v in again.pop("settings").items()}
    assert {k: v["value"] for k, v in info.pop("settings").items()} == values
    assert values["mappedFileSizeConsumeQueue"] == 6_000_000 and values["maxHashSlotNum"] == 64
    assert info == again
    # text mode: progress on stderr, a table on stdout
    assert main(["store", "generate", str(tmp_path / "t"), *GEO, "--messages", "300"]) == 0
    out = capsys.readouterr()
    assert "300 / 300 messages" in out.err
    assert any(line.split() == ["messages", "300"] for line in out.out.splitlines())


def test_generate_is_deterministic_by_seed(tmp_path, capsys):
    a = generate(tmp_path / "a", capsys)
    b = generate(tmp_path / "b", capsys)
    c = generate(tmp_path / "c", capsys, "--seed", "6")

    def strip(info):
        return {k: v for k, v in info.items() if k not in ("root", "workload")}

    assert strip(a) == strip(b) and strip(a) != strip(c)
    for name in ("commitlog", "index"):
        files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a" / name).iterdir())
        assert files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b" / name).iterdir())
        assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)


def test_info_text_and_json(store_dir, capsys):
    assert main(["store", "info", str(store_dir), *GEO, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info == json.loads(json.dumps(Store(store_dir, **STORE_OPTIONS).info(), default=str))
    assert main(["store", "info", str(store_dir), *GEO]) == 0
    rows = {line.split()[0]: line.split(None, 1)[1] for line in capsys.readouterr().out.splitlines()}
    # a dict's values one line each under name.field (the checkpoint's fields here)
    assert {name.split(".")[0] for name in rows} == set(info)
    told = info["settings"]["mappedFileSizeConsumeQueue"]
    assert rows["settings.mappedFileSizeConsumeQueue"] == f"{told['value']} (files: {told['reason']})"
    checkpoint = info["checkpoint"]
    # store times with their UTC time beside the milliseconds
    utc = {k: datetime.datetime.fromtimestamp(v / 1000, datetime.UTC).isoformat(timespec="milliseconds")
           .replace("+00:00", "Z") for k, v in checkpoint.items() if k.endswith("timestamp") and v}
    assert {k: rows[f"checkpoint.{k}"] for k in checkpoint} == {
        k: f"{v} ({utc[k]})" if k in utc else f"{v} (never set)" if k.endswith("timestamp") else str(v)
        for k, v in checkpoint.items()}
    assert rows["first_store_timestamp"] == f"{info['first_store_timestamp']} (" + datetime.datetime.fromtimestamp(
        info["first_store_timestamp"] / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z)"
    assert rows["messages"] == "2000" and rows["index_files"] == str(info["index_files"])
    assert rows["commitlog_files"] == str(info["commitlog_files"])


def test_dispatch_is_incremental(store_dir, tmp_path, capsys):
    # generate already dispatched: a second dispatch finds nothing new
    assert main(["store", "dispatch", str(store_dir), *GEO, "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["messages"] == 0 and r["consume_queue_units"] == 0 and r["index_keys"] == 0
    assert r["from_offset"] == r["to_offset"] == cl.read_columns(store_dir / "commitlog", body=False).attrs[
        "report"].end_phy_offset
    # from a bare CommitLog: everything, then nothing; the result is the generated store's bytes
    bare = tmp_path / "bare"
    shutil.copytree(store_dir / "commitlog", bare / "commitlog")
    assert main(["store", "dispatch", str(bare), *GEO]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("dispatched 2000 messages from offset 0 to ") and "2000 ConsumeQueue units" in out
    end = cl.max_offset(bare / "commitlog") / 2**20
    assert err.endswith(f"\r{end:,.1f} / {end:,.1f} MiB of CommitLog dispatched\n")   # progress, to the end
    assert main(["store", "dispatch", str(bare), *GEO]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("dispatched 0 messages") and err == ""
    for p in sorted(store_dir.rglob("*")):
        if p.is_file():
            assert (bare / p.relative_to(store_dir)).read_bytes() == p.read_bytes(), p


@pytest.mark.parametrize("mode", ["broker", "verified"])
def test_query_json_one_object_per_line(store_dir, capsys, mode):
    s = Store(store_dir, **STORE_OPTIONS)
    msgs = s.messages()
    key = msgs["keys"].dropna().str.split(" ").explode().value_counts().index[0]   # the hottest key
    assert main(["store", "query", str(store_dir), *GEO, "--topic", "A", "--key", key, "--mode", mode, "--json"]) == 0
    rows = json_lines(capsys.readouterr().out)
    expected = s.query_by_key("A", key, mode=mode)
    assert len(rows) == len(expected) > 1
    assert [r["phy_offset"] for r in rows] == expected["phy_offset"].tolist()
    for r in rows:
        assert RESULT_KEYS <= set(r) and r["topic"] == "A"
        assert isinstance(r["phy_offset"], int) and isinstance(r["store_timestamp"], int)
        if mode == "verified":
            assert isinstance(r["broker_returned"], bool) and key in r["keys"].split(" ") + [r["uniq_key"]]
        else:
            assert "broker_returned" not in r


@pytest.mark.parametrize("mode", ["broker", "verified"])
def test_query_keys_file_answers_each_key_as_its_own_query(store_dir, tmp_path, capsys, mode):
    s = Store(store_dir, **STORE_OPTIONS)
    hot = s.messages()["keys"].dropna().str.split(" ").explode().value_counts().index[:5].tolist()
    keys = hot + ["no-such-key", hot[0]]
    path = tmp_path / "keys.txt"
    path.write_text("\n".join(keys) + "\n")
    assert main(["store", "query", str(store_dir), *GEO, "--topic", "A", "--keys-file", str(path), "--mode", mode,
                 "--json"]) == 0
    rows = json_lines(capsys.readouterr().out)
    want = [(k, p) for k in keys for p in s.query_by_key("A", k, mode=mode)["phy_offset"].tolist()]
    assert [(r["query_key"], r["phy_offset"]) for r in rows] == want and len(want) > 10
    assert main(["store", "query", str(store_dir), *GEO, "--topic", "A", "--keys-file", str(path), "--mode", mode]) == 0
    captured = capsys.readouterr()
    assert f"7 keys, 6 with {mode} results, {len(want):,} rows" in captured.err
    assert main(["store", "query", str(store_dir), *GEO, "--topic", "A", "--keys-file", str(path), "--explain"]) == 2


def test_query_explain_names_the_reasons(store_dir, capsys):
    argv = ["store", "query", str(store_dir), *GEO, "--topic", "A", "--key", "ORDER_Aa0", "--mode", "verified"]
    assert main([*argv, "--explain"]) == 0
    text = capsys.readouterr().out
    assert "verified:" in text and ": collision: the message is A#" in text and "ORDER_BB0" in text
    assert main([*argv, "--explain", "--json"]) == 0
    *rows, explain = json_lines(capsys.readouterr().out)
    assert all(r["broker_returned"] for r in rows)                      # verified rows
    assert set(explain) == {"summary", "problems", "trace"}
    assert set(REASONS) <= set(explain["summary"]) and explain["summary"]["collision"] >= 1
    assert {p["reason"] for p in explain["problems"]} == {"collision"}
    assert len(rows) == explain["summary"]["verified"] < explain["summary"]["broker"]


def test_query_without_results(store_dir, capsys):
    assert main(["store", "query", str(store_dir), *GEO, "--topic", "A", "--key", "no-such-key"]) == 0
    assert capsys.readouterr().out.strip() == "no broker results"
    assert main(["store", "query", str(store_dir), *GEO, "--topic", "A", "--key", "no-such-key", "--json"]) == 0
    assert capsys.readouterr().out == ""


def test_commitlog_dump_of_the_generated_store(store_dir, capsys):
    assert main(["commitlog", "dump", str(store_dir / "commitlog"), "--json", "--limit", "3"]) == 0
    rows = json_lines(capsys.readouterr().out)
    head = cl.read_columns(store_dir / "commitlog").head(3)
    assert len(rows) == 3
    assert [r["phy_offset"] for r in rows] == head["phy_offset"].tolist()
    assert [r["topic"] for r in rows] == head["topic"].tolist()
    assert [r["store_timestamp"] for r in rows] == head["store_timestamp"].tolist()
    assert [r["properties"].get("UNIQ_KEY") for r in rows] == head["uniq_key"].tolist()
    assert all(r["crc_ok"] for r in rows)


# -- exit codes ------------------------------------------------------------------------------


def test_query_on_a_missing_dir_is_exit_3_with_a_message(tmp_path, capsys):
    assert main(["store", "query", str(tmp_path / "nowhere"), "--topic", "T", "--key", "k"]) == 3
    err = capsys.readouterr().err
    assert err == f"rmqlab: error: {tmp_path / 'nowhere'}: no such file or directory\n"
    (tmp_path / "empty").mkdir()
    assert main(["store", "query", str(tmp_path / "empty"), "--topic", "T", "--key", "k"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("rmqlab: error: ") and "not a store directory" in err and "Traceback" not in err


def test_wrong_geometry_is_exit_1(store_dir, capsys):
    argv = ["store", "query", str(store_dir), "--hash-slot-num", "65", "--index-num", "1024",
            "--commitlog-file-size", "65536", "--topic", "A", "--key", "ORDER_Aa0"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("rmqlab: error: ") and "Traceback" not in err


def test_generate_into_an_existing_store_is_exit_1(store_dir, capsys):
    before = sorted(p.name for p in (store_dir / "commitlog").iterdir())
    assert main(["store", "generate", str(store_dir), *GEO, "--messages", "10"]) == 1
    err = capsys.readouterr().err
    assert "already holds files" in err and "Traceback" not in err
    assert sorted(p.name for p in (store_dir / "commitlog").iterdir()) == before


def test_garbage_commitlog_is_exit_1(tmp_path, capsys):
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "commitlog" / f"{0:020d}").write_bytes(b"\x00\x00\x01\x00" + b"\xab" * 4092)
    assert main(["store", "info", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rmqlab: error: ") and "Traceback" not in err


def test_usage_errors_are_exit_2(tmp_path, capsys):
    assert main(["store", "query", str(tmp_path)]) == 2                      # --topic/--key missing
    assert main(["store", "query", str(tmp_path), "--topic", "T", "--key", "k", "--mode", "exact"]) == 2
    assert main(["store", "info", str(tmp_path), "--index-num", "0"]) == 2
    assert "usage:" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["info", "dispatch"])
@pytest.mark.parametrize("what", ["missing", "a file"])
def test_info_and_dispatch_on_a_bad_dir_are_exit_3(tmp_path, capsys, command, what):
    target = tmp_path / "nowhere"
    if what == "a file":
        target.write_text("not a store")
    assert main(["store", command, str(target)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("rmqlab: error: ") and "Traceback" not in err


@pytest.mark.parametrize("extra", [["--pattern", "bursty"], ["--transaction-fraction", "2"]])
def test_generate_rejects_bad_workload_values_without_a_traceback(tmp_path, capsys, extra):
    rc = main(["store", "generate", str(tmp_path / "s"), *GEO, "--messages", "10", *extra])
    err = capsys.readouterr().err
    assert rc == 2 and "error:" in err and "Traceback" not in err


def test_errors_name_options_not_library_keywords(tmp_path, capsys):
    """A ConsumeQueue of another file size: read at the size its files say (and said on
    stderr); a size given that the files refute, or files that leave a choice, are named by
    the command's option."""
    from rmqlab.lab.generate import generate_store
    from rmqlab.lab.workload import Workload

    root = tmp_path / "s"
    generate_store(root, Workload(messages=50, seed=1), commitlog_file_size=65536, hash_slot_num=64,
                   index_num=1024, consume_queue_file_size=400)
    assert main(["store", "info", str(root), *GEO, "--json"]) == 0
    out = capsys.readouterr()
    info = json.loads(out.out)
    assert info["consume_queue_units"] == 50
    assert info["settings"]["mappedFileSizeConsumeQueue"] == {"value": 400, "source": "files",
                                                              "reason": "every non-empty file is 400 bytes (4 files)"}
    for command in ("info", "dispatch"):
        assert main(["store", command, str(root), *GEO, "--consume-queue-file-size", "6000000"]) == 1
        err = capsys.readouterr().err
        assert "pass --consume-queue-file-size 400" in err and "mapped_file_size" not in err, err
    # two queues of one file each, of two sizes: a real choice, listed (a usage error: exit 2)
    first = sorted((root / "consumequeue").glob("*/*/*"))[0]
    first.write_bytes(first.read_bytes() + bytes(200))
    assert main(["store", "info", str(root), *GEO]) == 2
    err = capsys.readouterr().err
    assert "400 bytes (3 files), 600 bytes (1 file)" in err and "pass --consume-queue-file-size" in err, err
    # a workload out of range is a usage error (exit 2), printed once
    assert main(["store", "generate", str(tmp_path / "g"), *GEO, "--messages", "-1"]) == 2
    assert capsys.readouterr().err.startswith("rmqlab: error: ")


# ------------------------------------------------------------ 5.x / 4.x store features

FEATURES = ["--broker-version", "5.3.1", "--batch-cq-topics", "B", "--inner-batch-max", "4",
            "--lmq-queues", "%LMQ%a,%LMQ%b", "--multi-dispatch-every", "5", "--enable-lmq",
            "--enable-multi-dispatch", "--consume-queue-ext", "--consume-queue-ext-file-size", "4000"]


def test_generate_with_store_features_then_info_dispatch_query_verify(tmp_path, capsys):
    d = tmp_path / "f"
    info = generate(d, capsys, *FEATURES, "--config")
    assert info["batch_cq_topics"] == ["B"] and info["batch_cq_units"] > 0 and info["batch_cq_folders"] >= 1
    assert info["lmq_queues"] == 2 and info["lmq_units"] > 0 and info["cq_ext_units"] > 0
    assert info["workload"]["multi_dispatch_every"] == 5
    assert '"queue.type":"BatchCQ"' in (d / "config" / "topics.json").read_text()
    # info needs no feature option: BatchCQ from topics.json, the file sizes from the files
    assert main(["store", "info", str(d), *GEO, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert {k: again[k] for k in ("batch_cq_units", "lmq_units", "cq_ext_units")} == \
        {k: info[k] for k in ("batch_cq_units", "lmq_units", "cq_ext_units")}
    assert main(["store", "dispatch", str(d), *GEO, "--enable-lmq", "--enable-multi-dispatch", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["messages"] == 0
    msgs = Store(d, **STORE_OPTIONS).messages()
    key = msgs[msgs["topic"] == "B"].iloc[0]["keys"].split()[0]
    assert main(["store", "query", str(d), *GEO, "--topic", "B", "--key", key, "--json"]) == 0
    assert any(r["topic"] == "B" for r in json_lines(capsys.readouterr().out))
    assert main(["verify", str(d)]) == 0
    assert "0 errors" in capsys.readouterr().out


def test_store_without_features_shows_no_feature_rows(store_dir, capsys):
    assert main(["store", "info", str(store_dir), *GEO, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert not {"batch_cq_topics", "batch_cq_folders", "batch_cq_units", "lmq_queues", "lmq_units",
                "cq_ext_folders"} & set(info)


@pytest.mark.parametrize("extra, message", [
    (["--lmq-queues", "%LMQ%a", "--multi-dispatch-every", "3"], "--enable-multi-dispatch"),
    (["--batch-cq-topics", "B", "--broker-version", "4.9.7"], "BatchConsumeQueue"),
    (["--batch-cq-topics", "B", "--config", "--broker-version", "4.9.7"], "BatchConsumeQueue"),
])
def test_generate_refuses_features_that_do_not_fit(tmp_path, capsys, extra, message):
    argv = ["store", "generate", str(tmp_path / "x"), *GEO, "--messages", "10", "--topics", "A,B", *extra]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
