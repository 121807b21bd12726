"""The book's notebook pages executed side by side into the execution cache, before the build reads them.

myst-nb executes each page the cache lacks while Sphinx reads it, one page after the other: on two cores the build
waited for the capstone's minute, then for every other page. `preexecute` runs the .ipynb pages the cache lacks
`jobs` at a time, the way myst-nb's cache mode runs them (jupyter-cache's single_nb_execution in the page's folder,
the build's timeout and allow_errors, its kernels on Unix sockets with the reply polled in slices: execution_cache.
setup), and stores each one that ran clean under the key myst-nb looks for (its code cells and kernelspec). The build
then takes them from the cache. A page that failed is not stored: the build executes it again and reports it as
always. Text notebooks (MyST Markdown pages) are left to the build: reading them needs Sphinx's Markdown settings.

    done = preexecute(pages, cache_folder, timeout=600, allow_errors=False, jobs=2)   # the pages it executed
"""
from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path


def _execute(path: str, timeout: int, allow_errors: bool) -> tuple[str, str | None, float, str | None]:
    """In a worker process: the page at path executed in its folder; (path, notebook JSON or None, seconds, error)."""
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    import kernel_polls
    import kernel_transport

    kernel_polls.use_in_slices()
    kernel_transport.use_ipc()
    nb = nbformat.read(path, as_version=4)
    started = time.monotonic()
    result = single_nb_execution(nb, cwd=str(Path(path).parent), timeout=timeout, allow_errors=allow_errors,
                                 meta_override=True)
    seconds = time.monotonic() - started
    if result.err is not None:
        return path, None, seconds, result.exc_string or repr(result.err)
    return path, nbformat.writes(nb), seconds, None


def missing(pages: list[Path], cache_folder: Path) -> list[Path]:
    """The pages the cache has no execution of (matched on their code, as myst-nb matches them)."""
    import nbformat
    from jupyter_cache import get_cache

    cache = get_cache(str(cache_folder))
    todo = []
    for page in pages:
        try:
            cache.match_cache_notebook(nbformat.read(page, as_version=4))
        except KeyError:
            todo.append(page)
    return todo


def preexecute(pages: list[Path], cache_folder: Path, *, timeout: int, allow_errors: bool, jobs: int = 2,
               say=print) -> list[Path]:
    """Execute the pages the cache lacks, jobs at a time (the biggest first), and store the clean ones; return them."""
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    todo = sorted(missing(pages, cache_folder), key=lambda p: p.stat().st_size, reverse=True)
    if not todo:
        return []
    cache = get_cache(str(cache_folder))
    done = []
    started = time.monotonic()
    # spawn: a fresh interpreter per worker, whatever this process has imported or started
    with ProcessPoolExecutor(min(jobs, len(todo)), mp_context=get_context("spawn"),
                             initializer=_worker_path, initargs=(str(Path(__file__).parent),)) as pool:
        futures = [pool.submit(_execute, str(page), timeout, allow_errors) for page in todo]
        for future in as_completed(futures):
            path, text, seconds, error = future.result()
            if error is not None:
                say(f"{path}: failed ({seconds:.1f} s), left to the build")
                continue
            stage = cache.add_nb_to_project(path)
            cache.cache_notebook_bundle(CacheBundleIn(nbformat.reads(text, as_version=4), stage.uri,
                                                      data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            done.append(Path(path))
            say(f"{path}: executed in {seconds:.1f} s")
    say(f"{len(done)} of {len(todo)} pages executed, {min(jobs, len(todo))} at a time, in "
        f"{time.monotonic() - started:.1f} s")
    return done


def _worker_path(ext: str) -> None:
    import sys

    if ext not in sys.path:
        sys.path.insert(0, ext)
