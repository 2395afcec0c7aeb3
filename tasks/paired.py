"""Run-for-run comparisons of two methods in a results table, and tables from earlier checkouts.

The benchmark scripts (``scripts/studies/benchmark_suites.py``, ``benchmark_generality.py``) compare
the default with another method on the same task, seed and budget: per cell the ratio of gm-MSEs
(10 to the mean paired log10 difference), the spread of the paired differences, a paired t-test and
the ratio of mean seconds per run. A method of an earlier checkout is compared the same way after
:func:`with_previous` adds its table's rows under ``"previous:<method>"``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

KEY = ["group", "budget_spec", "task", "seed"]
PREVIOUS_PREFIX = "previous:"


def method_label(text: str) -> str:
    """A method as its results are labelled (options in name order), ``previous:`` kept in front.

    Args:
        text: a method as typed, e.g. ``shapleig:structures=None,probe_degenerate=False``.

    Returns:
        the label its rows carry, e.g. ``shapleig:probe_degenerate=False,structures=None``.
    """
    from shapleig_tasks.methods import parse_method

    if text.startswith(PREVIOUS_PREFIX):
        return PREVIOUS_PREFIX + method_label(text[len(PREVIOUS_PREFIX):])
    return parse_method(text).label


def paired_table(ok: pd.DataFrame, default: str, other: str) -> pd.DataFrame:
    """The default against ``other``, run for run, one row per (group, budget) cell.

    Args:
        ok: results rows without errors: ``group``, ``budget_spec``, ``task``, ``seed``, ``method``,
            ``mse`` and optionally ``wall_s``.
        default: the method compared.
        other: the method it is compared with.

    Returns:
        columns ``suite``, ``budget``, ``ratio`` (10^mean paired log10 difference), ``log10 diff``,
        ``sd``, ``paired p``, each side's log10 range and, with ``wall_s``, ``time ratio`` (mean
        seconds per run of the default over the other's, on the paired runs).
    """
    from scipy.stats import ttest_rel

    a = ok[ok.method == default].set_index(KEY)
    b = ok[ok.method == other].set_index(KEY)
    both = pd.concat({"a": np.log10(a.mse), "b": np.log10(b.mse)}, axis=1).dropna()
    rows = []
    for (suite, spec), cell in both.groupby(level=["group", "budget_spec"]):
        d = cell.a - cell.b
        p = ttest_rel(cell.a, cell.b).pvalue if len(d) > 1 and d.std() > 0 else np.nan
        row = {"suite": suite, "budget": spec, "ratio": 10 ** d.mean(), "log10 diff": d.mean(), "sd": d.std(),
               "paired p": p, "default log10 range": f"{cell.a.min():.1f}..{cell.a.max():.1f}",
               "other log10 range": f"{cell.b.min():.1f}..{cell.b.max():.1f}"}
        if "wall_s" in ok:
            row["time ratio"] = a.wall_s.loc[cell.index].mean() / b.wall_s.loc[cell.index].mean()
        rows.append(row)
    return pd.DataFrame(rows)


def paired_report(ok: pd.DataFrame, default: str, other: str) -> pd.DataFrame:
    """Print :func:`paired_table` and the geometric mean of its ratios per group and overall.

    Args:
        ok: results rows without errors (see :func:`paired_table`).
        default: the method compared.
        other: the method it is compared with.

    Returns:
        the table printed.

    Raises:
        ValueError: no run of ``default`` pairs with one of ``other`` (e.g. a label spelled otherwise).
    """
    table = paired_table(ok, default, other)
    if table.empty:
        raise ValueError(f"no run of {default!r} pairs with a run of {other!r}; methods in the results: "
                         f"{sorted(set(ok.method))} (a method's label lists its options in name order)")
    print(f"\nthe default against {other}, run for run (ratio = 10^mean paired log10 difference = ratio of gm-MSEs)")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    per_suite = table.groupby("suite")["log10 diff"].mean().rpow(10)
    line = ("  geometric mean of the ratios per suite: " + ", ".join(f"{k} {v:.3g}" for k, v in per_suite.items())
            + f"; over all cells {10 ** table['log10 diff'].mean():.3g}; cells above 1.25: {int((table.ratio > 1.25).sum())}"
            f" of {len(table)}")
    if "time ratio" in table:
        line += f"; time per run {table['time ratio'].min():.3g}-{table['time ratio'].max():.3g}x"
    print(line)
    return table


def with_previous(df: pd.DataFrame, path: str | None) -> pd.DataFrame:
    """``df`` plus the rows of an earlier checkout's results table, their methods renamed ``previous:<method>``.

    Only the tasks and seeds ``df`` holds are kept, so the comparison is run for run.

    Args:
        df: this run's results.
        path: a results table (parquet) written by the same script on another checkout; None: ``df`` alone.

    Returns:
        the combined table.
    """
    if not path:
        return df
    old = pd.read_parquet(path)
    old = old[old.task.isin(set(df.task)) & old.seed.isin(set(df.seed))].copy()
    old["method"] = PREVIOUS_PREFIX + old["method"].astype(str)
    return pd.concat([df, old], ignore_index=True)


__all__ = ["KEY", "PREVIOUS_PREFIX", "paired_report", "paired_table", "with_previous"]
