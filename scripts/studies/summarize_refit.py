"""Summarise a refit-policy sweep written by ``shapleig run`` (one parquet): accuracy and time.

For every ShaplEIG configuration (method label) and kernel, per suite (task group) and budget:
the geometric mean of the MSE over tables and seeds, its ratio to the reference configuration of
the same kernel (``--reference``, default refit every step with the numpy engine), and the mean
selection seconds per run at the largest budget. The sweep behind the refit table of docs/benchmarks.md:

    shapleig run --tasks vit-9/first=3 bike-dv-10/first=3 resnet-14/first=3 california-le-8/first=3 \\
        --methods 'shapleig:ard=false,refit=every,fit_engine=numpy' 'shapleig:ard=false,refit=adaptive,fit_engine=numpy' ... \\
        --budgets 2p 4p 8p --seeds 2 --jobs 1 --out refit_sweep.parquet
    python scripts/studies/summarize_refit.py refit_sweep.parquet
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parquet")
    ap.add_argument("--reference", default="refit=every,fit_engine=numpy", help="options naming the reference arm")
    args = ap.parse_args()
    df = pd.read_parquet(args.parquet)
    df = df[df["error"].isna() | (df["error"] == "")] if "error" in df else df
    opts = df["options"].map(json.loads)
    df["kernel"] = opts.map(lambda o: "ARD" if o.get("ard", True) else "shared")
    df["policy"] = opts.map(lambda o: ",".join(f"{k}={v}" for k, v in sorted(o.items()) if k != "ard") or "default")
    ref_items = dict(item.split("=") for item in args.reference.split(","))
    ref_policy = ",".join(f"{k}={v}" for k, v in sorted(ref_items.items()))
    gm = df.groupby(["kernel", "policy", "group", "budget_spec"])["mse"].apply(lambda s: float(np.exp(np.log(s).mean())))
    gm = gm.unstack(["group", "budget_spec"])
    gm.columns = [f"{group} {budget}" for group, budget in gm.columns]
    top = df[df["budget_spec"] == df.groupby("group")["budget_spec"].transform("max")]
    sel = top.groupby(["kernel", "policy"])["selection_s"].mean()
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 40)
    for kernel, block in gm.groupby(level="kernel"):
        ref = block.xs(ref_policy, level="policy") if ref_policy in block.index.get_level_values("policy") else None
        ratio = block.div(ref.iloc[0], axis=1) if ref is not None else block
        out = ratio.copy()
        out["gm ratio"] = np.exp(np.log(ratio).mean(axis=1))
        out["worst"] = ratio.max(axis=1)
        out["sel s/run"] = sel.loc[kernel].reindex(block.index.get_level_values("policy")).to_numpy()
        print(f"\n== {kernel}: gm-MSE ratio to '{ref_policy}' per suite and budget; selection s per run at the largest budget")
        print(out.droplevel("kernel").round(3).to_string())
        print(f"-- {kernel}: gm-MSE")
        print(block.droplevel("kernel").map(lambda v: f"{v:.2e}").to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
