"""``python -m runners``.

Ctrl-C before the command runs (while the modules load) ends with one line and exit code 130,
as the command line itself does once running (`runners.cli.main.main`).
"""

import gc
import sys


def _run() -> int:
    try:
        from runners.cli.main import main

        return main()
    except KeyboardInterrupt:
        print("python -m runners: interrupted", file=sys.stderr)
        return 130


code = _run()
# What is left is freed with the process: frozen, it is not walked again by the collections
# the interpreter's shutdown runs over every module (pandas and numpy loaded: 0.7-0.9 s at a
# load average of 8, 0.15 s frozen; a Ctrl-C's exit waited for them).
gc.freeze()
raise SystemExit(code)
