from sizing.cli import main

raise SystemExit(main())
