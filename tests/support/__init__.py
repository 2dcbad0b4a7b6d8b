"""Helpers shared by the test suite and the benchmarks (see tests/README.md)."""
