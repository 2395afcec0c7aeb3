"""The ``"shapleig_uncertainty"`` block of a saved shapiq JSON file, read and checked without shapiq.

:class:`~shapleig.estimation.shapiq_values.UncertainInteractionValues` writes shapiq's JSON file
plus this block (``{"terms": [...], "std": [...], "covariance": [[...], ...] or null}``); reading
it back goes through :func:`read_json_object` and :func:`parse_uncertainty_block`, so a damaged or
hand-edited file (the block a list, std of the wrong length, a term that is no list of players)
is refused with a ``ValueError`` naming the file and the block, never a raw ``TypeError``.
Plain JSON and numpy only: this module imports without the extra ``shapleig[shapiq]``.

Example:
    >>> terms, std, cov = parse_uncertainty_block({"terms": ["0", [1]], "std": [0.1, 0.2]}, "x.json")
    >>> terms, std.tolist(), cov
    (['0', (1,)], [0.1, 0.2], None)
"""

from __future__ import annotations

import json
import numbers
from pathlib import Path
from typing import Any

import numpy as np

# the key of the uncertainty block in shapiq's JSON files and dicts
UNCERTAINTY_KEY = "shapleig_uncertainty"


def read_json_object(path: str | Path) -> dict[str, Any]:
    """The JSON object (a dict) stored in ``path``.

    Args:
        path: the JSON file.

    Returns:
        The object as a dict.

    Raises:
        ValueError: the file is not valid JSON, or holds something other than an object (naming the file).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a JSON file: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path} holds a JSON {_json_kind(data)}, not the object shapiq writes for InteractionValues")
    return data


def parse_uncertainty_block(block: Any, where: str) -> tuple[list[str | tuple[int, ...]], np.ndarray, np.ndarray | None]:
    """The terms, std and covariance of an uncertainty block, each checked.

    Args:
        block: the value stored under ``"shapleig_uncertainty"``.
        where: what held it, for messages (the file's path, or ``"the dict"``).

    Returns:
        ``(terms, std, covariance)``: the terms as written (shapiq's strings are kept for its own
        parser; a list of player indices becomes a tuple), std float64[d], covariance float64[d, d] or None.

    Raises:
        ValueError: naming ``where``, the block and what is wrong.
    """
    name = f"{where}: the {UNCERTAINTY_KEY!r} block"
    if not isinstance(block, dict):
        raise ValueError(f"{name} is a JSON {_json_kind(block)}, not an object with 'terms', 'std' and "
                         f"'covariance'; the file is damaged or was not written by shapleig")
    missing = [key for key in ("terms", "std") if key not in block]
    if missing:
        raise ValueError(f"{name} has no {' or '.join(repr(k) for k in missing)}")
    if not isinstance(block["terms"], list):
        raise ValueError(f"{name}: 'terms' is a JSON {_json_kind(block['terms'])}, not a list")
    terms = [_term(t, name, k) for k, t in enumerate(block["terms"])]
    d = len(terms)
    std = _numbers(block["std"], (d,), f"{name}: 'std'")
    if np.any(std < 0):
        raise ValueError(f"{name}: 'std' holds a negative value ({float(std.min())})")
    cov = block.get("covariance")
    return terms, std, None if cov is None else _numbers(cov, (d, d), f"{name}: 'covariance'")


def _term(term: Any, name: str, k: int) -> str | tuple[int, ...]:
    """A term as written: shapiq's string, or a list of player indices as a tuple."""
    if isinstance(term, str):
        return term
    if isinstance(term, list) and term and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0
                                                for i in term):
        return tuple(term)
    raise ValueError(f"{name}: term {k} is {term!r}, not a string or a non-empty list of player indices")


def _numbers(value: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
    """``value`` as finite float64 of ``shape``, else ``ValueError`` naming it."""
    if not isinstance(value, list) or not _all_numbers(value, len(shape)):
        raise ValueError(f"{name} is not a {'list' if len(shape) == 1 else 'list of lists'} of numbers")
    arr = np.array(value, dtype=np.float64)
    if arr.shape != shape:
        raise ValueError(f"{name} has shape {arr.shape}; the block's {shape[0]} terms need {shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds a non-finite value")
    return arr


def _all_numbers(value: list, depth: int) -> bool:
    if depth == 1:
        return all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in value)
    return all(isinstance(row, list) and _all_numbers(row, depth - 1) for row in value)


def _json_kind(value: Any) -> str:
    """The JSON name of a decoded value's type (list -> array, dict -> object ...)."""
    kinds = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return kinds.get(type(value), "number")


__all__ = ["UNCERTAINTY_KEY", "parse_uncertainty_block", "read_json_object"]
