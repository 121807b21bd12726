"""Visible tests of exercise 11 (DAPO's sampling side): the mask of informative groups, the bounded batch filler, the
loss with a decoupled clip range and the mean token entropy over the loss mask. Each test returns what it observed,
which run_test records for grading.

The expected values are written out here in plain Python (agentrl_ref.dapo_sampling, the answer, is not in exercise
11's grading sandbox). The filler's tests hand it their own mask of informative groups (its `informative` argument),
so a mistake in the first part does not fail the second. Every failing test gives the hint of the mistake its part's
diagnosis finds first (diagnose_informative, diagnose_fill, diagnose_loss, diagnose_entropy).
"""
from __future__ import annotations

import math

import torch

from agentrl_ref.checks import expect, fail, visible_test

EX = "ex11_dapo_sampling"


def _as_bools(got) -> list[bool]:
    return [bool(x) for x in (got.tolist() if isinstance(got, torch.Tensor) else list(got))]


# ---- informative groups -----------------------------------------------------------------------------------------

def expected_informative(rewards, group_size: int) -> list[bool]:
    groups = [rewards[i:i + group_size] for i in range(0, len(rewards), group_size)]
    return [max(g) - min(g) > 0 for g in groups]


# (what the rewards are, rewards, group_size): every kind of reward a trainer meets
SPREAD_CASES = [
    ("0/1 的正确性奖励", [1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1], 4),
    ("DAPO 的 ±1 奖励", [1, 1, 1, 1, -1, -1, -1, -1, 1, -1, -1, -1, -1, 1, 1, 1], 4),
    ("练习 7 的综合奖励", [1.13, 1.13, 1.13, 1.13, 0.06, 0.06, 0.06, 0.06, 1.13, 1.12, 1.13, 1.13, 0.06, 1.13, 0.06,
                          0.06], 4),
    ("全相同的 0.35（浮点）", [0.35, 0.35, 0.35], 3),
]
# the number of groups differs from the group size: a mix-up of the two shows
LAYOUT_CASES = [([1, 1, 0, 1, 0, 0], 2), ([1, 0, 1, 1, 1, 1], 3), ([0, 0, 0, 0, 0, 0, 1, 0, 2, 2], 2)]

LAYOUT_HINT = ("TODO 1：同一个 prompt 的 group_size 个样本挨着放，每 group_size 个是一组："
               "r.view(-1, group_size) 一行一组，共 len(r) // group_size 行。view(group_size, -1) 是把"
               "第几个样本排成一行，把不同的组混在了一起。")
MEAN_HINT = ("TODO 2、3：不要看组内平均奖励是不是严格在 0 和 1 之间：这只对 0/1 奖励成立。DAPO 的奖励是 ±1，"
             "练习 7 的综合奖励全对时大于 1、全错时是一个小的正数：平均值说明不了组内有没有差别。"
             "看的是组内奖励是否不全相同：max − min > 0。")
STD_HINT = ("TODO 2：std > 0（或 var > 0）在浮点里不可靠：全相同的组算出来的 std 可能是 1e-17 这样的数，"
            "不是 0（0.35 三个的平均不正好是 0.35）。用 max − min：它是两个原样的奖励相减，全相同时正好是 0。")
SPREAD_HINT = ("TODO 2、3：一组有信息，当且仅当组内奖励不全相同：spread = 每行的最大值 − 最小值，"
               "spread > 0 的组留下。")


def _mean_rule(rewards, group_size: int) -> list[bool]:
    groups = [rewards[i:i + group_size] for i in range(0, len(rewards), group_size)]
    return [0 < sum(g) / len(g) < 1 for g in groups]


def diagnose_informative(informative_groups) -> str | None:
    """The first mistake found: the layout, the mean rule, std > 0, anything else."""
    try:
        for rewards, group_size in LAYOUT_CASES:
            if len(_as_bools(informative_groups(rewards, group_size))) != len(rewards) // group_size:
                return LAYOUT_HINT
        got = {label: _as_bools(informative_groups(rewards, g)) for label, rewards, g in SPREAD_CASES}
    except Exception:
        return None
    mean_like = all(got[label] == _mean_rule(rewards, g) for label, rewards, g in SPREAD_CASES[1:3])
    if mean_like:
        return MEAN_HINT
    label, rewards, g = SPREAD_CASES[3]
    if got[label] != expected_informative(rewards, g):
        return STD_HINT
    if any(got[label] != expected_informative(rewards, g) for label, rewards, g in SPREAD_CASES):
        return SPREAD_HINT
    return None


@visible_test(EX, "informative_groups", "有信息的组：组内奖励不全相同（0/1、±1、综合奖励、浮点里全相同）")
def spread_cases(informative_groups):
    observed = []
    for label, rewards, group_size in SPREAD_CASES:
        got = _as_bools(informative_groups(rewards, group_size))
        want = expected_informative(rewards, group_size)
        observed.append(got)
        print(f"  {label}：得到 {got}   期望 {want}")
        expect(got == want, "{label} {rewards}（group_size = {group_size}）：得到 {got}，期望 {want}",
               hint=diagnose_informative(informative_groups) or SPREAD_HINT, label=label, rewards=rewards,
               group_size=group_size, got=got, want=want)
    return observed


@visible_test(EX, "informative_groups", "组数和组大小不同时，每 group_size 个相邻的样本是一组")
def layout_cases(informative_groups):
    observed = []
    for rewards, group_size in LAYOUT_CASES:
        got = _as_bools(informative_groups(rewards, group_size))
        want = expected_informative(rewards, group_size)
        observed.append(got)
        print(f"  {rewards}，group_size = {group_size}：得到 {got}   期望 {want}")
        expect(got == want, "{rewards}（group_size = {group_size}）：得到 {got}，期望 {want}",
               hint=diagnose_informative(informative_groups) or LAYOUT_HINT, rewards=rewards, group_size=group_size,
               got=got, want=want)
    return observed


# ---- the bounded filler -----------------------------------------------------------------------------------------

class TooManyDraws(Exception):
    """Raised by a scripted draw called more often than its script allows (stops a loop without a bound)."""


class ScriptedDraw:
    """draw() returning the scripted (groups, rewards) in turn; `repeat` returns the last one again and again, up to
    `limit` calls in all; one call more raises TooManyDraws."""

    def __init__(self, script, repeat: bool = False, limit: int = 50):
        self.script, self.repeat, self.limit, self.calls = list(script), repeat, limit, 0

    def __call__(self):
        self.calls += 1
        if self.calls > self.limit or (not self.repeat and self.calls > len(self.script)):
            raise TooManyDraws(self.calls)
        groups, rewards = self.script[min(self.calls, len(self.script)) - 1]
        return list(groups), torch.tensor(rewards, dtype=torch.float64)


def informative(rewards, group_size):
    """The mask of informative groups the filler's tests hand it (the first part's answer, written out)."""
    r = [float(x) for x in rewards]
    return torch.tensor(expected_informative(r, group_size))


def expected_fill(script, target, group_size, max_draws) -> dict:
    kept, draws, drawn = [], 0, 0
    for groups, rewards in script:
        if len(kept) >= target or draws >= max_draws:
            break
        draws += 1
        drawn += len(groups)
        kept += [g for g, k in zip(groups, expected_informative(rewards, group_size)) if k]
    return {"groups": kept[:target], "draws": draws, "drawn_groups": drawn, "drawn_samples": drawn * group_size,
            "full": len(kept) >= target}


def fields(batch) -> dict:
    """What a filled batch holds, as plain data."""
    out = {}
    for name in ("groups", "draws", "drawn_groups", "drawn_samples", "full"):
        value = getattr(batch, name, None)
        out[name] = list(value) if name == "groups" and value is not None else value
    return out


# group_size 2: three draws of three groups; the batch is full in the third, with one informative group too many
FILL_SCRIPT = [(["a0", "a1", "a2"], [1, 0, 1, 1, 0, 1]),
               (["b0", "b1", "b2"], [0, 0, 1, 1, 0, 0]),
               (["c0", "c1", "c2"], [1, 0, 0, 1, 1, 0])]
# a sampler whose groups never differ (the data are too hard, or too easy), and one that gives too few
NEVER = [(["x0", "x1"], [1, 1, 0, 0])]
EXACT = [(["e0", "e1"], [1, 0, 0, 1]), (["f0", "f1"], [1, 0, 1, 0])]
FEW = [(["p0", "p1"], [1, 0, 1, 1]), (["q0", "q1"], [0, 0, 0, 1])]

UNBOUNDED_HINT = ("TODO 4：循环还要一个上限：while len(kept) < target_groups and draws < max_draws。"
                  "一个从来抽不到有信息的组的采样器（题太难或太容易）会让只看 len(kept) 的循环永远不停"
                  "（verl 的 max_num_gen_batches）。")
OFF_BY_ONE_HINT = ("TODO 4：最多调用 draw() max_draws 次：条件是 draws < max_draws（已经抽了 draws 批，"
                   "还能再抽），写成 <= 会多抽一批。")
STOP_HINT = ("TODO 4：凑够了就停：条件是 len(kept) < target_groups；"
             "已经有 target_groups 个还去抽，就白白多花了一批生成。")
COUNT_HINT = ("TODO 5：drawn_groups 数的是组：len(groups)。rewards 是每个样本一个数，len(rewards) 是样本数"
              "（组数 × group_size），drawn_samples 才是它。")
FILTER_HINT = ("TODO 6：只留下 keep 为真的组：[g for g, k in zip(groups, keep) if k]。"
               "全对、全错的组 advantage 是 0，留着它们就不是动态采样了。")
SURPLUS_HINT = ("TODO 7：最后一批抽到的有信息的组可能比缺的多：只要前 target_groups 个，kept[:target_groups]"
                "（verl：batch[:traj_bsz]）。训练批的大小要固定。")


def diagnose_fill(fill_batch) -> str | None:
    """The first mistake found on the scripted samplers."""
    def run(script, target, max_draws, repeat=False, limit=50):
        draw = ScriptedDraw(script, repeat, limit)
        try:
            return fields(fill_batch(draw, target, 2, max_draws, informative=informative)), draw.calls
        except TooManyDraws:
            return None, draw.calls

    try:
        never, calls = run(NEVER, 2, 3, repeat=True, limit=20)
        full, _ = run(FILL_SCRIPT, 4, 5)
        exact, _ = run(EXACT, 4, 5)
    except Exception:
        return None
    if never is None and calls > 20:
        return UNBOUNDED_HINT
    if never is not None and never["draws"] == 4:
        return OFF_BY_ONE_HINT
    if full is None or exact is None:
        return STOP_HINT
    want = expected_fill(FILL_SCRIPT, 4, 2, 5)
    if full["drawn_groups"] == want["drawn_samples"] or full["drawn_samples"] == want["drawn_samples"] * 2:
        return COUNT_HINT
    if full["groups"] == want["groups"]:
        return None
    if len(full["groups"] or []) > 4 and [g for g in full["groups"] if g.startswith("b")]:
        return FILTER_HINT
    if len(full["groups"] or []) > 4:
        return SURPLUS_HINT
    return FILTER_HINT


def _check_fields(got: dict, want: dict, fill_batch, fallback: str, what: str) -> None:
    for key in ("groups", "draws", "drawn_groups", "drawn_samples", "full"):
        expect(got[key] == want[key], "{what}：{key} 得到 {got}，期望 {want}",
               hint=diagnose_fill(fill_batch) or fallback, what=what, key=key, got=got[key], want=want[key])


@visible_test(EX, "fill_batch", "凑满一批：只留有信息的组，数抽了几批、几组、几个样本，多出来的不要，凑够就停")
def fills_and_counts(fill_batch):
    observed = []
    for label, script, target in (("三批、每批三组，要 4 组", FILL_SCRIPT, 4), ("两批正好凑够 4 组", EXACT, 4)):
        draw = ScriptedDraw(script)
        try:
            got = fields(fill_batch(draw, target, 2, 5, informative=informative))
        except TooManyDraws:
            fail("{label}：凑够 {target} 组以后还在调用 draw()（第 {calls} 次）",
                 hint=diagnose_fill(fill_batch) or STOP_HINT, label=label, target=target, calls=draw.calls)
        want = expected_fill(script, target, 2, 5)
        observed.append(got)
        print(f"  {label}：得到 {got}")
        print(f"  {' ' * len(label)}  期望 {want}")
        _check_fields(got, want, fill_batch, FILTER_HINT, label)
    return observed


@visible_test(EX, "fill_batch", "有上限：抽不到有信息的组时，抽满 max_draws 批就停，返回手上有的，full 为 False")
def gives_up(fill_batch):
    observed = []
    for label, script, target, max_draws in (("从来没有有信息的组", NEVER, 2, 3), ("有信息的组太少", FEW, 3, 2)):
        draw = ScriptedDraw(script, repeat=True, limit=20)
        try:
            got = fields(fill_batch(draw, target, 2, max_draws, informative=informative))
        except TooManyDraws:
            fail("{label}：调用了 {calls} 次 draw() 还不停（max_draws = {max_draws}）",
                 hint=diagnose_fill(fill_batch) or UNBOUNDED_HINT, label=label, calls=draw.calls,
                 max_draws=max_draws)
        want = expected_fill([script[min(i, len(script) - 1)] for i in range(max_draws)], target, 2, max_draws)
        observed.append(got)
        print(f"  {label}：得到 {got}")
        _check_fields(got, want, fill_batch, OFF_BY_ONE_HINT, label)
    return observed


# ---- the loss with eps_low != eps_high -------------------------------------------------------------------------------

EPS_LOW, EPS_HIGH = 0.2, 0.28
# (ratio, advantage) of single tokens: inside and beyond each bound, for both signs of the advantage
TOKEN_CASES = [(1.25, 1.0), (1.40, 1.0), (0.70, 1.0), (0.70, -1.0), (0.75, -2.0), (1.25, -1.0), (1.40, -1.0),
               (0.85, -1.0)]


def token_loss(ratio: float, adv: float, low: float = EPS_LOW, high: float = EPS_HIGH) -> float:
    return -min(ratio * adv, min(max(ratio, 1 - low), 1 + high) * adv)


# two sequences: three trained tokens and padding, one trained token and padding (padding holds ratios and
# advantages of its own: a mean over every position would see them)
BATCH_RATIOS = [[1.40, 0.70, 1.10, 3.00], [0.70, 2.00, 2.00, 2.00]]
BATCH_ADV = [[1.0, -1.0, 0.5, 2.0], [-2.0, 1.0, 1.0, 1.0]]
BATCH_MASK = [[1, 1, 1, 0], [1, 0, 0, 0]]


def expected_batch_loss(ratios, advs, mask, low=EPS_LOW, high=EPS_HIGH) -> float:
    losses = [token_loss(r, a, low, high) for rr, ar, mr in zip(ratios, advs, mask)
              for r, a, m in zip(rr, ar, mr) if m]
    return sum(losses) / max(len(losses), 1)


def _single(loss_fn, ratio: float, adv: float, low=EPS_LOW, high=EPS_HIGH) -> float:
    return float(loss_fn(torch.tensor([[math.log(ratio)]]), torch.tensor([[0.0]]), torch.tensor([[adv]]),
                         torch.tensor([[1.0]]), low, high))


def _batch(loss_fn, low=EPS_LOW, high=EPS_HIGH) -> float:
    new = torch.tensor([[math.log(r) for r in row] for row in BATCH_RATIOS])
    mask = torch.tensor(BATCH_MASK, dtype=torch.float)
    return float(loss_fn(new, torch.zeros_like(new), torch.tensor(BATCH_ADV), mask, low, high))


RATIO_HINT = "TODO 8：概率比是新策略比旧策略：torch.exp(logp_new - logp_old)（log 空间里相减）。"
HIGH_NEG_HINT = ("TODO 9：ε_high 只管上界 1 + ε_high：advantage 为正的 token 最多涨到这里。下界仍是 1 − ε_low："
                 "torch.clamp(ratio, 1 - eps_low, 1 + eps_high)。把 ε_high 也用在下界上，"
                 "advantage 为负的 token 就被多压下去了。")
SWAP_HINT = ("TODO 9：下界是 1 − eps_low、上界是 1 + eps_high，别反了：clip-higher 放宽的是上界"
             "（DAPO：0.2 / 0.28），让概率低的好 token 能多涨一点。")
MIN_HINT = ("TODO 10：PPO 取两个目标里**较小**的（悲观的下界）：torch.minimum(ratio * A, clipped * A)，"
            "loss 是它的相反数。取较大的，裁剪就拦不住比率了。")
TOKEN_MEAN_HINT = ("TODO 11：只在 loss_mask 为 1 的 token 上平均：(per_token * mask).sum() / mask.sum()。"
                   "per_token.mean() 把 padding 也算进去了。")
SEQ_MEAN_HINT = ("TODO 11：整批训练 token 一起平均（DAPO 的 token-level loss，练习 7）：总和除以整批训练 token 数，"
                 "不是先每条序列平均、再对序列平均（GRPO 论文的写法，长回答的 token 权重更小）。")
LOSS_HINT = "TODO 8–11：每个 token 的 loss 是 −min(r·A, clip(r, 1 − ε_low, 1 + ε_high)·A)，再在训练 token 上平均。"


def _seq_mean(ratios, advs, mask) -> float:
    rows = []
    for rr, ar, mr in zip(ratios, advs, mask):
        losses = [token_loss(r, a) for r, a, m in zip(rr, ar, mr) if m]
        rows.append(sum(losses) / max(len(losses), 1))
    return sum(rows) / len(rows)


def _matches(got: list[float], fn) -> bool:
    return all(math.isclose(g, fn(r, a), rel_tol=1e-4, abs_tol=1e-5) for g, (r, a) in zip(got, TOKEN_CASES))


def diagnose_loss(clip_higher_loss) -> str | None:
    try:
        got = [_single(clip_higher_loss, r, a) for r, a in TOKEN_CASES]
        batch = _batch(clip_higher_loss)
    except Exception:
        return None
    if not _matches(got, token_loss):
        if _matches(got, lambda r, a: token_loss(r, a, EPS_HIGH, EPS_HIGH)):
            return HIGH_NEG_HINT
        if _matches(got, lambda r, a: token_loss(r, a, EPS_HIGH, EPS_LOW)):
            return SWAP_HINT
        if _matches(got, lambda r, a: -max(r * a, min(max(r, 1 - EPS_LOW), 1 + EPS_HIGH) * a)):
            return MIN_HINT
        if _matches(got, lambda r, a: token_loss(1 / r, a)):
            return RATIO_HINT
        return LOSS_HINT
    if math.isclose(batch, expected_batch_loss(BATCH_RATIOS, BATCH_ADV, BATCH_MASK), rel_tol=1e-4, abs_tol=1e-5):
        return None
    if math.isclose(batch, _seq_mean(BATCH_RATIOS, BATCH_ADV, BATCH_MASK), rel_tol=1e-4, abs_tol=1e-5):
        return SEQ_MEAN_HINT
    return TOKEN_MEAN_HINT


@visible_test(EX, "clip_higher_loss", "一个 token 的 loss：A > 0 时比率截在 1 + ε_high，A < 0 时截在 1 − ε_low")
def token_cases(clip_higher_loss):
    observed = []
    for ratio, adv in TOKEN_CASES:
        got = _single(clip_higher_loss, ratio, adv)
        want = token_loss(ratio, adv)
        observed.append(got)
        print(f"  比率 {ratio:.2f}、A = {adv:+g}：得到 {got:+.4f}   期望 {want:+.4f}")
        expect(math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-5),
               "比率 {ratio}、A = {adv}（ε_low 0.2，ε_high 0.28）：loss 得到 {got}，期望 {want}",
               hint=diagnose_loss(clip_higher_loss) or LOSS_HINT, ratio=ratio, adv=adv, got=round(got, 6),
               want=round(want, 6))
    return observed


@visible_test(EX, "clip_higher_loss", "整批：训练 token 的平均（padding 不算，长短序列的 token 一样重）")
def batch_mean(clip_higher_loss):
    got = _batch(clip_higher_loss)
    want = expected_batch_loss(BATCH_RATIOS, BATCH_ADV, BATCH_MASK)
    print(f"  得到 {got:+.5f}   期望 {want:+.5f}")
    expect(math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-5),
           "两条序列（3 个和 1 个训练 token，其余是 padding）：loss 得到 {got}，期望 {want}",
           hint=diagnose_loss(clip_higher_loss) or TOKEN_MEAN_HINT, got=round(got, 6), want=round(want, 6))
    return got


# ---- entropy --------------------------------------------------------------------------------------------------------

# two sequences of three positions over a vocabulary of three (T == V: summing over the wrong axis keeps the shape);
# the last position of the second sequence is padding, with a flat distribution of its own
ENT_LOGITS = [[[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [4.0, 1.0, 0.0]],
              [[0.0, 3.0, 0.0], [1.0, 1.0, 5.0], [0.0, 0.0, 0.0]]]
ENT_MASK = [[1, 1, 1], [1, 1, 0]]


def entropy_of(logits: list[float]) -> float:
    top = max(logits)
    z = sum(math.exp(x - top) for x in logits)
    ps = [math.exp(x - top) / z for x in logits]
    return -sum(p * math.log(p) for p in ps if p > 0)


def expected_entropy(logits, mask) -> float:
    values = [entropy_of(pos) for row, mrow in zip(logits, mask) for pos, m in zip(row, mrow) if m]
    return sum(values) / max(len(values), 1)


PADDING_HINT = ("TODO 14：只在 loss_mask 为 1 的位置上平均：(entropy * mask).sum() / mask.sum()。"
                "entropy.mean() 把 padding（和 prompt、工具结果）也算进去了，"
                "padding 上的分布和策略学到什么无关（verl 的 actor/entropy 只看 response_mask）。")
LOGSOFTMAX_HINT = ("TODO 12：logits 不是 log 概率：先 torch.log_softmax(logits, dim=-1) 归一化"
                   "（每个位置在词表上的概率加起来是 1），再算熵。")
AXIS_HINT = ("TODO 13：熵是对**词表**求和：−(p · log p).sum(dim=-1)，得到每个位置一个数；"
             "dim=1 是对序列里的位置求和。")
VOCAB_MEAN_HINT = "TODO 13：熵是 −Σ p log p，对词表求**和**（sum），不是求平均（mean 会除以词表大小）。"
EMPTY_HINT = ("TODO 14：一个训练位置也没有时，0 / 0 是 nan：除数至少记 1（mask.sum().clamp(min=1)），"
              "结果是 0。")
ENTROPY_HINT = "TODO 12–14：每个位置的熵 −Σ_v p_v log p_v（p = softmax(logits)），再在 loss_mask 为 1 的位置上平均。"


def _entropy_call(fn, logits, mask) -> float:
    return float(fn(torch.tensor(logits), torch.tensor(mask, dtype=torch.float)))


def diagnose_entropy(mean_token_entropy) -> str | None:
    try:
        got = _entropy_call(mean_token_entropy, ENT_LOGITS, ENT_MASK)
    except Exception:
        return None

    def near(x: float) -> bool:
        return math.isclose(got, x, rel_tol=1e-4, abs_tol=1e-6)

    if near(expected_entropy(ENT_LOGITS, ENT_MASK)):
        try:
            empty = _entropy_call(mean_token_entropy, [[[1.0, 0.0], [0.0, 1.0]]], [[0, 0]])
        except Exception:
            return None
        return EMPTY_HINT if math.isnan(empty) else None
    if near(expected_entropy(ENT_LOGITS, [[1] * 3, [1] * 3])):
        return PADDING_HINT
    raw = [[-sum(math.exp(x) * x for x in pos) for pos in row] for row in ENT_LOGITS]
    if near(sum(h * m for hr, mr in zip(raw, ENT_MASK) for h, m in zip(hr, mr)) / 5):
        return LOGSOFTMAX_HINT
    if near(expected_entropy(ENT_LOGITS, ENT_MASK) / 3):
        return VOCAB_MEAN_HINT
    return AXIS_HINT


@visible_test(EX, "mean_token_entropy", "平均 token 熵：每个位置对词表求熵，只在 loss mask 为 1 的位置上平均")
def entropy_cases(mean_token_entropy):
    observed = []
    cases = [("两条序列，最后一个位置是 padding", ENT_LOGITS, ENT_MASK),
             ("均匀分布（熵 = ln 4）", [[[0.5, 0.5, 0.5, 0.5]]], [[1]]),
             ("没有训练的位置", [[[1.0, 0.0], [0.0, 1.0]]], [[0, 0]])]
    for label, logits, mask in cases:
        got = _entropy_call(mean_token_entropy, logits, mask)
        want = expected_entropy(logits, mask)
        observed.append(got)
        print(f"  {label}：得到 {got:.5f}   期望 {want:.5f}")
        expect(math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-6), "{label}：得到 {got}，期望 {want}",
               hint=diagnose_entropy(mean_token_entropy) or ENTROPY_HINT, label=label, got=round(got, 6),
               want=round(want, 6))
    return observed
