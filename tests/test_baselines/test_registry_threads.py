"""The method registry loads once and completely, whichever threads ask first (issues 27, 28).

Before: ``_load_providers`` marked the registry loaded *before* registering anything, so a second
thread asking meanwhile saw it half filled: ``registry.build("kernelshap")`` from 8 threads in a
fresh process failed with "unknown method" in 13 of 20 trials. And ``shapleig_baselines.get``
registered every baseline again on every call.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

import shapleig_baselines as baselines
from shapleig import registry

NAMES = ("kernelshap", "permutation", "shapleig", "svarm", "leverage-shap", "exact", "owen", "lss")


def _fresh_registry(monkeypatch: pytest.MonkeyPatch, slow_seconds: float) -> None:
    """A registry as in a new process, whose entry points take ``slow_seconds`` to list (so a
    thread that does not wait for the loading sees it half filled)."""
    monkeypatch.setattr(registry, "_METHODS", {})
    monkeypatch.setattr(registry, "_PREFIXES", {})
    monkeypatch.setattr(registry, "_providers_loaded", False)
    real = registry.entry_points

    def slow_entry_points(**kwargs):
        time.sleep(slow_seconds)
        return real(**kwargs)

    monkeypatch.setattr(registry, "entry_points", slow_entry_points)


def _build_from_threads(n_threads: int = 8) -> list[str]:
    barrier = threading.Barrier(n_threads)
    failures: list[str] = []

    def worker(k: int) -> None:
        barrier.wait()
        try:
            registry.build(NAMES[k % len(NAMES)])
        except Exception as exc:  # noqa: BLE001 - every failure is reported
            failures.append(f"{type(exc).__name__}: {exc}"[:120])

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures


def test_threads_on_a_fresh_registry_all_see_it_complete(monkeypatch):
    _fresh_registry(monkeypatch, slow_seconds=0.05)
    assert _build_from_threads() == []
    assert set(NAMES) <= set(registry.names())


def test_a_failing_provider_leaves_the_registry_unloaded_and_is_tried_again(monkeypatch):
    _fresh_registry(monkeypatch, slow_seconds=0.0)
    calls = []

    class Broken:
        def load(self):
            def provider():
                calls.append(1)
                if len(calls) == 1:
                    raise RuntimeError("provider broke")
                baselines.register_methods()
            return provider

    monkeypatch.setattr(registry, "entry_points", lambda **kw: [Broken()])
    with pytest.raises(RuntimeError, match="provider broke"):
        registry.names()
    assert "kernelshap" in registry.names() and len(calls) == 2


def test_baselines_get_registers_once(monkeypatch):
    baselines.get("kernelshap")
    seen = []
    real = registry.register
    monkeypatch.setattr(registry, "register", lambda method, **kw: (seen.append(method.name), real(method, **kw)))
    for name in ("kernelshap", "permutation", "lss"):
        baselines.get(name)
    assert seen == []


_CHILD = """
import threading
from shapleig import registry
names = {names!r}
barrier = threading.Barrier(8)
bad = []
def worker(k):
    barrier.wait()
    try:
        registry.build(names[k])
    except Exception as exc:
        bad.append(repr(exc))
threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(bad))
"""


@pytest.mark.slow
def test_100_fresh_processes_with_8_threads_each_never_fail():
    """Issue 28's measure: 100 trials of 8 threads, each in a fresh interpreter, 0 failures."""
    code = _CHILD.format(names=list(NAMES))
    failures = 0
    for _ in range(100):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
        failures += int(out.stdout.strip())
    assert failures == 0
