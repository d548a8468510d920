"""The small files a broker leaves at the store root beside its data: ``abort`` and ``lock``.

Mirrors ``DefaultMessageStore`` (store module, read at rocketmq-all-4.9.7 and 5.3.3):

* ``abort`` is created when the store starts (``createTempFile``) and deleted by a clean shutdown,
  so its presence means the broker was killed or is running (recovery is then abnormal). 4.x
  leaves it empty; 5.x writes the broker's process id into it with ``MixAll.string2File``, which
  first copies the previous text to ``abort.bak``, so a 5.x store keeps ``abort.bak`` (the last
  run's PID) even after a clean stop.
* ``lock``: the store takes a file lock on its first byte (``tryLock(0, 1, false)``, so two
  brokers cannot share a store) and writes the 4 bytes ``lock`` into it.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> _ = (root / "abort").write_text("15")
>>> read_broker_files(root)
BrokerFiles(abort=True, abort_pid=15, abort_bak_pid=None, lock_text=None)
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rmqlab.formats.storepaths import ABORT

__all__ = ["BrokerFiles", "read_broker_files"]

#: DefaultMessageStore writes these bytes into <root>/lock
LOCK_TEXT = "lock"


@dataclass(frozen=True)
class BrokerFiles:
    """``abort`` present (the last run did not shut down cleanly), the PID a 5.x broker wrote in
    it and in ``abort.bak`` (None: empty, as 4.x leaves it, or absent), the text of ``lock``."""

    abort: bool
    abort_pid: int | None
    abort_bak_pid: int | None
    lock_text: str | None


def _pid(path: Path) -> int | None:
    try:
        text = path.read_bytes()[:64].decode("ascii", "replace").strip()
    except (FileNotFoundError, IsADirectoryError):
        return None
    return int(text) if text.isdigit() else None


def read_broker_files(root: str | os.PathLike) -> BrokerFiles:
    """Read ``abort``, ``abort.bak`` and ``lock`` at `root` (each may be missing). Reads only.
    Cost: three small reads."""
    root = Path(root)
    lock = root / "lock"
    lock_text = lock.read_bytes()[:16].decode("ascii", "replace") if lock.is_file() else None
    return BrokerFiles((root / ABORT).is_file(), _pid(root / ABORT), _pid(root / (ABORT + ".bak")), lock_text)
