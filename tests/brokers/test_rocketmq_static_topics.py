"""config/topicQueueMapping.json (5.x static topics, TopicQueueMappingManager) as the releases write
and read it: StaticTopicMapping.java builds mappings as a broker holds them after static topics
were created and their queues moved between brokers, writes the file with the release's own
serializer (what the broker persists) and reads it back with its own decoder; rmqlab reads the
same bytes to the same details, items and currIdMap, and converts each probe offset as the
release's LogicQueueMappingItem does. The followers of the dledger-group scenario write the file
(empty) themselves: read, and not listed as unread."""
from __future__ import annotations

import pytest
import rocketmq_harness as rh

from rmqlab.formats.storeconfig import physical_queue_offset, read_store_config, static_queue_offset
from rmqlab.store.directory import Store

RELEASES = [r for r in rh.STATIC_TOPIC_RELEASES if r in rh.selected_releases()]
SEEDS = range(1, 9)


@pytest.mark.parametrize("release", RELEASES)
def test_mappings_read_as_the_release_reads_them(release, tmp_path):
    compared = 0
    for seed in SEEDS:
        config = tmp_path / str(seed) / "config"
        java = rh.static_topic_mapping_oracle(release, seed, config)
        cfg = read_store_config(config.parent)
        assert cfg.loads["topic_queue_mappings"].source == "file"
        rows = cfg.topic_queue_mappings()
        ids = cfg.loads["topic_queue_mappings"].extra["curr_id_map"]
        assert sorted(rows["topic"].unique()) == sorted(d["topic"] for d in java)
        for d in java:
            mine = rows[rows["topic"] == d["topic"]]
            head = mine.iloc[0]
            assert (head["scope"], head["total_queues"], head["mapping_bname"], head["epoch"], head["dirty"]) == (
                d["scope"], d["totalQueues"], d["bname"], d["epoch"], d["dirty"])
            assert {(i["logic_id"], i["physical_id"]) for i in ids if i["topic"] == d["topic"]} == {
                (int(k), v) for k, v in d["currIdMap"].items()}
            items = mine[mine["global_id"].notna()]
            theirs = [(i["globalId"], i["gen"], i["queueId"], i["bname"], i["logicOffset"], i["startOffset"],
                       i["endOffset"], i["timeOfStart"], i["timeOfEnd"]) for i in d["items"]]
            assert sorted(zip(items["global_id"].astype(int), items["gen"].astype(int), items["queue_id"].astype(int),
                              items["bname"], items["logic_offset"].astype(int), items["start_offset"].astype(int),
                              items["end_offset"].astype(int), items["time_of_start"].astype(int),
                              items["time_of_end"].astype(int), strict=True)) == sorted(theirs)
            for i in d["items"]:
                for p in i["probes"]:
                    if i["logicOffset"] >= 0:   # computeStaticQueueOffsetStrictly asserts it
                        assert static_queue_offset(i["logicOffset"], i["startOffset"], p["offset"]) == p["strictly"]
                    assert static_queue_offset(i["logicOffset"], i["startOffset"], p["offset"],
                                               end_offset=i["endOffset"], strictly=False) == p["loosely"]
                    assert physical_queue_offset(i["logicOffset"], i["startOffset"], p["offset"]) == p["physical"]
                    compared += 1
    assert compared > 50


@pytest.mark.parametrize("release", [r for r in rh.DLEDGER_GROUP_RELEASES if rh.selected(r, "dledger-group")
                                     and rh.version_tuple(r) >= (5, 0, 0)])
def test_a_followers_own_mapping_file_is_read(release):
    bs = rh.rocketmq_store(release, "dledger-group")
    files = [root / "config" / "topicQueueMapping.json" for root in bs.nodes().values()]
    assert any(f.is_file() for f in files), "no node wrote config/topicQueueMapping.json"
    for f in files:
        if f.is_file():
            store = Store(f.parent.parent)
            assert store.config().loads["topic_queue_mappings"].source == "file"
            assert len(store.config().topic_queue_mappings()) == 0
            assert not [p for p in store.not_read() if "topicQueueMapping" in p]

