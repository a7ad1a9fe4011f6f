"""Lemke speed: pympc side by side with quantecon and Drake's MobyLcpSolver, one run.

Random SPD LCPs (M = G Gᵀ + n I / 10, q ~ U(-1, 1)) at n = 5, 10, 20, 50, 100.
Times are CPU times of the whole call (verification included for pympc), measured
in interleaved rounds (a batch of each call in turn, the order rotated): the time
of a call is the median over rounds, over instances; the ratio to a peer is the
median over instances of the median over rounds of the ratio within a round (a
change in the shared machine's load falls on both alike), with the quartiles of
those per-round ratios beside it.  Peers that are not installed are skipped.  Run:

    python benchmarks/lcp_speed.py [--rounds 40] [--batch-ms 0.5]
"""

import argparse
import statistics

import numpy as np
from _timing import interleaved_cpu_times, paired_ratio

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
    ap.add_argument("--rounds", type=int, default=40, help="interleaved rounds (each a batch of every call)")
    ap.add_argument("--batch-ms", type=float, default=0.5, help="CPU milliseconds of one batch")
    ap.add_argument("--instances", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="*", default=[5, 10, 20, 50, 100])
    args = ap.parse_args(argv)
    peers = {"quantecon": peer_quantecon(), "drake": peer_drake()}
    active = [k for k in peers if peers[k]]
    rows = []
    for n in args.sizes:
        data = list(instances(n, args.instances, seed=n))
        lcps = [pympc.LCP(M, q) for M, q in data]
        hlcps = [p.to_hlcp() for p in lcps]
        # the same LCPs behind a general (dense, well-conditioned) A: the O(n³) reduction is needed
        rng = np.random.default_rng(1000 + n)
        Ts = [np.eye(n) + 0.3 * rng.standard_normal((n, n)) / np.sqrt(n) for _ in data]
        general = [pympc.HLCP(T, -T @ M, T @ q) for T, (M, q) in zip(Ts, data)]
        t_lcp, t_hlcp, t_gen, piv = [], [], [], []
        t_peer = {k: [] for k in active}
        piv_peer = {k: [] for k in active}
        ratio = {k: [] for k in active}
        per_round = {k: [] for k in active}
        for (M, q), p, h, hg in zip(data, lcps, hlcps, general):
            r = pympc.solve(p)
            assert r.success, r
            assert pympc.solve(h).success and pympc.solve(hg).success
            piv.append(r.pivots)
            for k in active:
                z, it, ok = peers[k](M, q)
                if not (ok and p.is_solution(z, tol=1e-7)):
                    print(f"  note: {k} answer at n={n} does not verify")
                piv_peer[k].append(it)
            fns = [lambda: pympc.solve(p), lambda: pympc.solve(h), lambda: pympc.solve(hg)]
            fns += [lambda k=k: peers[k](M, q) for k in active]
            times = interleaved_cpu_times(fns, args.rounds, args.batch_ms * 1e-3)
            for acc, ts in zip([t_lcp, t_hlcp, t_gen] + [t_peer[k] for k in active], times):
                acc.append(statistics.median(ts))
            for k, ts in zip(active, times[3:]):
                ratio[k].append(paired_ratio(times[0], ts))
                per_round[k] += [a / b for a, b in zip(times[0], ts)]
        row = {"n": n, "pympc": statistics.median(t_lcp), "hlcp": statistics.median(t_hlcp),
               "gen": statistics.median(t_gen), "piv": statistics.median(piv)}
        for k in active:
            row[k] = statistics.median(t_peer[k])
            row[k + "_piv"] = statistics.median(piv_peer[k])
            row[k + "_ratio"] = statistics.median(ratio[k])
            row[k + "_q"] = np.quantile(per_round[k], [0.25, 0.75])
        rows.append(row)
    head = (f"{'n':>4} {'pivots':>6} {'pympc LCP':>11} {'pympc HLCP':>11} {'HLCP/LCP':>8} "
            f"{'HLCP gen. A':>12} {'gen/LCP':>7}")
    for k in active:
        head += f" {k:>11} {'piv':>5} {'pympc/' + k:>16} {'(quartiles)':>12}"
    if peers["quantecon"]:
        head += f" {'target':>6}"
    print(head)
    for r in rows:
        line = (f"{r['n']:>4} {r['piv']:>6.0f} {r['pympc'] * 1e6:>9.1f}us {r['hlcp'] * 1e6:>9.1f}us "
                f"{r['hlcp'] / r['pympc']:>8.2f} {r['gen'] * 1e6:>10.1f}us {r['gen'] / r['pympc']:>7.2f}")
        for k in active:
            lo, hi = r[k + "_q"]
            line += (f" {r[k] * 1e6:>9.1f}us {r[k + '_piv']:>5.0f} {r[k + '_ratio']:>16.2f} "
                     f"{f'{lo:.2f}-{hi:.2f}':>12}")
        if peers["quantecon"]:
            line += f" {TARGETS.get(r['n'], ''):>6}"
        print(line)
    print("times: CPU per call, medians over interleaved rounds and instances (pympc: pympc.solve on a built "
          "problem, verification included); pympc/peer: median over instances of the per-round ratio, "
          "quartiles of the per-round ratios beside it; target: issue 28's bound on pympc/quantecon\n"
          "'pympc HLCP': the same instances in HLCP form HLCP(I, -M, q); 'HLCP gen. A': behind a dense A = T")


if __name__ == "__main__":
    main()
