"""No default written twice, read from the source (issue 28): every function of ``shapleig/gp`` and
``shapleig/design`` (nested functions, lambdas and the torch-only ``torch_model.py`` included, none of
them imported) that has a parameter named like an option either gives it no default, the "as
configured" ``UNSET``, a name read from elsewhere (``DEFAULT_POOL_SIZE``), or the options
object's own default. tests/design/test_options.py checks the imported functions' signatures;
this scan also sees what an import cannot (torch_model.py without torch, inner functions)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from shapleig.design.options import LoopOptions

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("shapleig/gp", "shapleig/design")
# parameter name -> option name, where a layer calls the option by a shorter name
ALIASES = {"engine": "fit_engine", "convention": "noise_convention"}
# (file, function, parameter): the same name meaning something else
OTHER_MEANING = {
    ("shapleig/design/acquisition.py", "first_argmax", "rtol"),  # a tie tolerance, not the precision target
    ("shapleig/gp/index_esp.py", "__init__", "hold_out_empty"),  # a resolved value, not the option's None
    # which Hamming spec given hyperparameters belong to (the spec's own field default), not the
    # surrogate mode's resolution of the option (None); a classmethod, unseen by the signature scan
    ("shapleig/gp/posterior.py", "hamming", "ard"),
}


def option_defaults() -> dict[str, object]:
    defaults = LoopOptions().as_dict()
    defaults["ard"] = None  # resolved by the surrogate mode; a layer taking ard states it explicitly
    return defaults


def literal_defaults(source: str) -> list[tuple[str, str, object, int]]:
    """``(function, parameter, default, line)`` for every parameter with a literal default."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        name = getattr(node, "name", "<lambda>")
        args = node.args
        positional = args.posonlyargs + args.args
        pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        for arg, default in pairs:
            try:
                value = ast.literal_eval(default)
            except ValueError:
                continue  # a name (UNSET, DEFAULT_POOL_SIZE): read from one place, not restated
            out.append((name, arg.arg, value, default.lineno))
    return out


def scan() -> tuple[list[str], int]:
    defaults = option_defaults()
    problems, checked = [], 0
    for package in PACKAGES:
        for path in sorted((ROOT / package).glob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for function, param, value, line in literal_defaults(path.read_text(encoding="utf-8")):
                key = ALIASES.get(param, param)
                if key not in defaults or (rel, function, param) in OTHER_MEANING:
                    continue
                checked += 1
                if value != defaults[key]:
                    problems.append(f"{rel}:{line} {function}({param}={value!r}): the option's default is "
                                    f"{defaults[key]!r}")
    return problems, checked


def test_no_literal_default_contradicts_the_options() -> None:
    problems, checked = scan()
    assert not problems, "\n".join(problems)
    assert checked >= 1  # the scan reaches the helpers that restate a default on purpose


def test_the_scan_sees_nested_functions_lambdas_and_keyword_only_defaults() -> None:
    source = ("def outer(a, noise=1e-5):\n"
              "    def inner(*, threads=3):\n"
              "        return lambda pool_size=7: pool_size\n"
              "    return inner\n")
    found = {(f, p, v) for f, p, v, _ in literal_defaults(source)}
    assert found == {("outer", "noise", 1e-5), ("inner", "threads", 3), ("<lambda>", "pool_size", 7)}


@pytest.mark.parametrize("param", ["noise", "pool_size"])
def test_a_contradicting_default_is_reported(tmp_path, monkeypatch, param: str) -> None:
    fake = tmp_path / "shapleig" / "gp"
    fake.mkdir(parents=True)
    (fake / "helper.py").write_text(f"def helper(X, {param}=12345):\n    return X\n")
    (tmp_path / "shapleig" / "design").mkdir()
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    problems, checked = scan()
    assert checked == 1 and len(problems) == 1 and f"helper({param}=12345)" in problems[0]
