"""Figures draw Chinese and emoji keys with real glyphs, not boxes: DejaVu first, then the CJK and
emoji fonts `make` installs (.ci/ensure-fonts), as matplotlib's per-glyph fallback list."""
from __future__ import annotations

import io
import warnings

import pytest
from matplotlib.figure import Figure
from oracles import missing

from rmqlab.viz import fonts

UNICODE_KEYS = "订单#42  T#🚀  主题#键😀"


def _missing_glyph_warnings(family) -> list[str]:
    fig = Figure(figsize=(4, 1))
    fig.text(0.05, 0.5, UNICODE_KEYS, family=family)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(io.BytesIO(), format="png")
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


def _require_fallback_fonts():
    absent = [f for f in fonts.FALLBACKS if not fonts.installed(f)]
    if absent:
        missing(f"the fonts {absent}", "make fonts (as root), or apt-get install fonts-noto-cjk fonts-symbola")


def test_dejavu_comes_first_and_only_installed_fallbacks_follow():
    assert fonts.SANS[0] == "DejaVu Sans" and fonts.MONO[0] == "DejaVu Sans Mono"
    assert all(fonts.installed(f) for f in fonts.SANS + fonts.MONO)
    assert not fonts.installed("No Such Font Family")


def test_importing_viz_makes_the_fallback_list_the_default():
    from matplotlib import rcParams

    import rmqlab.viz  # noqa: F401

    fonts.use_fallback_fonts()
    assert list(rcParams["font.family"]) == fonts.SANS


@pytest.mark.parametrize("family", ["SANS", "MONO"])
def test_unicode_keys_get_real_glyphs(family):
    _require_fallback_fonts()
    # DejaVu alone lacks them (the check can fail) ...
    assert _missing_glyph_warnings(getattr(fonts, family)[0])
    # ... the fallback list has every one
    assert _missing_glyph_warnings(getattr(fonts, family)) == []
