"""The sample store of data/: rebuilt from its fixed seed it matches the committed manifest
byte for byte, the comparison notices a single changed byte, and the store holds what the
notebooks rely on (topics, roll-overs, hot keys, collisions, out-of-order times, transactions)."""
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from rmqlab.lab import sample
from rmqlab.rules.dispatch import SCHEDULE_TOPIC

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "data" / "MANIFEST.sha256"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample") / "sample-store"
    return sample.build_sample_store(root)


@pytest.fixture(scope="module")
def messages(built):
    return built.messages()


def test_the_build_matches_the_committed_manifest(built):
    store = built
    expected = sample.read_manifest(MANIFEST)
    got = sample.manifest(store.root)
    assert sample.compare_manifests(expected, got) == []
    assert got == expected
    # the manifest covers the whole store: data, queues, index files and the checkpoint
    assert {p.split("/")[0] for p in expected} == {"commitlog", "consumequeue", "index", "checkpoint"}


def test_the_committed_manifest_is_in_sha256sum_format():
    text = MANIFEST.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert text.endswith("\n") and lines == sorted(lines, key=lambda entry: entry[66:])
    for line in lines:
        digest, path = line[:64], line[66:]
        assert line[64:66] == "  " and int(digest, 16) >= 0 and not path.startswith("/") and ".." not in path
    assert sample.format_manifest(sample.read_manifest(MANIFEST)) == text


def test_one_flipped_byte_is_caught(built, tmp_path):
    store = built
    copy = tmp_path / "copy"
    shutil.copytree(store.root, copy)
    expected = sample.read_manifest(MANIFEST)
    assert sample.compare_manifests(expected, sample.manifest(copy)) == []
    victim = copy / "index" / sorted(os.listdir(copy / "index"))[1]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0x01
    victim.write_bytes(bytes(data))
    problems = sample.compare_manifests(expected, sample.manifest(copy))
    assert len(problems) == 1 and problems[0].startswith("differs:") and victim.name in problems[0]
    # the command line fails loudly on it, naming the file
    (copy / "commitlog" / "00000000000000000000").unlink()
    rc = sample.main(["--no-build", "--root", str(copy), "--manifest", str(MANIFEST)])
    assert rc == 1


def test_command_line_check_names_the_differences(built, tmp_path, capsys):
    store = built
    copy = tmp_path / "copy"
    shutil.copytree(store.root, copy)
    (copy / "extra").write_bytes(b"x")
    cl0 = copy / "commitlog" / "00000000000000000000"
    cl0.write_bytes(cl0.read_bytes()[:-1] + b"\x01")
    assert sample.main(["--no-build", "--root", str(copy), "--manifest", str(MANIFEST)]) == 1
    err = capsys.readouterr().err
    assert "does NOT match" in err and "differs:   commitlog/00000000000000000000" in err
    assert "unexpected: extra" in err and "--write-manifest" in err
    # and passes on the untouched build
    assert sample.main(["--no-build", "--root", str(store.root), "--manifest", str(MANIFEST)]) == 0
    assert f"OK: all {len(sample.read_manifest(MANIFEST))} files match" in capsys.readouterr().out


def test_write_manifest_reproduces_the_committed_file(built, tmp_path):
    store = built
    out = tmp_path / "MANIFEST.sha256"
    assert sample.main(["--no-build", "--write-manifest", "--root", str(store.root), "--manifest", str(out)]) == 0
    assert out.read_bytes() == MANIFEST.read_bytes()


def test_a_second_build_elsewhere_in_another_time_zone_is_identical(built, tmp_path, monkeypatch):
    # index files are named by the store time of the message that creates them, in UTC: neither
    # the wall clock nor the machine's zone enters the bytes or the names
    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset is POSIX only")
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        rc = sample.main(["--root", str(tmp_path / "again"), "--manifest", str(MANIFEST)])
    finally:
        monkeypatch.undo()
        time.tzset()
    assert rc == 0
    assert sample.manifest(tmp_path / "again") == sample.manifest(built.root)


def test_main_refuses_to_delete_a_folder_that_is_not_a_store(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit, match="refusing"):
        sample.main(["--root", str(tmp_path), "--manifest", str(MANIFEST)])
    assert (tmp_path / "notes.txt").exists()


def test_read_manifest_rejects_garbage(tmp_path):
    bad = tmp_path / "m"
    bad.write_text("not a digest  file\n")
    with pytest.raises(ValueError, match="sha256sum"):
        sample.read_manifest(bad)


# -- richness: what the notebooks rely on -------------------------------------------------


def test_volume_topics_and_roll_overs(built, messages):
    store = built
    info = store.info()
    w = sample.SAMPLE_WORKLOAD
    assert 20_000 <= w.messages <= 50_000 and info["messages"] == len(messages) > w.messages
    producer_topics = [t for t in info["topics"] if t != SCHEDULE_TOPIC]
    assert sorted(producer_topics) == sorted(w.topics) and len(producer_topics) >= 3
    assert SCHEDULE_TOPIC in info["topics"]                       # delayed messages
    assert info["commitlog_files"] >= 2                          # the CommitLog rolls over
    assert info["index_files"] >= 3                              # and the index, many times
    with store.index() as idx:
        files = idx.to_frame()
    assert files["is_write_full"].iloc[:-1].all() and not files["is_write_full"].iloc[-1]
    assert info["index_keys"] == int(files["keys"].sum())
    assert info["consume_queues"] == 3 * w.queues_per_topic + len(w.delay_levels)


def test_keys_hot_several_and_missing(messages):
    keyed = messages["keys"].dropna()
    tokens = keyed.str.split(" ")
    assert messages["keys"].isna().mean() > 0.05                        # keyless messages
    assert tokens.map(len).max() >= 3 and tokens.map(len).mean() > 1.3  # several keys a message
    counts = tokens.explode().value_counts()
    assert counts.index[0] == "USER_1" and counts.iloc[0] > 1000          # a Zipf head
    assert (counts > 1).sum() >= 100                                       # and a tail of repeats


def test_a_real_collision_pair_is_returned_by_the_broker(built):
    store = built
    q = store.explain_key("Orders", "ORDER_Aa0")
    wrong = q.broker[~q.broker["phy_offset"].isin(q.verified["phy_offset"])]
    assert len(wrong) >= 1 and len(q.verified) >= 1
    # the extra rows carry the other key of the pair, never ORDER_Aa0
    assert wrong["keys"].map(lambda k: "ORDER_BB0" in k.split(" ") and "ORDER_Aa0" not in k.split(" ")).all()
    assert set(q.diff[q.diff["phy_offset"].isin(wrong["phy_offset"])]["reason"]) == {"collision"}
    assert q.verified["keys"].map(lambda k: "ORDER_Aa0" in k.split(" ")).all()


def test_out_of_order_store_times(messages):
    st = messages["store_timestamp"].to_numpy()
    back = np.diff(st) < 0
    assert back.sum() == sample.SAMPLE_WORKLOAD.broker_clock_steps
    assert (np.diff(st)[back] <= -1000).all()     # real steps, not ms jitter


def test_transactions_delays_and_ipv6(messages):
    tran = messages["sys_flag"].to_numpy() & 0xC
    assert (tran == 0x4).sum() > 100 and (tran == 0x8).sum() > 100 and (tran == 0xC).sum() > 10
    prepared = set(messages.loc[tran == 0x4, "phy_offset"])
    decisions = messages[(tran == 0x8) | (tran == 0xC)]
    assert decisions["prepared_transaction_offset"].isin(prepared).all()
    assert ((messages["topic"] == SCHEDULE_TOPIC) & (messages["delay_level"] > 0)).sum() > 100
    assert ((messages["sys_flag"] & 0x10) != 0).sum() > 1000
    assert messages["born_host"].str.startswith("[2001:db8:").any()


# -- sample_store(): what notebooks call --------------------------------------------------


def test_sample_store_builds_once_and_matches_the_manifest(tmp_path):
    root = tmp_path / "gen" / "sample-store"
    store = sample.sample_store(root)
    assert sample.compare_manifests(sample.read_manifest(MANIFEST), sample.manifest(root)) == []
    assert store.hash_slot_num == sample.SAMPLE_STORE_OPTIONS["hash_slot_num"]
    stamp = (root / "checkpoint").stat().st_mtime_ns
    again = sample.sample_store(root)            # present: opened, not rebuilt
    assert (root / "checkpoint").stat().st_mtime_ns == stamp
    assert again.info()["messages"] == store.info()["messages"]
    assert not [p for p in root.parent.iterdir() if p.name != "sample-store"], "no build folder left behind"


def test_sample_store_replaces_an_interrupted_build(tmp_path):
    root = tmp_path / "sample-store"
    (root / "index").mkdir(parents=True)          # a build that died before writing its CommitLog
    (root / "index" / "20240610061320000").write_bytes(b"\0" * 10)
    sample.sample_store(root)
    assert sample.compare_manifests(sample.read_manifest(MANIFEST), sample.manifest(root)) == []


def test_sample_store_never_deletes_a_folder_that_is_not_a_store(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a store"):
        sample.sample_store(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def _flip_one_byte(path: Path, keep_stamp: bool) -> None:
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    if keep_stamp:                                 # same size and time: only the bytes tell
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("keep_stamp", [False, True], ids=["touched", "same-size-and-time"])
def test_sample_store_does_not_reuse_a_tampered_store(tmp_path, monkeypatch, keep_stamp):
    root = tmp_path / "sample-store"
    sample.sample_store(root)
    index_file = sorted((root / "index").iterdir())[3]
    _flip_one_byte(index_file, keep_stamp)
    expected = sample.read_manifest(MANIFEST)
    assert sample.compare_manifests(expected, sample.manifest(root)) != []
    monkeypatch.setattr(sample, "_verified", {}, raising=False)   # a new process: none hashed
    sample.sample_store(root)
    assert sample.compare_manifests(expected, sample.manifest(root)) == []


def test_sample_store_fails_when_a_fresh_build_differs_from_the_manifest(tmp_path, monkeypatch):
    expected = sample.read_manifest(MANIFEST)
    wrong = dict(expected, checkpoint="0" * 64)
    manifest_path = tmp_path / "MANIFEST.sha256"
    manifest_path.write_text(sample.format_manifest(wrong))
    monkeypatch.setattr(sample, "_MANIFEST_PATH", manifest_path, raising=False)
    with pytest.raises(sample.SampleStoreMismatchError, match="differs:   checkpoint"):
        sample.sample_store(tmp_path / "sample-store")
