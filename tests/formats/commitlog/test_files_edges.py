"""The CommitLog file helpers on the cases their other tests leave out, each against a
hand-computed expectation: a zero file with a late data byte, a file name found in two of a
multi-path store's folders, a file given through a symbolic link or a linked folder, and the
views' removal at exit."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from rmqlab.errors import FormatError
from rmqlab.formats.commitlog import files


def _name(offset: int) -> str:
    return f"{offset:020d}"


def test_holds_data_sees_a_byte_past_the_first_record_head(tmp_path: Path) -> None:
    # 24 zero bytes then one 1: past the 8-byte head and past the next 8 bytes too
    p = tmp_path / _name(0)
    p.write_bytes(bytes(24) + b"\x01" + bytes(7))
    assert files.holds_data(p) is True
    p.write_bytes(bytes(32))
    assert files.holds_data(p) is False


def test_a_file_in_two_folders_is_named_by_the_second(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / _name(0)).write_bytes(b"x" * 8)
    (b / _name(0)).write_bytes(b"y" * 8)
    with pytest.raises(FormatError) as caught:
        files.multi_path_view([a, b])
    # MultiPathMappedFileQueue would map both at offset 0: the error names the second file found
    assert caught.value.path == os.fspath(Path(os.path.realpath(b)) / _name(0))
    assert caught.value.offset == 0
    assert caught.value.field == "file name"


def test_a_linked_file_is_named_by_its_target_and_a_plain_one_as_given(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / _name(100)).write_bytes(b"z" * 16)
    link = tmp_path / "link"
    link.mkdir()
    os.symlink(real / _name(100), link / _name(100))
    got = files.store_files(link / _name(100))
    assert [(f.path, f.start_offset, f.size) for f in got] == [(real / _name(100), 100, 16)]
    # a file that is no link keeps the path given, even below a linked folder
    linked_folder = tmp_path / "folder"
    os.symlink(real, linked_folder)
    got = files.store_files(linked_folder / _name(100))
    assert [f.path for f in got] == [linked_folder / _name(100)]


def test_the_views_are_removed(tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.mkdir()
    (a / _name(0)).write_bytes(b"x" * 8)
    view = files.multi_path_view([a])
    assert view.is_dir()
    files._remove_views()
    assert not view.exists()
    files._VIEWS.clear()
