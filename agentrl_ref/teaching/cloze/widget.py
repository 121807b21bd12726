"""MLM 代码训练模式 in JupyterLab: the website's cloze practice as an ipywidgets widget.

    from agentrl_ref import cloze_practice
    cloze_practice("format_reward")               # a snippet key or its title ("格式奖励")
    cloze_practice("loss_mask", seed=42, level="挑战")

Same snippets, same maskable tokens and the same seeded choice as the static site (agentrl_ref.teaching.cloze.cards),
so a seed gives the same blanks in both. ipywidgets is imported only when a widget is built.
"""
from __future__ import annotations

import html
import secrets

from agentrl_ref.teaching.cloze import cards as cloze

RIGHT, WRONG, REVEALED = "cloze-right", "cloze-wrong", "cloze-revealed"
_COLORS = {RIGHT: "#c9efd3", WRONG: "#ffd3d0", REVEALED: "#d6e6fb"}
_STYLE = """<style>
.cloze-line { gap: 0 !important; min-height: 1.9em; align-items: center; }
.cloze-line > .widget-html, .cloze-line > .widget-text { margin: 0 !important; }
.cloze-line .widget-html-content { line-height: 1.9em; }
.cloze-line pre { margin: 0; padding: 0; background: none; font-size: var(--jp-code-font-size, 13px); }
.cloze-line input { font-family: var(--jp-code-font-family, monospace) !important;
                    font-size: var(--jp-code-font-size, 13px) !important; padding: 0 2px !important; }
""" + "".join(f".cloze-line .{state} input {{ background: {color} !important; }}\n"
              for state, color in _COLORS.items()) + "</style>"


class ClozeWidget:
    """One cloze card. `box` is the ipywidgets container; displaying the object displays it."""

    def __init__(self, key: str, seed: int | None = None, level: str = cloze.DEFAULT_LEVEL):
        import ipywidgets as widgets

        self._w = widgets
        self.snippet = cloze.get_snippet(key)
        self.code = cloze.snippet_code(self.snippet.key)
        self.pieces = cloze.pieces(self.code)
        self.answers = self.pieces[1::2]
        self.n = len(self.answers)
        self.levels = cloze.levels(self.n)
        names = [lv["name"] for lv in self.levels]
        if level not in names:
            raise ValueError(f"level must be one of {names}, got {level!r}")
        self.seed = secrets.randbits(32) if seed is None else int(seed) & 0xFFFFFFFF
        self.blanks: list[int] = []
        self.inputs: dict[int, object] = {}  # token index -> Text widget

        self.level_select = widgets.Dropdown(
            options=[(f"{lv['name']}（{lv['k']} 空）", lv["name"]) for lv in self.levels],
            value=level, description="难度", layout=widgets.Layout(width="auto"))
        self.seed_box = widgets.IntText(value=self.seed, description="种子", layout=widgets.Layout(width="14em"))
        self.refresh_button = widgets.Button(description="刷新", tooltip="换一批随机的空")
        self.check_button = widgets.Button(description="检查", button_style="primary")
        self.reveal_button = widgets.Button(description="显示答案")
        self.counter = widgets.HTML()
        self.result = widgets.HTML()
        self.lines = widgets.VBox(layout=widgets.Layout(padding="4px 8px"))

        self.level_select.observe(lambda change: self.update(), names="value")
        self.seed_box.observe(self._seed_changed, names="value")
        self.refresh_button.on_click(lambda _: self.refresh())
        self.check_button.on_click(lambda _: self.check())
        self.reveal_button.on_click(lambda _: self.reveal())

        controls = widgets.HBox([self.level_select, self.seed_box, self.refresh_button,
                                 self.check_button, self.reveal_button],
                                layout=widgets.Layout(flex_flow="row wrap"))
        title = widgets.HTML(f"<b>{html.escape(self.snippet.title)}</b>")
        self.box = widgets.VBox([widgets.HTML(_STYLE), title, controls, self.counter, self.result, self.lines])
        self.update()

    # -- state ----------------------------------------------------------------------------------

    @property
    def k(self) -> int:
        return next(lv["k"] for lv in self.levels if lv["name"] == self.level_select.value)

    def _seed_changed(self, change) -> None:
        if change["new"] != self.seed:
            self.seed = int(change["new"]) & 0xFFFFFFFF
            self.update()

    def refresh(self) -> None:
        """New random blanks (the same next seed as the website's 刷新)."""
        self.seed = cloze.refresh_seed(self.n, self.k, self.seed)
        self.update()

    def update(self) -> None:
        from ipywidgets.widgets.widget_string import TextStyle

        widgets = self._w
        self.blanks = cloze.choose_blanks(self.n, self.k, self.seed)
        if self.seed_box.value != self.seed:
            self.seed_box.value = self.seed
        self.counter.value = f"共 {self.n} 个可挖空位 | 已挖 {self.k} 个"
        self.result.value = ""
        hidden = set(self.blanks)
        self.inputs = {}
        widths: dict[int, object] = {}   # one Layout (one widget model) per box width, and one TextStyle
        text_style = TextStyle()
        rows: list[list] = [[]]          # per code line: text (str) and blanks (Text widgets), in order
        for p, piece in enumerate(self.pieces):
            index = (p - 1) // 2
            if p % 2 == 1 and index in hidden:
                width = max(len(piece), 2)
                if width not in widths:
                    widths[width] = widgets.Layout(width=f"calc({width}ch + 10px)")
                box = widgets.Text(value="", continuous_update=False, placeholder="", layout=widths[width],
                                   style=text_style)
                box.observe(lambda change: self.check(), names="value")
                self.inputs[index] = box
                rows[-1].append(box)
                continue
            for j, text in enumerate(piece.split("\n")):
                if j:
                    rows.append([])
                if text:
                    if rows[-1] and isinstance(rows[-1][-1], str):
                        rows[-1][-1] += text
                    else:
                        rows[-1].append(text)
        old, self.lines.children = self.lines.children, self._line_widgets(rows)
        self._close(old)

    @staticmethod
    def _close(rows) -> None:
        """Close the widget models of the rows a refresh replaced (the kernel and the page forget them)."""
        seen = set()
        for row in rows:
            for w in (*row.children, row):
                for model in (w, w.layout, getattr(w, "style", None)):
                    if model is not None and id(model) not in seen:
                        seen.add(id(model))
                        model.close()

    def _line_widgets(self, rows: list[list]) -> list:
        """One HBox per line with a blank; the lines between two such lines in one HTML block. Few widgets: every
        widget is a comm_open (or three) on the kernel's IOPub socket, and a client that falls a few thousand
        messages behind loses some (ZMQ's high-water mark), the cell's idle status among them."""
        widgets = self._w
        from ipywidgets.widgets.widget_string import HTMLStyle

        layout, style, row_layout = widgets.Layout(), HTMLStyle(), widgets.Layout()   # one model each, shared

        def code(text: str):
            return widgets.HTML(f"<pre>{html.escape(text) or ' '}</pre>", layout=layout, style=style)

        out, plain = [], []
        for row in rows + [None]:
            if row is not None and all(isinstance(part, str) for part in row):
                plain.append("".join(row))
                continue
            if plain:
                out.append(widgets.HBox([code("\n".join(plain))], layout=row_layout).add_class("cloze-line"))
                plain = []
            if row is not None:
                out.append(widgets.HBox([code(part) if isinstance(part, str) else part for part in row],
                                        layout=row_layout).add_class("cloze-line"))
        return out

    # -- actions --------------------------------------------------------------------------------

    def _mark(self, box, state: str | None) -> None:
        for cls in (RIGHT, WRONG, REVEALED):
            box.remove_class(cls)
        if state:
            box.add_class(state)   # its colour: _STYLE

    def check(self) -> dict[str, int]:
        """Mark every filled blank right or wrong; return the counts."""
        counts = {"right": 0, "wrong": 0, "empty": 0}
        for index, box in self.inputs.items():
            value = box.value.strip()
            if not value:
                counts["empty"] += 1
                self._mark(box, None)
            elif value == self.answers[index]:
                counts["right"] += 1
                self._mark(box, RIGHT)
            else:
                counts["wrong"] += 1
                self._mark(box, WRONG)
        total = sum(counts.values())
        if total and counts["right"] == total:
            self.result.value = f"全部正确：{counts['right']} / {total}"
        else:
            self.result.value = f"对 {counts['right']} 个，错 {counts['wrong']} 个，未填 {counts['empty']} 个"
        return counts

    def reveal(self) -> None:
        """Fill every blank with its answer."""
        for index, box in self.inputs.items():
            box.unobserve_all("value")
            box.value = self.answers[index]
            self._mark(box, REVEALED)
            box.observe(lambda change: self.check(), names="value")
        self.result.value = "已填入答案：看一遍，再点「刷新」换一批"

    def states(self) -> dict[int, str | None]:
        """token index -> "cloze-right" / "cloze-wrong" / "cloze-revealed" / None, for every blank."""
        return {i: next((c for c in (RIGHT, WRONG, REVEALED) if c in box._dom_classes), None)
                for i, box in self.inputs.items()}

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


def cloze_practice(key: str = "format_reward", seed: int | None = None,
                   level: str = cloze.DEFAULT_LEVEL) -> ClozeWidget:
    """A cloze card for a snippet key or title (see teaching.cloze.cards.SNIPPETS); display it in a notebook."""
    return ClozeWidget(key, seed=seed, level=level)
