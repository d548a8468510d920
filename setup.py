"""Only the C accelerators are declared here; everything else lives in pyproject.toml.

Small extension modules, no NumPy C API (they exchange data through the buffer protocol):
  rmqlab._jhash      Java String.hashCode over Python str, NumPy and Arrow string arrays
  rmqlab._indexcore  the IndexFile put and select loops over a memory-mapped file
  rmqlab._records    the CommitLog record walk, CRC32 of many spans, span copies, property scan,
                     and all of them in one decode pass
  rmqlab._crc32c     CRC-32C (Castagnoli) of Kafka's record batches, one buffer or many spans
  rmqlab._kafkalog   the Kafka segment's batch walk and the offset index rule's picks
  rmqlab._dispatchcore  the dispatch's index key hashes, straight from the message columns
  rmqlab._textrows   text lines made column by column (decimal ints, choices, literals)
  rmqlab._sortedsearch  searchsorted for rising int64 needles (the joins of verify)
  rmqlab._filestamps  link counts and modification times of open descriptors (an open store's check)
"""
from setuptools import Extension, setup

FLAGS = ["-O3", "-std=c99", "-Wall"]
HEADERS = ["rmqlab/_native/bigendian.h", "rmqlab/_native/codedict.h", "rmqlab/_native/vec64.h"]

setup(
    ext_modules=[
        Extension("rmqlab._jhash", sources=["rmqlab/_native/jhash.c"], depends=["rmqlab/_native/javahash.h"],
                  extra_compile_args=FLAGS + ["-pthread"], extra_link_args=["-pthread"]),
        Extension("rmqlab._indexcore", sources=["rmqlab/_native/indexcore.c"],
                  depends=HEADERS + ["rmqlab/_native/javahash.h"],
                  extra_compile_args=FLAGS + ["-pthread"], extra_link_args=["-pthread"]),
        Extension("rmqlab._records", sources=["rmqlab/_native/records.c"], depends=HEADERS,
                  extra_compile_args=FLAGS),
        Extension("rmqlab._crc32c", sources=["rmqlab/_native/crc32c.c"], extra_compile_args=FLAGS),
        Extension("rmqlab._kafkalog", sources=["rmqlab/_native/kafkalog.c"], depends=HEADERS,
                  extra_compile_args=FLAGS),
        Extension("rmqlab._dispatchcore", sources=["rmqlab/_native/dispatchcore.c"],
                  depends=["rmqlab/_native/javahash.h"], extra_compile_args=FLAGS),
        Extension("rmqlab._textrows", sources=["rmqlab/_native/textrows.c"], extra_compile_args=FLAGS),
        Extension("rmqlab._sortedsearch", sources=["rmqlab/_native/sortedsearch.c"], extra_compile_args=FLAGS),
        Extension("rmqlab._filestamps", sources=["rmqlab/_native/filestamps.c"], extra_compile_args=FLAGS),
    ]
)
