"""Two chat templates over the tiny Qwen2's tokenizer for exercise 8's page: ChatML as the TRL page renders it
(append-only), and the same with earlier <think> blocks stripped (as Qwen3's template does: an assistant turn before
the last user message loses its reasoning when the conversation is rendered again; verl issue #6854).

    render = render_ids(chat_tokenizer, strip_think=True)   # messages -> ids, for token_in_out.message_ids
"""
from __future__ import annotations

from agentrl_ref.teaching.shared.tiny_qwen import CHAT_TEMPLATE

# CHAT_TEMPLATE's rendering, with the content of an assistant turn before the last user message cut after its last
# "</think>" (Qwen3's rule, without its tool-call branches)
STRIP_THINK_TEMPLATE = (
    "{%- set ns = namespace(last_user=-1) -%}"
    "{%- for message in messages -%}{%- if message['role'] == 'user' -%}{%- set ns.last_user = loop.index0 -%}"
    "{%- endif -%}{%- endfor -%}"
    "{%- for message in messages -%}"
    "{%- set content = message['content'] -%}"
    "{%- if message['role'] == 'assistant' and loop.index0 < ns.last_user and '</think>' in content -%}"
    "{%- set content = content.split('</think>')[-1] -%}"
    "{%- endif -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>' + '\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)


def render_ids(chat_tokenizer, strip_think: bool = False):
    """messages -> the ids of the rendered conversation (no generation prompt), with the TRL page's template or the
    one that strips earlier <think> blocks."""
    template = STRIP_THINK_TEMPLATE if strip_think else CHAT_TEMPLATE

    def render(messages: list[dict]) -> list[int]:
        if not messages:
            return []
        out = chat_tokenizer.apply_chat_template(list(messages), chat_template=template, tokenize=True,
                                                 return_dict=False)
        return list(out["input_ids"] if isinstance(out, dict) else out)

    return render
