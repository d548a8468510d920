"""Kafka's on-disk formats and rules, kept beside RocketMQ's for comparison.

- :mod:`rmqlab.kafka.index`      ``.index`` / ``.timeindex``: read, look up and write exactly as the broker
- :mod:`rmqlab.kafka.log`        magic v2 record batches of a ``.log`` segment: walk, CRC-32C, decode, write
- :mod:`rmqlab.kafka.legacy`     magic v0/v1 message sets (pre-0.11): wrappers, CRC-32, writing, index rule by release
- :mod:`rmqlab.kafka.columns`    the records a caller hands the writers (rows or columns), as columns
- :mod:`rmqlab.kafka.rebuild`    the index entries a broker writes for a segment; rebuild and verify
- :mod:`rmqlab.kafka.partition`  a partition directory written from a workload, rolled as the broker rolls it
- :mod:`rmqlab.kafka.internal_topics`  ``__consumer_offsets`` / ``__transaction_state`` records; committed offsets
- :mod:`rmqlab.kafka.protocol`   Kafka's message-schema primitives (varints, compact strings/arrays, tagged fields)
- :mod:`rmqlab.kafka.control`    control records: COMMIT/ABORT markers, LeaderChange, snapshot header/footer, KRaft
- :mod:`rmqlab.kafka.kraft`      KRaft metadata records and snapshots (``<end>-<epoch>.checkpoint``, bootstrap)
- :mod:`rmqlab.kafka.producer_state` producer-state ``.snapshot`` files (version 1, CRC-32C)
- :mod:`rmqlab.kafka.txnindex`   ``.txnindex``: the aborted transactions of a segment
- :mod:`rmqlab.kafka.dirfiles`   every non-segment file of a partition directory: classify and check
- :mod:`rmqlab.kafka.logdir`     a log directory's checkpoints, meta.properties, clean-shutdown marker vs its partitions
- :mod:`rmqlab.kafka.groups`     consumer groups offline: committed offsets, log end offsets, lag, group state

:mod:`rmqlab.analysis.compare` is the one module that uses both systems.
"""
