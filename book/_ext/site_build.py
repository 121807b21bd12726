"""The site, built one way and reused while nothing it is made from changed (`make book`, the tests' built_site).

    python book/_ext/site_build.py           # jupyter-book build --all -W -n --keep-going . (make book), then stamp it
    python book/_ext/site_build.py --reuse   # the same, unless _build/html already carries the stamp of these inputs

The stamp (_build/html/.site-inputs) is the sha256 of everything the build reads: every file git lists in the
checkout outside tests/, bench/, grader/ and .ci/ (tracked or new, as they are on disk, edits included; the build
reads none of those four: the book's pages are released from grader/ into book/ and notebooks/, which are hashed),
except what the benchmarks page reads from bench/ (ALSO_READ: its records and bench/report.py),
the Python version, the course's AGENTRL_* variables and the CJK font (as the execution cache's fingerprint,
execution_cache.py), every installed distribution's version, and the build command. It is written only after a
build that returned 0 with warnings as errors, and removed before every build, so a stopped or failed build is
never reused. Without git the inputs are unknown: every call builds (the execution cache still spares the pages
whose code did not change).
"""
from __future__ import annotations

import hashlib
import subprocess
import sysconfig
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import execution_cache  # noqa: E402
import preexecute  # noqa: E402

JOBS = 2   # notebook pages executed at a time before the build (preexecute.py): this course's 2 cores
NOT_READ = ("tests", "bench", "grader", ".ci", "_build")   # top-level folders the build never reads (_build: it writes)
ALSO_READ = ("bench/report.py", "bench/results/")   # but book/benchmarks.md draws these (executed at every build)
FLAGS = ["--all", "-W", "-n", "--keep-going"]
STAMP = ".site-inputs"


def html_folder(root: Path = ROOT) -> Path:
    return root / "_build" / "html"


def _listed(root: Path) -> list[str] | None:
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "-co", "--exclude-standard"],
                             capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return sorted({name for name in out.decode("utf-8", "surrogateescape").split("\0")
                   if name and (name.split("/", 1)[0] not in NOT_READ or name.startswith(ALSO_READ))})


def inputs_fingerprint(root: Path = ROOT) -> str | None:
    """What the build reads, as one sha256 (module docstring); None where git cannot list the files."""
    from importlib import metadata

    names = _listed(root)
    if names is None:
        return None
    digest = hashlib.sha256(f"build {' '.join(FLAGS)}\n".encode())
    execution_cache.environment(digest)
    # the environment's installed packages, not whatever this process's sys.path shows: `import setuptools` puts
    # its vendored packages on sys.path, and a test process that imported it would find make book's stamp stale
    installed = sorted({sysconfig.get_path("purelib"), sysconfig.get_path("platlib")})
    for dist in sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions(path=installed)):
        digest.update(f"dist {dist}\n".encode())
    for name in names:
        path = root / name
        digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"<missing>")
        digest.update(b"\0")
    return digest.hexdigest()


def is_current(root: Path = ROOT, fingerprint: str | None = None) -> bool:
    """True if _build/html is the output of a successful build of exactly these inputs."""
    fingerprint = fingerprint or inputs_fingerprint(root)
    stamp = html_folder(root) / STAMP
    return fingerprint is not None and stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == fingerprint


def build(root: Path = ROOT, reuse: bool = False, capture: bool = False) -> dict:
    """Build the site into root/_build (warnings are errors), or with reuse keep a build of the same inputs.
    Returns {"html", "reused", "returncode", "seconds", "output"} (output: the build's log when captured)."""
    started = time.monotonic()
    fingerprint = inputs_fingerprint(root)
    html = html_folder(root)
    if reuse and is_current(root, fingerprint):
        return dict(html=html, reused=True, returncode=0, seconds=time.monotonic() - started, output="")
    (html / STAMP).unlink(missing_ok=True)
    executed = execute_pages(root, say=print if not capture else (lambda line: None))
    jb = Path(sys.executable).parent / "jupyter-book"
    proc = subprocess.run([str(jb), "build", *FLAGS, str(root)], capture_output=capture, text=True)
    if proc.returncode == 0 and fingerprint is not None and html.is_dir():
        (html / STAMP).write_text(fingerprint + "\n", encoding="utf-8")
    output = f"{proc.stdout}\n{proc.stderr}" if capture else ""
    return dict(html=html, reused=False, returncode=proc.returncode, seconds=time.monotonic() - started,
                output=output, preexecuted=executed)


def notebook_pages(root: Path = ROOT) -> list[Path]:
    """The .ipynb pages of the table of contents."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]] + [chapter["file"] for part in toc.get("parts", []) for chapter in part.get("chapters", [])]
    return [root / f"{name}.ipynb" for name in files if (root / f"{name}.ipynb").is_file()]


def execute_pages(root: Path = ROOT, say=print) -> list[Path]:
    """The pages the execution cache lacks, executed JOBS at a time into the cache the build reads (preexecute.py),
    with the build's settings (_config.yml's execute section); the pages executed."""
    import yaml

    settings = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")).get("execute", {})
    if settings.get("execute_notebooks") != "cache":
        return []
    folder = execution_cache.cache_folder(root / "_build" / ".jupyter_cache", root)
    return preexecute.preexecute(notebook_pages(root), folder, timeout=settings.get("timeout", 30),
                                 allow_errors=settings.get("allow_errors", False), jobs=JOBS, say=say)


if __name__ == "__main__":
    result = build(ROOT, reuse="--reuse" in sys.argv[1:])
    if result["reused"]:
        print(f"网站没有变化，沿用 / site unchanged, reused: {result['html']}")
    sys.exit(result["returncode"])
