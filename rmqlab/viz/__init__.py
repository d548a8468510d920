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
* :func:`stored_time_lag_figure` - how far each entry's stored time lies before the real one.
* :func:`file_stats_figure` - per file of a folder, non-empty slots against a uniform hash's
  share, and the mean and longest chains (from :func:`rmqlab.analysis.indexstats.directory_stats`).
* :func:`query_walk_figure` - a key query's walk, file by file and entry by entry, coloured by
  what each entry read did (returned, hash match outside the time range, another key), and why
  each walk stopped; :func:`walk_table` is the exact data behind it.
* :func:`annotated_hex_figure` - the header, some slots and some entries as a hex dump, each
  field shaded and decoded; :func:`hex_fields` is the table behind it.
* :func:`load_factor_figure`, :func:`load_factor_comparison_figure` - chain lengths and query
  costs a (hash_slot_num, index_num) configuration implies for uniform hashes (theory in
  :func:`rmqlab.analysis.indexstats.chain_length_theory`); :func:`disk_usage_figure`,
  :func:`disk_fan_figure`, :func:`percentile_ranges_figure` and
  :func:`index_fill_time_figure` (with :func:`rmqlab.capacity.model.hours_to_fill`) - disk bytes over days (likely
  and as a Monte Carlo fan), the spread of the outputs, and the time to fill an index file, for capacity planning.

The capacity report (:mod:`rmqlab.viz.capacityreport`): those charts drawn for a plan's
analysis (:func:`rmqlab.capacity.analysis.analyse_plan`), the report as one self-contained HTML
page and the notebook tables.

Widgets (ipywidgets; imported on first use, so ``import rmqlab.viz`` does not load them):

* :class:`QueryExplorer` - a key query on a store in broker and verified mode, with a
  millisecond time-range slider, the results, the trace and the walk diagram.
* :class:`InsertionStepper` - put keys one at a time into a tiny real file and watch the
  header, slots and entries change.
* :class:`SlotBrowser` - the occupancy of a whole file, a page of slots as buttons, and the
  chain of the slot clicked.
* :class:`PlanExplorer` - sliders for the main inputs of a capacity plan, the estimate and
  charts redrawn on every change.

Needs the ``viz`` extra (``pip install 'rmqlab[viz]'``); without it, importing this package
raises :class:`rmqlab.extras.MissingExtraError`.
"""
from rmqlab.extras import require

# Before the figure modules, which import matplotlib at their top: without the extra, importing
# this package raises MissingExtraError rather than ModuleNotFoundError, hence the late imports.
require("viz", "matplotlib", "rmqlab.viz")

from rmqlab.viz.fonts import use_fallback_fonts  # noqa: E402

# Chinese and emoji keys draw as boxes in DejaVu alone: fall back to the CJK and emoji fonts
# make installs (rmqlab/viz/fonts.py).
use_fallback_fonts()

from rmqlab.viz.capacity import (  # noqa: E402
    disk_fan_figure,
    disk_usage_figure,
    index_fill_time_figure,
    load_factor_comparison_figure,
    load_factor_figure,
    percentile_ranges_figure,
)
from rmqlab.viz.figures import (  # noqa: E402
    chain_length_histogram_figure,
    entries_over_time,
    file_stats_figure,
    slot_chain_lengths,
    slot_occupancy_image,
    stored_time_lag_figure,
)
from rmqlab.viz.hexview import (  # noqa: E402
    annotated_hex_figure,
    batch_hex_fields,
    ext_hex_fields,
    fields_hex_figure,
    hex_fields,
)
from rmqlab.viz.walk import query_walk_figure, walk_table  # noqa: E402

__all__ = [
    "slot_chain_lengths",
    "slot_occupancy_image",
    "chain_length_histogram_figure",
    "entries_over_time",
    "file_stats_figure",
    "stored_time_lag_figure",
    "walk_table",
    "query_walk_figure",
    "hex_fields",
    "annotated_hex_figure",
    "ext_hex_fields",
    "batch_hex_fields",
    "fields_hex_figure",
    "load_factor_figure",
    "load_factor_comparison_figure",
    "disk_usage_figure",
    "disk_fan_figure",
    "percentile_ranges_figure",
    "index_fill_time_figure",
    "QueryExplorer",
    "InsertionStepper",
    "SlotBrowser",
    "PlanExplorer",
]



def _show_figures_inline() -> None:
    """Under IPython (a notebook, Voilà), make a Figure that ends a cell display as a picture.

    Figures here are made with ``Figure()``, not pyplot, so without ``%matplotlib inline`` the
    kernel shows only ``<Figure size ...>``. A formatter the user chose already is kept."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return
    from matplotlib.figure import Figure

    formatters = shell.display_formatter.formatters.values()
    if any(Figure in f.type_printers for f in formatters if hasattr(f, "type_printers")):
        return
    from IPython.core.pylabtools import select_figure_formats

    select_figure_formats(shell, {"png"}, bbox_inches="tight")


_show_figures_inline()

_WIDGETS = {"QueryExplorer": "rmqlab.viz.explorer", "InsertionStepper": "rmqlab.viz.stepper",
            "SlotBrowser": "rmqlab.viz.slotbrowser", "PlanExplorer": "rmqlab.viz.planexplorer"}


def __getattr__(name):
    if name in _WIDGETS:
        import importlib

        require("viz", "ipywidgets", f"rmqlab.viz.{name}")
        return getattr(importlib.import_module(_WIDGETS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
