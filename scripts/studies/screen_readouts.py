"""Screen kernel weightings and read-outs on the same runs: BIC, LOO and stacking weights; gated,
jackknife, LOO-only and raw variance floors.

The default ShaplEIG (BIC weights, which drive the acquisition) runs to 8p on each game; at 2p, 4p
and 8p the two kernels it holds (shared and ARD, each conditioned on the archive so far) are
re-weighed and read out offline:

- weights: ``bic`` (the default), ``loo`` (pseudo-BMA: exp of the summed closed-form leave-one-out
  log predictive densities, hyperparameters frozen), ``stack`` (stacking: the weight maximising
  ``sum_i log sum_m w_m p_m(y_i | y_-i)``), and each kernel alone;
- read-outs (``shapleig.mixture``): ``gated`` (the default), ``jackknife`` (the previous default),
  ``loo`` (LOO-scaled mixture, no floor) and ``raw``.

The acquisitions are those of the BIC default, so a weighting is screened, not run: a candidate
that looks good here must then be run end to end (``benchmark_generality.py``, ``benchmark_suites.py``).

Prints, per (game family or suite, budget): gm-MSE of each weighting over the better of the two
kernels alone; coverage and RMS(error/std) of each read-out under BIC weights; then summaries.

    python scripts/studies/screen_readouts.py --families dominant pairwise symmetric unanimity voting --instances 2
    python scripts/studies/screen_readouts.py --suites california-le-8/first=1 adult-fs-14/first=1 vit-9/first=1
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
from scipy.optimize import minimize_scalar  # noqa: E402

from shapleig.design.loop import DesignLoop  # noqa: E402
from shapleig.gp.kernel_choice import evidence_weights  # noqa: E402
from shapleig.gp.mixture import MixtureComponent, MixturePosterior  # noqa: E402
from shapleig_tasks.catalog import resolve_task  # noqa: E402
from shapleig_tasks.generality import FAMILIES, family_tasks  # noqa: E402

Z95 = 1.959963984540054
WEIGHTINGS = ("bic", "loo", "stack", "ard", "shared")
READOUTS = {"gated": "gated", "jackknife": "jackknife", "loo": "none", "raw": "none"}


def loo_log_density(post) -> np.ndarray:
    """Closed-form leave-one-out log predictive densities of a kernel's posterior (standardised)."""
    _, _, q, alpha = post._deletions(1000, None)
    return -0.5 * np.log(2 * np.pi) + 0.5 * np.log(q) - 0.5 * alpha**2 / q


def weights_of(mix: MixturePosterior, bic: dict[str, float], scheme: str) -> dict[str, float]:
    comps = mix.all_components
    names = [c.name for c in comps]
    if scheme in ("ard", "shared"):
        return {n: float(n == scheme) for n in names}
    if scheme == "bic":
        w = evidence_weights(np.array([bic[n] for n in names]))
    elif scheme == "loo":
        w = evidence_weights(np.array([loo_log_density(c.posterior).sum() for c in comps]))
    else:
        L = np.array([loo_log_density(c.posterior) for c in comps])

        def loss(a: float) -> float:
            return -float(np.sum(np.logaddexp(np.log(max(a, 1e-300)) + L[0], np.log(max(1 - a, 1e-300)) + L[1])))

        a = minimize_scalar(loss, bounds=(0.0, 1.0), method="bounded").x
        w = np.array([a, 1 - a])
    return dict(zip(names, w))


def readout(mix: MixturePosterior, weights: dict[str, float], name: str) -> tuple[np.ndarray, np.ndarray]:
    comps = [MixtureComponent(c.name, max(weights[c.name], 1e-300), 1.0 if name == "raw" else c.tau, c.posterior)
             for c in mix.all_components]
    out = MixturePosterior(comps, floor=READOUTS[name])
    return out.mean, out.std


def run(tasks: list, seeds: int) -> pd.DataFrame:
    rows = []
    for task in tasks:
        game = task.game()
        p, exact = game.n_players, game.exact_values()
        budgets = {2 * p, 4 * p, 8 * p}
        for seed in range(seeds):
            def record(loop: DesignLoop) -> None:
                if loop.evaluations not in budgets or len(loop.mixture.all_components) < 2:
                    return
                bic = {k.kernel: k.log_evidence for k in loop.kernel_fits}
                for scheme in WEIGHTINGS:
                    w = weights_of(loop.mixture, bic, scheme)
                    for name in READOUTS if scheme == "bic" else ("gated",):
                        mean, std = readout(loop.mixture, w, name)
                        err = mean - exact
                        with np.errstate(divide="ignore"):
                            z2 = np.where(std > 0, (err / std) ** 2, np.inf)
                        rows.append({"group": task.group, "task": task.name, "seed": seed,
                                     "budget": f"{loop.evaluations // p}p", "weights": scheme, "readout": name,
                                     "mse": float(np.mean(err**2)), "z2": float(np.mean(z2)),
                                     "cover": float(np.mean(np.abs(err) <= Z95 * std))})

            DesignLoop(game, 8 * p, seed=seed, progress=False, callbacks=[record], final_refit=False).run()
            print(f"  {task.name} seed {seed}", file=sys.stderr)
    return pd.DataFrame(rows)


def gm(x) -> float:
    return float(np.exp(np.mean(np.log(np.maximum(np.asarray(x, dtype=float), 1e-300)))))


def report(df: pd.DataFrame) -> None:
    pd.set_option("display.width", 220)
    pd.set_option("display.max_rows", 500)
    w = df[df.readout == "gated"].groupby(["group", "budget", "weights"]).mse.apply(gm).unstack("weights")
    best = w[["ard", "shared"]].min(axis=1)
    ratio = w[["bic", "loo", "stack"]].div(best, axis=0)
    print("gm-MSE of each weighting over the better kernel alone (same acquisitions: the BIC default's)")
    print(ratio.to_string(float_format=lambda x: f"{x:.3g}"))
    print("  geometric mean: " + ", ".join(f"{k} {gm(ratio[k]):.3g}" for k in ratio)
          + "; worst: " + ", ".join(f"{k} {ratio[k].max():.3g}" for k in ratio))
    b = df[df.weights == "bic"]
    cal = b.groupby(["group", "budget", "readout"]).agg(rms=("z2", lambda x: np.sqrt(np.mean(x))),
                                                          cover=("cover", "mean")).unstack("readout")
    print("\nBIC weights: RMS(error/std) and 95% coverage of each read-out")
    print(cal.to_string(float_format=lambda x: f"{x:.2f}"))
    rms = cal["rms"]
    inside = ((rms >= 0.5) & (rms <= 1.5)).mean()
    pooled = b.groupby("readout").cover.mean()
    for name in READOUTS:
        print(f"  {name}: pooled coverage {pooled[name]:.3f}, lowest cell {cal['cover'][name].min():.2f}, "
              f"RMS in [0.5, 1.5] in {inside[name]:.0%} of cells, median RMS {rms[name].median():.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", nargs="*", default=[], choices=list(FAMILIES))
    ap.add_argument("--instances", type=int, default=2)
    ap.add_argument("--sizes", type=int, nargs="+", default=[8, 12])
    ap.add_argument("--suites", nargs="*", default=[], help="task names, e.g. vit-9/first=1")
    ap.add_argument("--seeds", type=int, default=1)
    args = ap.parse_args(argv)
    tasks = family_tasks(args.families, args.instances, tuple(args.sizes)) if args.families else []
    for name in args.suites:
        tasks += resolve_task(name)
    if not tasks:
        print("screen_readouts: give --families and/or --suites", file=sys.stderr)
        return 2
    report(run(tasks, args.seeds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
