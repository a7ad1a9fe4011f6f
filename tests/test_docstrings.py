"""The examples in every docstring of the installed package run and give what they show."""

import doctest
import importlib
import pkgutil

import pytest

import pympc

MODULES = sorted(m.name for m in pkgutil.walk_packages(pympc.__path__, "pympc.") if not m.name.endswith("__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0
