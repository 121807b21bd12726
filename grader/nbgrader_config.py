"""nbgrader course for Agent-RL 代码填空. Run nbgrader from this folder (the Makefile does).

The steps are the `grader` package's, in the lists `make grade` runs (grader/grade/lists.py): an instructor
who runs `nbgrader autograde` here gets each notebook rebuilt on the release, executed in the grading
sandbox, judged outside the kernel, its outputs capped and made inert, and the verdicts recorded; `make
grade` does the same for a whole class, several notebooks at a time.
"""
import os

from grader.grade.feedback import FEEDBACK
from grader.grade.lists import AUTOGRADE, SANITIZE
from grader.publish.blanks import GENERATE

c = get_config()  # noqa: F821
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "agentrl-cloze"

c.GenerateAssignment.preprocessors = GENERATE
c.Autograde.sanitize_preprocessors = SANITIZE
c.Autograde.autograde_preprocessors = AUTOGRADE
c.SandboxedExecute.timeout = 60  # seconds per cell when autograding

# The feedback goes back to students: their code and each test cell's verdict; never the hidden test code,
# nor what the kernel printed while the hidden tests ran (feedback.student_facing).
c.GenerateFeedback.preprocessors = FEEDBACK
