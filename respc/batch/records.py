"""One record in, one record out: JSONL records parsed with a compiled parser, failures kept in place.

A record that fails to parse never stops a run and is never dropped: it becomes
`{"id": ..., "error": {"type": ..., "message": ...}, "response": <raw text>}` in its place. Each
`parse_records` call owns its parser (and, with workers, its own pool), so two runs in one process never
share one.
"""

from __future__ import annotations

import json
import multiprocessing
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["IMAP_CHUNK", "ParserSource", "RecordParser", "parse_records"]

IMAP_CHUNK = 256  # records per task sent to a worker: amortises the inter-process round trip


@dataclass(frozen=True)
class ParserSource:
    """The parser a run uses: a shipped preset's name, or a template (compiled on first use, cached).

    It pickles, so worker processes rebuild the same parser from it.
    """

    preset: str | None = None
    template: Any = None
    target: str | None = None  # the transformers release to parse as (default: the newest supported)

    def __post_init__(self) -> None:
        if (self.preset is None) == (self.template is None):
            raise ValueError("ParserSource takes a preset name or a template, not both or neither")

    @classmethod
    def of_module(cls, module: types.ModuleType) -> ParserSource:
        """The source of a generated module: its preset name when it is one, else its template."""
        package, _, name = module.__name__.rpartition(".")
        if package == "respc.generated":
            return cls(preset=name)
        return cls(template=module.TEMPLATE, target=module.TRANSFORMERS_TARGET)

    def load(self) -> types.ModuleType:
        """The generated parser module (`respc.PresetNotFound`, `respc.TemplateError` or, without the
        compiler extra, `ImportError` when it cannot be had)."""
        if self.preset is not None:
            from respc.registry import load_preset

            return load_preset(self.preset, self.target)
        from respc._compile import compile_template

        return compile_template(self.template, target=self.target)


class RecordParser:
    """Parses JSONL records with one parser: `response` as the text, `prompt` as the prefix."""

    def __init__(
        self,
        module: types.ModuleType,
        *,
        tools: list | None = None,
        fields: tuple[str, str, str] = ("response", "prompt", "id"),
    ) -> None:
        self.parse = module.parse_response
        self.tools = tools
        self.response_field, self.prompt_field, self.id_field = fields

    def line(self, line: str) -> tuple[str, bool]:
        """One JSONL input line -> (output line, failed)."""
        line = line.rstrip("\r\n")
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            return error_line(None, "JSONDecodeError", f"invalid JSON: {error}", line), True
        except RecursionError:
            return error_line(None, "JSONDecodeError", "invalid JSON: nested too deeply", line), True
        if not isinstance(record, dict):
            message = f"expected a JSON object, got {type(record).__name__}"
            return error_line(None, "InvalidRecord", message, line), True
        return self.record(record)

    def record(self, record: dict) -> tuple[str, bool]:
        """One decoded record -> (output line, failed)."""
        record_id = record.get(self.id_field)
        response, prompt = record.get(self.response_field), record.get(self.prompt_field)
        if not isinstance(response, str):
            found = "missing" if self.response_field not in record else f"a {type(response).__name__}"
            message = f"field {self.response_field!r} must be a string, got {found}"
            return error_line(record_id, "InvalidRecord", message, response), True
        if prompt is not None and not isinstance(prompt, str):
            message = f"field {self.prompt_field!r} must be a string or null, got {type(prompt).__name__}"
            return error_line(record_id, "InvalidRecord", message, response), True
        try:
            message = self.parse(response, prefix=prompt or "", tools=self.tools)
        except Exception as error:  # any failure of one record is reported in its place
            return error_line(record_id, type(error).__name__, str(error), response), True
        return json.dumps({"id": record_id, "message": message}, ensure_ascii=False), False


def error_line(record_id: Any, kind: str, message: str, response: Any) -> str:
    """The output line of a record that failed: its id, the error and the raw response."""
    error = {"id": record_id, "error": {"type": kind, "message": message}, "response": response}
    return json.dumps(error, ensure_ascii=False)


# A worker process's RecordParser: set by the pool's initializer, in that process only (each pool's
# workers are their own processes, so two runs never share it).
_WORKER: list[RecordParser] = []


def _start_worker(source: ParserSource, tools: list | None, fields: tuple[str, str, str]) -> None:
    _WORKER[:] = [RecordParser(source.load(), tools=tools, fields=fields)]


def _worker_line(line: str) -> tuple[str, bool]:
    return _WORKER[0].line(line)


def parse_records(
    lines: Iterable[str],
    source: ParserSource,
    *,
    tools: list | None = None,
    fields: tuple[str, str, str] = ("response", "prompt", "id"),
    workers: int = 1,
) -> Iterator[tuple[str, bool]]:
    """Output lines for JSONL input lines, in input order: (line, failed) for each non-blank line.

    The parser is loaded before the first record is read, so a bad source fails on the first `next()`
    (with workers, before any worker starts; forked workers then find the template in respc's cache).
    """
    module = source.load()
    lines = (line for line in lines if line.strip())
    if workers <= 1:
        yield from map(RecordParser(module, tools=tools, fields=fields).line, lines)
        return
    with multiprocessing.Pool(workers, _start_worker, (source, tools, fields)) as pool:
        yield from pool.imap(_worker_line, lines, chunksize=IMAP_CHUNK)
