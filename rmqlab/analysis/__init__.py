"""Analyses of indexes and stores, returned as DataFrames and small records that the figures
draw: index statistics (:mod:`~rmqlab.analysis.indexstats`), the keys a store's messages carry
(:mod:`~rmqlab.analysis.keys`), clock steps (:mod:`~rmqlab.analysis.clocksteps`), the store's
data flow (:mod:`~rmqlab.analysis.storeflow`), the rules of an index walk
(:mod:`~rmqlab.analysis.walkrules`), buildIndex step by step (:mod:`~rmqlab.analysis.buildsteps`)
and RocketMQ's indexes beside Kafka's (:mod:`~rmqlab.analysis.compare`).
"""
