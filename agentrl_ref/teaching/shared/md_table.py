"""One Markdown table renderer for the executed tables of the exercises."""
from __future__ import annotations

from typing import Iterable, Sequence

_SEPARATORS = {"": "---", "r": "---:", "c": ":---:"}


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str | None]],
                   align: str | Sequence[str] = "") -> str:
    """Header line, separator line (align per column: "" left, "r" right, "c" centre), one line per row.

    Cells are written as given, between "| " and " |" (nothing is escaped); None is a blank cell, "| |".
    """
    def line(cells: Sequence[str | None]) -> str:
        return "|" + "".join(" |" if cell is None else f" {cell} |" for cell in cells)

    aligns = [align] * len(header) if isinstance(align, str) else align
    separator = "|" + "".join(_SEPARATORS[a] + "|" for a in aligns)
    return "\n".join([line(header), separator, *map(line, rows)])
