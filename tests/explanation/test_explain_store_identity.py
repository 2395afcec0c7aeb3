"""``explain`` with an evaluation store never serves another model's values (issue 27, item 1).

The imputer game's identity covers the model's fitted state (a LightGBM model string, a
scikit-learn estimator's parameters and fitted attributes, a torch module's state_dict), the
background rows, the explained row and how the model is called. Each test writes a store with
one model and then asks the same store for another: the second call must be refused naming what
differed, in Python and on the command line; the same model rebuilt (reloaded from its file) is
served. A callable the identity cannot read (a fitted object of a library that is not LightGBM,
scikit-learn or torch) is refused unless ``game_id=`` names it.
"""

from __future__ import annotations

import numpy as np
import pytest

import shapleig
from shapleig.errors import GameError, StoreMismatchError

lgb = pytest.importorskip("lightgbm")
linear_model = pytest.importorskip("sklearn.linear_model")

D = 4
RNG = np.random.default_rng(0)
X = RNG.normal(size=(120, D))
Y = X @ np.array([1.0, 2.0, 3.0, 4.0]) + RNG.normal(size=120)
BACKGROUND, ROW = X[:15], X[100]


def _explain(model, store, background=BACKGROUND, x=ROW, **kw):
    return shapleig.explain(model, background, x, budget=16, method="exact", store=store, progress=False, **kw)


def _refused(model, store, **kw) -> str:
    with pytest.raises(StoreMismatchError) as info:
        _explain(model, store, **kw)
    return str(info.value)


def _booster(target: np.ndarray) -> lgb.Booster:
    return lgb.train({"verbose": -1, "num_threads": 1, "seed": 0}, lgb.Dataset(X, target), 8)


def test_another_lightgbm_booster_is_refused_and_the_same_one_reloaded_is_served(tmp_path):
    store = tmp_path / "s.sqlite"
    a, b = _booster(Y), _booster(2 * Y)
    first = _explain(a, store)
    assert first.info["model_calls"] > 0
    msg = _refused(b, store)
    assert "model string" in msg and "What differs" in msg, msg
    # the same model written out and read back (another object, another process's view): served
    again = _explain(lgb.Booster(model_str=a.model_to_string()), store)
    assert again.info["model_calls"] == 0 and np.array_equal(again.values, first.values)
    # and the other model has other values: the refusal was not spurious
    assert not np.allclose(_explain(b, None).values, first.values)


def test_lightgbm_sklearn_api_models_differ_by_their_booster(tmp_path):
    store = tmp_path / "s.sqlite"
    kw = dict(n_estimators=8, num_leaves=4, verbose=-1, n_jobs=1)
    _explain(lgb.LGBMRegressor(**kw, random_state=0).fit(X, Y), store)
    msg = _refused(lgb.LGBMRegressor(**kw, random_state=0).fit(X, -Y), store)
    assert "model string" in msg, msg


def test_ridge_alpha_1_vs_2_is_refused_naming_the_parameter_and_fitted_attributes(tmp_path):
    store = tmp_path / "s.sqlite"
    _explain(linear_model.Ridge(alpha=1.0).fit(X, Y), store)
    msg = _refused(linear_model.Ridge(alpha=2.0).fit(X, Y), store)
    assert "model parameter alpha: 1.0 vs 2.0" in msg and "model fitted coef_" in msg, msg
    # same parameters, refitted on other data: only the fitted attributes differ
    _explain(linear_model.Ridge(alpha=1.0).fit(X, Y), tmp_path / "t.sqlite")
    msg = _refused(linear_model.Ridge(alpha=1.0).fit(X, Y + 1.0), tmp_path / "t.sqlite")
    assert "model fitted intercept_" in msg and "parameter" not in msg, msg
    served = _explain(linear_model.Ridge(alpha=1.0).fit(X, Y), tmp_path / "t.sqlite")
    assert served.info["model_calls"] == 0


def test_predict_and_predict_proba_of_one_classifier_are_different_games(tmp_path):
    clf = linear_model.LogisticRegression().fit(X, Y > 0)
    _explain(clf, tmp_path / "s.sqlite")  # the positive-class probability
    msg = _refused(clf, tmp_path / "s.sqlite", predict=clf.decision_function)
    assert "model method: predict_proba vs decision_function" in msg, msg


def test_a_torch_module_with_other_weights_is_refused(tmp_path):
    torch = pytest.importorskip("torch")

    def linear(seed: int):
        torch.manual_seed(seed)
        return torch.nn.Linear(D, 1).double()

    a = linear(0)
    first = _explain(a, tmp_path / "s.sqlite")
    with torch.no_grad():  # the closed form of a linear model: w_i (x_i - mean background_i)
        w = a.weight.numpy()[0]
    assert np.allclose(first.values, w * (ROW - BACKGROUND.mean(axis=0)))
    msg = _refused(linear(1), tmp_path / "s.sqlite")
    assert "model state_dict weight" in msg and "model state_dict bias" in msg, msg
    # the same weights in a new module object: served
    again = linear(0)
    assert _explain(again, tmp_path / "s.sqlite").info["model_calls"] == 0
    # a torch model behind a lambda: the closure's module is digested by content too
    _explain(None, tmp_path / "f.sqlite", predict=lambda Z: a(torch.as_tensor(Z)).detach().numpy())
    b = linear(1)
    msg = _refused(None, tmp_path / "f.sqlite", predict=lambda Z: b(torch.as_tensor(Z)).detach().numpy())
    assert "closure" in msg or "model" in msg, msg


def test_another_background_or_row_is_refused_naming_it(tmp_path):
    model = linear_model.Ridge().fit(X, Y)
    store = tmp_path / "s.sqlite"
    _explain(model, store)
    assert "background" in _refused(model, store, background=X[15:30])
    assert "x: " in _refused(model, store, x=X[101])


@pytest.mark.filterwarnings("ignore:X has feature names")
def test_dataframe_columns_and_dtypes_count(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    model = linear_model.Ridge().fit(X, Y)  # fitted on an array: any column names are accepted
    _explain(model, tmp_path / "s.sqlite", background=frame.iloc[:15], x=frame.iloc[100])
    renamed = frame.rename(columns={"a": "z"})
    msg = _refused(model, tmp_path / "s.sqlite", background=renamed.iloc[:15], x=renamed.iloc[100])
    assert "columns" in msg, msg


def test_an_unreadable_library_model_needs_a_game_id(tmp_path):
    interpolate = pytest.importorskip("scipy.interpolate")
    rbf = interpolate.RBFInterpolator(X[:40], Y[:40])
    with pytest.raises(GameError, match=r"game_id="):
        _explain(rbf, tmp_path / "s.sqlite")
    assert len(shapleig.EvaluationStore(tmp_path / "s.sqlite")) == 0  # refused before any evaluation
    first = _explain(rbf, tmp_path / "s.sqlite", game_id="rbf-v1")
    assert _explain(rbf, tmp_path / "s.sqlite", game_id="rbf-v1").info["model_calls"] == 0
    assert "game_id: rbf-v1 vs rbf-v2" in _refused(rbf, tmp_path / "s.sqlite", game_id="rbf-v2")
    assert np.allclose(_explain(rbf, None).values, first.values)  # no store: no identity needed


def test_the_explain_command_refuses_another_model_background_or_row(tmp_path, capsys):
    """``shapleig explain --store``: a second model file, another background size or another row
    against the same store exits 2 naming what differed (it used to print "0 model calls" and the
    first model's values)."""
    import pandas as pd

    from shapleig_tasks.cli import main

    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame.to_csv(tmp_path / "X.csv", index=False)
    for name, target in (("m1.txt", Y), ("m2.txt", 3 * Y)):
        lgb.train({"verbose": -1, "num_threads": 1}, lgb.Dataset(frame, target), 6).save_model(str(tmp_path / name))

    def run(model: str, *extra: str) -> list[str]:
        return ["explain", "--model", str(tmp_path / model), "--data", str(tmp_path / "X.csv"), "--budget", "16",
                "--method", "exact", "--background", "10", "--store", str(tmp_path / "s.sqlite"), "--row", "3",
                *extra]

    assert main(run("m1.txt")) == 0
    assert "16 model calls" in capsys.readouterr().out
    for argv, differs in ((run("m2.txt"), "model string"), (run("m1.txt", "--background", "12"), "background"),
                          (run("m1.txt", "--row", "4"), "x: ")):
        with pytest.raises(SystemExit) as info:
            main(argv)
        err = capsys.readouterr().err
        assert info.value.code == 2 and differs in err and "another --store file" in err, err
    assert main(run("m1.txt")) == 0  # the same model file again: served
    assert "0 model calls" in capsys.readouterr().out


def test_plain_functions_partials_and_library_functions_are_read_as_code(tmp_path):
    """A predict function that is Python code (a partial of a user function, numpy's own
    functions) is digested by content or by name and version, never taken for an unreadable model."""
    import functools

    from shapleig.explanation.imputer import ImputerGame
    from shapleig.explanation.model_identity import predictor_identity

    def scaled(rows, scale=1.0):
        return scale * np.asarray(rows) @ np.arange(1.0, D + 1)

    for fn in (functools.partial(scaled, scale=2.0), np.linalg.norm, np.add.reduce):
        assert "opaque" not in predictor_identity(fn), fn
    game = ImputerGame(functools.partial(scaled, scale=2.0), BACKGROUND, ROW)
    other = ImputerGame(functools.partial(scaled, scale=3.0), BACKGROUND, ROW)
    assert game.identity() != other.identity() and game.identity() == ImputerGame(
        functools.partial(scaled, scale=2.0), BACKGROUND, ROW).identity()


def test_an_object_with_a_torch_module_attribute_is_not_taken_for_the_torch_wrapper():
    from shapleig.explanation.model_identity import predictor_identity

    class Scorer:  # user code that happens to name an attribute like the wrapper's
        def __init__(self, w):
            self.torch_module = None
            self.w = w

        def __call__(self, rows):
            return np.asarray(rows) @ self.w

    assert predictor_identity(Scorer(np.ones(D))) != predictor_identity(Scorer(np.zeros(D)))


# A user's scikit-learn subclass, as its source file reads before and after an edit: the class keeps
# its name and module, only a method's body changes.
USER_RIDGES = {
    "predict": '''
class UserRidge(Ridge):
    def predict(self, X):
        return {factor} * super().predict(X)
''',
    "a method predict calls": '''
class UserRidge(Ridge):
    def _decision_function(self, X):
        return {factor} * super()._decision_function(X)
''',
}


def _user_ridge(source: str, factor: float) -> linear_model.Ridge:
    namespace = {"Ridge": linear_model.Ridge, "__name__": __name__}
    exec(source.format(factor=factor), namespace)  # noqa: S102 - the test's own class source
    return namespace["UserRidge"](alpha=1.0).fit(X, Y)


@pytest.mark.parametrize("edited", list(USER_RIDGES))
def test_an_edited_method_of_a_user_sklearn_subclass_is_another_model(tmp_path, edited):
    """Same class name, parameters and fitted attributes; after the edit the values double. The
    store refuses the edited class and serves the class rebuilt from the unedited source."""
    source, store = USER_RIDGES[edited], tmp_path / "s.sqlite"
    first = _explain(_user_ridge(source, 1.0), store)
    assert first.info["model_calls"] > 0
    np.testing.assert_allclose(_explain(_user_ridge(source, 2.0), None).values, 2.0 * first.values, rtol=1e-12)
    msg = _refused(_user_ridge(source, 2.0), store)
    assert "What differs" in msg, msg
    assert _explain(_user_ridge(source, 1.0), store).info["model_calls"] == 0


@pytest.mark.parametrize("edited", list(USER_RIDGES))
def test_the_fitted_model_identity_of_a_user_sklearn_subclass_holds_its_code(edited):
    """The fitted-model digest on its own (the path a model held inside another takes): the same
    parameters and fitted attributes with an edited method give another identity, the unedited
    class rebuilt gives the same one."""
    from shapleig.games.model_identity import fitted_model_identity

    source = USER_RIDGES[edited]
    first, again, edited_one = (fitted_model_identity(_user_ridge(source, f)) for f in (1.0, 1.0, 2.0))
    assert first == again
    assert first != edited_one
    assert {k for k in first if first[k] != edited_one[k]} <= {k for k in first if "code" in k or "source" in k}


def test_a_scikit_learn_meta_estimator_holding_a_lightgbm_model(tmp_path):
    """A fitted LightGBM model held by a scikit-learn estimator (``regressor_`` of a
    TransformedTargetRegressor) is digested with it: another inner model is refused, the same one
    refitted is served."""
    from sklearn.compose import TransformedTargetRegressor

    def fitted(target):
        inner = lgb.LGBMRegressor(n_estimators=6, num_leaves=4, verbose=-1, n_jobs=1, random_state=0)
        return TransformedTargetRegressor(regressor=inner).fit(X, target)

    store = tmp_path / "s.sqlite"
    first = _explain(fitted(Y), store)
    assert "model fitted regressor_" in _refused(fitted(-Y), store)
    again = _explain(fitted(Y), store)
    assert again.info["model_calls"] == 0 and np.array_equal(again.values, first.values)


def test_a_library_object_that_is_not_an_estimator_is_opaque_naming_its_package():
    """A scikit-learn object without ``get_params`` (a KDTree's query) and a SciPy interpolator are
    not read as estimators: opaque, naming the package, until a game_id names them."""
    from sklearn.neighbors import KDTree

    from shapleig.explanation.model_identity import predictor_identity

    interpolate = pytest.importorskip("scipy.interpolate")
    for fn, package in ((KDTree(X).query, "sklearn"), (interpolate.RBFInterpolator(X[:40], Y[:40]), "scipy")):
        identity = predictor_identity(fn)
        assert f"not of {package} objects; give game_id=" in identity.get("opaque", ""), identity


def test_a_torch_buffer_left_out_of_the_state_dict_is_in_the_identity(tmp_path):
    """A non-persistent buffer (not in ``state_dict``) still scales the output: another value is
    another model."""
    torch = pytest.importorskip("torch")

    class Scale(torch.nn.Module):
        def __init__(self, factor: float) -> None:
            super().__init__()
            self.register_buffer("factor", torch.tensor(factor, dtype=torch.float64), persistent=False)

        def forward(self, x):
            return x * self.factor

    def model(factor: float):
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(D, 1).double(), Scale(factor))

    store = tmp_path / "s.sqlite"
    first = _explain(model(2.0), store)
    np.testing.assert_allclose(_explain(model(3.0), None).values, 1.5 * first.values, rtol=1e-12)
    assert "model buffer 1.factor" in _refused(model(3.0), store)
    assert _explain(model(2.0), store).info["model_calls"] == 0


def test_the_iteration_a_booster_predicts_up_to_is_in_its_identity():
    """``predict`` stops at ``best_iteration`` when it is positive (1 included); 0 and -1 mean
    every tree. Boosters differing only there are other models, 0 and -1 the same one."""
    from shapleig.explanation.model_identity import predictor_identity

    booster = _booster(Y)
    seen = {}
    for best in (0, -1, 1, 2):
        booster.best_iteration = best
        seen[best] = predictor_identity(booster)
    assert seen[0] == seen[-1] and seen[0]["model.best_iteration"] == "all trees"
    assert seen[1]["model.best_iteration"] == "1" and seen[2]["model.best_iteration"] == "2"
    assert not np.allclose(booster.predict(X[:5], num_iteration=1), booster.predict(X[:5], num_iteration=0))


TORCH_BLOCK = '''
class Block(torch.nn.Module):
    def forward(self, x):
        return {factor} * x
'''


def test_an_edited_forward_of_a_user_module_inside_a_library_container_is_another_model(tmp_path):
    """A user's module class inside ``nn.Sequential``: its code is in the identity (an edited
    ``forward`` is another model), the library classes' by their version."""
    torch = pytest.importorskip("torch")

    def model(factor: float):
        namespace = {"torch": torch, "__name__": __name__}
        exec(TORCH_BLOCK.format(factor=factor), namespace)  # noqa: S102 - the test's own class source
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(D, 1).double(), namespace["Block"]())

    store = tmp_path / "s.sqlite"
    first = _explain(model(1.0), store)
    np.testing.assert_allclose(_explain(model(2.0), None).values, 2.0 * first.values, rtol=1e-12)
    assert "the code of model.class changed" in _refused(model(2.0), store)
    assert _explain(model(1.0), store).info["model_calls"] == 0


def test_a_torch_module_attribute_outside_the_state_dict_is_in_the_identity(tmp_path):
    """Attributes that are not tensors count: LeakyReLU's slope, and a forward hook on the outer
    module (here doubling its output)."""
    torch = pytest.importorskip("torch")

    def doubled(module, inputs, output):
        return 2.0 * output

    def model(slope: float, hook: bool = False):
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(D, 1).double(), torch.nn.LeakyReLU(slope))
        if hook:
            net.register_forward_hook(doubled)
        return net

    store = tmp_path / "s.sqlite"
    first = _explain(model(0.1), store)
    assert not np.allclose(_explain(model(0.5), None).values, first.values)
    assert "model structure" in _refused(model(0.5), store)
    np.testing.assert_allclose(_explain(model(0.1, hook=True), None).values, 2.0 * first.values, rtol=1e-12)
    assert "model structure" in _refused(model(0.1, hook=True), store)
    assert _explain(model(0.1), store).info["model_calls"] == 0
