"""What a reader downloads: every page of the built site opened cold in Chromium, its bytes by kind.

    python bench/page_weight.py [--site _build/html]

Each page is loaded in a fresh browser context (no cache), over a local server; every response's body is
counted by its resource type (script, stylesheet, font, image, other) and MathJax's bundle apart. The last
column is what the theme's own fontawesome.js (still in _static/scripts/, no longer loaded: the templates'
webpack-macros.html) would add to that page, as a ratio from the same run. Not a test: a printout to read
beside a change to the site's assets (book/_ext/), also written as a record, bench/results/page-weight.json
(bench/record.py), which the book's benchmarks page draws.
"""
from __future__ import annotations

import argparse
import http.server
import threading
from collections import Counter
from functools import partial
from pathlib import Path

import record

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _weigh(context, url: str) -> Counter:
    sizes: Counter = Counter()
    page = context.new_page()

    def count(response):
        try:
            body = response.body()
        except Exception:  # a redirect or an aborted request has no body
            return
        kind = "mathjax" if "mathjax" in response.url else response.request.resource_type
        sizes[kind if kind in ("script", "stylesheet", "font", "image", "mathjax") else "other"] += len(body)

    page.on("response", count)
    page.goto(url, wait_until="networkidle")
    page.close()
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    args = parser.parse_args()
    since = record.now()
    from playwright.sync_api import sync_playwright

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(args.site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    theme_js = args.site / "_static" / "scripts" / "fontawesome.js"
    extra = theme_js.stat().st_size if theme_js.is_file() else 0
    pages = sorted(p.relative_to(args.site).as_posix() for p in (args.site / "book").glob("*.html"))
    kinds = ("script", "stylesheet", "font", "image", "mathjax", "other")
    print(f"{'page':34}" + "".join(f"{k:>11}" for k in kinds) + f"{'total KB':>10}{'+ theme fa.js':>15}")
    totals, weighed = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        for path in pages:
            context = browser.new_context(viewport={"width": 1366, "height": 900})
            sizes = _weigh(context, f"{base}/{path}")
            context.close()
            total = sum(sizes.values())
            totals.append(total)
            weighed.append({"page": path, **{kind: sizes[kind] for kind in kinds}})
            print(f"{path:34}" + "".join(f"{sizes[k] / 1024:>11.0f}" for k in kinds)
                  + f"{total / 1024:>10.0f}{(total + extra) / total:>14.2f}x")
        browser.close()
    server.shutdown()
    print(f"median page {sorted(totals)[len(totals) // 2] / 1024:.0f} KB cold; the theme's fontawesome.js would add "
          f"{extra / 1024:.0f} KB to every page")
    record.save("page-weight", {"kinds": list(kinds), "theme_fontawesome_bytes": extra, "pages": weighed},
                since=since)


if __name__ == "__main__":
    main()
