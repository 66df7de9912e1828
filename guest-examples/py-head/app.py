"""`head`: a Sluice tool in Python (componentize-py 0.25.1) that reads a file from a root."""

import wit_world
from componentize_py_types import Err  # 0.25 moved `Err` here (it was in `wit_world.types`)
from wit_world.imports.lines import HeadArgs, HeadPage, StoppedBy
from wit_world.imports.types import (  # sluice:tools/types (the name is taken when unique)
    ToolError_BinaryFile,
    ToolError_InvalidArgument,
    ToolError_Io,
    ToolError_NotFound,
    ToolError_OutsideRoot,
    ToolError_WrongKind,
)

DEFAULT_COUNT = 10
MAX_COUNT = 100


class WitWorld(wit_world.WitWorld):
    def head(self, args: HeadArgs) -> HeadPage:
        count = DEFAULT_COUNT if args.count is None else args.count
        if not 1 <= count <= MAX_COUNT:
            raise Err(ToolError_InvalidArgument(f"count must be 1 to {MAX_COUNT}; got {count}"))
        path = args.path
        lines = []
        stopped = StoppedBy.END_OF_FILE
        try:
            # A granted root is mounted at /<root name>: plain open() reads it.
            # newline="\n": split at "\n" only, as the other languages do.
            with open(path, encoding="utf-8", newline="\n") as file:
                for line in file:
                    if len(lines) == count:
                        stopped = StoppedBy.LINE_LIMIT
                        break
                    lines.append(line.removesuffix("\r\n").removesuffix("\n"))
        except FileNotFoundError:
            raise Err(ToolError_NotFound(f"no such file or directory: {path}"))
        except PermissionError:
            raise Err(ToolError_OutsideRoot(
                f"not permitted: {path}; give a path under a granted root, mounted at /<root name>"))
        except IsADirectoryError:
            raise Err(ToolError_WrongKind(f"{path} is a directory; head reads files"))
        except UnicodeDecodeError:
            raise Err(ToolError_BinaryFile(f"{path} is not UTF-8 text"))
        except OSError as e:
            raise Err(ToolError_Io(f"cannot read {path}: {e.strerror}"))
        return HeadPage(path=path, lines=lines, stopped_by=stopped)
