"""The broker's answer to a pull by queue and offset (rmqlab.store.pull.get_message), against
what a consumer must see whatever the implementation: paging from the min offset with each
answer's next offset visits every unit of the queue once, in order; a tag subscription's pages
hold exactly the units whose tags code the subscription names (brute force over the queue's
units and the CommitLog's TAGS); a page never crosses a ConsumeQueue file (getIndexBuffer's
buffer ends there, every release); the offsets past the ends and the CommitLog bytes that are
gone answer the statuses of DefaultMessageStore.getMessage. The exact answers of every release
are judged by the real brokers in tests/brokers/test_rocketmq_brokers.py."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import require_real_data

from rmqlab.formats import consumequeue as cq
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload
from rmqlab.store.directory import Store
from rmqlab.store.pull import PullLimits, get_message, response_code

OPTS = dict(hash_slot_num=64, index_num=512, commitlog_file_size=64 * 1024)
CQ_FILE = 20 * 37    # 37 units a ConsumeQueue file: pages end at file ends
VERSIONS = ["4.2.0", "4.9.7", "5.0.0", "5.2.0", "5.3.3"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("pull") / "store"
    generate_store(root, Workload(messages=900, seed=11, tags=("TagA", "TagB", "Aa", "BB"), queues_per_topic=2),
                   consume_queue_file_size=CQ_FILE, **OPTS)
    return Store(root, consume_queue_file_size=CQ_FILE, **OPTS)


def java_hash(text: str) -> int:
    """Java's String.hashCode of an ASCII string (s[0]*31^(n-1) + ... + s[n-1], as a signed int)."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _units(store, topic, queue_id):
    with cq.ConsumeQueue.open(cq.queue_dir(store.root, topic, queue_id), CQ_FILE) as q:
        return q.min_offset, q.max_offset, q.to_frame()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("n", [1, 5, 32])
def test_paging_with_the_next_offset_visits_every_unit_once(store, version, n):
    lo, hi, units = _units(store, "TopicTest", 1)
    msgs = store.messages().set_index("phy_offset")
    offset, seen = lo, []
    while offset < hi:
        got = get_message(store, "TopicTest", 1, offset, n, broker_version=version)
        assert got.status == "FOUND" and got.response_code == 0 and (got.min_offset, got.max_offset) == (lo, hi)
        page = got.messages
        assert page["queue_offset"].tolist() == list(range(offset, got.next_begin_offset))
        assert 1 <= len(page) <= n
        # never past the end of the offset's ConsumeQueue file
        assert (offset // 37) == ((got.next_begin_offset - 1) // 37)
        assert len(page) == n or got.next_begin_offset in (hi, (offset // 37 + 1) * 37)
        # the bytes sent are the messages the units name
        stored = msgs.loc[page["commitlog_offset"]]
        assert (stored["queue_offset"].to_numpy() == page["queue_offset"].to_numpy()).all()
        assert (page["stored_queue_offset"] == page["queue_offset"]).all() and (page["topic"] == "TopicTest").all()
        seen += page["commitlog_offset"].tolist()
        offset = got.next_begin_offset
    assert seen == units["commitlog_offset"].tolist()
    end = get_message(store, "TopicTest", 1, hi, n, broker_version=version)
    assert (end.status, end.response_code, end.next_begin_offset, len(end.messages)) == (
        "OFFSET_OVERFLOW_ONE", 19, hi, 0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tags=st.lists(st.sampled_from(["TagA", "TagB", "Aa", "BB", "never"]), min_size=1, max_size=3),
       n=st.integers(1, 40), version=st.sampled_from(VERSIONS), queue_id=st.integers(0, 1))
def test_a_tag_subscription_pages_through_exactly_the_units_its_codes_name(store, tags, n, version, queue_id):
    lo, hi, units = _units(store, "TopicTest", queue_id)
    codes = {java_hash(t) for t in tags}
    want = units.loc[units["tags_code"].astype(np.int32).isin(codes), "commitlog_offset"].tolist()
    tags_of = store.messages().set_index("phy_offset")["tags"]
    offset, got_all, pulls = lo, [], 0
    while offset < hi:
        got = get_message(store, "TopicTest", queue_id, offset, n, " || ".join(tags), broker_version=version)
        assert got.next_begin_offset > offset
        if got.status == "FOUND":
            assert 1 <= len(got.messages) <= n
        else:   # nothing matched in the units scanned: the consumer is moved past them
            assert got.status == "NO_MATCHED_MESSAGE" and got.response_code == 20 and got.messages.empty
        got_all += got.messages["commitlog_offset"].tolist()
        offset, pulls = got.next_begin_offset, pulls + 1
        assert pulls < 1000
    assert got_all == want
    # the broker passes "Aa" for "BB" (one hash code): the client's check is by the string
    assert set(tags_of.loc[got_all]) <= set(tags) | ({"Aa", "BB"} if {"Aa", "BB"} & set(tags) else set())


@pytest.mark.parametrize(("version", "next_offset"), [("4.9.3", 0), ("4.9.4", None), ("5.3.3", None)])
def test_offsets_outside_the_queue(store, version, next_offset):
    lo, hi, _ = _units(store, "TopicTest", 0)
    badly = get_message(store, "TopicTest", 0, hi + 5, broker_version=version)
    # up to 4.9.3 a queue whose min is 0 sends the consumer back to 0; later releases to the max
    assert (badly.status, badly.response_code, badly.next_begin_offset) == (
        "OFFSET_OVERFLOW_BADLY", 21, hi if next_offset is None else next_offset)
    small = get_message(store, "TopicTest", 0, -3, broker_version=version)
    assert (small.status, small.response_code, small.next_begin_offset) == ("OFFSET_TOO_SMALL", 21, lo)
    for offset, code in ((0, 19), (4, 21)):
        none = get_message(store, "NoSuchQueue", 0, offset, broker_version=version, check_topic=False)
        assert (none.status, none.response_code, none.next_begin_offset, none.queue) == (
            "NO_MESSAGE_IN_QUEUE", code, 0, "none")
    assert response_code("NO_MESSAGE_IN_QUEUE", 4) == 21


def test_a_topic_the_config_lacks_is_refused_before_the_store_is_asked(store, tmp_path):
    copy = tmp_path / "store"
    shutil.copytree(store.root, copy)
    (copy / "config").mkdir(exist_ok=True)
    (copy / "config" / "topics.json").write_text(
        '{"topicConfigTable":{"TopicTest":{"topicName":"TopicTest","readQueueNums":1,"writeQueueNums":2,"perm":6},'
        '"WriteOnly":{"topicName":"WriteOnly","readQueueNums":4,"writeQueueNums":4,"perm":2}},'
        '"dataVersion":{"timestamp":1,"counter":1}}')
    s = Store(copy, consume_queue_file_size=CQ_FILE, **OPTS)
    assert get_message(s, "TopicTest", 0, 0).status == "FOUND"
    for topic, qid, status, code in (("Other", 0, "TOPIC_NOT_EXIST", 17), ("WriteOnly", 0, "NO_PERMISSION", 16),
                                     ("TopicTest", 1, "QUEUE_ID_ILLEGAL", 1)):
        got = get_message(s, topic, qid, 0)
        assert (got.status, got.response_code, got.next_begin_offset, len(got.messages)) == (status, code, None, 0)


@pytest.mark.parametrize("version", VERSIONS)
def test_units_whose_commitlog_file_is_gone_answer_message_was_removing(store, tmp_path, version):
    copy = tmp_path / "store"
    shutil.copytree(store.root, copy)
    files = sorted((copy / "commitlog").iterdir())
    assert len(files) >= 2
    first_end = int(files[1].name)
    files[0].unlink()
    s = Store(copy, consume_queue_file_size=CQ_FILE, **OPTS)
    lo, hi, units = _units(s, "TopicTest", 0)
    gone = units["commitlog_offset"] < first_end
    assert gone.any() and (~gone).any()
    got = get_message(s, "TopicTest", 0, lo, 32, broker_version=version)
    kept = units.loc[~gone & (units["queue_offset"] < got.next_begin_offset), "commitlog_offset"].tolist()
    if got.status == "MESSAGE_WAS_REMOVING":   # every unit it scanned pointed into the gone file
        assert got.messages.empty and gone.iloc[:got.next_begin_offset - lo].all()
    else:   # the units after the gone file's are sent; none of the gone ones
        assert got.status == "FOUND" and got.messages["commitlog_offset"].tolist() == kept


@pytest.mark.parametrize("version", ["4.9.7", "5.3.3"])
def test_messages_on_disk_are_sent_eight_at_a_time(store, version):
    lo, hi, _ = _units(store, "TopicTest", 1)
    in_memory = get_message(store, "TopicTest", 1, lo, 32, broker_version=version)
    # a machine with 1 byte of RAM: every message is "on disk" (checkInDiskByCommitOffset)
    on_disk = get_message(store, "TopicTest", 1, lo, 32, broker_version=version, limits=PullLimits(physical_memory=1))
    assert len(in_memory.messages) == min(32, 37 - lo % 37, hi - lo) > 8
    assert on_disk.messages["queue_offset"].tolist() == in_memory.messages["queue_offset"].tolist()[:8]


def test_a_real_420_store_pages_end_at_its_ten_unit_queue_files():
    root = require_real_data("rocketmq/store-ericpangopher-4.2.0")
    store = Store(root, commitlog_file_size=8192, consume_queue_file_size=200)
    with cq.ConsumeQueue.open(cq.queue_dir(root, "abc", 0), 200) as q:
        lo, hi = q.min_offset, q.max_offset
    assert q.units_per_file == 10 and hi - lo > 20
    got = get_message(store, "abc", 0, lo + 3, 32, "TAG1", broker_version="4.2.0")
    assert got.status == "FOUND" and got.next_begin_offset == (lo + 3) // 10 * 10 + 10
    assert (got.messages["tags"] == "TAG1").all() and len(got.messages) == got.next_begin_offset - lo - 3
