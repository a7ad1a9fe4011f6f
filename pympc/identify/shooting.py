"""The shooting estimator: simulate, compare with the data, ``scipy.optimize.least_squares``.

:class:`ShootingProblem` holds the weighted residual r(z) of all experiments
(stacked; each output divided by its noise level when known) and its Jacobian,
from one pluggable function: ``jac="fd"`` differences the simulator (forward or
central, steps relative to the parameter, one-sided at a bound) and
``jac="sensitivity"`` reads the forward sensitivities of
``pympc.simulate(..., sensitivities=...)``.  :func:`fit_starts` runs
``least_squares`` from each start and records every start, failed or not.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import least_squares

from ..errors import OptionError, PympcError, SimulationError
from .experiment import simulate_experiment, trajectory_output
from .options import JACOBIANS

__all__ = ["ShootingProblem", "fit_starts", "JACOBIANS"]


class ShootingProblem:
    """Weighted residuals r(z) and their Jacobian for a list of experiments.

    Parameters
    ----------
    experiments : list of Experiment
    parametrization : Parametrization
    jac : {"fd", "sensitivity"}
    fd_step : float, optional
        Relative finite-difference step (default 1e-6 forward, 1e-4 central).
    fd_scheme : {"forward", "central"}
    """

    def __init__(self, experiments, parametrization, jac="fd", fd_step=None, fd_scheme="forward"):
        if jac not in JACOBIANS:
            raise OptionError(f"jac must be one of {sorted(JACOBIANS)}, got {jac!r}")
        if fd_scheme not in ("forward", "central"):
            raise OptionError(f"fd_scheme must be 'forward' or 'central', got {fd_scheme!r}")
        self.experiments, self.par, self.jac_kind, self.fd_scheme = list(experiments), parametrization, jac, fd_scheme
        self.fd_step = float(fd_step if fd_step is not None else (1e-6 if fd_scheme == "forward" else 1e-4))
        self.weights = [1.0 / (e.sigma if e.sigma is not None else np.ones(len(e.outputs))) for e in self.experiments]
        self.size = sum(e.size for e in self.experiments)
        self.simulations = 0
        self.fallbacks = 0
        self.failures = []
        self._key, self._trajectories = None, None

    # ------------------------------------------------------------------ simulation and residuals
    def trajectories(self, z):
        """The simulations of every experiment at z (the last call's are reused)."""
        z = np.asarray(z, dtype=float)
        if self._key is not None and self._key == z.tobytes():
            return self._trajectories
        values = self.par.values(z)
        names = self.par.names if self.jac_kind == "sensitivity" else None
        trs = [simulate_experiment(e, values, sensitivities=names) for e in self.experiments]
        self.simulations += len(trs)
        self._key, self._trajectories = z.tobytes(), trs
        return trs

    def predictions(self, trs):
        """Simulated outputs at the data times, one (N, m) array per experiment (SimulationError if one falls short)."""
        out = []
        for e, tr in zip(self.experiments, trs):
            rows = tr.sample_rows(e.t)
            out.append(np.column_stack([trajectory_output(tr, o)[rows] for o in e.outputs]))
        return out

    def residual(self, z):
        """Weighted residuals (prediction − data)/σ, stacked; +inf everywhere when a simulation fails."""
        try:
            preds = self.predictions(self.trajectories(z))
        except (SimulationError, PympcError) as exc:
            self.failures.append((np.asarray(z, float).copy(), str(exc)))
            return np.full(self.size, np.inf)
        return np.concatenate([((p - e.y) * w).ravel() for p, e, w in zip(preds, self.experiments, self.weights)])

    # ------------------------------------------------------------------ Jacobians
    def jacobian(self, z):
        """∂r/∂z, shape (n, p), from the chosen method."""
        if self.jac_kind == "sensitivity":
            J = self._jacobian_sensitivity(z)
            if np.all(np.isfinite(J)):
                return J
            self.fallbacks += 1          # an undefined sensitivity (grazing, degenerate event): difference instead
        return self.jacobian_fd(z)

    def _steps(self, z):
        scale = np.maximum(np.maximum(np.abs(z), np.abs(self.par.z0)), 1e-3)
        return self.fd_step * scale

    def jacobian_fd(self, z):
        """Finite-difference Jacobian of the simulator (see ``fd_scheme``, ``fd_step``)."""
        z = np.asarray(z, dtype=float)
        r0 = self.residual(z)
        anchor = self._key, self._trajectories
        if not np.all(np.isfinite(r0)):
            raise SimulationError(f"the simulation fails at the point to differentiate, {self.par.values(z)}")
        J = np.empty((r0.size, z.size))
        lo, hi = self.par.lo, self.par.hi
        for i, h in enumerate(self._steps(z)):
            up, down = z[i] + h <= hi[i], z[i] - h >= lo[i]
            if self.fd_scheme == "central" and up and down:
                rp, rm = self._shifted(z, i, h), self._shifted(z, i, -h)
                if np.all(np.isfinite(rp)) and np.all(np.isfinite(rm)):
                    J[:, i] = (rp - rm) / (2 * h)
                    continue
            for s in ((h, -h) if up else (-h,)):
                r = self._shifted(z, i, s)
                if np.all(np.isfinite(r)):
                    J[:, i] = (r - r0) / s
                    break
            else:
                raise SimulationError(f"cannot difference the simulation in {self.par.z_names()[i]} at "
                                      f"{self.par.values(z)}: it fails on both sides")
        self._key, self._trajectories = anchor   # leave the cache at z
        return J

    def _shifted(self, z, i, h):
        zz = z.copy()
        zz[i] += h
        return self.residual(zz)

    def _jacobian_sensitivity(self, z):
        blocks = []
        for e, tr, w in zip(self.experiments, self.trajectories(z), self.weights):
            rows = tr.sample_rows(e.t)
            have = list(tr.sensitivity_names)
            S = np.zeros((len(rows), len(e.outputs), len(self.par.names)))      # unused parameters: zero columns
            for k, o in enumerate(e.outputs):
                if have:
                    d = np.asarray(tr.sensitivity(o))[rows]
                    for j, n in enumerate(self.par.names):
                        if n in have:
                            S[:, k, j] = d[:, have.index(n)]
            blocks.append((S * w[None, :, None]).reshape(-1, len(self.par.names)))
        return np.vstack(blocks) @ self.par.T


GRADIENT_TOL = 1e-4
"""Largest relative gradient |Jᵀr|/(|J||r|) of a stationary point."""
STEP_TOL = 1e-8
"""Or: largest Gauss–Newton step relative to the parameters (least_squares' default xtol)."""


def stationarity(J, r, x, free):
    """``(relative gradient, relative Gauss–Newton step)`` of residuals ``r`` with Jacobian ``J`` at ``x``.

    The first is |Jᵀr| over |J||r| (|r| floored at 1e-8 √n); the second the largest
    |δ_i| / max(|x_i|, 1e-3) of the step δ = −J⁺r over the free parameters.  A point
    is stationary when either is small (:data:`GRADIENT_TOL`, :data:`STEP_TOL`): on
    exact data the residuals are the simulator's own error, partly along J, and the
    step that would remove them is below what the simulator resolves.
    """
    J, r = np.asarray(J, float), np.asarray(r, float)
    if not np.all(np.isfinite(J)) or not np.any(free):
        return np.nan, np.nan
    colmax = float(np.linalg.norm(J, axis=0).max(initial=0.0))
    rnorm = max(float(np.linalg.norm(r)), 1e-8 * np.sqrt(r.size))
    gradient = float(np.abs(J.T @ r)[free].max(initial=0.0) / max(colmax * rnorm, 1e-300))
    step = gauss_newton_step(J, r, free)[free]
    return gradient, float((np.abs(step) / np.maximum(np.abs(np.asarray(x, float)[free]), 1e-3)).max(initial=0.0))


def gauss_newton_step(J, r, free):
    """The Gauss–Newton step δ = −J⁺r over the ``free`` parameters (0 for the others)."""
    free = np.asarray(free, bool)
    step = np.zeros(J.shape[1])
    step[free] = np.linalg.lstsq(J[:, free], -r, rcond=None)[0]
    return step


def is_stationary(gradient, step):
    return bool(gradient <= GRADIENT_TOL or step <= STEP_TOL)


def _verdict(res):
    """'converged' (a stationary point), 'flat' (zero Jacobian: a plateau) or 'stalled' (stopped elsewhere)."""
    if res.status <= 0 or not np.isfinite(res.cost):
        return "not converged"
    J = np.asarray(res.jac)
    if not np.any(J):
        return "flat"
    return "converged" if is_stationary(*stationarity(J, res.fun, res.x, res.active_mask == 0)) else "stalled"


def fit_starts(problem, starts, ls_options, plateau_moves=4):
    """``least_squares`` from every start; returns (rows, results) with one row per start, failed ones included.

    A start on a plateau (the simulated outputs do not change with the parameters
    there, e.g. a static coefficient so high that nothing ever breaks away) is moved
    half way to the centre of the box, at most ``plateau_moves`` times; the row
    records the moves.
    """
    rows, results = [], []
    names = problem.par.names
    lo, hi = problem.par.lo, problem.par.hi
    centre = np.where(np.isfinite(lo) & np.isfinite(hi), 0.5 * (lo + hi), problem.par.z0)
    for k, z0 in enumerate(starts):
        t0 = time.perf_counter()
        sims, nfail = problem.simulations, len(problem.failures)
        row = {"start": k, **{f"{n}_start": v for n, v in zip(names, problem.par.theta(z0))}}
        moves = 0
        try:
            z = np.asarray(z0, dtype=float)
            while True:
                res = least_squares(problem.residual, z, jac=problem.jacobian, bounds=(lo, hi),
                                    method="trf", x_scale="jac", **ls_options)
                if _verdict(res) != "flat" or moves >= plateau_moves:
                    break
                z, moves = z + 0.5 * (centre - z), moves + 1
        except (PympcError, ValueError, FloatingPointError, np.linalg.LinAlgError) as exc:
            res = None
            why = f"{type(exc).__name__}: {exc}"
            if len(problem.failures) > nfail:
                why += f" (simulation: {problem.failures[-1][1]})"
            row.update({f"{n}_end": np.nan for n in names})
            row.update(cost=np.inf, status="failed", message=why, nfev=np.nan, optimality=np.nan)
        else:
            row.update({f"{n}_end": v for n, v in zip(names, problem.par.theta(res.x))})
            row.update(cost=float(res.cost) if np.isfinite(res.cost) else np.inf, status=_verdict(res),
                       message=res.message, nfev=res.nfev, optimality=float(res.optimality))
        row.update(plateau_moves=moves, simulations=problem.simulations - sims, seconds=time.perf_counter() - t0)
        rows.append(row)
        results.append(res)
    return rows, results
