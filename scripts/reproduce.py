#!/usr/bin/env python
"""Run one paper's reproduction: `python scripts/reproduce.py paper=<name> [key=value ...] [-m]`.

The same as `make reproduce PAPER=<name> ARGS="key=value ..."`. Writes outputs/<paper>/<timestamp>/report.md.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.launch import main

if __name__ == "__main__":
    sys.exit(main())
