"""`summarize_table`: a Sluice tool written in Python and built with componentize-py.

It reads a table file from one of the roots the operator granted (preopened at `/<root>`),
summarises it column by column, and returns as many columns as fit the page budget the host
grants the call (`sluice:tools/budget` `page-bytes`), with `next_column` to continue. It stops
reading at the call's time budget (`time-budget-ms`) and says so, instead of being killed at
the timeout.
"""

import csv
# A codec is looked up by name when a file is opened; componentize-py bundles only the
# modules the app imports at build time, so the one used below is imported here.
import encodings.utf_8_sig  # noqa: F401
import json
import os
import posixpath
import re
import time
from enum import Enum

import wit_world
from componentize_py_types import Err
from wit_world.imports import budget, preopens
from wit_world.imports import sluice_tools_types as errors
from wit_world.imports.table import (
    ColumnKind,
    ColumnSummary,
    SummarizeArgs,
    TableFormat,
    TableSummary,
    ValueCount,
)

# Distinct values counted per column; past this, `distinct` is left out and `top` counts
# only the values seen first.
MAX_DISTINCT = 10_000
# Characters of a value shown in `top`.
MAX_VALUE_CHARS = 100
DEFAULT_TOP = 3
MAX_TOP = 10
# `.json` files are parsed whole; larger ones must be JSON Lines.
MAX_JSON_BYTES = 8 << 20
# Characters of caller input repeated in a message.
MAX_QUOTED_CHARS = 200
# Rows between two looks at the clock.
ROWS_PER_CLOCK_CHECK = 1024

NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


class WitWorld(wit_world.WitWorld):
    """The exports of the `csv-summary` world."""

    def summarize_table(self, args: SummarizeArgs) -> TableSummary:
        return summarize(args)


def fail(error) -> None:
    """Ends the call with a `tool-error`: the host shows the model
    `{"ok":false,"error":<message>,"kind":<case>}`."""
    raise Err(error)


def quote(text: str) -> str:
    return text if len(text) <= MAX_QUOTED_CHARS else text[:MAX_QUOTED_CHARS] + "…"


def cut(text: str) -> str:
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "…"


class Column:
    """Running counts of one column."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.filled = 0
        self.numbers = 0
        self.total = 0.0
        self.min = None
        self.max = None
        self.counts: dict[str, int] = {}
        self.overflow = False

    def add(self, text: str, number) -> None:
        """Counts one non-empty value; `number` is its value when it is a number."""
        self.filled += 1
        if number is not None:
            self.numbers += 1
            self.total += number
            self.min = number if self.min is None else min(self.min, number)
            self.max = number if self.max is None else max(self.max, number)
        if text in self.counts:
            self.counts[text] += 1
        elif len(self.counts) < MAX_DISTINCT:
            self.counts[text] = 1
        else:
            self.overflow = True

    def summary(self, rows: int, top: int) -> ColumnSummary:
        if self.filled == 0:
            kind = ColumnKind.EMPTY
        elif self.numbers == self.filled:
            kind = ColumnKind.NUMBER
        else:
            kind = ColumnKind.TEXT
        number = kind == ColumnKind.NUMBER
        # `sorted` is stable and dicts keep insertion order: ties stay in order of appearance.
        common = sorted(self.counts.items(), key=lambda kv: -kv[1])[:top]
        return ColumnSummary(
            name=self.name,
            kind=kind,
            filled=self.filled,
            empty=rows - self.filled,
            distinct=None if self.overflow else len(self.counts),
            min=float(self.min) if number else None,
            max=float(self.max) if number else None,
            mean=round(self.total / self.numbers, 6) if number else None,
            top=[ValueCount(value=cut(v), count=n) for v, n in common],
        )


class Table:
    """The columns of a table, in order, as rows are read."""

    def __init__(self, deadline: float) -> None:
        self.columns: list[Column] = []
        self.by_name: dict[str, Column] = {}
        self.rows = 0
        self.deadline = deadline
        self.stopped_by = None

    def column(self, name: str) -> Column:
        col = self.by_name.get(name)
        if col is None:
            col = Column(name)
            self.columns.append(col)
            self.by_name[name] = col
        return col

    def next_row(self) -> bool:
        """Counts a row; False when the time budget ran out and reading must stop."""
        if self.rows % ROWS_PER_CLOCK_CHECK == 0 and time.monotonic() >= self.deadline:
            self.stopped_by = "time"
            return False
        self.rows += 1
        return True


def text_value(raw: str, col: Column) -> None:
    value = raw.strip()
    if value:
        col.add(value, float(value) if NUMBER.fullmatch(value) else None)


def json_value(value, col: Column) -> None:
    if value is None or value == "":
        return
    if isinstance(value, bool):
        col.add("true" if value else "false", None)
    elif isinstance(value, (int, float)):
        col.add(json.dumps(value), float(value))
    elif isinstance(value, str):
        col.add(value, None)
    else:
        col.add(json.dumps(value, ensure_ascii=False, separators=(",", ":")), None)


def read_delimited(f, delimiter: str, table: Table, path: str) -> None:
    reader = csv.reader(f, delimiter=delimiter)
    try:
        header = next(reader, None)
        if header is None:
            return
        columns = []
        for i, name in enumerate(header):
            name = name.strip() or f"column {i + 1}"
            unique, n = name, 2
            while unique in table.by_name:
                unique, n = f"{name} ({n})", n + 1
            columns.append(table.column(unique))
        for row in reader:
            if not row:
                continue
            if not table.next_row():
                return
            for raw, col in zip(row, columns):
                text_value(raw, col)
    except csv.Error as e:
        fail(errors.ToolError_InvalidArgument(
            f"{quote(path)} is not valid CSV at line {reader.line_num}: {e}"))


def read_json_lines(f, table: Table, path: str) -> None:
    for number, line in enumerate(f, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            fail(errors.ToolError_InvalidArgument(
                f"{quote(path)} line {number} is not JSON: {e}"))
        if not isinstance(obj, dict):
            fail(errors.ToolError_InvalidArgument(
                f"{quote(path)} line {number} is not a JSON object"))
        if not table.next_row():
            return
        for key, value in obj.items():
            json_value(value, table.column(key))


def read_json_array(f, size: int, table: Table, path: str) -> None:
    if size > MAX_JSON_BYTES:
        fail(errors.ToolError_InvalidArgument(
            f"{quote(path)} is {size} bytes; a .json file is read whole, up to "
            f"{MAX_JSON_BYTES} bytes: give it as JSON Lines (.jsonl, one object per line) "
            "to summarise it as a stream"))
    try:
        data = json.load(f)
    except ValueError as e:
        fail(errors.ToolError_InvalidArgument(f"{quote(path)} is not JSON: {e}"))
    if not isinstance(data, list) or not all(isinstance(o, dict) for o in data):
        fail(errors.ToolError_InvalidArgument(
            f"{quote(path)} is not a JSON array of objects; for one object per line, "
            "name it .jsonl"))
    for obj in data:
        if not table.next_row():
            return
        for key, value in obj.items():
            json_value(value, table.column(key))


def format_of(path: str, first_line: str) -> TableFormat:
    ext = posixpath.splitext(path)[1].lower()
    if ext == ".tsv":
        return TableFormat.TSV
    if ext in (".jsonl", ".ndjson"):
        return TableFormat.JSON_LINES
    if ext == ".json":
        return TableFormat.JSON
    if ext == ".csv":
        return TableFormat.CSV
    return TableFormat.TSV if first_line.count("\t") > first_line.count(",") else TableFormat.CSV


def root_dir(root) -> str:
    """The guest path of the root named `root` (default: the first the host preopened)."""
    names = []
    for descriptor, name in preopens.get_directories():
        descriptor.__exit__(None, None, None)  # only the names are needed
        names.append(name.lstrip("/"))
    if not names:
        fail(errors.ToolError_InvalidArgument(
            "this tool was granted no root; the operator grants one with `read = [\"NAME\"]` "
            "in its policy"))
    if root is None:
        return "/" + names[0]
    if root not in names:
        fail(errors.ToolError_InvalidArgument(
            f"unknown root {quote(root)}; this tool's roots are: {', '.join(names)}"))
    return "/" + root


def open_error(path: str, e: OSError):
    if isinstance(e, FileNotFoundError):
        return errors.ToolError_NotFound(f"no such file or directory: {quote(path)}")
    if isinstance(e, IsADirectoryError):
        return errors.ToolError_WrongKind(f"{quote(path)} is a directory, not a table file")
    if isinstance(e, NotADirectoryError):
        return errors.ToolError_WrongKind(
            f"a component of the path is not a directory: {quote(path)}")
    if isinstance(e, PermissionError):
        return errors.ToolError_OutsideRoot(
            f"path is outside the root: {quote(path)}; give a path relative to the root")
    return errors.ToolError_Io(f"failed to read {quote(path)}: {e}")


def size_of(value) -> int:
    """Bytes of `value` as the host writes it (compact JSON, camelCase fields, absent options
    left out); Python writes floats a little longer than the host at worst, never shorter."""
    def plain(v):
        if isinstance(v, list):
            return [plain(x) for x in v]
        if hasattr(v, "__dataclass_fields__"):
            return {camel(k): plain(x) for k, x in vars(v).items() if x is not None}
        if isinstance(v, Enum):  # a WIT enum case: its WIT name
            return v.name.lower().replace("_", "-")
        return v
    return len(json.dumps(plain(value), ensure_ascii=False, separators=(",", ":")).encode())


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def summarize(args: SummarizeArgs) -> TableSummary:
    path = args.path
    top = DEFAULT_TOP if args.top is None else args.top
    if top > MAX_TOP:
        fail(errors.ToolError_InvalidArgument(f"top must be at most {MAX_TOP}; got {top}"))
    page = budget.page_bytes(path)
    if page == 0:
        fail(errors.ToolError_PageTooSmall(
            f"the result cannot fit: agent.max_tool_result_bytes is {budget.max_result_bytes()} "
            "bytes, which leaves no room for a page; raise agent.max_tool_result_bytes or use "
            "a shorter path"))
    deadline = time.monotonic() + budget.time_budget_ms() / 1000

    if "\0" in path:
        fail(errors.ToolError_InvalidArgument(f"path holds a NUL character: {quote(path)}"))
    rel = posixpath.normpath(path)
    if path.startswith("/") or rel == ".." or rel.startswith("../"):
        fail(errors.ToolError_OutsideRoot(
            f"path is outside the root: {quote(path)}; give a path relative to the root, "
            "without `..` above it"))
    full = root_dir(args.root) + "/" + rel

    table = Table(deadline)
    try:
        with open(full, "rb") as f:
            head = f.read(8192)
        if b"\0" in head:
            fail(errors.ToolError_BinaryFile(
                f"{quote(path)} holds a NUL byte in its first 8 KiB; only text tables are read"))
        first_line = head.split(b"\n", 1)[0].decode("utf-8", "replace")
        fmt = format_of(path, first_line)
        with open(full, encoding="utf-8-sig", errors="replace", newline="") as f:
            if fmt == TableFormat.CSV:
                read_delimited(f, ",", table, path)
            elif fmt == TableFormat.TSV:
                read_delimited(f, "\t", table, path)
            elif fmt == TableFormat.JSON_LINES:
                read_json_lines(f, table, path)
            else:
                read_json_array(f, os.fstat(f.fileno()).st_size, table, path)
    except OSError as e:
        fail(open_error(path, e))

    if args.columns is None:
        chosen = table.columns
    else:
        if not args.columns:
            fail(errors.ToolError_InvalidArgument(
                "columns must name at least one column; leave it out for every column"))
        chosen = []
        for name in args.columns:
            col = table.by_name.get(name)
            if col is None:
                names = ", ".join(quote(c.name) for c in table.columns[:20])
                more = ", …" if len(table.columns) > 20 else ""
                fail(errors.ToolError_InvalidArgument(
                    f"no column named {quote(name)}; the columns are: {names}{more}"))
            chosen.append(col)
    start = args.start_column or 0
    if start > 0 and start >= len(chosen):
        fail(errors.ToolError_InvalidArgument(
            f"startColumn must be less than the number of columns ({len(chosen)}); got {start}"))

    result = TableSummary(
        path=path, format=fmt, rows=table.rows, column_count=len(chosen), columns=[],
        # The largest value it can take, so that the size counted below is an upper bound.
        next_column=2**32 - 1, stopped_by=table.stopped_by,
    )
    used = size_of(result)
    for col in chosen[start:]:
        summary = col.summary(table.rows, top)
        size = size_of(summary) + (1 if result.columns else 0)
        # The first column of a page always comes back, with fewer `top` values if need be.
        while not result.columns and used + size > page and summary.top:
            summary.top.pop()
            size = size_of(summary)
        if used + size > page:
            break
        result.columns.append(summary)
        used += size
    if not result.columns and start < len(chosen):
        fail(errors.ToolError_PageTooSmall(
            f"the summary of column {quote(chosen[start].name)} does not fit a page of "
            f"{page} bytes; raise agent.max_tool_result_bytes"))
    shown = start + len(result.columns)
    result.next_column = shown if shown < len(chosen) else None
    return result
