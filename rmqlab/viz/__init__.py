"""Figures of index files (matplotlib), for notebooks, scripts and reports.

Every figure function returns a :class:`matplotlib.figure.Figure` built with the
object-oriented API (``Figure()`` directly, never pyplot): nothing is shown and nothing is
left open in pyplot's registry, so they work the same in a notebook (the figure displays
as the cell's value), in a script (``fig.savefig("x.png")``) and on a headless server.

* :func:`slot_occupancy_image` - one pixel per hash slot, coloured by chain length;
  :func:`slot_chain_lengths` is the exact data behind it.
* :func:`chain_length_histogram_figure` - the chain-length distribution against the
  Poisson expectation of an ideal uniform hash.
* :func:`entries_over_time` - entries per time bin and the time span of every file of a folder.
"""
from rmqlab.viz.figures import (
    chain_length_histogram_figure,
    entries_over_time,
    slot_chain_lengths,
    slot_occupancy_image,
)

__all__ = [
    "slot_chain_lengths",
    "slot_occupancy_image",
    "chain_length_histogram_figure",
    "entries_over_time",
]
