"""Column helpers every layer shares: NumPy operations NumPy lacks or has only in a slow form
(:mod:`~rmqlab.tables.arrays`), Arrow columns and their buffers (:mod:`~rmqlab.tables.arrow`),
where a sparse file holds data (:mod:`~rmqlab.tables.spans`), and how times and numbers print
in a table (:mod:`~rmqlab.tables.times`, :mod:`~rmqlab.tables.display`). Nothing here knows a
broker rule or a file format.
"""
