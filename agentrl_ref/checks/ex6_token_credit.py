"""Visible tests of exercise 6 (sequence reward -> tokens): the seed page's example for each strategy.
Each test returns the tensor the student's function returned (run_test records it for grading:
dtype, shape and values are compared, as the exercise asks for float32 [T]).

The original page's expected outputs are right: last -> index 7; uniform 0.2 on
each of the 5 trained tokens; KL-weighted index 5 gets 2.0 / 3.0.
torch is imported inside the tests, so that check() of other exercises does not pay for it.
"""
from agentrl_ref.checks import _is_blank, expect, visible_test

EX = "ex6_token_credit"
MASK = [0, 0, 1, 1, 0, 1, 1, 1, 0]  # 5 assistant tokens
KL = [0.0, 0.0, 0.1, 0.5, 0.0, 2.0, 0.1, 0.3, 0.0]
TOL = 1e-5


def _seed_inputs():
    import torch

    return torch.tensor(MASK), torch.tensor(KL)


def _expect_vector(name: str, out, expected: list[float], hint: str):
    """Check out against expected (a float32 tensor as long as the mask, values within TOL) and return it."""
    import torch

    expect(isinstance(out, torch.Tensor), f"{name} 返回了 {type(out).__name__}，期望 torch.Tensor", hint=hint)
    expect(tuple(out.shape) == (len(expected),),
           f"{name} 的形状是 {tuple(out.shape)}，期望 ({len(expected)},)：和 mask 一样长", hint=hint)
    expect(out.dtype == torch.float32, f"{name} 的 dtype 是 {out.dtype}，期望 torch.float32",
           hint="三个函数都返回 float32 张量（mask 是 bool、int 还是 float 都一样），不要把中间结果换成别的 dtype。")
    got = [round(v, 4) + 0.0 for v in out.tolist()]
    close = all(abs(a - b) <= TOL for a, b in zip(out.tolist(), expected))
    expect(close, f"{name} 得到 {got}，期望 {[round(v, 4) + 0.0 for v in expected]}", hint=hint)
    return out


@visible_test(EX, "token_credit", "最后一个 token：原页面的例子")
def seed_last_token(assign_reward_last_token):
    mask, _ = _seed_inputs()
    out = assign_reward_last_token(1.0, mask)
    print("  last:       ", out)
    return _expect_vector("assign_reward_last_token(1.0, mask)", out, [0, 0, 0, 0, 0, 0, 0, 1.0, 0],
                          hint="mask=1 的最后一个位置是下标 7。nonzero() 返回形状 [k, 1] 的下标，展平成一维再取 [-1]；"
                               "[0] 取的是第一个。")


@visible_test(EX, "token_credit", "均摊：原页面的例子")
def seed_uniform(assign_reward_uniform):
    mask, _ = _seed_inputs()
    out = assign_reward_uniform(1.0, mask)
    print("  uniform:    ", out)
    return _expect_vector("assign_reward_uniform(1.0, mask)", out, [0.2 * m for m in MASK],
                          hint="5 个训练 token 各得 1/5：n 是 mask 里 1 的个数（不是序列长度 T）；"
                               "下标要用布尔张量，整数张量做下标会被当成位置列表。")


@visible_test(EX, "token_credit", "按 KL 加权：原页面的例子")
def seed_kl_weighted(assign_reward_kl_weighted):
    mask, kl = _seed_inputs()
    out = assign_reward_kl_weighted(1.0, mask, kl)
    print("  kl_weighted:", out)
    total = sum(k * m for k, m in zip(KL, MASK))
    return _expect_vector("assign_reward_kl_weighted(1.0, mask, kl)", out,
                          [k * m / total for k, m in zip(KL, MASK)],
                          hint="权重 = 训练 token 上的 KL / 这些 KL 的和：下标 5 的 KL 是 2.0，总和 3.0，"
                               "所以它分到 2/3。")


def _call(name: str, fn, args: tuple, hint: str):
    """fn(*args); an exception other than an unfilled blank becomes a failed check with the hint."""
    try:
        return fn(*args)
    except Exception as exc:
        if _is_blank(exc):
            raise
        expect(False, f"{name} 抛出了 {type(exc).__name__}: {exc}", hint=hint)


def _mask_cases():
    """(what, mask, expected positions trained): one trained token, none, a bool mask, a float mask."""
    import torch

    return [
        ("只有一个训练 token", torch.tensor([0, 0, 1, 0]), [0, 0, 1, 0]),
        ("mask 全为 0", torch.zeros(4, dtype=torch.long), [0, 0, 0, 0]),
        ("bool 的 mask", torch.tensor([True, True, False, True]), [1, 1, 0, 1]),
        ("float 的 mask", torch.tensor([0.0, 1.0, 1.0, 0.0]), [0, 1, 1, 0]),
    ]


@visible_test(EX, "token_credit", "最后一个 token：只有一个训练 token、mask 全为 0、bool 和 float 的 mask")
def last_token_masks(assign_reward_last_token):
    outs = []
    for what, mask, trained in _mask_cases():
        last = max((i for i, t in enumerate(trained) if t), default=None)
        want = [2.0 if i == last else 0.0 for i in range(len(trained))]
        hint = {"只有一个训练 token":
                "只有一个 1 时 nonzero() 是 [1, 1]：用 flatten() 压成一维，squeeze() 会把它压成 0 维。",
                "mask 全为 0":
                "没有训练 token 时结果全是 0：nonzero() 是空的，不能直接取 [-1]（格子里写好的 if 会处理）。"
                }.get(what, "mask 可以是 bool、int 或 float：先变成“哪些位置是 1”（loss_mask > 0）再找下标。")
        name = f"{what}：assign_reward_last_token(2.0, {mask.tolist()})"
        outs.append(_expect_vector(name, _call(name, assign_reward_last_token, (2.0, mask), hint), want, hint))
    return outs


@visible_test(EX, "token_credit", "均摊：mask 全为 0、bool 和 float 的 mask")
def uniform_masks(assign_reward_uniform):
    outs = []
    for what, mask, trained in _mask_cases()[1:]:
        n = sum(trained)
        want = [(-3.0 / n if t else 0.0) for t in trained] if n else [0.0] * len(trained)
        hint = ("mask 全为 0 时没有 token 可分：结果全是 0（格子里写好的 if n == 0 会处理，n 要是 Python 的数）。"
                if not n else "n 是 mask 里 1 的个数；选位置要用布尔张量（loss_mask.bool()），"
                              "整数或浮点张量做下标不行。")
        name = f"{what}：assign_reward_uniform(-3.0, {mask.tolist()})"
        outs.append(_expect_vector(name, _call(name, assign_reward_uniform, (-3.0, mask), hint), want, hint))
    return outs


@visible_test(EX, "token_credit", "按 KL 加权：mask 为 0 的位置上的 KL 不算")
def kl_outside_mask(assign_reward_kl_weighted):
    import torch

    mask = torch.tensor([1, 0, 1, 1, 0])
    kl = torch.tensor([1.0, 7.0, 1.0, 2.0, 5.0])  # the 7.0 and 5.0 sit where nothing is trained
    want = [0.25, 0.0, 0.25, 0.5, 0.0]  # 1 / 4, 1 / 4, 2 / 4 of the reward 1.0
    out = assign_reward_kl_weighted(1.0, mask, kl)
    print("  kl_weighted:", out)
    return _expect_vector("assign_reward_kl_weighted(1.0, [1, 0, 1, 1, 0], [1, 7, 1, 2, 5])", out, want,
                          hint="权重 = masked_kl / 它的总和：分母只加训练 token 上的 KL（这里 1 + 1 + 2 = 4），"
                               "mask 为 0 处的 7 和 5 不算。")


@visible_test(EX, "token_credit", "奖励一分不差地分完，mask 为 0 的位置一律是 0（三种策略）")
def conservation(assign_reward_last_token, assign_reward_uniform, assign_reward_kl_weighted):
    import torch

    mask = torch.tensor([0, 1, 1, 0, 1, 1, 1, 0])
    kl = torch.tensor([0.3, 0.2, 0.9, 0.4, 0.1, 0.6, 0.2, 0.8])
    outs = []
    for name, fn, args in (("assign_reward_last_token", assign_reward_last_token, (-1.5, mask)),
                           ("assign_reward_uniform", assign_reward_uniform, (-1.5, mask)),
                           ("assign_reward_kl_weighted", assign_reward_kl_weighted, (-1.5, mask, kl))):
        out = fn(*args)
        expect(isinstance(out, torch.Tensor) and tuple(out.shape) == (8,),
               f"{name} 返回了 {out!r}，期望形状 (8,) 的张量")
        total, outside = float(out.sum()), [round(v, 4) + 0.0 for v, m in zip(out.tolist(), mask.tolist()) if not m]
        print(f"  {name:26s} 合计 {total:+.4f}（期望 -1.5）  mask 为 0 处 {outside}")
        expect(abs(total + 1.5) <= TOL, f"{name}(-1.5, …) 的合计是 {total:.4f}，期望 -1.5：奖励要一分不差地分完")
        expect(all(v == 0 for v in outside), f"{name}(-1.5, …) 在 mask 为 0 的位置上是 {outside}，期望全是 0")
        outs.append(out)
    return outs
