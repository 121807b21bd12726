"""Structural mutations of real notebooks and of the files that carry them, for fuzzing the grader's intake.

    text = mutate_json(notebook_text, rng, count=3)    # a notebook's JSON with random structural damage
    make_file(path, text, kind, other)                 # the hand-in as a file of some kind (or a link, a FIFO…)

Each mutation is what a careless tool, an editor or a hostile student does to a notebook file: wrong types
in the metadata, cell types changed or invented, keys removed or added, attachments that are missing or
malformed, outputs nbformat would refuse, duplicate and invalid ids, sources as lists, odd characters.
"""
from __future__ import annotations

import copy
import json
import os
import random
from pathlib import Path

ODD_VALUES = [None, "", "x", 0, 1, -1, 3.5, True, [], ["a", 1], {}, {"grade": "yes"}, "\x00", "\ud800"]


def _cells(nb):
    cells = nb.get("cells")
    return cells if isinstance(cells, list) and cells else None


def _a_cell(nb, rng):
    cells = _cells(nb)
    return rng.choice(cells) if cells else None


def _graded_cell(nb, rng):
    cells = [c for c in _cells(nb) or [] if isinstance(c, dict) and isinstance(c.get("metadata"), dict)
             and isinstance(c["metadata"].get("nbgrader"), dict)]
    return rng.choice(cells) if cells else _a_cell(nb, rng)


def m_nbgrader_type(nb, rng):
    cell = _graded_cell(nb, rng)
    if isinstance(cell, dict):
        cell.setdefault("metadata", {})["nbgrader"] = rng.choice(ODD_VALUES)


def m_nbgrader_field(nb, rng):
    cell = _graded_cell(nb, rng)
    if isinstance(cell, dict) and isinstance(cell.get("metadata", {}).get("nbgrader"), dict):
        key = rng.choice(["grade_id", "points", "grade", "solution", "locked", "schema_version", "checksum"])
        cell["metadata"]["nbgrader"][key] = rng.choice(ODD_VALUES + ["test_multiline", "../../x"])


def m_tags(nb, rng):
    cell = _a_cell(nb, rng)
    if isinstance(cell, dict):
        cell.setdefault("metadata", {})["tags"] = rng.choice([["demo"], ["skip-execution"], "demo", [1], {}, None])


def m_cell_type(nb, rng):
    cell = _a_cell(nb, rng)
    if isinstance(cell, dict):
        cell["cell_type"] = rng.choice(["code", "markdown", "raw", "heading", "bogus", None])


def m_drop_key(nb, rng):
    cell = _a_cell(nb, rng)
    if isinstance(cell, dict) and cell:
        cell.pop(rng.choice(sorted(cell)), None)


def m_drop_top(nb, rng):
    nb.pop(rng.choice(["metadata", "nbformat", "nbformat_minor", "cells"]), None)


def m_extra_key(nb, rng):
    target = rng.choice([nb, _a_cell(nb, rng) or nb])
    target[rng.choice(["evil", "attachments", "outputs", "execution_count"])] = rng.choice(ODD_VALUES)


def m_attachment(nb, rng):
    cells = [c for c in _cells(nb) or [] if isinstance(c, dict) and c.get("cell_type") == "markdown"]
    if not cells:
        return
    cell = rng.choice(cells)
    choice = rng.randrange(4)
    if choice == 0:   # the honest copy-paste: a reference to an attachment that did not come along
        cell["source"] = str(cell.get("source", "")) + "\n![图](attachment:image.png)\n"
    elif choice == 1:
        cell["attachments"] = {"a.svg": {"image/svg+xml": "PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+PC9zdmc+"}}
        cell["source"] = "![x](attachment:a.svg)"
    elif choice == 2:
        cell["attachments"] = rng.choice([{"a.png": "not a bundle"}, {"a.png": {}}, [], "x"])
        cell["source"] = "![x](attachment:a.png)"
    else:
        cell["attachments"] = {"a.png": {"text/html": "<script>alert(1)</script>"}}
        cell["source"] = "![x](attachment:a.png)"


def m_outputs(nb, rng):
    cells = [c for c in _cells(nb) or [] if isinstance(c, dict) and c.get("cell_type") == "code"]
    if cells:
        rng.choice(cells)["outputs"] = rng.choice([
            [{"output_type": "display_data", "data": "notadict", "metadata": {}}],
            [{"output_type": "stream", "name": "stdout", "text": "x" * 100_000}],
            [{"output_type": "bogus"}],
            [{"output_type": "display_data", "data": {"text/html": "<script>alert(1)</script>"}, "metadata": {}}],
            "not a list",
        ])


def m_ids(nb, rng):
    cells = [c for c in _cells(nb) or [] if isinstance(c, dict)]
    if len(cells) >= 2:
        choice = rng.randrange(3)
        if choice == 0:
            cells[1]["id"] = cells[0].get("id", "x")
        elif choice == 1:
            rng.choice(cells)["id"] = rng.choice(["", "has space", "x" * 100, "é", 7])
        else:
            for cell in cells:
                cell.pop("id", None)


def m_source(nb, rng):
    cell = _a_cell(nb, rng)
    if isinstance(cell, dict):
        cell["source"] = rng.choice([["print(1)\n", "print(2)"], 42, None, "\x00\ud800", "<script>alert(1)</script>"])


def m_duplicate(nb, rng):
    cells = _cells(nb)
    if cells:
        cells.insert(rng.randrange(len(cells) + 1), copy.deepcopy(rng.choice(cells)))


def m_delete(nb, rng):
    cells = _cells(nb)
    if cells:
        del cells[rng.randrange(len(cells))]


def m_nbformat(nb, rng):
    nb["nbformat"], nb["nbformat_minor"] = rng.choice([(3, 0), (4, 0), (4, 99), (5, 0), ("4", 5)])


MUTATIONS = [m_nbgrader_type, m_nbgrader_field, m_tags, m_cell_type, m_drop_key, m_drop_top, m_extra_key,
             m_attachment, m_outputs, m_ids, m_source, m_duplicate, m_delete, m_nbformat]


def mutate_json(text: str, rng: random.Random, count: int = 2) -> str:
    nb = json.loads(text)
    for _ in range(count):
        rng.choice(MUTATIONS)(nb, rng)
    return json.dumps(nb, ensure_ascii=rng.random() < 0.5)


FILE_KINDS = ["file", "file", "file", "empty", "truncated", "not-utf8", "null-json", "deep-json", "directory",
              "symlink", "fifo", "hardlink"]


def make_file(path: Path, text: str, kind: str, other: Path | None = None) -> None:
    """Write the hand-in at path as `kind` (see FILE_KINDS); other is a file to link to."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "file":
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        path.write_text(text[: len(text) // 2], encoding="utf-8", errors="surrogatepass")
    elif kind == "not-utf8":
        path.write_bytes(b"\xff\xfe" + text.encode("utf-16-le", errors="surrogatepass"))
    elif kind == "null-json":
        path.write_text(random.Random(len(text)).choice(["null", "[]", "{}", "1", '"x"']), encoding="utf-8")
    elif kind == "deep-json":
        path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    elif kind == "directory":
        path.mkdir()
        (path / "inside.txt").write_text("x")
    elif kind == "symlink":
        os.symlink(other, path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "hardlink":
        os.link(other, path)
    else:
        raise ValueError(kind)


ODD_NAMES = ["名字", "with space", "tab\tname", "bell\x07", "rtl\u202eoverride", "=1+2", "+cmd", "-2", "@sum",
             "star*", "q?", "[br]", "x" * 130, "trailing ", "new\nline", "back\\slash", "ok_name"]
