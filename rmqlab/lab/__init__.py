"""Experiments: synthetic workloads (:mod:`~rmqlab.lab.workload`) written as whole stores
(:mod:`~rmqlab.lab.generate`), the sample store the notebooks read (:mod:`~rmqlab.lab.sample`),
the crash harness (:mod:`~rmqlab.lab.crash`) and the dispatch-lag measurement
(:mod:`~rmqlab.lab.reputlag`). They drive the store engine; nothing below imports them.
"""
