"""Write the synthetic measurements shipped in ``examples/data/`` (fixed seed, stated noise).

    python examples/make_identification_data.py

* ``friction_oscillator.csv``: ``models/friction_oscillator.toml`` (true μ = 0.3,
  μ_s = 0.4), 0 … 10 s at 20 Hz, the position ``mass.x`` with Gaussian noise of
  1 % of the peak |x| (σ = 0.00706 m).
* ``cross_slide.parquet``: ``models/cross_slide.toml`` with P = 5 N (true μ1 = 0.3,
  μ2 = 0.5), 0 … 1.5 s at 40 Hz, the crosshead's ``crosshead.x`` and the
  particle's ``particle.y``, each with Gaussian noise of 1 % of its peak |value|.

Seed 20261203 (``numpy.random.default_rng``).  The noise levels and true values
are also written into ``examples/data/README.md``.
"""

from pathlib import Path

import numpy as np

from pympc.identify import synthetic_record

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "examples" / "data"
SEED = 20261203
NOISE = 0.01          # relative to the peak |value| of each output


def main():
    rng = np.random.default_rng(SEED)       # one stream for both records, in this order
    OUT.mkdir(parents=True, exist_ok=True)
    t = np.round(np.arange(0, 201) * 0.05, 10)
    osc, s_osc = synthetic_record(ROOT / "models" / "friction_oscillator.toml", t, ["mass.x"], NOISE, rng)
    osc.to_csv(OUT / "friction_oscillator.csv", index=False, float_format="%.10g")
    t = np.round(np.arange(0, 61) * 0.025, 10)
    cs, s_cs = synthetic_record(ROOT / "models" / "cross_slide.toml", t, ["crosshead.x", "particle.y"], NOISE, rng,
                                P=5.0)
    cs.to_parquet(OUT / "cross_slide.parquet", index=False)
    lines = ["# Synthetic identification data",
             "", f"Written by `examples/make_identification_data.py` (seed {SEED}); Gaussian noise, σ = 1 % of "
             "the peak |value| of each output.", "",
             "| file | model | true values | outputs and σ |", "|---|---|---|---|",
             "| friction_oscillator.csv | models/friction_oscillator.toml | mu = 0.3, mu_s = 0.4 | "
             + ", ".join(f"{k}: {v:.6g}" for k, v in s_osc.items()) + " |",
             "| cross_slide.parquet | models/cross_slide.toml with P = 5 | mu1 = 0.3, mu2 = 0.5 | "
             + ", ".join(f"{k}: {v:.6g}" for k, v in s_cs.items()) + " |", ""]
    (OUT / "README.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
