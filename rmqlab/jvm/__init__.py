"""Java's semantics where the broker's bytes depend on them: ``String.hashCode`` over UTF-16
units (:mod:`~rmqlab.jvm.hashcode`) and the ranges and overflow of ``long`` and ``int``
(:mod:`~rmqlab.jvm.longs`). The lowest layer with NumPy; it imports nothing else of rmqlab.
"""
