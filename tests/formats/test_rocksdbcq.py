"""The RocksDB ConsumeQueue reader (rmqlab.formats.rocksdbcq, 5.2.0+ storeType=defaultRocksDB) on
databases written here with rocksdict in the layout of RocksDBConsumeQueueTable: any mix of good
and malformed keys and values reads as the good units or fails with a typed error naming the
database, never another exception; the folder read is left byte for byte as it was; a damaged
database is a FormatError. The layout itself is judged by the real broker's database in
tests/brokers/test_rocketmq_brokers.py (min/max offsets, time searches, dispatch, damage)."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab.errors import FormatError, RmqlabError
from rmqlab.formats import rocksdbcq as rcq

rocksdict = pytest.importorskip("rocksdict", reason="the rmqlab[rocksdb] extra (rocksdict) is not installed")

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _write(folder: Path, units: dict[bytes, bytes], offsets: dict[bytes, bytes]) -> None:
    opts = rocksdict.Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    db = rocksdict.Rdict(str(folder), options=opts,
                         column_families={rcq.OFFSET_COLUMN_FAMILY: rocksdict.Options(raw_mode=True)})
    for k, v in units.items():
        db[k] = v
    off = db.get_column_family(rcq.OFFSET_COLUMN_FAMILY)
    for k, v in offsets.items():
        off[k] = v
    db.close()
    (folder / "rocksdict-config.json").unlink(missing_ok=True)


def _digest(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


queues = st.tuples(st.sampled_from(["T", "TopicA", "%RETRY%G", "Ü"]), st.integers(0, 3))


@SETTINGS
@given(units=st.dictionaries(st.tuples(queues, st.integers(0, 40)),
                             st.tuples(st.integers(0, 1 << 40), st.integers(1, 5000), st.integers(-5, 1 << 33),
                                       st.integers(0, 1 << 41)), max_size=40),
       junk=st.lists(st.binary(max_size=30), max_size=2))
def test_units_read_back_or_fail_typed_and_the_folder_stays(tmp_path_factory, units, junk):
    folder = tmp_path_factory.mktemp("rdb") / "consumequeue"
    raw = {rcq.unit_key(t, q, o): rcq.UNIT.struct.pack(*v) for ((t, q), o), v in units.items()}
    maxes: dict[tuple[str, int], int] = {}
    for (tq, o) in units:
        maxes[tq] = max(maxes.get(tq, -1), o)
    offsets = {rcq.offset_key(t, q, rcq.MAX): struct.pack(">qq", units[((t, q), o)][0], o)
               for (t, q), o in maxes.items()}
    for j in junk:
        raw[j or b"\x00"] = b"x"
    _write(folder, raw, offsets)
    before = _digest(folder)
    try:
        db = rcq.RocksDBConsumeQueues.open(folder)
    except RmqlabError as e:
        assert junk and e.path == str(folder) and e.field in ("unit.key", "unit.value"), e
    else:
        assert not junk or all(k in raw and len(raw[k]) == rcq.UNIT.size for k in junk)
        got = {((t, q), o): (p, z, c, s) for t, q, o, p, z, c, s in db.units.itertuples(index=False)}
        assert got == {k: v for k, v in units.items()}
        q = db.queues()
        assert {(t, i): m for t, i, m in q[["topic", "queue_id", "max_offset"]].itertuples(index=False)} == {
            k: v + 1 for k, v in maxes.items()}
    assert _digest(folder) == before


def test_a_damaged_database_is_a_format_error(tmp_path):
    folder = tmp_path / "consumequeue"
    _write(folder, {rcq.unit_key("T", 0, 0): bytes(28)}, {})
    manifest = next(folder.glob("MANIFEST-*"))
    manifest.write_bytes(manifest.read_bytes()[:10])
    with pytest.raises(FormatError) as e:
        rcq.RocksDBConsumeQueues.open(folder)
    assert (e.value.path, e.value.field) == (str(folder), "rocksdb")


def test_without_rocksdict_the_error_says_what_to_install(tmp_path, monkeypatch):
    import builtins

    folder = tmp_path / "consumequeue"
    _write(folder, {}, {})
    real = builtins.__import__

    def no_rocksdict(name, *a, **k):
        if name == "rocksdict":
            raise ModuleNotFoundError("No module named 'rocksdict'", name="rocksdict")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_rocksdict)
    with pytest.raises(ImportError, match=r"rmqlab\[rocksdb\]"):
        rcq.RocksDBConsumeQueues.open(folder)
