"""The tree method's assembly (:meth:`TreeMethod.assemble`: one compiled mapping of the absolute equations,
:func:`pympc.mechanics._tree_kernels.tree_equations`) against the NumPy products of its definition.

Oracles: ``A = Tᵀ Z T``, ``f = Tᵀ (Q − Z Ṫẏ)``, ``W T`` and ``b + W Ṫẏ`` by NumPy on the method's own kinematics and
the absolute model's Python evaluation (:meth:`AbsoluteModel.evaluate`); the energies and the power of that
evaluation; and the tree method's accelerations by the orthogonal complement against the general formulation's.
"""

from pathlib import Path

import numpy as np
import pytest

import pympc
from pympc.mechanics import GeneralMethod, TreeMethod, slider_chain

MODELS = Path(__file__).parents[1] / "models"
CASES = ["friction_oscillator", "cross_slide", "slider_crank", "rotating_rod_bead", "planetary_gear", "wheel_rod",
         "chain5"]


def _system(case):
    return slider_chain(int(case[5:])) if case.startswith("chain") else pympc.load_model(MODELS / f"{case}.toml")


@pytest.mark.parametrize("case", CASES)
def test_assemble_equals_the_products_of_its_definition(case, rng):
    tm = TreeMethod(_system(case))
    y0, yd0 = tm.initial_state()
    for trial in range(25):
        y = y0 + 0.05 * rng.standard_normal(tm.n)
        yd = yd0 + 0.5 * rng.standard_normal(tm.n)
        t = float(rng.uniform(0.0, 2.0))
        a = tm.assemble(y, yd, t)
        q, qd, T, rem = tm.kinematics(y, yd)
        (g, J, w, gd), (gN, WN, bN, vN, WT, bT, vT), Q, K, V, P = tm._abs.evaluate(q, qd, t)
        Z = tm._abs.mass
        scale = 1.0 + np.abs(T).max() ** 2 * (np.abs(Z).max() + np.abs(Q).max() + np.abs(rem).max() + 1.0)
        expect = {"M": T.T @ (Z[:, None] * T), "h": T.T @ (Q - Z * rem), "J": J @ T, "w": w + J @ rem,
                  "WN": WN @ T, "bN": bN + WN @ rem, "WT": WT @ T, "bT": bT + WT @ rem}
        for name, value in expect.items():
            got = getattr(a, name)
            assert got.shape == value.shape and got.dtype == np.float64 and got.flags.c_contiguous, name
            np.testing.assert_allclose(got, value, rtol=0, atol=1e-13 * scale, err_msg=name)
        np.testing.assert_array_equal(a.M, a.M.T)
        for name, value in {"g": g, "gdot": gd, "gN": gN, "vN": vN, "vT": vT}.items():   # the absolute values
            np.testing.assert_array_equal(getattr(a, name), value, err_msg=name)
        assert (a.kinetic, a.potential, a.power) == (K, V, P)
        assert a.t == t and np.array_equal(a.holonomic, tm.holonomic)


@pytest.mark.parametrize("case", ["friction_oscillator", "slider_crank", "chain5"])
def test_tree_accelerations_equal_the_general_ones(case, rng):
    """The free accelerations (slots as frictionless normal constraints) of the tree method mapped to absolute
    coordinates against the general method's: two formulations of the same mechanics."""
    system = _system(case)
    tm, gm = TreeMethod(system), GeneralMethod(system)
    y0, yd0 = tm.initial_state()
    for trial in range(5):
        y = y0 + 0.05 * rng.standard_normal(tm.n)
        yd = yd0 + 0.5 * rng.standard_normal(tm.n)
        ydd = tm.accelerations_by_complement(y, yd, 0.3, include_slots=True)
        q, qd, T, rem = tm.kinematics(y, yd)
        b = gm.assemble(q, qd, 0.3)
        B = np.vstack([b.J, b.WN])
        K = np.block([[b.M, -B.T], [B, np.zeros((B.shape[0], B.shape[0]))]])
        qdd = np.linalg.lstsq(K, np.concatenate([b.h, -np.concatenate([b.w, b.bN])]), rcond=None)[0][:gm.n]
        np.testing.assert_allclose(T @ ydd + rem, qdd, atol=1e-9 * (1 + np.abs(qdd).max()))
