"""`python -m grader grade` and `report`: a class of hand-ins graded on the host, each notebook run in the
sandbox (grader/sandbox). pipeline.py reads top to bottom; lists.py has nbgrader's lists of its steps."""
