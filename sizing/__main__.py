"""Run the CLI: ``python -m sizing``.

Ctrl-C anywhere (imports included) ends with one line and exit code 130, and a reader that
closes the pipe early (``| head``) ends the output quietly.
"""

import gc
import os
import sys


def _run() -> int:
    try:
        from sizing.cli.main import main

        code = main()
        sys.stdout.flush()
    except KeyboardInterrupt:
        print("python -m sizing: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Nothing more can be written; keep the interpreter's own final flush quiet too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return code


code = _run()
# What is left is freed with the process: frozen, it is not walked again by the collections
# the interpreter's shutdown runs over every module (as `runners.__main__` does).
gc.freeze()
raise SystemExit(code)
