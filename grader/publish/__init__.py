"""`python -m grader release` (make release): the instructor notebooks become the student notebooks, the
book's pages and the cloze cards. Not named release/: that is nbgrader's folder of released notebooks in
this course folder."""
