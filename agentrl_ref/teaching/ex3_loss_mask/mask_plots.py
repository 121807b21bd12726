"""The figure and the table of exercise 3: the loss mask over real tokens, before and after the causal shift.

A token's text is shown in ASCII, with spaces as "_" and newlines as "\\n"; the title and the legend are Chinese where
a CJK font is installed (cjk.zh).
"""
from __future__ import annotations

import math

from agentrl_ref.teaching.shared.chat_template import TokenizedChat
from agentrl_ref.teaching.shared.md_table import markdown_table

# role colours double as text colours on MASK_COLORS[0]: each has a contrast of at least 4.5:1 there
ROLE_COLORS = {"system": "#595959", "user": "#146a31", "assistant": "#1f4fbf", "tool": "#9e4900"}
MASK_COLORS = ("#e9e9e9", "#2f3e4e")  # 0, 1: neutral, so they do not read as role colours


def token_label(piece: str) -> str:
    """ASCII text for one token: ' ' -> '_', newline -> '\\n', tab -> '\\t', other non-printable or non-ASCII ->
    escapes."""
    out = []
    for ch in piece:
        if ch == " ":
            out.append("_")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif " " < ch <= "~":
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def plot_mask_heatmap(chat: TokenizedChat, mask: list[int], shifted: list[int], per_row: int = 31):
    """Two rows per panel, one column per token t: mask[t] and shifted[t] = mask[t+1].

    Tick labels are the tokens, coloured by role; thin vertical lines separate messages.
    The shifted row has no value at the last token (no next token to predict): drawn empty.
    Sized to be shown unscaled in the book's column (page_figure.COLUMN_PX), so every label stays legible.
    """
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    from agentrl_ref.teaching.shared.cjk import zh
    from agentrl_ref.teaching.shared.page_figure import DPI

    n = len(chat)
    if len(mask) != n or len(shifted) != n - 1:
        raise ValueError(f"need len(mask) == {n} and len(shifted) == {n - 1}, got {len(mask)} and {len(shifted)}")
    panels = max(1, math.ceil(n / per_row))
    cmap = ListedColormap(list(MASK_COLORS)).with_extremes(bad="white")
    fig, axes = plt.subplots(panels, 1, figsize=(0.2 * per_row + 1.2, 1.9 * panels + 0.8), dpi=DPI, squeeze=False)
    for p, ax in enumerate(axes[:, 0]):
        lo, hi = p * per_row, min(n, (p + 1) * per_row)
        grid = [[float(mask[t]) for t in range(lo, hi)],
                [float(shifted[t]) if t < n - 1 else math.nan for t in range(lo, hi)]]
        ax.imshow(grid, cmap=cmap, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
        for row in range(2):
            for col, t in enumerate(range(lo, hi)):
                value = grid[row][col]
                text = "-" if math.isnan(value) else str(int(value))
                ax.text(col, row, text, ha="center", va="center", fontsize=8,
                        color="white" if value == 1 else "#555555")
        ax.set_yticks([0, 1], ["mask[t]", "shifted[t]\n=mask[t+1]"], fontsize=8)
        ax.set_xticks(range(hi - lo), [token_label(chat.pieces[t]) for t in range(lo, hi)],
                      rotation=90, fontsize=8, family="monospace")
        for label, t in zip(ax.get_xticklabels(), range(lo, hi)):
            label.set_color(ROLE_COLORS[chat.roles[t]])
        top = ax.secondary_xaxis("top")
        ticks = [col for col, t in enumerate(range(lo, hi)) if t % 5 == 0]
        top.set_xticks(ticks, [str(lo + col) for col in ticks], fontsize=8)
        top.tick_params(length=2)
        for col, t in enumerate(range(lo, hi)):
            if t > 0 and chat.message[t] != chat.message[t - 1]:
                ax.axvline(col - 0.5, color="black", linewidth=1.2)
        ax.set_xticks([x - 0.5 for x in range(1, hi - lo)], minor=True)
        ax.set_yticks([0.5], minor=True)
        ax.grid(which="minor", color="white", linewidth=0.8)
        ax.tick_params(which="minor", length=0)
        ax.set_xlim(-0.5, per_row - 0.5)
    height = fig.get_figheight()
    fig.tight_layout(rect=(0, 0, 1, 1.0 - 0.78 / height), h_pad=0.4)  # before the title: it would reserve room for it
    fig.suptitle(zh("一段分好词的 ChatML 对话上的 loss mask\n（上方的数字：token 下标 t）",
                    "Loss mask over a tokenized ChatML conversation\n(numbers on top: token index t)"),
                 fontsize=10, y=1.0 - 0.04 / height, va="top")
    handles = [Patch(color=MASK_COLORS[1], label=zh("1 = 计入 loss", "1 = in the loss")),
               Patch(color=MASK_COLORS[0], label=zh("0 = 不计入", "0 = masked"))]
    handles += [Patch(color=color, label=zh(f"{role}（标签的颜色）", f"{role} (label colour)"))
                for role, color in ROLE_COLORS.items()]
    fig.legend(handles=handles, loc="upper center", ncol=3, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 1.0 - 0.36 / height), handlelength=1.2, columnspacing=1.2)
    return fig


def _cell(piece: str) -> str:
    return "`" + token_label(piece).replace("|", "\\|") + "`"


# the parts of a message (chat_template.PARTS) as the tables head them: the Chinese word, then the name the code uses
PART_ZH = {"header": "头部", "content": "正文", "end": "结束符", "sep": "分隔"}


def boundary_table(chat: TokenizedChat, mask: list[int], shifted: list[int], message: int) -> str:
    """Markdown table of the tokens where `message` starts and ends: token, role, part, mask, shifted.

    Rows: the last token before the message, its header, its first two content tokens, then its last
    content token, its end, its separator and the first token of the next message.
    """
    positions = [t for t, m in enumerate(chat.message) if m == message]
    if not positions:
        raise ValueError(f"no tokens of message {message}")
    first, last = positions[0], positions[-1]
    header = [t for t in positions if chat.parts[t] == "header"]
    content = [t for t in positions if chat.parts[t] == "content"]
    head = [first - 1] * (first > 0) + header + content[:2]
    tail = (content[-1:] + [t for t in positions if chat.parts[t] in ("end", "sep")]
            + [last + 1] * (last + 1 < len(chat)))
    rows = []
    for t in head + [None] + tail:
        if t is None:
            rows.append(["…", "…", None, None, None, None])
            continue
        nxt = _cell(chat.pieces[t + 1]) if t + 1 < len(chat) else "（没有了）"
        sh = str(shifted[t]) if t < len(shifted) else "—"
        rows.append([str(t), _cell(chat.pieces[t]), f"{chat.roles[t]} / {chat.parts[t]}", str(mask[t]),
                     f"**{sh}**", nxt])
    header = ["t", "token", "角色 / 部分", "mask[t]", "shifted[t] = mask[t+1]", "logits[t] 要预测的 token"]
    return markdown_table(header, rows, ["r", "", "", "c", "c", ""])


def message_table(chat: TokenizedChat, mask: list[int], other: tuple[str, list[int]] | None = None) -> str:
    """Markdown table, one row per message: its role, how many tokens each part has, how many are trained;
    other = (column header, a second mask over the same tokens) adds a column for that mask."""
    from agentrl_ref.teaching.shared.chat_template import PARTS

    masks = [mask] + ([other[1]] if other else [])
    if any(len(m) != len(chat) for m in masks):
        raise ValueError(f"every mask needs one entry per token ({len(chat)})")
    rows = []
    for index in range(max(chat.message, default=-1) + 1):
        positions = [t for t, m in enumerate(chat.message) if m == index]
        counts = [sum(chat.parts[t] == part for t in positions) for part in PARTS]
        trained = [str(sum(m[t] for t in positions)) for m in masks]
        rows.append([str(index), f"{chat.roles[positions[0]]}", *map(str, counts), *trained])
    rows.append(["合计", None, *(str(chat.parts.count(p)) for p in PARTS), *(str(sum(m)) for m in masks)])
    header = ["消息", "角色", *(f"{PART_ZH[part]} {part}" for part in PARTS), "本题训练的 token"]
    header += [other[0]] if other else []
    return markdown_table(header, rows, ["r", "", *["r"] * len(PARTS), *["r"] * len(masks)])
