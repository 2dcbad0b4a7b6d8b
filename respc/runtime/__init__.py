"""Run-time half of respc: what generated parser modules import (standard library and `regex` only).

A generated module may use exactly these names, and nothing else of respc:

* `respc.runtime.parser`: `CompiledParser` (the processing pass);
* `respc.runtime.contract`: `State` and `Field`, the rows of the two tables a generated class declares;
* `respc.runtime.scan`: `LazyRegex`, the scan helpers `scan_literal`, `scan_literals`, `scan_pattern`,
  `scan_lead`, and the lead-run character sets `RUN_*`;
* `respc.runtime.content`: the content parsers `parse_*`;
* `respc.runtime.transform`: `resolve_placeholder`, `transform_value`, `transform_each`;
* `respc.runtime.targets`: `get_target` (the release whose content parsers a module's fields call).

`CONTRACT` is the version of that interface. A generated class declares the contract it was written
against; the runtime refuses, with one line, a module written for another (`respc regen` rebuilds the
presets, `respc compile` any other module).
"""

CONTRACT = 3
