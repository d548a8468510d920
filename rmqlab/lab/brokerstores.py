"""Stores written by real RocketMQ brokers, for the notebooks: the ones ``make brokers`` builds
(each release's own name server, broker and client, run on 127.0.0.1; tests/brokers/) into a
cache outside the checkout, ``$RMQLAB_BROKER_CACHE`` or ``~/.cache/rmqlab/brokers``.

>>> import os, tempfile
>>> os.environ["RMQLAB_BROKER_CACHE"] = tempfile.mkdtemp()
>>> broker_store("5.3.3") is None
True
>>> del os.environ["RMQLAB_BROKER_CACHE"]
"""
from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["broker_cache", "broker_store", "broker_store_options", "BUILD_HINT"]

#: How to build one store when the cache has none (about a minute).
BUILD_HINT = ("build one with `make brokers` (all releases, about 20 minutes) or "
              "`.venv/bin/python tests/brokers/build_rocketmq.py --release 5.3.3 --scenario clean` (about a minute)")


def broker_cache() -> Path:
    """The cache the broker builds write to."""
    return Path(os.environ.get("RMQLAB_BROKER_CACHE") or Path.home() / ".cache" / "rmqlab" / "brokers")


def broker_store(release: str, scenario: str = "clean") -> Path | None:
    """The store root a `release` broker wrote in `scenario` ("clean": the workload, then a clean
    stop), or None when the cache has no finished one. The newest of several wins. Cost: one
    folder listing."""
    folder = broker_cache() / "rocketmq" / release
    if not folder.is_dir():
        return None
    done = [p for p in folder.glob(f"{scenario}-*") if p.is_dir() and (p / "summary.json").is_file()
            and json.loads((p / "summary.json").read_text(encoding="utf-8")).get("scenario") == scenario]
    if not done:
        return None
    return max(done, key=lambda p: (p / "summary.json").stat().st_mtime) / "store"


#: broker.conf settings -> Store options (the store geometry a broker ran with)
_CONF_OPTIONS = {"maxHashSlotNum": "hash_slot_num", "maxIndexNum": "index_num",
                 "mappedFileSizeCommitLog": "commitlog_file_size",
                 "mappedFileSizeConsumeQueue": "consume_queue_file_size"}


def broker_store_options(store_root: str | os.PathLike) -> dict[str, int]:
    """The :class:`rmqlab.store.directory.Store` options a cached broker store was written with,
    read from the broker.conf beside it (settings it does not give keep their defaults).
    Cost: reads one small file.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "store").mkdir()
    >>> _ = (d / "broker.conf").write_text("maxHashSlotNum=400\\nbrokerName=a\\n")
    >>> broker_store_options(d / "store")
    {'hash_slot_num': 400}
    """
    conf = Path(store_root).parent / "broker.conf"
    out = {}
    for line in conf.read_text(encoding="utf-8").splitlines():
        key, eq, value = line.partition("=")
        if eq and key.strip() in _CONF_OPTIONS and value.strip().isdigit():
            out[_CONF_OPTIONS[key.strip()]] = int(value.strip())
    return out
