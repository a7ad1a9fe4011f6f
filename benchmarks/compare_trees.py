"""Are two code trees' simulations the same to the bit?  Every model file in ``models/`` with several option
sets, sensitivities, the oscillator at 25 values of μ and two slider chains, run by one worker process per
tree (``PYTHONPATH`` = that tree); event times, kinds, slots, modes, classifications, event-HLCP solutions,
``dτ/dθ``, and every sample array (t, q, q̇, forces, slip velocities, walls, motions, energies, drift, slot
positions, sensitivities) compared byte for byte.  Prints the cases that differ and a count; exit status 1
when any does.

    python benchmarks/compare_trees.py --base /path/to/checkout/of/main

With ``--close``, a case that differs is also described for a change meant to differ by round-off only: whether
its events are the same sequence (kinds, slots, modes before and after, classifications, solvers, verified) and
the largest differences of the event times and of every sample array (the array's differing entries against its
largest magnitude), and a count of the cases whose event sequences differ.
"""

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

OPTIONS = [
    ("default", {}),
    ("samples2", {"samples": 2}),
    ("rtol1e-8", {"rtol": 1e-8, "atol": 1e-10}),
    ("tree", {"formulation": "tree"}),
    ("radau", {"method": "Radau", "rtol": 1e-6, "atol": 1e-8}),
    ("t_eval", {"t_eval": 37}),
    ("max_step", {"max_step": 0.01}),
]
SENSITIVITY_MODELS = ("friction_oscillator.toml", "inclined_slot_spring.toml", "cross_slide.toml")
ARRAYS = ("t", "q", "qd", "normal_force", "friction_force", "slip_velocity", "walls", "motions", "kinetic",
          "potential", "dissipated", "work", "drift", "slot_position", "dq", "dqd", "dnormal_force",
          "dfriction_force", "sample_times")


def record(tr):
    """What is compared of a Trajectory."""
    out = {"status": tr.status.name, "message": tr.message, "info": dict(tr.info), "parameters": dict(tr.parameters),
           "model_hash": tr.model_hash, "note": tr.sensitivity_note,
           "events": [(e.time, e.kind.name, e.slot, str(e.mode_before), str(e.mode_after), e.classification,
                       e.solver, e.verified, dict(e.dtime), None if e.x is None else np.asarray(e.x).tobytes())
                      for e in tr.events]}
    for name in ARRAYS:
        v = getattr(tr, name, None)
        out[name] = None if v is None else np.asarray(v)
    return out


def attempt(run):
    try:
        return record(run())
    except Exception as exc:          # a run that fails must fail the same way in both trees
        return ("error", type(exc).__name__, str(exc))


def worker(path):
    """Every case on the tree this process imports, pickled to ``path``."""
    import pympc
    from pympc.mechanics import slider_chain
    models = Path(__file__).parents[1] / "models"
    res = {}
    for model in sorted(models.glob("*.toml")):
        system = pympc.load_model(model)
        for name, kw in OPTIONS:
            kw = dict(kw)
            if "t_eval" in kw:            # that many times across the model's span
                span = pympc.simulate(system, samples=2).t
                kw["t_eval"] = np.linspace(span[0], span[-1], kw["t_eval"])
            res[model.name, name] = attempt(lambda: pympc.simulate(system, **kw))
        if model.name in SENSITIVITY_MODELS:
            theta = list(system.parameters)[:2]
            res[model.name, "sensitivities"] = attempt(lambda: pympc.simulate(system, sensitivities=theta))
            res[model.name, "sensitivities, no forces"] = attempt(
                lambda: pympc.simulate(system, sensitivities=theta[:1], force_sensitivities=False))
    oscillator = pympc.load_model(models / "friction_oscillator.toml")
    for mu in np.linspace(0.2, 0.39, 25):
        res["friction_oscillator.toml", f"mu={mu:.5f}"] = attempt(
            lambda: pympc.simulate(oscillator, params={"mu": float(mu)}))
    for n in (3, 10):
        res[f"slider_chain({n})", "0.5 s"] = attempt(
            lambda: pympc.simulate(slider_chain(n), (0.0, 0.5), zeno_events=40))
    with open(path, "wb") as f:
        pickle.dump(res, f)


def same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return a == b


def closeness(a, b):
    """For ``--close``: ``(same events, largest |Δt| of an event, {array: largest |Δ| / (1 + max|base|)})`` of two
    records whose event sequences are compared without the times and the solutions."""
    ea, eb = a["events"], b["events"]
    seq = len(ea) == len(eb) and all(x[1:8] == y[1:8] for x, y in zip(ea, eb))
    dt = max((abs(x[0] - y[0]) for x, y in zip(ea, eb)), default=0.0)
    arrays = {}
    for name in ARRAYS:
        x, y = a.get(name), b.get(name)
        if x is None or y is None or same(x, y):
            continue
        if x.shape != y.shape:
            arrays[name] = np.inf
            continue
        diff = np.abs(x.astype(float) - y.astype(float))
        arrays[name] = float(np.nanmax(diff) / (1.0 + np.nanmax(np.abs(y.astype(float)))))
    return seq, dt, arrays


def run_tree(tree, path):
    env = dict(os.environ, PYTHONPATH=str(tree))
    res = subprocess.run([sys.executable, __file__, "--worker", str(path)], env=env, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"the worker on {tree} failed:\n{res.stderr[-2000:]}")
    with open(path, "rb") as f:
        return pickle.load(f)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, help="a checkout of the code to compare with")
    ap.add_argument("--close", action="store_true", help="describe the differing cases (see the module)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker)
        sys.exit(0)
    if args.base is None:
        ap.error("--base is required")
    with tempfile.TemporaryDirectory() as tmp:
        here = run_tree(Path(__file__).parents[1], Path(tmp) / "this.pkl")
        base = run_tree(args.base, Path(tmp) / "base.pkl")
    differ = sequences = 0
    for key in sorted(set(here) | set(base), key=str):
        a, b = here.get(key), base.get(key)
        if a is None or b is None or isinstance(a, tuple) or isinstance(b, tuple):
            if not same(a, b):
                differ += 1
                mine, theirs = (v if not isinstance(v, dict) else "ran" for v in (a, b))
                print(f"{key}: this tree {mine}, base {theirs}")
            continue
        fields = [f for f in a if not same(a[f], b.get(f))]
        if fields:
            differ += 1
            print(f"{key}: differs in {', '.join(fields)}")
            if args.close:
                seq, dt, arrays = closeness(a, b)
                sequences += not seq
                worst = ", ".join(f"{k} {v:.1e}" for k, v in arrays.items())
                print(f"    {'the same' if seq else 'OTHER'} events, event times within {dt:.1e}; {worst}")
    events = sum(len(v["events"]) for v in here.values() if isinstance(v, dict))
    print(f"{len(here)} cases, {events} events; {differ} differ from the base {args.base}")
    if args.close:
        print(f"{sequences} of them with other event sequences")
    sys.exit(1 if differ else 0)
