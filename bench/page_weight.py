"""What a reader's browser downloads for each page of the built site, cold (empty cache): `make bench-site`.

Serves _build/html (make book) on 127.0.0.1, opens every page of _toc.yml in headless Chromium at 1366 and 390 px
and adds up the bytes of every response, by kind (fonts, scripts, styles, images, the page itself), and the
largest files. Prints markdown tables; nothing is timed and nothing is hard-coded.
"""
from __future__ import annotations

import http.server
import sys
import threading
from collections import defaultdict
from functools import partial
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CHROMIUM = "/usr/bin/chromium"
WIDTHS = (1366, 390)


def kind(url: str, content_type: str) -> str:
    name = url.split("?", 1)[0].lower()
    if "mathjax" in name:
        return "MathJax"
    if "fontawesome" in name or "/webfonts/" in name:
        return "Font Awesome"
    for suffix, label in ((".js", "script"), (".css", "style"), ((".png", ".svg", ".jpg"), "image"),
                          ((".woff", ".woff2", ".ttf", ".otf"), "font"), (".html", "page")):
        if name.endswith(suffix):
            return label
    return content_type.split(";", 1)[0] or "other"


def pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [f"{toc['root']}.html"] + [f"{ch['file']}.html" for part in toc["parts"] for ch in part["chapters"]]


def measure(browser, base: str, rel: str, width: int) -> dict[str, dict[str, int]]:
    context = browser.new_context(viewport={"width": width, "height": 900})  # a new context: an empty cache
    page = context.new_page()
    sizes: dict[str, int] = {}
    types: dict[str, str] = {}

    def done(response):
        try:
            sizes[response.url] = len(response.body())
        except Exception:  # a redirect or an aborted request has no body
            sizes.setdefault(response.url, 0)
        types[response.url] = response.headers.get("content-type", "")

    page.on("response", done)
    page.goto(f"{base}/{rel}", wait_until="load")
    page.wait_for_load_state("networkidle")
    context.close()
    by_kind: dict[str, int] = defaultdict(int)
    for url, size in sizes.items():
        by_kind[kind(url, types[url])] += size
    return {"kinds": dict(by_kind), "files": sizes}


def main() -> int:
    from playwright.sync_api import sync_playwright

    if not (HTML / "index.html").is_file():
        print("no site in _build/html: run `make book` first", file=sys.stderr)
        return 1

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(HTML)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    largest: dict[str, int] = {}
    rows = []
    kinds: set[str] = set()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        for rel in pages():
            for width in WIDTHS:
                result = measure(browser, base, rel, width)
                kinds |= set(result["kinds"])
                rows.append((rel, width, result["kinds"]))
                for url, size in result["files"].items():
                    largest[url.removeprefix(base)] = size
        browser.close()
    server.shutdown()
    columns = sorted(kinds)
    print("## Page weight, cold cache (kB)\n")
    print("| page | width | total | " + " | ".join(columns) + " |")
    print("|---|---:|---:|" + "---:|" * len(columns))
    for rel, width, by_kind in rows:
        cells = " | ".join(f"{by_kind.get(k, 0) / 1000:.0f}" for k in columns)
        print(f"| {rel} | {width} | {sum(by_kind.values()) / 1000:.0f} | {cells} |")
    print("\n## Largest files (kB)\n")
    print("| file | kB |\n|---|---:|")
    for url, size in sorted(largest.items(), key=lambda item: -item[1])[:12]:
        print(f"| {url.split('?', 1)[0]} | {size / 1000:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
