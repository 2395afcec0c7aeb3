"""Seeded synthetic game families for the generality benchmark (``scripts/studies/benchmark_generality.py``).

Each family draws a game of p players from a seed and serves it as a full value table
(:class:`shapleig_tasks.tables.TableGame`): the 2^p values are enumerated once, so the exact Shapley values
come from enumeration (``TableGame.exact_values``) and evaluations cost a lookup. The families
cover structures the public suites do not isolate:

- ``dominant``:   a few dominant players; ``v(S) = log(1 + sum_{i in S} w_i)`` with 2-3 weights
  in [3, 6] and the rest in [0, 0.3];
- ``unanimity``:  sparse high-order interactions, a sum of 6 unanimity games on coalitions of
  3 .. p/2 players with coefficients in [-1, 1] (:class:`shapleig_tasks.synthetic.SumOfUnanimityGame`);
- ``pairwise``:   additive plus noise-free pairwise terms, ``sum_i w_i z_i + sum_(i,j) b_ij z_i z_j``
  with w_i ~ N(0, 1) and p pairs b_ij ~ N(0, 1);
- ``symmetric``:  near-symmetric, ``3 sqrt(|S|) + 0.05 sum_{i in S} w_i`` (w_i ~ N(0, 1));
- ``voting``:     weighted voting ``1[sum_{i in S} c_i >= C]``, integer weights 1..9 plus one or two
  heavy players (10..20), quota half the total weight, rounded up
  (:class:`shapleig_tasks.synthetic.WeightedVotingGame`);
- ``additive-pairs``: a strong additive background with sparse pairwise terms,
  ``sum_i w_i z_i + sum_(i,j) b_ij z_i z_j`` with w_i ~ N(0, 3^2) and max(1, p // 4) distinct pairs
  b_ij ~ N(0, 1): the Shapley values are ``w_i + sum_j b_ij / 2``;
- ``soum``:       sparse unanimity sums of any order as in shapiq's SOUM: 3..8 unanimity games on
  coalitions of 1..p players (sizes uniform), coefficients in [-1, 1];
- ``threshold``:  weighted majority with real-valued weights, ``1[sum_{i in S} w_i > q]`` with
  w_i lognormal (median 1, log-sd 1) and the quota q uniform between 30% and 70% of the total
  weight: a game that agrees with one smooth structure on most coalitions and departs from it
  on a few that carry much Shapley weight (a singleton, its complement);
- ``noisy``:      a deterministic additive-plus-pairwise game (w_i ~ N(0, 1), p // 2 pairs
  b_ij ~ N(0, 0.5^2)) observed with fresh Gaussian noise on every call, sd 0.1 x the std of its
  values over all coalitions (:class:`NoisyGame`); the exact values are the noiseless game's;
- ``ensemble``:   ensemble selection: the players are p scikit-learn models fitted on bootstrap
  samples of a bundled dataset (diabetes, R^2, at p = 8 and 12; breast cancer, accuracy, at p = 10), and v(S) is the
  validation score of the average of S's predictions (:func:`ensemble_values`); v(empty) is the
  score of the training mean / class prevalence. p = 8, 10, 12 in turn (2^p scores enumerated).

Instances: instance k of a family has p = ``SIZES[k % len(SIZES)]`` (8, 12, 16; ``ensemble``:
``FAMILY_SIZES``) and its own seed.
"""

from __future__ import annotations

import zlib
from typing import Callable

import numpy as np

from shapleig.games.coalitions import all_coalitions, as_coalition_matrix, to_bitmask
from shapleig_tasks.catalog import Task
from shapleig_tasks.synthetic import SumOfUnanimityGame, WeightedVotingGame
from shapleig_tasks.tables import TableGame

SIZES = (8, 12, 16)
# families whose instances cycle other player counts (ensemble selection enumerates 2^p fitted-model
# averages, and its players are models: a dozen is a realistic library)
FAMILY_SIZES: dict[str, tuple[int, ...]] = {"ensemble": (8, 10, 12)}
# noise sd of the ``noisy`` family, relative to the std of the noiseless values over all coalitions
NOISE_FRACTION = 0.1


def _dominant(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    w = rng.uniform(0.0, 0.3, p)
    heavy = rng.choice(p, size=int(rng.integers(2, 4)), replace=False)
    w[heavy] = rng.uniform(3.0, 6.0, heavy.size)
    return lambda Z: np.log1p(Z @ w)


def _unanimity(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    game = SumOfUnanimityGame(p, n_terms=6, seed=int(rng.integers(2**31)), variant="shapiq",
                              min_size=3, max_size=max(3, p // 2))
    return game


def _pairwise(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    w = rng.normal(size=p)
    pairs = np.array([rng.choice(p, 2, replace=False) for _ in range(p)])
    b = rng.normal(size=p)
    return lambda Z: Z @ w + (Z[:, pairs[:, 0]] * Z[:, pairs[:, 1]]) @ b


def _symmetric(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    w = rng.normal(size=p)
    return lambda Z: 3.0 * np.sqrt(Z.sum(axis=1)) + 0.05 * (Z @ w)


def _voting(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    c = rng.integers(1, 10, p)
    heavy = rng.choice(p, size=int(rng.integers(1, 3)), replace=False)
    c[heavy] = rng.integers(10, 21, heavy.size)
    return WeightedVotingGame(c, int(np.ceil(c.sum() / 2)))


def _additive_pairs(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    w = 3.0 * rng.normal(size=p)
    n_pairs = min(max(1, p // 4), p * (p - 1) // 2)
    all_pairs = np.array([(i, j) for i in range(p) for j in range(i + 1, p)])
    pairs = all_pairs[rng.choice(len(all_pairs), n_pairs, replace=False)]
    b = rng.normal(size=n_pairs)
    return lambda Z: Z @ w + (Z[:, pairs[:, 0]] * Z[:, pairs[:, 1]]) @ b


def _soum(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    n_terms = int(rng.integers(3, 9))
    return SumOfUnanimityGame(p, n_terms=n_terms, seed=int(rng.integers(2**31)), variant="shapiq",
                              min_size=1, max_size=p)


def _threshold(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    w = rng.lognormal(0.0, 1.0, p)
    quota = rng.uniform(0.3, 0.7) * w.sum()
    return lambda Z: (Z @ w > quota).astype(np.float64)


def _noisy_base(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    """The noiseless game of the ``noisy`` family (the noise is added by :class:`NoisyGame`)."""
    w = rng.normal(size=p)
    pairs = np.array([rng.choice(p, 2, replace=False) for _ in range(max(1, p // 2))])
    b = 0.5 * rng.normal(size=len(pairs))
    return lambda Z: Z @ w + (Z[:, pairs[:, 0]] * Z[:, pairs[:, 1]]) @ b


# scikit-learn base learners of the ``ensemble`` family: (name, builder(rng) -> unfitted model, regression?)
def _ensemble_library(regression: bool, rng: np.random.Generator):
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    seed = int(rng.integers(2**31))
    kind = int(rng.integers(3))
    if regression:
        return [lambda: DecisionTreeRegressor(max_depth=int(rng.integers(2, 8)), random_state=seed),
                lambda: KNeighborsRegressor(n_neighbors=int(rng.integers(3, 30))),
                lambda: Ridge(alpha=float(10.0 ** rng.uniform(-2, 3)))][kind]()
    return [lambda: DecisionTreeClassifier(max_depth=int(rng.integers(1, 6)), random_state=seed),
            lambda: KNeighborsClassifier(n_neighbors=int(rng.integers(3, 30))),
            lambda: LogisticRegression(C=float(10.0 ** rng.uniform(-3, 1)), max_iter=2000)][kind]()


def ensemble_predictions(p: int, rng: np.random.Generator, dataset: str) -> dict[str, np.ndarray]:
    """Fit p base models on bootstrap samples (random feature subsets) of the training split.

    Returns ``preds`` float64[p, n_val] (regression: predictions; binary: probability of class 1),
    ``y_val``, ``constant`` (the empty ensemble's prediction: training mean / prevalence) and
    ``regression`` (bool array of one).
    """
    from shapleig_tasks.ml import load_dataset

    x, y = load_dataset(dataset)
    regression = dataset == "diabetes"
    order = rng.permutation(len(y))
    n_tr = len(y) // 2
    tr, val = order[:n_tr], order[n_tr:]
    mu, sd = x[tr].mean(axis=0), x[tr].std(axis=0)
    x = (x - mu) / np.where(sd > 0, sd, 1.0)
    preds = np.empty((p, len(val)))
    for m in range(p):
        boot = rng.choice(tr, n_tr, replace=True)
        feats = np.sort(rng.choice(x.shape[1], max(2, int(rng.integers(x.shape[1] // 3, x.shape[1] + 1))),
                                   replace=False))
        model = _ensemble_library(regression, rng)
        model.fit(x[np.ix_(boot, feats)], y[boot])
        xv = x[np.ix_(val, feats)]
        preds[m] = model.predict(xv) if regression else model.predict_proba(xv)[:, 1]
    constant = float(np.mean(y[tr]))
    return {"preds": preds, "y_val": np.asarray(y[val], dtype=np.float64), "constant": np.array(constant),
            "regression": np.array(regression)}


def ensemble_values(Z: np.ndarray, preds: np.ndarray, y_val: np.ndarray, constant: float,
                    regression: bool) -> np.ndarray:
    """``v(S)``: the validation score of the mean prediction of the models in S, float64[m].

    Regression: R^2 of the averaged predictions; classification: accuracy of the averaged class-1
    probability thresholded at 1/2. The empty coalition predicts ``constant`` everywhere.
    """
    Z = np.asarray(Z, dtype=np.float64)
    size = Z.sum(axis=1)
    avg = (Z @ preds) / np.maximum(size, 1.0)[:, None]
    avg[size == 0] = constant
    if regression:
        sst = float(np.sum((y_val - y_val.mean()) ** 2))
        return 1.0 - np.sum((avg - y_val[None, :]) ** 2, axis=1) / sst
    return np.mean((avg > 0.5) == (y_val[None, :] > 0.5), axis=1)


def _ensemble(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    # R^2 (smooth) at p = 8 and 12, accuracy (step-like) at p = 10 and other sizes 2 mod 4
    dataset = "breast_cancer" if p % 4 == 2 else "diabetes"
    fit = ensemble_predictions(p, rng, dataset)
    return lambda Z: ensemble_values(Z, fit["preds"], fit["y_val"], float(fit["constant"]), bool(fit["regression"]))


class NoisyGame:
    """A table game observed with fresh Gaussian noise on every call; exact values are the noiseless ones.

    ``noiseless``: the :class:`TableGame`; ``noise_sd``: the noise standard deviation (the game's
    units). The noise of the k-th call of coalition S (k = 0, 1, ...: counted per coalition by this
    object) is drawn from a generator seeded with ``(seed, code(S), k)``: repeated calls of a
    coalition give fresh values, and every run that evaluates each coalition once (a
    ``BudgetedGame`` caches repeats) sees the same first draws whatever the order of its calls.
    :meth:`fresh` returns a copy with its call counts reset (one per run).
    """

    def __init__(self, noiseless: TableGame, noise_sd: float, seed: int, *, name: str | None = None) -> None:
        if not (np.isfinite(noise_sd) and noise_sd >= 0):
            raise ValueError(f"noise_sd must be finite and >= 0, got {noise_sd!r}")
        self.noiseless = noiseless
        self.n_players = noiseless.n_players
        self.noise_sd = float(noise_sd)
        self.seed = int(seed)
        self.name = name or f"noisy({noiseless.name})"
        self._calls: dict[int, int] = {}

    def fresh(self) -> "NoisyGame":
        """The same game with no calls counted (the noise sequence starts again)."""
        return NoisyGame(self.noiseless, self.noise_sd, self.seed, name=self.name)

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        z = as_coalition_matrix(coalitions, self.n_players)
        values = self.noiseless(z)
        noise = np.empty(z.shape[0])
        for r, code in enumerate(to_bitmask(z).tolist()):
            k = self._calls.get(code, 0)
            self._calls[code] = k + 1
            noise[r] = np.random.default_rng([self.seed, code, k]).standard_normal()
        return values + self.noise_sd * noise

    def exact_values(self, index: str = "SV", max_order: int | None = None) -> np.ndarray:
        """Exact values of the noiseless game (see :meth:`TableGame.exact_values`)."""
        return self.noiseless.exact_values(index, max_order)

    def params(self) -> dict[str, object]:
        return {"game": "noisy", "noiseless": self.noiseless.params(), "noise_sd": self.noise_sd, "seed": self.seed}

    def identity(self) -> dict[str, object]:
        """Identity for evaluation stores: the noiseless values and the noise stream."""
        return {"values": self.noiseless.bitorder_values, "noise_sd": self.noise_sd, "seed": self.seed}

    def __repr__(self) -> str:
        return f"NoisyGame({self.name}, n_players={self.n_players}, noise_sd={self.noise_sd:.3g})"


FAMILIES: dict[str, Callable[[int, np.random.Generator], Callable[[np.ndarray], np.ndarray]]] = {
    "dominant": _dominant,
    "unanimity": _unanimity,
    "pairwise": _pairwise,
    "symmetric": _symmetric,
    "voting": _voting,
    "additive-pairs": _additive_pairs,
    "soum": _soum,
    "noisy": _noisy_base,
    "ensemble": _ensemble,
    "threshold": _threshold,
}


def instance_seed(family: str, index: int) -> int:
    """The seed of instance ``index`` of ``family`` (stable across runs and Python versions)."""
    return zlib.crc32(f"{family}/{index}".encode()) & 0x7FFFFFFF


def family_sizes(family: str) -> tuple[int, ...]:
    """The player counts the instances of ``family`` cycle through."""
    return FAMILY_SIZES.get(family, SIZES)


def make_game(family: str, index: int, n_players: int | None = None) -> TableGame | NoisyGame:
    """Instance ``index`` of ``family`` as a full value table (``noisy``: a :class:`NoisyGame` over
    one); p from :func:`family_sizes` unless given."""
    if family not in FAMILIES:
        raise ValueError(f"unknown game family {family!r}; choose one of {sorted(FAMILIES)}")
    sizes = family_sizes(family)
    p = int(n_players) if n_players is not None else sizes[index % len(sizes)]
    if not 2 <= p <= 20:
        raise ValueError(f"the generality families are enumerated: need 2 <= p <= 20, got {p}")
    seed = instance_seed(family, index)
    fn = FAMILIES[family](p, np.random.default_rng(seed))
    Z = all_coalitions(p)
    table = TableGame(Z, np.asarray(fn(Z), dtype=np.float64), name=f"{family}-{p}/i={index}")
    if family == "noisy":
        return NoisyGame(table, NOISE_FRACTION * float(np.std(table.bitorder_values)), seed, name=table.name)
    return table


def family_tasks(families: list[str], instances: int, sizes: tuple[int, ...] | None = None) -> list[Task]:
    """Harness tasks: ``instances`` games of each family (group = the family)."""
    tasks = []
    for family in families:
        if family not in FAMILIES:
            raise ValueError(f"unknown game family {family!r}; choose one of {sorted(FAMILIES)}")
        cycle = sizes or family_sizes(family)
        for k in range(int(instances)):
            p = cycle[k % len(cycle)]
            tasks.append(Task(f"{family}-{p}/i={k}", family, "synthetic",
                              lambda f=family, k=k, p=p: make_game(f, k, p), f"{family} game, p = {p}, instance {k}"))
    return tasks


__all__ = ["FAMILIES", "FAMILY_SIZES", "NOISE_FRACTION", "SIZES", "NoisyGame", "ensemble_predictions",
           "ensemble_values", "family_sizes", "family_tasks", "instance_seed", "make_game"]
