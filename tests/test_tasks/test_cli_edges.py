"""Command-line edges found adversarially (issue 27, item 8), each failing on the code before:

- ``--budgets 99999999999999999999999`` exited 1 with an OverflowError (pandas' int64 column);
- ``kernelshap:paired=maybe`` ran as ``paired=True`` (any non-empty text was true);
- argparse's own errors printed the usage block (2-14 lines) before the error;
- ``exact`` on a 60-player task asked for a budget of 4611686018427387904 "(2^62)".
"""

from __future__ import annotations

import pytest

from shapleig import FunctionGame
from shapleig.errors import GameError
from shapleig.estimation.exact import ExactShapley
from shapleig_tasks.cli import main
from shapleig_tasks.methods import parse_bool, resolve_methods


def _usage_error(argv: list[str], capsys) -> str:
    """Run the command; it must exit 2 with exactly one line on stderr, which is returned."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


RUN = ["run", "--tasks", "wvg-7", "--seeds", "1", "--out", "r.parquet"]


@pytest.mark.parametrize("budget", ["99999999999999999999999", "9" * 400 + "p", str(2**63)])
def test_a_budget_beyond_int64_is_a_usage_error_naming_it(budget, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    line = _usage_error(RUN + ["--methods", "permutation", "--budgets", budget], capsys)
    assert f"budget {budget} is too large" in line and "2^63 - 1" in line, line
    assert not (tmp_path / "r.parquet").exists()


@pytest.mark.parametrize("option", ["paired=maybe", "paired=2", "border=", "paired=none"])
def test_boolean_options_parse_strictly(option, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    line = _usage_error(RUN + ["--methods", f"kernelshap:{option}", "--budgets", "20"], capsys)
    key = option.split("=")[0]
    assert f"method 'kernelshap': option {key} takes a boolean: true/false, yes/no or 1/0" in line, line
    with pytest.raises(ValueError, match=f"option {key} takes a boolean"):
        resolve_methods(["permutation", f"kernelshap:{option}"])


@pytest.mark.parametrize("text, value", [("true", True), ("Yes", True), ("1", True), ("FALSE", False),
                                         ("no", False), ("0", False)])
def test_boolean_options_accept_the_usual_spellings_and_label_them_one_way(text, value):
    (spec,) = resolve_methods([f"kernelshap:paired={text}"])
    assert spec.options == {"paired": value} and spec.label == f"kernelshap:paired={value}"
    assert spec.build().paired is value
    assert parse_bool(text, "x") is value


def test_non_boolean_options_keep_their_own_validation():
    """``size_trend`` takes True, False or 'both': not a strict boolean, the estimator checks it."""
    (spec,) = resolve_methods(["shapleig:size_trend=both"])
    assert spec.options == {"size_trend": "both"}
    with pytest.raises(ValueError, match="size_trend must be True, False or 'both', got 'maybe'"):
        resolve_methods(["shapleig:size_trend=maybe"])


@pytest.mark.parametrize("argv", [
    [],
    ["bogus"],
    ["run"],
    ["run", "--tasks", "wvg-7", "--methods", "permutation", "--out", "r.parquet", "--budgets", "8", "--jobs", "x"],
    ["run", "--tasks", "wvg-7", "--methods", "permutation", "--out", "r.parquet", "--budgets", "8", "--pool-size", "x"],
    ["plot"],
    ["demo", "--jobs", "0"],
    ["hpi", "--bogus"],
    ["explain"],
    ["explain", "--model", "m.txt", "--data", "x.csv", "--row", "x"],
    ["tasks", "extra"],
    ["methods", "--all"],
    ["run", "--tasks", "wvg-7", "--methods", "exact", "--budgets", "-2p", "--out", "r.parquet"],
])
def test_argument_errors_are_one_line_for_every_subcommand(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    line = _usage_error(argv, capsys)
    assert line.startswith("shapleig") and ": error: " in line and "usage:" not in line, line


def test_exact_beyond_20_players_names_the_right_power(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    line = _usage_error(["run", "--tasks", "shoe-60", "--methods", "exact", "--budgets", "10", "--seeds", "1",
                         "--out", "r.parquet"], capsys)
    assert "handles at most 20 players (it evaluates all 2^60 coalitions" in line and "p = 60" in line, line
    assert "2^62" not in line and str(2**62) not in line
    game = FunctionGame(lambda Z: Z.sum(axis=1).astype(float), n_players=21)
    with pytest.raises(GameError, match=r"exact handles at most 20 players .*2\^21 coalitions.*p = 21"):
        ExactShapley().estimate(game, 2**21)  # refused before enumerating 2^21 coalitions
