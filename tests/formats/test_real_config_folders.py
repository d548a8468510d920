"""The two real broker config folders of ``../shared/real-data/rocketmq/`` (a 4.x broker's and a
5.3.1 broker's store root), read with every value their READMEs list: the config files through
rmqlab.formats.storeconfig (with the .bak rule), the timer checkpoint, the store checkpoint, abort
and lock. Each README is an independent reader's account; the bytes are the final word (one place
where they differ is named below)."""
from __future__ import annotations

from oracles import require_real_data

from rmqlab.formats import timer as tm
from rmqlab.formats.brokerfiles import read_broker_files
from rmqlab.formats.checkpoint import StoreCheckpoint, read_checkpoint
from rmqlab.formats.storeconfig import read_store_config

V4 = "rocketmq/config-shaoxubao-4.x"
V5 = "rocketmq/config-guoming-5.3.1"


def test_the_4x_folder_reads_as_its_readme_says():
    root = require_real_data(V4)
    cfg = read_store_config(root)
    offsets = cfg.consumer_offsets()
    group = "please_rename_unique_group_name_4"
    got = sorted(zip(offsets["topic"], offsets["group"], offsets["queue_id"], offsets["offset"], strict=True))
    assert got == sorted([("TopicTest", group, q, 250) for q in range(4)] + [(f"%RETRY%{group}", group, 0, 0)])
    assert cfg.loads["consumer_offsets"].data_version is None          # "no dataVersion in this file"
    assert (root / "config" / "consumerOffset.json").stat().st_size == 189
    topics = cfg.topics()
    assert (root / "config" / "topics.json").stat().st_size == 1851 and len(topics) > 0
    assert cfg.loads["topics"].data_version is not None and cfg.loads["topics"].unknown_fields == []
    groups = cfg.loads["subscription_groups"]
    assert (groups.data_version.counter, groups.data_version.timestamp) == (1, 1551626364364)
    assert groups.unknown_fields == [] and len(groups.rows) > 0
    assert len(cfg.delay_offsets()) == 0 and (root / "config" / "delayOffset.json").stat().st_size == 21
    assert len(cfg.frame("consumer_filters")) == 0 and (root / "config" / "consumerFilter.json").stat().st_size == 27
    assert not any(p.name.endswith(".bak") for p in (root / "config").iterdir())
    assert {k: v.source for k, v in cfg.loads.items()} == {
        "topics": "file", "consumer_offsets": "file", "delay_offsets": "file", "subscription_groups": "file",
        "consumer_filters": "file"}
    cp = read_checkpoint(root / "checkpoint")
    assert cp == StoreCheckpoint(1551626238066, 1551626238066, 0)
    files = read_broker_files(root)
    assert files.abort and files.abort_pid is None and (root / "abort").stat().st_size == 0   # 4.x: empty
    assert files.lock_text == "lock"


def test_the_531_folder_reads_as_its_readme_says():
    root = require_real_data(V5)
    cp = tm.read_timer_checkpoint(root / "config" / "timercheck")
    assert cp == tm.TimerCheckpoint(1778241104000, 0, 0, 0, 0, 1778241104825, 426)
    assert (root / "config" / "timercheck").read_bytes()[56:] == bytes(4096 - 56)
    cfg = read_store_config(root)
    loads = cfg.loads
    assert {k: (v.source, len(v.rows)) for k, v in loads.items()} == {
        "topics": ("none", 0), "subscription_groups": ("none", 0), "consumer_offsets": ("file", 0),
        "delay_offsets": ("file", 0), "timer_metrics": ("file", 0), "transaction_metrics": ("file", 0),
        "consumer_filters": ("file", 0), "consumer_order_info": ("file", 0)}
    tmv = loads["timer_metrics"].data_version
    assert (tmv.counter, tmv.state_version, tmv.timestamp) == (0, 0, 1778240664648)
    assert (root / "config" / "timermetrics").stat().st_size == 89
    txv = loads["transaction_metrics"].data_version
    assert (txv.counter, txv.state_version) == (0, 0) and (root / "config" / "transactionMetrics").stat().st_size == 94
    assert loads["consumer_offsets"].data_version.state_version == 0                 # 5.x DataVersion
    assert (root / "config" / "consumerOffset.json").stat().st_size == 126
    assert (root / "config" / "consumerOrderInfo.json").read_bytes() == b'{\n\t"table":{}\n}'   # 15 bytes, a TAB
    assert all(v.unknown_fields == [] for v in loads.values())
    for p in (root / "config").iterdir():       # every config file has a .bak with the same bytes
        if not p.name.endswith(".bak") and p.name != "timercheck":
            assert p.with_name(p.name + ".bak").read_bytes() == p.read_bytes(), p.name
    assert read_checkpoint(root / "checkpoint") == StoreCheckpoint()              # all zero
    assert (root / "checkpoint").read_bytes() == bytes(4096)
    files = read_broker_files(root)
    # abort holds "15", the PID 5.x writes (createTempFile: MixAll.string2File); the README says
    # abort.bak holds "15" too, but its bytes are "14": string2File copies the previous run's
    # text to .bak before it writes, so .bak holds the run before's PID
    assert (root / "abort").read_bytes() == b"15" and (root / "abort.bak").read_bytes() == b"14"
    assert (files.abort, files.abort_pid, files.abort_bak_pid, files.lock_text) == (True, 15, 14, "lock")
    assert not (root / "commitlog").exists() and not (root / "timerwheel").exists()
