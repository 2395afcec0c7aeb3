"""Coverage and sharpness of the default's 95% intervals under several read-outs of the same runs.

For each public suite (tables 1, 10, 11; seeds 0..S-1) the default ShaplEIG runs to 8p; at 2p, 4p
and 8p the same posterior (the kernels the loop holds at that step, same means) is read out:

- ``raw``:           the MAP mixture (each kernel's GP covariance plus the spread between kernels);
- ``influence``:     each kernel's std scaled by sqrt(max(1, tau_j)), the influence-weighted LOO
                     calibration (the default, ``calibrate=True``);
- ``jackknife``:     each kernel scaled by its LOO factor, variances raised to the jackknife
                     variance (``calibrate="jackknife"``, the previous default);
- ``influence+jk/2``: the influence std floored at half the jackknife read-out's std;
- ``influence+preq``: each kernel's variance factor floored at the mean squared one-step-ahead
                     innovation of the later half of its archive (``ShapleyPosterior.innovations``).

The acquisitions do not depend on the read-out, so each equals a run with that read-out, up to the
LOO factors that a ``calibrate="jackknife"`` run freezes between refits (within 1% of the std on
ViT-9). Prints
per read-out the coverage (|estimate - exact| <= 1.96 std) per suite and budget, pooled, the lowest
cell, and RMS(error/std) per cell: the share of cells within [0.5, 1.5], below 0.3, the median.

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
from shapleig.gp.mixture import MixtureComponent, MixturePosterior, influence_scale, loo_calibration  # noqa: E402
from shapleig_tasks.catalog import resolve_task  # noqa: E402

SUITES = ("vit-9", "vit-16", "resnet-14", "bike-dv-10", "bike-dv-10-rf", "california-dv-10",
          "california-le-8", "bike-ge-12", "adult-fs-14")
TABLE_SEEDS = (1, 10, 11)
Z95 = 1.959963984540054
READOUTS = ("raw", "influence", "jackknife", "influence+jk/2", "influence+preq")


def _prequential_factor(post) -> float:
    """max(1, mean squared innovation over the later half of the archive)."""
    z = post.innovations()
    return max(1.0, float(np.mean(z[z.size // 2:] ** 2))) if z.size >= 2 else 1.0


def readouts(mix: MixturePosterior) -> dict[str, np.ndarray]:
    """The std of each read-out of :data:`READOUTS`, from the loop's mixture components."""
    def std(tau, scale, floor: str = "none") -> np.ndarray:
        comps = [MixtureComponent(c.name, c.weight, tau(c), c.posterior, scale(c)) for c in mix.components]
        return MixturePosterior(comps, floor=floor).std

    one, none = (lambda c: 1.0), (lambda c: None)
    influence = std(one, lambda c: influence_scale(c.posterior))
    jackknife = std(lambda c: loo_calibration(c.posterior), none, floor="jackknife")
    preq = std(one, lambda c: np.maximum(influence_scale(c.posterior), np.sqrt(_prequential_factor(c.posterior))))
    return {"raw": std(one, none), "influence": influence, "jackknife": jackknife,
            "influence+jk/2": np.maximum(influence, 0.5 * jackknife), "influence+preq": preq}


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
                        with np.errstate(divide="ignore", invalid="ignore"):
                            z2 = np.where(std > 0, (err / std) ** 2, np.where(err > 0, np.inf, 0.0))
                        rows.append({"suite": suite, "budget": f"{n // p}p", "readout": name,
                                     "covered": int(np.sum(err <= Z95 * std)), "players": p,
                                     "z2": float(np.sum(z2))})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suites", nargs="+", default=list(SUITES))
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (default 3)")
    args = ap.parse_args(argv)
    df = run(args.suites, args.seeds)
    cells = df.groupby(["suite", "budget", "readout"])[["covered", "players", "z2"]].sum()
    cov = (cells.covered / cells.players).unstack("readout")[list(READOUTS)]
    rms = np.sqrt(cells.z2 / cells.players).unstack("readout")[list(READOUTS)]
    pd.set_option("display.width", 200)
    print("coverage of 95% intervals per (suite, budget), pooled over tables, seeds and players")
    print(cov.to_string(float_format=lambda x: f"{x:.2f}"))
    print("\nRMS of error/std per (suite, budget) (1: honest and sharp; < 1 too wide)")
    print(rms.to_string(float_format=lambda x: f"{x:.2f}"))
    pooled = df.groupby("readout")[["covered", "players"]].sum()
    pooled = pooled.covered / pooled.players
    print("\nread-out          pooled  lowest cell  RMS in [0.5, 1.5]  RMS < 0.3  median RMS")
    for name in READOUTS:
        r = rms[name]
        print(f"{name:16s}  {pooled[name]:.3f}   {cov[name].min():.2f}         {((r >= 0.5) & (r <= 1.5)).mean():.0%}"
              f"                {int((r < 0.3).sum()):2d}/{r.size}      {r.median():.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
