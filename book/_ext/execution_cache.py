"""Local Sphinx extension: myst-nb's execution cache, never stale after the course package or the pins change.

With `execute_notebooks: cache` (_config.yml) an unchanged rebuild takes every page's outputs from
jupyter-cache, and a page whose code changed is executed again, alone. jupyter-cache keys a notebook
on its own code cells only, though, not on the package the cells import: an edit to agentrl_ref (or a
new pin in requirements.txt) would go on serving outputs that the old code computed.

So the cache lives in a folder named after a fingerprint of everything else the outputs depend on:
the files under `execution_cache_sources` (by default agentrl_ref/, requirements.txt and
pyproject.toml, relative to the book's root), the Python version, the course's AGENTRL_* environment
variables (AGENTRL_CAPSTONE_SEEDS changes what the capstone page runs; the grader's own are left out) and the
CJK font the figures can use
(installing one turns their text Chinese: agentrl_ref/teaching/shared/cjk.py). A new fingerprint means a new,
empty cache, and the folders of older fingerprints are deleted. Set on `config-inited`, before
myst-nb reads nb_execution_cache_path (on `builder-inited`).
"""
from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
from pathlib import Path

DEFAULT_SOURCES = ["agentrl_ref", "requirements.txt", "pyproject.toml"]
_KEY = re.compile(r"[0-9a-f]{16}")
_SKIP = {"__pycache__", ".ipynb_checkpoints"}
# the grader's own variables: no page reads them (the gradebook's address, the test session's reference records)
GRADING_ONLY = {"AGENTRL_DB_URL", "AGENTRL_REFERENCE_STORE"}


def _files(path: Path):
    if path.is_file():
        yield path
    elif path.is_dir():
        for child in sorted(path.rglob("*")):
            if child.is_file() and not _SKIP & set(child.parts) and child.suffix not in (".pyc", ".pyo"):
                yield child


def environment(digest) -> None:
    """Add to digest what the outputs depend on besides files: the Python version, the CJK font, AGENTRL_* variables."""
    from agentrl_ref.teaching.shared.cjk import cjk_font

    digest.update(f"python {platform.python_version()}\n".encode())
    digest.update(f"cjk font {cjk_font()}\n".encode())  # figures draw Chinese text only with one (cjk.zh)
    for name in sorted(k for k in os.environ if k.startswith("AGENTRL_") and k not in GRADING_ONLY):
        digest.update(f"env {name}={os.environ[name]}\n".encode())


def fingerprint(root: Path, sources) -> str:
    """sha256 over the Python version, the AGENTRL_* variables, the CJK font and every source file's path and bytes."""
    digest = hashlib.sha256()
    environment(digest)
    for source in sources:
        base = Path(root, source)
        digest.update(f"source {source} exists={base.exists()}\n".encode())
        for path in _files(base):
            digest.update(str(path.relative_to(root) if path.is_relative_to(root) else path).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_folder(base: Path, root: Path, sources=DEFAULT_SOURCES) -> Path:
    """The cache for these inputs: a folder of base named after their fingerprint."""
    return Path(base) / fingerprint(root, sources)[:16]


def use_fingerprinted_cache(app, config) -> None:
    if config.nb_execution_mode != "cache":
        return
    root = Path(app.srcdir)
    base = Path(config.nb_execution_cache_path or Path(app.outdir).parent / ".jupyter_cache")
    if not base.is_absolute():
        base = root / base
    folder = cache_folder(base, root, config.execution_cache_sources)
    if base.is_dir():
        for old in base.iterdir():
            if old.is_dir() and _KEY.fullmatch(old.name) and old.name != folder.name:
                shutil.rmtree(old, ignore_errors=True)
    config.nb_execution_cache_path = str(folder)


def setup(app):
    import kernel_polls  # book/_ext: a cell's reply read even when its wake-up is lost (kernel_polls.py)
    import kernel_transport  # book/_ext: the kernels over Unix sockets, not TCP on 127.0.0.1 (kernel_transport.py)

    kernel_polls.use_in_slices()
    kernel_transport.use_ipc()
    app.add_config_value("execution_cache_sources", DEFAULT_SOURCES, "env")
    app.connect("config-inited", use_fingerprinted_cache)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
