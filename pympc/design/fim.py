"""Fisher information of one experiment design, from the simulator's sensitivities through events.

F = Σ_k S_kᵀ Σ⁻¹ S_k with S_k = ∂y(t_k)/∂θ read from ``pympc.simulate(...,
sensitivities=...)`` by the identification's own shooting problem
(:class:`pympc.identify.ShootingProblem`: the same sample rows, outputs and
μ_s = μ + Δ bookkeeping as the fit whose precision is predicted), plus a prior
information diag(1/sd²) where one is given.  The criteria (DESIGN.md §8):

* ``D``  = log det F        (maximize)
* ``A``  = tr F⁻¹           (minimize)
* ``E``  = λ_min(F)         (maximize)
* ``ME`` = cond(F) = λ_max/λ_min (minimize)

computed on the information of the *relative* parameters (F scaled by θ on both
sides, so that μ and a stiffness weigh alike) unless ``scale="none"``.  A
singular F has no finite A or ME and a zero E: :func:`criterion` raises
:class:`SingularInformation` naming the parameters that are not informed and
why (a slot that never sticks says nothing about μ_s; one that never slips
nothing about μ), from :func:`pympc.identify.uncertainty.stick_information`.
"""

from __future__ import annotations

import numpy as np

from ..errors import PympcError, SimulationError
from ..identify import Experiment, Parameter, Parametrization, ShootingProblem
from ..identify.uncertainty import FLAT_TOL, covariance, identifiability, stick_information

__all__ = ["CRITERIA", "SingularInformation", "criteria", "criterion", "loss", "information", "regimes",
           "Information"]

CRITERIA = {
    "D": "log det F (maximize): the volume of the confidence ellipsoid",
    "A": "tr F⁻¹ (minimize): the sum of the predicted variances",
    "E": "λ_min(F) (maximize): the worst-determined direction",
    "ME": "cond F = λ_max/λ_min (minimize): the ellipsoid's elongation",
}
_SENSE = {"D": -1.0, "A": 1.0, "E": -1.0, "ME": 1.0}   # loss = sense × value (minimized)
SINGULAR_TOL = FLAT_TOL ** 2
"""F is singular when λ_min ≤ SINGULAR_TOL · λ_max (the identification's FLAT_TOL on singular values of J)."""


class SingularInformation(PympcError, ValueError):
    """A criterion of a singular Fisher information: some parameter is not informed by the design."""


def _check_criterion(name):
    from ..errors import OptionError
    if name not in CRITERIA:
        raise OptionError(f"criterion must be one of {sorted(CRITERIA)}, got {name!r}")


def criteria(F):
    """The four criteria of a symmetric information matrix ``F`` (dict D, A, E, ME).

    A singular F (λ_min ≤ :data:`SINGULAR_TOL` λ_max) gets D = −inf, A = inf, E = 0, ME = inf.
    """
    F = np.asarray(F, dtype=float)
    lam = np.linalg.eigvalsh(0.5 * (F + F.T))
    lmin, lmax = float(lam[0]), float(lam[-1])
    if not np.all(np.isfinite(lam)) or lmax <= 0 or lmin <= SINGULAR_TOL * lmax:
        return {"D": -np.inf, "A": np.inf, "E": 0.0, "ME": np.inf}
    return {"D": float(np.sum(np.log(lam))), "A": float(np.sum(1.0 / lam)), "E": lmin, "ME": lmax / lmin}


def loss(name, value):
    """The criterion as a quantity to minimize (−D, A, −E, ME)."""
    _check_criterion(name)
    return _SENSE[name] * value


class Information:
    """The Fisher information of one design at one parameter point (or averaged over a prior sample).

    Attributes
    ----------
    names : list of str
        The parameters θ.
    theta : ndarray
        Their values (the prior's; its mean over the draws for a prior sample).
    fim : ndarray (p, p)
        F in the user's units of θ.
    scaled : ndarray (p, p)
        The F the criteria use (θ-scaled unless ``scale="none"``).
    values : dict
        D, A, E, ME of ``scaled`` (means over the draws for a prior sample).
    stderr : ndarray
        Predicted standard errors √diag F⁻¹ (inf for a parameter not informed).
    correlation : ndarray
    not_informed : dict
        name → why the design says nothing (or only a bound) about it.
    regimes : dict
        slot → ``"never sticks"``, ``"stick-slip"`` or ``"always sticks"`` (at the prior values).
    n : int
        Number of measured values.
    fallbacks : int
        Sensitivity Jacobians replaced by finite differences (an undefined sensitivity: grazing event).
    """

    def __init__(self, names, theta, fim, scaled, stderr, correlation, not_informed, regimes, n, fallbacks=0,
                 values=None):
        self.names, self.theta, self.fim, self.scaled = list(names), np.asarray(theta, float), fim, scaled
        self.stderr, self.correlation, self.not_informed = stderr, correlation, dict(not_informed)
        self.regimes, self.n, self.fallbacks = dict(regimes), int(n), int(fallbacks)
        self.values = dict(values) if values is not None else criteria(scaled)

    @property
    def singular(self):
        """Some parameter is not informed (F singular)."""
        return bool(self.not_informed) or not np.isfinite(self.values["A"])

    @property
    def covariance(self):
        """Predicted covariance F⁻¹ (NaN/inf rows for parameters not informed)."""
        return _covariance(self.fim, self.names, self.theta)[0]

    def criterion(self, name):
        """The value of criterion ``name``; :class:`SingularInformation` (saying which parameter and why) when F is singular."""
        _check_criterion(name)
        if self.singular:
            why = "; ".join(f"{k}: {v}" for k, v in self.not_informed.items()) or "F is singular"
            raise SingularInformation(f"criterion {name} of a singular Fisher information: this design does not "
                                      f"inform every parameter ({why}); change the design (forcing, record length, "
                                      f"measured outputs) or estimate fewer parameters")
        return self.values[name]

    def summary(self):
        """Text: criteria, predicted standard errors, correlations, regimes, what is not informed."""
        lines = ["criteria  " + ", ".join(f"{k} = {v:.6g}" for k, v in self.values.items())]
        for k, n in enumerate(self.names):
            lines.append(f"  {n:12s} = {self.theta[k]:<10.6g} predicted se {self.stderr[k]:.4g}")
        p = len(self.names)
        for i in range(p):
            for j in range(i + 1, p):
                lines.append(f"  corr({self.names[i]}, {self.names[j]}) = {self.correlation[i, j]:.4f}")
        lines.append("regimes   " + ", ".join(f"{s}: {r}" for s, r in self.regimes.items()))
        for n, why in self.not_informed.items():
            lines.append(f"not informed  {n}: {why}")
        return "\n".join(lines)


def criterion(F, name):
    """Criterion ``name`` of the matrix ``F``; :class:`SingularInformation` when F is singular."""
    _check_criterion(name)
    v = criteria(F)
    if not np.isfinite(v["A"]):
        raise SingularInformation(f"criterion {name} of a singular information matrix (eigenvalues "
                                  f"{np.linalg.eigvalsh(np.asarray(F, float)).tolist()}): a direction of the "
                                  "parameters is not informed")
    return v[name]


def _covariance(F, names, theta):
    """(covariance, flat directions, singular values) of an information matrix, by the identification's rule
    (:func:`pympc.identify.uncertainty.covariance` on a square root of F, relative to θ)."""
    w, V = np.linalg.eigh(0.5 * (F + F.T))
    J = (V * np.sqrt(np.clip(w, 0, None))).T           # JᵀJ = F
    cov, _, svals, flat = covariance(J, 0.0, len(names) + 1, theta, True)
    return cov, flat, svals


def regimes(trajectory):
    """slot → ``"never sticks"`` / ``"stick-slip"`` / ``"always sticks"`` of a simulated record.

    A slot with no sticking sample and no breakaway never sticks (its μ_s does not
    enter); one with no slipping sample always sticks (its μ does not enter).
    """
    out = {}
    for k, slot in enumerate(trajectory.slot_names):
        m = trajectory.motions[:, k]
        breaks = any(ev.kind.name == "BREAKAWAY" and ev.slot == k for ev in trajectory.events)
        if not np.any(m != 0):
            out[slot] = "always sticks"
        elif not np.any(m == 0) and not breaks:
            out[slot] = "never sticks"
        else:
            out[slot] = "stick-slip"
    return out


def _noise_levels(noise, outputs, predicted):
    sigma = np.empty(len(outputs))
    for j, o in enumerate(outputs):
        kind, v = noise[o]
        sigma[j] = v if kind == "sigma" else v * float(np.abs(predicted[:, j]).max(initial=0.0))
        if not sigma[j] > 0:
            raise SimulationError(f"output {o!r}: the relative noise {v:g} of a signal that is zero everywhere "
                                  "in this design is zero; give an absolute sigma for it")
    return sigma


def information(model, names, values, t, outputs, noise, *, t_span=None, prior_sd=None, scale="relative",
                simulate_options=None):
    """The Fisher information of one record, at one parameter point.

    Parameters
    ----------
    model : str or Path
        The model file.
    names : list of str
        The parameters θ whose information is wanted.
    values : dict
        Every parameter value to use (θ, design variables, the rest of the prior).
    t : array
        Sample times.
    outputs : list of str
        Measured outputs (columns of ``Trajectory.to_dataframe()``).
    noise : dict
        output → ``("sigma", σ)`` (absolute) or ``("relative", r)`` (σ = r · the output's peak |value|).
    t_span : (t0, t1), optional
        Default ``(t[0], t[-1])``.
    prior_sd : dict, optional
        name → prior standard deviation; adds 1/sd² to F's diagonal.
    scale : {"relative", "none"}
        The criteria use diag(θ) F diag(θ) (relative parameters) or F.
    simulate_options : dict, optional

    Returns
    -------
    (Information, Trajectory)

    Raises
    ------
    SimulationError
        The simulation does not reach the last sample time, or a sensitivity cannot be had.
    """
    t = np.asarray(t, float)
    fixed = {k: float(v) for k, v in values.items() if k not in names}
    data = {"t": t, **{o: np.zeros(t.size) for o in outputs}}
    exp = Experiment(model, data, outputs=outputs, fixed=fixed, t_span=t_span or (float(t[0]), float(t[-1])),
                     simulate_options=simulate_options)
    par = Parametrization([Parameter(n, initial=float(values[n]), bounds=(None, None)) for n in names], [exp])
    prob = ShootingProblem([exp], par, jac="sensitivity")
    trs = prob.trajectories(par.z0)
    tr = trs[0]
    if not tr.success:
        raise SimulationError(f"the simulation stopped at t = {tr.t[-1]:g} ({tr.status.name}: {tr.message})")
    predicted = prob.predictions(trs)[0]
    J = prob.jacobian(par.z0) @ par.Tinv                        # ∂y/∂θ, rows sample-major (N·m, p)
    if not np.all(np.isfinite(J)):
        raise SimulationError(f"the sensitivities are not finite at {values} ({tr.sensitivity_note})")
    w = np.tile(1.0 / _noise_levels(noise, outputs, predicted), t.size)
    Jw = J * w[:, None]
    F = Jw.T @ Jw
    for k, n in enumerate(names):
        sd = (prior_sd or {}).get(n)
        if sd:
            F[k, k] += 1.0 / float(sd) ** 2
    theta = par.theta0
    return _finish(names, theta, F, scale, stick_information(prob, trs, names), regimes(tr), Jw.shape[0],
                   prob.fallbacks), tr


def _finish(names, theta, F, scale, stick, regime, n, fallbacks):
    cov, flat, svals = _covariance(F, names, theta)
    report, corr = identifiability(names, theta, cov, flat, svals, [""] * len(names))
    not_informed = dict(report["not_identifiable"])
    for k, info in stick.items():      # the physical reason, where there is one
        if k in not_informed or info["kind"] == "none" or F[names.index(k), names.index(k)] <= 0:
            not_informed[k] = info["reason"]
    d = np.abs(theta) if scale == "relative" else np.ones(len(names))
    d = np.where(d > 0, d, 1.0)
    scaled = F * np.outer(d, d)
    with np.errstate(invalid="ignore"):
        se = np.sqrt(np.diag(cov))
    return Information(names, theta, F, scaled, se, corr, not_informed, regime, n, fallbacks)


def average(infos, scale="relative"):
    """One :class:`Information` from several at prior draws: mean F, mean criteria, root-mean predicted variances.

    Singular when any draw is (its reasons are kept, prefixed by the draw).
    """
    first = infos[0]
    F = np.mean([i.fim for i in infos], axis=0)
    values = {k: float(np.mean([i.values[k] for i in infos])) for k in CRITERIA}
    var = np.mean([np.square(i.stderr) for i in infos], axis=0)
    corr = np.mean([i.correlation for i in infos], axis=0)
    why = {}
    for d, i in enumerate(infos):
        for k, v in i.not_informed.items():
            why.setdefault(k, f"prior draw {d}: {v}")
    regime = {}
    for i in infos:
        for s, r in i.regimes.items():
            regime.setdefault(s, set()).add(r)
    regime = {s: (r.pop() if len(r) == 1 else "mixed over the prior") for s, r in regime.items()}
    theta = np.mean([i.theta for i in infos], axis=0)
    d = np.abs(theta) if scale == "relative" else np.ones(len(theta))
    d = np.where(d > 0, d, 1.0)
    return Information(first.names, theta, F, F * np.outer(d, d), np.sqrt(var), corr, why, regime, first.n,
                       sum(i.fallbacks for i in infos), values=values)
