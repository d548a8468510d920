"""record_sizes / place_records (sizes and offsets without encoding) against encode_messages,
which writes the records, and against a plain loop placing them one at a time."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.formats import commitlog as cl
from rmqlab.lab.workload import Workload, generate, generate_chunks

hosts = st.sampled_from(["10.0.0.1:10911", "127.0.0.1:0", "[2001:db8::1]:10911", "[::1]:9876"])


@st.composite
def batches(draw):
    n = draw(st.integers(1, 40))
    return {
        "topic": draw(st.lists(st.text("abcXYZ_-", min_size=1, max_size=130), min_size=n, max_size=n)),
        "body": draw(st.lists(st.binary(max_size=300), min_size=n, max_size=n)),
        "properties": draw(st.lists(st.one_of(st.none(), st.text("ab\x01\x02", max_size=50)),
                                    min_size=n, max_size=n)),
        "born_host": draw(st.lists(hosts, min_size=n, max_size=n)),
        "store_host": draw(st.lists(hosts, min_size=n, max_size=n)),
    }


def placed_one_by_one(sizes, start, file_size):
    out, cur = [], start
    for s in sizes:
        if cur % file_size + s + cl.END_FILE_MIN_BLANK_LENGTH > file_size:
            cur += file_size - cur % file_size
        out.append(cur)
        cur += s
    return out, cur


@settings(max_examples=60, deadline=None)
@given(batches(), st.integers(0, 5000), st.integers(700, 3000))
def test_sizes_and_places_match_the_encoder(cols, start, file_size):
    enc = cl.encode_messages(cols, start, file_size)
    sizes = cl.record_sizes(cols, file_size)
    assert sizes.tolist() == enc.total_size.tolist()
    phy, spans, end = cl.place_records(sizes, start, file_size)
    assert phy.tolist() == enc.phy_offset.tolist()
    assert end == enc.end_offset
    assert (phy.tolist(), end) == placed_one_by_one(sizes.tolist(), start, file_size)
    assert [s[5] for s in spans] == [f.full for f in enc.files]


def test_workload_without_bodies_has_the_same_rows_and_sizes():
    w = Workload(messages=3000, seed=5, ipv6_fraction=0.3, transaction_fraction=0.1, drain=True)
    full = generate(w)
    lean = [t for t in generate_chunks(w, 700, bodies=False)]
    import pyarrow as pa

    lean = pa.concat_tables(lean)
    assert lean.drop_columns(["body"]).equals(full.drop_columns(["body"]))
    assert cl.record_sizes(lean).tolist() == cl.encode_messages(full).total_size.tolist()
    assert all(not any(b) for b in lean.column("body").to_pylist()[:50])
