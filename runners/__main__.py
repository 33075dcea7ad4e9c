"""``python -m runners``.

Ctrl-C before the command runs (while the modules load) ends with one line and exit code 130,
as the command line itself does once running (`runners.cli.main.main`).
"""

import sys


def _run() -> int:
    try:
        from runners.cli.main import main

        return main()
    except KeyboardInterrupt:
        print("python -m runners: interrupted", file=sys.stderr)
        return 130


raise SystemExit(_run())
