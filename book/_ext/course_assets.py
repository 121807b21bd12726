"""Local Sphinx extension: keep every page's <script> list free of duplicates.

sphinx-thebe registers its inline configuration script on `env-before-read-docs`,
which Jupyter Book 1 fires more than once, so every page declared
`const THEBE_JS_URL` twice and the browser threw "Identifier 'THEBE_JS_URL' has
already been declared". We drop repeated scripts (same file, same inline body).
"""
from __future__ import annotations


def _script_key(script) -> tuple:
    # Sphinx stores an inline script's filename as None or "" depending on who added it
    attributes = getattr(script, "attributes", {}) or {}
    return (getattr(script, "filename", script) or "", attributes.get("body"))


def dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique


def setup(app):
    app.connect("html-page-context", dedupe_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
