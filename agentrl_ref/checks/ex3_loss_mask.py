"""Visible tests of exercise 3 (multi-turn loss mask): the seed page's trajectory, the causal shift,
and the ChatML rule on a real tokenized conversation. Each test returns what it observed (the masks,
the rule's raw answers), which run_test records for grading.

Every failing test gives the hint of the mistake its function's diagnosis finds first (diagnose_mask,
diagnose_shift, diagnose_rule): a wrong role condition before the `is` comparison, which only shows on names
read at run time, so that a test about names from data does not blame `is` for a condition that is wrong anyway.

The expected ChatML rule is written out below (_PART_CASES), not imported: the reference answer
(agentrl_ref.loss_mask) is not in exercise 3's grading sandbox."""
from agentrl_ref.checks import expect, visible_test

EX = "ex3_loss_mask"

# The seed page's test: 12 tokens, [sys 0..2] [user 2..5] [asst 5..8] [tool 8..10] [asst 10..12]
SEED_SPANS = [
    ("system", 0, 2),
    ("user", 2, 5),
    ("assistant", 5, 8),
    ("tool", 8, 10),
    ("assistant", 10, 12),
]
SEED_RAW = [0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1]
SEED_SHIFTED = [0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1]

ROLE_HINT = ("TODO 1：只有 assistant 段是 1；system、user、tool 都是外界给的 observation，应为 0。"
             "条件只看 role：role == \"assistant\"。")
IS_HINT = ("TODO 1：比较字符串的内容要用 ==，不要用 is：代码里写死的字面量碰巧是同一个对象，从文件、分词器读进来的"
           "角色名内容相同，却是另一个对象。")
RULE_IS_HINT = ("TODO 3：比较字符串的内容要用 ==（in 也是按 == 比），不要用 is：运行时读进来的 'assistant' "
                "和字面量内容相同，却是另一个对象。")
LENGTH_HINT = ("TODO 2：最后一个位置没有下一个 token 可预测，第一个 token 也没有谁预测它：结果比 mask 短 1，"
               "不要再补一位。")
DIRECTION_HINT = ("TODO 2：shifted[t] = mask[t+1]：去掉 mask 的第一个元素（mask[1:]），不是最后一个。位置 4（最后一个 "
                  "user token）的 logits 预测 token 5（第一个 assistant token），这一项 loss 要算。")


def _names_from_data(text: str, sep: str = ",") -> list[str]:
    """Names as a tokenizer or a JSON file hands them over: equal to the literals, never the same objects."""
    return ["".join(list(name)) for name in text.split(sep)]


def diagnose_mask(build_loss_mask) -> str | None:
    """TODO 1's mistake: the role condition (on literal names), else `is` (names read at run time)."""
    try:
        if list(build_loss_mask(list(range(12)), SEED_SPANS)) != SEED_RAW:
            return ROLE_HINT
        spans = [(role, a, b) for (_, a, b), role in zip(SEED_SPANS, _names_from_data("system,user,assistant,tool,"
                                                                                     "assistant"))]
        if list(build_loss_mask(list(range(12)), spans)) != SEED_RAW:
            return IS_HINT
    except Exception:  # the failing test reports what the student's code raised
        return None
    return None


def diagnose_shift(shift_mask_for_clm) -> str | None:
    """TODO 2's mistake: the length, else the direction."""
    try:
        shifted = list(shift_mask_for_clm(list(SEED_RAW)))
    except Exception:
        return None
    if len(shifted) != len(SEED_RAW) - 1:
        return LENGTH_HINT
    return DIRECTION_HINT if shifted != SEED_SHIFTED else None


@visible_test(EX, "loss_mask", "原页面的轨迹：raw mask（12 个 token）")
def seed_raw_mask(build_loss_mask):
    mask = build_loss_mask(list(range(12)), SEED_SPANS)
    print(f"  raw mask: {mask}")
    print(f"  期望:     {SEED_RAW}")
    mask = list(mask)
    expect(len(mask) == 12, "原页面的 12 个 token：mask 的长度是 {n}，期望 12（和 token_ids 一样长）",
           hint="mask = [0] * len(token_ids) 已经写好：TODO 1 只决定哪些位置改成 1。", n=len(mask))
    for role, start, end in SEED_SPANS:
        got, want = mask[start:end], SEED_RAW[start:end]
        expect(got == want, "原页面的轨迹 {spans}：{role} 段 token[{start}:{end}] 得到 {got}，期望 {want}",
               hint=diagnose_mask(build_loss_mask) or ROLE_HINT, spans=SEED_SPANS, role=role, start=start, end=end,
               got=got, want=want)
    return mask


@visible_test(EX, "loss_mask", "原页面的轨迹：错位后的 mask（11 个位置，5 个计入 loss）")
def seed_shifted_mask(shift_mask_for_clm):
    shifted = list(shift_mask_for_clm(list(SEED_RAW)))
    print(f"  shifted:  {shifted}")
    print(f"  期望:     {SEED_SHIFTED}")
    print(f"  loss tokens: {sum(shifted)} / {len(shifted)}   （期望 {sum(SEED_SHIFTED)} / {len(SEED_SHIFTED)}）")
    expect(shifted == SEED_SHIFTED, "输入原页面的 raw mask {mask}，得到 {got}（长度 {n}），期望 {want}（长度 11）",
           hint=diagnose_shift(shift_mask_for_clm) or DIRECTION_HINT, mask=SEED_RAW, got=shifted, n=len(shifted),
           want=SEED_SHIFTED)
    return shifted


_PART_CASES = [  # (role, part, trained?) and why, for the hint
    ("assistant", "header", False, "TODO 3：<|im_start|>assistant\\n 是模板写的（生成提示），不是模型生成的，不训练。"),
    ("assistant", "content", True, "TODO 3：assistant 的正文是模型生成的，要训练。"),
    ("assistant", "end", True, "TODO 3：assistant 的 <|im_end|> 要训练，否则模型学不会停下来。"),
    ("tool", "content", False, "TODO 3：tool 的输出是环境给的 observation，永远不训练。"),
    ("user", "content", False, "TODO 3：user 的话是输入，不训练。"),
    ("tool", "end", False, "TODO 3：tool 消息的 <|im_end|> 也是模板写的，不训练。"),
    ("system", "content", False, "TODO 3：system 提示是输入，不训练。"),
    ("assistant", "sep", False, "TODO 3：两轮之间的换行（sep）是模板写的，不训练。"),
]


def _rule_of_the_cases(role: str, part: str) -> bool:
    """The expected answer, read off the table above (a pair the table does not list is not trained)."""
    return any(r == role and p == part and trained for r, p, trained, _ in _PART_CASES)


def diagnose_rule(is_trainable) -> str | None:
    """TODO 3's mistake: the first case of the rule it gets wrong (literal names), else `is` (names read at run
    time)."""
    try:
        for role, part, want, why in _PART_CASES:
            if bool(is_trainable(role, part)) != want:
                return why
        roles = _names_from_data(",".join(role for role, _, _, _ in _PART_CASES))
        parts = _names_from_data(",".join(part for _, part, _, _ in _PART_CASES))
        if any(bool(is_trainable(r, p)) != want for r, p, (_, _, want, _) in zip(roles, parts, _PART_CASES)):
            return RULE_IS_HINT
    except Exception:
        return None
    return None


@visible_test(EX, "is_trainable", "ChatML 的规则：header、正文、<|im_end|> 各训练哪些")
def chatml_rule(is_trainable):
    cases = _PART_CASES[:6]
    answers = [is_trainable(role, part) for role, part, _, _ in cases]
    for (role, part, want, _), got in zip(cases, answers):
        print(f"  {role:9s} {part:8s} -> {int(bool(got))}   期望 {int(want)}")
    for (role, part, want, why), got in zip(cases, answers):
        expect(isinstance(got, (bool, int)) and got in (0, 1),
               "is_trainable({role!r}, {part!r}) 返回了 {got!r}，应返回 True 或 False",
               hint="TODO 3：keep 是一个条件表达式（比较、and、in），它的值就是 True 或 False。",
               role=role, part=part, got=got)
        expect(bool(got) == want, "is_trainable({role!r}, {part!r}) 得到 {got!r}，期望 {want}",
               hint=diagnose_rule(is_trainable) or why, role=role, part=part, got=got, want=want)
    return answers


@visible_test(EX, "is_trainable", "从数据里读进来的角色名和部分名")
def names_from_data(is_trainable):
    cases = [("assistant", "content", True), ("assistant", "end", True), ("assistant", "sep", False),
             ("user", "end", False)]
    roles = _names_from_data(",".join(role for role, _, _ in cases))
    parts = _names_from_data(",".join(part for _, part, _ in cases))
    answers = [is_trainable(role, part) for role, part in zip(roles, parts)]
    for (role, part, want), got in zip(cases, answers):
        print(f"  {role:9s} {part:8s} -> {int(bool(got))}   期望 {int(want)}")
        expect(bool(got) == want, "运行时读进来的 {role!r}、{part!r}：得到 {got!r}，期望 {want}",
               hint=diagnose_rule(is_trainable) or RULE_IS_HINT, role=role, part=part, got=got, want=want)
    return answers


@visible_test(EX, "is_trainable", "真实对话：每个 token 的 mask 与本题的规则一致")
def real_conversation(is_trainable):
    from agentrl_ref.teaching.shared.chat_template import AGENT_CONVERSATION, loss_mask_from_tokens, tokenize_chat
    from agentrl_ref.teaching.ex3_loss_mask.mask_plots import token_label

    chat = tokenize_chat(AGENT_CONVERSATION)
    answers = [is_trainable(role, part) for role, part in zip(chat.roles, chat.parts)]
    got = [int(bool(a)) for a in answers]
    want = loss_mask_from_tokens(chat, _rule_of_the_cases)
    print(f"  {len(chat)} 个 token，训练其中 {sum(got)} 个（期望 {sum(want)} 个）")
    for t, (g, w) in enumerate(zip(got, want)):
        expect(g == w, "真实对话的 token {t} {label!r}（{role} 的 {part}）得到 {got}，期望 {want}",
               hint=diagnose_rule(is_trainable) or "TODO 3：只训练 assistant 的正文和它的 <|im_end|>。",
               t=t, label=token_label(chat.pieces[t]), role=chat.roles[t], part=chat.parts[t], got=g, want=w)
    return answers


@visible_test(EX, "loss_mask", "从数据里读进来的角色名（内容相同、不是同一个对象）")
def roles_from_data(build_loss_mask):
    system, user, assistant, tool = _names_from_data("system,user,assistant,tool")
    spans = [(system, 0, 1), (user, 1, 3), (assistant, 3, 5), (tool, 5, 6), (assistant, 6, 8)]
    want = [0, 0, 0, 1, 1, 0, 1, 1]
    mask = list(build_loss_mask(list(range(8)), spans))
    print(f"  mask: {mask}   期望 {want}")
    expect(mask == want, "角色名是运行时读进来的字符串 {spans}：得到 {got}，期望 {want}",
           hint=diagnose_mask(build_loss_mask) or IS_HINT, spans=spans, got=mask, want=want)
    return mask


@visible_test(EX, "loss_mask", "边界情况：空轨迹、长度为 0 的段、相邻的两段、不在任何段里的 token、不改动输入")
def edge_cases(build_loss_mask):
    cases = [
        ([], [], [], "TODO 1：空轨迹：没有 token，mask 也是空列表。"),
        ([7, 8, 9, 10], [("assistant", 2, 2)], [0, 0, 0, 0], "TODO 1：长度为 0 的段（start == end）不含任何 token。"),
        (list(range(6)), [("assistant", 0, 3), ("assistant", 3, 6)], [1] * 6,
         "TODO 1：首尾相接的两段 assistant 都要记 1。"),
        (list(range(6)), [("user", 0, 2), ("assistant", 4, 6)], [0, 0, 0, 0, 1, 1],
         "TODO 1：不属于任何一段的 token（这里是 2、3）记 0。"),
    ]
    observed = []
    for ids, spans, want, hint in cases:
        kept_ids, kept_spans = list(ids), list(spans)
        mask = build_loss_mask(ids, spans)
        observed.append(mask)
        expect(list(mask) == want, "build_loss_mask({ids}, {spans}) 得到 {got}，期望 {want}",
               hint=diagnose_mask(build_loss_mask) or hint, ids=kept_ids, spans=kept_spans, got=mask, want=want)
        expect(ids == kept_ids and spans == kept_spans,
               "调用之后传进来的 token_ids 或 role_spans 被改了：{ids}、{spans}",
               hint="新建一个列表来放 mask（[0] * len(token_ids)），不要改动调用者的列表。", ids=ids, spans=spans)
    return observed
