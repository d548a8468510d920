"""``iter_messages(max_bytes=N)``: whole records adding up to at most N bytes, nothing read past them.

Independent truth: the record and entry sizes come from the tests' own framing (the bytes
``encode_message`` gives and tests/support/dledger_model.py's ledger layout, each file ended by
a blank), never from rmqlab's reader; which bytes may be read is checked by damage planted
after the bound, which a read that went past it would report.
"""
from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from dledger_model import frame, write_ledger

from rmqlab.formats import commitlog as cl


def _expected(sizes: list[int], offsets: list[int], budget: int) -> tuple[list[int], int | None]:
    ends = list(itertools.accumulate(sizes))
    n = sum(end <= budget for end in ends)
    return offsets[:n], None if n == len(offsets) else n


def test_a_ledger_is_read_up_to_the_bound_by_its_entries():
    recs = [cl.encode_message(topic="T", body=b"x" * (13 * i % 50)) for i in range(10)]
    framed = frame(recs, 600)
    data = write_ledger(Path(tempfile.mkdtemp()) / "dledger-n0", framed) / "data"
    assert len(list(data.iterdir())) >= 3
    sizes = [e[3] for e in framed.entries]
    for budget in range(0, sum(sizes) + 20, 7):
        s = cl.iter_messages(data, max_bytes=budget)
        got = [m.phy_offset for m in s]
        want, next_entry = _expected(sizes, framed.record_offsets, budget)
        assert got == want, budget
        if next_entry is None:
            # every entry read: the bound is past the data, or inside the zeros after it, which
            # are not read (the end of the data, or more after them: the bytes past would tell)
            end = framed.entries[-1][2] + framed.entries[-1][3]
            assert (s.report.unread_from, s.report.end_phy_offset) in ((None, end), (end, None)), budget
        else:
            # where the entry not read starts (the next file's start when the bound ends in a blank)
            assert s.report.unread_from == framed.entries[next_entry][2], budget
        assert s.report.damage == []


def test_the_bound_leaves_damage_after_it_unread(tmp_path):
    recs = [cl.encode_message(topic="T", body=b"m%d" % i) for i in range(5)]
    sizes = [len(r) for r in recs]
    data = bytearray(b"".join(recs))
    data[sum(sizes[:3]) + 5] ^= 0x40                   # the fourth record's MAGICCODE
    d = tmp_path / "commitlog"
    d.mkdir()
    (d / f"{0:020d}").write_bytes(bytes(data) + b"\x07" * 300)
    with pytest.raises(Exception, match="MAGICCODE"):
        list(cl.iter_messages(d))
    s = cl.iter_messages(d, max_bytes=sum(sizes[:3]) + 7)
    assert [m.position for m in s] == [0, sizes[0], sizes[0] + sizes[1]] and s.report.unread_from == sum(sizes[:3])
    with pytest.raises(ValueError):
        cl.iter_messages(d, max_bytes=-1)
