"""Read-out prototype of the graded Walsh kernel on the archives the current default chose (issue 29).

Input: the archives written by ``graded_archives.py`` (one ``.npz`` per task and seed: the default's
archive to 8p and its own estimates at 2p, 4p, 8p). For every archive prefix of 2p, 4p and 8p
evaluations the Shapley values are read out by several surrogates refitted on that same prefix:

- ``default``:       today's default as the harness reports it (the loop's anytime read-out at
                     2p/4p, after its final refit at 8p: four kernels, influence calibration);
- ``default-refit``: the same four-kernel mixture fitted afresh (cold) on the prefix;
- ``shared``:        the plain shared Hamming kernel (library MAP fit, fixed noise, raw posterior);
- ``G``:             graded shared kernel, g_1..g_3 free with independent log-normal priors around 1,
                     learned noise (prior centred on 1e-6, bounded below at 1e-12); MAP plug-in;
- ``Q``:             graded shared kernel with the g_k a priori on the geometric law (second
                     differences of log g over the orders ~ N(0, 4^2)), learned noise; ``Qfix``: the
                     noise fixed at 1e-6;
- ``Q+-S``:          ``Q`` with and without the size trend, weighed by Laplace evidence, MAP plug-in;
- ``Q+-S-IS``:       the same with the hyperparameters integrated (importance sampling around each
                     Laplace approximation, pooled by evidence; law of total covariance);
- ``QA+-S-IS`` (``--ard``): the graded ARD kernel (per-player log lengthscales shrunk toward the
                     shared one, sd 1), with and without the trend, integrated;
- ``BMA``, ``BMA-IS`` (``--ard``): plain, graded and graded ARD, each with and without the trend (six
                     models), by Laplace evidence with MAP plug-in / integrated.

See ``MODELS`` and ``READOUTS``. Tail rule of the graded kernel: ``--tail hamming`` (g_k = 1 beyond order 3) or ``last``
(g_k = g_3 for every k >= 3). Rows (one per archive, budget, method) go to ``--out`` (parquet);
an existing file is extended (archives already read out are skipped). ``--report`` prints the
tables: gm-MSE ratios to the default per cell and per group, coverage, RMS(error/std), time, and on
the public suites the ratio to the best shapiq 1.8.0 method (anchors, seeds 0-2).

    python scripts/studies/graded_prototype.py --archives /work/notes/w29-archives --out proto.parquet
    python scripts/studies/graded_prototype.py --out proto.parquet --report
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
for path in (ROOT, HERE):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import graded_gp as gg  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

Z95 = 1.959963984540054
MULTIPLES = (2, 4, 8)
N_IS = 32
PUBLIC = ("vit-9", "vit-16", "resnet-14", "bike-dv-10", "bike-dv-10-rf", "california-dv-10",
          "california-le-8", "bike-ge-12", "adult-fs-14")


def library_readout(X: np.ndarray, y: np.ndarray, surrogate: str, size_trend, calibrate, index: str = "SV") -> tuple:
    from shapleig.games.indices import default_hold_out_empty
    from shapleig.gp.index_esp import IndexOperator
    from shapleig.gp.kernel_choice import fit_kernels
    from shapleig.gp.mixture import build_mixture

    op = IndexOperator(X.shape[1], index, hold_out_empty=default_hold_out_empty(index))
    Xf, yf = (X[X.any(axis=1)], y[X.any(axis=1)]) if op.hold_out_empty else (X, y)
    fits = fit_kernels(Xf, yf, surrogate, seed=0, noise=1e-6, noise_convention="standardized", size_trend=size_trend)
    mix = build_mixture([(k.kernel, k.weight, k.hyper) for k in fits], X, y, calibrate=calibrate, operator=op)
    return mix.mean, mix.covariance, {k.kernel: round(k.weight, 4) for k in fits}


# The structural alternatives of the prototype (learned noise unless "fixed"): P the plain Hamming
# kernel (g = 1); Q graded, its log g_k a priori on the geometric law (second differences of
# (0, log g_1, log g_2, log g_3) ~ N(0, 4^2), log g_1 ~ N(0, 2^2): an order the data do not
# constrain continues the decay of the orders below it); QA the same with per-player log
# lengthscales shrunk toward the shared one (sd 2); G graded with independent log g_k ~ N(0, 2^2);
# "S": with the size trend; Qfix: Q with the noise fixed at 1e-6.
Q_PRIOR = dict(g_prior="rw2", rw_sd=4.0)
MODELS = {
    "P": dict(orders=0), "PS": dict(orders=0, trend=True),
    "Q": dict(Q_PRIOR), "QS": dict(Q_PRIOR, trend=True),
    "QA": dict(Q_PRIOR, ard_spread=2.0), "QAS": dict(Q_PRIOR, ard_spread=2.0, trend=True),
    "G": dict(), "Qfix": dict(Q_PRIOR, learn_noise=False),
}
# read-outs combined from the models' stored results: name -> (models, how): "map" one model's MAP
# posterior; "laplace" Laplace-evidence weights over the models, each at its MAP; "is" each model's
# importance-sampled posterior, weighted by its importance-sampling evidence; "hybrid" the
# "laplace" mean with the "is" covariance re-centred on it (the mode's accuracy, the integrated
# spread: Sigma = sum_i w_i (Sigma_i + (mu_i - mu_MAP)(mu_i - mu_MAP)^T))
BMA_SET = ("P", "PS", "Q", "QS", "QA", "QAS")
READOUTS = {
    "G": (("G",), "map"),
    "Qfix": (("Qfix",), "map"),
    "Q": (("Q",), "map"),
    "Q-IS": (("Q",), "is"),
    "Q+-S": (("Q", "QS"), "laplace"),
    "Q+-S-IS": (("Q", "QS"), "is"),
    "Q+-S-hyb": (("Q", "QS"), "hybrid"),
    "QA+-S": (("QA", "QAS"), "laplace"),
    "BMA": (BMA_SET, "laplace"),
    "BMA-IS": (BMA_SET, "is"),
    "BMA-hyb": (BMA_SET, "hybrid"),
    # each model's MAP covariance scaled by the influence factors (the default's read-out, with the
    # empty and grand coalitions left out of the leave-one-out sums; "-infl-all": kept in)
    "Q+-S-infl": (("Q", "QS"), "influence"),
    "BMA-infl": (BMA_SET, "influence"),
    "BMA-infl-all": (BMA_SET, "influence-all"),
    # "-spread": each term's variance raised to the models' disagreement (max_m mu_m - min_m mu_m)^2 / 4
    # over every model whatever its weight (the gated floor of docs/math.md §13)
    "BMA-hyb-spread": (BMA_SET, "hybrid-spread"),
    "BMA-spread": (BMA_SET, "laplace-spread"),
}


def model_specs(tail: str, keys) -> dict[str, gg.Spec]:
    return {k: gg.Spec(k, tail=tail, **{"learn_noise": True, **MODELS[k]}) for k in keys}


def model_results(X: np.ndarray, y: np.ndarray, keys, tail: str, rng: np.random.Generator,
                  index: str = "SV") -> dict[str, dict]:
    """Per model: the MAP posterior of the index and its Laplace evidence; the importance-sampled
    posterior (mixture over the draws) and its evidence ``log mean(weights)``; seconds."""
    from scipy.special import logsumexp

    from shapleig.games.indices import default_hold_out_empty
    from shapleig.gp.index_esp import IndexOperator

    p = X.shape[1]
    op = IndexOperator(p, index, hold_out_empty=default_hold_out_empty(index))
    Xf, yf = X, y
    if op.hold_out_empty:  # the GP models the non-empty coalitions (docs/math.md §14.5)
        keep = X.any(axis=1)
        Xf, yf = X[keep], y[keep]
    ys, mu, sc = gg.standardized(yf)
    out = {}
    for key, spec in model_specs(tail, keys).items():
        t0 = time.perf_counter()
        pr = gg.Problem(Xf, ys, spec)
        fit = gg.laplace(gg.fit_map(pr, gg.default_starts(pr)))
        mean, cov = _posterior(pr, fit.theta, mu, sc, op, X, y)
        t1 = time.perf_counter()
        draws, logw = gg.importance_samples(fit, N_IS, rng)
        means, covs, lws = [], [], []
        for th, lw in zip(draws, logw):
            if not np.isfinite(lw):
                continue
            try:
                m, c = _posterior(pr, th, mu, sc, op, X, y)
            except np.linalg.LinAlgError:
                continue
            means.append(m)
            covs.append(c)
            lws.append(lw)
        lws = np.array(lws)
        w = np.exp(lws - lws.max())
        mean_is, cov_is = gg.mixture(means, covs, w)
        h = pr.unpack(fit.theta)
        info = {"g": np.round(h["g"], 4).tolist(), "l": round(h["l"], 4), "noise": float(f"{h['noise']:.2e}"),
                "ess": round(float(w.sum() ** 2 / np.sum(w**2)), 1)}
        if spec.trend:
            info["size_var"] = round(h["size_var"], 4)
        out[key] = {"mean": mean, "cov": cov, "logz": fit.log_evidence, "mean_is": mean_is, "cov_is": cov_is,
                    "logz_is": float(logsumexp(logw[np.isfinite(logw)]) - np.log(len(logw))),
                    "seconds": t1 - t0, "seconds_is": time.perf_counter() - t1, "info": info}
    return out


def _posterior(pr: gg.Problem, th: np.ndarray, mu: float, sc: float, op, X: np.ndarray, y: np.ndarray):
    """The index posterior; with a held-out empty coalition its exact value enters (docs/math.md §14.5)."""
    mean, cov = gg.index_posterior(pr, th, mu, sc, op)
    if op.hold_out_empty:
        empty = ~X.any(axis=1)
        h = pr.unpack(th)
        prior_mean = mu + sc * h["c"]
        mean = mean + op.empty_column() * (float(y[np.flatnonzero(empty)[0]]) - prior_mean)
    return mean, cov


def combine(res: dict[str, dict], keys, how: str) -> tuple[np.ndarray, np.ndarray, float, dict] | None:
    """A read-out of :data:`READOUTS` from the stored per-model results."""
    keys = [k for k in keys if k in res]
    if how.endswith("-spread"):
        got = combine(res, keys, how[: -len("-spread")])
        if got is None:
            return None
        mean, cov, secs, info = got
        means = np.array([res[k]["mean"] for k in keys])
        floor = 0.25 * (means.max(axis=0) - means.min(axis=0)) ** 2
        sd = np.sqrt(np.clip(np.diag(cov), 1e-300, None))
        f = np.maximum(1.0, np.sqrt(floor) / sd)
        return mean, cov * np.outer(f, f), secs, info
    secs = sum(res[k]["seconds"] + (res[k]["seconds_is"] if how in ("is", "hybrid") else 0.0) for k in keys)
    if how == "map":
        r = res[keys[0]]
        return r["mean"], r["cov"], secs, {}
    le = np.array([res[k]["logz"] for k in keys])
    wl = np.exp(le - le.max())
    mean_l, cov_l = gg.mixture([res[k]["mean"] for k in keys], [res[k]["cov"] for k in keys], wl)
    if how.startswith("influence"):
        field = "scale" if how == "influence" else "scale_all"
        if not all(field in res[k] for k in keys):
            return None
        covs = [res[k]["cov"] * np.outer(res[k][field], res[k][field]) for k in keys]
        mean_f, cov_f = gg.mixture([res[k]["mean"] for k in keys], covs, wl)
        return mean_f, cov_f, secs, {}
    if how == "laplace":
        return mean_l, cov_l, secs, {k: round(float(v / wl.sum()), 4) for k, v in zip(keys, wl) if v / wl.sum() > 1e-3}
    li = np.array([res[k]["logz_is"] for k in keys])
    wi = np.exp(li - li.max())
    mean_i, cov_i = gg.mixture([res[k]["mean_is"] for k in keys], [res[k]["cov_is"] for k in keys], wi)
    info = {k: round(float(v / wi.sum()), 4) for k, v in zip(keys, wi) if v / wi.sum() > 1e-3}
    if how == "is":
        return mean_i, cov_i, secs, info
    shift = mean_i - mean_l
    return mean_l, cov_i + np.outer(shift, shift), secs, info


def score(mean: np.ndarray, cov: np.ndarray, exact: np.ndarray) -> dict:
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    err = np.abs(np.asarray(mean) - exact)
    with np.errstate(divide="ignore", invalid="ignore"):
        z2 = np.where(sd > 0, (err / sd) ** 2, np.where(err > 0, np.inf, 0.0))
    return {"mse": float(np.mean(err**2)), "covered": int(np.sum(err <= Z95 * sd)), "z2": float(np.sum(z2)),
            "players": int(exact.size)}


def _pack(r: dict) -> dict:
    return {"mean": r["mean"].tolist(), "cov": r["cov"].ravel().tolist(), "logz": r["logz"],
            "mean_is": r["mean_is"].tolist(), "cov_is": r["cov_is"].ravel().tolist(), "logz_is": r["logz_is"],
            "seconds_is": r["seconds_is"]}


def _unpack(row) -> dict:
    d = len(row["mean"])
    extra = {}
    for field in ("scale", "scale_all"):
        if field in row and row[field] is not None and not (isinstance(row[field], float) and np.isnan(row[field])):
            extra[field] = np.asarray(row[field])
    return {**extra, "mean": np.asarray(row["mean"]), "cov": np.asarray(row["cov"]).reshape(d, d), "logz": row["logz"],
            "mean_is": np.asarray(row["mean_is"]), "cov_is": np.asarray(row["cov_is"]).reshape(d, d),
            "logz_is": row["logz_is"], "seconds": row["seconds"], "seconds_is": row["seconds_is"]}


def run(archives: Path, out: Path, tail: str, keys: list[str], groups: list[str] | None, seeds: list[int] | None,
        limit: int | None, skip_library: bool, index: str = "SV") -> pd.DataFrame:
    old = pd.read_parquet(out) if out.exists() else None
    have = set(zip(old.file, old.method)) if old is not None else set()
    rows = []
    count = 0
    for f in sorted(archives.glob("*.npz")):
        d = np.load(f)
        group, seed = str(d["group"]), int(d["seed"])
        if (groups and group not in groups) or (seeds is not None and seed not in seeds):
            continue
        todo = [k for k in keys if (f.name, f"m:{k}") not in have]
        library = not skip_library and (f.name, "default-refit") not in have
        if not todo and not library:
            continue
        if limit is not None and count >= limit:
            break
        count += 1
        X, y = d["X"], d["y"]
        exact = d["exact"] if index == "SV" else _exact_index(str(d["task"]), index)
        p = X.shape[1]
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        for m in MULTIPLES:
            n = m * p
            base = {"file": f.name, "task": str(d["task"]), "group": group, "seed": seed, "p": p, "budget": f"{m}p",
                    "var_exact": float(np.var(exact)), "index": index}
            if index == "SV" and f"mean_{m}p" in d.files and (f.name, "default") not in have:
                dm, ds = d[f"mean_{m}p"], d[f"std_{m}p"]
                rows.append({**base, "method": "default", **score(dm, np.diag(ds**2), exact),
                             "seconds": float(d[f"seconds_{m}p"]), "info": ""})
            if library:
                for name, sur, trend, cal in (("default-refit", "auto", "both", True),
                                              ("shared", "shared", False, False)):
                    t1 = time.perf_counter()
                    mean, cov, w = library_readout(X[:n], y[:n], sur, trend, cal, index)
                    rows.append({**base, "method": name, **score(mean, cov, exact),
                                 "seconds": time.perf_counter() - t1, "info": json.dumps({"weights": w})})
            for key, r in model_results(X[:n], y[:n], todo, tail, rng, index).items():
                rows.append({**base, "method": f"m:{key}", **score(r["mean"], r["cov"], exact),
                             "seconds": r["seconds"], "info": json.dumps(r["info"]), **_pack(r)})
        print(f"{f.name}: {time.perf_counter() - t0:.1f} s", flush=True)
        if count % 5 == 0:
            _write(old, rows, out)
    return _write(old, rows, out)


def calibration_pass(archives: Path, out: Path, tail: str, keys: list[str], groups, seeds) -> None:
    """Rows ``c:<model>``: the influence factors of each model at its MAP (the fit is deterministic,
    so these belong to the stored ``m:<model>`` rows), with and without the extremes."""
    from shapleig.gp.index_esp import IndexOperator

    old = pd.read_parquet(out)
    have = set(zip(old.file, old.method))
    if calibration_path(out).exists():
        done = pd.read_parquet(calibration_path(out))
        have |= set(zip(done.file, done.method))
    rows = []
    for f in sorted(archives.glob("*.npz")):
        d = np.load(f)
        group, seed = str(d["group"]), int(d["seed"])
        if (groups and group not in groups) or (seeds is not None and seed not in seeds):
            continue
        todo = [k for k in keys if (f.name, f"c:{k}") not in have and (f.name, f"m:{k}") in have]
        if not todo:
            continue
        t0 = time.perf_counter()
        X, y = d["X"], d["y"]
        p = X.shape[1]
        op = IndexOperator(p, "SV")
        for m in MULTIPLES:
            ys, _, _ = gg.standardized(y[: m * p])
            for key, spec in model_specs(tail, todo).items():
                pr = gg.Problem(X[: m * p], ys, spec)
                fit = gg.fit_map(pr, gg.default_starts(pr))
                rows.append({"file": f.name, "task": str(d["task"]), "group": group, "seed": seed, "p": p,
                             "budget": f"{m}p", "method": f"c:{key}",
                             "scale": gg.influence_scale(pr, fit.theta, op).tolist(),
                             "scale_all": gg.influence_scale(pr, fit.theta, op, drop_extremes=False).tolist()})
        print(f"{f.name}: {time.perf_counter() - t0:.1f} s", flush=True)
    # a file of its own (the main run may be writing --out meanwhile); the report merges it
    cal = calibration_path(out)
    new = pd.DataFrame(rows)
    if cal.exists():
        new = pd.concat([pd.read_parquet(cal), new], ignore_index=True)
    tmp = cal.with_suffix(".tmp.parquet")
    new.to_parquet(tmp)
    os.replace(tmp, cal)


def calibration_path(out: Path) -> Path:
    return out.with_name(out.stem + "-cal.parquet")


def _exact_index(task: str, index: str) -> np.ndarray:
    """Exact values of another index for a table task (public suites and enumerated families)."""
    from shapleig_tasks.catalog import resolve_task
    from shapleig_tasks.generality import make_game

    if "/i=" in task:
        fam, k = task.split("/i=")
        game = make_game(fam, int(k))
    else:
        game = resolve_task(task)[0].game()
    return np.asarray(game.exact_values(index), dtype=np.float64)


def _write(old: pd.DataFrame | None, rows: list[dict], out: Path) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    if old is not None:
        df = pd.concat([old, df], ignore_index=True)
    tmp = out.with_suffix(".tmp.parquet")
    df.to_parquet(tmp)
    os.replace(tmp, out)
    return df


def combined(df: pd.DataFrame, readouts: dict | None = None) -> pd.DataFrame:
    """The rows of every :data:`READOUTS` entry, combined from the stored per-model rows."""
    readouts = READOUTS if readouts is None else readouts
    models = df[df.method.str.startswith("m:")]
    scales = {}
    if "scale" in df:
        for _, r in df[df.method.str.startswith("c:")].iterrows():
            scales[(r.file, r.budget, r.method[2:])] = {"scale": np.asarray(r.scale),
                                                        "scale_all": np.asarray(r.scale_all)}
    rows = []
    for (f, budget), grp in models.groupby(["file", "budget"]):
        res = {r.method[2:]: {**_unpack(r), **scales.get((f, budget, r.method[2:]), {})} for _, r in grp.iterrows()}
        first = grp.iloc[0]
        exact_var = first.var_exact
        base = {c: first[c] for c in ("file", "task", "group", "seed", "p", "budget", "var_exact")}
        exact = None
        for name, (keys, how) in readouts.items():
            if not all(k in res for k in keys):
                continue
            got = combine(res, keys, how)
            if got is None:
                continue
            mean, cov, secs, info = got
            if exact is None:
                # the exact values are not stored with the model rows: recover them from a MAP row
                exact = _exact_from(grp)
            rows.append({**base, "method": name, **score(mean, cov, exact), "seconds": secs,
                         "info": json.dumps(info), "var_exact": exact_var})
    plain = df[~df.method.str.startswith(("m:", "c:"))]
    return pd.concat([plain, pd.DataFrame(rows)], ignore_index=True)


_EXACT: dict[str, np.ndarray] = {}


def _exact_from(grp: pd.DataFrame) -> np.ndarray:
    task = grp.iloc[0].task
    index = grp.iloc[0].get("index", "SV") if "index" in grp else "SV"
    key = f"{task}|{index}"
    if key not in _EXACT:
        if index == "SV":
            _EXACT[key] = np.load(ARCHIVES / grp.iloc[0].file)["exact"]
        else:
            _EXACT[key] = _exact_index(task, index)
    return _EXACT[key]


ARCHIVES = Path("graded_archives")


# -- report ---------------------------------------------------------------------------------------

def gm(x) -> float:
    return float(np.exp(np.mean(np.log(np.maximum(np.asarray(x, dtype=float), 1e-300)))))


def exact_run(df: pd.DataFrame) -> pd.Series:
    """Runs at rounding level (MSE <= 1e-20 x the exact values' variance): calibration is moot there."""
    return df.mse <= 1e-20 * np.maximum(df.var_exact, 1e-300)


# MSEs below this fraction of the exact values' variance are rounding: ratios between two of them
# say nothing, so every MSE is floored here before ratios are taken
ROUNDING = 1e-20


def floored(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(mse=np.maximum(df.mse, ROUNDING * df.var_exact))


def report(df: pd.DataFrame, baseline: str = "default", anchors: Path | None = None,
           others: pd.DataFrame | None = None) -> None:
    df = combined(df)
    df = df[~df.method.str.startswith("m:")]
    raw = df
    df = floored(df)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 40)
    pd.set_option("display.max_rows", 500)
    f3 = lambda x: f"{x:.3g}"  # noqa: E731
    methods = [m for m in df.method.unique()]
    key = ["group", "budget"]
    cells = df.groupby(key + ["method"]).mse.apply(gm).unstack("method")[methods]
    ratio = cells.div(cells[baseline], axis=0)
    print(f"gm-MSE ratio to {baseline} per (group, budget) cell (same archives; < 1 better)")
    print(ratio.to_string(float_format=f3))
    print("\ngeometric mean of the cell ratios per group")
    print(ratio.groupby(level="group").apply(lambda r: r.apply(gm)).to_string(float_format=f3))
    allr = ratio.apply(gm)
    worst = ratio.max()
    above = (ratio > 1.25).sum()
    print("\nover all cells: gm ratio / worst cell / cells above 1.25")
    print(pd.DataFrame({"gm": allr, "worst": worst, ">1.25": above, "cells": ratio.notna().sum()}).T
          .to_string(float_format=f3))
    domain = pd.Series(["public" if g in PUBLIC else ("lightgbm" if g.startswith(("hpi-", "fi-", "dv-")) else "families")
                        for g in ratio.index.get_level_values("group")], index=ratio.index)
    for name, part in ratio.groupby(domain):
        print(f"\n{name} ({len(part)} cells): gm ratio / worst cell / cells above 1.25")
        print(pd.DataFrame({"gm": part.apply(gm), "worst": part.max(), ">1.25": (part > 1.25).sum()}).T
              .to_string(float_format=f3))
    # paired interval on the log ratio per method (runs pooled)
    base = df[df.method == baseline].set_index(["file", "budget"]).mse
    lines = []
    for m in methods:
        if m == baseline:
            continue
        mine = df[df.method == m].set_index(["file", "budget"]).mse
        lr = np.log10(np.maximum(mine, 1e-300)) - np.log10(np.maximum(base.reindex(mine.index), 1e-300))
        lr = lr.dropna()
        se = lr.std() / np.sqrt(len(lr))
        lines.append(f"  {m}: run-level gm ratio {10 ** lr.mean():.3g} (95% {10 ** (lr.mean() - 2 * se):.3g}-"
                     f"{10 ** (lr.mean() + 2 * se):.3g}, {len(lr)} runs)")
    print("\n".join(lines))

    calib = raw[~exact_run(raw)]
    c = calib.groupby(key + ["method"])[["covered", "players", "z2"]].sum()
    cov = (c.covered / c.players).unstack("method")[methods]
    rms = np.sqrt(c.z2 / c.players).unstack("method")[methods]
    print("\ncoverage of 95% intervals per cell (runs at rounding level left out)")
    print(cov.to_string(float_format=lambda x: f"{x:.2f}"))
    print("\nRMS(error/std) per cell")
    print(rms.to_string(float_format=lambda x: f"{x:.2f}"))
    pooled = calib.groupby("method")[["covered", "players"]].sum()
    summ = pd.DataFrame({
        "cover pooled": pooled.covered / pooled.players,
        "cover lowest": cov.min(),
        "cells>=0.85": (cov >= 0.85).sum() / cov.notna().sum(),
        "RMS in [0.5,1.5]": ((rms >= 0.5) & (rms <= 1.5)).sum() / rms.notna().sum(),
        "RMS<0.3": (rms < 0.3).sum(),
        "RMS>2": (rms > 2).sum(),
        "sec/readout": df.groupby("method").seconds.mean(),
    })
    print("\ncalibration and time summary")
    print(summ.T[methods].to_string(float_format=f3))
    nonvote = calib[calib.group != "voting"]
    if len(nonvote) < len(calib):
        pv = nonvote.groupby("method")[["covered", "players"]].sum()
        print("  pooled coverage without voting: " + ", ".join(f"{m} {pv.covered[m] / pv.players[m]:.3f}"
                                                              for m in methods if m in pv.index))
    ex = raw[exact_run(raw)].groupby(["group", "budget", "method"]).size()
    if len(ex):
        print("\nruns at rounding level (MSE <= 1e-20 x var of the exact values), by cell and method")
        print(ex.unstack("method").fillna(0).astype(int).to_string())
    rel = raw.assign(rel=raw.mse / np.maximum(raw.var_exact, 1e-300))
    for fam in ("pairwise", "additive-pairs"):
        sub = rel[(rel.group == fam) & (rel.budget == "4p")]
        if len(sub):
            print(f"\n{fam} at 4p: max MSE / var over runs: "
                  + ", ".join(f"{m} {sub[sub.method == m].rel.max():.2g}" for m in methods))
    if anchors is not None and anchors.is_file():
        anchor_table(df, anchors, methods)
    if others is not None:
        other_table(df, others, methods)


def anchor_table(df: pd.DataFrame, anchors: Path, methods: list[str]) -> None:
    a = pd.read_csv(anchors)
    a = a[a["error"].isna() | (a["error"] == "")]
    suites = {("ImageClassifier_Game", 9): "vit-9", ("ImageClassifier_Game", 14): "resnet-14",
              ("ImageClassifier_Game", 16): "vit-16", ("CaliforniaHousing_DatasetValuation_Game", 10): "california-dv-10",
              ("CaliforniaHousing_LocalExplanation_Game", 8): "california-le-8",
              ("BikeSharing_GlobalExplanation_Game", 12): "bike-ge-12",
              ("AdultCensus_FeatureSelection_Game", 14): "adult-fs-14"}
    a["suite"] = [suites.get((g, p)) for g, p in zip(a.game_type, a.p)]
    bike = a.game_type.eq("BikeSharing_DatasetValuation_Game")
    a.loc[bike, "suite"] = np.where(a.loc[bike, "table_file"].str.contains("random_forest"), "bike-dv-10-rf",
                                    "bike-dv-10")
    best = a.groupby(["suite", "budget_spec", "method"]).mse.apply(gm).groupby(level=[0, 1]).min()
    pub = df[df.group.isin(PUBLIC) & (df.seed <= 2)]
    mine = pub.groupby(["group", "budget", "method"]).mse.apply(gm).unstack("method")[methods]
    mine.index = mine.index.set_names(["suite", "budget_spec"])
    r = mine.div(best.reindex(mine.index), axis=0)
    print("\npublic suites: gm-MSE (seeds 0-2) over the best shapiq 1.8.0 method (anchors)")
    print(r.to_string(float_format=lambda x: f"{x:.3g}"))
    print("  gm over cells: " + ", ".join(f"{m} {gm(r[m].dropna()):.3g}" for m in methods)
          + "\n  cells above 1.25: " + ", ".join(f"{m} {int((r[m] > 1.25).sum())}" for m in methods))


def other_table(df: pd.DataFrame, others: pd.DataFrame, methods: list[str]) -> None:
    """Per family: gm over cells of (method / best other project method), other methods run by the harness."""
    ok = others[(others["error"] == "") & others.seed.isin(set(df.seed))]  # the same seeds
    var = ok.exact.apply(lambda e: float(np.var(np.asarray(e, dtype=float))))
    ok = ok.assign(mse=np.maximum(ok.mse, ROUNDING * var))
    best = ok.groupby(["group", "budget_spec", "method"]).mse.apply(gm).groupby(level=[0, 1]).min()
    best.index = best.index.set_names(["group", "budget"])
    mine = df.groupby(["group", "budget", "method"]).mse.apply(gm).unstack("method")[methods]
    r = mine.div(best.reindex(mine.index), axis=0).dropna(how="all")
    print(f"\ngenerality families: gm-MSE over the best other project method per cell (MSE floored at "
          f"{ROUNDING:g} x var; others: {sorted(set(ok.method))})")
    print(r.to_string(float_format=lambda x: f"{x:.3g}"))
    print("gm over budgets per family")
    print(r.groupby(level="group").apply(lambda x: x.apply(gm)).to_string(float_format=lambda x: f"{x:.3g}"))


def main(argv: list[str] | None = None) -> int:
    global ARCHIVES
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--archives", default="graded_archives")
    ap.add_argument("--out", default="graded_prototype.parquet")
    ap.add_argument("--tail", choices=("hamming", "last"), default="hamming")
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--index", default="SV", help="the index read out (BV and k-SII against default-refit)")
    ap.add_argument("--groups", nargs="+", default=None)
    ap.add_argument("--seeds", default=None, help="e.g. 0,1")
    ap.add_argument("--limit", type=int, default=None, help="at most this many archives")
    ap.add_argument("--skip-library", action="store_true", help="no default-refit / shared read-outs")
    ap.add_argument("--report", action="store_true", help="print the report of --out")
    ap.add_argument("--calibration", action="store_true",
                    help="add the influence factors of the models' MAP fits to --out (rows c:<model>)")
    ap.add_argument("--baseline", default="default")
    ap.add_argument("--anchors", default=str(Path(os.environ.get("SHAPLEIG_SHARED") or ROOT.parent / "shared")
                                             / "data" / "anchors" / "shapiq-1.8.0_public.csv"))
    ap.add_argument("--others", nargs="+", default=None,
                    help="harness results of the other project methods (parquet files)")
    args = ap.parse_args(argv)
    ARCHIVES = Path(args.archives)
    out = Path(args.out)
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    if args.calibration:
        calibration_pass(ARCHIVES, out, args.tail, [k for k in args.models if k in BMA_SET], args.groups, seeds)
        return 0
    if not args.report:
        run(ARCHIVES, out, args.tail, args.models, args.groups, seeds, args.limit, args.skip_library, args.index)
    df = pd.read_parquet(out)
    if calibration_path(out).exists():
        df = pd.concat([df, pd.read_parquet(calibration_path(out))], ignore_index=True)
    others = pd.concat([pd.read_parquet(f) for f in args.others], ignore_index=True) if args.others else None
    report(df, args.baseline if args.index == "SV" else "default-refit", Path(args.anchors), others)
    return 0


if __name__ == "__main__":
    sys.exit(main())
