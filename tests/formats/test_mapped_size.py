"""The mapped file size a store's file names and sizes tell (rmqlab.formats.mapped), against a
model of what MappedFileQueue writes: files named by start offset, a step of the mapped size
apart, each created at that size; the oldest deleted by expiry, a copy cutting or emptying some.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.errors import AmbiguousSettingError
from rmqlab.formats.mapped import likely_mapped_file_size, mapped_file_size_of


@st.composite
def queue_folders(draw, size: int):
    """Folders of one mapped size as a broker leaves them, then a copy's damage: a folder
    starts where expiry left it, holds consecutive files (a gap where one was lost), and any
    file but the first may be cut or empty (never renamed)."""
    out = []
    for _ in range(draw(st.integers(1, 5))):
        first = draw(st.integers(0, 1000))
        n = draw(st.integers(1, 6))
        starts = [(first + i) * size for i in range(n)]
        if n > 2 and draw(st.booleans()):
            del starts[draw(st.integers(1, n - 2))]
        files = []
        for i, start in enumerate(starts):
            cut = draw(st.sampled_from([size, size, size, 0, size // 2])) if i else size
            files.append((start, cut))
        out.append(files)
    return out


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 50_000).map(lambda k: 20 * k), st.data())
def test_a_queue_of_two_files_tells_the_size_whatever_the_copy_did(size, data):
    folders = data.draw(queue_folders(size))
    got = mapped_file_size_of(folders, what="mappedFileSizeConsumeQueue", unit=20)
    if any(len(f) >= 2 for f in folders):
        assert got.size == size and got.reason.startswith("file names step by"), got
    else:      # one file a folder, never cut (only later files are): its size
        assert got.size == size and got.reason.startswith(f"every non-empty file is {size} bytes")
    assert likely_mapped_file_size(folders, unit=20) == size


def test_two_steps_that_do_not_divide_are_a_choice():
    folders = [[(0, 200), (200, 200)], [(0, 300), (300, 300)]]
    with pytest.raises(AmbiguousSettingError) as e:
        mapped_file_size_of(folders, what="mappedFileSizeConsumeQueue", unit=20)
    assert e.value.choices == (200, 300) and "step by 200, 300 bytes" in str(e.value)
    # a lost file's gap is a step of two sizes; the whole files say which
    assert mapped_file_size_of([[(0, 20), (40, 20)]], what="x", unit=20).size == 20
    assert likely_mapped_file_size(folders, unit=20) == 200      # the most common size, then the smallest


def test_single_files_of_two_sizes_are_a_choice_and_units_matter():
    with pytest.raises(AmbiguousSettingError) as e:
        mapped_file_size_of([[(0, 400)], [(0, 600)], [(0, 400)]], what="x", unit=20)
    assert e.value.choices == (400, 600) and "400 bytes (2 files), 600 bytes (1 file)" in str(e.value)
    # a size that is not whole 20-byte units never came from the broker's rounding
    assert mapped_file_size_of([[(0, 410)], [(0, 400)]], what="x", unit=20).size == 400
    assert mapped_file_size_of([[(0, 0)]], what="x").size is None
