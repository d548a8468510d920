"""Sliders for a capacity plan, in a notebook: :class:`PlanExplorer` moves the main inputs of a
:class:`~rmqlab.capacity.plan.Plan` (rate, keys per message, retention, hash_slot_num,
index_num) and shows the estimate, the disk usage and the load factor at each change. The
capacity report's page, figures and tables are :mod:`rmqlab.viz.capacityreport`.
"""
from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import pandas as pd

from rmqlab.capacity.analysis import RESULT_ROWS, PlanAnalysis, Recommendation
from rmqlab.capacity.model import Estimate, estimate
from rmqlab.capacity.plan import Interval, Plan, PlanError
from rmqlab.tables.display import format_value
from rmqlab.viz.capacity import load_factor_figure
from rmqlab.viz.capacityreport import _disk_figure, _table, _table_box
from rmqlab.viz.widgetkit import WidgetBase, figure_png

__all__ = ["EXPLORER_INPUTS", "PlanExplorer"]

#: The explorer's sliders: dotted plan field -> (label, min, max, step, int?, readout format: a
#: d3-format string, with thousands separators as rmqlab.tables.display writes counts).
EXPLORER_INPUTS: dict[str, tuple[str, float, float, float, bool, str]] = {
    "traffic.messages_per_second": ("messages/s", 10, 50_000, 10, False, ",.0f"),
    "keys.keys_per_message": ("keys/message", 1, 8, 0.1, False, ".1f"),
    "retention.file_reserved_time_hours": ("retention h", 1, 720, 1, False, ",.0f"),
    "index.hash_slot_num": ("hash slots", 100_000, 20_000_000, 100_000, True, ",d"),
    "index.index_num": ("index entries", 1_000_000, 80_000_000, 1_000_000, True, ",d"),
}


class PlanExplorer(WidgetBase):
    """Sliders for the main inputs of a plan (rate, keys per message, retention, hash_slot_num,
    index_num); each change re-runs :func:`estimate` on ``plan.replace({field: value})`` (a
    slider sets its field to one value, no interval) and redraws the results table, the disk
    usage and the load-factor charts. An invalid combination (index_num below hash_slot_num)
    shows the PlanError's message instead. Cost per change: one :func:`estimate`, whose key
    sample hashes at most :data:`~rmqlab.capacity.model.SAMPLE_ENTRIES` keys with the fast,
    scaled-down files (``whole_files=True``: the index_num - 1 keys of a whole full-size file, as
    the command line does), plus drawing two figures.

    ``explorer.set(**{"traffic.messages_per_second": 2000})`` moves sliders from code and
    ``explorer.reset()`` moves them back to the plan; :attr:`plan` and :attr:`estimate` are
    the current ones; :attr:`widget` is what a notebook shows.
    """

    def __init__(self, plan: Plan, *, sample: bool = True, whole_files: bool = False, dpi: int = 96):
        if not isinstance(plan, Plan):
            raise TypeError(f"plan must be a Plan, got {type(plan).__name__}")
        self.base = plan
        self.plan = plan
        self._sample = sample
        self._whole_files = whole_files
        self._dpi = dpi
        self.error: str | None = None
        self.sliders: dict[str, Any] = {}
        for path, (label, lo, hi, step, integer, readout) in EXPLORER_INPUTS.items():
            value = self._value_of(plan, path)
            lo, hi = min(lo, value), max(hi, value)
            cls = widgets.IntSlider if integer else widgets.FloatSlider
            s = cls(value=int(value) if integer else value, min=lo, max=hi, step=step, description=label,
                    readout_format=readout, continuous_update=False, style={"description_width": "110px"},
                    layout=widgets.Layout(width="520px"))
            s.add_class("rmqlab-plan-" + path.replace(".", "-").replace("_", "-"))
            s.observe(self._on_change, names="value")
            self.sliders[path] = s
        self.status = widgets.HTML()
        self.table = widgets.HTML()
        self.disk_image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.load_image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.widget = widgets.VBox([widgets.VBox(list(self.sliders.values())), self.status, self.table,
                                    self.disk_image, self.load_image])
        self.widget.add_class("rmqlab-plan-explorer")
        self.estimate: Estimate | None = None
        self._update()

    @staticmethod
    def _value_of(plan: Plan, path: str) -> float:
        sec, key = path.split(".")
        v = getattr(getattr(plan, sec), key)
        return v.likely if isinstance(v, Interval) else v

    def changes(self) -> dict[str, Any]:
        """The slider values as ``Plan.replace`` changes (only those differing from the base)."""
        out = {}
        for path, s in self.sliders.items():
            if s.value != self._value_of(self.base, path):
                out[path] = s.value
        return out

    def set(self, changes: Mapping[str, Any] | None = None, **plain: Any) -> None:
        """Move sliders (by dotted field) and update once."""
        self._hold = True
        try:
            for path, value in {**(changes or {}), **plain}.items():
                if path not in self.sliders:
                    raise ValueError(f"no slider for {path!r}; sliders: {', '.join(self.sliders)}")
                self.sliders[path].value = value
        finally:
            self._hold = False
        self._update()

    def reset(self) -> None:
        """Every slider back to the plan it was made with (its likely values), and update once:
        what a notebook leaves on show after trying other values from code."""
        self.set({path: self._value_of(self.base, path) for path in self.sliders})

    def _on_change(self, _change) -> None:
        if not getattr(self, "_hold", False):
            self._update()

    def _update(self) -> None:
        try:
            plan = self.base.replace(self.changes())
        except PlanError as e:
            self.error = str(e)
            self.status.value = f'<div class="rmqlab-error" style="color:#b00020">{html.escape(str(e))}</div>'
            return
        self.error = None
        self.status.value = ""
        self.plan = plan
        self.estimate = estimate(plan, sample=self._sample, whole_files=self._whole_files)
        e = self.estimate.as_dict()
        rows = [(label, format_value(e[name], kind)) for name, label, kind in RESULT_ROWS]
        self.table.value = _table_box(_table(["output", "likely"], rows, css_class="rmqlab-plan-results"))
        analysis = PlanAnalysis(plan=plan, samples=0, seed=plan.seed, estimate=self.estimate,
                                monte_carlo=pd.DataFrame(), configurations=(), recommendation=
                                Recommendation("", True, ""), kafka_record_bytes=0, kafka=None)
        self.disk_image.value = figure_png(_disk_figure(analysis), dpi=self._dpi)
        self.load_image.value = figure_png(load_factor_figure(plan.index.hash_slot_num, plan.index.index_num),
                                           dpi=self._dpi)
