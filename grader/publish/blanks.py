"""Fill-in-the-blank releases for nbgrader.

nbgrader's ClearSolutions replaces a whole solution region with one stub
(`raise NotImplementedError()`). The course keeps the seed page's look instead:
the student sees `pattern = _____` with the TODO comments around it. In the
instructor notebook a solution line carries a marker comment:

    pattern = r"..."                    # BLANK        -> pattern = _____
    if role == "assistant":             # BLANK: role == "assistant"  -> if _____:
    return mask[1:]                     # BLANK        -> return _____

`# BLANK` alone blanks what follows the first ` = ` (or `return `, `assert `);
`# BLANK: text` blanks exactly `text`, which must occur in the line. The release step that applies it is
FillInTheBlanks, in nbgrader's generate_assignment list (GENERATE) in place of ClearSolutions.
"""
from __future__ import annotations

import re

from nbgrader.preprocessors import (
    CheckCellMetadata, ClearHiddenTests, ClearMarkScheme, ClearOutput, ClearSolutions, ComputeChecksums,
    IncludeHeaderFooter, InstantiateTests, LockCells, SaveCells,
)

BLANK = "_____"
MARK = re.compile(r"\s*#\s*BLANK(?::\s*(?P<text>.*?))?\s*$")
_STATEMENT = re.compile(r"^(?P<head>\s*(?:return |assert |.*? = ))(?P<body>.*)$")


def blank_line(line: str) -> str:
    """Turn one marked solution line into its blank; unmarked lines come back unchanged."""
    found = MARK.search(line)
    if found is None:
        return line
    code = line[: found.start()]
    text = found.group("text")
    if text:
        if text not in code:
            raise ValueError(f"BLANK text {text!r} not found in line {line!r}")
        return code.replace(text, BLANK, 1)
    statement = _STATEMENT.match(code)
    if statement is None:
        raise ValueError(f"cannot tell what to blank in {line!r}; use '# BLANK: <text>'")
    return statement.group("head") + BLANK


def blanked_text(line: str) -> str | None:
    """The solution text that `blank_line` hides in a marked line (None for unmarked lines)."""
    found = MARK.search(line)
    if found is None:
        return None
    code = line[: found.start()]
    blanked = blank_line(line)
    head, tail = blanked.split(BLANK, 1)
    return code[len(head): len(code) - len(tail)]


def solution_fills(source: str) -> list[str]:
    """Every blank's solution text, in the order the blanks appear."""
    return [text for text in map(blanked_text, source.split("\n")) if text is not None]


def blank_source(source: str) -> str:
    return "\n".join(blank_line(line) for line in source.split("\n"))


def has_blanks(source: str) -> bool:
    return any(MARK.search(line) for line in source.split("\n"))


class FillInTheBlanks(ClearSolutions):
    """ClearSolutions that turns `# BLANK` lines into `_____` and keeps the rest of the cell."""

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and has_blanks(cell.source):
            if self.begin_solution_delimeter in cell.source:
                raise RuntimeError("a cell uses either # BLANK lines or a solution region, not both")
            cell.source = blank_source(cell.source)
            return cell, resources
        return super().preprocess_cell(cell, resources, cell_index)


# nbgrader's generate_assignment list with FillInTheBlanks in place of ClearSolutions. The order matters:
# hidden tests are cleared after the checksums are saved.
GENERATE = [IncludeHeaderFooter, InstantiateTests, LockCells, FillInTheBlanks, ClearOutput, CheckCellMetadata,
            ComputeChecksums, SaveCells, ClearHiddenTests, ClearMarkScheme, ComputeChecksums, CheckCellMetadata]
