"""Optional dependencies: the core install reads and queries files with NumPy, pandas and
PyArrow only; Spark, figures and widgets, and the notebooks come with extras.

A module of an extra is imported through :func:`require`, so that a core-only install says
which extra to install instead of failing with a bare ``No module named ...``.

>>> require("viz", "matplotlib", "rmqlab.viz").__name__
'matplotlib'
"""
from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRAS", "MissingExtraError", "require"]

#: The extras a user installs (``pip install 'rmqlab[viz]'``) and what each brings; the ``dev``
#: extra (all of them plus the test tools) is for working on rmqlab itself.
EXTRAS: dict[str, str] = {
    "spark": "pyspark: index builds and statistics with Spark",
    "viz": "matplotlib, ipywidgets: figures and interactive explorers",
    "lab": "jupyterlab, voila: the notebooks and the stand-alone apps",
    "rocksdb": "rocksdict: the RocksDB ConsumeQueue and config of a 5.2+ store with storeType=defaultRocksDB",
}


class MissingExtraError(ImportError):
    """A module of an optional extra is not installed; the message names the extra to install."""

    def __init__(self, extra: str, module: str, needed_by: str):
        self.extra = extra
        self.needed_by = needed_by
        super().__init__(f"{needed_by} needs the {extra!r} extra: pip install 'rmqlab[{extra}]' "
                         f"({module.partition('.')[0]} is not installed)", name=module)


def require(extra: str, module: str, needed_by: str) -> ModuleType:
    """Import `module`, which the optional `extra` provides, or raise :class:`MissingExtraError`.

    Cost: the import itself (nothing once imported).

    >>> try:
    ...     require("spark", "no_such_module", "rmqlab spark stats")
    ... except MissingExtraError as e:
    ...     print(e)
    rmqlab spark stats needs the 'spark' extra: pip install 'rmqlab[spark]' (no_such_module is not installed)

    `extra`: a key of :data:`EXTRAS`; `module`: a dotted module name; `needed_by`: what the
    user called, for the message (``"rmqlab.viz"``, ``"rmqlab spark build"``).
    Returns the module. Raises MissingExtraError when `module` or one of its parent packages is
    not installed; an import error from inside an installed module propagates unchanged.
    """
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; extras: {', '.join(EXTRAS)}")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        # Only the module itself (or a parent package) missing means the extra is not installed;
        # a missing dependency *of* an installed module is a broken install, reported as is.
        if e.name is None or not (module == e.name or module.startswith(e.name + ".")):
            raise
        raise MissingExtraError(extra, module, needed_by) from None
