"""Visible tests of exercise 7 (the capstone): the masked, clipped policy-gradient loss and the advantage wiring.

Every expected number below is worked out by hand in a comment (no copy of the loss formula lives in
this package outside agent/loss.py, which the grading sandbox hides). Each test returns the tensors
the student's code returned; run_test records them for grading (dtype, shape and values compared).
torch is imported inside the tests, so that check() of other exercises does not pay for it.
"""
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
    expect(_is_scalar_tensor(value), f"{name} 返回了 {type(value).__name__}"
           + (f"（形状 {tuple(value.shape)}）" if hasattr(value, "shape") else "") + "，期望 0 维张量（一个标量）",
           hint="损失要能 backward()：返回张量本身，不要 .item()、float() 或列表；"
                "对整批 token 求和后再除，结果是 0 维。")


def _branch_hint(got: list[float]) -> str:
    expected = [case[2] for case in BRANCH_CASES]
    if all(abs(g + e) <= TOL for g, e in zip(got, expected)):
        return "每一项都差一个负号：优化器做的是最小化，要最大化的是 min(ratio·A, clip(ratio)·A)，损失是它的相反数。"
    if abs(got[0] - expected[0]) > TOL:
        return ("ratio 在区间内时损失就是 -ratio·A：检查 ratio 是不是由两个 log-prob 之差取指数得到的"
                "（log-prob 之差本身不是概率比，两个 log-prob 相除也不是）。")
    if abs(got[1] + 1.5) <= TOL and abs(got[2] - 1.2) <= TOL:
        return "取成了两项中较大的一个：PPO 取较小的（悲观的）那一项，裁剪只会去掉激励，不会增加激励。"
    return ("被裁剪的是 ratio，不是 advantage：clip(ratio, 1-ε, 1+ε)·A；再和未裁剪的 ratio·A 取较小的一项。"
            "A>0 时 ratio 超过 1+ε 的部分不再有奖励，A<0 时 ratio 低于 1-ε 的部分不再有奖励。")


@visible_test(EX, "clipped_pg_loss", "裁剪的几种情况：一次只让一个 token 进入 mask")
def clip_branches(clipped_pg_loss):
    import math

    import torch

    ratios = [case[0] for case in BRANCH_CASES]
    logp_new = torch.tensor([[math.log(r) for r in ratios]])  # [1, 5] float32
    logp_old = torch.zeros(1, len(ratios))
    advantages = torch.tensor([[case[1] for case in BRANCH_CASES]])
    outs = []
    for i in range(len(BRANCH_CASES)):
        mask = torch.zeros(1, len(ratios))
        mask[0, i] = 1.0  # only token i counts: the token-mean is that token's loss
        out = clipped_pg_loss(logp_new, logp_old, advantages, mask, 0.2)
        _expect_scalar("clipped_pg_loss", out)
        outs.append(out)
    got = [float(out.detach()) for out in outs]
    print("  逐个 token 的损失:", [round(g, 4) for g in got])
    for (_, _, want, what), g in zip(BRANCH_CASES, got):
        expect(abs(g - want) <= TOL, f"{what}：得到 {g:.4f}，期望 {want:g}", hint=_branch_hint(got))
    whole = clipped_pg_loss(logp_new, logp_old, advantages, torch.ones(1, len(ratios)), 0.2)
    _expect_scalar("clipped_pg_loss", whole)
    together = float(whole.detach())
    print("  五个 token 一起:   ", round(together, 4))
    expect(abs(together - BRANCH_MEAN) <= TOL,
           f"五个 token 都在 mask 里：得到 {together:.4f}，期望 {BRANCH_MEAN:g}（五个损失的平均）",
           hint="单个 token 都对了，合起来却不对：分母应该是 mask 里 1 的个数。")
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
    hint = "把 mask 为 1 的 token 的损失加起来，除以 mask 里 1 的个数（整批一起算）。"
    if abs(short) <= TOL:
        hint = ("得到 0：要么先在每条序列里求平均、再对序列求平均（两条序列权重相同，短序列的每个 token 权重更大），"
                "要么没有乘 mask（advantage 在 padding 上也不是 0）。")
    elif abs(short - (-0.2)) <= TOL:
        hint = "得到 -0.2 = -2 / 10：除以了 B×T（所有位置），padding 和不训练的 token 把损失摊薄了。"
    expect(abs(short - TOKEN_MEAN) <= TOL,
           f"两条序列（3 个和 1 个训练 token，A=+1 和 -1，ratio=1）：得到 {short:.4f}，期望 {TOKEN_MEAN:g}", hint=hint)
    expect(abs(padded - TOKEN_MEAN) <= TOL,
           f"同一批数据补 padding 到长度 12：得到 {padded:.4f}，期望仍是 {TOKEN_MEAN:g}",
           hint="padding 的 mask 是 0，不能改变损失：分母不能是序列长度 T。")
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
           hint="ratio 要从 logp_new 算出来并保留计算图：不要 .detach()、.item()，也不要放在 torch.no_grad() 里。")
    loss.backward()
    grad = logp_new.grad
    expect(grad is not None, "logp_new 没有得到梯度", hint="损失必须经由 ratio 依赖 logp_new。")
    # d(-ratio * A / n) / d logp_new = -ratio * A / n on the unclipped branch; 0 when clipped or masked
    want = [-1.0 / 3, 0.0, -0.5 / 3, 0.0]
    got = [round(g, 4) + 0.0 for g in grad[0].tolist()]  # + 0.0: no -0.0
    print("  d loss / d logp_new:", got)
    hint = ("未被裁剪的训练 token：梯度 = -ratio·A / n（n = mask 里 1 的个数）；"
            "取了裁剪项的 token 和 mask 为 0 的 token：0。")
    if abs(grad[0, 1].item()) > TOL:
        hint = "ratio=1.5、A>0 的 token 取的应该是裁剪项（常数 1.2·A），它不该有梯度：检查 min 和 clamp。"
    expect(all(abs(g - w) <= TOL for g, w in zip(grad[0].tolist(), want)),
           f"梯度 {got}，期望 {[round(w, 4) for w in want]}", hint=hint)
    return [loss, grad]


@visible_test(EX, "token_advantages", "两组各 4 条回答：一组有对有错，一组全对")
def group_broadcast(token_advantages):
    import torch

    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    mask = torch.zeros(8, 5)
    for b in range(8):
        mask[b, 1: 2 + b % 4] = 1.0  # 1 to 4 trained tokens, never position 0
    out = token_advantages(rewards, 4, mask)
    expect(isinstance(out, torch.Tensor), f"返回了 {type(out).__name__}，期望 torch.Tensor")
    expect(tuple(out.shape) == (8, 5), f"形状 {tuple(out.shape)}，期望 (8, 5)：和 loss_mask 一样",
           hint="每条回答一个 advantage，复制到它的每个训练 token 上：结果是 [B, T]。")
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
    expect(close, f"前两行得到 {[[round(x, 3) + 0.0 for x in row] for row in got[:2]]}，"
                  f"期望 {[[round(x, 3) + 0.0 for x in row] for row in want[:2]]}", hint=hint)
    return out
