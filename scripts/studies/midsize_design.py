"""A small share of random paired mid-size coalitions in the default's design (issue 29, phase 1).

Threshold games (weighted voting) are read out overconfidently because the EIG design holds
almost no mid-size coalitions near the quota. This study runs the default ``DesignLoop`` with one
change: at acquisitions ``it`` with ``it % period in (0, 1)`` it evaluates a uniformly random
coalition of size ceil(p/3)..floor(2p/3) not yet in the archive and then its complement, instead
of the EIG's picks (2 of every ``period`` acquisitions; the posterior is extended exactly as for an
EIG pick and the candidate state rebuilt). Everything else (refits, read-out) is the default's.

For each generality family (instances 0-2) and seed it prints the default's MSE, coverage and
RMS(error/std) at 2p, 4p and 8p with and without the mid-size pairs (the plain runs are the
archives of ``graded_archives.py``, same seeds), and writes the rows to ``--out``.

    python scripts/studies/midsize_design.py --archives /work/notes/w29-archives --period 8 --out mid8.parquet
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a plain script from a checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from shapleig.design.loop import DesignLoop  # noqa: E402
from shapleig.games.coalitions import to_bitmask  # noqa: E402

Z95 = 1.959963984540054


class MidSizeLoop(DesignLoop):
    """The default loop with a random mid-size coalition and its complement every ``period`` acquisitions."""

    def __init__(self, *args, period: int = 8, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.period = int(period)
        self._mid_rng = np.random.default_rng([int(self.seed or 0), 7919])
        self._pending: np.ndarray | None = None

    def _mid_pick(self) -> np.ndarray | None:
        p = self.n_players
        if self._pending is not None:
            z, self._pending = self._pending, None
            return z
        seen = set(to_bitmask(self.X).tolist())
        lo, hi = int(np.ceil(p / 3)), int(np.floor(2 * p / 3))
        for _ in range(1000):
            z = np.zeros(p, dtype=bool)
            z[self._mid_rng.choice(p, int(self._mid_rng.integers(lo, hi + 1)), replace=False)] = True
            if int(to_bitmask(z[None])[0]) not in seen and int(to_bitmask(~z[None])[0]) not in seen:
                self._pending = ~z
                return z
        return None

    def step(self) -> bool:
        if self.pool is None or self.done or self.iteration % self.period not in (0, 1):
            return super().step()
        z = self._mid_pick()
        if z is None:
            return super().step()
        if self._refit_due(1):
            self._fit()
        Z = z[None, :]
        values = self._evaluate(Z)
        code = int(to_bitmask(Z)[0])
        in_pool = np.flatnonzero(to_bitmask(self.pool.W) == code)
        self.available[in_pool] = False
        self.X = np.concatenate([self.X, Z])
        self.y = np.concatenate([self.y, np.asarray(values, dtype=np.float64)])
        self.mixture = self.mixture.extend(Z, values)
        self.posterior = self.mixture.primary.posterior
        self._candidates = None  # the pick did not go through the candidate state: rebuild it
        self._record()
        self.iteration += 1
        self.selected.append(Z.copy())
        self._after_step()
        return True


def run_one(game, seed: int, period: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    p = game.n_players
    snaps: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def record(loop: DesignLoop) -> None:
        if loop.evaluations in (2 * p, 4 * p) and loop.evaluations not in snaps:
            snaps[loop.evaluations] = (loop.estimate_values(), loop.estimate_std())

    loop = MidSizeLoop(game.fresh() if hasattr(game, "fresh") else game, 8 * p, seed=seed, progress=False,
                       callbacks=[record], period=period)
    est = loop.run()
    snaps[loop.evaluations] = (np.asarray(est.values), np.asarray(est.std))
    return snaps


def metrics(mean, std, exact) -> dict:
    err = np.abs(mean - exact)
    with np.errstate(divide="ignore", invalid="ignore"):
        z2 = np.where(std > 0, (err / std) ** 2, np.where(err > 0, np.inf, 0.0))
    return {"mse": float(np.mean(err**2)), "covered": int(np.sum(err <= Z95 * std)), "z2": float(np.sum(z2)),
            "players": int(exact.size)}


def main(argv: list[str] | None = None) -> int:
    from shapleig_tasks.generality import FAMILIES, make_game

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--archives", required=True, help="graded_archives.py output (the plain default's runs)")
    ap.add_argument("--families", nargs="+", default=list(FAMILIES))
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--instances", type=int, default=3)
    ap.add_argument("--period", type=int, default=8)
    ap.add_argument("--out", default="midsize.parquet")
    args = ap.parse_args(argv)
    rows = []
    for fam in args.families:
        for k in range(args.instances):
            game = make_game(fam, k)
            p, exact = game.n_players, game.exact_values()
            for seed in [int(s) for s in args.seeds.split(",")]:
                t0 = time.perf_counter()
                arch = np.load(Path(args.archives) / f"{fam}__i={k}__s{seed}.npz")
                snaps = run_one(game, seed, args.period)
                for m in (2, 4, 8):
                    n = m * p
                    base = {"group": fam, "task": f"{fam}/i={k}", "seed": seed, "budget": f"{m}p"}
                    rows.append({**base, "design": "default", **metrics(arch[f"mean_{m}p"], arch[f"std_{m}p"], exact)})
                    if n in snaps:
                        rows.append({**base, "design": f"mid/{args.period}", **metrics(*snaps[n], exact)})
                print(f"{fam}/i={k} seed {seed}: {time.perf_counter() - t0:.1f} s", flush=True)
    df = pd.DataFrame(rows)
    df.to_parquet(args.out)
    report(df)
    return 0


def report(df: pd.DataFrame) -> None:
    def gm(x):
        return float(np.exp(np.mean(np.log(np.maximum(np.asarray(x, dtype=float), 1e-300)))))

    pd.set_option("display.width", 200)
    key = ["group", "budget", "design"]
    cells = df.groupby(key).mse.apply(gm).unstack("design")
    designs = list(cells.columns)
    other = [d for d in designs if d != "default"][0]
    c = df.groupby(key)[["covered", "players", "z2"]].sum()
    cov = (c.covered / c.players).unstack("design")
    rms = np.sqrt(c.z2 / c.players).unstack("design")
    table = pd.DataFrame({"mse ratio": cells[other] / cells["default"],
                          "cover default": cov["default"], f"cover {other}": cov[other],
                          "rms default": rms["default"], f"rms {other}": rms[other]})
    print(table.to_string(float_format=lambda x: f"{x:.3g}"))
    r = cells[other] / cells["default"]
    print(f"gm of the cell ratios {gm(r):.3g}; per family: "
          + ", ".join(f"{g} {gm(v):.3g}" for g, v in r.groupby(level="group")))


if __name__ == "__main__":
    sys.exit(main())
