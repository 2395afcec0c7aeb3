"""Optional extras: a clear error naming the extra to install when an optional path is asked for.

The default path needs none of them. The torch stack (torch, gpytorch, botorch: the extra
``shapleig[botorch]``, alias ``shapleig[torch]``) serves only the published setting
(``ShaplEIG.published()``, ``fit_engine="gpytorch"``) and the botorch interop
(:mod:`shapleig.interop.botorch_acquisition`).
"""

from __future__ import annotations

import importlib.util
import sys

from shapleig.errors import ShapleigError

# the modules of the torch stack and the extra that installs them
TORCH_MODULES = ("torch", "gpytorch", "botorch")
TORCH_EXTRA = "botorch"


class MissingExtraError(ShapleigError, ImportError):
    """An optional path was asked for whose extra is not installed; the message names the extra."""


def missing_modules(modules: tuple[str, ...]) -> list[str]:
    """The names in ``modules`` that cannot be imported here (found without importing them).

    A ``sys.modules`` entry set to None, the way to hide a package, counts as missing.

    Args:
        modules: importable module names, e.g. ``("torch", "gpytorch")``.

    Returns:
        the names of ``modules`` that are missing, in the given order; empty when all are importable.
    """
    missing = []
    for name in modules:
        if name in sys.modules:
            if sys.modules[name] is None:
                missing.append(name)
            continue
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def require_torch(what: str) -> None:
    """Raise :class:`MissingExtraError` naming ``shapleig[botorch]`` when torch, gpytorch or botorch is missing.

    ``what`` says what needed them (e.g. "fit_engine='gpytorch'").

    Args:
        what: what needed the torch stack, quoted in the error message.

    Examples:
        >>> from shapleig.extras import missing_modules
        >>> missing_modules(("numpy",))
        []
    """
    missing = missing_modules(TORCH_MODULES)
    if missing:
        raise MissingExtraError(
            f"{what} needs the torch stack ({', '.join(TORCH_MODULES)}; missing: {', '.join(missing)}), "
            f"the optional extra shapleig[{TORCH_EXTRA}]: pip install 'shapleig[{TORCH_EXTRA}]' "
            f"(from a checkout: pip install -e '.[{TORCH_EXTRA}]'); the default fit_engine='numpy' needs no torch"
        )


__all__ = ["MissingExtraError", "TORCH_EXTRA", "TORCH_MODULES", "missing_modules", "require_torch"]
