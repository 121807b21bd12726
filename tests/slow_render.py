"""A stand-in for the feedback renderer's child (grader/serve/render.py) that takes forever on a page marked
slow, for the test of the renderer's time limit: what a page nbconvert never finishes looks like from outside."""
from __future__ import annotations

import time
from pathlib import Path


def serve(conn) -> None:
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        nb, _, dest, _ = request
        if nb.get("slow"):
            time.sleep(3600)
        Path(dest).write_text("<html>page</html>", encoding="utf-8")
        conn.send(("ok", Path(dest).stat().st_size))
