"""Exercise 7 as a student meets it: each classic mistake (tests/mutations/ex7_agent_grpo.py) gets a first ✗ line that
names it, and the other ✗ lines of the same check() agree; the answer cells are run as a student would fill them."""
from __future__ import annotations

import contextlib
import io
import re

import nbformat
import pytest

from agentrl_ref.checks import check
from course import ROOT, cell_namespace, filled, mutated_fills, mutations, reference_fills

EX = "ex7_agent_grpo"
_spec: dict = {}
exec(compile((ROOT / "tests" / "mutations" / f"{EX}.py").read_text(encoding="utf-8"), "mutations", "exec"), _spec)
FIRST_HINT = _spec["FIRST_HINT"]


def _namespace(fills: list[str]) -> dict:
    """The student's answer cells (and the read-only cells between them), filled and run."""
    nb = nbformat.reads(filled(EX, fills), as_version=4)
    namespace = cell_namespace(EX)
    wanted = {"clipped_pg_loss_answer", "token_advantages_imports", "token_advantages_answer"}
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") in wanted:
            exec(compile(cell.source, cell.metadata.nbgrader.grade_id, "exec"), namespace)
    return namespace


def _failures(namespace: dict) -> list[str]:
    """Every ✗ block check() prints for the two parts, in order."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        check("clipped_pg_loss", namespace)
        check("token_advantages", namespace)
    return re.findall(r"^✗ .*?(?=^[✓✗]|^\d+/\d+ 项通过)", out.getvalue(), flags=re.M | re.S)


def test_every_mistake_in_the_table_has_an_expected_first_hint():
    assert set(FIRST_HINT) == set(mutations(EX))


def test_the_reference_passes_every_check():
    assert _failures(_namespace(reference_fills(EX))) == []


@pytest.mark.parametrize("label", sorted(mutations(EX)))
def test_the_first_failing_line_names_the_mistake_and_the_others_agree(label):
    changes, _ = mutations(EX)[label]
    failures = _failures(_namespace(mutated_fills(EX, changes)))
    want = FIRST_HINT[label]
    if want is None:
        assert failures == [], failures
        return
    assert failures, f"{label}: no visible test fails"
    assert want in failures[0], f"{label}: the first ✗ says\n{failures[0]}"
    for other in failures[1:]:
        assert "提示" not in other or want in other, f"{label}: a later ✗ line says something else\n{other}"
    assert all(block.index("✗") == 0 for block in failures)  # each report starts with its heading
