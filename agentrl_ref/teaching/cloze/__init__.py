"""The random-cloze practice (book/cloze.md, the JupyterLab widget): cards.py defines the cards and the blanks,
widget.py the widget; cloze_snippets.json is written by `make release`."""
