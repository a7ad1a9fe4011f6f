"""Lemke speed: pympc side by side with quantecon and Drake's MobyLcpSolver, one run.

Random SPD LCPs (M = G Gᵀ + n I / 10, q ~ U(-1, 1)) at n = 5, 10, 20, 50, 100.
Times are medians over repeats of the whole call (verification included for
pympc).  Peers that are not installed are skipped.  Run:

    python benchmarks/lcp_speed.py [--repeats 30]
"""

import argparse
import statistics

import numpy as np
from _timing import median_time

import pympc


#: issue 28's bounds on pympc.solve's time over quantecon's, same instances, same run
TARGETS = {5: "<=1.5", 20: "<=1.0", 50: "<=0.8", 100: "<=0.8"}


def instances(n, count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        G = rng.standard_normal((n, n))
        yield G @ G.T + 0.1 * n * np.eye(n), rng.uniform(-1.0, 1.0, n)


def peer_quantecon():
    try:
        from quantecon.optimize import lcp_lemke
    except ImportError:
        return None

    def run(M, q):
        res = lcp_lemke(M, q)
        return res.z, res.num_iter, res.success

    return run


def peer_drake():
    try:
        from pydrake.solvers import MathematicalProgram, MobyLcpSolver
    except ImportError:
        return None
    solver = MobyLcpSolver()

    def run(M, q):
        prog = MathematicalProgram()
        z = prog.NewContinuousVariables(len(q), "z")
        prog.AddLinearComplementarityConstraint(M, q, z)
        res = solver.Solve(prog)
        return res.GetSolution(z), -1, res.is_success()

    return run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--instances", type=int, default=5)
    args = ap.parse_args(argv)
    peers = {"quantecon": peer_quantecon(), "drake": peer_drake()}
    rows = []
    for n in (5, 10, 20, 50, 100):
        data = list(instances(n, args.instances, seed=n))
        lcps = [pympc.LCP(M, q) for M, q in data]
        hlcps = [p.to_hlcp() for p in lcps]
        # the same LCPs behind a general (dense, well-conditioned) A: the O(n³) reduction is needed
        rng = np.random.default_rng(1000 + n)
        Ts = [np.eye(n) + 0.3 * rng.standard_normal((n, n)) / np.sqrt(n) for _ in data]
        general = [pympc.HLCP(T, -T @ M, T @ q) for T, (M, q) in zip(Ts, data)]
        t_lcp, t_hlcp, t_gen, piv = [], [], [], []
        t_peer = {k: [] for k in peers if peers[k]}
        piv_peer = {k: [] for k in t_peer}
        for (M, q), p, h, hg in zip(data, lcps, hlcps, general):
            r = pympc.solve(p)
            assert r.success, r
            assert pympc.solve(h).success and pympc.solve(hg).success
            piv.append(r.pivots)
            t_lcp.append(median_time(lambda: pympc.solve(p), args.repeats))
            t_hlcp.append(median_time(lambda: pympc.solve(h), args.repeats))
            t_gen.append(median_time(lambda: pympc.solve(hg), args.repeats))
            for k in t_peer:
                z, it, ok = peers[k](M, q)
                if not (ok and p.is_solution(z, tol=1e-7)):
                    print(f"  note: {k} answer at n={n} does not verify")
                piv_peer[k].append(it)
                t_peer[k].append(median_time(lambda: peers[k](M, q), args.repeats))
        row = {"n": n, "pympc": statistics.median(t_lcp), "hlcp": statistics.median(t_hlcp),
               "gen": statistics.median(t_gen), "piv": statistics.median(piv)}
        for k in t_peer:
            row[k] = statistics.median(t_peer[k])
            row[k + "_piv"] = statistics.median(piv_peer[k])
        rows.append(row)
    head = (f"{'n':>4} {'pivots':>6} {'pympc LCP':>11} {'pympc HLCP':>11} {'HLCP/LCP':>8} "
            f"{'HLCP gen. A':>12} {'gen/LCP':>7}")
    for k in peers:
        if peers[k]:
            head += f" {k:>11} {'piv':>5} {'pympc/' + k:>16}"
    if peers["quantecon"]:
        head += f" {'target':>6}"
    print(head)
    for r in rows:
        line = (f"{r['n']:>4} {r['piv']:>6.0f} {r['pympc'] * 1e6:>9.1f}us {r['hlcp'] * 1e6:>9.1f}us "
                f"{r['hlcp'] / r['pympc']:>8.2f} {r['gen'] * 1e6:>10.1f}us {r['gen'] / r['pympc']:>7.2f}")
        for k in peers:
            if peers[k]:
                line += f" {r[k] * 1e6:>9.1f}us {r[k + '_piv']:>5.0f} {r['pympc'] / r[k]:>16.2f}"
        if peers["quantecon"]:
            line += f" {TARGETS.get(r['n'], ''):>6}"
        print(line)
    print("times: medians of the whole call (pympc: pympc.solve on a built problem, verification included); "
          "target: issue 28's bound on pympc/quantecon\n"
          "'pympc HLCP': the same instances in HLCP form HLCP(I, -M, q); 'HLCP gen. A': behind a dense A = T")


if __name__ == "__main__":
    main()
