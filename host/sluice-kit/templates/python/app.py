"""`{{name}}`: a Sluice tool in Python (componentize-py 0.25.1) that reads a text file from a
granted root one page at a time. Each page holds as many whole lines as fit the page budget
the host grants the call (`sluice:tools/budget` `page-bytes`), and says where the next page
starts (`next_cursor`). A granted root is mounted at `/<root name>`: plain open() reads it."""

import json
import os

import wit_world
from componentize_py_types import Err
from wit_world.imports import budget
from wit_world.imports.lines import Page, PageArgs
from wit_world.imports.types import (  # sluice:tools/types
    ToolError_BinaryFile,
    ToolError_InvalidArgument,
    ToolError_Io,
    ToolError_NotFound,
    ToolError_OutsideRoot,
    ToolError_PageTooSmall,
    ToolError_WrongKind,
)


class WitWorld(wit_world.WitWorld):
    def {{name_snake}}(self, args: PageArgs) -> Page:
        path = args.path
        cursor = 0 if args.cursor is None else args.cursor
        # The bytes of JSON this page may fill: 0 when the cap leaves no room for one.
        page = budget.page_bytes(path)
        if page == 0:
            raise Err(ToolError_PageTooSmall(
                f"the cap (agent.max_tool_result_bytes, {budget.max_result_bytes()} bytes) "
                f"leaves no room for a page of {path}; raise it or use a shorter path"))
        try:
            with open(path, "rb") as file:
                size = os.fstat(file.fileno()).st_size
                if cursor > size:
                    raise Err(ToolError_InvalidArgument(
                        f"cursor {cursor} is past the end of {path} ({size} bytes); pass the "
                        "nextCursor of a page, or leave cursor out to start at the beginning"))
                file.seek(cursor)
                return read_page(file, path, cursor, page)
        except FileNotFoundError:
            raise Err(ToolError_NotFound(f"no such file or directory: {path}"))
        except PermissionError:
            raise Err(ToolError_OutsideRoot(
                f"not permitted: {path}; give a path under a granted root, mounted at /<root name>"))
        except IsADirectoryError:
            raise Err(ToolError_WrongKind(f"{path} is a directory; give the path of a text file"))
        except OSError as e:
            raise Err(ToolError_Io(f"cannot read {path}: {e.strerror}"))


def read_page(file, path: str, cursor: int, page: int) -> Page:
    """The lines of `file` from byte `cursor` that fit `page` bytes of JSON."""
    lines = []
    used = 2  # the list's `[]`
    offset = cursor  # where the next line starts
    for raw in file:
        # Split at "\n"; drop it and a "\r" before it.
        text = raw
        if text.endswith(b"\n"):
            text = text[:-1].removesuffix(b"\r")
        try:
            line = text.decode("utf-8")
        except UnicodeDecodeError:
            raise Err(ToolError_BinaryFile(f"{path} is not UTF-8 text"))
        # The line as the host writes it: a JSON string, and a comma after the first.
        cost = len(json.dumps(line, ensure_ascii=False).encode()) + (1 if lines else 0)
        if used + cost > page:
            if not lines:
                raise Err(ToolError_PageTooSmall(
                    f"the line at byte {offset} of {path} does not fit a page of {page} "
                    "bytes; raise agent.max_tool_result_bytes"))
            return Page(path=path, lines=lines, next_cursor=offset)
        used += cost
        lines.append(line)
        offset += len(raw)
    return Page(path=path, lines=lines, next_cursor=None)
