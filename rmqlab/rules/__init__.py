"""The broker's rules, each written once, on values and columns (no files): what dispatch does
with each CommitLog message (:mod:`~rmqlab.rules.dispatch`), how the PROPERTIES block splits
(:mod:`~rmqlab.rules.properties`), which layout facts hold for which broker release
(:mod:`~rmqlab.rules.versions`), and which topics are the broker's own
(:mod:`~rmqlab.rules.topics`). The formats and everything above them apply these rules.
"""
