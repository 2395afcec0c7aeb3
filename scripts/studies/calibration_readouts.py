"""Coverage of the default's 95% intervals under four read-outs of the same runs.

For each public suite (tables 1, 10, 11; seeds 0..S-1) the default ShaplEIG runs to 8p; at 2p, 4p
and 8p the same posterior is read out four ways, from the kernels the loop holds at that step:

- ``raw``:        the MAP mixture (each kernel's GP covariance, plus the spread between kernels);
- ``loo``:        each kernel's covariance scaled by its leave-one-out calibration factor;
- ``jackknife``:  the raw mixture with each player's variance raised to the jackknife variance;
- ``default``:    both (the read-out ``ShaplEIG()`` reports).

Prints the coverage (|estimate - exact| <= 1.96 std, pooled over tables, seeds and players) per
suite and budget and pooled over everything, and the lowest cell of each read-out.

    python scripts/studies/calibration_readouts.py                       # 9 suites x 3 tables x 3 seeds
    python scripts/studies/calibration_readouts.py --suites vit-9 bike-ge-12 --seeds 2

Needs the shared tables (``SHAPLEIG_SHARED`` / ``../shared/data/games``) for tables 10 and 11.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a plain script from a checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from shapleig.design.loop import DesignLoop  # noqa: E402
from shapleig.gp.mixture import MixtureComponent, MixturePosterior  # noqa: E402
from tasks.catalog import resolve_task  # noqa: E402

SUITES = ("vit-9", "vit-16", "resnet-14", "bike-dv-10", "bike-dv-10-rf", "california-dv-10",
          "california-le-8", "bike-ge-12", "adult-fs-14")
TABLE_SEEDS = (1, 10, 11)
Z95 = 1.959963984540054


def readouts(mix: MixturePosterior) -> dict[str, np.ndarray]:
    """The std of each read-out, built from the loop's mixture components (same means)."""
    def variant(calibrated: bool, jackknife: bool) -> np.ndarray:
        comps = [MixtureComponent(c.name, c.weight, c.tau if calibrated else 1.0, c.posterior)
                 for c in mix.components]
        return MixturePosterior(comps, jackknife=jackknife).std

    return {"raw": variant(False, False), "loo": variant(True, False),
            "jackknife": variant(False, True), "default": variant(True, True)}


def run(suites: list[str], seeds: int) -> pd.DataFrame:
    rows = []
    for suite in suites:
        for k in TABLE_SEEDS:
            game = resolve_task(f"{suite}/seed={k}")[0].game()
            p, exact = game.n_players, game.exact_values()
            budgets = {2 * p, 4 * p, 8 * p}
            for seed in range(seeds):
                seen: dict[int, tuple[np.ndarray, dict[str, np.ndarray]]] = {}

                def record(loop: DesignLoop) -> None:
                    if loop.evaluations in budgets:
                        seen[loop.evaluations] = (loop.mixture.mean, readouts(loop.mixture))

                loop = DesignLoop(game, 8 * p, seed=seed, progress=False, callbacks=[record])
                loop.run()
                seen[loop.evaluations] = (loop.mixture.mean, readouts(loop.mixture))  # after the final refit
                for n, (mean, stds) in seen.items():
                    err = np.abs(mean - exact)
                    for name, std in stds.items():
                        rows.append({"suite": suite, "budget": f"{n // p}p", "readout": name,
                                     "covered": int(np.sum(err <= Z95 * std)), "players": p})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suites", nargs="+", default=list(SUITES))
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (default 3)")
    args = ap.parse_args(argv)
    df = run(args.suites, args.seeds)
    cells = df.groupby(["suite", "budget", "readout"])[["covered", "players"]].sum()
    cov = (cells.covered / cells.players).unstack("readout")[["raw", "loo", "jackknife", "default"]]
    pd.set_option("display.width", 200)
    print("coverage of 95% intervals per (suite, budget), pooled over tables, seeds and players")
    print(cov.to_string(float_format=lambda x: f"{x:.2f}"))
    pooled = df.groupby("readout")[["covered", "players"]].sum()
    pooled = (pooled.covered / pooled.players)[cov.columns]
    print("\npooled over everything:  " + "  ".join(f"{k} {v:.3f}" for k, v in pooled.items()))
    print("lowest cell:             " + "  ".join(f"{k} {v:.2f}" for k, v in cov.min().items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
