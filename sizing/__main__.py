"""Run the CLI: ``python -m sizing``.

Ctrl-C anywhere (imports included) ends with one line and exit code 130, and a reader that
closes the pipe early (``| head``) ends the output quietly.
"""

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


raise SystemExit(_run())
