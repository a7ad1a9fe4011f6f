"""The estimation methods of :func:`~pympc.identify.estimate` and their options: a name or an object.

As in :func:`scipy.optimize.minimize`, ``method`` is a name (``"shooting"``,
``"mpec"``, ``"fesd"``: every option at its default) or an options object
(:class:`Shooting`, :class:`Mpec`, :class:`Fesd`) that holds exactly the options of that
method, each validated once, when the object is made.  An option of the other
method is then not a keyword at all: ``Shooting(step=0.01)`` is a
``TypeError``, and :func:`resolve` turns the old keyword spelling
(``estimate(..., starts=8)``) into the object, with a ``DeprecationWarning``
that gives the new spelling, or into an :class:`~pympc.errors.OptionError`
that names the method the option belongs to.

Nothing here imports Pyomo (``import pympc.identify`` stays Pyomo-free).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields
from numbers import Integral, Real

import numpy as np

from ..errors import OptionError

__all__ = ["Shooting", "Mpec", "Fesd", "METHODS", "JACOBIANS", "resolve"]

JACOBIANS = {
    "fd": "finite differences of the simulator (forward by default; fd_scheme='central' for central)",
    "sensitivity": "forward sensitivities from pympc.simulate(..., sensitivities=[...]) (exact through events)",
}
"""The Jacobians of the exact (event-driven) model: option ``jac`` of :class:`Shooting` and :class:`Mpec`."""

STEP = 0.02
"""Default time step of the MPEC route [s] (also :data:`pympc.identify.mpec_route.STEP`)."""

RELAXATION = (1e-3, 1e-4, 1e-6, 1e-8)
"""Default continuation schedule of the MPEC's complementarity relaxation (relative to the data scale²,
see :mod:`pympc.mpec.ipopt`); also :data:`pympc.identify.mpec_route.RELAXATION`."""


def _number(value, what, *, positive=False, nonnegative=False, allow_inf=False):
    if isinstance(value, bool) or not isinstance(value, Real):
        raise OptionError(f"{what} must be a number, got {value!r} ({type(value).__name__})"
                          + ("; write it as a number, not a string" if isinstance(value, str) else ""))
    v = float(value)
    if np.isnan(v) or (not allow_inf and not np.isfinite(v)):
        raise OptionError(f"{what} must be a finite number, got {v}")
    if positive and not v > 0:
        raise OptionError(f"{what} must be > 0, got {v}")
    if nonnegative and not v >= 0:
        raise OptionError(f"{what} must be >= 0, got {v}")
    return v


def _integer(value, what, low):
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise OptionError(f"{what} must be an integer >= {low}, got {value!r}"
                          + (" (a string: write the number)" if isinstance(value, str) else ""))
    if int(value) < low:
        raise OptionError(f"{what} must be >= {low}, got {int(value)}")
    return int(value)


def _flag(value, what):
    if not isinstance(value, (bool, np.bool_)):
        raise OptionError(f"{what} must be True or False, got {value!r}")
    return bool(value)


@dataclass(frozen=True)
class _ExactJacobian:
    """The Jacobian of the exact model (shared by both methods: the shooting fit uses it, both analyses do)."""

    jac: str = "sensitivity"
    fd_step: float | None = None
    fd_scheme: str = "forward"

    def __new__(cls, *args, **kwargs):
        # an option of the other method names where it belongs (OptionError is a TypeError, as Python's own)
        own = _fields(cls)
        for k in kwargs:
            if k not in own:
                owner = [c for c in _CLASSES.values() if k in _fields(c)]
                where = (f"an option of method='{owner[0]._name}' (pympc.identify.{owner[0].__name__}({k}=...))"
                         if owner else "not an option of any method")
                raise OptionError(f"{cls.__name__}: {k!r} is {where}, not of method '{cls._name}'; the options of "
                                  f"{cls.__name__} are {own}")
        return super().__new__(cls)

    def _check_jacobian(self, cls):
        if self.jac not in JACOBIANS:
            raise OptionError(f"{cls}: jac must be one of {sorted(JACOBIANS)}, got {self.jac!r}")
        if self.fd_scheme not in ("forward", "central"):
            raise OptionError(f"{cls}: fd_scheme must be 'forward' or 'central', got {self.fd_scheme!r}")
        if self.fd_step is not None:
            object.__setattr__(self, "fd_step", _number(self.fd_step, f"{cls}: fd_step", positive=True))

    @property
    def name(self):
        """The method's name (``"shooting"`` or ``"mpec"``)."""
        return self._name

    def options(self):
        """``{field: value}`` of every option (JSON-ready: recorded in ``IdentificationResult.method["options"]``)."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out


@dataclass(frozen=True)
class Shooting(_ExactJacobian):
    """Options of ``estimate(..., method=Shooting(...))``: event-driven simulations fitted by least squares.

    Each start runs :func:`scipy.optimize.least_squares` (``trf``, bounds,
    ``x_scale="jac"``) on the weighted residuals of simulations of every
    experiment (:class:`~pympc.identify.ShootingProblem`).  Every field is
    checked when the object is made (:class:`~pympc.errors.OptionError` naming it).

    Parameters
    ----------
    jac : {"sensitivity", "fd"}
        The Jacobian, default ``"sensitivity"``: the simulator's forward sensitivities
        through events (``simulate(..., sensitivities=...)``; where one is undefined — a
        grazing or degenerate event — that Jacobian falls back to finite differences and
        the fallback is counted); ``"fd"``: finite differences of the simulator.
    fd_step : float > 0, optional
        Relative finite-difference step (default None: 1e-6 forward, 1e-4 central, as
        :class:`~pympc.identify.ShootingProblem` sets them).
    fd_scheme : {"forward", "central"}
        Difference scheme, default ``"forward"``.
    starts : int >= 1
        Number of starts, default 1: the initial values (if ``include_initial``), then a
        scrambled Sobol sample over the bounds (``scipy.stats.qmc.Sobol``, ``seed``; the
        bounds must be finite).  Each start ends ``converged`` (a stationary point),
        ``stalled`` (stopped elsewhere, e.g. on a kink), ``flat`` (on a plateau: the outputs
        do not change with the parameters there; such a start is first moved half way to
        the centre of the box, up to 4 times), ``not converged`` or ``failed``.
    include_initial : bool
        The initial values are the first start (default True).
    seed : int >= 0
        Seed of the Sobol sample (default 0).
    max_nfev : int >= 1
        Largest number of residual evaluations per start (default 60), passed to
        ``least_squares``.
    ftol, xtol, gtol : float >= 0
        Tolerances of ``least_squares`` (default 1e-8 each, scipy's own defaults).
    profile_steps : int >= 1
        At most this many refits per side of a profile (default 6):
        :meth:`IdentificationResult.profile <pympc.identify.IdentificationResult.profile>`.
    auto_profile : bool
        Also profile every parameter that the Jacobian cannot decide — in a flat direction,
        at a bound, or with a Wald interval wider than its box — unless what stick phases
        prove decides it or there are fewer informative values than parameters (default
        True); the profile then gives its verdict (:mod:`pympc.identify.verdict`), so the
        verdict does not depend on whether a profile was asked for.  Listed in
        ``result.method["auto_profiled"]``.
    """

    starts: int = 1
    include_initial: bool = True
    seed: int = 0
    max_nfev: int = 60
    ftol: float = 1e-8
    xtol: float = 1e-8
    gtol: float = 1e-8
    profile_steps: int = 6
    auto_profile: bool = True

    _name = "shooting"

    def __post_init__(self):
        self._check_jacobian("Shooting")
        set_ = object.__setattr__
        set_(self, "starts", _integer(self.starts, "Shooting: starts", 1))
        set_(self, "include_initial", _flag(self.include_initial, "Shooting: include_initial"))
        set_(self, "seed", _integer(self.seed, "Shooting: seed", 0))
        set_(self, "max_nfev", _integer(self.max_nfev, "Shooting: max_nfev", 1))
        for k in ("ftol", "xtol", "gtol"):
            set_(self, k, _number(getattr(self, k), f"Shooting: {k}", nonnegative=True))
        set_(self, "profile_steps", _integer(self.profile_steps, "Shooting: profile_steps", 1))
        set_(self, "auto_profile", _flag(self.auto_profile, "Shooting: auto_profile"))

    @property
    def least_squares(self):
        """The keywords passed to :func:`scipy.optimize.least_squares` (per start and per profile refit)."""
        return dict(max_nfev=self.max_nfev, ftol=self.ftol, xtol=self.xtol, gtol=self.gtol)


@dataclass(frozen=True)
class Mpec(_ExactJacobian):
    """Options of ``estimate(..., method=Mpec(...))``: the whole trajectory as one Pyomo MPEC.

    The model of :mod:`pympc.identify.mpec_model` (first-order time stepping of step
    ``step``: the estimate is O(step) off the exact model's, measured with μ fitted and
    with μ and μ_s together, see that module), fitted once from the initial values
    (:func:`pympc.identify.mpec_route.fit_mpec`: a walk over the pairs' branches and
    breakaway steps; the relaxed MPEC solved by ``pympc.ipopt`` if the walk does not
    verify) and checked (dynamics and complementarity residuals, in
    ``result.method["mpec"]``); the Pyomo model is ``result.model``.  One start, no
    profiles (those are :class:`Shooting`'s).  Every field is checked when the object
    is made (:class:`~pympc.errors.OptionError` naming it).

    Parameters
    ----------
    step : float > 0
        Time step in seconds (default :data:`STEP` = 0.02, the value of
        :data:`pympc.identify.mpec_route.STEP`).
    relaxation : sequence of float > 0
        Continuation schedule of the relaxed MPEC (default :data:`RELAXATION`, that of
        :data:`pympc.identify.mpec_route.RELAXATION`).
    static_penalty : float >= 0, optional
        Weight of μ_s − μ in the objective (default None: :data:`pympc.identify.mpec_model.STATIC_PENALTY`
        for the relaxed MPEC, 0 for the walk).
    time_limit : float > 0, optional
        The solver's time limit in seconds (default None, or ``inf``: no limit).
    jac, fd_step, fd_scheme
        The exact model's Jacobian at the MPEC estimate, from which the covariance and
        the identifiability come (as in :class:`Shooting`; same defaults).
    """

    step: float = STEP
    relaxation: tuple = RELAXATION
    static_penalty: float | None = None
    time_limit: float | None = None

    _name = "mpec"

    def __post_init__(self):
        self._check_jacobian("Mpec")
        set_ = object.__setattr__
        set_(self, "step", _number(self.step, "Mpec: step (a time step in seconds)", positive=True))
        relax = self.relaxation
        if isinstance(relax, (str, bytes)) or not hasattr(relax, "__iter__"):
            raise OptionError(f"Mpec: relaxation must be a sequence of positive numbers, got {relax!r}")
        relax = tuple(_number(v, "Mpec: relaxation entries", positive=True) for v in relax)
        if not relax:
            raise OptionError("Mpec: relaxation must list at least one value (the default is "
                              f"{RELAXATION})")
        set_(self, "relaxation", relax)
        if self.static_penalty is not None:
            set_(self, "static_penalty", _number(self.static_penalty, "Mpec: static_penalty", nonnegative=True))
        if self.time_limit is not None:
            limit = _number(self.time_limit, "Mpec: time_limit (seconds; None for no limit)", positive=True,
                            allow_inf=True)
            set_(self, "time_limit", None if np.isinf(limit) else limit)


@dataclass(frozen=True)
class Fesd(_ExactJacobian):
    """Options of ``estimate(..., method=Fesd(...))``: the switch-detecting whole-trajectory model (FESD).

    Every record becomes the Radau IIA model of :func:`pympc.identify.fesd.trajectory_model` (finite
    elements with switch detection: every event on an element boundary, so the estimate is the exact
    model's to the collocation's order), built from a simulation at the start values whose modes fix the
    active set; the records share the parameters in one NLP, solved by ``pympc.ipopt``
    (:func:`pympc.identify.fesd_fit.fit_records`), and the estimate is verified by simulating every record at
    it (same event sequence, outputs within ``verify_tol``), with up to ``walks`` rebuilds when an event
    crossed a sample time.  The covariance and the identifiability come from the exact model's Jacobian at
    the estimate (``jac``, as for :class:`Mpec`); ``result.method["fesd"]`` holds the fit's facts, the Pyomo
    model is ``result.model``.  One start, no profiles.  The data's first sample must be at the initial time.
    Every field is checked when the object is made (:class:`~pympc.errors.OptionError` naming it).

    Parameters
    ----------
    elements : int >= 1
        Finite elements per sample interval (default 4; an interval with more events than ``elements − 1``
        is refused by name).
    stages : int >= 1
        Radau IIA stages (default 3: order 5).
    walks : int >= 1
        At most this many model builds (default 8; a fit that needs them all is rare: from a start 3–5 % off
        the 30 s oscillator record's estimate it takes 5, whose answer with 4 was an element held at its bound, a
        constrained minimum 0.1–0.2 standard errors off the estimate).
    verify_tol : float > 0
        Largest accepted |model − simulation| of an output at the estimate (default 1e-5).
    forward : bool
        Fix the active set of a forward MPEC solve at the start values instead of the simulation's (default
        False; the older, slower route).
    refine : int >= 0
        At most this many doublings of ``elements`` when an answer has the simulation's event sequence but its
        outputs miss ``verify_tol`` (the elements too coarse), each solved again from that answer (default 2;
        0: such an answer is reported as not verified).
    jac, fd_step, fd_scheme
        The exact model's Jacobian at the estimate (as in :class:`Shooting`; same defaults).
    """

    elements: int = 4
    stages: int = 3
    walks: int = 8
    verify_tol: float = 1e-5
    forward: bool = False
    refine: int = 2

    _name = "fesd"

    def __post_init__(self):
        self._check_jacobian("Fesd")
        set_ = object.__setattr__
        set_(self, "elements", _integer(self.elements, "Fesd: elements", 1))
        set_(self, "stages", _integer(self.stages, "Fesd: stages", 1))
        set_(self, "walks", _integer(self.walks, "Fesd: walks", 1))
        set_(self, "verify_tol", _number(self.verify_tol, "Fesd: verify_tol", positive=True))
        set_(self, "forward", _flag(self.forward, "Fesd: forward"))
        set_(self, "refine", _integer(self.refine, "Fesd: refine", 0))


METHODS = {
    "shooting": "simulate event by event and fit with scipy.optimize.least_squares (default): Shooting(...)",
    "mpec": "the whole trajectory as one Pyomo MPEC (first-order time stepping), solved by pympc.ipopt: Mpec(...)",
    "fesd": "the switch-detecting whole-trajectory model (Radau IIA, events on element boundaries), solved by "
            "pympc.ipopt and verified by simulation: Fesd(...)",
}
"""The methods of :func:`~pympc.identify.estimate`, by name."""

_CLASSES = {"shooting": Shooting, "mpec": Mpec, "fesd": Fesd}


def _fields(cls):
    return [f.name for f in fields(cls)]


def resolve(method, legacy=None):
    """The options object of ``method`` (a name, :class:`Shooting`, :class:`Mpec` or :class:`Fesd`) and the old
    keywords ``legacy``.

    The old spelling ``estimate(..., method="mpec", step=0.01)`` still works for one
    release, with a ``DeprecationWarning`` giving the new one
    (``method=Mpec(step=0.01)``).  An option of another method, or an old keyword next
    to an options object, is an :class:`~pympc.errors.OptionError` that names the method
    and where the option belongs.
    """
    legacy = dict(legacy or {})
    if isinstance(method, type) and issubclass(method, tuple(_CLASSES.values())):
        method = method._name           # the class itself: its defaults, as its name gives them
    if isinstance(method, tuple(_CLASSES.values())):
        given = method
        cls = type(method)
    elif isinstance(method, str) and method in _CLASSES:
        given, cls = None, _CLASSES[method]
    else:
        raise OptionError(f"method must be one of {sorted(METHODS)} or an options object "
                          f"(pympc.identify.Shooting(...), pympc.identify.Mpec(...), pympc.identify.Fesd(...)), "
                          f"got {method!r}")
    name = cls._name
    known = {n for c in _CLASSES.values() for n in _fields(c)}
    unknown = sorted(k for k in legacy if k not in known)
    if unknown:
        raise OptionError(f"estimate() has no option {unknown}; the options of method '{name}' are the fields of "
                          f"pympc.identify.{cls.__name__}: {_fields(cls)}")
    foreign = sorted(k for k in legacy if k not in _fields(cls))
    if foreign:
        owner = next(c for c in _CLASSES.values() if foreign[0] in _fields(c) and c is not cls)
        spelled = ", ".join(f"{k}={legacy[k]!r}" for k in foreign)
        if name == "mpec" and owner is Shooting:
            raise OptionError(f"{foreign} are options of method='shooting' (pympc.identify.Shooting), not of method "
                              "'mpec': method='mpec' solves once from the initial values (use "
                              f"method=Shooting({spelled}) for a multistart)")
        raise OptionError(f"{foreign} are options of method='{owner._name}' (pympc.identify.{owner.__name__}), not "
                          f"of method '{name}': write method={owner.__name__}({spelled})")
    if given is not None:
        if legacy:
            spelled = ", ".join(f"{k}={v!r}" for k, v in legacy.items())
            raise OptionError(f"give {sorted(legacy)} in the options object passed as method, "
                              f"{cls.__name__}(..., {spelled}), not as keywords of estimate()")
        return given
    if legacy:
        spelled = ", ".join(f"{k}={v!r}" for k, v in legacy.items())
        warnings.warn(f"estimate(..., {spelled}) is deprecated and will be removed in the next release: write "
                      f"estimate(..., method={cls.__name__}({spelled})) (pympc.identify.{cls.__name__})",
                      DeprecationWarning, stacklevel=3)
    return cls(**legacy)
