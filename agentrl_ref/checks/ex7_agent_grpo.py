"""Visible tests of exercise 7 (the capstone): the masked, clipped policy-gradient loss and the advantage wiring.

Every expected number below is worked out by hand in a comment (no copy of the loss formula lives in
this package outside agent/loss.py, which the grading sandbox hides). Each test returns the tensors
the student's code returned; run_test records them for grading (dtype, shape and values compared).
torch is imported inside the tests, so that check() of other exercises does not pay for it.
"""
import math

from agentrl_ref.checks import expect, visible_test

EX = "ex7_agent_grpo"
TOL = 1e-5

# One token per case, clip_eps = 0.2: (ratio, advantage, expected per-token loss, what the case is).
# loss = -min(ratio * A, clip(ratio, 0.8, 1.2) * A)
BRANCH_CASES = (
    (1.0, 2.0, -2.0, "ratio=1.0 在区间内，A=+2"),              # -min(2, 2)
    (1.5, 1.0, -1.2, "ratio=1.5 超出上界，A=+1（取裁剪项）"),    # -min(1.5, 1.2)
    (1.5, -1.0, 1.5, "ratio=1.5 超出上界，A=-1（取未裁剪项）"),  # -min(-1.5, -1.2)
    (0.5, 1.0, -0.5, "ratio=0.5 低于下界，A=+1（取未裁剪项）"),  # -min(0.5, 0.8)
    (0.5, -1.0, 0.8, "ratio=0.5 低于下界，A=-1（取裁剪项）"),    # -min(-0.5, -0.8)
)
BRANCH_MEAN = sum(case[2] for case in BRANCH_CASES) / len(BRANCH_CASES)  # -1.4 / 5 = -0.28


def _is_scalar_tensor(value) -> bool:
    import torch

    return isinstance(value, torch.Tensor) and value.dim() == 0


def _expect_scalar(name: str, value) -> None:
    expect(_is_scalar_tensor(value), "{name} 返回了 {kind}{shape}，期望 0 维张量（一个标量）",
           hint="损失要能 backward()：返回张量本身，不要 .item()、float() 或列表；"
                "对整批 token 求和后再除，结果是 0 维。", name=name, kind=type(value).__name__,
           shape=f"（形状 {tuple(value.shape)}）" if hasattr(value, "shape") else "")


# What each classic mistake makes of the five one-token BRANCH_CASES (ratio r, advantage A, eps = 0.2; the tests pass
# logp_old = 0 and logp_new = ln r). Worked out by hand, one per-token loss per case; every failing test of
# clipped_pg_loss names the mistake whose numbers the student's function reproduces, so all its ✗ lines agree.
HINT_DIVIDED = ("得到了 nan 或 inf：多半是把两个 log-prob 相除了（这里 logp_old = 0）。两个 log-prob 相除既不是概率比，"
                "也不是对数概率比；概率比是 exp(logp_new - logp_old)。")
MISTAKES = (
    # ratio = logp_new - logp_old, no exp: r' = ln r = 0, 0.405465, 0.405465, -0.693147, -0.693147; clip(r') = 0.8
    # each; -min(r'A, 0.8A) = -min(0, 1.6), -min(0.405, 0.8), -min(-0.405, -0.8), -min(-0.693, 0.8), -min(0.693, -0.8)
    ((0.0, -0.405465, 0.8, 0.693147, 0.8),
     "概率比没有取 exp：logp_new - logp_old 是对数概率比，它在 0 附近，不在 1 附近（概率比为 1 时它是 0，"
     "于是在区间内的那个 token 损失成了 0）；用 torch.exp 把它变回概率比。"),
    # ratio = exp(logp_old - logp_new) = 1/r = 1, 0.666667, 0.666667, 2, 2; clip: 1, 0.8, 0.8, 1.2, 1.2
    ((-2.0, -0.666667, 0.8, -1.2, 2.0),
     "概率比上下颠倒了：是新策略比旧策略，exp(logp_new - logp_old)，不是 exp(logp_old - logp_new)。"),
    # clip(A) instead of clip(ratio): -min(rA, r * clip(A)) = -min(2, 1.2), -min(1.5, 1.5), -min(-1.5, 1.2), ...
    ((-1.2, -1.5, 1.5, -0.5, 0.5),
     "裁剪的是 advantage：被裁剪的应当是概率比，clip(ratio, 1-ε, 1+ε)·A，advantage 原样乘上去。"),
    # clamp(ratio, max=1 + eps) only: the last case (r = 0.5 < 1 - eps, A < 0) keeps -min(-0.5, -0.5) = 0.5, not 0.8
    ((-2.0, -1.2, 1.5, -0.5, 0.5),
     "只裁剪了上界：概率比低于 1-ε 时也要裁剪（A<0 时那部分不再有奖励），torch.clamp 要同时给出下界和上界。"),
    # -max(rA, clip(r)A): -max(2, 2), -max(1.5, 1.2), -max(-1.5, -1.2), -max(0.5, 0.8), -max(-0.5, -0.8)
    ((-2.0, -1.5, 1.2, -0.8, 0.5),
     "取成了两项中较大的一个：PPO 取较小的（悲观的）那一项，裁剪只会去掉激励，不会增加激励。"),
    # min(rA, clip(r)A) without the minus: every correct value with the opposite sign
    ((2.0, 1.2, -1.5, 0.5, -0.8),
     "每一项都差一个负号：优化器做的是最小化，要最大化的是 min(ratio·A, clip(ratio)·A)，损失是它的相反数。"),
    # right per-token losses over the 5 positions of the row instead of the 1 trained token: -2/5, -1.2/5, ...
    ((-0.4, -0.24, 0.3, -0.1, 0.16),
     "每个 token 的损失都对，但除以了所有位置的个数（序列长度 T 或 B×T）：分母应该是 mask 里 1 的个数 mask.sum()，"
     "padding 和不训练的 token 不能把损失摊薄。"),
    # the sum over all five positions, mask not applied: -2 - 1.2 + 1.5 - 0.5 + 0.8 = -1.4 whichever token is trained
    ((-1.4, -1.4, -1.4, -1.4, -1.4),
     "分子没有乘 mask：mask 为 0 的位置（这里是另外四个 token）的损失也被加了进来。"),
)
GENERIC_CLIP_HINT = ("被裁剪的是概率比，不是 advantage：clip(ratio, 1-ε, 1+ε)·A；再和未裁剪的 ratio·A 取较小的一项。"
                     "A>0 时概率比超过 1+ε 的部分不再有奖励，A<0 时概率比低于 1-ε 的部分不再有奖励。")


def _name_mistake(got: list[float]) -> str | None:
    """The hint of the classic mistake whose one-token losses are `got` (NaN or inf: the log-probs were divided)."""
    if not all(math.isfinite(g) for g in got):
        return HINT_DIVIDED
    for signature, hint in MISTAKES:
        if all(abs(g - want) <= 1e-4 for g, want in zip(got, signature)):
            return hint
    return None


def _branch_losses(clipped_pg_loss) -> list:
    """The loss of each of the five BRANCH_CASES, one token in the mask at a time (tensors, as returned)."""
    import torch

    logp_new = torch.tensor([[math.log(case[0]) for case in BRANCH_CASES]])  # [1, 5] float32
    logp_old = torch.zeros(1, len(BRANCH_CASES))
    advantages = torch.tensor([[case[1] for case in BRANCH_CASES]])
    outs = []
    for i in range(len(BRANCH_CASES)):
        mask = torch.zeros(1, len(BRANCH_CASES))
        mask[0, i] = 1.0  # only token i counts: the token-mean is that token's loss
        outs.append(clipped_pg_loss(logp_new, logp_old, advantages, mask, 0.2))
    return outs


def _diagnose(clipped_pg_loss) -> str | None:
    """The classic mistake in clipped_pg_loss, from its one-token losses (None: not one of MISTAKES)."""
    try:
        return _name_mistake([float(out.detach()) for out in _branch_losses(clipped_pg_loss)])
    except Exception:  # the failing test reports what the student's code raised
        return None


@visible_test(EX, "clipped_pg_loss", "裁剪的几种情况：一次只让一个 token 进入 mask")
def clip_branches(clipped_pg_loss):
    import torch

    outs = _branch_losses(clipped_pg_loss)
    for out in outs:
        _expect_scalar("clipped_pg_loss", out)
    got = [float(out.detach()) for out in outs]
    print("  逐个 token 的损失:", [round(g, 4) for g in got])
    hint = _name_mistake(got) or GENERIC_CLIP_HINT
    for (_, _, want, what), g in zip(BRANCH_CASES, got):
        expect(abs(g - want) <= TOL, "{what_}：得到 {g:.4f}，期望 {want:g}", hint=hint, what_=what, g=g, want=want)
    logp_new = torch.tensor([[math.log(case[0]) for case in BRANCH_CASES]])
    logp_old = torch.zeros(1, len(BRANCH_CASES))
    advantages = torch.tensor([[case[1] for case in BRANCH_CASES]])
    whole = clipped_pg_loss(logp_new, logp_old, advantages, torch.ones(1, len(BRANCH_CASES)), 0.2)
    _expect_scalar("clipped_pg_loss", whole)
    together = float(whole.detach())
    print("  五个 token 一起:   ", round(together, 4))
    expect(abs(together - BRANCH_MEAN) <= TOL,
           "五个 token 都在 mask 里：得到 {together:.4f}，期望 {branch_mean:g}（五个损失的平均）",
           hint="单个 token 都对了，合起来却不对：分母应该是 mask 里 1 的个数。", together=together,
           branch_mean=BRANCH_MEAN)
    return outs + [whole]


def _token_mean_batch(T: int):
    """Two sequences, ratio 1 everywhere (per-token loss = -A). Row 0: A=+1, 3 trained tokens; row 1: A=-1, 1 trained
    token. The advantages fill the whole row (padding too), as a trainer that copies A along the sequence would."""
    import torch

    logp = torch.full((2, T), -0.7)
    advantages = torch.cat([torch.ones(1, T), -torch.ones(1, T)])
    mask = torch.zeros(2, T)
    mask[0, 1:4] = 1.0
    mask[1, 1] = 1.0
    return logp, logp.clone(), advantages, mask


TOKEN_MEAN = (-1.0 * 3 + 1.0 * 1) / 4  # -0.5: four trained tokens


@visible_test(EX, "clipped_pg_loss", "token-mean：分母是 mask 里 1 的个数，补多少 padding 都不变")
def token_mean(clipped_pg_loss):
    outs = []
    for T in (5, 12):
        out = clipped_pg_loss(*_token_mean_batch(T), 0.2)
        _expect_scalar("clipped_pg_loss", out)
        outs.append(out)
    short, padded = (float(o.detach()) for o in outs)
    print(f"  长度 5: {short:.4f}   补到长度 12: {padded:.4f}   （期望都是 {TOKEN_MEAN:g}）")
    hint = _diagnose(clipped_pg_loss) or "把 mask 为 1 的 token 的损失加起来，除以 mask 里 1 的个数（整批一起算）。"
    if _diagnose(clipped_pg_loss) is None and abs(short) <= TOL:
        hint = ("得到 0：先在每条序列里求了平均、再对序列求平均（这里两条序列 A 相反、权重相同，正好抵消）。本题是整批"
                "一起的 token 平均：分子、分母都对整批求和，长序列的每个 token 和短序列的每个 token 权重一样。")
    expect(abs(short - TOKEN_MEAN) <= TOL,
           "两条序列（3 个和 1 个训练 token，A=+1 和 -1，ratio=1）：得到 {short:.4f}，期望 {token_mean:g}", hint=hint,
           short=short, token_mean=TOKEN_MEAN)
    expect(abs(padded - TOKEN_MEAN) <= TOL,
           "同一批数据补 padding 到长度 12：得到 {padded:.4f}，期望仍是 {token_mean:g}",
           hint=_diagnose(clipped_pg_loss) or "padding 的 mask 是 0，不能改变损失：分母不能是序列长度 T。",
           padded=padded, token_mean=TOKEN_MEAN)
    return outs


@visible_test(EX, "clipped_pg_loss", "梯度：只流向 mask 为 1、又没有被裁剪的 token")
def gradient(clipped_pg_loss):
    import math

    import torch

    # ratios 1.0, 1.5, 0.5, 1.0 with A = +1; mask 1, 1, 1, 0 (three trained tokens)
    logp_new = torch.tensor([[0.0, math.log(1.5), math.log(0.5), 0.0]], requires_grad=True)
    logp_old = torch.zeros(1, 4)
    loss = clipped_pg_loss(logp_new, logp_old, torch.ones(1, 4), torch.tensor([[1.0, 1.0, 1.0, 0.0]]), 0.2)
    _expect_scalar("clipped_pg_loss", loss)
    expect(loss.requires_grad, "损失不带梯度（requires_grad=False）：训练时 backward() 会报错",
           hint="ratio 要从 logp_new 算出来并保留计算图，否则损失不带梯度：不要 .detach()、.item()，"
                "也不要放在 torch.no_grad() 里。")
    loss.backward()
    grad = logp_new.grad
    expect(grad is not None, "logp_new 没有得到梯度", hint="损失必须经由 ratio 依赖 logp_new。")
    # d(-ratio * A / n) / d logp_new = -ratio * A / n on the unclipped branch; 0 when clipped or masked
    want = [-1.0 / 3, 0.0, -0.5 / 3, 0.0]
    got = [round(g, 4) + 0.0 for g in grad[0].tolist()]  # + 0.0: no -0.0
    print("  d loss / d logp_new:", got)
    hint = _diagnose(clipped_pg_loss) or ("未被裁剪的训练 token：梯度 = -ratio·A / n（n = mask 里 1 的个数）；"
                                          "取了裁剪项的 token 和 mask 为 0 的 token：0。")
    if _diagnose(clipped_pg_loss) is None and abs(grad[0, 1].item()) > TOL:
        hint = "ratio=1.5、A>0 的 token 取的应该是裁剪项（常数 1.2·A），它不该有梯度：检查 min 和 clamp。"
    expect(all(abs(g - w) <= TOL for g, w in zip(grad[0].tolist(), want)),
           "梯度 {got}，期望 {value}", hint=hint, got=got, value=[round(w, 4) for w in want])
    return [loss, grad]


@visible_test(EX, "token_advantages", "两组各 4 条回答：一组有对有错，一组全对")
def group_broadcast(token_advantages):
    import torch

    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    mask = torch.zeros(8, 5)
    for b in range(8):
        mask[b, 1: 2 + b % 4] = 1.0  # 1 to 4 trained tokens, never position 0
    out = token_advantages(rewards, 4, mask)
    expect(isinstance(out, torch.Tensor), "返回了 {type_out_name}，期望 torch.Tensor", type_out_name=type(out).__name__)
    expect(tuple(out.shape) == (8, 5), "8 条回答、T=5：形状 {shape}，期望 (8, 5)：和 loss_mask 一样",
           hint="每条回答一个 advantage，复制到它的每个训练 token 上：结果是 [B, T]。", shape=tuple(out.shape))
    # group 1: mean 0.5, unbiased std sqrt(1/3); (1 - 0.5) / (sqrt(1/3) + 1e-6) = 0.866024...; group 2: all equal -> 0
    a = 0.5 / ((1.0 / 3) ** 0.5 + 1e-6)
    per_seq = [a, -a, -a, a, 0.0, 0.0, 0.0, 0.0]
    want = [[per_seq[b] * float(m) for m in mask[b].tolist()] for b in range(8)]
    got = out.detach().tolist()
    print("  每条回答第 1 个训练 token 上的 advantage:", [round(row[1], 4) + 0.0 for row in got])
    hint = "先在每组 group_size 条回答内标准化（练习 6 的 group_normalize），再广播到 mask 为 1 的每个 token。"
    if abs(got[0][1] - 1.0) <= TOL:
        hint = "第一条回答得到的是原始奖励 1.0：没有先做组内标准化。"
    elif abs(got[4][1]) > TOL:
        hint = "全对的那一组 advantage 应该全是 0：整批被当成了一组，group_size 是同一道题采样的回答数。"
    close = all(abs(g - w) <= TOL for grow, wrow in zip(got, want) for g, w in zip(grow, wrow))
    expect(close, "奖励 {rewards}、group_size=4：前两行得到 {got}，期望 {want}", hint=hint, rewards=rewards.tolist(),
           got=[[round(x, 3) + 0.0 for x in row] for row in got[:2]],
           want=[[round(x, 3) + 0.0 for x in row] for row in want[:2]])
    return out


ZERO_MASK_HINT = ("mask 全为 0（这一批里没有一个要训练的 token）时分母是 0，0/0 得 nan，整个模型的梯度都会变成 nan："
                  "分母写 mask.sum().clamp(min=1.0)，没有 token 时损失是 0。")


@visible_test(EX, "clipped_pg_loss",
              "约定：mask 全为 0 时返回 0；mask 的 dtype 不影响结果；float64 进、float64 出；形状不一致报 ValueError")
def contract(clipped_pg_loss):
    import torch

    # ratios 1.0 and 1.5 (clipped to 1.2), A = +1 and -0.5: per-token losses -1.0 and 0.75
    logp_new = torch.tensor([[0.0, math.log(1.5), -1.0]], dtype=torch.float64)
    logp_old = torch.tensor([[0.0, 0.0, -1.0]], dtype=torch.float64)
    advantages = torch.tensor([[1.0, -0.5, 2.0]], dtype=torch.float64)
    trained = torch.tensor([[True, True, False]])
    zero = clipped_pg_loss(logp_new, logp_old, advantages, torch.zeros(1, 3, dtype=torch.float64), 0.2)
    _expect_scalar("clipped_pg_loss", zero)
    print(f"  mask 全为 0: {float(zero.detach())}")
    expect(math.isfinite(float(zero.detach())) and float(zero.detach()) == 0.0,
           "mask 全为 0：得到 {got}，期望 0.0", hint=_diagnose(clipped_pg_loss) or ZERO_MASK_HINT,
           got=float(zero.detach()))
    by_dtype = {}
    for name, mask in (("float", trained.double()), ("int", trained.long()), ("bool", trained)):
        out = clipped_pg_loss(logp_new, logp_old, advantages, mask, 0.2)
        _expect_scalar("clipped_pg_loss", out)
        by_dtype[name] = out
    values = {name: round(float(out.detach()), 6) + 0.0 for name, out in by_dtype.items()}
    print(f"  三种 mask 的 dtype: {values}（期望都是 -0.125）")
    expect(all(abs(v + 0.125) <= TOL for v in values.values()),
           "mask 是 float、int、bool 时得到 {values}，期望都是 -0.125（两个训练 token 的损失 -1.0 和 0.75 的平均）",
           hint=_diagnose(clipped_pg_loss)
           or "先把 mask 变成和损失一样的浮点类型（格子里写好的 loss_mask.to(per_token.dtype)），再乘、再求和。",
           values=values)
    dtype = by_dtype["float"].dtype
    expect(dtype == torch.float64, "输入是 float64，损失却是 {dtype}，期望 float64",
           hint="不要用 torch.tensor(...) 或 .float() 新建中间结果：从输入算出来的张量自动保持 float64。", dtype=dtype)
    try:
        clipped_pg_loss(logp_new, logp_old, advantages[:, :2], trained[:, :2], 0.2)
    except ValueError:
        shape_error = "ValueError"
    except Exception as exc:
        shape_error = type(exc).__name__
    else:
        shape_error = None
    expect(shape_error == "ValueError", "四个输入的形状不一致，得到 {got}，期望 ValueError",
           hint="格子开头写好的形状检查不要删：形状对不上时广播会悄悄算出一个错的损失。", got=shape_error or "没有报错")
    return [zero, *by_dtype.values(), shape_error]
