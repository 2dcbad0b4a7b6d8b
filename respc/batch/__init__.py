"""Parse stored generations in bulk: the engines behind `respc parse`.

`ParserSource` names the parser in a form that travels to worker processes (a preset name or a template);
`RecordParser` turns one input record into one output record and never raises for a bad record;
`parse_records` runs it over many, in one process or a pool, keeping the input's order.
"""

from respc.batch.records import ParserSource, RecordParser, parse_records

__all__ = ["ParserSource", "RecordParser", "parse_records"]
