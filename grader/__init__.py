"""grader: the course's nbgrader course folder and the tools that grade it, as one package.

    python -m grader grade SUBMISSIONS --out OUT     # a class, sandboxed, judged outside the kernel
    python -m grader report --out OUT                # the class's reports after N shards
    python -m grader release [--exchange DIR]         # instructor notebooks -> student notebooks, book pages
    python -m grader serve --exchange DIR --course C  # grade each hand-in as it arrives in nbgrader's exchange
    python -m grader doctor                           # the isolation level here, and what fixes the rest

One folder per command, the host's side apart from what builds the sandbox:
    serve/     graded on arrival: a queue in the gradebook, workers that run grade/'s steps on each
               submission in nbgrader's exchange and put the feedback where "Fetch Feedback" finds it
    grade/     grade and report: grade/pipeline.py runs nbgrader's lists of the steps (grade/lists.py),
               each step beside the code that does its job (submissions, prepare, execute, verdict,
               outputs, gradebook, feedback, report…)
    sandbox/   each notebook's kernel in a bubblewrap sandbox at an isolation level; doctor, sweep
    cluster/   a class as shards (shards.py) and the Slurm and Kubernetes files that start them
    publish/   release: FillInTheBlanks and nbgrader's generate_assignment list, the book's pages, the cloze
               cards, the exchange (not release/: that is nbgrader's folder of released notebooks)
and shared by them: course.py (the nbgrader course folder, its assignments, nbgrader's converters) and
cells.py (what an nbgrader cell is). The course itself: nbgrader_config.py, source/ (the instructor
notebooks, the single source of truth), student-lab/ and lab-settings/ (JupyterLab for students).
"""
import sys

# jsonschema imports a checker for every string format it knows, when the library behind it is installed
# (jupyter's packages pull them in): rfc3987_syntax alone builds a parser at import (about 1.5 CPU-s, half
# of the grader's start-up), isoduration pulls in arrow, and so on. Nothing in the grader validates string
# formats (nbformat's schema checks structure), and an emulated test machine pays 30 times that for every
# `python -m grader`: the grader keeps them out. jsonschema treats a format it has no checker for as valid.
for _name in ("rfc3987_syntax", "rfc3986_validator", "rfc3339_validator", "isoduration", "webcolors",
              "uri_template", "fqdn"):
    sys.modules.setdefault(_name, None)
