"""An episode as HTML: one box per token, text coloured by role, background by the loss mask (ex3's colours)."""
from __future__ import annotations

import html

from agentrl_ref.agent.batch import trained_spans
from agentrl_ref.agent.parts import resolve_parts
from agentrl_ref.agent.vocab import VOCAB


def _colors():
    from agentrl_ref.teaching.ex3_loss_mask.mask_plots import MASK_COLORS, ROLE_COLORS

    return ROLE_COLORS, MASK_COLORS


def episode_html(episode, train_tool_tokens: bool = False, parts=None, vocab=VOCAB) -> str:
    """HTML of the episode's tokens: role colour as text and underline, mask 1 dark / 0 light (build_loss_mask of ex3).

    The mask shown is per token (is this token trained?), before the causal shift; with
    train_tool_tokens the tool result is trained too (the ablation's mask).
    """
    parts = resolve_parts(parts)
    role_colors, mask_colors = _colors()
    mask = parts.build_loss_mask(episode.tokens, trained_spans(episode, train_tool_tokens))
    boxes = []
    for t, (tok, m) in enumerate(zip(episode.tokens, mask)):
        role = episode.role_of(t)
        color = role_colors.get(role, "#595959")
        text_color = "#ffffff" if m else color
        title = f"t={t} role={role or '-'} mask={m}"
        boxes.append(
            f'<span title="{html.escape(title)}" style="display:inline-block;margin:1px;padding:1px 3px;'
            f'font-family:monospace;font-size:12px;background:{mask_colors[int(m)]};color:{text_color};'
            f'border-bottom:3px solid {color};border-radius:2px">{html.escape(vocab.tokens[tok])}</span>')
    legend = " ".join(
        f'<span style="border-bottom:3px solid {c};padding:0 3px;font-size:11px">{r}</span>'
        for r, c in role_colors.items())
    legend += (f' <span style="background:{mask_colors[1]};color:#fff;padding:0 3px;font-size:11px">mask 1</span>'
               f' <span style="background:{mask_colors[0]};padding:0 3px;font-size:11px">mask 0</span>')
    return f'<div style="line-height:1.9">{"".join(boxes)}</div><div style="margin-top:4px">{legend}</div>'
