"""Fonts for the figures: DejaVu first, then fallbacks for the glyphs it lacks.

Index keys are any Unicode text (``订单#42``, ``T#🚀``), and DejaVu, the only family a fresh
machine has, has neither Chinese nor emoji: matplotlib draws them as empty boxes. Matplotlib
(3.6 and later) falls back glyph by glyph along a list of families, so :data:`SANS` and
:data:`MONO` are DejaVu followed by the fallbacks this machine has installed: Noto Sans CJK
(Debian's fonts-noto-cjk) and Symbola (fonts-symbola: emoji as outlines; matplotlib cannot
scale the colour bitmaps of Noto Color Emoji). ``make`` installs those packages when run as
root (.ci/ensure-fonts). :func:`use_fallback_fonts` puts :data:`SANS` in matplotlib's
``font.family``; importing :mod:`rmqlab.viz` calls it once.

Cost: one look-up in matplotlib's font list per family, at import.

>>> SANS[0], MONO[0]
('DejaVu Sans', 'DejaVu Sans Mono')
>>> set(SANS[1:]) <= set(FALLBACKS)
True
"""
from __future__ import annotations

import logging

from matplotlib import font_manager, rcParams

__all__ = ["FALLBACKS", "SANS", "MONO", "SMALL", "TEXT", "TITLE", "installed", "use_fallback_fonts"]

#: Fallback families, in the order matplotlib tries them for a glyph DejaVu lacks.
FALLBACKS = ("Noto Sans CJK JP", "Symbola")
_MONO_FALLBACKS = ("Noto Sans Mono CJK JP", "Symbola")


def installed(family: str) -> bool:
    """True when matplotlib finds a font of `family` (no substitution).

    >>> installed("DejaVu Sans"), installed("No Such Font Family")
    (True, False)
    """
    try:
        font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
    except ValueError:
        return False
    return True


#: DejaVu Sans and the installed fallbacks: a family list for ``fontfamily=`` / rcParams.
SANS = ["DejaVu Sans"] + [f for f in FALLBACKS if installed(f)]
#: DejaVu Sans Mono and the installed fallbacks, for hex dumps and tables drawn as text.
MONO = ["DejaVu Sans Mono"] + [f for f in _MONO_FALLBACKS if installed(f)]


def _not_a_bold_fallback(record: logging.LogRecord) -> bool:
    # Symbola has one weight: bold text with it in the list would log a warning per figure
    # (into the notebook's output), though DejaVu draws every glyph it has in bold.
    return "Failed to find font weight" not in record.getMessage()


def use_fallback_fonts() -> None:
    """Make :data:`SANS` matplotlib's default family list (``rcParams["font.family"]``), so every
    text of a figure falls back to CJK and emoji glyphs where DejaVu has none. Figures made
    after the call are affected. Cost: none beyond setting one parameter."""
    rcParams["font.family"] = list(SANS)
    logger = logging.getLogger("matplotlib.font_manager")
    if _not_a_bold_fallback not in logger.filters:
        logger.addFilter(_not_a_bold_fallback)


# Font sizes of the figures, points: the one place they are set. Notebooks show a figure at its
# dpi (100: a point is 1.39 px) in a page column of about 1100 px that shrinks wider pictures;
# the widgets' Image shows 80 dpi (a point is 1.11 px). Nine pixels is the smallest text a
# reader reads comfortably on a screen: 6.5 points inline, 8.1 points in a widget.

#: The smallest text of a figure (notes, arrow labels, box contents): 11.8 px inline, 9.4 px in a widget.
SMALL = 8.5
#: Ordinary text: axis labels, box titles, legends.
TEXT = 9.5
#: Titles.
TITLE = 10.5
