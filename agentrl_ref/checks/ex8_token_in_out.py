"""Visible tests of exercise 8 (token in, token out): what one message adds to a rendered conversation, the
trajectory of sampled ids, and the round-trip drift check. Each test returns what it observed (ids, masks,
log-probs, positions), which run_test records for grading.

The tests run on a toy tokenizer written out below, so that they need nothing but the standard library and never
the reference answer (agentrl_ref.token_in_out is not in exercise 8's grading sandbox): ChatML text as UTF-8 bytes,
<|im_start|> and <|im_end|> as single ids, and a few BPE merges ("ab", "10", "\\n\\n") applied in order, so that
the ids a sampler may emit ([97, 98]) are not always the ones encode gives back ([256]). Three templates over it:
ChatML (append-only), ChatML with a default system prompt when the conversation does not start with one (as
Qwen2.5's template does), and ChatML that strips <think>…</think> from assistant turns before the last user
message (as Qwen3's template does; verl issue #6854).

Every failing test gives the hint of the mistake its part's diagnosis finds first (diagnose_message_ids,
diagnose_trajectory, diagnose_drift).
"""
from __future__ import annotations

import re

from agentrl_ref.checks import expect, fail, visible_test

EX = "ex8_token_in_out"

IM_START, IM_END = "<|im_start|>", "<|im_end|>"
SPECIAL_IDS = {IM_START: 300, IM_END: 301}
MERGES = ((b"ab", 256), (b"10", 257), (b"\n\n", 258))   # applied in this order, as BPE applies its ranked merges
DEFAULT_SYSTEM = "You are a helpful assistant."
_SPECIAL = re.compile("(" + "|".join(map(re.escape, SPECIAL_IDS)) + ")")
_THINK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)


def _bpe(data: bytes) -> list[int]:
    ids = list(data)
    for pair, merged in MERGES:
        a, b = pair
        out, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and ids[i] == a and ids[i + 1] == b:
                out.append(merged)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        ids = out
    return ids


def encode(text: str) -> list[int]:
    """The toy tokenizer: special tokens first, then UTF-8 bytes with the merges."""
    ids: list[int] = []
    for piece in _SPECIAL.split(text):
        if piece in SPECIAL_IDS:
            ids.append(SPECIAL_IDS[piece])
        elif piece:
            ids += _bpe(piece.encode("utf-8"))
    return ids


_BYTES = {merged: pair for pair, merged in MERGES}
_NAME = {i: name for name, i in SPECIAL_IDS.items()}


def _token_bytes(i: int) -> bytes:
    if i in _NAME:
        return _NAME[i].encode()
    if i in _BYTES:
        return b"".join(_token_bytes(b) for b in _BYTES[i])
    return bytes([i])


def decode(ids: list[int]) -> str:
    """The toy tokenizer's decode (invalid UTF-8 becomes U+FFFD, as byte-level BPE decoders do)."""
    return b"".join(_token_bytes(i) for i in ids).decode("utf-8", errors="replace")


def decode_skip_special(ids: list[int]) -> str:
    """decode with skip_special_tokens=True, as TRL decodes completions."""
    return decode([i for i in ids if i not in _NAME])


def _turn(role: str, content: str) -> str:
    return f"{IM_START}{role}\n{content}{IM_END}\n"


def chatml_ids(messages: list[dict]) -> list[int]:
    """ChatML, append-only: every message renders the same whatever comes after it."""
    return encode("".join(_turn(m["role"], m["content"]) for m in messages))


def default_system_ids(messages: list[dict]) -> list[int]:
    """ChatML with a default system prompt in front when the first message is not a system message."""
    if messages and messages[0]["role"] != "system":
        messages = [{"role": "system", "content": DEFAULT_SYSTEM}, *messages]
    return chatml_ids(messages)


def strip_think_ids(messages: list[dict]) -> list[int]:
    """ChatML that drops <think>…</think> from the assistant turns before the last user message: not append-only."""
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    last_user = users[-1] if users else -1
    return chatml_ids([{**m, "content": _THINK.sub("", m["content"])} if m["role"] == "assistant" and i < last_user
                       else m for i, m in enumerate(messages)])


CONVERSATION = [
    {"role": "system", "content": "You are a math agent."},
    {"role": "user", "content": "What is 23 * 17?"},
    {"role": "assistant", "content": "<think>23*17 is big, call the tool</think><tool_call>mul(23, 17)</tool_call>"},
    {"role": "tool", "content": "391"},
    {"role": "assistant", "content": "<think>the tool says 391</think>23 * 17 = 391."},
    {"role": "user", "content": "And what is 391 + 9? Please show every step, and call the calculator tool again."},
]
NOT_APPEND_ONLY_AT = 5   # strip_think_ids: the second user message strips both earlier <think> blocks

WHOLE_HINT = ("TODO 2：after 是 messages[:index + 1]（到这条消息为止）的渲染，不是整段对话的渲染："
              "这条消息后面的消息不属于它。")
ALONE_HINT = ("TODO 4：这条消息添的 id 是 after 去掉 before 以后剩下的部分，不是把它单独渲染一遍：模板会看上下文"
              "（比如对话不以 system 开头时，在最前面补一段默认的 system 提示）。")
CHECK_HINT = ("TODO 3：要检查 before 是不是 after 的前缀（after[:len(before)] != before）：模板若改写了前面的消息"
              "（比如删掉早先的 <think>），after 就不再是 before 的延续，只比长度看不出来。")
BEFORE_HINT = "TODO 1：before 是不带这条消息的渲染：messages[:index]。"
RETURN_HINT = "TODO 4：返回 after 里接在 before 后面的部分：after[len(before):]。"


def _expected_delta(render_ids, messages: list[dict], index: int) -> list[int]:
    before, after = render_ids(messages[:index]), render_ids(messages[:index + 1])
    return after[len(before):]


def diagnose_message_ids(message_ids) -> str | None:
    """The first mistake found: the whole conversation rendered, the message rendered alone, no prefix check."""
    try:
        conversation = CONVERSATION[:5]
        got = list(message_ids(chatml_ids, conversation, 1))
        if got == chatml_ids(conversation)[len(chatml_ids(conversation[:1])):]:
            return WHOLE_HINT
        if got != _expected_delta(chatml_ids, conversation, 1):
            return RETURN_HINT
        chat = CONVERSATION[1:3]
        got = list(message_ids(default_system_ids, chat, 1))
        if got == default_system_ids(chat[1:]) != _expected_delta(default_system_ids, chat, 1):
            return ALONE_HINT
        if got != _expected_delta(default_system_ids, chat, 1):
            return RETURN_HINT
    except Exception:  # the failing test reports what the student's code raised
        return None
    try:
        message_ids(strip_think_ids, CONVERSATION, NOT_APPEND_ONLY_AT)
    except ValueError:
        return None
    except Exception:
        return None
    return CHECK_HINT


@visible_test(EX, "message_ids", "ChatML：每条消息添的 id 拼起来就是整段对话的渲染")
def chatml_deltas(message_ids):
    conversation = CONVERSATION[:5]
    deltas = [list(message_ids(chatml_ids, conversation, i)) for i in range(len(conversation))]
    for i, delta in enumerate(deltas):
        want = _expected_delta(chatml_ids, conversation, i)
        print(f"  消息 {i}（{conversation[i]['role']}）：{len(delta)} 个 id   期望 {len(want)} 个")
        expect(delta == want, "消息 {index}（{role}）添的 id 得到 {got}，期望 {want}",
               hint=diagnose_message_ids(message_ids) or RETURN_HINT, index=i, role=conversation[i]["role"],
               got=delta, want=want)
    return deltas


@visible_test(EX, "message_ids", "模板会看上下文：对话不以 system 开头时，模板在最前面补一段默认的 system 提示")
def default_system_prompt(message_ids):
    chat = CONVERSATION[1:3]
    observed = []
    for i in range(len(chat)):
        got = list(message_ids(default_system_ids, chat, i))
        want = _expected_delta(default_system_ids, chat, i)
        observed.append(got)
        print(f"  消息 {i}（{chat[i]['role']}）：{len(got)} 个 id   期望 {len(want)} 个")
        expect(got == want, "默认 system 提示的模板，消息 {index}（{role}）添的 id 得到 {got}，期望 {want}",
               hint=diagnose_message_ids(message_ids) or ALONE_HINT, index=i, role=chat[i]["role"], got=got,
               want=want)
    return observed


@visible_test(EX, "message_ids", "删掉早先 <think> 的模板不是 append-only：ValueError，并说出是哪条消息")
def not_append_only(message_ids):
    index = NOT_APPEND_ONLY_AT
    try:
        got = list(message_ids(strip_think_ids, CONVERSATION, index))
    except ValueError as err:
        text = str(err)
        print(f"  ValueError: {text}")
        expect(str(index) in text, "ValueError 的消息 {text!r} 没有说出是第 {index} 条消息",
               hint="TODO 3 下面写好的 raise 已经带上了 index：别改掉它，让报错说出边界在哪条消息。", text=text,
               index=index)
        return "ValueError"
    fail("第 {index} 条消息（user）让模板删掉了前面两段 <think>，messages[:{index}] 的渲染不再是前缀；"
         "函数却返回了 {n} 个 id，没有报 ValueError", hint=diagnose_message_ids(message_ids) or CHECK_HINT,
         index=index, n=len(got))


@visible_test(EX, "message_ids", "第一条消息、最后一条消息，不改动传进来的列表")
def message_edges(message_ids):
    conversation = [dict(m) for m in CONVERSATION]
    kept = [dict(m) for m in conversation]
    first = list(message_ids(chatml_ids, conversation, 0))
    last = list(message_ids(chatml_ids, conversation, len(conversation) - 1))
    for index, got in ((0, first), (len(conversation) - 1, last)):
        want = _expected_delta(chatml_ids, conversation, index)
        expect(got == want, "消息 {index} 添的 id 得到 {got}，期望 {want}",
               hint=diagnose_message_ids(message_ids) or RETURN_HINT, index=index, got=got, want=want)
    expect(conversation == kept, "调用之后 messages 被改了：{messages}",
           hint="只读 messages：切片 messages[:index] 得到新列表，不要改动调用者的消息。", messages=conversation)
    return [first, last]


# ---- the trajectory ---------------------------------------------------------------------------------------------

GEN_PROMPT = f"{IM_START}assistant\n"
SEPARATOR = encode("\n")


def agent_case():
    """(prompt_ids, turns, separator): system + user + generation prompt; a sampled tool call; the tool's turn
    and the next generation prompt; a sampled answer. The sampled ids end with <|im_end|>, where the sampler
    stopped; the first one is not the canonical tokenization ("ab" as two ids)."""
    prompt = chatml_ids(CONVERSATION[:2]) + encode(GEN_PROMPT)
    call = [97, 98] + encode("(2, 3)") + [SPECIAL_IDS[IM_END]]        # "ab(2, 3)": 'a' and 'b' sampled one by one
    answer = encode("= 10") + [SPECIAL_IDS[IM_END]]
    observation = encode(_turn("tool", "6") + GEN_PROMPT)
    lp_call = [round(-0.1 * (k + 1), 3) for k in range(len(call))]
    lp_answer = [round(-0.05 * (k + 2), 3) for k in range(len(answer))]
    turns = [("sampled", call, lp_call), ("observation", observation, None), ("sampled", answer, lp_answer)]
    return prompt, turns, list(SEPARATOR)


def expected_trajectory(prompt, turns, separator):
    """What the trajectory must be, written out: the pieces in order, (ids, trained?, log-probs)."""
    pieces = [(list(prompt), 0, [0.0] * len(prompt))]
    for i, (kind, ids, lps) in enumerate(turns):
        if kind == "sampled":
            pieces.append((list(ids), 1, list(lps)))
            if i + 1 < len(turns):
                pieces.append((list(separator), 0, [0.0] * len(separator)))
        else:
            pieces.append((list(ids), 0, [0.0] * len(ids)))
    ids = [x for p, _, _ in pieces for x in p]
    mask = [m for p, m, _ in pieces for _ in p]
    lps = [x for _, _, lp in pieces for x in lp]
    return ids, mask, lps


PROMPT_HINT = "TODO 5：prompt 是输入，不是采样出来的：它的 loss_mask 全是 0。"
SAMPLED_HINT = "TODO 6：采样出来的 id 要训练：loss_mask 记 1，每个 id 一个。"
LOGPROB_HINT = ("TODO 7：logprobs[t] 是采样器给 ids[t] 的 log-prob，和 id 放在同一个位置，"
                "原样接上（list(turn_logprobs)），"
                "不要挪一位：错位由训练时和标签一起做（练习 3）。")
SEP_HINT = ("TODO 8：采样器在 <|im_end|> 停下，模板却在它后面写了分隔符（这里是换行）："
            "后面还有内容时，把 separator_ids "
            "接上（不训练），否则 ids 和模板渲染的对话对不上（verl PR #6921）。")
LAST_SEP_HINT = ("TODO 8：最后一轮后面什么也没有，序列以采样器生成的 <|im_end|> 结束：只在后面还有一轮时"
                 "（i + 1 < len(turns)）接分隔符。")
OBS_HINT = "TODO 9：observation（工具结果、模板写的生成提示）是外界给的：loss_mask 记 0，不训练。"
ALIGN_HINT = "ids、loss_mask、logprobs 要一样长：每接上一段 id，也要接上同样多的 mask 和 log-prob。"


def diagnose_trajectory(build_trajectory) -> str | None:
    """The first mistake found on agent_case, piece by piece."""
    prompt, turns, sep = agent_case()
    try:
        ids, mask, lps = (list(x) for x in build_trajectory(prompt, turns, sep))
    except Exception:
        return None
    call, obs, answer = turns[0][1], turns[1][1], turns[2][1]
    if not len(ids) == len(mask) == len(lps):
        return ALIGN_HINT
    if any(mask[:len(prompt)]):
        return PROMPT_HINT
    no_sep = list(prompt) + call + obs + answer
    if ids == no_sep:
        return SEP_HINT
    if ids == expected_trajectory(prompt, turns, sep)[0] + sep:
        return LAST_SEP_HINT
    want_ids, want_mask, want_lps = expected_trajectory(prompt, turns, sep)
    if ids != want_ids:
        return SEP_HINT
    start_obs = len(prompt) + len(call) + len(sep)
    if any(mask[start_obs:start_obs + len(obs)]):
        return OBS_HINT
    if mask[len(prompt):len(prompt) + len(call)] != [1] * len(call):
        return SAMPLED_HINT
    if mask != want_mask:
        return SEP_HINT if any(mask[len(prompt) + len(call):start_obs]) else SAMPLED_HINT
    if [round(float(x), 6) for x in lps] != want_lps:
        return LOGPROB_HINT
    return None


@visible_test(EX, "build_trajectory", "一条两轮的 agent 轨迹：ids、loss_mask、logprobs 一样长，逐位对齐")
def agent_trajectory(build_trajectory):
    prompt, turns, sep = agent_case()
    ids, mask, lps = (list(x) for x in build_trajectory(prompt, turns, sep))
    want_ids, want_mask, want_lps = expected_trajectory(prompt, turns, sep)
    print(f"  长度：ids {len(ids)}、loss_mask {len(mask)}、logprobs {len(lps)}   期望都是 {len(want_ids)}")
    print(f"  训练的 token：{sum(mask)} 个   期望 {sum(want_mask)} 个")
    hint = diagnose_trajectory(build_trajectory)
    expect(len(ids) == len(mask) == len(lps),
           "ids、loss_mask、logprobs 的长度是 {n_ids}、{n_mask}、{n_lps}，应当一样长",
           hint=hint or ALIGN_HINT, n_ids=len(ids), n_mask=len(mask), n_lps=len(lps))
    expect(ids == want_ids, "ids 得到 {got}，期望 {want}", hint=hint or SEP_HINT, got=ids, want=want_ids)
    for t, (m, w) in enumerate(zip(mask, want_mask)):
        expect(m == w, "位置 {t}（id {token}）的 loss_mask 得到 {got}，期望 {want}", hint=hint or OBS_HINT, t=t,
               token=ids[t], got=m, want=w)
    for t, (lp, w) in enumerate(zip(lps, want_lps)):
        expect(abs(float(lp) - w) < 1e-9, "位置 {t}（id {token}）的 log-prob 得到 {got}，期望 {want}",
               hint=hint or LOGPROB_HINT, t=t, token=ids[t], got=float(lp), want=w)
    rendered = chatml_ids(CONVERSATION[:2] + [
        {"role": "assistant", "content": decode(turns[0][1][:-1])}, {"role": "tool", "content": "6"},
        {"role": "assistant", "content": decode(turns[2][1][:-1])}])[:-1]
    same_text = decode(ids) == decode(rendered)
    print(f"  和模板渲染的整段对话文本相同：{same_text}；id 相同：{ids == rendered}（第一轮采样的 'a'、'b' 是两个 id，"
          "重新分词会并成一个）")
    return [ids, mask, [float(x) for x in lps]]


@visible_test(EX, "build_trajectory", "边界情况：没有回合、只有一轮采样、连着两段 observation、空的分隔符")
def trajectory_edges(build_trajectory):
    prompt = encode(GEN_PROMPT)
    one = ("sampled", encode("hi") + [SPECIAL_IDS[IM_END]], [-0.5, -0.25, -0.125])
    obs_a, obs_b = ("observation", encode("x"), None), ("observation", encode("yz"), None)
    cases = [
        (prompt, [], list(SEPARATOR)),
        (prompt, [one], list(SEPARATOR)),
        (prompt, [one, obs_a, obs_b, one], list(SEPARATOR)),
        (prompt, [one, obs_a, one], []),
        ([], [obs_a, one], encode("\n\n")),
    ]
    observed = []
    for case in cases:
        got = [list(x) for x in build_trajectory(*case)]
        want = [list(x) for x in expected_trajectory(*case)]
        got[2] = [float(x) for x in got[2]]
        observed.append(got)
        expect(got == want, "prompt {prompt}、turns {kinds}、separator {sep}：得到 (ids, loss_mask, logprobs) = "
               "{got}，期望 {want}", hint=diagnose_trajectory(build_trajectory) or ALIGN_HINT, prompt=case[0],
               kinds=[k for k, _, _ in case[1]], sep=case[2], got=got, want=want)
    return observed


# ---- the drift check --------------------------------------------------------------------------------------------

LENGTH_CASE_HINT = ("TODO 12：一个是另一个的真前缀时（比如 decode 跳过了特殊 token），前面每一位都相同，"
                    "第一个不同的位置是较短那个的长度：别漏掉这种情况，也别返回 None。")
LENGTH_VALUE_HINT = "TODO 13：较短的那个结束的位置就是第一个不同的位置：min(len(ids), len(again))，不一定是 len(ids)。"
ROUND_TRIP_HINT = "TODO 10：again 是先 decode 成文本、再 encode 回来的 id：list(encode(decode(ids)))。"
COMPARE_HINT = "TODO 11：逐位比较两串 id，不是 id 的文本：a != b（ids[t] != again[t]）时 t 就是第一个不同的位置。"


def _drift(ids, again) -> int | None:
    for t, (a, b) in enumerate(zip(ids, again)):
        if a != b:
            return t
    return None if len(ids) == len(again) else min(len(ids), len(again))


DRIFT_CASES = [  # (ids, decode) as a sampler could emit them
    (encode("ab 10"), decode),                    # canonical
    ([97, 98], decode),                          # "ab" as two ids: BPE merges them
    (encode("x = 1") + [48], decode),              # "1" then "0": re-encoded "10" is one id
    (encode("ok") + [SPECIAL_IDS[IM_END]], decode_skip_special),   # the decoder drops <|im_end|>
    ([0xE4], decode),                             # a lone byte of a Chinese character: decodes to U+FFFD
    (encode("\n") + [10], decode),                # two "\n" sampled one by one
    ([], decode),
]


def diagnose_drift(first_drift) -> str | None:
    try:
        got = [first_drift(list(ids), encode, dec) for ids, dec in DRIFT_CASES]
    except Exception:
        return None
    want = [_drift(ids, encode(dec(list(ids)))) for ids, dec in DRIFT_CASES]
    prefix = 3   # the case where the re-encoded ids are a proper prefix
    for k, (g, w) in enumerate(zip(got, want)):
        if k != prefix and g != w:
            return COMPARE_HINT if g is not None else ROUND_TRIP_HINT
    if got[prefix] is None:
        return LENGTH_CASE_HINT
    if got[prefix] != want[prefix]:
        return LENGTH_VALUE_HINT
    return None


@visible_test(EX, "first_drift", "往返一次（encode(decode(ids))）：第一个不同的位置，或 None")
def drift_cases(first_drift):
    observed = []
    for ids, dec in DRIFT_CASES:
        got = first_drift(list(ids), encode, dec)
        again = encode(dec(list(ids)))
        want = _drift(ids, again)
        observed.append(got)
        print(f"  ids {list(ids)} -> 往返后 {again}：得到 {got!r}   期望 {want!r}")
        expect(got == want and (got is None) == (want is None),
               "ids {ids} 往返后是 {again}：得到 {got!r}，期望 {want!r}",
               hint=diagnose_drift(first_drift) or COMPARE_HINT,
               ids=list(ids), again=again, got=got, want=want)
    return observed


@visible_test(EX, "first_drift", "返回 int 或 None，不改动传进来的 ids")
def drift_types(first_drift):
    ids = [97, 98, 99]
    kept = list(ids)
    got = first_drift(ids, encode, decode)
    expect(type(got) is int, "first_drift({ids}) 返回了 {got!r}（{kind}），应返回 int 0",
           hint=diagnose_drift(first_drift) or COMPARE_HINT, ids=kept, got=got, kind=type(got).__name__)
    expect(ids == kept, "调用之后 ids 被改了：{ids}", hint="只读 ids：往返的结果放进新的列表 again。", ids=ids)
    return got
