"""Sphinx extension of pympc's documentation.

* **Gallery.**  Executes every ``notebooks/<name>.ipynb`` (``pympc_gallery`` first, then the others;
  ``pympc_gallery_skip`` leaves some out)
  with nbclient, in ``notebooks/`` (where their relative paths hold, as ``tests/test_notebook.py``
  runs them), and writes the executed copy to ``docs/gallery/<name>.ipynb``, which myst-nb renders.
  A cell that raises fails the build, naming the notebook.  An executed copy is reused while its key
  (the notebook, pympc's sources, the model and example files) is unchanged, so a second build
  executes nothing; ``PYMPC_DOCS_EXECUTE=0`` copies the notebooks unexecuted (prose work only).
* **Solvers.**  ``.. pympc-solver-factory::`` lists the solvers pympc registers with Pyomo's two
  ``SolverFactory`` objects, and ``.. pympc-solver-options:: NAME`` the options of one, both read
  from Pyomo's factories and the solvers' ``CONFIG`` at build time (they cannot drift from the code).
* **API pages.**  ``docs/api/<subpackage>.rst`` are written from the subpackages' ``__all__`` by
  :mod:`pympc_api` (sections from its ``SECTIONS``).
* **Re-exported names.**  A reference to ``pympc.LCP`` (or ``pympc.mechanics.system.Slot``) resolves
  to the page where that object is documented (``pympc.complementarity.LCP``, ``pympc.mechanics.Slot``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.metadata
import os
import re
import shutil
import time
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent


# --------------------------------------------------------------------------------------------- gallery
def _gallery_key(src: Path) -> str:
    """What an executed notebook depends on: itself, pympc's sources, models and examples."""
    h = hashlib.sha256(src.read_bytes())
    for base, pattern in (("pympc", "*.py"), ("models", "*"), ("examples", "*")):
        for path in sorted((ROOT / base).rglob(pattern)):
            if path.is_file() and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(ROOT)).encode())
                h.update(path.read_bytes())
    return h.hexdigest()


def _pympc_installed() -> bool:
    try:
        importlib.metadata.distribution("pympc-friction")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@contextlib.contextmanager
def _kernel_environment():
    """The kernel imports the installed pympc when there is one (CI: the numba cache it fills is the one
    the tests use), else this checkout (a developer's tree)."""
    saved = os.environ.get("PYTHONPATH")
    if not _pympc_installed():
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), saved) if p)
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def gallery_names(config):
    """Every notebook of notebooks/, those named by ``pympc_gallery`` first (a name there that does not exist is
    an error), the others after them in alphabetical order, less ``pympc_gallery_skip``."""
    present = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    unknown = [n for n in (*config.pympc_gallery, *config.pympc_gallery_skip) if n not in present]
    if unknown:
        raise ExtensionError(f"docs/conf.py names notebooks that notebooks/ does not have: {unknown}")
    first = [n for n in config.pympc_gallery if n not in config.pympc_gallery_skip]
    return first + [n for n in present if n not in first and n not in config.pympc_gallery_skip]


def execute_gallery(app):
    """Execute the gallery's notebooks into docs/gallery/ (or reuse the copies whose key is unchanged)."""
    import nbformat

    out_dir = DOCS / "gallery"
    out_dir.mkdir(exist_ok=True)
    execute = os.environ.get("PYMPC_DOCS_EXECUTE", "1") != "0"
    names = gallery_names(app.config)
    toctree = "```{toctree}\n:maxdepth: 1\n\n" + "".join(f"{n}\n" for n in names) + "```\n"
    inc = out_dir / "toctree.inc"      # included by gallery/index.md
    if not inc.is_file() or inc.read_text(encoding="utf-8") != toctree:
        inc.write_text(toctree, encoding="utf-8")
    for name in names:
        src = ROOT / "notebooks" / f"{name}.ipynb"
        dst = out_dir / f"{name}.ipynb"
        if not execute:
            shutil.copyfile(src, dst)
            logger.info(f"[pympc] {name}.ipynb copied unexecuted (PYMPC_DOCS_EXECUTE=0)")
            continue
        key = _gallery_key(src)
        if dst.is_file():
            old = nbformat.read(dst, as_version=4)
            if old.metadata.get("pympc_docs", {}).get("key") == key:
                logger.info(f"[pympc] {name}.ipynb: executed copy up to date")
                continue
        nb = nbformat.read(src, as_version=4)
        _execute(nb, name, app.config.pympc_notebook_timeout)
        nb.metadata["pympc_docs"] = {"key": key}
        tmp = dst.with_suffix(".ipynb.tmp")
        nbformat.write(nb, tmp)
        tmp.replace(dst)


def _execute(nb, name, timeout):
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    start = time.perf_counter()
    logger.info(f"[pympc] executing notebooks/{name}.ipynb ...")
    # a first cell, removed again: figures that are the value of a cell show as images, as in Jupyter with
    # `%matplotlib inline`, also when made with matplotlib's object API (pympc.sweep.plot_regime)
    import nbformat

    nb.cells.insert(0, nbformat.v4.new_code_cell("%matplotlib inline"))
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "notebooks")}})
    try:
        with _kernel_environment():
            client.execute()
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
        raise ExtensionError(f"notebooks/{name}.ipynb failed while the docs executed it "
                             f"(run it with jupyter to debug):\n{exc}") from None
    finally:
        del nb.cells[0]
    logger.info(f"[pympc] notebooks/{name}.ipynb executed in {time.perf_counter() - start:.1f} s")


# --------------------------------------------------------------------------------------------- solvers
def _parse_rst(directive, lines):
    node = nodes.section()
    node.document = directive.state.document
    directive.state.nested_parse(StringList(lines, source="<pympc_docs>"), directive.content_offset, node)
    return node.children


def _cell(text, first_prefix):
    """A list-table cell of one line: the text's first paragraph, its absolute values escaped."""
    paragraph = " ".join(str(text).strip().split("\n\n")[0].split())
    line = [paragraph]
    escape_absolute_values(None, "", "pympc", None, None, line)
    return [f"{first_prefix}{line[0]}" if line[0] else first_prefix + "\\ "]


def _pympc_solvers():
    import pympc.mpec  # noqa: F401 - registers the solvers
    import pyomo.environ as pyo
    from pyomo.contrib.solver.common.factory import SolverFactory

    def new_class(name):
        try:
            return SolverFactory.get_class(name)
        except KeyError:    # registered with the legacy factory only (Pyomo's own plugins)
            return None

    names = [n for n in pyo.SolverFactory if getattr(new_class(n), "__module__", "").startswith("pympc.")]
    if not names:
        raise ExtensionError("no pympc solver is registered with Pyomo's SolverFactory")
    return names, SolverFactory, pyo.SolverFactory


class SolverFactoryDirective(SphinxDirective):
    """``.. pympc-solver-factory::``: a table of the solvers pympc registers with Pyomo (reST; in MyST pages
    inside ``{eval-rst}``)."""

    has_content = False

    def run(self):
        names, new, legacy = _pympc_solvers()
        lines = [".. list-table::", "   :header-rows: 1", "   :widths: 18 30 52", "",
                 "   * - factory name", "     - class (``pyomo.contrib.solver``)", "     - what it is"]
        for name in names:
            cls = new.get_class(name)
            lines += [f"   * - ``{name}``", f"     - :class:`~{cls.__module__}.{cls.__name__}`"]
            lines += _cell(new.doc(name), "     - ")
            if legacy.get_class(name) is None:   # pragma: no cover - both are registered by one call
                raise ExtensionError(f"{name} is registered with pyomo.contrib.solver but not with the legacy factory")
        return _parse_rst(self, lines)


class SolverOptionsDirective(SphinxDirective):
    """``.. pympc-solver-options:: pympc.ipopt``: the options of one solver, from its ``CONFIG``."""

    required_arguments = 1
    option_spec = {"pyomo": directives.flag}

    def run(self):
        from pyomo.contrib.solver.common.config import SolverConfig

        names, new, _ = _pympc_solvers()
        name = self.arguments[0]
        if name not in names:
            raise self.error(f"{name!r} is not a pympc solver registered with Pyomo (registered: {names})")
        config = new.get_class(name).CONFIG
        base = SolverConfig()
        own, inherited = [], []
        for key in config.keys():
            entry = config.get(key)
            ours = key not in base or entry._description != base.get(key)._description
            (own if ours else inherited).append((key, entry))
        rows = own + (inherited if "pyomo" in self.options else [])
        lines = [".. list-table::", "   :header-rows: 1", "   :widths: 16 16 16 52", "",
                 "   * - option", "     - type", "     - default", "     - meaning"]
        for key, entry in rows:
            lines += [f"   * - ``{key}``", f"     - {_domain(entry)}", f"     - ``{_default(entry)!r}``"]
            lines += _cell(entry._description or entry._doc or "", "     - ")
        if inherited and "pyomo" not in self.options:
            listed = ", ".join(f"``{k}``" for k, _ in inherited)
            lines += ["", f"and Pyomo's common solver options: {listed}."]
        return _parse_rst(self, lines)


def _domain(entry):
    name = entry.domain_name() or ""
    if not name or name.startswith("_"):
        default = _default(entry)
        return f"``{type(default).__name__}``" if default is not None else "any"
    return f"``{name}``"


def _default(entry):
    value = entry.value()
    return dict(value) if hasattr(value, "items") else value


# ------------------------------------------------------------------------------------- re-exported names
def _documented_names(env):
    """id(object) → the name under which it is documented (the first one, in the API pages)."""
    cache = getattr(env, "_pympc_documented", None)
    if cache is not None and cache[0] == len(env.get_domain("py").objects):
        return cache[1]
    out = {}
    for fullname, entry in env.get_domain("py").objects.items():
        if entry.objtype in ("module",) or entry.aliased:
            continue
        obj = _resolve(fullname)
        if obj is not None:
            out.setdefault(id(obj), (fullname, entry.objtype))
    env._pympc_documented = (len(env.get_domain("py").objects), out)
    return out


def _resolve(dotted):
    """The object a dotted name reaches by attribute access from its top package (as ``pympc.mpec.crosscheck``
    is the function the package exports, not the module of that name), importing submodules on the way."""
    parts = dotted.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except Exception:  # noqa: BLE001 - not importable: not ours to resolve
        return None
    for i, attr in enumerate(parts[1:], start=1):
        try:
            obj = getattr(obj, attr)
        except AttributeError:
            try:
                obj = importlib.import_module(".".join(parts[:i + 1]))
            except Exception:  # noqa: BLE001
                return None
    return obj


def resolve_reexport(app, env, node, contnode):
    """Resolve ``pympc.X`` (and other paths of one object) to its documented name."""
    if node.get("refdomain") != "py" or not node.get("reftarget", "").lstrip("~.").startswith("pympc"):
        return None
    target = node["reftarget"].lstrip("~.")
    candidates = [target]
    module = node.get("py:module")
    if module and not target.startswith("pympc."):
        candidates.insert(0, f"{module}.{target}")
    for candidate in candidates:
        obj = _resolve(candidate)
        if obj is None:
            continue
        documented = _documented_names(env).get(id(obj))
        if documented is None or documented[0] == candidate:
            continue
        domain = env.get_domain("py")
        new = node.deepcopy()
        new["reftarget"] = documented[0]
        return domain.resolve_xref(env, node.get("refdoc", ""), app.builder, node["reftype"], documented[0],
                                   new, contnode)
    return None


# ------------------------------------------------------------------------------------- docstring text
_CODE = re.compile(r"(`+[^`]*`+)")
# a bar that could open an inline markup span (docutils: after whitespace, the line's start or opening
# punctuation, before a non-space); escaping these is enough for no substitution reference to start
_OPENING_BAR = re.compile(r"(?:(?<=^)|(?<=[\s(\[{<'\"/:\-‘“«]))\|(?=\S)")


def escape_absolute_values(app, what, name, obj, options, lines):
    """``|g|`` in a docstring is an absolute value, not a reST substitution: escape its opening bar.

    pympc's docstrings write norms and absolute values as ``|x|``; reST reads a word between bars
    after a space as a substitution reference (an error when undefined).  Text inside backticks
    (literals, roles), literal blocks and doctest blocks is left alone; pympc defines no
    substitutions.
    """
    if not name.startswith("pympc"):
        return
    literal_indent = None    # indentation of the paragraph that opened a literal block
    doctest = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if not stripped or indent > literal_indent:
                continue
            literal_indent = None
        if doctest:
            doctest = bool(stripped)
            continue
        if stripped.startswith(">>>"):
            doctest = True
            continue
        if stripped.endswith("::"):
            literal_indent = indent
        parts = _CODE.split(line)
        parts[::2] = [_OPENING_BAR.sub(r"\\|", part) for part in parts[::2]]
        lines[i] = "".join(parts)


def document_data(app, what, name, obj, options, lines):
    """A public constant's page: its attribute docstring where it is defined (else ``pympc_data_docs``
    in conf.py), and its value (a dict: one line per entry), instead of its type's docstring."""
    if what != "data" or not name.startswith("pympc"):
        return
    words = " ".join(lines).split()
    if not words or words == (type(obj).__doc__ or "").split():
        lines[:] = []
    if not lines:
        doc = _attribute_doc(name, obj) or app.config.pympc_data_docs.get(name)
        if doc is None:
            raise ExtensionError(f"{name} has no description: give it an attribute docstring where it is "
                                 "defined, or an entry of pympc_data_docs in docs/conf.py")
        lines[:] = doc.strip().splitlines()
    lines.append("")
    if isinstance(obj, dict):
        for key, value in obj.items():
            text = value if isinstance(value, str) else _summary(value)
            lines.append(f"* ``{key!r}``: {text}" if text else f"* ``{key!r}``")
    else:
        lines.append(f"Value: ``{obj!r}``")


def _summary(value):
    doc = (getattr(value, "__doc__", None) or "").strip()
    return doc.split("\n\n")[0].replace("\n", " ") if callable(value) and doc else ""


def _attribute_doc(name, obj):
    """The attribute docstring (a string after the assignment, or ``#:`` comments) of ``obj``, looked up
    in the module that defines it (a subpackage re-exports constants under their own names)."""
    import pkgutil

    from sphinx.pycode import ModuleAnalyzer

    package = importlib.import_module(name.rsplit(".", 1)[0])
    modules = [package.__name__] + [m.name for m in pkgutil.walk_packages(getattr(package, "__path__", []),
                                                                         package.__name__ + ".")]
    for modname in modules:
        module = importlib.import_module(modname)
        for attr, value in vars(module).items():
            if value is obj:
                doc = ModuleAnalyzer.for_module(modname).find_attr_docs().get(("", attr))
                if doc:
                    return "\n".join(doc)
    return None


def write_api_pages(app, config):
    """docs/api/<subpackage>.rst from the subpackages' ``__all__`` (before autosummary reads them)."""
    import pympc_api

    written = pympc_api.write_pages(DOCS / "api")
    logger.info(f"[pympc] API pages: {', '.join(written)}")


def setup(app):
    app.add_config_value("pympc_gallery", [], "env")
    app.add_config_value("pympc_gallery_skip", [], "env")
    app.add_config_value("pympc_notebook_timeout", 600, "env")
    app.connect("config-inited", write_api_pages)   # before Sphinx lists the sources and autosummary writes stubs
    app.connect("builder-inited", execute_gallery)
    app.connect("missing-reference", resolve_reexport)
    app.connect("autodoc-process-docstring", escape_absolute_values)
    app.connect("autodoc-process-docstring", document_data, priority=400)   # before numpydoc
    app.add_config_value("pympc_data_docs", {}, "env")
    app.add_directive("pympc-solver-factory", SolverFactoryDirective)
    app.add_directive("pympc-solver-options", SolverOptionsDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
