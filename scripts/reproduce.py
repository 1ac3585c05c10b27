#!/usr/bin/env python
"""Run one paper's reproduction: `python scripts/reproduce.py paper=<name> [key=value ...] [-m]`.

The same as `make reproduce PAPER=<name> ARGS="key=value ..."`. Writes outputs/<paper>/<timestamp>/report.md.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

try:
    from core.launch import main  # Hydra, OmegaConf and the project: about a second
except KeyboardInterrupt:  # Ctrl-C before core.launch.main can report it: the same line, no traceback
    print("interrupted before the run started; nothing was kept", file=sys.stderr)
    sys.exit(130)

if __name__ == "__main__":
    status = main()
    if status in (130, 143):
        # stopped mid-computation: XLA's threads may still be running a step, and tearing the interpreter down under
        # them can crash it (SIGSEGV instead of 130). Everything the run keeps is written (atomically) by now.
        import logging
        import os

        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)
