"""shapleig ablate: compare acquisitions (EIG, uncertainty, random, your own) on the same GP.

    shapleig ablate --tasks wvg-7 soug-8 --budgets 2p 4p 8p --seeds 5 \\
        --acquisitions eig uncertainty random my_acquisitions.py:LargestFirst --out ablation/

Every acquisition runs as ShaplEIG with only the acquisition swapped, once per task and seed up
to the largest budget (the anytime trace gives every smaller one). An acquisition is a registered
name (eig, uncertainty, random, leverage) or module:Class / path/to/file.py:Class naming a
subclass of shapleig.design.acquisition.Acquisition. Writes OUT/ablation.csv and OUT/ablation.md
(mean MSE +- standard error over tables x seeds at each budget, the ratio to EIG and how often
each arm beat EIG), OUT/traces.csv (MSE after every evaluation), OUT/runs.csv and OUT/mse.png
(MSE against evaluations, one panel per game).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from shapleig_tasks.cli_common import UsageError, print_frame


def ablation_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ShaplEIG options every arm shares: ``--refit``, ``--pool-size``, ``--batch-size``, ``--option``.

    Args:
        args: the parsed command line.

    Returns:
        The options (``--option key=value`` values parsed as ``shapleig run`` parses them).
    """
    from shapleig_tasks.methods import parse_options, parse_value

    opts: dict[str, Any] = {}
    for text in args.option or ():
        opts.update(parse_options(text, where=f" in --option {text!r}"))
    if args.refit is not None:
        opts["refit"] = parse_value(args.refit)
    if args.pool_size is not None:
        opts["pool_size"] = args.pool_size
    if args.batch_size is not None:
        opts["batch_size"] = args.batch_size
    return opts


def cmd_ablate(args: argparse.Namespace) -> int:
    """Run the ablation, print its table and write the files.

    Args:
        args: the parsed command line.

    Returns:
        The exit status (0).
    """
    from shapleig.errors import ShapleigError
    from shapleig_tasks.ablation import DEFAULT_ACQUISITIONS, output_paths, run_ablation
    from shapleig_tasks.harness import check_output_file
    from shapleig_tasks.plots import check_figure_path

    out = Path(args.out)
    try:
        if out.exists() and not out.is_dir():
            raise ValueError(f"--out {out} exists and is not a folder")
        check_figure_path(out / "mse.png")
        for path in output_paths(out, plot=not args.no_plot).values():
            check_output_file(path)  # a FIFO among them would block the write after the whole ablation
        start = time.perf_counter()
        ablation = run_ablation(_split(args.tasks), _split(args.acquisitions or DEFAULT_ACQUISITIONS), args.budgets, args.seeds,
                                options=ablation_options(args), n_jobs=args.jobs, progress=not args.quiet,
                                log=None if args.quiet else print)
    except (ValueError, TypeError, ShapleigError) as exc:
        raise UsageError(str(exc)) from exc
    table = ablation.table().set_index(["game", "budget_spec", "acquisition"])
    print_frame(table[["budget", "runs", "mse", "se", "ratio_to_eig", "wins_vs_eig"]],
                "acquisition ablation: mean MSE +- SE over tables x seeds")
    paths = ablation.write(out, plot=not args.no_plot)
    print(f"wrote {', '.join(str(p) for p in paths.values())} in {time.perf_counter() - start:.1f} s")
    return 0


def _split(items: list[str]) -> list[str]:
    return [s for item in items for s in (x.strip() for x in item.split(",")) if s]


def add_ablate_parser(sub: Any) -> None:
    """Register the ``ablate`` subcommand on the ``shapleig`` parser's subparsers.

    Args:
        sub: the subparsers action of the ``shapleig`` parser.
    """
    p = sub.add_parser("ablate", help="compare acquisitions (EIG, uncertainty, random, your own) on the same GP",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="+", required=True, help="task names (see `shapleig tasks`)")
    p.add_argument("--acquisitions", nargs="+", default=None,
                   help="registered names or module:Class / file.py:Class (default: eig uncertainty random, "
                        "shapleig_tasks.ablation.DEFAULT_ACQUISITIONS)")
    p.add_argument("--budgets", nargs="+", default=["2p", "4p", "8p"],
                   help="budgets reported in the table: integers or multiples of p (default: 2p 4p 8p)")
    p.add_argument("--seeds", nargs="+", default=["3"],
                   help="a count N (seeds 0..N-1), a list 0,1,2 or a range 0-4 (default: 3)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--refit", default=None, help="refit schedule of every arm (e.g. every, never)")
    p.add_argument("--pool-size", type=int, default=None, help="candidate pool size of every arm")
    p.add_argument("--batch-size", type=int, default=None, help="coalitions per acquisition step")
    p.add_argument("--option", action="append", metavar="KEY=VALUE[,KEY=VALUE]",
                   help="any other ShaplEIG option for every arm (e.g. surrogate=ard); repeatable")
    p.add_argument("--jobs", type=int, default=1,
                   help="parallel workers (joblib; default 1, -1 = all cores; checked by the harness)")
    p.add_argument("--no-plot", action="store_true", help="skip OUT/mse.png")
    p.add_argument("--quiet", action="store_true", help="no progress bars or notes")
    p.set_defaults(func=cmd_ablate)


__all__ = ["ablation_options", "add_ablate_parser", "cmd_ablate"]
