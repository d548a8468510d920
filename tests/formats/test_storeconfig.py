"""config/ files: the broker's .bak fallback, every version's shape, typed errors with JSON
paths, hypothesis round trips against a plain-dict model, and consumer progress against the
ConsumeQueue. No real broker config files exist in the shared data: the shapes come from the
broker source (see rmqlab.formats.storeconfig) and generated stores."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.cli import main
from rmqlab.errors import FormatError
from rmqlab.formats import storeconfig as sc
from rmqlab.formats import storeconfig_writer as sw
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload
from rmqlab.store.directory import Store

VERSIONS = ["4.2.0", "4.9.7", "5.0.0", "5.3.1"]

# the shape a 5.x broker with broadcast consumers and enableLmq writes (fastjson, bare int keys)
FIVE_X_OFFSETS = """{
\t"dataVersion":{
\t\t"counter":1448,
\t\t"stateVersion":0,
\t\t"timestamp":1736661762584
\t},
\t"groupTopicMap":{
\t\t"g1":["t"]
\t},
\t"lmqOffsetTable":{"%LMQ%q@%LMQ%g":12},
\t"offsetTable":{
\t\t"t@g1":{0:37960,1:37961},
\t\t"t@g2@broadcast":{0:100831},
\t\t"%RETRY%g1@g1":{0:0}
\t}
}"""


def write(path, text: str | bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_five_x_offsets_shape(tmp_path):
    load = sc.load_config_file(write(tmp_path / "consumerOffset.json", FIVE_X_OFFSETS), "consumer_offsets")
    assert load.source == "file" and load.unknown_fields == []
    assert load.data_version == sc.DataVersion(1736661762584, 1448, 0)
    got = {(r["topic"], r["group"], r["suffix"], r["queue_id"], r["offset"], r["table"]) for r in load.rows}
    assert got == {("t", "g1", None, 0, 37960, "offsetTable"), ("t", "g1", None, 1, 37961, "offsetTable"),
                   ("t", "g2", "broadcast", 0, 100831, "offsetTable"), ("%RETRY%g1", "g1", None, 0, 0, "offsetTable"),
                   ("%LMQ%q", "%LMQ%g", None, 0, 12, "lmqOffsetTable")}


@pytest.mark.parametrize("main, bak, source", [
    (None, '{"offsetTable":{1:9}}', "bak"),          # crash between delete and rename
    ("", '{"offsetTable":{1:9}}', "bak"),            # empty main file
    ('{"offsetTable":{1:', '{"offsetTable":{1:9}}', "bak"),   # torn main file
    ('{"offsetTable":{1:8}}', '{"offsetTable":{1:9}}', "file"),
    (None, None, "none"),
    ("{oops", None, "none"),                        # loadBak: no .bak loads nothing, the broker starts
    ("null", '{"offsetTable":{1:9}}', "file"),      # decode ignores a null document
])
def test_bak_fallback(tmp_path, main, bak, source):
    p = tmp_path / "delayOffset.json"
    if main is not None:
        write(p, main)
    if bak is not None:
        write(tmp_path / "delayOffset.json.bak", bak)
    load = sc.load_config_file(p, "delay_offsets")
    assert load.source == source, load.reason
    if source == "bak":
        assert load.rows == [{"level": 1, "offset": 9}] and load.used.name == "delayOffset.json.bak"
        assert "delayOffset.json" in load.reason


def test_both_files_bad_is_the_brokers_load_failure(tmp_path):
    write(tmp_path / "topics.json", "{")
    write(tmp_path / "topics.json.bak", '{"topicConfigTable":[]}')
    with pytest.raises(FormatError, match="load fails") as e:
        sc.load_config_file(tmp_path / "topics.json", "topics")
    assert e.value.path.endswith("topics.json.bak") and e.value.field == "topicConfigTable"


@pytest.mark.parametrize("text, field, message", [
    ('{"offsetTable":{"abc@g":{"x":1}}}', 'offsetTable["abc@g"]["x"]', "queue id is not an integer"),
    ('{"offsetTable":{"abc@g":{0:1.5}}}', 'offsetTable["abc@g"]["0"]', "offset is not an integer"),
    ('{"offsetTable":{"abc@g":{0:9223372036854775808}}}', 'offsetTable["abc@g"]["0"]', "does not fit a Java long"),
    ('{"offsetTable":{"abc@g":{0:' + "9" * 100 + "}}}", 'offsetTable["abc@g"]["0"]', "too long"),
    ('{"offsetTable":{"abc@g":{0:1}', "offsetTable", "truncated|expected"),
    ('{"offsetTable":' + "[" * 500 + "]" * 500 + "}", "offsetTable", "nested deeper"),
    ('{"offsetTable":"x"}', "offsetTable", "expected an object"),
])
def test_typed_errors_name_the_json_path(tmp_path, text, field, message):
    with pytest.raises(FormatError, match=message) as e:
        sc.decode_config(text, "consumer_offsets", path=tmp_path / "consumerOffset.json")
    assert e.value.field.startswith(field) and e.value.path.endswith("consumerOffset.json")


def test_invalid_utf8_is_replaced_as_java_does(tmp_path):
    p = write(tmp_path / "subscriptionGroup.json", b'{"subscriptionGroupTable":{"g\xff":{"groupName":"g\xff"}}}')
    load = sc.load_config_file(p, "subscription_groups")
    assert load.utf8_replaced and load.rows[0]["group"] == "g\ufffd"


def test_unknown_fields_are_tolerated_and_listed():
    rows, _, unknown, _ = sc.decode_config('{"version":3,"topicConfigTable":{"T":{"readQueueNums":2,"newField":1}}}',
                                           "topics")
    assert unknown == ["version", 'topicConfigTable["T"]["newField"]']
    assert rows[0]["read_queue_nums"] == 2 and rows[0]["write_queue_nums"] == 16   # Java default


@pytest.mark.parametrize("version", VERSIONS)
def test_each_version_shape(tmp_path, version):
    sw.write_store_config(tmp_path, broker_version=version, timestamp=1718000000000, persists=2,
                          topics={"T": 4}, consumer_offsets={"T@G": {0: 1, 3: 2}}, delay_offsets={2: 5})
    shape = sw.shape_for(version)
    offsets = json.loads((tmp_path / "config/consumerOffset.json").read_text().replace("{0:", '{"0":')
                         .replace(",3:", ',"3":'))
    assert ("dataVersion" in offsets) == (shape != "4")
    groups = (tmp_path / "config/subscriptionGroup.json").read_text()
    assert ("forbiddenTable" in groups) == (shape == "5.1")
    assert ("stateVersion" in groups) == (shape != "4")
    cfg = sc.read_store_config(tmp_path)
    assert all(load.source == "file" and not load.unknown_fields for load in cfg.loads.values())
    assert (tmp_path / "config/topics.json.bak").read_bytes() == (tmp_path / "config/topics.json").read_bytes()
    assert cfg.topics()[["topic", "read_queue_nums", "perm_text"]].values.tolist() == [["T", 4, "RW-"]]
    assert cfg.consumer_offsets()[["topic", "group", "queue_id", "offset"]].values.tolist() == [
        ["T", "G", 0, 1], ["T", "G", 3, 2]]
    assert cfg.delay_offsets().values.tolist() == [[2, 5]]
    assert cfg.subscription_groups()["group"].tolist() == ["G"]


names = st.text(st.sampled_from("abcXYZ09_-%"), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(version=st.sampled_from(VERSIONS),
       model=st.dictionaries(st.tuples(names, names), st.dictionaries(st.integers(0, 2**31 - 1),
                                                                      st.integers(-(2**63), 2**63 - 1), max_size=4),
                             max_size=5),
       delay=st.dictionaries(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1), max_size=20))
def test_round_trip_matches_a_plain_model(tmp_path_factory, version, model, delay):
    root = tmp_path_factory.mktemp("cfg")
    offsets = {f"{t}@{g}": q for (t, g), q in model.items()}
    sw.write_store_config(root, broker_version=version, timestamp=0, consumer_offsets=offsets, delay_offsets=delay)
    cfg = sc.read_store_config(root)
    got = {(r.topic, r.group, r.queue_id, r.offset) for r in cfg.consumer_offsets().itertuples()}
    assert got == {(t, g, q, o) for (t, g), qs in model.items() for q, o in qs.items()}
    assert dict(cfg.delay_offsets().values.tolist()) == delay


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_hostile_bytes_answer_or_raise_typed(data):
    try:
        sc.decode_config(data.decode("utf-8", "replace"), "consumer_offsets", path="consumerOffset.json")
    except FormatError as e:
        assert e.path == "consumerOffset.json"


@pytest.fixture(scope="module")
def progress_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    w = Workload(messages=2000, seed=5, topics=("A", "B"), rate=500, delay_fraction=0.05)
    return generate_store(root, w, commitlog_file_size=65536, hash_slot_num=64, index_num=1024,
                          config_version="5.3.1")


def test_consumer_progress_against_the_consume_queue(progress_store):
    p = progress_store.consumer_progress()
    assert set(p["group"]) == {"A_consumer", "A_stale", "B_consumer", "B_stale"}
    assert (p["lag"] == p["max_offset"] - p["committed"]).all() and (p["lag"] >= 0).all()
    assert p.loc[p["group"].str.endswith("_stale"), "no_subscription_group"].all()
    assert not p.loc[p["group"].str.endswith("_consumer"), "no_subscription_group"].any()
    assert not p["beyond_max"].any() and not p["unknown_queue"].any()
    assert p.attrs["config"]["consumer_offsets"]["source"] == "file"


def test_consumer_progress_flags(tmp_path, progress_store):
    import shutil

    root = tmp_path / "s"
    shutil.copytree(progress_store.root, root)
    store = Store(root, commitlog_file_size=65536, hash_slot_num=64, index_num=1024)
    end = int(store.consumer_progress().query("group == 'A_consumer' and queue_id == 0")["max_offset"].iloc[0])
    (root / "config/consumerOffset.json").unlink()     # the broker falls back to the .bak
    write(root / "config/consumerOffset.json.bak",
          '{"offsetTable":{"A@A_consumer":{0:' + str(end + 5) + ',9:3},"Nope@A_consumer":{0:1}}}')
    p = store.consumer_progress().set_index(["topic", "queue_id"])
    assert p.attrs["config"]["consumer_offsets"]["source"] == "bak"
    assert bool(p.loc[("A", 0), "beyond_max"]) and int(p.loc[("A", 0), "lag"]) == -5
    # a queue the store lacks: the broker's max offset for it is 0 (findConsumeQueue makes an
    # empty one), so its lag is minus the committed offset
    assert bool(p.loc[("A", 9), "unknown_queue"]) and (int(p.loc[("A", 9), "max_offset"]), int(p.loc[("A", 9), "lag"]),
                                                       bool(p.loc[("A", 9), "beyond_max"])) == (0, -3, True)
    assert bool(p.loc[("Nope", 0), "unknown_queue"]) and int(p.loc[("Nope", 0), "lag"]) == -1


def test_store_info_shows_progress(progress_store, capsys):
    argv = ["store", "info", str(progress_store.root), "--hash-slot-num", "64", "--index-num", "1024",
            "--commitlog-file-size", "65536"]
    assert main([*argv, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert {r["group"] for r in info["consumer_progress"]} == {"A_consumer", "A_stale", "B_consumer", "B_stale"}
    assert info["config"]["topics"]["source"] == "file"
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "consumer progress" in out and "A_consumer" in out and "config/consumerOffset.json: file" in out


def test_generate_rejects_a_bad_version(tmp_path, capsys):
    assert main(["store", "generate", str(tmp_path / "s"), "--messages", "10", "--config",
                 "--broker-version", "x.y"]) == 2
    assert "MAJOR.MINOR.PATCH" in capsys.readouterr().err


# ------------------------------------------------------------ BatchCQ topics from topics.json


def test_batch_cq_topics_from_topics_json_and_bak(tmp_path):
    from rmqlab.errors import FormatError
    from rmqlab.formats.storeconfig import batch_cq_topics
    from rmqlab.formats.storeconfig_writer import write_store_config

    assert batch_cq_topics(tmp_path) == frozenset()
    write_store_config(tmp_path, broker_version="5.3.1", timestamp=0, persists=2, topics={"B": 2, "T": 1},
                       batch_cq_topics=["B"])
    assert batch_cq_topics(tmp_path) == {"B"}
    (tmp_path / "config" / "topics.json").write_text("{")          # torn: the broker loads the .bak
    assert batch_cq_topics(tmp_path) == {"B"}
    (tmp_path / "config" / "topics.json").write_text(
        '{"topicConfigTable":{"X":{"attributes":{"queue.type":"Other"}}}}')
    with pytest.raises(FormatError, match="queue.type"):
        batch_cq_topics(tmp_path)
    with pytest.raises(ValueError, match="5.0.0"):
        write_store_config(tmp_path, broker_version="4.9.7", timestamp=0, topics={"B": 1}, batch_cq_topics=["B"])


def test_store_takes_batch_cq_topics_from_config(tmp_path):
    from rmqlab.formats.storeconfig_writer import write_store_config
    from rmqlab.store.directory import Store

    assert Store(tmp_path).batch_cq_topics == frozenset()
    write_store_config(tmp_path, broker_version="5.0.0", timestamp=0, topics={"B": 1, "T": 1}, batch_cq_topics=["B"])
    assert Store(tmp_path).batch_cq_topics == {"B"}
    assert Store(tmp_path, batch_cq_topics=()).batch_cq_topics == frozenset()   # the caller's word wins


def test_generated_batch_cq_store_with_config_dispatches_again_from_config(tmp_path):
    """A 5.x store written with --config: a fresh Store on it, told nothing, finds the BatchCQ
    topic in topics.json, and dispatching a copy without its queues rebuilds them."""
    import shutil

    from rmqlab.lab.generate import generate_store
    from rmqlab.lab.workload import Workload
    from rmqlab.store.directory import Store

    opts = dict(commitlog_file_size=1 << 18, hash_slot_num=16, index_num=2048, consume_queue_file_size=2000)
    w = Workload(messages=200, seed=1, topics=("T", "B"), batch_cq_topics=("B",), inner_batch_max=4,
                 broker_version="5.3.1")
    generate_store(tmp_path / "s", w, config_version="5.3.1", batch_cq_topics=("B",), **opts)
    assert '"queue.type":"BatchCQ"' in (tmp_path / "s" / "config" / "topics.json").read_text()
    shutil.copytree(tmp_path / "s", tmp_path / "c", ignore=shutil.ignore_patterns("consumequeue", "batchconsumequeue",
                                                                                 "index", "checkpoint"))
    s = Store(tmp_path / "c", **opts)
    assert s.batch_cq_topics == {"B"}
    r = s.dispatch()
    assert r.batch_queue_units > 0 and not (tmp_path / "c" / "consumequeue" / "B").exists()
    for sub in ("batchconsumequeue", "consumequeue"):
        for f in sorted((tmp_path / "s" / sub).rglob("*")):
            if f.is_file():
                assert f.read_bytes() == (tmp_path / "c" / f.relative_to(tmp_path / "s")).read_bytes()


def _rocksdb_config(folder, entries: dict[bytes, bytes], counter: int) -> None:
    rocksdict = pytest.importorskip("rocksdict", reason="the rmqlab[rocksdb] extra (rocksdict) is not installed")
    opts = rocksdict.Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    db = rocksdict.Rdict(str(folder), options=opts, column_families={"kvDataVersion": rocksdict.Options(raw_mode=True)})
    for k, v in entries.items():
        db[k] = v
    db.get_column_family("kvDataVersion")[b"kvDataVersionKey"] = (
        f'{{"counter":{counter},"stateVersion":0,"timestamp":1}}'.encode())
    db.close()
    (folder / "rocksdict-config.json").unlink(missing_ok=True)


@pytest.mark.parametrize("json_counter", [None, 3, 9])
def test_rocksdb_config_managers_merge_a_newer_json_file(tmp_path, json_counter):
    """RocksDBTopicConfigManager / RocksDBConsumerOffsetManager (5.3.3) load their database, then
    merge the JSON file only when its dataVersion counter is greater than the database's: topics
    by name, the consumer offset table as a whole (ConsumerOffsetManager.decode replaces it)."""
    from rmqlab.formats.storeconfig import read_store_config

    config = tmp_path / "config"
    config.mkdir()
    topic = '{{"topicName":"{0}","readQueueNums":{1},"writeQueueNums":{1},"perm":6}}'
    _rocksdb_config(config / "topics", {b"A": topic.format("A", 4).encode(), b"B": topic.format("B", 2).encode()}, 5)
    _rocksdb_config(config / "consumerOffsets", {b"A@G": b'{"offsetTable":{"0":7,"1":9}}'}, 5)
    if json_counter is not None:
        version = f'"dataVersion":{{"counter":{json_counter},"timestamp":2}}'
        (config / "topics.json").write_text(f'{{"topicConfigTable":{{"B":{topic.format("B", 8)},'
                                            f'"C":{topic.format("C", 1)}}},{version}}}')
        (config / "consumerOffset.json").write_text(f'{{"offsetTable":{{"C@G":{{0:3}}}},{version}}}')
    before = {p: p.read_bytes() for p in config.rglob("*") if p.is_file()}
    cfg = read_store_config(tmp_path)
    assert before == {p: p.read_bytes() for p in config.rglob("*") if p.is_file()}
    topics = {r.topic: r.read_queue_nums for r in cfg.topics().itertuples()}
    offsets = {(r.topic, r.group, r.queue_id): r.offset for r in cfg.consumer_offsets().itertuples()}
    assert cfg.loads["topics"].source == "rocksdb"
    if json_counter == 9:
        assert topics == {"A": 4, "B": 8, "C": 1} and offsets == {("C", "G", 0): 3}
    else:
        assert topics == {"A": 4, "B": 2} and offsets == {("A", "G", 0): 7, ("A", "G", 1): 9}


def test_lmq_consumer_offsets_are_the_consumer_offsets_a_5x_broker_with_lmq_keeps(tmp_path):
    """A 5.x broker with enableLmq keeps every group's offsets in lmqConsumerOffset.json
    (LmqConsumerOffsetManager; no consumerOffset.json at all): offsetTable as fastjson writes it,
    bare integer keys, plus lmqOffsetTable. frame("consumer_offsets") reads it as
    consumer_offsets() does."""
    cfg = tmp_path / "config"
    cfg.mkdir()
    (cfg / "lmqConsumerOffset.json").write_text(
        '{\n\t"dataVersion":{"counter":0,"stateVersion":0,"timestamp":1795974025212},\n\t"lmqOffsetTable":{},\n'
        '\t"offsetTable":{\n\t\t"TopicOrder@G_pop":{0:13,1:13,2:7,3:7\n\t\t},\n'
        '\t\t"rmq_sys_REVIVE_LOG_DefaultCluster@CID_RMQ_SYS_REVIVE_GROUP":{0:0\n\t\t}\n\t}\n}')
    c = sc.read_store_config(tmp_path)
    got = c.frame("consumer_offsets")
    assert got.equals(c.consumer_offsets())
    assert sorted(zip(got["topic"], got["group"], got["queue_id"], got["offset"], strict=True)) == [
        ("TopicOrder", "G_pop", 0, 13), ("TopicOrder", "G_pop", 1, 13), ("TopicOrder", "G_pop", 2, 7),
        ("TopicOrder", "G_pop", 3, 7), ("rmq_sys_REVIVE_LOG_DefaultCluster", "CID_RMQ_SYS_REVIVE_GROUP", 0, 0)]


def _v2_key(table: int, record: int, tail: bytes) -> bytes:
    """ConfigHelper / ConsumerOffsetManagerV2's key layout (rocketmq-all-5.3.3 broker/config/v2)."""
    return bytes([1]) + table.to_bytes(2, "big") + bytes([record]) + tail


def _v2_name(name: str) -> bytes:
    b = name.encode()
    return len(b).to_bytes(2, "big") + b


def test_v2_config_managers_are_read_from_config_rdb_alone(tmp_path):
    """configManagerVersion=v2 (5.3+): topics, groups and consumer offsets come from config/rdb,
    keyed and valued as ConfigHelper, TopicConfigManagerV2 and ConsumerOffsetManagerV2 write them;
    a topics.json beside it is not read (a v2 broker does not); a key of no table is a typed
    error naming the database."""
    import struct

    from rmqlab.formats.storeconfig import load_config_v2, read_store_config

    config = tmp_path / "config"
    config.mkdir()
    (config / "topics.json").write_text('{"topicConfigTable":{"OLD":{"topicName":"OLD"}}}')
    entries = {
        _v2_key(3, 2, _v2_name("TopicA")): b"\x01" + json.dumps({"topicName": "TopicA", "readQueueNums": 4,
                                                                  "writeQueueNums": 4, "perm": 6}).encode(),
        _v2_key(4, 2, _v2_name("G_push")): b"\x01" + json.dumps({"groupName": "G_push"}).encode(),
        _v2_key(1, 2, _v2_name("G_push") + b"\x01" + _v2_name("TopicA") + b"\x01" + struct.pack(">i", 3)):
            struct.pack(">q", 42),
        _v2_key(2, 2, _v2_name("G_push") + b"\x01" + _v2_name("TopicA") + b"\x01" + struct.pack(">i", 3)):
            struct.pack(">q", 40),
        _v2_key(1, 1, b"data_version"): struct.pack(">qqq", 0, 1718000000000, 7),
    }
    _rocksdb_config(config / "rdb", entries, 0)
    c = read_store_config(tmp_path)
    assert c.topics()["topic"].tolist() == ["TopicA"] and c.topics()["read_queue_nums"].tolist() == [4]
    assert c.subscription_groups()["group"].tolist() == ["G_push"]
    off = c.consumer_offsets()
    assert off[["topic", "group", "queue_id", "offset"]].values.tolist() == [["TopicA", "G_push", 3, 42]]
    loads = load_config_v2(config / "rdb")
    assert loads["consumer_offsets"].data_version.counter == 7
    assert [(r["queue_id"], r["offset"]) for r in loads["consumer_offsets"].extra["pull_offsets"]] == [(3, 40)]
    _rocksdb_config(config / "rdb", {_v2_key(9, 2, _v2_name("x")): b"\x01{}"}, 0)
    with pytest.raises(FormatError) as e:
        load_config_v2(config / "rdb")
    assert e.value.field == "key" and "table id 9" in str(e.value)


def test_a_topic_queue_mapping_names_its_bad_field():
    """topicQueueMapping.json (TopicQueueMappingSerializeWrapper): fastjson's bare int keys read;
    an item field of the wrong type, a global id that is no integer, items that are no list:
    each a FormatError naming the JSON path."""
    from rmqlab.errors import FormatError
    from rmqlab.formats.storeconfig import decode_config

    good = ('{"topicQueueMappingInfoMap":{"S":{"totalQueues":2,"bname":"b","epoch":1,"dirty":false,'
            '"currIdMap":{0:1},"hostedQueues":{0:[{"gen":0,"queueId":1,"bname":"b","logicOffset":0,'
            '"startOffset":5,"endOffset":-1}]}}}}')
    rows, _, unknown, extra = decode_config(good, "topic_queue_mappings")
    assert [(r["global_id"], r["queue_id"], r["start_offset"], r["time_of_end"]) for r in rows] == [(0, 1, 5, -1)]
    assert unknown == [] and extra["curr_id_map"] == [{"topic": "S", "logic_id": 0, "physical_id": 1}]
    for bad, where in ((good.replace('"startOffset":5', '"startOffset":"5"'), "startOffset"),
                       (good.replace('"hostedQueues":{0:', '"hostedQueues":{"x":'), "hostedQueues"),
                       (good.replace(':[{"gen"', ':{"gen"').replace('"endOffset":-1}]', '"endOffset":-1}'),
                        "hostedQueues")):
        with pytest.raises(FormatError) as e:
            decode_config(bad, "topic_queue_mappings")
        assert where in e.value.field
