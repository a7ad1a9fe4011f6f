"""Results of a simulation: :class:`Trajectory`, :class:`Event` and their statuses."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..complementarity import HLCP
from .._enum import DocIntEnum
from ..errors import SimulationError
from .events import kept_hlcp
from .export import TableExport
from .modes import Mode

__all__ = ["SimulationStatus", "EventKind", "Event", "Trajectory"]


class SimulationStatus(DocIntEnum):
    """How a simulation ended."""

    SUCCESS = 0, "Reached the end of the time span."
    PARADOX = 1, ("An event HLCP has no solution or several solutions selecting different modes "
                  "(a Painlevé-type paradox: jamming/wedging); see the last event.")
    ZENO = 2, ("Events accumulate (Zeno/chattering): zeno_events transitions within zeno_window (by default 1e-3 "
               "of the span or 1/10 of the forcing's time scale), or as many in a row closer than min_event_spacing.")
    EVENT_LIMIT = 3, "The event budget max_events was used up."
    INTEGRATION_FAILED = 4, "scipy.integrate.solve_ivp failed in a smooth phase (see the message)."
    MODE_FAILURE = 5, "The mode selected at an event does not verify (its forces or accelerations are inconsistent)."
    SOLVER_FAILURE = 6, "The native pivoting solver could not solve an event HLCP and no classification was possible."
    ERROR = 7, "A pympc error (singular mode equations, bad model data at some state) stopped the run; see the message."
    INTERRUPTED = 8, "Interrupted by the user (KeyboardInterrupt); the trajectory up to then is kept."


class EventKind(DocIntEnum):
    """What triggered an event."""

    START = 0, "The initial state: the first mode is chosen by an event HLCP."
    SLIP_STOP = 1, "A slipping slot's slip velocity reached zero (stick or reversal)."
    WALL_SWITCH = 2, "A slot's normal force reached zero (the load may move to the other wall)."
    BREAKAWAY = 3, "A sticking slot's friction reserve μ_s|λ| − |F| reached zero."


@dataclass
class Event:
    """One transition.

    Attributes
    ----------
    time : float
    kind : EventKind
    slot : int or None
        The slot whose event function triggered (None at the start).
    slot_name : str or None
        Its name (set by the :class:`Trajectory` that holds the event; printed).
    mode_before, mode_after : Mode
    hlcp : HLCP or None
        The event HLCP (pairs: one per slot, two per stick candidate); None
        for a system without slots.  One of more than
        :data:`~pympc.dynamics.events.STORED_DENSE_UP_TO` pairs is kept as a
        :class:`~pympc.dynamics.SparseHLCP` (its nonzeros; ``A`` and ``B`` made
        dense on each access), as is the probe's.
    candidates : list of int
        Stick candidates of the HLCP.
    x, y : ndarray
        Its solution used.
    classification : str
        ``"UNIQUE"``, ``"FINITE"``, ``"CONTINUUM"``, ``"NONE"`` (by enumeration) or
        ``"not enumerated"`` (too many pairs).
    solutions : int
        Number of solutions enumerated (points listed).
    solver : str
        How the used point was obtained (``"lemke"``, or the on_ambiguous rule).
    probe : dict or None
        When the HLCP at the event is degenerate (a λ or a stick/slip boundary
        at zero), the mode part it cannot decide is read from the HLCP at a
        probe state a time ``delta`` later: ``{"delta", "hlcp", "x", "y", "parts"}``.
    verified : bool
        The new mode's forces and accelerations are consistent at the event.
    crosscheck : dict
        Solver name → agreement summary (when a cross-check was requested).
    dtime : dict
        With ``simulate(..., sensitivities=...)``: parameter → dτ/dθ of this
        event's time (0 at the start; NaN where it does not exist).
    sensitivity_note : str
        Why ``dtime`` is NaN, if it is.
    """

    time: float
    kind: EventKind
    slot: int | None
    mode_before: Mode | None
    mode_after: Mode
    hlcp: HLCP
    candidates: list
    x: np.ndarray
    y: np.ndarray
    classification: str = "not enumerated"
    solutions: int = 0
    solver: str = "lemke"
    probe: dict | None = None
    verified: bool = True
    crosscheck: dict = field(default_factory=dict)
    report: object = None
    dtime: dict = field(default_factory=dict)
    sensitivity_note: str = ""
    slot_name: str | None = None

    def __post_init__(self):
        self.time = float(self.time)                     # a Python float, whatever the root finder returned
        self.slot = None if self.slot is None else int(self.slot)
        self.hlcp = kept_hlcp(self.hlcp)                 # a large one by its nonzeros (the transition's already)
        if self.probe is not None and self.probe.get("hlcp") is not None:
            self.probe["hlcp"] = kept_hlcp(self.probe["hlcp"])

    def pyomo_model(self):
        """A fresh Pyomo MPEC model of this event's HLCP (``pyomo.mpec.Complementarity``)."""
        from ..mpec import to_pyomo
        if self.hlcp is None:
            raise SimulationError("this system has no slots: its events have no HLCP")
        return to_pyomo(self.hlcp)

    def _json(self):
        d = {"time": self.time, "kind": self.kind.name, "slot": self.slot,
             "mode_before": _mode_json(self.mode_before), "mode_after": _mode_json(self.mode_after),
             **_hlcp_json(self.hlcp, self.x, self.y), "candidates": list(self.candidates),
             "classification": self.classification, "solutions": self.solutions, "solver": self.solver,
             "verified": self.verified, "crosscheck": self.crosscheck, "dtime": self.dtime,
             "sensitivity_note": self.sensitivity_note}
        if self.probe is not None:
            p = self.probe
            d["probe"] = {"delta": p["delta"], "parts": [list(x) for x in p["parts"]],
                          **_hlcp_json(p["hlcp"], p["x"], p["y"])}
        return d

    @classmethod
    def _from_json(cls, d):
        probe = None
        if d.get("probe"):
            p = d["probe"]
            probe = {"delta": p["delta"], "parts": [tuple(x) for x in p["parts"]], **_hlcp_from(p)}
        h = _hlcp_from(d)
        return cls(d["time"], EventKind[d["kind"]], d["slot"], _mode_from(d["mode_before"]), _mode_from(d["mode_after"]),
                   h["hlcp"], d["candidates"], h["x"], h["y"], d["classification"], d["solutions"], d["solver"], probe,
                   d["verified"], d["crosscheck"], dtime=d.get("dtime", {}),
                   sensitivity_note=d.get("sensitivity_note", ""))

    def __repr__(self):
        slot = "" if self.slot is None else f" slot {self.slot_name!r}" if self.slot_name else f" slot {self.slot}"
        pairs = 0 if self.hlcp is None else self.hlcp.n
        return (f"Event(t={self.time:.9g}, {self.kind.name}{slot}, {self.mode_before} -> {self.mode_after}, "
                f"{pairs} pairs, {self.classification})")


def _mode_json(mode):
    return None if mode is None else [list(mode.walls), [int(m) for m in mode.motions]]


def _mode_from(v):
    return None if v is None else Mode(tuple(v[0]), tuple(v[1]))


def _hlcp_json(hlcp, x, y):
    """An HLCP (or None) and its point, as JSON-ready lists."""
    data = {k: None if hlcp is None else getattr(hlcp, k).tolist() for k in ("A", "B", "c")}
    return {**data, "x": np.asarray(x).tolist(), "y": np.asarray(y).tolist()}


def _hlcp_from(d):
    return {"hlcp": None if d["A"] is None else HLCP(d["A"], d["B"], d["c"]), "x": np.array(d["x"]), "y": np.array(d["y"])}


_ARRAYS = ("t", "q", "qd", "normal_force", "friction_force", "slip_velocity", "walls", "motions",
           "kinetic", "potential", "dissipated", "work", "drift")
_SENSITIVITIES = ("dq", "dqd", "dnormal_force", "dfriction_force", "dslot_position", "dslip_velocity")
_OPTIONAL = ("sample_times", "slot_position")      # absent from files written before they existed


@dataclass
class Trajectory(TableExport):
    """A simulated motion.

    Attributes
    ----------
    t : ndarray, shape (N,)
    q, qd : ndarray, shape (N, n)
        Absolute coordinates and velocities of the bodies (``coordinate_names``).
    normal_force, friction_force, slip_velocity : ndarray, shape (N, s)
        Per slot (``slot_names``): λ_k (signed, see the slot convention), F_k, v_k.
    slot_position : ndarray, shape (N, s), or None
        Per slot, the along-slot coordinate s_k = u·(P − A) [m]: the slider point P
        measured along the slot's direction u from the guide's origin A (its rate is
        ``slip_velocity``).  None in files written before it existed.
    sample_times : ndarray or None
        The output times that were asked for (``samples`` or ``t_eval``, within the
        span).  The arrays hold those times and, besides, two rows at every event
        (the state before the transition and after it) and the ends of the span;
        :meth:`sample_rows` picks the requested ones, :meth:`to_dataframe` exports them.
    walls, motions : ndarray of int, shape (N, s)
        The mode over time (σ_k = ±1; Motion −1/0/+1).
    kinetic, potential, dissipated, work : ndarray, shape (N,)
        Energies: dissipated by friction (≥ 0, growing) and work put in by
        non-conservative applied forces and driven constraints.
        ``energy_balance = kinetic + potential + dissipated − work`` is constant.
    drift : ndarray, shape (N,)
        Largest constraint violation |g| (joints and slots).
    events : list of Event
    status : SimulationStatus
    message : str
    parameters : dict
        The parameter values the run used (name → float).
    model_hash : str
        :meth:`System.fingerprint` of the simulated model.
    sensitivity_names : list of str
        The parameters θ of ``simulate(..., sensitivities=...)`` (empty otherwise).
    dq, dqd : ndarray, shape (N, n, p) or None
        ∂q/∂θ and ∂q̇/∂θ at every sample (absolute coordinates, like ``q``).
    dnormal_force, dfriction_force : ndarray, shape (N, s, p) or None
        ∂λ/∂θ and ∂F/∂θ (None from ``simulate(..., force_sensitivities=False)``).
    dslot_position, dslip_velocity : ndarray, shape (N, s, p) or None
        ∂s_k/∂θ and ∂v_k/∂θ (from ``dq``, ``dqd`` and the slot geometry).
    sensitivity_note : str
        Why the sensitivities are NaN from some event on (grazing or degenerate event), if they are.
    initial_violation : dict
        How far the model's initial state was off the constraints, per joint row and slot:
        ``{"position": {name: |g|}, "velocity": {name: |ġ|}, "tolerance": {...}, "over": [...],
        "projected": bool}`` (``projected``: it was above the tolerance and projected on request).
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    normal_force: np.ndarray
    friction_force: np.ndarray
    slip_velocity: np.ndarray
    walls: np.ndarray
    motions: np.ndarray
    kinetic: np.ndarray
    potential: np.ndarray
    dissipated: np.ndarray
    work: np.ndarray
    drift: np.ndarray
    events: list
    status: SimulationStatus
    message: str
    coordinate_names: list
    slot_names: list
    info: dict = field(default_factory=dict)
    parameters: dict = field(default_factory=dict)
    model_hash: str = ""
    sensitivity_names: list = field(default_factory=list)
    dq: np.ndarray | None = None
    dqd: np.ndarray | None = None
    dnormal_force: np.ndarray | None = None
    dfriction_force: np.ndarray | None = None
    sensitivity_note: str = ""
    initial_violation: dict = field(default_factory=dict)
    sample_times: np.ndarray | None = None
    slot_position: np.ndarray | None = None
    dslot_position: np.ndarray | None = None
    dslip_velocity: np.ndarray | None = None

    def __post_init__(self):
        for e in self.events:                # events print their slot by name, as the event table does
            if e.slot is not None and 0 <= e.slot < len(self.slot_names):
                e.slot_name = self.slot_names[e.slot]

    @property
    def success(self):
        return self.status == SimulationStatus.SUCCESS

    @property
    def energy_balance(self):
        """kinetic + potential + dissipated − work: constant along an exact motion."""
        return self.kinetic + self.potential + self.dissipated - self.work

    @property
    def energy_error(self):
        """Largest relative change of the energy balance (relative to the largest energy seen)."""
        e = self.energy_balance
        scale = max(1e-300, np.abs(self.kinetic).max(initial=0) + np.abs(self.potential).max(initial=0)
                    + np.abs(self.work).max(initial=0) + np.abs(self.dissipated).max(initial=0))
        return float(np.abs(e - e[0]).max(initial=0) / scale)

    def coordinate(self, name):
        """The time history of the coordinate ``name`` (e.g. ``"crosshead.x"``)."""
        try:
            return self.q[:, self.coordinate_names.index(name)]
        except ValueError:
            raise SimulationError(f"no coordinate {name!r}; available: {self.coordinate_names}") from None

    def _columns(self):
        """name → (array, column) of every sampled output, named like :meth:`to_dataframe`'s columns."""
        cols = {}
        for i, n in enumerate(self.coordinate_names):
            cols[n], cols[n + "_dot"] = ("q", i), ("qd", i)
        for k, n in enumerate(self.slot_names):
            cols[f"{n}.normal_force"], cols[f"{n}.friction_force"] = ("normal_force", k), ("friction_force", k)
            cols[f"{n}.slip_velocity"] = ("slip_velocity", k)
            if self.slot_position is not None:
                cols[f"{n}.position"] = ("slot_position", k)
        return cols

    def output(self, name):
        """The values of one output at every row, named like a :meth:`to_dataframe` column
        (``"crosshead.x"``, ``"crosshead.x_dot"``, ``"slot.normal_force"``, ``"slot.position"``, ...)."""
        cols = self._columns()
        if name not in cols:
            raise SimulationError(f"no output {name!r}; available: {sorted(cols)}")
        arr, i = cols[name]
        return getattr(self, arr)[:, i]

    def sensitivity(self, name):
        """∂output/∂θ at every sample, shape (N, p), for θ in ``sensitivity_names`` (NaN where undefined).

        Available for coordinates, velocities (``"x_dot"``), the slots' along-slot
        coordinates and slip velocities (``"slot.position"``, ``"slot.slip_velocity"``)
        and normal and friction forces; needs ``simulate(..., sensitivities=[...])``.
        """
        if not self.sensitivity_names:
            raise SimulationError("this trajectory has no sensitivities: simulate(..., sensitivities=['mu', ...])")
        cols = self._columns()
        source = {"q": self.dq, "qd": self.dqd, "normal_force": self.dnormal_force,
                  "friction_force": self.dfriction_force, "slot_position": self.dslot_position,
                  "slip_velocity": self.dslip_velocity}
        if name not in cols:
            raise SimulationError(f"no sensitivity of {name!r}; available: {sorted(cols)}")
        arr, i = cols[name]
        if source[arr] is None:
            why = ("the run left the force sensitivities out (simulate(..., force_sensitivities=True) gives them)"
                   if arr in ("normal_force", "friction_force") else "this trajectory was written without them")
            raise SimulationError(f"no sensitivity of {name!r}: {why}")
        return source[arr][:, i, :]

    def sample_rows(self, times=None):
        """Row indices of the times ``times`` (default: the requested output times, :attr:`sample_times`).

        A time that is also an event time gives the row after the event (the new
        mode's state and forces: the outputs are right-continuous).  Requested
        times the run did not reach (it stopped early: see :attr:`status`) are
        left out when ``times`` is None, and are an error when given.

        Raises
        ------
        SimulationError
            A given time that no row holds (not requested from ``simulate``, or not reached).
        """
        if len(self.t) == 0:
            return np.zeros(0, dtype=int)
        given = times is not None
        if not given:
            if self.sample_times is None:      # a file written before sample_times: every time once
                return np.flatnonzero(np.append(np.diff(self.t) > 0, True))
            times = self.sample_times[self.sample_times <= self.t[-1] * (1 + 1e-12) + 1e-12]
        times = np.asarray(times, dtype=float).reshape(-1)
        idx = np.searchsorted(self.t, times, side="right") - 1
        near = (idx >= 0) & (np.abs(self.t[np.clip(idx, 0, None)] - times) <= 1e-9 * (1.0 + np.abs(times)))
        if not near.all():
            first = times[int(np.argmin(near))]
            reached = f" ({self.status.name}: {self.message})" if first > self.t[-1] else ""
            raise SimulationError(f"no row at t = {first:.9g}: the run did not reach it{reached}, or it was not "
                                  "asked for (simulate(..., t_eval=...) samples the times you need)")
        return idx

    def summary(self):
        """A few lines describing the run."""
        lines = [f"status      {self.status.name}: {self.message}",
                 f"time        {self.t[0]:g} .. {self.t[-1]:g} s, {len(self.sample_rows())} samples "
                 f"({len(self.t)} rows with those before and after each transition), {len(self.events)} events",
                 f"energy      balance error {self.energy_error:.2e} (relative); dissipated {self.dissipated[-1]:.6g} J,"
                 f" work in {self.work[-1]:.6g} J",
                 f"drift       max constraint violation {self.drift.max(initial=0):.2e}"]
        iv = self.initial_violation
        if iv:
            worst = max([0.0, *iv.get("position", {}).values()]), max([0.0, *iv.get("velocity", {}).values()])
            if iv.get("projected"):
                lines.append(f"initial     PROJECTED onto the constraints: {'; '.join(iv['over'][:5])}"
                             f"{'; …' if len(iv['over']) > 5 else ''}")
            else:
                lines.append(f"initial     consistent (largest violation {worst[0]:.2e} in position, "
                             f"{worst[1]:.2e} in velocity)")
        for k, name in enumerate(self.slot_names):
            stick = float(np.mean(self.motions[:, k] == 0)) if len(self.t) else 0.0
            lines.append(f"slot {name:12s} |λ| max {np.abs(self.normal_force[:, k]).max(initial=0):.6g} N, "
                         f"sticking {100 * stick:.0f}% of samples")
        if "crosscheck" in self.info:
            lines.append(f"crosscheck  {self.info['crosscheck']}")
        return "\n".join(lines)

    def event_table(self):
        """The events as a printable table."""
        rows = [f"{'#':>3s} {'time':>12s} {'kind':12s} {'slot':10s} {'pairs':>5s} {'solution set':14s} "
                f"{'mode after':30s} {'check':s}"]
        for i, e in enumerate(self.events):
            slot = "" if e.slot is None else self.slot_names[e.slot]
            cc = " ".join(f"{k}:{'ok' if v.get('agree') else 'DIFF'}" for k, v in e.crosscheck.items())
            pairs = 0 if e.hlcp is None else e.hlcp.n
            rows.append(f"{i:3d} {e.time:12.6f} {e.kind.name:12s} {slot:10s} {pairs:5d} {e.classification:14s} "
                        f"{str(e.mode_after):30s} {'verified' if e.verified else 'NOT VERIFIED'} {cc}".rstrip())
        return "\n".join(rows)

    def save(self, path):
        """Write ``path`` (.npz): arrays, plus events and metadata as JSON, without loss."""
        meta = {"status": self.status.name, "message": self.message, "coordinate_names": self.coordinate_names,
                "slot_names": self.slot_names, "events": [e._json() for e in self.events],
                "info": {k: v for k, v in self.info.items() if _jsonable(v)},
                "parameters": {k: float(v) for k, v in self.parameters.items()}, "model_hash": self.model_hash,
                "sensitivity_names": self.sensitivity_names, "sensitivity_note": self.sensitivity_note,
                "initial_violation": self.initial_violation}
        sens = {k: getattr(self, k) for k in _SENSITIVITIES + _OPTIONAL if getattr(self, k) is not None}
        np.savez_compressed(path, meta=np.array(json.dumps(meta)), **{k: getattr(self, k) for k in _ARRAYS}, **sens)

    @classmethod
    def load(cls, path):
        """Read a trajectory written by :meth:`save`.

        Raises
        ------
        SimulationError
            If the file is missing, unreadable, or not a trajectory written by
            :meth:`save` (the message names the file and what is wrong).
        """
        path = Path(path)
        if not path.is_file():
            raise SimulationError(f"{path}: no such trajectory file")
        try:
            with np.load(path, allow_pickle=False) as f:
                names = set(getattr(f, "files", ()))
                missing = [k for k in ("meta",) + _ARRAYS if k not in names]
                if missing:
                    raise SimulationError(
                        f"{path}: not a pympc trajectory file (no {', '.join(missing)}); trajectories are written "
                        "by Trajectory.save or `pympc simulate`")
                arrays = {k: f[k] for k in _ARRAYS}
                arrays.update({k: f[k] for k in _SENSITIVITIES + _OPTIONAL if k in f.files})
                meta = json.loads(str(f["meta"]))
            extra = {"initial_violation": meta.get("initial_violation", {}),
                     "parameters": meta.get("parameters", {}), "model_hash": meta.get("model_hash", ""),
                     "sensitivity_names": meta.get("sensitivity_names", []),
                     "sensitivity_note": meta.get("sensitivity_note", "")}
            return cls(**arrays, events=[Event._from_json(e) for e in meta["events"]],
                       status=SimulationStatus[meta["status"]], message=meta["message"],
                       coordinate_names=meta["coordinate_names"], slot_names=meta["slot_names"], info=meta["info"],
                       **extra)
        except SimulationError:
            raise
        except Exception as exc:    # a zip that is not one, pickled objects, damaged JSON or arrays, ...
            why = "it holds pickled objects" if "pickle" in str(exc) else f"{type(exc).__name__}: {exc}"
            raise SimulationError(f"{path}: not a readable pympc trajectory file ({why}); trajectories are "
                                  "written by Trajectory.save or `pympc simulate`") from None

    def __repr__(self):
        span = f"{self.t[0]:g}..{self.t[-1]:g} s" if len(self.t) else "empty"
        slots = ", ".join(self.slot_names[:4]) + (f", … ({len(self.slot_names)} slots)" if len(self.slot_names) > 4 else "")
        return (f"Trajectory({self.status.name}, t {span}, {len(self.t)} samples, {len(self.events)} events, "
                f"slots [{slots}])")


def _jsonable(v):
    try:
        json.dumps(v)
        return True
    except TypeError:
        return False
