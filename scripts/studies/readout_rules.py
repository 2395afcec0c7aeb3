"""Read-out rules compared offline: each run's structure families recorded once, combined many ways.

The default read-out (docs/math.md §13, ``shapleig/gp/structures.py``) combines the fitted mixture
and the structure families of the final archive by a law of total covariance with fixed weights.
Which weights, and which families, is a question about the same runs: the design does not depend
on them (without ``tol``). ``--record`` runs the default on the benchmarks of
``benchmark_calibration.py`` (same games, budgets and seeds) and keeps, per run, every family's
posterior mean and covariance of phi (standardised units), its leave-one-out prediction errors and
variances, and the archive; ``--rules`` then combines them under each rule in seconds and prints
``benchmark_calibration.py``'s report (coverage, RMS(error/std), confidently wrong) per rule. The
rule ``default`` reproduces the product's std (checked per run: ``--check``).

Rules (all keep the fitted mixture's mean, so the MSE is the default's):

- ``default``: the product's weights (``StructurePosterior.family_weights``);
- ``equal``: 1/M for every family, the probe included (the weights before the probe held half);
- ``fitted``: the fitted mixture alone (no structure families);
- ``loo:<floor>``: weights by each family's leave-one-out log predictive density on the archive
  (pseudo-BMA), each floored at ``floor`` and renormalised;
- ``no-kernel-spread``: the ``kernels`` families count only their disagreement with the fitted mean,
  not their own covariance (that mass goes to the fitted mixture);
- ``rough:<c>``: one more family where no probe is present, a rough Hamming kernel (correlation
  ``c`` per mismatched player, outputscale by maximum likelihood) conditioned on the archive, at 1/M;
- ``roughev:<c>:<floor>``: the same family weighed by its leave-one-out evidence against the fitted
  mixture, ``max(floor, sigmoid(L_rough - L_fitted))``, the others sharing the rest equally (the
  product's read-out since issue 35's rough family is ``roughev:0.7:0.05``);
- ``size:<nats>``: a kernel family without the size trend gives its weight to its partner with it
  when the partner's leave-one-out log density is ahead by more than ``nats``.

    SHAPLEIG_SHARED=../shared python scripts/studies/readout_rules.py --record readouts --jobs 2   # 749 runs, ~8 min
    python scripts/studies/readout_rules.py --from readouts   # the rules of DEFAULT_RULES
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT, Path(__file__).resolve().parent):
    if str(path) not in sys.path:  # run as a plain script from a checkout
        sys.path.insert(0, str(path))

import benchmark_calibration as bc  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

DEFAULT_RULES = ["default", "equal", "fitted", "loo:0.05", "no-kernel-spread", "rough:0.5", "roughev:0.7:0.05", "size:5"]


def family_record(mix: Any) -> dict[str, Any]:
    """One family's posterior of phi (standardised units) and its leave-one-out predictions.

    Args:
        mix: a :class:`~shapleig.gp.mixture.MixturePosterior`.

    Returns:
        ``mean`` float64[d], ``cov`` float64[d, d], ``loo``: per component ``(weight, errors[t], variances[t])``.
    """
    loo = []
    for c in mix.components:
        post = c.posterior
        if post.X.shape[0] >= 2:
            errors = post.loo_errors()
            # [K^-1]_ii = 1 / LOO variance; the residuals are errors / sqrt(variance)
            variances = (errors / np.where(post.loo_residuals() == 0, np.inf, post.loo_residuals())) ** 2
            loo.append((float(c.weight), errors, np.where(np.isfinite(variances), variances, np.nan)))
    return {"mean": mix.mean / mix.unit, "cov": mix.standardized_covariance(), "loo": loo}


def record_run(job: dict[str, Any], out: Path) -> None:
    """Run the default on one benchmark job and pickle its read-out parts to ``out`` (skipped if there)."""
    from shapleig import ShaplEIG
    from shapleig.gp.structures import StructurePosterior
    from shapleig.runs.budget import BudgetedGame

    if out.exists():
        return
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    game, exact = bc.make_game(job["how"])
    p = int(game.n_players)
    budget = job["fixed"] if job["fixed"] is not None else job["multiple"] * p
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loop = ShaplEIG.from_options(**job["options"]).make_loop(BudgetedGame(game, int(budget)), seed=int(job["seed"]))
        est = loop.run()
    rec = {k: job[k] for k in ("set", "suite", "game", "budget_spec", "seed")}
    rec.update(p=p, budget=int(budget), exact=exact, values=np.asarray(est.values), std=np.asarray(est.std),
               wall_s=time.perf_counter() - start, X=loop.X.copy(), y=loop.y.copy())
    post = loop.mixture
    rec["unit"] = float(post.unit)
    if isinstance(post, StructurePosterior):
        rec["families"] = {"fitted": family_record(post.fitted),
                           **{name: family_record(m) for name, m in post.others.items()}}
        rec["weights"] = post.family_weights
    else:
        rec["families"] = {"fitted": family_record(post)}
        rec["weights"] = {"fitted": 1.0}
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(rec))
    tmp.replace(out)


def _loo_log_density(fam: dict[str, Any]) -> float:
    """The family's leave-one-out log predictive density summed over the archive (-inf without one)."""
    if not fam["loo"]:
        return -np.inf
    w = np.array([c[0] for c in fam["loo"]])
    dens = np.stack([-0.5 * np.log(2 * np.pi * v) - 0.5 * e**2 / v for _, e, v in fam["loo"]])
    top = np.nanmax(dens, axis=0)
    return float(np.nansum(top + np.log(np.sum((w / w.sum())[:, None] * np.exp(dens - top), axis=0))))


def rough_family(rec: dict[str, Any], correlation: float) -> dict[str, Any]:
    """The product's rough family (:func:`shapleig.gp.structure_readout.rough_family`) at ``correlation``."""
    from shapleig.gp.index_esp import IndexOperator
    from shapleig.gp.structure_readout import rough_family as product_rough_family

    return family_record(product_rough_family(rec["X"], rec["y"], IndexOperator(rec["p"]), True, correlation))


def combine(rec: dict[str, Any], rule: str) -> np.ndarray:
    """The std of phi (raw units) under ``rule`` about the fitted mixture's mean (the module docstring)."""
    fams = dict(rec["families"])
    names = list(fams)
    spread = {n: 1.0 for n in names}  # the share of a family's weight its own covariance counts with
    if rule == "default":
        w = dict(rec["weights"])
    elif rule == "equal":
        w = {n: 1.0 / len(names) for n in names}
    elif rule == "fitted":
        w = {n: float(n == "fitted") for n in names}
    elif rule.startswith("loo:"):
        floor = float(rule.split(":", 1)[1])
        score = np.array([_loo_log_density(fams[n]) for n in names])
        raw = np.exp(score - np.max(score)) if np.isfinite(score).any() else np.ones(len(names))
        raw = np.maximum(raw / raw.sum(), floor)
        w = dict(zip(names, raw / raw.sum()))
    elif rule == "no-kernel-spread":
        w = {n: 1.0 / len(names) for n in names} if "probe" not in names else dict(rec["weights"])
        for n in names:
            if n.startswith("kernel:"):
                spread[n] = 0.0
    elif rule.startswith("size:"):
        # a kernel without the size trend whose partner with it predicts the archive far better
        # (leave-one-out log density ahead by more than the threshold, nats) gives its weight away
        threshold = float(rule.split(":", 1)[1])
        w = dict(rec["weights"])
        for n in [n for n in names if n.startswith("kernel:") and not n.endswith("+size")]:
            partner = n + "+size"
            if partner in w and _loo_log_density(fams[partner]) - _loo_log_density(fams[n]) > threshold:
                w[partner] += w.pop(n)
    elif rule.startswith("roughev:"):
        # the rough family weighed against the fitted mixture by leave-one-out predictive density,
        # floored; the other families share the rest as the default's weights do
        from shapleig.gp.structures import rough_share

        _, c, floor = rule.split(":")
        names = [n for n in names if n != "rough"]  # a recorded rough family is replaced by this rule's
        w = {n: 1.0 / len(names) for n in names} if "probe" not in names else dict(rec["weights"])
        if "probe" not in names:
            fams["rough"] = rough_family(rec, float(c))
            names.append("rough")
            spread["rough"] = 1.0
            share = rough_share(_loo_log_density(fams["fitted"]), _loo_log_density(fams["rough"]), float(floor))
            rec.setdefault("shares", {})[rule] = share  # reported by main: how much weight it took
            w = {n: v * (1.0 - share) for n, v in w.items()}
            w["rough"] = share
    elif rule.startswith("rough:"):
        if "probe" not in names:
            fams["rough"] = rough_family(rec, float(rule.split(":", 1)[1]))
            names.append("rough")
            spread["rough"] = 1.0
        w = {n: 1.0 / len(names) for n in names} if "probe" not in names else dict(rec["weights"])
    else:
        raise SystemExit(f"unknown rule {rule!r}; see the module docstring")
    mu0 = fams["fitted"]["mean"]
    var = np.zeros_like(mu0)
    moved = 0.0
    for n in [n for n in names if n in w]:
        d = fams[n]["mean"] - mu0
        var += w[n] * (spread[n] * np.diag(fams[n]["cov"]) + d**2)
        moved += w[n] * (1.0 - spread[n])
    var += moved * np.diag(fams["fitted"]["cov"])  # a spread a rule drops goes to the fitted mixture
    return rec["unit"] * np.sqrt(np.clip(var, 0.0, None))


def results(records: list[dict[str, Any]], rules: list[str]) -> pd.DataFrame:
    """``benchmark_calibration``'s results rows, one per (run, rule): the rule is the method."""
    rows = []
    for rec in records:
        for rule in rules:
            rows.append({**{k: rec[k] for k in ("set", "suite", "game", "budget_spec", "seed")}, "method": rule,
                         "values": rec["values"].tolist(), "std": combine(rec, rule).tolist(),
                         "exact": np.asarray(rec["exact"]).tolist(), "wall_s": rec["wall_s"], "error": ""})
    return pd.DataFrame(rows)


def load(folder: Path) -> list[dict[str, Any]]:
    """Every recorded run of ``folder``."""
    return [pickle.loads(f.read_bytes()) for f in sorted(folder.glob("*.pkl"))]


def check_default(records: list[dict[str, Any]]) -> int:
    """How many runs' ``default`` std differs from the product's (relative 1e-8): 0 when the rule is the product's."""
    return sum(not np.allclose(combine(r, "default"), r["std"], rtol=1e-8, atol=0) for r in records)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", type=Path, default=None, help="run the benchmarks and record each run into this folder")
    ap.add_argument("--from", dest="source", type=Path, default=None, help="a recorded folder to report on")
    ap.add_argument("--rules", nargs="+", default=DEFAULT_RULES)
    ap.add_argument("--compare", default="default", help="the rule the others are compared with")
    ap.add_argument("--sets", nargs="+", default=list(bc.SETS), choices=bc.SETS)
    ap.add_argument("--quick", action="store_true", help="benchmark_calibration's --quick subset")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args(argv)
    if args.record is not None:
        args.record.mkdir(parents=True, exist_ok=True)
        cal = bc.parse_args(["--sets", *args.sets] + (["--quick"] if args.quick else []))
        todo = [(job, args.record / f"{hashlib.sha256(bc.job_key(job).encode()).hexdigest()[:16]}.pkl")
                for job in bc.jobs(cal, {"default": {}})]
        print(f"{len(todo)} runs into {args.record}", flush=True)
        if args.jobs > 1:
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(args.jobs) as pool:
                list(pool.map(record_run, *zip(*todo)))
        else:
            for job, out in todo:
                record_run(job, out)
    folder = args.source or args.record
    if folder is None:
        raise SystemExit("give --record FOLDER (run and report) or --from FOLDER (report)")
    records = load(folder)
    print(f"{len(records)} runs; default rule differs from the product's std in {check_default(records)}")
    bc.report(results(records, args.rules), args.compare)
    for rule in [r for r in args.rules if r.startswith("roughev:")]:
        shares = np.array([rec["shares"][rule] for rec in records if rule in rec.get("shares", {})])
        print(f"{rule}: the rough family's weight over {shares.size} runs (the others read out the probe): "
              f"median {np.median(shares):.3f}, 90th percentile {np.quantile(shares, 0.9):.3f}, "
              f"99th {np.quantile(shares, 0.99):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
