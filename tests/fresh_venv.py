"""Fresh venvs outside the repository, for the tests that run notebooks the way a student's machine would: the course
package from its wheel (tests/test_notebooks_execute.py) or from the site (tests/test_package.py, "Colab-like").

Offline: a fresh venv's dependencies are the course venv's own installed packages, made visible through a .pth file
(`expose`); pip runs with --no-index, so it cannot fetch anything.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import nbformat

from course import ROOT, run_notebook


def site_packages(venv: Path) -> Path:
    return Path(subprocess.check_output(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        text=True).strip())


def fresh_venv(where: Path, with_pip: bool) -> Path:
    base = getattr(sys, "_base_executable", sys.executable)
    args = [base, "-m", "venv", str(where)] + ([] if with_pip else ["--without-pip"])
    subprocess.run(args, check=True)
    return where


def install(venv: Path, *requirements: str, env: dict | None = None) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                           "--quiet", "--no-index", "--no-deps", *requirements], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def expose(venv: Path, folder: Path) -> None:
    """Make folder's packages importable in venv (after the venv's own site-packages)."""
    (site_packages(venv) / "zz_course_deps.pth").write_text(str(folder) + "\n", encoding="utf-8")


def kernelspec(tmp: Path, venv: Path, env: dict[str, str]) -> Path:
    """A Jupyter data folder with one kernel, 'fresh', that runs venv's python in a neutral folder."""
    spec = tmp / "jupyter" / "kernels" / "fresh"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "fresh", "language": "python", "env": env,
    }), encoding="utf-8")
    return tmp / "jupyter"


KERNEL_STDERR = "kernel-stderr.txt"


def run_in(nb: nbformat.NotebookNode, workdir: Path, jupyter_path: Path, unset: tuple[str, ...] = ()
           ) -> nbformat.NotebookNode:
    """Execute nb in workdir in the 'fresh' kernel of jupyter_path, with this process's environment (the kernel
    inherits it) less PYTHONPATH and the variables in unset; any error in any cell raises. What the kernel process
    writes to its own stderr is kept in workdir/KERNEL_STDERR."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and k not in unset}
    env["JUPYTER_PATH"] = str(jupyter_path)
    with mock.patch.dict(os.environ, env, clear=True):
        return run_notebook(nb, cwd=workdir, timeout=600, kernel_name="fresh", kernel_stderr=workdir / KERNEL_STDERR)


def where_am_i(venv: Path) -> nbformat.NotebookNode:
    """A first cell that fails unless agentrl_ref comes from venv and the checkout is not on sys.path."""
    return nbformat.v4.new_code_cell(
        "import sys, agentrl_ref\n"
        f"assert agentrl_ref.__file__.startswith({str(site_packages(venv))!r}), agentrl_ref.__file__\n"
        f"repo = [p for p in sys.path if p.startswith({str(ROOT)!r}) and not p.startswith({str(ROOT / '.venv')!r})]\n"
        "assert not repo, sys.path  # the checkout is not on sys.path (its venv's packages are, as dependencies)\n")


def printed(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
