"""The checks of the tiered store's index files (``tiered_index_file/``, RIP-65), by the rules of
``IndexStoreFile`` (:mod:`rmqlab.formats.tieredindex` names the release read)."""
from __future__ import annotations

from pathlib import Path

from rmqlab.errors import RmqlabError
from rmqlab.formats import tieredindex as ti
from rmqlab.verify.report import FileReport, problem_from_error


def verify_tiered_index(root: Path, hash_slot_num: int | None = None,
                        index_num: int | None = None) -> list[FileReport]:
    """One report a file of ``tiered_index_file/`` (local files) and of its ``compacting/``
    (compacted ones). Errors: a size the geometry does not fit (``tiered.geometry``: pass
    tieredStoreIndexFileMaxHashSlotNum / MaxIndexNum when they are not the defaults), what
    :meth:`TieredIndexFile.check` finds (``tiered.index``: a magic of neither code, a slot or
    an item pointing where the broker's walk would not go, an item in another slot's chain).
    Read-only. Cost: one pass over each file's slots and items.

    >>> import tempfile
    >>> verify_tiered_index(Path(tempfile.mkdtemp()))
    []
    """
    folder = root / ti.FOLDER
    compacting = folder / ti.COMPACTING
    paths = [(p, "local") for p in ti.index_files(folder)] + [(p, "compacted") for p in ti.index_files(compacting)]
    reports = []
    for path, form in paths:
        rep = FileReport(str(path), "tiered-index")
        try:
            f = ti.TieredIndexFile.open(path, hash_slot_num=hash_slot_num, index_num=index_num if form == "local"
                                        else None, form=form)
        except RmqlabError as e:
            rep.problems.append(problem_from_error("tiered.geometry", e))
            reports.append(rep)
            continue
        with f:
            rep.problems += [problem_from_error("tiered.index", e) for e in f.check()]
            rep.counts = {"form": form, "items": f.item_count, "slots_used": f.slot_count,
                          "hash_slot_num": f.geometry.hash_slot_num}
        reports.append(rep)
    return reports
