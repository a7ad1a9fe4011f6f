"""The first run: whole processes, CPU and wall time, each row on a cache of its own.

Two columns of rows:

* **no cache** — a copy of this source tree's package without its ``__pycache__`` directories, and
  ``NUMBA_CACHE_DIR`` a fresh empty directory, per row: every kernel a run needs is compiled (a
  development tree, or an install whose build could not compile the kernels).
* **installed** — a copy of the package as ``pip install .`` leaves it, with the kernels its build step
  compiled (``setup.py``, ``pympc/_warmup.py``): ``--installed DIR`` (a ``pip install --target DIR .``),
  or built here into a temporary directory (a few minutes: the build compiles the kernels).  Every row
  runs on a fresh copy of that package and with no ``NUMBA_CACHE_DIR`` (the kernels come from the
  package's ``__pycache__``, as for a user).

Rows: ``import pympc``; ``pympc simulate`` of ``models/friction_oscillator.toml`` and of
``models/cross_slide.toml`` (plots included); a model file written here that the package has never seen
(a block on an incline with a spring, a damper and two slots), after the cross slide ran in the same
cache (as a user's second model); the warm main job (the cross slide with plots, the second run on one
cache), and without its plots.  One process per row; CPU is the child's user + system time (its helper processes
included).  Matplotlib's font cache is built once beforehand (not pympc's cost).

    python benchmarks/cold_start.py [--installed DIR] [--only no-cache|installed]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

def write_new_model(path):
    """A model no cache has seen, as a user writes one (here with the System API and ``save_model``): a carrier
    in a horizontal slot with a spring, a block on an incline on it with a damper, gravity."""
    from pympc.mechanics.modelfile import save_model
    from pympc.mechanics.system import Damper, Gravity, Particle, Slot, Spring, System

    s = System("incline_pair", parameters={"m": 1.5, "M": 3.0, "mu": 0.25, "nu": 0.4, "k": 12.0, "c": 0.8, "g": 9.81,
                                           "alpha": "pi/7"}, simulation={"t_end": 3.0})
    s.add(Particle("carrier", mass="M", velocity=(0.5, 0.0)))
    s.add(Particle("block", mass="m", position=("0.3*cos(alpha)", "0.3*sin(alpha)"), velocity=(0.5, 0.0)))
    s.add(Slot("rail", slider="carrier", guide="ground", direction=(1.0, 0.0), mu="mu"))
    s.add(Slot("incline", slider="block", guide="carrier", direction=("cos(alpha)", "sin(alpha)"), mu="nu"))
    s.add(Gravity("gravity", g=(0.0, "-g")))
    s.add(Spring("spring", "carrier", "ground", k="k"))
    s.add(Damper("damper", "block", "carrier", c="c"))
    save_model(s, path)


def run(args, env, cwd):
    """Run ``python args`` in a fresh process; (CPU s of the child, wall s)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{err}")
    return usage.ru_utime + usage.ru_stime, wall


def rows(work):
    """(label, setup runs, timed run) of the table: each a list of argument lists of ``python``."""
    model = os.path.join(work, "incline_pair.toml")
    write_new_model(model)
    out = os.path.join(work, "out")

    def sim(path):
        return ["-m", "pympc.cli", "simulate", os.path.join(ROOT, "models", path) if "/" not in path else path,
                "--overwrite", "--out", out]
    return [
        ("import pympc", [], ["-c", "import pympc"]),
        ("simulate friction_oscillator.toml", [], sim("friction_oscillator.toml")),
        ("simulate cross_slide.toml", [], sim("cross_slide.toml")),
        ("a new model file (after the main job)", [sim("cross_slide.toml")], sim(model)),
        ("warm main job (cross slide, plots)", [sim("cross_slide.toml")], sim("cross_slide.toml")),
        ("warm main job, --no-plots", [sim("cross_slide.toml")], sim("cross_slide.toml") + ["--no-plots"]),
    ]


def measure(kind, package_dir, work, mplconfig):
    """The table's column ``kind`` ("no-cache" or "installed"): {label: (cpu, wall)}."""
    results = {}
    for label, setup, timed in rows(work):
        row = tempfile.mkdtemp(dir=work, prefix="row-")
        env = dict(os.environ, MPLCONFIGDIR=mplconfig, MPLBACKEND="Agg", XDG_CACHE_HOME=os.path.join(row, "xdg"))
        env.pop("NUMBA_CACHE_DIR", None)
        if kind == "no-cache":       # a copy of this tree's package without its __pycache__ (which pympc reads)
            shutil.copytree(os.path.join(ROOT, "pympc"), os.path.join(row, "site", "pympc"),
                            ignore=shutil.ignore_patterns("__pycache__"))
            env["NUMBA_CACHE_DIR"] = os.path.join(row, "numba")
        else:                       # a fresh copy of the installed package, its own __pycache__ the only cache
            shutil.copytree(os.path.join(package_dir, "pympc"), os.path.join(row, "site", "pympc"))
        env["PYTHONPATH"] = os.path.join(row, "site")
        for args in setup:
            run(args, env, row)
        results[label] = run(timed, env, row)
        print(f"  {kind:9s} {label:40s} {results[label][0]:7.2f} s CPU {results[label][1]:7.2f} s wall", flush=True)
        shutil.rmtree(row, ignore_errors=True)
    return results


def install(work):
    """``pip install --no-deps --target`` of this tree (its build step compiles the kernels); the target dir."""
    target = os.path.join(work, "installed")
    print("building and installing this tree (pip install --no-deps --target ...; the build compiles the kernels)",
          flush=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", target, ROOT],
                   check=True)
    return target


def main():
    """Measure and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--installed", default=None, help="a `pip install --target DIR .` of this tree (default: build one)")
    ap.add_argument("--only", choices=["no-cache", "installed"], default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pympc-cold-") as work:
        mplconfig = os.path.join(work, "mpl")
        subprocess.run([sys.executable, "-c", "import matplotlib.pyplot"], env=dict(os.environ, MPLCONFIGDIR=mplconfig),
                       check=True)
        kinds = [a.only] if a.only else ["no-cache", "installed"]
        table = {}
        for kind in kinds:
            package_dir = (a.installed or install(work)) if kind == "installed" else None
            table[kind] = measure(kind, package_dir, work, mplconfig)
    labels = [label for label, _, _ in rows(tempfile.gettempdir())]
    print()
    print("| run | " + " | ".join(f"{k}: CPU s | {k}: wall s" for k in kinds) + " |")
    print("|---|" + "---:|---:|" * len(kinds))
    for label in labels:
        print(f"| {label} | " + " | ".join(f"{table[k][label][0]:.1f} | {table[k][label][1]:.1f}" for k in kinds) + " |")


if __name__ == "__main__":
    main()
