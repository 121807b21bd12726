"""MathJax for the feedback pages, from the course's own pinned copy: opening a page sends no request off the host.

    url = install(feedback_folder)   # "…/.mathjax/tex-mml-svg.js" relative to a page, or None

The site serves the pinned MathJax it fetched with npm (book/_ext/offline_assets.py: checked against its sha512,
cached in _vendor/npm/). The feedback pages use the same tarball: its SVG build (one file, no font files, which a
page opened from disk could not load) and the TeX extensions it may load on demand go into FOLDER beside the
students' folders (a name no student id can have: ids never start with a dot). A page is
<feedback>/<student>/<assignment>/<notebook>.html, so it loads ../../FOLDER/tex-mml-svg.js. Without npm and
without the cached tarball, the pages get no MathJax at all (the formulas stay as TeX text), never a CDN.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tarfile
import tempfile
import threading
from pathlib import Path

from grader.course import ROOT

FOLDER = ".mathjax"
SCRIPT = "tex-mml-svg.js"
MEMBERS = ("es5/tex-mml-svg.js", "es5/input/tex/extensions/", "LICENSE")
FROM_PAGE = f"../../{FOLDER}/{SCRIPT}"   # a page's URL of it (the page is two folders below the feedback folder)
_lock = threading.Lock()


def _offline_assets():
    path = ROOT / "book" / "_ext" / "offline_assets.py"
    spec = importlib.util.spec_from_file_location("agentrl_offline_assets", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tarball() -> Path | None:
    """The pinned MathJax tarball (fetched once with npm, checked), or None if it cannot be had here."""
    try:
        assets = _offline_assets()
        version, integrity = assets.PACKAGES["mathjax"]
        return assets.fetch("mathjax", version, integrity)
    except Exception as exc:  # noqa: BLE001 - no npm, no network, a changed pin: the pages go without MathJax
        print(f"feedback pages without MathJax (the formulas stay as TeX): {exc}", file=sys.stderr)
        return None


def install(feedback: Path) -> str | None:
    """MathJax's SVG build in feedback/FOLDER (once); the URL a page uses, or None if there is none."""
    target = feedback / FOLDER
    with _lock:
        if (target / SCRIPT).is_file():
            return FROM_PAGE
        source = tarball()
        if source is None:
            return None
        feedback.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".mathjax-", dir=feedback))
        try:
            with tarfile.open(source) as tar:
                for member in tar.getmembers():
                    name = member.name.removeprefix("package/")
                    if not member.isfile() or not any(name == m or (m.endswith("/") and name.startswith(m))
                                                      for m in MEMBERS):
                        continue
                    dest = work / Path(name).relative_to("es5") if name.startswith("es5/") else work / name
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(member) as data:
                        dest.write_bytes(data.read())
            try:
                os.replace(work, target)
            except OSError:   # another grader put it there first
                if not (target / SCRIPT).is_file():
                    raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return FROM_PAGE
