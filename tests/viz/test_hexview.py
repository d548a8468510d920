"""rmqlab.viz.hexview: every field's bytes, value and meaning against the file itself.

Truths used: the file's bytes read with a plain ``open(path, 'rb')`` at the table's offsets,
decoded with ``struct.unpack('>q' / '>i')``; offsets computed by hand from the documented
layout (40 + 4*slot, 40 + 4*m + 20*entry + field offset); ``IndexFile.header`` /
``IndexFile.slots`` / ``IndexFile.entry``; and the puts that built the file.
"""
from __future__ import annotations

import datetime as dt
import io
import re
import struct

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st
from oracles import require_real_data  # noqa: E402

from rmqlab.errors import GeometryError, TruncatedFileError  # noqa: E402
from rmqlab.formats.indexfile import IndexFile, build_index_file  # noqa: E402
from rmqlab.viz.hexview import HEX_FIELD_COLUMNS, annotated_hex_figure, hex_fields  # noqa: E402

UTC = dt.UTC
T0 = 1_718_000_000_000
M, N = 16, 32
ENTRY_FIELDS = [("keyHash", 0, 4), ("phyOffset", 4, 8), ("timeDiff", 12, 4), ("prevIndex", 16, 4)]
HEADER_FIELDS = [("beginTimestamp", 0, 8, "begin_timestamp"), ("endTimestamp", 8, 8, "end_timestamp"),
                 ("beginPhyOffset", 16, 8, "begin_phy_offset"), ("endPhyOffset", 24, 8, "end_phy_offset"),
                 ("hashSlotCount", 32, 4, "hash_slot_count"), ("indexCount", 36, 4, "index_count")]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """16 slots, 32 entries, 10 keys (a repeated key makes a chain), times over 20 s."""
    path = tmp_path_factory.mktemp("hex") / "20240610061320000"
    keys = [f"T#k{i % 7}" for i in range(10)]
    phy = [1000 + 137 * i for i in range(10)]
    ts = [T0 + 5 + 2100 * i for i in range(10)]
    assert build_index_file(path, keys, phy, ts, hash_slot_num=M, index_num=N) == 10
    return path


def file_bytes(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def check_rows_against_bytes(df, data: bytes) -> None:
    for r in df.itertuples():
        raw = data[r.offset:r.offset + r.size]
        assert r.hex == raw.hex(" "), r.field
        assert r.value == struct.unpack(">q" if r.size == 8 else ">i", raw)[0], r.field


def test_every_field_is_the_files_bytes(small):
    df = hex_fields(small, slots=range(M), entries=range(N), hash_slot_num=M, index_num=N)
    assert list(df.columns) == HEX_FIELD_COLUMNS
    assert len(df) == 6 + M + 4 * N
    check_rows_against_bytes(df, file_bytes(small))
    # offsets from the documented layout, not from the module's own constants
    expect = [o for _, o, _, _ in HEADER_FIELDS] + [40 + 4 * s for s in range(M)]
    expect += [40 + 4 * M + 20 * n + o for n in range(N) for _, o, _ in ENTRY_FIELDS]
    assert df["offset"].tolist() == expect
    assert df["size"].sum() == 40 + 4 * M + 20 * N == len(file_bytes(small))
    names = [n for n, *_ in HEADER_FIELDS] + [f"slot[{s}]" for s in range(M)]
    names += [f"entry[{n}].{f}" for n in range(N) for f, _, _ in ENTRY_FIELDS]
    assert df["field"].tolist() == names
    assert df["region"].tolist() == ["header"] * 6 + ["slot"] * M + ["entry"] * 4 * N


def test_header_slots_and_entries_agree_with_the_reader(small):
    with IndexFile.open(small, M, N) as f:
        df = hex_fields(f, slots=range(M), entries=range(N), tz=UTC)
        h = f.header
        slots = f.slots.astype(int).tolist()
        entries = [f.entry(n) for n in range(N)]
    by_field = df.set_index("field")
    for name, _, _, attr in HEADER_FIELDS:
        assert by_field.loc[name, "value"] == getattr(h, attr)
    assert by_field.loc["beginTimestamp", "meaning"] == "2024-06-10T06:13:20.005+00:00"
    assert by_field.loc["indexCount", "meaning"].endswith("10 keys written")
    for s, v in enumerate(slots):
        meaning = by_field.loc[f"slot[{s}]", "meaning"]
        assert meaning == ("empty" if v == 0 else f"-> entry {v}")
    for n, e in enumerate(entries):
        rows = by_field.loc[[f"entry[{n}].{f}" for f, _, _ in ENTRY_FIELDS]]
        assert rows["value"].tolist() == list(e)
        if n == 0:
            assert list(e) == [0, 0, 0, 0]
            assert set(rows["meaning"]) == {"entry 0 is never written"}
        elif n > 10:
            assert rows["meaning"].str.startswith("not written yet").all()
        else:
            key_hash, phy, time_diff, prev = e
            assert rows["meaning"].iloc[0] == f"slot {key_hash % M} (hash % {M:,})"
            stored = dt.datetime.fromtimestamp((h.begin_timestamp + 1000 * time_diff) / 1000, UTC)
            assert rows["meaning"].iloc[2] == (f"+{time_diff} s -> "
                                               f"{stored.strftime('%H:%M:%S.%f')[:-3]}")
            assert rows["meaning"].iloc[3] == ("end of chain" if prev == 0
                                               else f"-> entry {prev} (older, same slot)")
    # a repeated key links to its previous put: k0 was put 1st and 8th
    assert by_field.loc["entry[8].prevIndex", "value"] == 1


def test_defaults(small):
    df = hex_fields(small, hash_slot_num=M, index_num=N)
    with IndexFile.open(small, M, N) as f:
        nonempty_after = [int(s) for s in np.flatnonzero(f.slots.astype(int)) if s >= 8][:4]
    assert df.attrs["slots"] == list(range(8)) + nonempty_after
    assert df.attrs["entries"] == [0, 1, 2, 3, 4]
    assert (df["region"] == "slot").sum() == 8 + len(nonempty_after)
    assert df["field"].str.startswith("entry[0].").sum() == 4


def test_selection_forms_and_order(small):
    a = hex_fields(small, slots=[5, 3, 5], entries=7, hash_slot_num=M, index_num=N)
    assert a.attrs["slots"] == [3, 5] and a.attrs["entries"] == [7]
    assert a["offset"].is_monotonic_increasing
    b = hex_fields(small, slots=range(3, 6, 2), entries=np.array([7]), hash_slot_num=M, index_num=N)
    assert a.equals(b)
    c = hex_fields(small, slots=[], entries=[], hash_slot_num=M, index_num=N)
    assert c["region"].tolist() == ["header"] * 6


@pytest.mark.parametrize("kwargs, name", [
    (dict(slots=[M]), "slots"), (dict(slots=-1), "slots"), (dict(entries=[0, N]), "entries"),
    (dict(entries=range(-2, 1)), "entries"),
])
def test_out_of_range_numbers(small, kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}: "):
        hex_fields(small, hash_slot_num=M, index_num=N, **kwargs)
    with pytest.raises(ValueError, match=rf"^{name}: "):
        annotated_hex_figure(small, hash_slot_num=M, index_num=N, **kwargs)


def test_bad_selection_type(small):
    with pytest.raises(TypeError, match="slots"):
        hex_fields(small, slots="12", hash_slot_num=M, index_num=N)
    with pytest.raises(TypeError, match="entries"):
        hex_fields(small, entries=[1, "x"], hash_slot_num=M, index_num=N)


def test_truncated_and_missized_files(small, tmp_path):
    data = file_bytes(small)
    cut = tmp_path / "cut"
    cut.write_bytes(data[:40 + 4 * M + 20 * 3 + 7])         # ends inside entry 3
    with pytest.raises(TruncatedFileError):
        hex_fields(cut, hash_slot_num=M, index_num=N)
    with pytest.raises(TruncatedFileError):
        annotated_hex_figure(cut, hash_slot_num=M, index_num=N)
    tiny = tmp_path / "tiny"
    tiny.write_bytes(data[:30])
    with pytest.raises(TruncatedFileError):
        hex_fields(tiny, hash_slot_num=M)
    with pytest.raises(GeometryError):
        hex_fields(small)                                   # not the default size, no geometry


def test_never_flushed_file(tmp_path):
    """An all-zero file is what a created, never-flushed index file looks like on disk: the
    table shows the raw indexCount 0, which the broker loads as 1."""
    path = tmp_path / "20240610061320000"
    path.write_bytes(bytes(40 + 4 * 4 + 20 * 8))
    df = hex_fields(path, hash_slot_num=4, index_num=8).set_index("field")
    assert df.loc["indexCount", "value"] == 0
    assert "never flushed" in df.loc["indexCount", "meaning"]
    assert df.loc["beginTimestamp", "meaning"].startswith("0: not set")
    assert (df.loc[[f"slot[{s}]" for s in range(4)], "meaning"] == "empty").all()
    assert df.loc["entry[1].keyHash", "meaning"].startswith("not written yet")


def test_open_file_left_open_and_geometry_checked(small):
    with IndexFile.open(small, M, N) as f:
        hex_fields(f)
        assert f.header.index_count == 11           # still usable: not closed by hex_fields
        with pytest.raises(ValueError, match="hash_slot_num"):
            hex_fields(f, hash_slot_num=M + 1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_keys=st.integers(0, 20), m=st.integers(1, 9), seed=st.integers(0, 2**32 - 1),
       data=st.data())
def test_property_random_files(tmp_path_factory, n_keys, m, seed, data):
    rng = np.random.default_rng(seed)
    index_num = 24
    path = tmp_path_factory.mktemp("p") / "f"
    build_index_file(path, [f"T#{k}" for k in rng.integers(0, 6, n_keys)],
                     rng.integers(0, 2**40, n_keys), T0 + np.sort(rng.integers(0, 90_000, n_keys)),
                     hash_slot_num=m, index_num=index_num)
    slots = data.draw(st.lists(st.integers(0, m - 1), max_size=m))
    entries = data.draw(st.lists(st.integers(0, index_num - 1), max_size=6))
    df = hex_fields(path, slots=slots, entries=entries, hash_slot_num=m, index_num=index_num)
    check_rows_against_bytes(df, file_bytes(path))
    assert df["offset"].is_monotonic_increasing
    assert len(df) == 6 + len(set(slots)) + 4 * len(set(entries))


# ------------------------------------------------------------------------------ figure


def figure_texts(fig) -> list[str]:
    return [t.get_text() for t in fig.texts] + [t.get_text() for ax in fig.axes for t in ax.texts]


def png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def test_figure_shades_and_annotates_every_field(small):
    fig = annotated_hex_figure(small, slots=[0, 1, 2, 9], entries=[0, 1, 8], hash_slot_num=M,
                               index_num=N)
    df = hex_fields(small, slots=[0, 1, 2, 9], entries=[0, 1, 8], hash_slot_num=M, index_num=N)
    shaded = {p.get_gid(): p for ax in fig.axes for p in ax.patches if p.get_gid()}
    assert set(shaded) == {f"field:{name}" for name in df["field"]}
    # the rectangles of one row's fields lie side by side, 3 characters a byte
    texts = figure_texts(fig)
    joined = "\n".join(texts)
    for r in df.itertuples():
        assert r.hex in texts
        assert f"{r.field} = {r.value}  {r.meaning}"[:73] in joined
        width = shaded[f"field:{r.field}"].get_width()
        assert width == pytest.approx(3 * r.size - 1 + 0.6)
    # gaps, with the right byte counts: slots 3..8, slots 10..15, entries 2..7, entries 9..31
    assert "… 24 bytes (slots 3..8) not shown" in texts
    assert "… 24 bytes (slots 10..15) not shown" in texts
    assert "… 120 bytes (entries 2..7) not shown" in texts
    assert f"… {20 * 23:,} bytes (entries 9..31) not shown, to the end of the file" in texts
    # row offsets: decimal and hex
    assert any(re.fullmatch(r"\s*40  0x00000028", t) for t in texts)
    png(fig)


def test_gap_across_regions(small):
    fig = annotated_hex_figure(small, slots=[1], entries=[3], hash_slot_num=M, index_num=N)
    texts = figure_texts(fig)
    assert "… 4 bytes (slot 0) not shown" in texts
    assert f"… {14 * 4 + 3 * 20} bytes (slots 2..15, entries 0..2) not shown" in texts


def test_figure_default_and_deterministic(small):
    a = png(annotated_hex_figure(small, hash_slot_num=M, index_num=N))
    b = png(annotated_hex_figure(small, hash_slot_num=M, index_num=N))
    assert a == b


def test_figure_on_sample_store_file():
    from rmqlab.lab.sample import sample_store

    svc = sample_store().index()
    try:
        f = svc.files[0]
        fig = annotated_hex_figure(f, entries=[0, 8191])
        df = hex_fields(f, entries=[0, 8191])
        check_rows_against_bytes(df, file_bytes(f.path))
        assert df.set_index("field").loc["indexCount", "value"] == 8192      # a full file
        assert "… 163,800 bytes (entries 1..8190) not shown" in figure_texts(fig)
        png(fig)
    finally:
        svc.close()


# ------------------------------------------------------------ BatchConsumeQueue files


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5000), st.integers(-2**31, 2**31 - 1), st.integers(1, 9)),
                min_size=1, max_size=7))
def test_batch_hex_fields_match_struct_unpacking(tmp_path_factory, units):
    """Every field row of batch_hex_fields equals the big-endian bytes at its offset, unpacked
    here with struct from BatchConsumeQueue.java's 46-byte unit (q i q q q h i i)."""
    from rmqlab.formats.batchconsumequeue import BatchConsumeQueueWriter
    from rmqlab.viz.hexview import batch_hex_fields

    d = tmp_path_factory.mktemp("bcq")
    phys, bases, pos, base = [], [], 0, 0
    for size, _, k in units:
        phys.append(pos)
        bases.append(base)
        pos += size
        base += k
    with BatchConsumeQueueWriter.create(d, mapped_file_size=46 * 8) as w:
        w.put_many(phys, [u[0] for u in units], [u[1] for u in units], [1718000000000 + i for i in range(len(units))],
                   bases, [u[2] for u in units])
    path = d / ("0" * 20)
    raw = path.read_bytes()
    df = batch_hex_fields(path, units=range(len(units)))
    assert list(df.columns) == list(HEX_FIELD_COLUMNS)
    names = ["commitlogOffset", "size", "tagsCode", "storeTime", "msgBaseOffset", "batchSize", "compactedOffset",
             "reserved"]
    for n in range(len(units)):
        want = struct.unpack_from(">qiqqqhii", raw, 46 * n)
        got = df[df["field"].str.startswith(f"unit[{n}].")]
        assert got["value"].tolist() == list(want)
        assert [f.split(".", 1)[1] for f in got["field"]] == names
        for r in got.itertuples():
            assert bytes.fromhex(r.hex.replace(" ", "")) == raw[r.offset:r.offset + r.size]
    end = df[df["region"] == "end"]
    assert (len(end) == 1) == (len(units) < 8)
    if len(end):
        assert int(end["offset"].iloc[0]) == 46 * len(units) and int(end["value"].iloc[0]) == 0
    with pytest.raises(ValueError):
        batch_hex_fields(path, units=[len(units)])


# ------------------------------------------------------------ queue files drawn

REAL_EXT_FILE = "rocketmq/store-ericpangopher-4.2.0/consumequeue_ext/abc/0/00000000000000000000"
TAG1_CODE = 2567159          # "TAG1".hashCode(), the tag every message of that store carries


def check_figure_draws_table(fig, df, note_chars=None) -> None:
    """Every row of the table is shaded once (gid) and drawn: its hex and its "name = value
    meaning" line, in full."""
    from rmqlab.viz.hexview import _MAX_ROW_BYTES

    shaded = {p.get_gid(): p for ax in fig.axes for p in ax.patches if p.get_gid()}
    assert set(shaded) == {f"field:{name}" for name in df["field"]}
    texts = figure_texts(fig)
    for r in df.itertuples():
        if r.size <= _MAX_ROW_BYTES:
            assert r.hex in texts, r.field
        note = f"{r.field} = {r.value}  {r.meaning}"
        assert (note if note_chars is None else note[:note_chars - 1]) in "\n".join(texts), r.field


@pytest.fixture(scope="module")
def ext_file(tmp_path_factory):
    from rmqlab.formats.consumequeue_ext import ConsumeQueueExtWriter

    d = tmp_path_factory.mktemp("ext")
    with ConsumeQueueExtWriter.create(d, mapped_file_size=200) as w:
        w.put_many([TAG1_CODE, -7, 12], [T0, T0 + 1, T0 + 2_000])
    return d / ("0" * 20)


@pytest.fixture(scope="module")
def batch_file(tmp_path_factory):
    from rmqlab.formats.batchconsumequeue import BatchConsumeQueueWriter

    d = tmp_path_factory.mktemp("bcq")
    with BatchConsumeQueueWriter.create(d, mapped_file_size=46 * 8) as w:
        w.put_many([0, 300, 500], [300, 200, 90], [TAG1_CODE] * 3, [T0, T0 + 1, T0 + 2], [0, 3, 4], [3, 1, 2])
    return d / ("0" * 20)


def test_ext_figure_draws_the_table(ext_file):
    from rmqlab.viz.hexview import ext_hex_fields, fields_hex_figure

    df = ext_hex_fields(ext_file)
    fig = fields_hex_figure(df)
    check_figure_draws_table(fig, df)
    texts = figure_texts(fig)
    assert f"unit[0].tagsCode = {TAG1_CODE}" in "\n".join(texts)
    assert f"unit[1].msgStoreTime = {T0 + 1}  message stored 2024-06-10T06:13:20.001+00:00" in texts
    assert "unit[2].size = 20  20 bytes; address -9223372036854775768 (byte 40 of the folder)" in texts
    assert df["region"].iloc[-1] == "end" and "end = 0  0: unused space, the end of the written units" in texts
    assert shaded_colour(fig, "field:unit[0].tagsCode") != shaded_colour(fig, "field:unit[0].msgStoreTime")
    assert "units (CqExtUnit, 20 bytes: size i16, tagsCode i64, msgStoreTime i64, bitMapSize i16; " \
           "then bitMapSize bytes of filter bit map)" in texts
    assert "… 138 bytes (unused) not shown, to the end of the file" in texts
    assert png(fig)[:8] == b"\x89PNG\r\n\x1a\n"


def shaded_colour(fig, gid):
    return next(p.get_facecolor() for ax in fig.axes for p in ax.patches if p.get_gid() == gid)


def test_ext_figure_gaps_and_title(ext_file):
    from rmqlab.viz.hexview import ext_hex_fields, fields_hex_figure

    fig = fields_hex_figure(ext_hex_fields(ext_file, units=[2]), title="my ext file")
    texts = figure_texts(fig)
    assert "… 40 bytes (units 0..1) not shown" in texts
    assert texts[0].startswith("my ext file\n")
    assert png(fields_hex_figure(ext_hex_fields(ext_file))) == png(fields_hex_figure(ext_hex_fields(ext_file)))


def test_batch_figure_draws_the_table(batch_file):
    from rmqlab.viz.hexview import batch_hex_fields, fields_hex_figure

    df = batch_hex_fields(batch_file, units=[0, 2])
    fig = fields_hex_figure(df)
    check_figure_draws_table(fig, df)
    joined = "\n".join(figure_texts(fig))
    assert f"unit[2].tagsCode = {TAG1_CODE}" in joined
    assert "unit[2].msgBaseOffset = 4  queue offset of the batch's first message; this unit covers 4..5" in joined
    assert "unit[2].batchSize = 2" in joined
    assert f"unit[0].storeTime = {T0}  message stored 2024-06-10T06:13:20.000+00:00" in joined
    assert "… 46 bytes (unit 1) not shown" in joined
    assert "end = 0  the first slot recover() does not take as a unit" in joined
    assert "BatchConsumeQueue file, 368 bytes; data ends at byte 138" in joined
    assert png(fig)[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_field_wider_than_a_row_is_cut_in_the_bytes_column():
    import pandas as pd

    from rmqlab.viz.hexview import fields_hex_figure

    raw = bytes(range(30))
    df = pd.DataFrame([(0, 30, "ext-unit", "unit[0].filterBitMap", raw.hex(" "), 0, "filter bit map")],
                      columns=HEX_FIELD_COLUMNS)
    df.attrs.update({"file": "f", "file_size": 30, "units": [0], "end": 30})
    fig = fields_hex_figure(df)
    texts = figure_texts(fig)
    assert any(t.startswith(raw[:19].hex(" ")) and t.endswith("…") for t in texts)
    assert shaded_colour(fig, "field:unit[0].filterBitMap") is not None
    png(fig)


def test_index_figure_is_the_table_figure(small):
    from rmqlab.viz.hexview import fields_hex_figure

    df = hex_fields(small, hash_slot_num=M, index_num=N)
    assert png(fields_hex_figure(df)) == png(annotated_hex_figure(small, hash_slot_num=M, index_num=N))


def test_real_ext_file_draws_tag1(tmp_path):
    from rmqlab.viz.hexview import ext_hex_fields, fields_hex_figure

    path = require_real_data(REAL_EXT_FILE)
    df = ext_hex_fields(path, units=range(3))
    fig = fields_hex_figure(df)
    check_figure_draws_table(fig, df)
    units = df[df["field"].str.endswith(".tagsCode")]
    assert units["value"].tolist() == [TAG1_CODE] * 3
    joined = "\n".join(figure_texts(fig))
    for n in range(3):
        assert f"unit[{n}].tagsCode = {TAG1_CODE}" in joined
    (tmp_path / "ext.png").write_bytes(png(fig))


# ------------------------------------------------------------------------------ CommitLog records, Kafka indexes

REAL_COMMITLOG = "rocketmq/store-4e25b979/commitlog/00000000000000000000"
REAL_KAFKA_INDEX = "kafka/flink-on-prem/connect-offsets-14/00000000000000000000"


def test_record_hex_fields_of_a_real_broker_record():
    """Every row of a record written by a real broker: its bytes at its offset, the fields back to
    back from the record's position to TOTALSIZE, numbers unpacked with struct, the text fields
    the raw bytes' text."""
    from rmqlab.viz.hexview import fields_hex_figure, record_hex_fields

    path = require_real_data(REAL_COMMITLOG)
    raw = path.read_bytes()
    position = struct.unpack_from(">i", raw, 0)[0] * 2          # the third record: 172 bytes each
    df = record_hex_fields(path, position)
    assert list(df.columns) == HEX_FIELD_COLUMNS and set(df["region"]) == {"record"}
    assert df["offset"].iloc[0] == position
    assert (df["offset"].iloc[1:].to_numpy() == (df["offset"] + df["size"]).iloc[:-1].to_numpy()).all()
    total = struct.unpack_from(">i", raw, position)[0]
    assert df["size"].sum() == total == df.attrs["total_size"]
    for r in df.itertuples():
        data = raw[r.offset:r.offset + r.size]
        assert r.hex == " ".join(f"{b:02x}" for b in data)
        if r.field in ("BODY", "TOPIC", "PROPERTIES"):
            assert r.value == r.size and r.meaning.startswith(data.decode()[:10].replace("\x01", "\\x01"))
        elif r.field not in ("BORNHOST", "STOREHOST"):
            assert r.value == int.from_bytes(data, "big", signed=True), r.field
    f = df.set_index("field")
    assert f.loc["PHYSICALOFFSET", "value"] == position == df.attrs["phy_offset"]
    assert f.loc["TOPIC", "meaning"] == "abc"
    assert f.loc["MAGICCODE", "value"] == struct.unpack(">i", bytes.fromhex("daa320a7"))[0]
    assert f.loc["STOREHOST", "size"] == 4 and "." in f.loc["STOREHOST", "meaning"]
    fig = fields_hex_figure(df)
    assert {p.get_gid() for p in fig.axes[0].patches if p.get_gid()} == {f"field:{n}" for n in df["field"]}


def test_record_hex_fields_ipv6_hosts_are_16_bytes(tmp_path):
    from rmqlab.formats.commitlog import encode_message
    from rmqlab.viz.hexview import record_hex_fields

    rec = encode_message(topic="T", body=b"x", sys_flag=0x30, born_host="[::1]:7", store_host="[fe80::1]:10911")
    p = tmp_path / ("0" * 20)
    p.write_bytes(bytes(100) + rec)
    f = record_hex_fields(p, 100).set_index("field")
    assert f.loc["BORNHOST", "size"] == f.loc["STOREHOST", "size"] == 16
    assert f.loc["STOREHOST port", "value"] == 10911 and f.loc["BORNHOST port", "value"] == 7
    assert f["size"].sum() == len(rec)


@pytest.mark.parametrize("suffix, size", [(".index", 8), (".timeindex", 12)])
def test_kafka_index_hex_fields_of_real_files(suffix, size):
    from rmqlab.viz.hexview import kafka_index_hex_fields

    path = require_real_data(REAL_KAFKA_INDEX + suffix)
    raw = path.read_bytes()
    df = kafka_index_hex_fields(path, entries=None)
    assert df.attrs["entries"] == len(raw) // size and df.attrs["entry_size"] == size
    shown = df.attrs["shown"]
    assert shown == list(range(min(16, len(raw) // size)))
    names = ("relativeOffset", "position") if size == 8 else ("timestamp", "relativeOffset")
    codes = ">ii" if size == 8 else ">qi"
    for n in shown:
        values = struct.unpack_from(codes, raw, n * size)
        rows = df[df["field"].str.startswith(f"entry[{n}].")]
        assert rows["field"].tolist() == [f"entry[{n}].{x}" for x in names]
        assert rows["value"].tolist() == list(values)
        assert rows["offset"].iloc[0] == n * size
    rel = df[df["field"].str.endswith("relativeOffset")]
    assert all(m.endswith(f"= {v:,}") for v, m in zip(rel["value"], rel["meaning"]))    # base offset 0


def test_kafka_index_hex_fields_relative_offsets_and_zero_tail(tmp_path):
    """A segment based at 1,000: the stored numbers are offset - 1000; an untrimmed file shows its
    zero tail as such, not as entries."""
    from rmqlab.kafka.index import OffsetIndexWriter, segment_file_name
    from rmqlab.viz.hexview import kafka_index_hex_fields

    path = tmp_path / segment_file_name(1000, ".index")
    w = OffsetIndexWriter(path, max_index_size=64)
    w.append(1005, 4100)
    w.append(1012, 8300)
    w.close(trim=False)
    raw = path.read_bytes()
    assert len(raw) == 64
    df = kafka_index_hex_fields(path, zeros=3)
    assert df[df["region"] == "offset-entry"]["value"].tolist() == [5, 4100, 12, 8300]
    assert df.iloc[0]["meaning"] == "offset 1,000 + 5 = 1,005"
    tail = df[df["region"] == "zero-tail"]
    assert len(tail) == 3 and (tail["value"] == 0).all() and tail["offset"].tolist() == [16, 24, 32]
