"""Every deprecated public name in one table: what replaces it and the release that removes it.

An old name keeps working until ``REMOVED_IN`` but warns (``DeprecationWarning``) each time it is
used, naming its replacement. A shim calls :func:`warn_deprecated` with its key in ``DEPRECATED``;
a deprecated module attribute is served by a module ``__getattr__`` built with
:func:`deprecated_attributes`, so importing the module does not warn, reading the old name does.
Nothing here imports the rest of the package: every layer may use it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

# pyproject's version is 0.1.x: the names stay through the next minor release (0.2) and leave in 0.3
REMOVED_IN = "0.3"

# old name -> what to use instead
DEPRECATED: dict[str, str] = {
    "shapleig.shapiq_bridge": "shapleig.interop.shapiq_bridge",
    "shapleig.design.acquisition.ACQUISITIONS": "shapleig.design.acquisition.acquisition_names()",
    "shapleig.design.acquisition.select": "make_acquisition(acquisition).select(candidates, q, rng)",
    "shapleig.design.async_loop.design_loop": "ShaplEIG.from_options(**options).make_loop(BudgetedGame(game, budget, ...), seed), "
                                              "or DesignLoop / AsyncDesignLoop directly",
    'refit="every_iteration"': 'refit="every"',
    'refit="init_64_factor_4"': 'refit="decaying"',
}


def deprecation_message(old: str) -> str:
    """The warning text for the deprecated name ``old``.

    Args:
        old: a key of ``DEPRECATED``.

    Returns:
        ``"<old> is deprecated and will be removed in shapleig <REMOVED_IN>; use <replacement>"``.

    Raises:
        KeyError: ``old`` is not in ``DEPRECATED`` (a shim must be listed there).
    """
    return f"{old} is deprecated and will be removed in shapleig {REMOVED_IN}; use {DEPRECATED[old]}"


def warn_deprecated(old: str, stacklevel: int = 3) -> None:
    """Emit the ``DeprecationWarning`` for ``old``, attributed to the caller of the shim.

    Args:
        old: a key of ``DEPRECATED``.
        stacklevel: frames up from this call to the line the warning names (3: the shim's caller).
    """
    warnings.warn(deprecation_message(old), DeprecationWarning, stacklevel=stacklevel)


def deprecated_attributes(module: str, values: dict[str, Callable[[], Any]]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` serving deprecated attributes of ``module``, each with its warning.

    Args:
        module: the module's ``__name__``; ``"<module>.<name>"`` must be a key of ``DEPRECATED``.
        values: attribute name -> a function computing its value when it is read.

    Returns:
        The ``__getattr__(name)`` to assign in the module; other names raise ``AttributeError``.
    """
    for name in values:
        deprecation_message(f"{module}.{name}")  # an unlisted attribute fails at import, not when read

    def __getattr__(name: str) -> Any:
        if name not in values:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warn_deprecated(f"{module}.{name}")
        return values[name]()

    return __getattr__
