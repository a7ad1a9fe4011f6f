"""The house's structure (issue 27): rooms import one way, no module imports itself back through others.

A room is a subpackage or a top-level module of ``pympc``; an arrow is any import of one pympc module by
another, at module level or inside a function (lazy imports count: they are the arrows a reader follows).
"""

import ast
import pathlib
from collections import defaultdict

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "pympc"

# the rooms each room may import (beside the low rooms every room may use); the upward arrows are named
LOW = {"errors", "_enum", "_linalg", "_plugins", "_compiling", "_pyomo_hook"}
ALLOWED = {
    "complementarity": set(),
    "mechanics": {"complementarity"},
    "mpec": {"complementarity", "mechanics"},
    "dynamics": {"complementarity", "mechanics", "mpec"},
    "identify": {"complementarity", "mechanics", "mpec", "dynamics"},
    "sweep": {"complementarity", "mechanics", "dynamics"},
    "design": {"complementarity", "mechanics", "dynamics", "identify", "sweep"},
}


def _module_name(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts), parts[-1] == "__init__"


def _imports():
    """module → the pympc modules it imports (``from pkg import name`` counts as pkg.name when that is a module)."""
    modules = {}
    for f in ROOT.rglob("*.py"):
        name, is_pkg = _module_name(f)
        modules[name] = (f, is_pkg)
    out = defaultdict(set)
    for name, (f, is_pkg) in modules.items():
        package = name if is_pkg else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                elif node.module and node.module.split(".")[0] == "pympc":
                    target = node.module
                else:
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    out[name].add(sub if sub in modules else target)
            elif isinstance(node, ast.Import):
                out[name] |= {a.name for a in node.names if a.name.split(".")[0] == "pympc"}
    return modules, out


def _room(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "pympc"


def test_rooms_import_one_way():
    """complementarity ← mechanics/mpec ← dynamics ← identify/sweep/design ← cli, nothing upward."""
    _, imports = _imports()
    wrong = set()
    for module, targets in imports.items():
        here = _room(module)
        if here not in ALLOWED:
            continue
        for t in targets:
            there = _room(t)
            if there != here and there not in LOW | ALLOWED[here] and t != "pympc":   # `from .. import __version__`
                wrong.add(f"{module} -> {t}")
    assert not wrong, sorted(wrong)


def test_no_module_imports_itself_back():
    """No import circle between modules (lazy imports included), in any room."""
    modules, imports = _imports()
    graph = {m: {t for t in imports.get(m, ()) if t in modules and t != m} for m in modules}
    colour, stack, cycles = {}, [], []

    def visit(m):
        colour[m] = 1
        stack.append(m)
        for t in graph[m]:
            if colour.get(t) == 1 and not m.startswith(t + "."):    # a package's __init__ re-exporting its modules
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in colour:
                visit(t)
        stack.pop()
        colour[m] = 2
    for m in sorted(graph):
        if m not in colour:
            visit(m)
    # a package importing its own submodules (its __init__ re-exports them) is the one-way arrow of a room
    cycles = [c for c in cycles if not any(b.startswith(a + ".") for a, b in zip(c, c[1:]))]
    assert not cycles, cycles


@pytest.mark.parametrize("room", sorted(ALLOWED))
def test_the_complementarity_core_knows_nothing_above_it(room):
    """Each room's arrows, listed: the complementarity core's are the low rooms only."""
    _, imports = _imports()
    rooms = {_room(t) for m, ts in imports.items() if _room(m) == room for t in ts} - {room, "pympc"}
    assert rooms <= LOW | ALLOWED[room], sorted(rooms - LOW - ALLOWED[room])
