"""A real cgroup v2 kernel on this machine: Debian's kernel booted under qemu (software emulation) with
virtme-ng, over this machine's own file system (read-only), with this checkout's venv and interpreter on a
disk image (9p is slow for the thousands of small files Python opens; the image is built once per venv and
kept in .cache/guest/). Used by tests/test_cgroup_v2.py and bench/grading.py. Facts: ../shared/TOOLCHAIN.md,
"A real cgroup v2 kernel on this machine".

    reason = unavailable()                    # None, or why no guest can boot here
    result = boot(script, shared, timeout)    # run `sh script` as root in the guest; `shared` is read-write
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "guest"
VENV = Path(sys.prefix)
BASE = Path(os.path.realpath(sys.base_prefix))
VNG = VENV / "bin" / "vng"
# what the grader and its kernels never import: left out of the image (the guest still sees them over 9p)
HEAVY = ("torch", "nvidia", "triton", "pyarrow", "playwright", "transformers", "kubernetes_validate", "sympy",
         "pandas", "datasets", "tokenizers", "safetensors", "trl", "accelerate", "jedi", "babel")
GUEST_MEMORY = "6G"
# qemu's software CPU is fastest as a plain x86-64-v2 (SSE4.2) machine: with its default ("max") glibc and
# numpy pick AVX2 code paths, which emulate slowly (measured here: importing the grader 34 s against 61 s)
GUEST_CPU = "Nehalem"
# Meltdown and Spectre v2 mitigations off: qemu's software CPU does not speculate, so page-table isolation (a page
# table switch at every system call, each one a flush of qemu's software TLB) and retpolines protect nothing in it and
# only cost (measured here, the same script booted both ways one after the other, twice: the guest's whole run 54-58
# against 43-44 CPU-s of qemu, importing the grading pipeline 10.8 against 7.8-9.7 s). One word per --append, none
# with "=" (vng read `--append mitigations=off` as something else and refused to start).
GUEST_KERNEL_OPTIONS = ("nopti", "nospectre_v2")
# qemu runs ahead of the machine's other programs (nice -10; the guest boots as root). Each emulated core is a thread
# of qemu that the guest's kernel takes for a CPU that is always there; when the host's scheduler takes the core from
# one of them, the other can spend its time spinning on a lock or waiting for an answer the stopped one holds. The lane
# alone, serial, next to two busy loops (what `make test`'s other workers are to it), one run after the other: 375 CPU-s
# and 410 s at the same priority, 309 CPU-s and 201 s ahead of them (296 CPU-s with the machine to itself).
GUEST_NICE = -10


def kernel() -> Path | None:
    found = sorted(Path("/boot").glob("vmlinuz-*"))
    return found[-1] if found else None


def unavailable() -> str | None:
    """Why no guest boots here (None: it does). `make deps` installs what it takes."""
    for tool in ("qemu-system-x86_64", "mkfs.ext4", "busybox"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists() \
                and not Path(f"/bin/{tool}").exists():
            return f"{tool} is not installed (make deps)"
    if not VNG.exists():
        return "virtme-ng is not installed in the venv (requirements.txt)"
    if kernel() is None:
        return "no kernel in /boot (make deps installs linux-image-amd64)"
    if os.geteuid() != 0:
        return "building the guest's disk image and booting it is done as root here"
    return None


def _key() -> str:
    """The image changes when the venv or the interpreter does."""
    h = hashlib.sha256()
    for marker in (VENV / ".installed", VENV / "pyvenv.cfg", BASE / "bin" / "python3"):
        if marker.exists():
            st = marker.stat()
            h.update(f"{marker}:{st.st_mtime_ns}:{st.st_size}".encode())
    h.update(str(BASE).encode() + str(VENV).encode() + ",".join(HEAVY).encode())
    return h.hexdigest()[:16]


def image() -> Path:
    """The ext4 image holding venv/ and base/ (built once per venv; about 10 s)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"python-{_key()}.img"
    if path.exists():
        return path
    for old in CACHE.glob("python-*.img"):
        old.unlink()
    stage = CACHE / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    site = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
    # hard links where the file system allows (the venv lives on it), else copies
    for name, src, skip in (("venv", VENV, {f"{site}/{p}" for p in HEAVY}),
                            ("base", BASE, {f"lib/python{sys.version_info.major}.{sys.version_info.minor}/test",
                                            site})):
        def ignore(folder, names, src=src, skip=skip):
            rel = os.path.relpath(folder, src)
            return [n for n in names if os.path.normpath(os.path.join(rel, n)) in skip]
        try:
            shutil.copytree(src, stage / name, symlinks=True, ignore=ignore, copy_function=os.link)
        except (OSError, shutil.Error):
            shutil.rmtree(stage / name, ignore_errors=True)
            shutil.copytree(src, stage / name, symlinks=True, ignore=ignore)
    tmp = path.with_suffix(".tmp")
    subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "agentrl", "-d", str(stage), str(tmp), "3G"], check=True)
    os.replace(tmp, path)
    shutil.rmtree(stage, ignore_errors=True)
    return path


def hidden_ancestor(path: Path) -> Path | None:
    """The first folder above path that other users cannot enter (e.g. /root, 0700), if any: the guest
    mounts a tmpfs there so that a normal user can reach the interpreter."""
    for parent in reversed(path.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & 0o001:
            return parent
    return None


PRELUDE = """\
set -u
mkdir -p /run/agentrl-img
mount -o ro "$(ls /dev/vda /dev/sda 2>/dev/null | head -n 1)" /run/agentrl-img
{hide}mkdir -p {base}
mount --bind /run/agentrl-img/base {base}
mount --bind /run/agentrl-img/venv {venv}
"""


def boot(script: str, shared: Path, timeout: float = 600, cpus: int = 2) -> subprocess.CompletedProcess:
    """Boot the guest, run `script` (POSIX sh) as root in it, return when it has powered off. `shared` is
    the one host folder the guest may write. The script starts after the prelude: venv and interpreter
    from the image, where they are on the host."""
    hidden = hidden_ancestor(BASE)
    hide = f"mount -t tmpfs -o mode=755 agentrl-reach {hidden}\n" if hidden else ""
    driver = shared / "guest-driver.sh"
    driver.write_text(PRELUDE.format(hide=hide, base=BASE, venv=VENV) + script, encoding="utf-8")
    cmd = ["nice", "-n", str(GUEST_NICE),
           str(VNG), "--disable-kvm", "--force-9p", "--disk", str(image()), "--rwdir", str(shared),
           "--run", str(kernel()), "--user", "root", "--memory", GUEST_MEMORY, "--cpus", str(cpus),
           f"--qemu-opts=-cpu {GUEST_CPU}", *(f"--append={option}" for option in GUEST_KERNEL_OPTIONS),
           "--exec", f"sh {driver}"]
    env = {**os.environ, "PATH": f"{VENV / 'bin'}:{os.environ.get('PATH', '')}"}
    return subprocess.run(cmd, cwd=shared, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)
