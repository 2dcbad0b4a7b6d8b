"""Run-time half of respc: what generated parser modules import (standard library and `regex` only)."""
