"""Mutation testing of the format and query core with mutmut 3: how many deliberate bugs the tests catch.

Each module runs on its own, in a scratch directory benchmarks/out/mutation/<module>/ holding
links to the package, the tests and ../shared (the tests find the real broker data two levels
above their own file, and mutmut runs them from <scratch>/mutants/tests/), and a pyproject.toml
whose [tool.mutmut] is the repository's with that module alone to mutate and its own tests to
run. mutmut then runs, for every mutant, only the selected tests that call the mutated function,
stopping at the first failure. Results stay in the scratch directory, out of the repository, and
a second run only tests mutants of functions that changed.

Counted per module: mutants; killed (a test failed, including by a timeout or a crash, in
mutmut's run or in the survivor check, :func:`check_survivors`); survived; *equivalent*
(survivors judged unable to change what any caller can observe, listed in :data:`JUDGED` with
the reason); *message* (survivors that only change the message of an
exception the code builds, or put None in its place, found by comparing the syntax trees of
the original and the mutated function: reported apart, not counted in the score); *not run*;
score = killed / (mutants - equivalent - message - not run). Mutant names are mutmut's
(``module.x_function__mutmut_N``), numbered within a function, so an edit of a function renames
its mutants and the judgements of :data:`EQUIVALENT` need a new look.

Cost on a 2-core machine with 2 workers: checkpoint about a minute; the two large modules
(indexfile, consumequeue) tens of minutes each. Sampled, one worker, on a loaded machine: 1 to 9
minutes a module for 6 or 10 mutants (mutmut first runs the module's tests twice, to map them and
to time them; the verify modules, whose tests take minutes, the longest).

The rest of the core (the CommitLog reader, the dispatch rules and run, recovery, verify's
checks, the Kafka log reader and index rebuild, the capacity model) is run sampled: every mutant
of the module is generated, then ``--sample N`` of them are drawn with ``--seed`` (the same draw
for the same source) and only those run; the score then has a 95 % Wilson interval. ``all``
names every module; ``--c-sample N`` runs the C part after (benchmarks/mutation_c.py) and writes
one report of both (``make mutation``).

Run:  python benchmarks/mutation.py [--workers 2] [module ...]   (modules: see MODULES)
      python benchmarks/mutation.py all --workers 1 --sample 10 --c-sample 10 --seed 0
                                                      (what `make mutation` runs)
      python benchmarks/mutation.py --report-only        (the table from the last runs)
      python benchmarks/mutation.py --survivors checkpoint (the diff of every surviving mutant)
      python benchmarks/mutation.py --check-survivors [--every-test] keyquery (the added tests
                                                      against each survivor, a second a mutant)
"""
from __future__ import annotations

import argparse
import ast
import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

from mutation_c import wilson  # the one Wilson interval of both parts' reports

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out" / "mutation"
SHARED = ROOT.parent / "shared"

DOCTESTS = "tests/test_doctests.py::test_docstring_examples[{}]"

#: module -> (file to mutate, the tests that exercise it: fast ones only, no Spark, browser,
#: notebook, fuzz or crash tests)
MODULES: dict[str, tuple[str, list[str]]] = {
    "checkpoint": ("rmqlab/formats/checkpoint.py", [
        "tests/formats/test_checkpoint.py",
        "tests/formats/test_real_store_420.py",
        "tests/formats/test_corrupt_corpus.py",
        "tests/formats/test_checkpoint_fields.py",
        DOCTESTS.format("rmqlab.formats.checkpoint"),
    ]),
    "consumequeue": ("rmqlab/formats/consumequeue.py", [
        "tests/formats/test_consumequeue.py",
        "tests/formats/test_batchconsumequeue.py",
        "tests/formats/test_consumequeue_ext.py",
        "tests/formats/test_real_store_420.py",
        "tests/formats/test_corrupt_corpus.py",
        "tests/formats/test_consumequeue_edges.py",
        DOCTESTS.format("rmqlab.formats.consumequeue"),
    ]),
    "indexfile": ("rmqlab/formats/indexfile.py", [
        "tests/formats/test_indexfile.py",
        "tests/formats/test_indexfile_badinput.py",
        "tests/formats/test_indexfile_golden.py",
        "tests/formats/test_indexfile_native.py",
        "tests/formats/test_native_layouts.py",
        "tests/formats/test_indexfile_time_diff.py",
        "tests/formats/test_indexfile_edges.py",
        DOCTESTS.format("rmqlab.formats.indexfile"),
    ]),
    "indexservice": ("rmqlab/store/indexservice.py", [
        "tests/store/test_indexservice.py",
        "tests/store/test_indexservice_columns.py",
        "tests/analysis/test_indexstats.py",
        "tests/analysis/test_keys.py",
        "tests/analysis/test_buildsteps.py",
        "tests/store/test_indexservice_edges.py",
        DOCTESTS.format("rmqlab.store.indexservice"),
    ]),
    "keyquery": ("rmqlab/store/keyquery.py", [
        "tests/store/test_keyquery.py",
        "tests/analysis/test_keys.py",
        "tests/store/test_keyquery_edges.py",
        DOCTESTS.format("rmqlab.store.keyquery"),
    ]),
    # the rest of the core, run sampled (``--sample N``): the CommitLog reader, the dispatch rules
    # and run, recovery, verify's checks, the Kafka log reader and index rebuild, the capacity model
    "commitlog_records": ("rmqlab/formats/commitlog/records.py", [
        "tests/formats/commitlog/test_records.py",
        "tests/formats/commitlog/test_decode.py",
        "tests/formats/commitlog/test_placement.py",
        "tests/formats/test_native_layouts.py",
        "tests/formats/commitlog/test_records_edges.py",
        DOCTESTS.format("rmqlab.formats.commitlog.records"),
    ]),
    "commitlog_columns": ("rmqlab/formats/commitlog/columns.py", [
        "tests/formats/commitlog/test_decode.py",
        "tests/formats/commitlog/test_onepass.py",
        "tests/formats/test_concurrent_readers.py",
        "tests/formats/commitlog/test_columns_edges.py",
        DOCTESTS.format("rmqlab.formats.commitlog.columns"),
    ]),
    "commitlog_files": ("rmqlab/formats/commitlog/files.py", [
        "tests/formats/commitlog/test_load.py",
        "tests/formats/commitlog/test_records.py",
        "tests/formats/commitlog/test_files_edges.py",
        DOCTESTS.format("rmqlab.formats.commitlog.files"),
    ]),
    "dispatch_rules": ("rmqlab/rules/dispatch.py", [
        "tests/rules/test_dispatch.py",
        "tests/rules/test_lmq_versions.py",
        "tests/store/test_reput_parts.py",
        "tests/rules/test_dispatch_edges.py",
        DOCTESTS.format("rmqlab.rules.dispatch"),
    ]),
    "dispatch_run": ("rmqlab/store/reput.py", [
        "tests/store/test_reput.py",
        "tests/store/test_reput_parts.py",
        "tests/store/test_restart_dispatch.py",
        "tests/store/test_reput_edges.py",
        DOCTESTS.format("rmqlab.store.reput"),
    ]),
    "recovery": ("rmqlab/store/recover.py", [
        "tests/formats/commitlog/test_load.py",
        "tests/formats/test_dledger.py",
        "tests/formats/test_real_store_420.py",
        "tests/store/test_recover_edges.py",
        DOCTESTS.format("rmqlab.store.recover"),
    ]),
    "verify_commitlog": ("rmqlab/verify/check_commitlog.py", [
        "tests/verify/test_verify.py",
        "tests/rules/test_versions.py",
        "tests/verify/test_verify_edges.py",
        DOCTESTS.format("rmqlab.verify.check_commitlog"),
    ]),
    "verify_consumequeue": ("rmqlab/verify/check_consumequeue.py", [
        "tests/verify/test_verify.py",
        "tests/verify/test_verify_edges.py",
        DOCTESTS.format("rmqlab.verify.check_consumequeue"),
    ]),
    "verify_index": ("rmqlab/verify/check_index.py", [
        "tests/verify/test_verify.py",
        "tests/verify/test_verify_edges.py",
        DOCTESTS.format("rmqlab.verify.check_index"),
    ]),
    "verify_cross": ("rmqlab/verify/cross.py", [
        "tests/verify/test_verify.py",
        "tests/verify/test_verify_edges.py",
        DOCTESTS.format("rmqlab.verify.cross"),
    ]),
    "kafka_log": ("rmqlab/kafka/log.py", [
        "tests/kafka/test_log.py",
        "tests/kafka/test_walk.py",
        "tests/kafka/test_damage.py",
        "tests/kafka/test_log_edges.py",
        DOCTESTS.format("rmqlab.kafka.log"),
    ]),
    "kafka_rebuild": ("rmqlab/kafka/rebuild.py", [
        "tests/kafka/test_rebuild.py",
        "tests/kafka/test_walk.py",
        "tests/kafka/test_damage.py",
        "tests/kafka/test_rebuild_edges.py",
        DOCTESTS.format("rmqlab.kafka.rebuild"),
    ]),
    "capacity_model": ("rmqlab/capacity/model.py", [
        "tests/capacity/test_model.py",
        "tests/capacity/test_validation.py",
        "tests/capacity/test_model_edges.py",
        DOCTESTS.format("rmqlab.capacity.model"),
    ]),
}

#: the modules judged in full before the sampled runs, in the order they run
FIRST = ["checkpoint", "keyquery", "indexservice", "consumequeue", "indexfile"]

#: module -> the tests added for the mutants its other tests let survive, each against
#: independent truth (the last test file of its MODULES entry)
EDGE_TESTS = {
    "checkpoint": "tests/formats/test_checkpoint_fields.py",
    "consumequeue": "tests/formats/test_consumequeue_edges.py",
    "indexfile": "tests/formats/test_indexfile_edges.py",
    "indexservice": "tests/store/test_indexservice_edges.py",
    "keyquery": "tests/store/test_keyquery_edges.py",
    "commitlog_files": "tests/formats/commitlog/test_files_edges.py",
    "commitlog_records": "tests/formats/commitlog/test_records_edges.py",
    "commitlog_columns": "tests/formats/commitlog/test_columns_edges.py",
    "dispatch_rules": "tests/rules/test_dispatch_edges.py",
    "dispatch_run": "tests/store/test_reput_edges.py",
    "capacity_model": "tests/capacity/test_model_edges.py",
    "recovery": "tests/store/test_recover_edges.py",
    "kafka_log": "tests/kafka/test_log_edges.py",
    "kafka_rebuild": "tests/kafka/test_rebuild_edges.py",
    "verify_commitlog": "tests/verify/test_verify_edges.py",
    "verify_consumequeue": "tests/verify/test_verify_edges.py",
    "verify_index": "tests/verify/test_verify_edges.py",
    "verify_cross": "tests/verify/test_verify_edges.py",
}

#: surviving mutants judged equivalent, by function (mutmut's name of it, before ``__mutmut_N``):
#: mutant numbers -> why no caller can tell them from the original
JUDGED: dict[str, dict[tuple[int, ...], str]] = {
    "rmqlab.formats.checkpoint.x__open_mapped": {
        (20,): "truncating a 4096-byte file to 4096 bytes changes no byte (the mapped write after it sets "
               "mtime anyway)",
        (27,): "mmap's default access on a read-write descriptor is the shared read-write mapping "
               "ACCESS_WRITE asks for",
    },
    "rmqlab.formats.checkpoint.x__field_at": {
        (4, 5): "unreachable: _check_size asks only for a size below the 40 bytes of fields, which always falls "
                "inside a field",
    },
    "rmqlab.formats.checkpoint.x_read_checkpoint": {
        (13,): "reading the whole file, not 4096 bytes: strict mode has checked the size is 4096, and "
               "otherwise only the first 40 bytes are used",
    },
    "rmqlab.formats.checkpoint.x_write_checkpoint": {
        (2,): "sync=False by default skips msync: the page cache is shared, so only a kernel crash or "
              "power loss could show it",
    },
    "rmqlab.formats.checkpoint.x_update_checkpoint": {
        (1,): "the same msync default as write_checkpoint's",
    },
    # consumequeue.py
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁ_file_by_store_time": {
        (73,): "the extra step i = -1 tests starts[-1] again, the newest file's, refused already at i = n - 1",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁtag_mask": {
        (33, 37): "the subscription's codes as float64 (or without a count) hold every int32 exactly, and isin "
                  "compares values",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁcode_mask": {
        (4, 6): "integer codes give an int64 array without being told (an empty list a float one, which "
                "matches nothing either way)",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁto_frame": {
        (26, 29): "np.arange's default integer is int64 on Linux and macOS (and on Windows from NumPy 2)",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁ_unit_problems": {
        (4, 5, 7): "raw_units' default start and stop are first_offset and max_offset, the values passed",
        (48,): "with one real unit the pairwise checks compare empty arrays",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁ_end_problems": {
        (100,): "np.frombuffer of an empty buffer is the empty array the else branch builds",
        (107, 109): "an empty array has no non-zero byte whatever its dtype",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁ_segment_of": {
        (11,): "it is only asked for offsets below max_offset (unit() checks first; problems name units "
               "inside the queue)",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁunit": {
        (5,): "unit(max_offset) then raises the same IndexError from _segment_of (only its message differs)",
    },
    "rmqlab.formats.consumequeue.xǁ_Proberǁmany": {
        (7, 9): "a list of Python ints below 2^63 is an int64 array without being told",
        (18,): "`got` is read only for a non-blank unit, and then phys is non-empty and `got` reassigned",
        (22,): "store times read back as float64 are exact below 2^53 ms and int() gives the same ints",
        (23, 25, 28): "copying or not: nothing writes the array",
        (30,): "NumPy takes any negative size as the one unknown dimension",
    },
    "rmqlab.formats.consumequeue.x__list_files": {
        (41,): "the empty file passed over is the last entry: there is nothing after it to list",
        (55,): "it is reached only when the size differs from the mapped size, where < and <= agree",
        (98,): "it is reached only when the start differs from the previous file's end, where > and >= agree",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueWriterǁ__init__": {
        (7,): "the descriptor is None at first, so the path it was opened for is not compared",
        (9,): "_closed=None is as falsy as False",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁ__init__": {
        (11,): "_closed=None is as falsy as False",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueWriterǁ_bulk": {
        (25,): "the slice stops at the data's end, so a larger take writes the same bytes and ends the loop",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueWriterǁcreate": {
        (25,): "offset + size >= 1 for every unit put accepts, so -2 lets every first unit through as -1 does",
        (26,): "min_offset is min_logic_offset // 20, and 1 // 20 is 0; nothing else reads it before a put sets it",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueWriterǁput": {
        (27,): "cq * 20 is even and Long.MAX_VALUE odd: they are never equal",
        (54, 56, 58): "the file size is a whole number of units, so `until` is too and the rounding term is 0",
        (87,): "f.start is a multiple of the file size and f.wrote below it, so start - wrote is 0 only when "
               "start + wrote is",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁoffset_by_time": {
        (2,): "the boundary is lower-cased before use, as BoundaryType.getType ignores case",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueWriterǁopen": {
        (20,): "first_create=None is as falsy as False",
        (28,): "offset + size >= 1 for every unit put accepts, so -2 lets every first unit through as -1 does",
    },
    "rmqlab.formats.consumequeue.x__jdiv": {
        (7, 8): "with a = 0 the quotient is 0, and -0 is 0",
        (10,): "b = 0 has raised ZeroDivisionError already",
    },
    "rmqlab.formats.consumequeue.x_mapped_file_size_for": {
        (11,): "the size is a multiple of 20 and Integer.MAX_VALUE is not: they are never equal",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueWriterǁ_write": {
        (2, 11): "the descriptor is reopened for every write instead of kept per file: the same bytes land at "
                 "the same positions",
        (12,): "an internal assertion that never fails: put and _bulk roll to a new file before a write could "
               "pass the file's end",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueWriterǁclose": {
        (1,): "sync=True by default forces the files to disk: only a kernel crash or power loss could show it",
        (4,): "after close nothing reads the descriptor: every put refuses a closed writer first, and a second "
              "close returns at once",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueWriterǁput_many": {
        (31, 34): "np.arange of Python ints is int64 without being told",
        (89,): "the scan window's width only decides how many units are compared at a time",
    },
    "rmqlab.formats.consumequeue.x__flat": {
        (3,): "NumPy takes any negative size as the one unknown dimension",
    },
    "rmqlab.formats.consumequeue.xǁ_Segmentǁ__init__": {
        (5,): "np.frombuffer of an empty buffer (an empty file is read, not mapped) is the empty array the else "
              "branch builds",
        (18, 19): "_find_ends sets `wrote` of every live segment before anything reads it, and no one reads a "
                  "dirty segment's",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁopen": {
        (7,): "eager=None is as falsy as False",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁraw_units": {
        (59, 61, 62, 63, 64, 65): "unreachable: with stop > start and the files contiguous (a gap has raised), "
                                  "the live files hold the whole range (all but the last are full), so `parts` "
                                  "is never empty there",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁ_find_ends": {
        (15,): "the loop over at least one file sets `end` before anything reads it",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁ_load": {
        (26,): "only the descriptor is used (mmap of its fileno, read-only), which text mode opens read-only as "
               "'rb' does",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁ_release": {
        (2, 4, 6, 7): "any value that drops the views lets the maps close, and a closed queue refuses every read "
                      "before looking at its units",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁ_search_4": {
        (13,): "when the min logic offset is the file's start, low is 0 either way",
        (16,): "the write position is a whole number of 20-byte units, never 1",
        (69,): "t == ts has ended the loop the line before",
        (89, 90): "in that branch a left value is set (a store time >= 0 below ts, so ts >= 1), and a set right "
                  "value exceeds ts: it is -1 or at least 2, never +1 or -2",
    },
    "rmqlab.formats.consumequeue.xǁConsumeQueueǁ_search_5": {
        (1,): "the one caller always passes min_logic_given",
        (14,): "when the min logic offset is the file's start, low is 0 either way",
        (54,): "start + ceiling is a multiple of 20, so adding 1 floors to the same unit",
        (89, 90): "`left` is set whenever it is read: the first-unit check has found the floor's time <= ts, so "
                  "a search without an exact match meets a unit at or below ts (or skips one, which sets it)",
        (92,): "fileFromOffset is a multiple of 20: (start - 1) and (start - 2) divided by 20 toward zero are "
               "the same",
        (133,): "t == ts has ended the loop the line before",
    },
    # indexservice.py
    "rmqlab.store.indexservice.x__now_ms": {
        (1,): "true division then int() truncates like //, except within float rounding (~0.2 µs) of a "
              "millisecond boundary, which no caller can tell from reading the clock a moment later",
    },
    "rmqlab.store.indexservice.x__string_column": {
        (5, 7): "a missing column becomes nulls of null type instead of large_string; index_keys_many reads "
                "both as no value",
    },
    "rmqlab.store.indexservice.x_expand_columns": {
        (4, 6, 17, 19): "integer columns stay integers: ExpandedKeys widens them to int64 and _kept_messages "
                        "compares them exactly",
        (40, 42, 45, 47): "goes_to_index_many converts sys_flag to int64 itself",
        (52,): "nullable=None is as falsy as False",
        (122,): "indexing with an empty index array gives the same empty bool array",
        (147, 149): "pa.array infers int64 from the int64 NumPy array",
    },
    "rmqlab.store.indexservice.xǁExpandedKeysǁkey_list": {
        (2, 4, 8, 9): "str() of a pyarrow string scalar is its value, and full keys are never null",
    },
    "rmqlab.store.indexservice.xǁExpandedKeysǁ__post_init__": {
        (19, 21): "np.arange's default integer is int64 on Linux and macOS (and on Windows from NumPy 2)",
    },
    "rmqlab.store.indexservice.xǁIndexServiceǁbuild_columns": {
        (6, 8, 34, 36): "integer columns are integer arrays without being told; they are read only through "
                        "int() and put_keys, which takes any integer array as longs",
        (24,): "without the str-object fast path, expand_columns gives the same puts (the two paths are tested "
               "equal), only slower",
        (31,): "given hashes, put_keys never reads the keys",
        (99,): "with no puts the file just obtained is never full, so `after` is not read",
    },
    "rmqlab.store.indexservice.x__object_column": {
        (3, 6): "np.full with None gives an object array without being told",
    },
    "rmqlab.store.indexservice.x_index_key_hashes": {
        (4, 6): "integer offsets are an integer array without being told, and _kept_messages compares them "
                "exactly",
        (34, 36, 39, 41): "goes_to_index_many converts sys_flag to int64 itself",
        (86, 155): "NumPy sums int32 in the platform integer, int64 on Linux and macOS (and on Windows from "
                   "NumPy 2)",
    },
    "rmqlab.store.indexservice.x__arrow_key_columns": {
        (41,): "zero_copy_only=None is as falsy as False",
        (42,): "the indices hold no null (a null topic has declined the path), so they convert without a copy",
    },
    "rmqlab.store.indexservice.x_index_file_name_ms": {
        (15,): "a naive datetime's timestamp() reads it as local time, as astimezone() does",
    },
    "rmqlab.store.indexservice.xǁIndexServiceǁbuild_index": {
        (3,): "what the silent observer returns is never read",
        (105,): "after a refused put the file is full, so the next file is always created: > and >= agree",
    },
    "rmqlab.store.indexservice.xǁIndexServiceǁ__init__": {
        (19,): "the list is replaced by the folder's ignored files before anything reads it",
    },
    "rmqlab.store.indexservice.x_index_file_name": {
        (10,): "datetime.fromtimestamp(secs, None) is the local time, as without a zone",
    },
    "rmqlab.store.indexservice.x_next_free_index_file_name": {
        (17,): "`after` names an existing file, which `taken` has stepped past, so the name never equals it",
    },
    "rmqlab.store.indexservice.x__kept_messages": {
        (12,): "with no messages the running maximum is never read",
    },
    "rmqlab.store.indexservice.x__column": {
        (1, 5, 6): "a DataFrame's .get(name) gives the column or None just the same",
    },
    "rmqlab.store.indexservice.xǁIndexServiceǁtrace_query": {
        (13, 16, 26): "_query sets trace.max_num and trace.files before anything reads them",
    },
    "rmqlab.store.indexservice.xǁDirectoryQueryTraceǁ__str__": {
        (8, 9, 10): "the fallback text is for a searched file without a walk, which _query never produces",
    },
    "rmqlab.store.indexservice.x_query_trace_dict": {
        (28,): "pandas reads to_dict's orient case-insensitively",
    },
    "rmqlab.store.indexservice.x__slice": {
        (1, 8, 12, 13): "pyarrow arrays slice with [lo:hi] as with .slice",
        (4, 6, 7): "given hashes, put_keys never reads the keys, and build_columns slices to the end anyway",
    },
    "rmqlab.store.indexservice.x_bulk_build": {
        (28, 32, 34): "check_index_num has made cap = index_num - 1 >= 1 already",
        (56, 59, 61, 62): "with no keys the hash array is only ever sliced empty",
        (95, 103, 113): "given hashes, build_index_file never reads the keys; without, it hashes the same keys itself",
    },
    "rmqlab.store.indexservice.xǁIndexServiceǁput_message": {
        (1,): "sys_flag 1 is the compressed flag; only the transaction bits (0xC) decide indexing",
    },
    "rmqlab.store.indexservice.x__as_expanded": {
        (9, 11, 15, 16): "a DataFrame's keys() are its columns",
        (35, 43, 47, 48): "the keys stay a pandas Series: the same strings are hashed, and with the hashes given "
                          "the keys are not read again",
        (36, 38, 40): "the same strings as an object array (np.asarray of a str column is an object array)",
    },
    "rmqlab.store.indexservice.x_expand_messages": {
        (34, 36, 38, 40): "ExpandedKeys.__post_init__ converts offsets and times to int64",
    },
    "rmqlab.store.indexservice.xǁIndexServiceǁquery_offsets_many": {
        (28, 30): "index_hash_many returns int32 already",
        (34, 36): "float counters of small integers are exact, and are cast to int32 rooms and int64 starts",
        (50,): "a full list gets room 0, and a walk reads nothing with room 0",
        (80,): "the early exit when every list is full is a shortcut: the files after it read nothing",
        (87, 89, 90): "`who` only orders `flat`, which is empty whenever no file was searched",
        (97,): "NumPy reads the sort kind case-insensitively",
        (103, 105): "an empty float array cast to int64 is the same empty array",
    },
    # indexfile.py
    "rmqlab.formats.indexfile.x_read_header": {
        (8,): "reading the whole file gives the same first 40 bytes (only slower: a benchmark matter)",
    },
    "rmqlab.formats.indexfile.x_time_diff_seconds": {
        (3, 5, 12, 14): "integer arguments are int64 arrays without being told (Python ints in the long range, "
                        "integer arrays), and the subtraction of integer arrays is the same",
        (6,): "NumPy integer array arithmetic (0-d arrays included) wraps without consulting errstate",
        (30,): "below the clamp (2^31 - 1 s) the float quotient is within 1e-6 of the exact one, so "
               "truncating it gives the floor, and the result is cast back to integers",
    },
    "rmqlab.formats.indexfile.x_build_index_file": {
        (3, 32): "forcing the bytes to disk (fsync=True by default, or msync left out on close) shows only after "
                 "a power loss",
        (8, 9): "the temporary name is random either way, and renamed away",
    },
    "rmqlab.formats.indexfile.xǁIndexFileǁselect_phy_offsets_many": {
        (17, 18, 20): "np.clip to [-1, 2^31 - 1] and _clamp_max_num give the same ints for any integer room",
        (28,): "a room of -2 returns nothing, as -1 does",
    },
    "rmqlab.formats.indexfile.xǁIndexFileǁproblems": {
        (18, 21, 51, 53): "np.arange's default integer is int64 on Linux and macOS (and on Windows from NumPy 2)",
        (24,): "int32 hashes are exact in float64, and every use compares them or takes a remainder",
        (133, 141): "a negative hash's slot only needs to differ from every real slot (0 and up): None and -2 do, "
                    "as -1 does, and two of them compare equal alike",
        (149, 151): "the mask is filled with bools and only read through flatnonzero, which treats 0.0/1.0 alike",
        (197, 203): "a file holds at least one entry number (count >= 1): with count 1 the bincount of no "
                    "references cut from 1 is empty too",
        (206, 208): "an empty array has no element to report whatever its dtype",
    },
    "rmqlab.formats.indexfile.xǁIndexFileǁ_walk": {
        (58, 59): "wrap_long leaves Long.MAX_VALUE and Long.MIN_VALUE as they are",
    },
    "rmqlab.formats.indexfile.xǁIndexFileǁtrace_query": {
        (10, 24): "_walk sets trace.slot_value before anything reads it",
    },
    "rmqlab.formats.indexfile.x__head": {
        (2, 4, 8, 9): "lists, NumPy and Arrow arrays all slice with [:n]",
        (11, 13): "hashing every key, not the first n, changes nothing: put_keys keeps only the first `take` hashes",
    },
    "rmqlab.formats.indexfile.x__unpack_header": {
        (5,): "unpack_from's default offset is 0",
        (12,): "an index_count of 1 reads as 1 either way",
    },
    "rmqlab.formats.indexfile.xǁIndexFileǁ__init__": {
        (13,): "_closed=None is as falsy as False",
    },
    "rmqlab.formats.indexfile.xǁIndexFileǁ_view": {
        (1, 2, 13): "without the cache each call makes a new read-only view of the same map: the same values, "
                    "only slower",
    },
    "rmqlab.formats.indexfile.xǁIndexFileǁclose": {
        (1, 2): "sync=False by default (or None passed on) skips msync: the page cache is shared, so only a "
                "kernel crash or power loss could show it",
    },
    "rmqlab.formats.indexfile.xǁIndexFileǁflush": {
        (1,): "the same msync default as close's",
    },
    "rmqlab.formats.indexfile.xǁIndexFileǁcreate": {
        (43,): "mmap's default access on a read-write descriptor is the shared read-write mapping ACCESS_WRITE "
               "asks for",
        (62, 76): "a new file's header is zeros, so setting 0 writes what is there",
    },
    "rmqlab.formats.indexfile.xǁGeometryǁinfer": {
        (24,): "a file of exactly the geometry's size has a whole number of entries after its slots, so `fits` "
               "holds and neither branch raises",
        (19, 70, 95): "1 byte is not a whole number of entries (or slots) either, so it fits (or raises) as 0 "
                      "does",
    },
    "rmqlab.formats.indexfile.xǁIndexFileǁput_keys": {
        (39, 40, 42, 45): "hashing every key, not the first `take`, changes nothing: only the first `take` hashes "
                          "are kept",
        (75, 76, 77, 79): "writing through the descriptor or the map gives the same bytes (Linux's page cache "
                          "keeps the map coherent), and the C loop takes any negative descriptor as none",
    },
    # keyquery.py
    "rmqlab.store.keyquery.x_result_table": {
        (31,): "broker_returned is the bool Series isin gave, so to_numpy() is the same bool array",
        (48, 53, 58): "pandas gives an object array for every text dtype (object, string, string[pyarrow], "
                      "category of str)",
        (72, 76): "the diff's reason and detail are object columns (built from tuples of str), and reindex "
                  "keeps them object with NaN for an offset the diff lacks",
        (5,): "the diff's rows for one offset are identical (an offset the broker returns twice gets the same "
              "reason and detail twice), so dropping whole duplicate rows keeps one per offset too",
    },
    "rmqlab.store.keyquery.x__real_matches": {
        (2, 4): "an empty array of any dtype sets nothing, and query_key makes it an empty bool Series",
        (6, 7): "pandas gives an object array for every text dtype, with None for missing values as asked",
        (27, 29): "key_tokens_many gives a large list array, whose parent indices are int64 already",
        (33, 35, 36): "to_numpy of a large string array is an object array already (zero_copy_only=None is "
                      "as falsy as False)",
    },
    "rmqlab.store.keyquery.x_query_key": {
        (52,): "drop=None is as falsy as False",
        (62, 63, 64): "any index name but phy_offset keeps sort_values from finding phy_offset ambiguous, and the "
                      "index is dropped before anything leaves query_key",
        (68, 71): "_real_match returns a bool array, so the Series is bool without being told",
        (82,): "an empty message table has its columns (drop_duplicates('phy_offset') needs them), and "
               "between() of its empty store_timestamp is the empty bool Series `real` is",
        (174,): "np.unique of no entries is empty: len 0, as the else branch gives",
    },
    "rmqlab.store.keyquery.x_query_many": {
        (152, 195): "notna() and between() give bool Series, whose to_numpy() is bool already",
        (157, 159, 170, 207, 209, 216): "copying the columns or not: each is a fresh array made for the frame, "
                                        "and nothing writes them",
    },
    "rmqlab.store.keyquery.x__compare": {
        (109, 110, 111): "unreachable: a step the broker's walk read with a matching hash and time is always "
                         "returned, so a real match in range found that way is in `returned`",
    },
    "rmqlab.store.keyquery.x__messages_at": {
        (8,): "the general path (distinct offsets, reindexed to the asked ones) gives the same rows in the same "
              "order when the reader answered exactly the offsets asked; only slower",
    },
    "rmqlab.store.keyquery.x__table": {
        (2, 4, 13): "copying the columns or not: each is a fresh array made for the table, and nothing writes them",
    },
    "rmqlab.store.keyquery.xǁKeyQueryǁunreached": {
        (13, 15): "merge's default `on` is the columns both frames share, here phy_offset alone",
        (36,): "drop=None is as falsy as False",
    },
    "rmqlab.store.keyquery.x__take": {
        (1,): "for a NumPy column, .array is a NumpyExtensionArray whose take gives the same values, and the "
              "frame built from it has the same NumPy dtype",
    },
    # the sampled modules (2026-11-30)
    "rmqlab.formats.commitlog.files.x_holds_data": {
        (15,): "a longer first read only moves where the chunked scan starts: either way every byte up to the "
               "file's end is looked at until a non-zero one",
    },
    "rmqlab.rules.dispatch.x_index_keys_many": {
        (63,): "pa.array of an int64 NumPy array is int64 without being told",
    },
    "rmqlab.rules.dispatch.x_tag_keys_many": {
        (5,): "for no tags the Arrow path gives the empty bool array the shortcut builds (checked for a list, "
              "an object array and string and chunked Arrow arrays)",
    },
    "rmqlab.store.recover.x__index": {
        (95,): "the index folder is <root>/index and the root exists (recovery has read the CommitLog in it), so "
               "creating parents creates nothing more",
    },
    "rmqlab.kafka.rebuild.x__with_max_timestamp_offsets": {
        (33,): "with no rows left it is reached only without the column, where `have` is all -1, and "
               "max_timestamp_offsets of no rows is all -1 too (it reads and decodes nothing)",
    },
    "rmqlab.store.recover.xǁ_IndexPlanǁ_header_ok": {
        (33,): "the file's size was checked equal to the geometry's just before, and IndexFile.open with "
               "index_num alone takes hash_slot_num from the size (Geometry.infer: (size - 40 - 20 * index_num) "
               "/ 4), the same count",
    },
    "rmqlab.verify.check_commitlog.xǁMessagesǁlookup": {
        (4,): "np.full of the Python int -1 is int64 without being told",
    },
    "rmqlab.verify.check_consumequeue.x_open_ext": {
        (6,): "strict=None is as falsy as False (ConsumeQueueExt._load reads it only in `if strict and problems`)",
    },
}

#: mutant name -> why it is equivalent
EQUIVALENT: dict[str, str] = {f"{function}__mutmut_{number}": why
                              for function, judged in JUDGED.items()
                              for numbers, why in judged.items() for number in numbers}


def function_label(function: str) -> str:
    """``rmqlab.store.indexservice.xǁIndexServiceǁput_message`` -> ``IndexService.put_message``."""
    name = function.rsplit(".", 1)[-1]
    return name[2:].replace("\u01c1", ".") if name.startswith("x\u01c1") else name[2:]


def equivalents_markdown(module: str) -> str:
    """The judged equivalents of `module` as the Markdown list RESULTS.md shows."""
    prefix = "rmqlab." + MODULES[module][0][len("rmqlab/"):-len(".py")].replace("/", ".") + ".x"
    lines = []
    for function, judged in JUDGED.items():
        if function.startswith(prefix):
            reasons = "; ".join(f"{', '.join(map(str, numbers))}: {why}" for numbers, why in judged.items())
            lines.append(f"- `{function_label(function)}` {reasons}.")
    return "\n".join(lines)


TIMEOUT_MULTIPLIER = 3.0

KILLED = {"killed", "timeout", "segfault", "caught by type check"}


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _toml_table(name: str, table: dict) -> str:
    return f"[{name}]\n" + "".join(f"{key} = {_toml_value(value)}\n" for key, value in table.items())


def prepare(module: str) -> Path:
    """The scratch directory of `module`, with its links and its pyproject.toml."""
    source, tests = MODULES[module]
    work = OUT / module
    work.mkdir(parents=True, exist_ok=True)
    links = {"rmqlab": ROOT / "rmqlab", "tests": ROOT / "tests", "data": ROOT / "data"}
    if SHARED.exists():
        links["shared"] = SHARED
    for name, target in links.items():
        link = work / name
        if not link.is_symlink():
            link.symlink_to(target, target_is_directory=True)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    settings = dict(project["tool"]["mutmut"])
    settings["only_mutate"] = [source]
    # a mutant that loops forever (a walk's cycle guard turned off) is stopped after 3 x 2 times
    # the CPU time its tests take unmutated, not mutmut's 15 x 2: it is a kill either way
    settings["timeout_multiplier"] = TIMEOUT_MULTIPLIER
    settings["pytest_add_cli_args_test_selection"] = [t for t in tests if (ROOT / t.split("::")[0]).exists()]
    text = (_toml_table("tool.pytest.ini_options", project["tool"]["pytest"]["ini_options"]) + "\n"
            + _toml_table("tool.mutmut", settings))
    pyproject = work / "pyproject.toml"
    if not pyproject.exists() or pyproject.read_text() != text:
        pyproject.write_text(text)
    return work


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    # the mutants must be the package imported, not a checkout on the path
    env.pop("PYTHONPATH", None)
    return env


def run(module: str, workers: int, mutants: list[str] = ()) -> None:
    """mutmut run for `module` (only the named `mutants` when given: mutmut keeps earlier
    verdicts and retests only mutants of changed functions unless named), its progress
    in <scratch>/run.log."""
    work = prepare(module)
    _copy_extensions(work)
    started = dt.datetime.now()
    with open(work / "run.log", "w") as log:
        subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(workers), *mutants],
                       cwd=work, env=_environment(), stdout=log, stderr=subprocess.STDOUT, check=False)
    print(f"{module}: mutmut ran {(dt.datetime.now() - started).total_seconds():.0f} s")


def _copy_extensions(work: Path) -> None:
    """mutmut refreshes the copied sources it mutates, not the built extensions beside them."""
    copies = work / "mutants" / "rmqlab"
    for built in (ROOT / "rmqlab").glob("*.so"):
        if copies.is_dir() and (not (copies / built.name).exists()
                                or (copies / built.name).read_bytes() != built.read_bytes()):
            shutil.copy2(built, copies / built.name)


_GENERATE = """
from mutmut.__main__ import copy_also_copy_files, copy_src_dir, create_mutants, setup_source_paths
from mutmut.mutation.trampoline import set_mutant_under_test
set_mutant_under_test("mutant_generation")
copy_src_dir(); copy_also_copy_files(); setup_source_paths(); create_mutants(1)
"""


def refresh(module: str) -> None:
    """Bring the scratch copy up to date with the package, running no test: mutmut's own first
    step copies every source file again and mutates the module anew if it changed (the mutants
    of a changed function lose their verdicts and show as not run)."""
    work = prepare(module)
    subprocess.run([sys.executable, "-c", _GENERATE], cwd=work, env=_environment(), capture_output=True,
                   check=True)
    _copy_extensions(work)


def _function_hashes(module: str) -> dict[str, str]:
    """mutmut's hash of each mutated function of `module` (mangled name -> hash), from its .meta file."""
    meta = OUT / module / "mutants" / (MODULES[module][0] + ".meta")
    return json.loads(meta.read_text()).get("hash_by_function_name", {}) if meta.exists() else {}


def _function_of(name: str) -> str:
    """``rmqlab.x.xǁCǁf__mutmut_3`` -> ``xǁCǁf``, the key of mutmut's function hashes."""
    return name.rsplit(".", 1)[-1].rsplit("__mutmut_", 1)[0]


def checked_kills(module: str) -> dict[str, bool]:
    """The survivor check's verdicts (mutant -> killed) still valid: of mutants whose function
    mutmut has hashed the same since the check."""
    path = OUT / module / "checked.json"
    if not path.exists():
        return {}
    hashes = _function_hashes(module)
    return {name: v["killed"] for name, v in json.loads(path.read_text()).items()
            if hashes.get(_function_of(name)) == v["function_hash"]}


def statuses(module: str) -> dict[str, str]:
    """mutant name -> mutmut's status of it, from the scratch directory's last run."""
    from mutmut.stats import status_by_exit_code

    meta = OUT / module / "mutants" / (MODULES[module][0] + ".meta")
    if not meta.exists():
        return {}
    for attempt in range(20):   # a running mutmut rewrites the file after every mutant
        try:
            codes = json.loads(meta.read_text())["exit_code_by_key"]
            break
        except json.JSONDecodeError:
            if attempt == 19:
                raise
            time.sleep(0.1)
    return {name: status_by_exit_code[code] for name, code in codes.items()}


# the module's source path is given, not looked up with find_mutant: that reads every .meta file
# once per mutant, and a .meta file a running mutmut is rewriting reads as broken JSON
_SHOW = """
import json, sys
import libcst as cst
from mutmut.__main__ import get_diff_for_mutant
from mutmut.mutation.diff_apply import (read_functions_from_index, read_mutant_function,
                                        read_mutants_module, read_original_function)
path, names = json.loads(sys.stdin.read())
out = {}
for n in names:
    functions = read_functions_from_index(n, path)
    if functions is None:
        module = read_mutants_module(path)
        functions = (read_original_function(module, n), read_mutant_function(module, n))
    out[n] = [get_diff_for_mutant(n, path=path)] + [cst.Module([f]).code for f in functions]
print(json.dumps(out))
"""


def diffs(module: str, names: list[str]) -> dict[str, list[str]]:
    """Of each named mutant: [its diff against the original source, the original function, the
    mutated function] (one process for all)."""
    if not names:
        return {}
    shown = subprocess.run([sys.executable, "-c", _SHOW], cwd=OUT / module, env=_environment(),
                           input=json.dumps([MODULES[module][0], names]), capture_output=True, text=True,
                           check=True)
    return json.loads(shown.stdout.strip().splitlines()[-1])


def _without_messages(source: str) -> str:
    """The function's syntax tree with the message of every exception it builds (the first
    argument of a call to ``...Error``/``...Exception``/``...Warning``, when a string or None)
    replaced by one placeholder."""
    tree = ast.parse(textwrap.dedent(source))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        first = node.args[0]
        is_text = isinstance(first, ast.JoinedStr) or (isinstance(first, ast.Constant)
                                                       and (first.value is None or isinstance(first.value, str)))
        if name.endswith(("Error", "Exception", "Warning")) and is_text:
            node.args[0] = ast.Constant("<message>")
    return ast.dump(tree)


def only_a_message_changed(original: str, mutated: str) -> bool:
    """Whether the mutated function differs from the original only in the message of an
    exception it builds (its text changed, or None in its place); a string used any other way
    (a column name, a sort kind, a field name) is behaviour, not a message."""
    try:
        return _without_messages(original) == _without_messages(mutated)
    except SyntaxError:
        return False


def draw(module: str, size: int, seed: int) -> list[str]:
    """`size` of the module's mutants, the same for the same module, size, seed and source: all
    are generated first (no test runs), sorted by name (mutmut numbers them within a function in
    source order) and drawn with a generator seeded by the seed and the module. The draw is kept
    in <scratch>/sample.json for :func:`tally`."""
    refresh(module)
    names = sorted(statuses(module))
    picked = sorted(random.Random(f"{seed}/{module}").sample(names, min(size, len(names))))
    (OUT / module / "sample.json").write_text(json.dumps({"seed": seed, "size": size, "mutants": picked}, indent=1))
    return picked


def sampled(module: str) -> set[str] | None:
    """The mutants of the module's last sampled run, or None when it ran them all."""
    path = OUT / module / "sample.json"
    return set(json.loads(path.read_text())["mutants"]) if path.exists() else None


def tally(module: str) -> dict:
    found = statuses(module)
    picked = sampled(module)
    if picked is not None:      # a sampled run: the mutants not drawn are not part of it
        found = {name: status for name, status in found.items() if name in picked}
    # a survivor (or a mutant without a verdict: mutmut dropped it, or its run was interrupted)
    # the survivor check has killed since is killed; one it ran and did not kill survives
    checked = checked_kills(module)
    by_check = {name for name, status in found.items()
                if status in ("survived", "no tests", "not checked", "suspicious") and checked.get(name)}
    found.update({name: "killed" for name in by_check})
    found.update({name: "survived" for name, status in found.items()
                  if status in ("not checked", "suspicious") and checked.get(name) is False})
    patches = diffs(module, [n for n, s in found.items() if s in ("survived", "no tests") and n not in EQUIVALENT])
    row = {"module": module, "mutants": len(found), "killed": 0, "survived": 0, "timeout": 0,
           "equivalent": 0, "message": 0, "not run": 0, "survivors": [], "by check": len(by_check)}
    for name, status in sorted(found.items()):
        if status in KILLED:
            row["killed"] += 1
            row["timeout"] += status == "timeout"
        elif status == "survived" or status == "no tests":
            if name in EQUIVALENT:
                row["equivalent"] += 1
            elif only_a_message_changed(*patches[name][1:]):
                row["message"] += 1
            else:
                row["survived"] += 1
                row["survivors"].append(name)
        else:
            row["not run"] += 1
    judged = row["mutants"] - row["equivalent"] - row["message"] - row["not run"]
    row["score"] = row["killed"] / judged if judged else float("nan")
    row["generated"] = len(statuses(module))
    row["ci"] = wilson(row["killed"], judged) if picked is not None else None
    row["patches"] = {name: patches[name][0] for name in row["survivors"]}
    return row


_CHECK = """
import json, os, signal, sys
sys.path.insert(0, os.getcwd())                # the mutated copy, not the package
tests, module, names, workers, limit = json.loads(sys.stdin.read())
import importlib, pytest
importlib.import_module(module)                # imported once, before the forks
codes, running = {}, {}
def reap():
    pid, status = os.wait()
    name = running.pop(pid)
    codes[name] = os.waitstatus_to_exitcode(status)
    print(name, codes[name], file=sys.stderr, flush=True)
for name in names:
    while len(running) >= workers:
        reap()
    pid = os.fork()
    if pid == 0:
        os.environ["MUTANT_UNDER_TEST"] = name
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        signal.alarm(limit)                    # a mutant that loops forever dies of SIGALRM
        os._exit(int(pytest.main(["-q", "-x", "-p", "no:cacheprovider", *tests])))
    running[pid] = name
while running:
    reap()
print(json.dumps(codes))
"""

#: seconds a mutant may take the added tests (unmutated they take a few)
CHECK_LIMIT = 120


def check_survivors(module: str, names: list[str], workers: int = 2, every_test: bool = False) -> dict[str, bool]:
    """Whether the module's added tests (:data:`EDGE_TESTS`, as they are now;
    with `every_test`, they first and then the rest of its test selection, for mutants whose
    function mutmut found no test for) kill each named mutant: the scratch copy is refreshed
    (:func:`refresh`), the mutated module imported once, and each mutant switched on by mutmut's
    MUTANT_UNDER_TEST in a forked pytest run (`workers` at a time); a failed test or a run past
    CHECK_LIMIT seconds kills it, as in mutmut. The verdicts, with the hash of the mutated
    function they hold for, are kept in <scratch>/checked.json, and :func:`tally` counts a
    survivor the check killed as killed: the tests run are part of the module's test selection,
    so mutmut's run would kill it too."""
    refresh(module)
    gaps = EDGE_TESTS.get(module, MODULES[module][1][0])
    tests = [gaps] + [t for t in MODULES[module][1] if every_test and t != gaps]
    dotted = MODULES[module][0][:-len(".py")].replace("/", ".")
    job = json.dumps([[str(ROOT / t) for t in tests], dotted, names, workers, CHECK_LIMIT])
    done = subprocess.run([sys.executable, "-c", _CHECK], cwd=OUT / module / "mutants", env=_environment(),
                          input=job, stdout=subprocess.PIPE, text=True, check=True)
    codes = json.loads(done.stdout.strip().splitlines()[-1])
    hashes = _function_hashes(module)
    path = OUT / module / "checked.json"
    kept = json.loads(path.read_text()) if path.exists() else {}
    killed = {name: codes[name] in (1, -14) for name in names}
    kept.update({name: {"killed": killed[name], "exit": codes[name], "function_hash": hashes.get(_function_of(name))}
                 for name in names})
    path.write_text(json.dumps(kept, indent=1))
    return killed


def table(rows: list[dict]) -> str:
    lines = ["| module | mutants | run | killed (timeouts; by the survivor check) | equivalent | message only "
             "| survived | score (95 % CI of a sample) |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        run = r["mutants"] - r["not run"]
        mutants = f"{r['generated']:,} (sampled {r['mutants']})" if r["ci"] else f"{r['mutants']:,}"
        ci = f" ({100 * r['ci'][0]:.0f}–{100 * r['ci'][1]:.0f} %)" if r["ci"] else ""
        lines.append(f"| {MODULES[r['module']][0][len('rmqlab/'):]} | {mutants} | {run:,} | "
                     f"{r['killed']:,} ({r['timeout']}; {r['by check']}) | {r['equivalent']} | {r['message']} | "
                     f"{r['survived']} | {100 * r['score']:.1f} %{ci} |")
    return "\n".join(lines)


def report(rows: list[dict], args: argparse.Namespace) -> None:
    """The C part (benchmarks/mutation_c.py, `args.c_sample` mutants a file, the same seed), then
    both tables and every survivor in benchmarks/out/mutation/report.md."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import mutation_c

    mutation_c.main(["--sample", str(args.c_sample), "--seed", str(args.seed)]
                    + (["--report-only"] if args.report_only else []))
    survivors = []
    for r in rows:
        survivors += [f"- `{name}`\n  ```\n  {r['patches'][name].strip().replace(chr(10), chr(10) + '  ')}\n  ```"
                      for name in r["survivors"]]
    text = (f"# Mutation testing (seed {args.seed}; Python: "
            f"{'as each was last run' if args.sample is None else f'{args.sample} a module'}; "
            f"C: {args.c_sample} a file)\n\n"
            f"## Python (mutmut)\n\n{table(rows)}\n\nSurvivors:\n{chr(10).join(survivors) or 'none'}\n\n"
            f"## C (source mutants, compiled one by one)\n\n{(mutation_c.OUT / 'summary.md').read_text()}")
    (OUT / "report.md").write_text(text)
    print(f"report: {(OUT / 'report.md').relative_to(ROOT)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*",
                        help=f"of {', '.join(MODULES)}, or `all`; default: the first five, smallest first")
    parser.add_argument("--workers", type=int, default=2, help="mutmut's parallel test processes")
    parser.add_argument("--report-only", action="store_true", help="tabulate the last runs, run nothing")
    parser.add_argument("--survivors", action="store_true", help="print the diff of each counted survivor")
    parser.add_argument("--check-survivors", action="store_true",
                        help="run the added tests against each counted survivor of the last run")
    parser.add_argument("--every-test", action="store_true",
                        help="with --check-survivors: the module's whole test selection, the added tests first")
    parser.add_argument("--rerun-survivors", action="store_true",
                        help="retest only the last run's counted survivors (after tests were added)")
    parser.add_argument("--equivalents", action="store_true",
                        help="print the judged equivalents of each module as RESULTS.md lists them")
    parser.add_argument("--sample", type=int, metavar="N",
                        help="run N mutants of each module, drawn with --seed from all it has (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="the draw's seed (default 0)")
    parser.add_argument("--c-sample", type=int, metavar="N",
                        help="then the C files, N mutants of each (benchmarks/mutation_c.py), and one report "
                             "of both in benchmarks/out/mutation/report.md")
    args = parser.parse_args()
    modules = args.modules or FIRST
    if modules == ["all"]:
        modules = FIRST + [m for m in MODULES if m not in FIRST]
    unknown = set(modules) - set(MODULES)
    if unknown:
        parser.error(f"unknown modules {sorted(unknown)}: choose from {', '.join(MODULES)}")
    if args.equivalents:
        for module in modules:
            print(f"{MODULES[module][0]}:\n{equivalents_markdown(module)}\n")
        return
    previous = json.loads((OUT / "survivors.json").read_text()) if (OUT / "survivors.json").exists() else {}
    if args.rerun_survivors:
        for module in modules:
            if previous.get(module):
                run(module, args.workers, previous[module])
    elif not (args.report_only or args.survivors or args.check_survivors):
        for module in modules:
            if args.sample is not None:
                run(module, args.workers, draw(module, args.sample, args.seed))
            else:
                (OUT / module / "sample.json").unlink(missing_ok=True)
                run(module, args.workers)
    rows = [tally(m) for m in modules if statuses(m)]
    text = table(rows)
    print(text)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "summary.md").write_text(text + "\n")
    last = json.loads((OUT / "survivors.json").read_text()) if (OUT / "survivors.json").exists() else {}
    last.update({r["module"]: r["survivors"] for r in rows})
    (OUT / "survivors.json").write_text(json.dumps(last, indent=1))
    if args.c_sample is not None:
        report(rows, args)
    if args.check_survivors:
        for r in rows:
            # survivors, earlier survivors whose verdict mutmut dropped, and mutants whose run was
            # interrupted (mutmut stopped)
            found = statuses(r["module"])
            unrun = [n for n, s in found.items()
                     if s == "suspicious" or (s == "not checked" and n in previous.get(r["module"], []))]
            now = check_survivors(r["module"], sorted(set(r["survivors"]) | set(unrun)), args.workers,
                                  args.every_test)
            print(f"{r['module']}: the added tests kill {sum(now.values())} of {len(now)} checked")
        rows = [tally(m) for m in modules if statuses(m)]
        text = table(rows)
        print(text)
        (OUT / "summary.md").write_text(text + "\n")
        last.update({r["module"]: r["survivors"] for r in rows})
        (OUT / "survivors.json").write_text(json.dumps(last, indent=1))
        return
    for r in rows:
        for name in r["survivors"]:
            print(f"{r['module']}: survived {name}")
            if args.survivors:
                print(r["patches"][name])


if __name__ == "__main__":
    main()
