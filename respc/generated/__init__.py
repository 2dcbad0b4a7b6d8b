"""Parsers compiled from `respc/presets/` by `respc regen`; import one as `respc.generated.<name>`.

The modules here are generated and committed; CI fails if any is stale or orphaned.
"""
