"""Visible tests of exercise 6 (sequence reward -> tokens): the seed page's example for each strategy.
Each test returns the tensor the student's function returned (run_test records it for grading:
dtype, shape and values are compared, as the exercise asks for float32 [T]).

The original page's expected outputs are right: last -> index 7; uniform 0.2 on
each of the 5 trained tokens; KL-weighted index 5 gets 2.0 / 3.0.
torch is imported inside the tests, so that check() of other exercises does not pay for it.
"""
from agentrl_ref.checks import expect, visible_test

EX = "ex6_token_credit"
MASK = [0, 0, 1, 1, 0, 1, 1, 1, 0]  # 5 assistant tokens
KL = [0.0, 0.0, 0.1, 0.5, 0.0, 2.0, 0.1, 0.3, 0.0]
TOL = 1e-5


def _seed_inputs():
    import torch

    return torch.tensor(MASK), torch.tensor(KL)


def _expect_vector(name: str, out, expected: list[float], hint: str):
    """Check out against expected (shape, dtype, values within TOL) and return it."""
    import torch

    expect(isinstance(out, torch.Tensor), f"{name} 返回了 {type(out).__name__}，期望 torch.Tensor", hint=hint)
    expect(tuple(out.shape) == (len(MASK),), f"{name} 的形状是 {tuple(out.shape)}，期望 ({len(MASK)},)：和 mask 一样长",
           hint=hint)
    expect(out.dtype == torch.float32, f"{name} 的 dtype 是 {out.dtype}，期望 torch.float32",
           hint="三个函数都返回 float32 张量，不要把中间结果换成别的 dtype。")
    got = [round(v, 4) for v in out.tolist()]
    close = all(abs(a - b) <= TOL for a, b in zip(out.tolist(), expected))
    expect(close, f"{name} 得到 {got}，期望 {[round(v, 4) for v in expected]}", hint=hint)
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
