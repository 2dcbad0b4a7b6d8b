"""`python -m respc`: the same as the `respc` command."""

from respc.cli import main

raise SystemExit(main())
