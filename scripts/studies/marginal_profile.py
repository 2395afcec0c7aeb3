"""Where a game's marginal contributions live: mean |v(S + i) - v(S)| by coalition size |S|.

Shapley values weight every size layer equally (1/p each), so the sizes with large marginal
contributions carry most of the information. ShaplEIG's selection does not depend on observed values
(only on the coalitions, through the kernel) and spends its first acquisitions on the extreme sizes
(docs/math.md §11); this profile shows per game whether that is where the information is. Printed per
table folder, averaged over its tables and normalised to the peak size (1.00).

    .venv/bin/python scripts/studies/marginal_profile.py                      # every shared table suite
    .venv/bin/python scripts/studies/marginal_profile.py path/to/folder ...   # your own tables (.npz)
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from shapleig.errors import GameError
from shapleig_tasks.tables import default_tables_dir, discover_tables


def marginal_profile(table: np.ndarray) -> np.ndarray:
    """``float64[p]``: mean over players i and coalitions S not containing i, of |v(S + i) - v(S)|,
    for each size |S| = 0..p-1. ``table``: float64[2^p] values in bit order (code c = sum 2^j)."""
    p = int(table.size).bit_length() - 1
    codes = np.arange(table.size)
    sizes = np.zeros(table.size, dtype=np.int64)
    for j in range(p):
        sizes += (codes >> j) & 1
    total = np.zeros(p)
    count = np.zeros(p)
    for j in range(p):
        without = codes[((codes >> j) & 1) == 0]
        diff = np.abs(table[without | (1 << j)] - table[without])
        total += np.bincount(sizes[without], weights=diff, minlength=p)[:p]
        count += np.bincount(sizes[without], minlength=p)[:p]
    return total / count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", help="table folders (default: the shared suites)")
    args = ap.parse_args(argv)
    folders = [Path(f) for f in args.folders]
    if not folders:
        try:
            folders = [default_tables_dir()]
        except GameError as exc:
            print(exc, file=sys.stderr)
            return 1
    profiles: dict[str, list[np.ndarray]] = defaultdict(list)
    for folder in folders:
        for spec in discover_tables(folder):
            game = spec.load()
            profiles[f"{spec.group} ({game.n_players} players)"].append(marginal_profile(game.bitorder_values))
    print("mean |v(S + i) - v(S)| by |S| = 0, 1, ..., p-1, relative to the largest (averaged over tables)")
    for group, rows in profiles.items():
        mean = np.mean(rows, axis=0)
        print(f"{group:48s} n={len(rows):2d}  " + " ".join(f"{x:.2f}" for x in mean / mean.max()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
