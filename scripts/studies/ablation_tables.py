"""Ablation on real value tables: ShaplEIG (EIG acquisition) vs the same GP with random selection.

A thin wrapper over :mod:`shapleig_tasks.ablation` (the ``shapleig ablate`` command), kept for its
defaults: the ViT-9 image classifier and BikeSharing dataset valuation (p = 10) table suites, the
first ``--tables`` tables of each, ``--seeds`` seeds, one run per table, seed and acquisition to 8p
(the anytime trace gives 2p and 4p), ARD lengthscales (``--shared-lengthscale``: one) and
``refit="every"``. Prints the mean MSE against the exact values, its standard error over tables x
seeds, the ratio to EIG (> 1 means EIG is better) and how often each arm beat EIG on the same table
and seed; ``--out DIR`` also writes the ablation's files (table, traces, plot).

    python scripts/studies/ablation_tables.py                                  # 3 tables x 3 seeds per game
    python scripts/studies/ablation_tables.py --tables 1 --seeds 1 --refit never   # smoke run
    python scripts/studies/ablation_tables.py --shared-lengthscale             # one lengthscale
    python scripts/studies/ablation_tables.py --acquisitions eig uncertainty random my.py:MyAcq

Tables come from the shipped subset (3 per suite) or $SHAPLEIG_SHARED/data/games.
"""

from __future__ import annotations

import argparse

GAMES = ("vit-9", "bike-dv-10")
BUDGET_FACTORS = (2, 4, 8)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line.

    Args:
        argv: the arguments (None: ``sys.argv``).

    Returns:
        The parsed namespace.
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=3, help="tables per suite (default 3)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per table (default 3)")
    ap.add_argument("--refit", default="every", help="refit schedule of both arms (default every)")
    ap.add_argument("--games", nargs="+", default=list(GAMES), help=f"table suites (default {' '.join(GAMES)})")
    ap.add_argument("--acquisitions", nargs="+", default=["eig", "random"],
                    help="names or module:Class / file.py:Class (default eig random)")
    ap.add_argument("--shared-lengthscale", action="store_true", help="one lengthscale for all players in every arm")
    ap.add_argument("--budget-factor", type=int, default=max(BUDGET_FACTORS),
                    help="largest budget in units of p; reported budgets above it are skipped")
    ap.add_argument("--out", default=None, help="also write the ablation's files to this folder")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the ablation and print its table.

    Args:
        argv: the arguments (None: ``sys.argv``).

    Returns:
        0.
    """
    args = parse_args(argv)
    from shapleig_tasks.ablation import run_ablation
    from shapleig_tasks.cli_common import print_frame

    budgets = [f"{f}p" for f in BUDGET_FACTORS if f <= args.budget_factor] or [f"{args.budget_factor}p"]
    options = {"refit": args.refit, "surrogate": "shared" if args.shared_lengthscale else "ard"}
    ablation = run_ablation([f"{game}/first={args.tables}" for game in args.games], args.acquisitions, budgets,
                            args.seeds, options=options)
    table = ablation.table()
    setup = f"refit={args.refit}, " + ("one shared lengthscale" if args.shared_lengthscale else "ARD lengthscales")
    print_frame(table.set_index(["game", "budget_spec", "acquisition"])[["runs", "mse", "se", "ratio_to_eig",
                                                                         "wins_vs_eig"]],
                f"MSE vs exact Shapley values (mean +- s.e. over {args.tables} tables x {args.seeds} seeds; {setup})")
    if "eig" in ablation.labels:
        others = table[table["acquisition"] != "eig"]
        print("EIG mean MSE below every other arm at every budget:", bool((others["ratio_to_eig"] > 1).all()))
    if args.out:
        for path in ablation.write(args.out).values():
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
