"""Shared test setup: tests/ mirrors the package layout (tests/<subpackage>/test_*.py).

- The tests folder is importable (``_dense_reference``, ``_games_for_parallel``), also from
  worker processes, whichever subfolder a test lives in.
- ``shared_games_dir``: the shared value tables (``SHAPLEIG_SHARED`` or ``../shared`` beside the
  checkout); tests that need them skip cleanly where they are absent.
- Marker ``torch``: the test needs the torch stack (the extra ``shapleig[botorch]``); skipped where
  torch, gpytorch or botorch is missing, unless ``SHAPLEIG_REQUIRE_TORCH=1`` (CI's leg with the
  extra), where it runs and fails instead.
- Marker ``shap``: the test needs SHAP (the extra ``shapleig[shap]``); skipped without it unless
  ``SHAPLEIG_REQUIRE_SHAP=1``.
- Hypothesis runs deterministically (profile ``"deterministic"``: derandomised, no example
  database), so a property test gives the same verdict in CI and in every checkout, and a failure
  found once is not replayed from a local ``.hypothesis/`` folder on later runs. Examples that
  once failed are pinned with ``@example``. ``HYPOTHESIS_PROFILE=explore`` draws fresh random
  examples (and keeps a database) to look for new failures.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

try:  # hypothesis comes with the test extra; without it the property tests are not collected
    from hypothesis import settings
except ImportError:  # pragma: no cover
    settings = None
if settings is not None:
    settings.register_profile("deterministic", derandomize=True, database=None, print_blob=True)
    settings.register_profile("explore", derandomize=False)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from _optional import EXTRAS  # noqa: E402  (from the tests folder, put on the path above)

from shapleig.extras import missing_modules  # noqa: E402


def find_shared_games_dir() -> Path | None:
    """``$SHAPLEIG_SHARED/data/games`` or ``../shared/data/games`` beside the checkout, if present."""
    root = Path(os.environ["SHAPLEIG_SHARED"]) if os.environ.get("SHAPLEIG_SHARED") else REPO.parent / "shared"
    games = root / "data" / "games"
    return games if games.is_dir() else None


@pytest.fixture
def shared_games_dir() -> Path:
    """The shared value tables; skips the test when they are not on this machine."""
    games = find_shared_games_dir()
    if games is None:
        pytest.skip("shared value tables (../shared/data/games) not present")
    return games


@pytest.fixture
def repo_root() -> Path:
    """The checkout's root folder (README.md, scripts/, docs/)."""
    return REPO


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests of an optional extra that is not installed, unless CI requires that extra."""
    for marker, (modules, required, extra) in EXTRAS.items():
        missing = missing_modules(modules)
        if not missing or os.environ.get(required):
            continue
        skip = pytest.mark.skip(reason=f"needs {', '.join(missing)} (the extra shapleig[{extra}]); "
                                       f"{required}=1 makes this a failure")
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def _extension_registries_as_found():
    """Acquisitions and indices a test registers (the docs' examples do) end with the test.

    The same docs block runs under several tests (tests/project/test_readme.py runs every page's
    blocks, tests/project/test_extend_examples.py and tests/design/test_acquisition_docs.py the
    "How to extend" ones); a registration left behind made the next run of the block refuse its name.
    """
    from shapleig.design.acquisition import acquisition_names, unregister_acquisition
    from shapleig.games.indices import index_names, unregister_index

    acquisitions, indices = set(acquisition_names()), set(index_names())
    yield
    for name in set(acquisition_names()) - acquisitions:
        unregister_acquisition(name)
    for name in set(index_names()) - indices:
        unregister_index(name)
