"""Every public name has a place in the API reference, so that a new name cannot be forgotten.

Cheap: imports pympc's subpackages and reads the reST sources, no Sphinx.  The page of each subpackage
(``docs/api/<name>.rst``) is written at build time from its ``__all__`` by ``docs/_ext/pympc_api.py``,
whose ``SECTIONS`` must give every exported name a section; the names of ``pympc.__all__`` are listed by
hand on ``docs/api/index.rst``, the errors on ``docs/api/errors.rst``.
"""

import importlib
import re
import sys

import pytest
from conftest import ROOT

import pympc

API = ROOT / "docs" / "api"
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import pympc_api  # noqa: E402


def _listed(text):
    """The names a reST text lists in its autosummary tables (the last component of each entry)."""
    names = set()
    for block in re.findall(r"^\.\. autosummary::\n((?:[ \t]+.*\n|[ \t]*\n)+)", text, flags=re.M):
        for line in block.splitlines():
            entry = line.strip()
            if entry and not entry.startswith(":"):
                names.add(entry.lstrip("~").rsplit(".", 1)[-1])
    return names


def test_the_reader_sees_only_autosummary_entries():
    # the oracle of the tests below: a name mentioned elsewhere on a page does not count as listed
    text = ("Title\n=====\n\nProse naming Hidden and :class:`Mentioned`.\n\n"
            ".. autosummary::\n   :toctree: generated\n\n   Alpha\n   ~sub.Beta\n\n"
            ".. code-block:: python\n\n   Gamma\n\n.. autosummary::\n\n   pkg.mod.Delta\n")
    assert _listed(text) == {"Alpha", "Beta", "Delta"}


def test_top_level_names_are_listed():
    missing = sorted(set(pympc.__all__) - _listed((API / "index.rst").read_text(encoding="utf-8")))
    assert not missing, f"pympc.__all__ names missing from docs/api/index.rst: {missing}"


def test_error_names_are_listed():
    errors = [n for n in pympc.__all__ if isinstance(getattr(pympc, n), type) and issubclass(getattr(pympc, n), Exception)]
    missing = sorted(set(errors) - _listed((API / "errors.rst").read_text(encoding="utf-8")))
    assert errors and not missing, f"errors missing from docs/api/errors.rst: {missing}"


def test_every_subpackage_has_a_page():
    assert {"complementarity", "mpec", "mechanics", "dynamics", "identify", "sweep"} <= set(pympc_api.subpackages())
    missing = sorted(set(pympc_api.subpackages()) - set(pympc_api.SECTIONS))
    assert not missing, f"subpackages without sections in docs/_ext/pympc_api.py SECTIONS: {missing}"


@pytest.mark.parametrize("package", pympc_api.subpackages())
def test_every_exported_name_has_a_section(package):
    exported = set(importlib.import_module(f"pympc.{package}").__all__)
    sections = pympc_api.sections_of(package)
    other = [names for title, names in sections if title == pympc_api.OTHER]
    assert not other, (f"pympc.{package}.__all__ names in no section of docs/_ext/pympc_api.py SECTIONS: "
                       f"{other[0]} (add them to a section)")
    assert _listed(pympc_api.page(package)) == exported   # the written page lists exactly the exported names


def test_a_name_without_a_section_is_caught(monkeypatch):
    # the class of failure the test above exists for: a name exported after the sections were written
    module = importlib.import_module("pympc.sweep")
    monkeypatch.setattr(module, "__all__", [*module.__all__, "load_spec_v2"])
    sections = dict(pympc_api.sections_of("sweep"))
    assert sections[pympc_api.OTHER] == ["load_spec_v2"]
    assert "load_spec_v2" in _listed(pympc_api.page("sweep"))
