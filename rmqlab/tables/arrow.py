"""The Arrow arrays behind the columns callers hold, for the C loops that read Arrow buffers
directly: a pandas column of ``pd.ArrowDtype`` (what ``commitlog.read_columns(arrow=True)``
gives) as one pyarrow array, and a large_string array as NumPy views of its buffers."""
from __future__ import annotations

from typing import Any

import numpy as np


def arrow_column(column: Any):
    """The one pyarrow array behind `column` (a pyarrow Array or ChunkedArray, or a pandas
    Series / array of ``pd.ArrowDtype``), chunks combined and dictionaries unified; None for
    any other storage. Cost: no copy when there is one chunk.

    >>> import pandas as pd, pyarrow as pa
    >>> arrow_column(pd.Series(["a", None], dtype=pd.ArrowDtype(pa.large_string()))).to_pylist()
    ['a', None]
    >>> arrow_column(pd.Series(["a"], dtype=object)) is None
    True
    """
    import sys

    pa = sys.modules.get("pyarrow")
    pd = sys.modules.get("pandas")
    if pa is None:
        return None
    if isinstance(column, (pa.Array, pa.ChunkedArray)):
        arr = column
    elif pd is not None and isinstance(getattr(column, "dtype", None), pd.ArrowDtype):
        arr = pa.array(column)
    else:
        return None
    if isinstance(arr, pa.ChunkedArray):
        if pa.types.is_dictionary(arr.type):
            arr = arr.unify_dictionaries()
        arr = arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    return arr


def utf8_buffers(arr) -> tuple[np.ndarray, Any, np.ndarray | None] | None:
    """(int64 offsets of len(arr) + 1 entries, data buffer, uint8 validity a row or None when
    nothing is null) of a pyarrow string / large_string array, without copying the text; None
    for any other type. Units: offsets are byte positions in the data buffer.

    >>> import pyarrow as pa
    >>> offsets, data, valid = utf8_buffers(pa.array(["ab", None, "c"]))
    >>> offsets.tolist(), bytes(data), valid.tolist()
    ([0, 2, 2, 3], b'abc', [1, 0, 1])
    """
    import pyarrow as pa

    if pa.types.is_string(arr.type):
        arr = arr.cast(pa.large_string())
    elif not pa.types.is_large_string(arr.type):
        return None
    _, offsets, data = arr.buffers()
    n = len(arr)
    off = np.frombuffer(offsets, np.int64)[arr.offset:arr.offset + n + 1] if n else np.zeros(1, np.int64)
    valid = arr.is_valid().to_numpy(zero_copy_only=False).view(np.uint8) if arr.null_count else None
    return off, (b"" if data is None else data), valid
