"""Planar mechanisms: bodies, joints, forces, the System, and two formulations.

:class:`GeneralMethod` keeps absolute coordinates and multipliers;
:class:`TreeMethod` uses Huston's tree coordinates.  Both produce an
:class:`Assembly` (mass matrix, forces, constraint and slot Jacobians) for the
dynamics layer.  A joint is one :class:`Joint` class (:mod:`.joints`) that owns
its rows; a new one registers itself by its ``TYPE``.  :func:`load_model` reads TOML model files.
"""

from .assembly import Assembly
from .expressions import Expression, parse
from .general import GeneralMethod
from .generators import slider_chain, write_slider_chain
from .joints import JOINT_TYPES, Joint
from .modelfile import dump_model, load_model, save_model
from .system import (
    GROUND, Body, Damper, Distance, Gear, Gravity, Parameter, Particle, PointForce, Prescribed, Revolute, RigidBody,
    Rolling, Slot, Spring, System, Torque,
)
from .tree import TreeMethod

__all__ = [
    "System", "Parameter", "Body", "RigidBody", "Particle", "Joint", "JOINT_TYPES", "Revolute", "Slot", "Rolling", "Gear", "Distance",
    "Prescribed", "Gravity", "PointForce", "Torque", "Spring", "Damper", "GROUND",
    "GeneralMethod", "TreeMethod", "Assembly", "Expression", "parse", "load_model", "save_model", "dump_model", "slider_chain",
    "write_slider_chain",
]
