"""Run the CLI: ``python -m sizing``."""

from sizing.cli import main

raise SystemExit(main())
