"""Writing and reading chain model files: ``pympc chain N`` (issue 28 point 5).

Two ways to the same file, each measured in a fresh process (CPU, wall, peak
resident memory of the process):

* **system**: ``dump_model(slider_chain(N))`` with the garbage collector paused,
  what ``pympc chain`` did before: the System of N sliders is built, resolved,
  validated and written element by element;
* **direct**: ``write_slider_chain(N, file)``, what ``pympc chain`` does now: a
  chain of two is built and validated through the System, its entries are the
  templates of every slider, slot and spring, and only the numbers that vary
  along the chain are checked and formatted.

Both files are compared byte for byte (their SHA-256).  A second table reads
the written file back (``load_model``) and, for small N, simulates it 1 s, to
show that what users do with the file did not change.

Run::

    PYTHONPATH=$PWD python benchmarks/chain_speed.py [--sizes 2000,20000,200000] [--load 200,2000,20000]
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_WRITE = r"""
import gc, hashlib, json, resource, sys, time
from pympc.mechanics import dump_model, slider_chain
from pympc.mechanics.generators import write_slider_chain
how, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
c, w = time.process_time(), time.perf_counter()
with open(path, "w", encoding="utf-8") as f:
    if how == "system":
        gc.disable()
        f.write(dump_model(slider_chain(n)))
        gc.enable()
    else:
        write_slider_chain(n, f)
c, w = time.process_time() - c, time.perf_counter() - w
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
with open(path, "rb") as f:
    sha = hashlib.file_digest(f, "sha256").hexdigest()
print(json.dumps({"cpu": c, "wall": w, "rss": rss, "sha": sha}))
"""

_LOAD = r"""
import json, sys, time
import pympc
from pympc.mechanics import load_model
n, path, simulate = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
c, w = time.process_time(), time.perf_counter()
system = load_model(path)
out = {"load_cpu": time.process_time() - c, "load_wall": time.perf_counter() - w, "slots": len(system.slots)}
try:
    if simulate:
        pympc.simulate(system, (0.0, 0.05), samples=2)                 # compiles and warms up
        c, w = time.process_time(), time.perf_counter()
        tr = pympc.simulate(system, (0.0, 1.0), samples=2, zeno_events=40)
        out.update(sim_cpu=time.process_time() - c, sim_wall=time.perf_counter() - w, events=len(tr.events))
except pympc.PympcError as exc:
    out["failed"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
print(json.dumps(out))
"""


def _run(script, *args):
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True, env=env,
                          cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"benchmark process failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def write_table(sizes, tmp):
    """CPU, wall and peak memory of both paths per N; the files must be identical."""
    print("pympc chain N: write the model file (fresh process each; peak = the process's maximum RSS)")
    print(f"{'N':>8} {'path':>7} {'CPU s':>8} {'wall s':>8} {'peak MB':>8}   file")
    for n in sizes:
        rows = {how: _run(_WRITE, how, n, tmp / f"{how}{n}.toml") for how in ("system", "direct")}
        same = "identical" if rows["system"]["sha"] == rows["direct"]["sha"] else "DIFFERENT"
        for how, r in rows.items():
            print(f"{n:>8} {how:>7} {r['cpu']:8.2f} {r['wall']:8.2f} {r['rss']:8.0f}   {same}")
        print(f"{'':>8} {'ratio':>7} {rows['system']['cpu'] / rows['direct']['cpu']:7.1f}x "
              f"{rows['system']['wall'] / rows['direct']['wall']:7.1f}x")
        if same != "identical":
            raise SystemExit(f"N = {n}: the direct writer's file differs from the System's")


def load_table(sizes, tmp, simulate_up_to=2000):
    """Reading the direct writer's file back, and simulating it 1 s for N <= ``simulate_up_to``."""
    print("\nthe written file read back (load_model) and simulated 1 s (after a 0.05 s warm-up run)")
    print(f"{'N':>8} {'load CPU s':>11} {'load wall s':>12} {'sim CPU s':>10} {'sim wall s':>11} {'events':>7}")
    for n in sizes:
        path = tmp / f"load{n}.toml"
        _run(_WRITE, "direct", n, path)
        r = _run(_LOAD, n, path, int(n <= simulate_up_to))
        assert r["slots"] == n
        sim = (f"{r['sim_cpu']:10.2f} {r['sim_wall']:11.2f} {r['events']:7d}" if "sim_cpu" in r
               else f"{'-':>10} {'-':>11} {'-':>7}")
        print(f"{n:>8} {r['load_cpu']:11.2f} {r['load_wall']:12.2f} {sim}")
        if "failed" in r:
            print(f"{'':>8} the simulation failed: {r['failed']}")


def main(argv=None):
    """Print both tables."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="2000,20000,200000", help="chain sizes to write (default %(default)s)")
    ap.add_argument("--load", default="200,2000,20000", help="chain sizes to read back (default %(default)s; "
                                                             "simulated up to 2000; empty: none)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_table([int(v) for v in args.sizes.split(",") if v], tmp)
        if args.load:
            load_table([int(v) for v in args.load.split(",") if v], tmp)


if __name__ == "__main__":
    main()
