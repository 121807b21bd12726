"""The site's third-party JavaScript and fonts, served from the site itself (no CDN).

Pinned npm packages are fetched once with `npm pack` (the npm registry's own client), checked
against the sha512 pinned below, cached in `_vendor/npm/` (git-ignored) and unpacked into
`_vendor/static/offline/`, which the Sphinx extension adds to html_static_path. The build then
copies it to `_build/html/_static/offline/`:

    offline/mathjax/tex-mml-chtml.js   (+ its fonts, TeX extensions, menu, a11y)  <- mathjax_path
    offline/require.js                                                            <- nb_ipywidgets_js
    offline/html-manager/embed-amd.js  (+ the font files it loads)                <- nb_ipywidgets_js

Idempotent: a stamp records what was unpacked; a second call with the same pins does nothing
and needs no network. Usage: python book/_ext/offline_assets.py  (or: make vendor)

Test-only packages (TEST_PACKAGES: axe-core, the accessibility checker of tests/test_accessibility.py)
are pinned, fetched and checked the same way into the same cache, but never unpacked into the site:
read_test_asset() reads one file straight from the checked tarball.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "_vendor"
STATIC = VENDOR / "static"          # goes into html_static_path
OFFLINE = "offline"                 # folder name under _static/ in the built site

# name -> (version, sha512 integrity as published by the registry). Change both together.
PACKAGES: dict[str, tuple[str, str]] = {
    "mathjax": (
        "3.2.2", "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw=="),
    "requirejs": (
        "2.3.8", "sha512-7/cTSLOdYkNBNJcDMWf+luFvMriVm7eYxp4BcFCsAX0wF421Vyce5SXP17c+Jd5otXKGNehIonFlyQXSowL6Mw=="),
    "@jupyter-widgets/html-manager": (
        "1.0.15", "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA=="),
}

# Test-only packages: fetched and checked exactly like the ones above (same cache), but never
# unpacked into the site. axe-core is the accessibility checker tests/test_accessibility.py injects
# into each page with Playwright; no page of the build loads it.
TEST_PACKAGES: dict[str, tuple[str, str]] = {
    "axe-core": (
        "4.14.1", "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ=="),
}

# What the site needs from each package: (path inside the package, path under offline/).
LAYOUT: dict[str, list[tuple[str, str]]] = {
    "mathjax": [
        ("es5/tex-mml-chtml.js", "mathjax/tex-mml-chtml.js"),
        ("es5/input", "mathjax/input"),      # TeX extensions loaded on demand ([tex]/...)
        ("es5/output", "mathjax/output"),    # CHTML fonts; SVG output if a reader picks it in the menu
        ("es5/ui", "mathjax/ui"),            # the right-click menu
        ("es5/a11y", "mathjax/a11y"),        # accessibility extensions the menu can switch on
        ("es5/sre", "mathjax/sre"),          # speech rule engine used by those extensions
        ("es5/adaptors", "mathjax/adaptors"),
        ("LICENSE", "mathjax/LICENSE"),
    ],
    "requirejs": [("require.js", "require.js")],
    "@jupyter-widgets/html-manager": [("dist", "html-manager"), ("package.json", "html-manager/package.json")],
}
# html-manager's dist/ also holds non-AMD bundles and source maps the site never loads
SKIP_SUFFIXES = (".map",)
SKIP_NAMES = {"embed.js", "libembed-amd.js", "embed.js.LICENSE.txt"}

MATHJAX_PATH = f"{OFFLINE}/mathjax/tex-mml-chtml.js"
REQUIRE_JS = f"{OFFLINE}/require.js"
EMBED_AMD_JS = f"{OFFLINE}/html-manager/embed-amd.js"
WIDGETS_CONFIG_JS = "course/widgets-config.js"  # book/_ext/static/course/: tells require.js where the fonts are


def _tarball_name(name: str, version: str) -> str:
    # npm pack's file name: "@scope/pkg" -> "scope-pkg-<version>.tgz"
    return f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"


def _integrity(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def _stamp() -> str:
    return json.dumps({"packages": PACKAGES, "layout": LAYOUT}, sort_keys=True)


def fetch(name: str, version: str, integrity: str) -> Path:
    """The package tarball in the cache, fetched with `npm pack` if missing; checked against its pin."""
    cache = VENDOR / "npm"
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / _tarball_name(name, version)
    if not tarball.is_file():
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is needed once to fetch the site's offline assets "
                               "(Debian: apt-get install npm); then they are cached in _vendor/")
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            subprocess.run([npm, "pack", f"{name}@{version}", "--pack-destination", tmp, "--silent"],
                           check=True, cwd=tmp, stdout=subprocess.DEVNULL)
            got = Path(tmp) / _tarball_name(name, version)
            if _integrity(got) != integrity:
                raise RuntimeError(f"{name}@{version}: checksum differs from the pin in {__file__}")
            os.replace(got, tarball)
    if _integrity(tarball) != integrity:
        raise RuntimeError(f"{tarball} does not match its pinned checksum: delete it and run again")
    return tarball


def read_test_asset(name: str, member: str) -> str:
    """The text of one file of a pinned test-only package (TEST_PACKAGES), read from its checked tarball."""
    version, integrity = TEST_PACKAGES[name]
    with tarfile.open(fetch(name, version, integrity)) as tar:
        data = tar.extractfile(f"package/{member}")
        if data is None:
            raise RuntimeError(f"{name}@{version}: {member} is not a file")
        with data:
            return data.read().decode("utf-8")


def _copy_member(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], src: str, dest: Path) -> None:
    prefix = f"package/{src}"
    chosen = [m for n, m in members.items() if n == prefix or n.startswith(prefix + "/")]
    if not chosen:
        raise RuntimeError(f"{src} not found in the package")
    for member in chosen:
        if not member.isfile():
            continue
        rel = member.name[len(prefix):].lstrip("/")
        name = Path(member.name).name
        if name.endswith(SKIP_SUFFIXES) or name in SKIP_NAMES:
            continue
        target = dest / rel if rel else dest
        target.parent.mkdir(parents=True, exist_ok=True)
        with tar.extractfile(member) as data:
            target.write_bytes(data.read())


def ensure() -> Path:
    """Make sure _vendor/static/offline/ holds the pinned assets; return _vendor/static."""
    stamp_file = STATIC / ".stamp"
    if stamp_file.is_file() and stamp_file.read_text() == _stamp():
        return STATIC
    VENDOR.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="static-", dir=VENDOR))
    try:
        for name, (version, integrity) in PACKAGES.items():
            with tarfile.open(fetch(name, version, integrity)) as tar:
                members = {m.name: m for m in tar.getmembers()}
                for src, dest in LAYOUT[name]:
                    _copy_member(tar, members, src, work / OFFLINE / dest)
        (work / ".stamp").write_text(_stamp())
        # swap in the new tree; a concurrent build that got there first is fine too
        old = VENDOR / f"old-{os.getpid()}"
        if STATIC.exists():
            os.replace(STATIC, old)
        try:
            os.replace(work, STATIC)
        except OSError:
            if not (stamp_file.is_file() and stamp_file.read_text() == _stamp()):
                raise
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return STATIC


if __name__ == "__main__":
    path = ensure()
    files = [p for p in (path / OFFLINE).rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    print(f"offline assets ready: {path / OFFLINE} ({len(files)} files, {size / 1e6:.1f} MB)")
    sys.exit(0)
