"""What the course's steps know about one notebook on its way through nbgrader's lists.

    state = NotebookState.of(resources)      # the one record that travels in nbgrader's resources
    state.notes.append("…")                  # what an instructor should know (Chinese)
    state.status = "timeout"                 # ok | timeout | killed | error | ungraded

`make grade` puts a filled one into each notebook's resources (the reference's records and hidden strings,
found once per assignment) and copies it into the notebook's row at the end; under `nbgrader autograde` the
first step that asks starts an empty one and the execute step finds the reference itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KEY = "agentrl"   # the record's key in nbgrader's resources


@dataclass
class NotebookState:
    status: str = "ok"                     # ok | timeout | killed | error | ungraded: the row's status
    notes: list[str] = field(default_factory=list)   # for the instructor's report (Chinese)
    expected: dict[str, list[tuple[str, Any]]] | None = None   # grade_id -> the reference's records
    hidden: list[str] = field(default_factory=list)  # the hidden tests' strings: never quoted (redact.py)
    verdicts: dict[str, Any] = field(default_factory=dict)   # grade_id -> verdict.Verdict
    seconds: float = 0.0                   # the notebook's run in its sandbox
    untouched: bool = False                # handed in as released (prepare.untouched)
    timed_out: dict[int, int] = field(default_factory=dict)   # cell index -> the cell timeout that stopped it

    @classmethod
    def of(cls, resources: dict) -> "NotebookState":
        """The record of the notebook these resources travel with (an empty one the first time)."""
        return resources.setdefault(KEY, cls())

    def passed(self) -> dict[str, bool]:
        """grade_id -> the trusted verdict: what the gradebook records."""
        return {gid: verdict.passed for gid, verdict in self.verdicts.items()}
