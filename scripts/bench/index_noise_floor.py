"""How much of a table game an index of order k can see: the Walsh spectrum and the all-zero estimate.

For each table: the share of the game's variance (under the uniform distribution over coalitions)
in each Walsh order 1..p, the share above ``--max-order``, and the MSE of the estimate that sets
every term to zero, over the terms of orders 1..k as ``bench_indices.py`` scores them. An estimator whose MSE is near that of the zero estimate has
learned nothing about the terms; when most of the variance lies above order k, the budget has to
resolve the high orders first, and a cell's ratio between two methods is decided by noise.

    SHAPLEIG_SHARED=../shared python scripts/bench/index_noise_floor.py --index FBII --max-order 3 \\
        --games AdultCensus_LocalExplanation_Game/14 SentimentAnalysis_Game/14

(the first table of each ``<game type>/<p>``; enumerates 2^p values, p <= 20).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from shapleig_tasks.tables import TableGame  # noqa: E402

SHARED = Path(os.environ.get("SHAPLEIG_SHARED", Path(__file__).resolve().parents[3] / "shared"))
GAMES = SHARED / "data" / "games"


def walsh_energy_by_order(bitorder_values: np.ndarray) -> np.ndarray:
    """Variance of the game per Walsh order: float64[p + 1] (order 0 holds the squared mean).

    The game as a function of s_i = 2 z_i - 1 has the expansion sum_S c_S prod_{i in S} s_i; under
    uniform coalitions the variance is sum_{S != {}} c_S^2. ``c`` is the normalised Walsh-Hadamard
    transform of the table in bit order (value of coalition code c at index c).

    Args:
        bitorder_values: float64[2^p], the table in bit order.

    Returns:
        float64[p + 1], sum of c_S^2 over |S| = d, for d = 0..p.
    """
    c = np.array(bitorder_values, dtype=np.float64)
    n = c.size
    p = n.bit_length() - 1
    if n != 1 << p:
        raise ValueError(f"the table holds {n} values, not a power of two")
    h = 1
    while h < n:  # in-place fast transform, butterflies of width 2h
        c = c.reshape(-1, 2, h)
        c = np.stack([c[:, 0] + c[:, 1], c[:, 0] - c[:, 1]], axis=1).reshape(n)
        h *= 2
    c /= n
    order = np.array([bin(i).count("1") for i in range(n)])
    return np.bincount(order, weights=c**2, minlength=p + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", required=True, help="<game type>/<p> (the first table of each)")
    parser.add_argument("--index", default="FBII")
    parser.add_argument("--max-order", type=int, default=3)
    args = parser.parse_args()
    for spec in args.games:
        game_type, _, p = spec.partition("/")
        folder = GAMES / game_type / p
        firsts = sorted(folder.glob("*_1.npz"))  # the tables bench_indices.py uses (file _1 of each kind)
        table = firsts[0] if firsts else sorted(folder.glob("*.npz"))[0]
        game = TableGame.from_npz(table)
        energy = walsh_energy_by_order(game.bitorder_values)
        variance = energy[1:].sum()
        share = energy[1:] / variance
        exact = game.exact_values(index=args.index, max_order=args.max_order)
        zero_mse = float(np.mean(exact**2))  # the terms of orders 1..k, as bench_indices.py scores them
        print(f"{spec} ({table.name}): variance {variance:.4g}; share by Walsh order 1..{min(8, game.n_players)}: "
              + " ".join(f"{x:.3f}" for x in share[:8]))
        print(f"  above order {args.max_order}: {share[args.max_order:].sum():.3f}; "
              f"{args.index} order <= {args.max_order}: {exact.size} terms, MSE of the all-zero estimate {zero_mse:.4g}")


if __name__ == "__main__":
    main()
