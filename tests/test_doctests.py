"""Every docstring example of the package runs and shows what it says. (Examples that start a
Spark session are marked +SKIP: the Spark tests share one session and check the same calls.)"""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import rmqlab

MODULES = sorted(m.name for m in pkgutil.walk_packages(rmqlab.__path__, "rmqlab.")
                 if not m.name.startswith("rmqlab._") and m.name != "rmqlab.__main__")


def test_the_package_has_examples_to_run():
    assert len(MODULES) > 40 and "rmqlab.formats.indexfile" in MODULES


@pytest.mark.parametrize("name", ["rmqlab", *MODULES])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=True, verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (see the output)"
