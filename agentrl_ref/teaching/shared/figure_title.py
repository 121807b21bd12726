"""Every course figure shown in a notebook carries its own title inside the PNG, for the site's alt text.

The book's site (book/_ext/figures.py) gives each figure an alt text and a numbered caption. A PNG output holds
pixels only, so the figure's title (its suptitle, else its axes' titles joined by "；") is written into the PNG
as a standard tEXt chunk, keyword "Title" (PNG specification, section 11.3.4.2), which every PNG reader skips or
shows as metadata: the picture is unchanged.

install() wraps IPython's PNG formatter for matplotlib figures, the one matplotlib-inline registers when its
backend module is imported (which matplotlib does lazily, at the first figure). Where the kernel's backend is the
inline one, install() imports that module first, so the formatter it wraps is the one that will be used; it is
also hooked on every cell's start (pre_run_cell), so a formatter registered later (a %matplotlib magic) is
wrapped too. Outside IPython it does nothing. Every course figure module imports cjk, which calls install().
"""
from __future__ import annotations

import struct
import zlib

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
KEYWORD = "Title"
_WRAPPED = "_agentrl_titled"


def figure_title(fig) -> str:
    """The figure's own title: its suptitle, else the titles of its axes (left, centre, right), in order."""
    sup = getattr(fig, "_suptitle", None)
    if sup is not None and sup.get_text().strip():
        return " ".join(sup.get_text().split())
    titles = []
    for ax in fig.axes:
        for loc in ("left", "center", "right"):
            text = " ".join(ax.get_title(loc=loc).split())
            if text and text not in titles:
                titles.append(text)
    return "；".join(titles)


def with_title(png: bytes, title: str) -> bytes:
    """png with an iTXt chunk (UTF-8 text, uncompressed) "Title" = title right after its IHDR chunk."""
    if not title or not png.startswith(PNG_SIGNATURE):
        return png
    ihdr_end = len(PNG_SIGNATURE) + 8 + struct.unpack(">I", png[8:12])[0] + 4
    body = KEYWORD.encode("latin-1") + b"\0" + b"\0\0" + b"\0" + b"\0" + title.encode("utf-8")
    chunk = struct.pack(">I", len(body)) + b"iTXt" + body + struct.pack(">I", zlib.crc32(b"iTXt" + body))
    return png[:ihdr_end] + chunk + png[ihdr_end:]


def read_title(png: bytes) -> str:
    """The "Title" text of a PNG (iTXt or tEXt chunk), or ""."""
    if not png.startswith(PNG_SIGNATURE):
        return ""
    at = len(PNG_SIGNATURE)
    while at + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        data = png[at + 8:at + 8 + length]
        if kind == b"iTXt" and data.startswith(KEYWORD.encode() + b"\0"):
            rest = data[len(KEYWORD) + 1:]
            if rest[:1] == b"\0":  # uncompressed: flag, method, language tag\0, translated keyword\0, text
                return rest[2:].split(b"\0", 2)[-1].decode("utf-8")
        if kind == b"tEXt" and data.startswith(KEYWORD.encode() + b"\0"):
            return data[len(KEYWORD) + 1:].decode("latin-1")
        if kind == b"IEND":
            break
        at += 12 + length
    return ""


def _wrap(formatter) -> None:
    from matplotlib.figure import Figure

    try:
        current = formatter.lookup_by_type(Figure)
    except KeyError:
        return
    if getattr(current, _WRAPPED, False):
        return

    def titled(fig, *args, **kwargs):
        data = current(fig, *args, **kwargs)
        if isinstance(data, (bytes, bytearray)):
            return with_title(bytes(data), figure_title(fig))
        if isinstance(data, str):  # base64, as matplotlib-inline returns it
            import base64

            return base64.b64encode(with_title(base64.b64decode(data), figure_title(fig))).decode("ascii")
        return data

    setattr(titled, _WRAPPED, True)
    formatter.for_type(Figure, titled)


def install() -> None:
    """Wrap the kernel's PNG formatter for figures now and at the start of every cell (module docstring)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return
    import matplotlib

    if matplotlib.get_backend(auto_select=False) in ("inline", "module://matplotlib_inline.backend_inline"):
        import matplotlib_inline.backend_inline  # noqa: F401  (its import registers the inline formatter)
    formatter = shell.display_formatter.formatters["image/png"]
    _wrap(formatter)
    if not getattr(shell, _WRAPPED, False):
        shell.events.register("pre_run_cell", lambda *_: _wrap(formatter))
        setattr(shell, _WRAPPED, True)
