"""The store engine: a broker's store directory as one object (:mod:`~rmqlab.store.directory`,
:class:`~rmqlab.store.directory.Store`), the reput that dispatches its CommitLog
(:mod:`~rmqlab.store.reput`), the IndexService over a folder of index files
(:mod:`~rmqlab.store.indexservice`), queries by key in broker and verified mode
(:mod:`~rmqlab.store.keyquery`), crash recovery (:mod:`~rmqlab.store.recover`) and a
consumer's pull (:mod:`~rmqlab.store.pull`). Built on :mod:`rmqlab.formats` and
:mod:`rmqlab.rules`; the checks (:mod:`rmqlab.verify`) and analyses sit above it.
"""
