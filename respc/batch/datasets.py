"""Hugging Face datasets: `parse_batch`, a batched function for `Dataset.map`, and `map_dataset`, which
runs it with the right features, caching and worker count.

```python
from respc.batch.datasets import map_dataset
parsed, failed = map_dataset(dataset, preset="qwen3", num_proc=4)   # the output schema, a failure count
```

The output is the schema of `respc.batch.arrow` (`id`, `message` as JSON, `error`, the raw `response`
of a failed row, optional typed columns), equal to what `respc parse` and Ray Data give for the same
records. Options are plain values (a preset name, a template, column names), so `num_proc` workers,
which receive them pickled, each build the parser once on their first batch.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pyarrow as pa

from respc.batch.arrow import TableParser, output_schema
from respc.batch.local import count_failed
from respc.batch.records import Columns, ParserSource, RecordParser

__all__ = ["features", "map_dataset", "parse_batch"]


def parse_batch(
    batch: Any,
    *,
    preset: str | None = None,
    template: Any = None,
    model: str | None = None,
    target: str | None = None,
    response_column: str = "response",
    prompt_column: str | None = "prompt",
    id_column: str | None = "id",
    tools_column: str | None = None,
    tools: list | None = None,
    layout: str = "json",
    errors: str = "strict",
    strict_end: bool = False,
) -> Any:
    """Parse one batch for `Dataset.map(parse_batch, batched=True, fn_kwargs={...})`: a `pyarrow.Table`
    (with `dataset.with_format("arrow")`) gives a table, a dict of lists (the default format) a dict of
    lists. The returned columns (`id`, `message`, `error`, `raw_response`, typed ones) replace
    same-named ones of the dataset; pass `remove_columns=dataset.column_names`, as `map_dataset` does, to
    keep exactly the output schema. Options as for `respc.batch.ray.ParseResponses`."""
    options = {
        "preset": preset,
        "template": template,
        "model": model,
        "target": target,
        "columns": (response_column, prompt_column, id_column, tools_column),
        "tools": tools,
        "layout": layout,
        "errors": errors,
        "strict_end": strict_end,
    }
    parser = _parser(json.dumps(options, sort_keys=True, default=str))
    if isinstance(batch, (pa.Table, pa.RecordBatch)):
        return parser.parse_table(batch)
    names = [name for name in options["columns"] if name is not None and name in batch]
    table = pa.table({name: pa.array(list(batch[name])) for name in names})
    return parser.parse_table(table).to_pydict()


@functools.lru_cache(maxsize=8)
def _parser(options: str) -> TableParser:
    """The parser for a set of options, built once per process (each `num_proc` worker builds its own)."""
    given = json.loads(options)
    source = ParserSource.of(
        preset=given["preset"], template=given["template"], model=given["model"], target=given["target"]
    )
    records = RecordParser(
        source.load(),
        tools=given["tools"],
        columns=Columns(*given["columns"]),
        errors=given["errors"],
        strict_end=given["strict_end"],
    )
    return TableParser(records, layout=given["layout"])


def features(id_type: pa.DataType | None = None, layout: str = "json") -> Any:
    """The `datasets.Features` of the output schema, for `Dataset.map(..., features=...)`: without them
    a batch whose errors are all null would type the `error` column as null."""
    from datasets import Features

    return Features.from_arrow_schema(output_schema(id_type, layout))


def map_dataset(
    dataset: Any,
    *,
    num_proc: int | None = None,
    batch_size: int = 1000,
    keep_columns: bool = False,
    **options: Any,
) -> tuple[Any, int]:
    """`dataset` parsed: (a dataset of the output schema, in order, how many records failed).

    `options` are `parse_batch`'s. `keep_columns` keeps the dataset's other columns before the output's
    (the output's names win). The result is computed afresh (never read from the datasets cache, which
    would not notice a changed template or respc), in `num_proc` processes.
    """
    from respc._version import __version__

    id_column = options.get("id_column", "id")
    schema = dataset.data.schema
    id_type = schema.field(id_column).type if id_column in schema.names else None
    output = features(id_type, options.get("layout", "json"))
    if keep_columns:
        output = type(output)({**{k: v for k, v in dataset.features.items() if k not in output}, **output})
    if len(dataset) == 0:
        from datasets import Dataset

        return Dataset.from_dict({name: [] for name in output}, features=output), 0
    fingerprint = json.dumps(
        [dataset._fingerprint, __version__, options, keep_columns], sort_keys=True, default=str
    )
    parsed = dataset.with_format("arrow").map(
        parse_batch,
        batched=True,
        batch_size=batch_size,
        fn_kwargs=options,
        features=output,
        remove_columns=[] if keep_columns else dataset.column_names,
        num_proc=num_proc,
        load_from_cache_file=False,
        new_fingerprint=_digest(fingerprint),
        desc="respc parse",
    )
    parsed = parsed.with_format(None)
    return parsed, count_failed(parsed.data.table, options.get("errors", "strict"))


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:32]
