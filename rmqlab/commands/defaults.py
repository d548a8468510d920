"""The library's values the command-line parsers show (defaults, choices), as plain constants.

Building a parser (``rmqlab --help``, ``rmqlab store query --help``) imports this module and
the standard library only: none of NumPy, pandas or PyArrow, which the modules owning these
values import (:mod:`rmqlab.formats.indexfile`, :mod:`rmqlab.store.indexservice`,
:mod:`rmqlab.lab.workload`, :mod:`rmqlab.verify`). tests/commands/test_startup.py checks every value
here against the module that owns it.

>>> DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM, DEFAULT_MAX_MSGS_NUM_BATCH
(5000000, 20000000, 64)
"""
from __future__ import annotations

#: rmqlab.formats.indexfile: the broker's maxHashSlotNum and maxIndexNum; rmqlab.jvm.longs: Long.MAX_VALUE
DEFAULT_HASH_SLOT_NUM = 5_000_000
DEFAULT_INDEX_NUM = 20_000_000
LONG_MAX = 2**63 - 1

#: rmqlab.formats.consumequeue: mappedFileSizeConsumeQueue (300,000 units of 20 bytes)
DEFAULT_MAPPED_FILE_SIZE = 6_000_000

#: rmqlab.store.indexservice: the broker's maxMsgsNumBatch, and defaultQueryMaxNum (UNIQ_KEY queries)
DEFAULT_MAX_MSGS_NUM_BATCH = 64
DEFAULT_QUERY_MAX_NUM = 32

#: rmqlab.lab.workload.PATTERNS: the arrival-rate patterns of a synthetic workload
PATTERNS = ("steady", "daily", "bursts", "daily+bursts")

#: rmqlab.verify.KINDS: what a target of ``rmqlab verify`` can be
VERIFY_KINDS = ("store", "commitlog", "consumequeue", "index", "checkpoint", "batchconsumequeue", "dledger",
                "rocksdbcq")

#: rmqlab.verify.driver.WORKER_MODULES: what the worker processes of ``rmqlab verify --jobs N`` import
VERIFY_WORKER_MODULES = ("rmqlab.verify.check_commitlog", "rmqlab.verify.check_index",
                         "rmqlab.verify.check_consumequeue", "pandas", "pyarrow.compute")

#: rmqlab.capacity.plan.POINTS: where in a plan's (low, likely, high) intervals an estimate is taken
PLAN_POINTS = ("low", "likely", "high")

#: each constant above, and the module attribute it copies (checked by tests/commands/test_startup.py)
SOURCES: dict[str, str] = {
    "DEFAULT_HASH_SLOT_NUM": "rmqlab.formats.indexfile:DEFAULT_HASH_SLOT_NUM",
    "DEFAULT_INDEX_NUM": "rmqlab.formats.indexfile:DEFAULT_INDEX_NUM",
    "LONG_MAX": "rmqlab.jvm.longs:LONG_MAX",
    "DEFAULT_MAPPED_FILE_SIZE": "rmqlab.formats.consumequeue:DEFAULT_MAPPED_FILE_SIZE",
    "DEFAULT_MAX_MSGS_NUM_BATCH": "rmqlab.store.indexservice:DEFAULT_MAX_MSGS_NUM_BATCH",
    "DEFAULT_QUERY_MAX_NUM": "rmqlab.store.indexservice:DEFAULT_QUERY_MAX_NUM",
    "PATTERNS": "rmqlab.lab.workload:PATTERNS",
    "PLAN_POINTS": "rmqlab.capacity.plan:POINTS",
    "VERIFY_KINDS": "rmqlab.verify:KINDS",
    "VERIFY_WORKER_MODULES": "rmqlab.verify.driver:WORKER_MODULES",
}
