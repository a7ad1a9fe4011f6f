"""Shared fixtures and reference problems: every test reads its data from here."""

from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).parent / "data"
SICONOS = sorted(DATA.glob("*.dat"))


def random_p_matrix(rng, n, kind):
    """A P-matrix of a few families: SPD, positive-definite-plus-skew, triangular."""
    if kind == "spd":
        G = rng.standard_normal((n, n))
        return G @ G.T + 0.1 * np.eye(n)
    if kind == "pd_skew":
        G = rng.standard_normal((n, n))
        S = rng.standard_normal((n, n))
        return G @ G.T + 0.1 * np.eye(n) + (S - S.T)
    L = np.tril(rng.standard_normal((n, n)), -1)
    return L + np.diag(rng.uniform(0.5, 2.0, n))


@pytest.fixture
def rng():
    return np.random.default_rng(20261202)
