"""Progress bars for long loops: tqdm with rates, quieter when the output is not a terminal.

Set TQDM_DISABLE=1 to silence every bar (tqdm reads its TQDM_* environment variables itself).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def progress(iterable: Iterable[T] | None = None, *, desc: str = "", total: int | None = None, **kwargs: Any) -> tqdm:
    """A tqdm bar; in a log file (no terminal) it updates every 30 s instead of redrawing many times a second."""
    interactive = sys.stderr.isatty()
    kwargs.setdefault("mininterval", 0.2 if interactive else 30.0)
    kwargs.setdefault("dynamic_ncols", True)
    kwargs.setdefault("smoothing", 0.1)
    return tqdm(iterable, desc=desc, total=total, **kwargs)
