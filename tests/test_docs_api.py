"""Every public name has a page in the API reference (docs/api/*.rst), so that a new name cannot be forgotten.

Cheap: reads the reST sources, imports pympc's subpackages, needs no Sphinx.  Each subpackage of pympc that
has an ``__all__`` must have its own page ``docs/api/<name>.rst`` whose autosummary tables list every name
of that ``__all__``; the names of ``pympc.__all__`` must be listed on ``docs/api/index.rst``.
"""

import importlib
import pkgutil
import re

import pytest
from conftest import ROOT

import pympc

API = ROOT / "docs" / "api"


def _listed(page):
    """The names an API page lists in its autosummary tables (the last component of each entry)."""
    text = page.read_text(encoding="utf-8")
    names = set()
    for block in re.findall(r"^\.\. autosummary::\n((?:[ \t]+.*\n|[ \t]*\n)+)", text, flags=re.M):
        for line in block.splitlines():
            entry = line.strip()
            if entry and not entry.startswith(":"):
                names.add(entry.lstrip("~").rsplit(".", 1)[-1])
    return names


def _subpackages():
    return sorted(m.name for m in pkgutil.iter_modules(pympc.__path__, "pympc.")
                  if m.ispkg and hasattr(importlib.import_module(m.name), "__all__"))


def test_the_reader_sees_only_autosummary_entries(tmp_path):
    # the oracle of the tests below: a name mentioned elsewhere on a page does not count as listed
    page = tmp_path / "x.rst"
    page.write_text("Title\n=====\n\nProse naming Hidden and :class:`Mentioned`.\n\n"
                    ".. autosummary::\n   :toctree: generated\n\n   Alpha\n   ~sub.Beta\n\n"
                    ".. code-block:: python\n\n   Gamma\n\n.. autosummary::\n\n   pkg.mod.Delta\n", encoding="utf-8")
    assert _listed(page) == {"Alpha", "Beta", "Delta"}


def test_top_level_names_are_listed():
    missing = sorted(set(pympc.__all__) - _listed(API / "index.rst"))
    assert not missing, f"pympc.__all__ names missing from docs/api/index.rst: {missing}"


@pytest.mark.parametrize("package", _subpackages())
def test_subpackage_names_are_listed(package):
    page = API / f"{package.rsplit('.', 1)[-1]}.rst"
    assert page.is_file(), f"{package} has an __all__ but no API page: add {page.relative_to(ROOT)} to docs/api/"
    module = importlib.import_module(package)
    missing = sorted(set(module.__all__) - _listed(page))
    assert not missing, f"{package}.__all__ names missing from {page.relative_to(ROOT)}: {missing}"
    assert f"   {page.stem}\n" in (API / "index.rst").read_text(encoding="utf-8"), \
        f"{page.relative_to(ROOT)} is not in the toctree of docs/api/index.rst"


def test_error_names_are_listed():
    errors = [n for n in pympc.__all__ if isinstance(getattr(pympc, n), type) and issubclass(getattr(pympc, n), Exception)]
    missing = sorted(set(errors) - _listed(API / "errors.rst"))
    assert errors and not missing, f"errors missing from docs/api/errors.rst: {missing}"
