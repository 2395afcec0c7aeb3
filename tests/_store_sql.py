"""Edit a store's SQLite file behind its back (tampering, damage, clock tests)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def run_sql(path: str | Path, *statements: str) -> None:
    """Execute ``statements`` on the SQLite file ``path`` in one committed connection."""
    con = sqlite3.connect(path)
    for s in statements:
        con.execute(s)
    con.commit()
    con.close()
