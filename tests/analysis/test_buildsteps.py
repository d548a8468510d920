"""rmqlab.analysis.buildsteps: the steps of one buildIndex are what the file's bytes say, and listening to
the put changes nothing.

Truths: the bytes of the files (struct at the documented offsets: slot i at 40 + 4i, entry n at
40 + 4m + 20n), the same messages indexed without the observer, and the sample store's own
index (built by Store.dispatch)."""
from __future__ import annotations

import struct

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from rmqlab.analysis.buildsteps import NODES, BuildStep, steps_frame, trace_build_index  # noqa: E402
from rmqlab.store.indexservice import DispatchRequest, IndexService  # noqa: E402

T0 = 1_718_000_000_400


def _service(path, index_num=3, slots=4):
    return IndexService(path, hash_slot_num=slots, index_num=index_num, read_only=False, clock=lambda: T0)


def _messages():
    return [DispatchRequest("T", 100, T0, keys="a  b", uniq_key="U"),      # 3 keys: rolls over inside
            DispatchRequest("T", 300, T0 + 2500, keys="a"),
            DispatchRequest("T", 200, T0 + 3000, keys="c"),                 # behind endPhyOffset: skipped
            DispatchRequest("T", 400, T0 + 4000, keys="d", sys_flag=0xC)]   # rolled back: skipped


def test_observing_changes_no_byte(tmp_path):
    with _service(tmp_path / "plain") as plain, _service(tmp_path / "traced") as traced:
        for m in _messages():
            plain.build_index(m)
            trace_build_index(traced, m)
    names = sorted(p.name for p in (tmp_path / "plain").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "traced").iterdir()) and len(names) == 3
    for n in names:
        assert (tmp_path / "plain" / n).read_bytes() == (tmp_path / "traced" / n).read_bytes()


def test_every_written_entry_is_on_disk(tmp_path):
    m, n = 4, 3
    with _service(tmp_path, n, m) as svc:
        steps = [s for msg in _messages() for s in trace_build_index(svc, msg)]
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    current = None
    written = 0
    for s in steps:
        if s.node in ("file", "new-file"):
            current = s.values["file"]
        if s.node == "write-entry":
            v = s.values
            raw = files[current]
            assert v["offset"] == 40 + 4 * m + 20 * v["entry"]
            assert struct.unpack_from(">iqii", raw, v["offset"]) == (v["key_hash"], v["phy_offset"],
                                                                      v["time_diff"], v["prev_index"])
            written += 1
        if s.node == "write-slot":
            assert struct.unpack_from(">i", files[current], 40 + 4 * s.values["slot"])[0] >= s.values["slot_value"]
    assert written == 4                    # U, a, b, then a of the second message
    nodes = [s.node for s in steps]
    assert set(nodes) <= {n[0] for n in NODES}
    assert nodes.count("skip") == 2 and nodes.count("done") == 2
    refused = [s for s in steps if s.node == "full-check" and s.values["full"]]
    assert len(refused) == 1 and refused[0].values["key"] == "T#b"
    whys = [s.values["why"] for s in steps if s.node == "skip"]
    assert whys == ["already-indexed", "rollback"]


def test_slot_read_and_header_agree(tmp_path):
    """The slot value a put used is the prevIndex it wrote; hashSlotCount grows exactly when the
    slot was empty (broker >= 4.7.1); timeDiff is whole seconds after the file's begin."""
    with _service(tmp_path, index_num=16, slots=2) as svc:
        steps = [s for i, k in enumerate(["a", "b", "c", "a", "d"])
                 for s in trace_build_index(svc, DispatchRequest("T", 100 * (i + 1), T0 + 999 * i, keys=k))]
    slot_reads = [s for s in steps if s.node == "slot-read"]
    entries = [s for s in steps if s.node == "write-entry"]
    headers = [s for s in steps if s.node == "header"]
    assert len(slot_reads) == len(entries) == len(headers) == 5
    for read, entry, header in zip(slot_reads, entries, headers):
        assert read.values["slot_value"] == entry.values["prev_index"]
        grew = header.values["hash_slot_count"] - header.values["before"]["hash_slot_count"]
        assert grew == (1 if read.values["was_empty"] else 0)
        assert header.values["index_count"] == entry.values["entry"] + 1
    assert [e.values["time_diff"] for e in entries] == [(999 * i) // 1000 for i in range(5)]


def test_a_real_message_of_the_sample_store(tmp_path):
    """The sample's first keyed message traced into an empty folder writes the same entry as the
    sample's own first index file holds for it."""
    from rmqlab.lab.sample import SAMPLE_STORE_OPTIONS, sample_store

    store = sample_store()
    msgs = store.messages()
    first = msgs.iloc[0]
    msg = DispatchRequest(first["topic"], int(first["phy_offset"]), int(first["store_timestamp"]),
                          first["keys"], first["uniq_key"], int(first["sys_flag"]))
    opts = SAMPLE_STORE_OPTIONS
    with IndexService(tmp_path, opts["hash_slot_num"], opts["index_num"], read_only=False, tz=opts["tz"],
                      name_by_store_time=True) as svc:
        steps = trace_build_index(svc, msg)
    with store.index() as index:
        own = index.files[0]
        assert [s.values["file"] for s in steps if s.node == "new-file"] == [own.path.name]
        for s in steps:
            if s.node == "write-entry":
                assert tuple(own.entry(s.values["entry"])) == (s.values["key_hash"], s.values["phy_offset"],
                                                               s.values["time_diff"], s.values["prev_index"])
    assert steps_frame(steps)["node"].iloc[-1] == "done"


def test_unknown_node_and_figure(tmp_path):
    from rmqlab.viz.buildflow import BuildIndexStepper, build_flow_figure

    with pytest.raises(ValueError):
        BuildStep("nowhere", "")
    with _service(tmp_path) as svc:
        steps = trace_build_index(svc, _messages()[0])
    fig = build_flow_figure(steps, 7)
    gids = [p.get_gid() for p in fig.axes[0].patches if p.get_gid()]
    assert f"current:{steps[7].node}" in gids
    assert {g.split(":")[1] for g in gids if g.startswith("passed:")} == {s.node for s in steps[:7]} - {steps[7].node}
    with pytest.raises(IndexError):
        build_flow_figure(steps, len(steps))
    w = BuildIndexStepper(steps)
    w.next.click()
    w.next.click()
    assert w.shown == 2 == w.slider.value and bytes(w.image.value).startswith(b"\x89PNG")
    w.slider.value = len(steps) - 1
    assert w.next.disabled and not w.back.disabled
