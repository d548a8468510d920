"""Multi dispatch to light message queues as each broker line does it, against a literal model.

The model restates ``ConsumeQueue.multiDispatchLmqQueue`` with the check before it
(``DefaultMessageStore.checkMultiDispatchQueue`` in rocketmq-all-4.9.3 c7989f85744e and 4.9.4
06f2208a3490; ``MultiDispatchUtils.checkMultiDispatchQueue`` in 5.3.1 b122c8109d62), one line a
Java statement. 4.9.x looks at enableMultiDispatch and the two properties only; 5.x also leaves
retry, system and schedule topics alone and skips a name holding the path separator.
"""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.rules import dispatch as d

VERSIONS = [None, "4.9.3", "4.9.4", "4.9.8", "5.0.0", "5.3.1"]


def java_split_comma(text: str) -> list[str]:
    """String.split(","): trailing empty strings dropped."""
    parts = text.split(",")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def is_blank(text: str | None) -> bool:
    return text is None or text.strip() == ""


def model_multi_dispatch(topic, queue_id, props, enable_lmq, enable_multi_dispatch, version):
    line_49 = version is not None and version.startswith("4.9.")
    if not enable_multi_dispatch:
        return []
    if not line_49 and (topic.startswith(("%RETRY%", "rmq_sys_")) or topic == "SCHEDULE_TOPIC_XXXX"):
        return []
    names, offsets = props.get("INNER_MULTI_DISPATCH"), props.get("INNER_MULTI_QUEUE_OFFSET")
    if is_blank(names) or is_blank(offsets):
        return []
    queues, queue_offsets = java_split_comma(names), java_split_comma(offsets)
    if len(queues) != len(queue_offsets):
        return []
    units = []
    for name, offset in zip(queues, queue_offsets):
        if not line_49 and "/" in name:
            continue
        qid = 0 if enable_lmq and name.startswith("%LMQ%") else queue_id
        units.append((name, qid, int(offset)))
    return units


topics = st.sampled_from(["T", "%RETRY%g", "rmq_sys_trace", "SCHEDULE_TOPIC_XXXX", "%LMQ%t"])
names = st.lists(st.sampled_from(["%LMQ%a", "%LMQ%b", "P", "a/b", "%LMQ%c/d", ""]), min_size=1, max_size=4)


@st.composite
def messages(draw):
    qs = draw(names)
    n_offsets = draw(st.sampled_from([len(qs), len(qs), max(len(qs) - 1, 0), len(qs) + 1]))
    offsets = [str(draw(st.integers(0, 10**6))) for _ in range(n_offsets)]
    props = {"INNER_MULTI_DISPATCH": ",".join(qs), "INNER_MULTI_QUEUE_OFFSET": ",".join(offsets)}
    return draw(topics), draw(st.integers(0, 7)), props


@settings(max_examples=300, deadline=None)
@given(messages(), st.booleans(), st.booleans(), st.sampled_from(VERSIONS))
def test_lmq_dispatch_equals_the_model(msg, enable_lmq, enable_multi_dispatch, version):
    topic, qid, props = msg
    want = model_multi_dispatch(topic, qid, props, enable_lmq, enable_multi_dispatch, version)
    assert d.lmq_dispatch(topic, qid, props, enable_lmq=enable_lmq, enable_multi_dispatch=enable_multi_dispatch,
                          broker_version=version) == want


def _block(props: dict[str, str]) -> str:
    return "".join(f"{k}\x01{v}\x02" for k, v in props.items())


@settings(max_examples=100, deadline=None)
@given(st.lists(messages(), min_size=1, max_size=6), st.booleans(), st.sampled_from(VERSIONS))
def test_lmq_dispatch_many_equals_the_model_row_by_row(msgs, enable_lmq, version):
    rows, units, bad = d.lmq_dispatch_many([m[0] for m in msgs], [m[1] for m in msgs],
                                           pa.array([_block(m[2]) for m in msgs]), enable_lmq=enable_lmq,
                                           enable_multi_dispatch=True, broker_version=version)
    want_rows, want_units = [], []
    for r, (topic, qid, props) in enumerate(msgs):
        got = model_multi_dispatch(topic, qid, props, enable_lmq, True, version)
        want_rows += [r] * len(got)
        want_units += got
    assert rows.tolist() == want_rows and units == want_units and bad.tolist() == []


def test_the_default_is_the_5x_rule():
    props = {"INNER_MULTI_DISPATCH": "%LMQ%a,x/y", "INNER_MULTI_QUEUE_OFFSET": "1,2"}
    assert d.lmq_dispatch("T", 1, props, enable_lmq=True, enable_multi_dispatch=True) == [("%LMQ%a", 0, 1)]
    assert d.lmq_dispatch("T", 1, props, enable_lmq=True, enable_multi_dispatch=True,
                          broker_version="4.9.4") == [("%LMQ%a", 0, 1), ("x/y", 1, 2)]
    assert d.lmq_dispatch("%RETRY%g", 1, props, enable_lmq=True, enable_multi_dispatch=True) == []


def test_a_bad_version_is_not_taken_for_a_bad_offset():
    from rmqlab.rules.versions import BrokerVersionError

    with pytest.raises(BrokerVersionError):
        d.lmq_dispatch_many(["T"], [0], ["INNER_MULTI_DISPATCH\x01%LMQ%a\x02INNER_MULTI_QUEUE_OFFSET\x010\x02"],
                            enable_lmq=True, enable_multi_dispatch=True, broker_version="4.9")


# ------------------------------------------------------------------- a generated 4.9.4 store

NAMES = ["%LMQ%a", "P"]


def _table_49_with_plain_names():
    """A 4.9.4 workload whose multi-dispatched messages name an LMQ and a plain queue, with
    the offsets a 4.9.4 broker with enableLmq stores (every name numbered)."""
    from rmqlab.lab.workload import Workload, generate

    t = generate(Workload(messages=300, seed=5, topics=("T",), broker_version="4.9.4",
                          lmq_queues=("%LMQ%a",), multi_dispatch_every=3))
    table: dict = {}
    props = []
    for block, qid in zip(t["properties"].to_pylist(), t["queue_id"].to_pylist()):
        if d.property_value(block, d.PROPERTY_INNER_MULTI_DISPATCH) is not None:
            head = block.split("\x02INNER_MULTI_DISPATCH\x01")[0]
            offsets = d.assign_lmq_offsets(NAMES, qid, table, broker_version="4.9.4")
            block = f"{head}\x02INNER_MULTI_DISPATCH\x01{','.join(NAMES)}\x02INNER_MULTI_QUEUE_OFFSET\x01{offsets}"
        props.append(block)
    return t.set_column(t.schema.get_field_index("properties"), "properties", pa.array(props, pa.string())), table


def _write(root, table):
    from rmqlab.formats import commitlog as cl

    with cl.CommitLogWriter(root / "commitlog", 1 << 18) as w:
        w.append(table)


STORE_OPTS = dict(commitlog_file_size=1 << 18, hash_slot_num=16, index_num=2048, consume_queue_file_size=2000,
                  enable_lmq=True, enable_multi_dispatch=True)


def test_a_494_store_with_plain_and_lmq_names_dispatches_and_verifies_clean(tmp_path):
    from rmqlab.store.directory import Store
    from rmqlab.verify import verify_path

    table, next_offsets = _table_49_with_plain_names()
    _write(tmp_path, table)
    store = Store(tmp_path, broker_version="4.9.4", **STORE_OPTS)
    store.dispatch()
    queues = set(store.queues())
    assert ("%LMQ%a", 0) in queues
    assert {(n, q) for n, q in next_offsets if n == "P"} <= queues
    assert sum(v for (n, _), v in next_offsets.items() if n == "P") == 100
    rep = verify_path(tmp_path, broker_version="4.9.4")
    assert rep.ok, rep.summary()


def test_cli_dispatch_takes_the_broker_version(tmp_path):
    from rmqlab.cli import main
    from rmqlab.verify import verify_path

    table, _ = _table_49_with_plain_names()
    _write(tmp_path, table)
    assert main(["store", "dispatch", str(tmp_path), "--commitlog-file-size", str(1 << 18),
                 "--consume-queue-file-size", "2000", "--hash-slot-num", "16", "--index-num", "2048",
                 "--enable-lmq", "--enable-multi-dispatch", "--broker-version", "4.9.4", "--json"]) == 0
    assert verify_path(tmp_path, broker_version="4.9.4").ok
    assert main(["verify", str(tmp_path), "--broker-version", "4.9.4", "--json"]) == 0


def test_a_retry_topic_is_dispatched_by_49_only():
    table, _ = _table_49_with_plain_names()
    retry, qids = ["%RETRY%g"] * table.num_rows, table["queue_id"].to_pylist()
    units_49 = d.lmq_dispatch_many(retry, qids, table["properties"], enable_lmq=True, enable_multi_dispatch=True,
                                   broker_version="4.9.4")[1]
    units_5x = d.lmq_dispatch_many(retry, qids, table["properties"], enable_lmq=True, enable_multi_dispatch=True)[1]
    assert len(units_49) == 2 * 100 and units_5x == []
