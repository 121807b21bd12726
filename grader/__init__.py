"""grader: the course's nbgrader course folder and the tools that grade it, as one package.

    python -m grader grade SUBMISSIONS --out OUT     # a class, sandboxed, judged outside the kernel
    python -m grader report --out OUT                # the class's reports after N shards
    python -m grader release                          # instructor notebooks -> student notebooks, book pages

How a hand-in travels (pipeline.py, top to bottom): submissions.py (which files) -> prepare.py (rebuilt
on the release) -> execute.py in sandbox/ (run) -> verdict.py against reference.py (judged) -> outputs.py
and sanitize.py (capped, inert) -> gradebook.py (recorded) -> feedback.py -> report.py. The nbgrader
preprocessors that wrap these steps, the same for `nbgrader autograde` and `make grade`, are in
preprocessors.py; cells.py answers what an nbgrader cell is; shards.py splits a class over machines
(cluster/ has the Slurm and Kubernetes files). The course itself: nbgrader_config.py, source/ (the
instructor notebooks, the single source of truth), release.py, blanks.py and cloze_snippets.py.
"""
import sys

# jsonschema imports rfc3987_syntax when it is installed (jupyter's packages pull it in), only to check the
# "iri" string formats, which nothing here validates; at import it builds a parser (about 1.5 CPU-s, half
# of the grader's start-up, 30 times that on a software-emulated test machine). The grader keeps it out.
sys.modules.setdefault("rfc3987_syntax", None)
