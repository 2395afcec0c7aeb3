"""What every ``shapleig`` subcommand shares: the usage error (exit 2) and table printing."""

from __future__ import annotations

import argparse
import sys
from typing import Any


class UsageError(Exception):
    """Bad input found before any evaluation: exit status 2."""


def print_frame(df: Any, title: str | None = None, stream: Any = None) -> None:
    """Print a DataFrame with 3 significant digits, under an optional title, then a blank line."""
    stream = stream or sys.stdout
    if title:
        print(title, file=stream)
    print(df.to_string(float_format=lambda x: f"{x:.3g}"), file=stream)
    print(file=stream)


def cli_store_advice(exc: Exception, hint: str) -> str:
    """The message of ``exc``; for a store written for another game, the library's advice
    (``EvaluationStore(path, accept_game_change=True)``) replaced by the command-line one."""
    text = str(exc)
    if type(exc).__name__ == "StoreMismatchError":
        text = text.split(" Use a new store path")[0].rstrip(". ") + f". {hint[:1].upper()}{hint[1:]}."
    return text


def jobs_count(text: str) -> int:
    """``--jobs``: a positive number of workers, or -1 for one per core (joblib's convention)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs takes an integer, got {text!r}") from None
    if n == 0 or n < -1:
        raise argparse.ArgumentTypeError(f"--jobs {n}: give a positive number of workers, or -1 for all cores")
    return n
