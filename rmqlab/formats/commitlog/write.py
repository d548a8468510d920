"""Appending messages to a ``commitlog/`` folder as a broker does."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from rmqlab.errors import FormatError
from rmqlab.formats.commitlog.columns import read_columns
from rmqlab.formats.commitlog.encode import EncodedBatch, _version_form, encode_messages
from rmqlab.formats.commitlog.files import store_files
from rmqlab.formats.commitlog.layout import DEFAULT_FILE_SIZE
from rmqlab.formats.commitlog.records import ReadReport
from rmqlab.rules.dispatch import next_queue_offsets
from rmqlab.rules.versions import BrokerVersion


class CommitLogWriter:
    """Append messages to a ``commitlog/`` folder as a broker does.

    New files are created at their full `file_size` (zeros, like the broker's preallocated
    mapped files) and named by their start offset. Existing bytes are never rewritten: opening
    an existing folder walks its last file and resumes after its last message (or in the next
    file when it ends with the blank record); the queue-offset table is rebuilt from the
    messages already stored (or given as `queue_table`). `broker_version` and
    `append_prop_crc` choose the stored form of every record appended (see
    :func:`encode_messages`; None: rmqlab's default form). Use as a context manager.
    """

    def __init__(self, directory: str | os.PathLike, file_size: int = DEFAULT_FILE_SIZE, *,
                 start_offset: int = 0, queue_table: dict[tuple[str, int], int] | None = None,
                 broker_version: str | BrokerVersion | None = None, append_prop_crc: bool | None = None):
        _version_form(broker_version, append_prop_crc)   # a bad version fails before any file is touched
        self.broker_version, self.append_prop_crc = broker_version, append_prop_crc
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.file_size = int(file_size)
        files = store_files(self.dir)
        self.rows_written = 0
        self._phy_parts: list[np.ndarray] = []
        if files:
            df = read_columns(self.dir, body=False, on_error="report")
            rep: ReadReport = df.attrs["report"]
            if rep.torn_tail is not None or (rep.damage and rep.damage[-1].path == os.fspath(files[-1].path)):
                bad = rep.torn_tail or rep.damage[-1]
                raise FormatError("the last file ends in a torn or damaged record; appending would rewrite "
                                  "its bytes (a broker truncates it at recovery): " + bad.reason,
                                  path=bad.path, offset=bad.offset, field=bad.field)
            assert rep.end_phy_offset is not None   # read_columns sets it from the last file
            self.offset = int(rep.end_phy_offset)
            if queue_table is None:
                queue_table = next_queue_offsets(df["topic"].to_numpy(object), df["queue_id"].to_numpy(),
                                                 df["sys_flag"].to_numpy(), df["queue_offset"].to_numpy())
        else:
            self.offset = int(start_offset)
        self.queue_table = dict(queue_table or {})

    def _path(self, start: int) -> Path:
        return self.dir / f"{start:020d}"

    def append(self, columns) -> EncodedBatch:
        """Encode and write a batch (see :func:`encode_messages`); ``prepared_index`` counts rows
        from the writer's first append."""
        prior = np.concatenate(self._phy_parts) if self._phy_parts else np.empty(0, np.int64)
        batch = encode_messages(columns, self.offset, self.file_size, queue_table=self.queue_table,
                                row_base=self.rows_written, prior_phy_offsets=prior,
                                broker_version=self.broker_version, append_prop_crc=self.append_prop_crc)
        for ef in batch.files:
            p = self._path(ef.start_offset)
            fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                if os.fstat(fd).st_size < self.file_size:
                    os.ftruncate(fd, self.file_size)
                os.pwrite(fd, ef.data.data, ef.position)   # .data: the array's memoryview
            finally:
                os.close(fd)
        self.offset = batch.end_offset
        self.queue_table = batch.queue_table
        self.rows_written += len(batch.phy_offset)
        self._phy_parts.append(batch.phy_offset)
        return batch

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
