"""The `respc` command line: `respc.cli.app` builds the parser and runs one module per command."""

from respc.cli.app import main

__all__ = ["main"]
