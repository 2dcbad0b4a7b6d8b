"""Parse stored generations in bulk: the engines behind `respc parse`.

`ParserSource` names the parser in a form that travels to worker processes (a preset name or a template);
`RecordParser` turns one input record into one `Result` and never raises for a bad record;
`parse_records` runs it over JSONL lines, in one process or a pool, keeping the input's order.
The modules below need pyarrow (and their engine) and are imported only when used:

- `respc.batch.files`: JSONL and Parquet inputs and outputs, files or shard directories, atomic;
- `respc.batch.arrow`: the Arrow output schema every engine writes (`TableParser`, `IdTyping`);
- `respc.batch.local`: `Job` and `run_local`, the local engine (one process or a pool);
- `respc.batch.ray`: `ParseResponses` for Ray Data's `map_batches`, and `run_ray`;
- `respc.batch.datasets`: `parse_batch` and `map_dataset` for Hugging Face datasets.
"""

from respc.batch.records import ParserSource, RecordParser, parse_records

__all__ = ["ParserSource", "RecordParser", "parse_records"]
