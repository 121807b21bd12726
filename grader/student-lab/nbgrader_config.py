"""nbgrader's Validate button in `make lab` (JUPYTER_CONFIG_PATH=grader/student-lab puts this file on nbgrader's
config path): Validate runs what grading runs. Cells tagged `demo` (the setup cell, timing plots, exercise 7's SFT,
GRPO and ablations) teach but grade nothing, so grading skips them (grader/grade/prepare.py, SkipDemoCells) and so does
Validate: nbclient does not execute a cell with this tag. Without it, Validate ran exercise 7's training, hit the
30 s execute timeout, interrupted the kernel and still said "Success!"."""
c = get_config()  # noqa: F821
c.Execute.skip_cells_with_tag = "demo"
