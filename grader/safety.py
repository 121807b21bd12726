"""nbgrader preprocessors that make autograding robust to what real submissions do.

FreshTestCode (before execution): every test cell starts by dropping agentrl_ref from
    sys.modules and importing run_test again, so a student cell that replaced
    agentrl_ref.checks (or the name run_test) cannot make a visible test pass.
StderrIsNotAFailure (after execution): nbgrader scores a test cell 0 when anything
    reached stderr, so a torch or matplotlib warning raised while testing a correct
    answer would cost full points. The stream is kept, relabelled as stdout.
CapOutputs (after execution): one print of 50 MB must not end up in the gradebook
    and in every feedback page.
SkipDemoCells (before execution): cells tagged `demo` (timing plots, comparison tables)
    teach but grade nothing; skipping them keeps a class's autograde fast.
"""
from __future__ import annotations

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer

FRESH_PRELUDE = (
    "import sys as _grader_sys; [_grader_sys.modules.pop(_m) for _m in list(_grader_sys.modules) "
    "if _m.split('.')[0] == 'agentrl_ref']; from agentrl_ref.checks import run_test  "
    "# added by the grader: fresh test code\n"
)


def _is_test_cell(cell) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


DEMO_TAG = "demo"


class SkipDemoCells(NbGraderPreprocessor):
    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and DEMO_TAG in cell.metadata.get("tags", []):
            cell.source = "# (demo cell: not run while grading)"
        return cell, resources


class FreshTestCode(NbGraderPreprocessor):
    def preprocess_cell(self, cell, resources, index):
        if _is_test_cell(cell) and not cell.source.startswith(FRESH_PRELUDE):
            cell.source = FRESH_PRELUDE + cell.source
        return cell, resources


class StderrIsNotAFailure(NbGraderPreprocessor):
    def preprocess_cell(self, cell, resources, index):
        if _is_test_cell(cell):
            for output in cell.get("outputs", []):
                if output.output_type == "stream" and output.name == "stderr":
                    output.name = "stdout"
                    output.text = "[stderr] " + output.text
        return cell, resources


class CapOutputs(NbGraderPreprocessor):
    max_chars = Integer(20_000, help="longest text kept per output").tag(config=True)

    def _cap(self, text: str) -> str:
        if len(text) <= self.max_chars:
            return text
        return text[: self.max_chars] + f"\n… [输出过长：共 {len(text)} 个字符，只保留前 {self.max_chars} 个]\n"

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                output.text = self._cap(output.text)
            for key, value in output.get("data", {}).items():
                if key.startswith("text/") and isinstance(value, str):
                    output.data[key] = self._cap(value)
        return cell, resources
