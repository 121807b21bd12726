"""Visible tests of exercise 6 (sequence reward -> tokens): the seed page's example for each strategy.
Each test returns the tensor the student's function returned (run_test records it for grading:
dtype, shape and values are compared, as the exercise asks for float32 [T]).

Every failing test gives the hint of the mistake its function's diagnosis finds (diagnose_last, diagnose_uniform,
diagnose_kl): each classic mistake leaves its own signature on the seed mask or a few small ones; an exception
raised by the student's line is traced to its TODO (EXCEPTION_HINTS).

The original page's expected outputs are right: last -> index 7; uniform 0.2 on
each of the 5 trained tokens; KL-weighted index 5 gets 2.0 / 3.0.
torch is imported inside the tests, so that check() of other exercises does not pay for it.
"""
from agentrl_ref.checks import _is_blank, expect, visible_test

EX = "ex6_token_credit"
MASK = [0, 0, 1, 1, 0, 1, 1, 1, 0]  # 5 assistant tokens
KL = [0.0, 0.0, 0.1, 0.5, 0.0, 2.0, 0.1, 0.3, 0.0]
TOL = 1e-5

FIRST_HINT = ("TODO 1：nonzero() 的结果是 [k, 1] 形状，[0] 取的是第一个下标那一行；要全部下标压成一维："
              "(loss_mask > 0).nonzero().flatten()，下面写好的代码再取其中最后一个。")
TUPLE_HINT = ("TODO 1：nonzero(as_tuple=True) 返回的是一个元组（每一维一个下标张量），不是下标张量："
              "用 (loss_mask > 0).nonzero().flatten()。")
MASK_ITSELF_HINT = "TODO 1：nz 要的是 mask 为 1 的位置（下标），不是 mask 本身：(loss_mask > 0).nonzero().flatten()。"
SQUEEZE_HINT = ("TODO 1：只有一个训练 token 时 nonzero() 是 [1, 1]，squeeze() 把它压成 0 维（没有 len）："
                "用 flatten()，它总是给出一维。")
EMPTY_HINT = ("TODO 1：mask 全为 0 时 nonzero() 是空的，不能在这里取 [-1]：nz 是全部下标（flatten()），"
              "下面写好的 if len(nz) > 0 会处理空的情况。")
N_HINT = "TODO 2a：n 是 mask 里 1 的个数（loss_mask.sum().item()），不是序列长度 T：5 个训练 token 各得 1/5。"
INDEX_HINT = ("TODO 2b：选位置要用布尔张量（loss_mask.bool()）：整数张量当下标，"
              "[0, 0, 1, 1, …] 选的是第 0 个、第 1 个元素，"
              "浮点张量根本不能当下标。")
KL_ALL_HINT = "TODO 3：权重用 masked_kl（mask 为 0 处已清零），不用 kl_per_token：不训练的位置一分都不该分到。"
KL_TOTAL_HINT = "TODO 3：分母是 total（masked_kl 的和，只加训练 token 上的 KL），不是全部 KL 的和：权重合起来要是 1。"
SOFTMAX_HINT = ("TODO 3：按比例分：masked_kl / total，不是 softmax：softmax 把 mask 为 0 的位置也分到了，"
                "而且不按 KL 的比例。")
KL_HINT = "TODO 3：权重 = masked_kl / total：训练 token 上的 KL 占它们总和的比例。"
EXCEPTION_HINTS = {
    ("TODO 1", "RuntimeError"): TUPLE_HINT,
    ("TODO 1", "TypeError"): SQUEEZE_HINT,
    ("TODO 1", "IndexError"): EMPTY_HINT,
    ("TODO 2b", "IndexError"): INDEX_HINT,
}


def _seed_inputs():
    import torch

    return torch.tensor(MASK), torch.tensor(KL)


def _values(fn, *args) -> list[float] | None:
    """fn's output as a list of floats; None if it raised or is no tensor of the mask's length."""
    try:
        out = fn(*args)
        values = [float(v) for v in out.tolist()]
    except Exception:
        return None
    return values if len(values) == len(args[1]) else None


def diagnose_last(assign_reward_last_token) -> str | None:
    """TODO 1's mistake: where the seed's reward lands, then a mask of one trained token, then an all-zero mask."""
    import torch

    for mask in (MASK, [0, 0, 1, 0], [0, 0, 0, 0]):
        try:
            out = assign_reward_last_token(1.0, torch.tensor(mask))
            got = [float(v) for v in out.tolist()]
        except Exception as exc:
            if _is_blank(exc):
                return None
            return {"RuntimeError": TUPLE_HINT, "TypeError": SQUEEZE_HINT, "IndexError": EMPTY_HINT}.get(
                type(exc).__name__)
        trained = [i for i, m in enumerate(mask) if m]
        if got != [1.0 if trained and i == trained[-1] else 0.0 for i in range(len(mask))]:
            first_true = trained[0] if trained else None
            if trained and got[first_true] == 1.0:
                return FIRST_HINT
            return MASK_ITSELF_HINT if got and got[0] == 1.0 else FIRST_HINT
    return None


def diagnose_uniform(assign_reward_uniform) -> str | None:
    """TODO 2a (n) or 2b (which positions) from the seed mask."""
    import torch

    try:
        got = [float(v) for v in assign_reward_uniform(1.0, torch.tensor(MASK)).tolist()]
    except Exception as exc:
        return None if _is_blank(exc) else INDEX_HINT
    if [i for i, g in enumerate(got) if g] != [i for i, m in enumerate(MASK) if m]:
        return INDEX_HINT
    if any(abs(g - 1.0 / len(MASK)) <= TOL for g in got if g):
        return N_HINT
    return None if all(abs(g - 0.2) <= TOL for g in got if g) else N_HINT


def diagnose_kl(assign_reward_kl_weighted) -> str | None:
    """TODO 3's mistake, from a mask with large KL where nothing is trained."""
    import torch

    mask, kl = torch.tensor([1, 0, 1, 1, 0]), torch.tensor([1.0, 7.0, 1.0, 2.0, 5.0])
    got = _values(assign_reward_kl_weighted, 1.0, mask, kl)
    if got is None:
        return None
    if all(abs(g - w) <= 1e-4 for g, w in zip(got, [0.25, 0.0, 0.25, 0.5, 0.0])):
        return None
    if all(abs(g - k / 16.0) <= 1e-4 for g, k in zip(got, [1.0, 7.0, 1.0, 2.0, 5.0])):
        return KL_ALL_HINT
    if all(abs(g - k * m / 16.0) <= 1e-4 for g, k, m in zip(got, [1.0, 7.0, 1.0, 2.0, 5.0], [1, 0, 1, 1, 0])):
        return KL_TOTAL_HINT
    if got[1] > 0 and abs(sum(got) - 1.0) <= 1e-4:
        return SOFTMAX_HINT
    return KL_HINT


def _expect_vector(call: str, out, expected: list[float], hint: str):
    """Check out against expected (a float32 tensor as long as the mask, values within TOL) and return it."""
    import torch

    expect(isinstance(out, torch.Tensor), "{call} 返回了 {kind}，期望 torch.Tensor", hint=hint, call=call,
           kind=type(out).__name__)
    expect(tuple(out.shape) == (len(expected),), "{call} 的形状是 {shape}，期望 ({n},)：和 mask 一样长", hint=hint,
           call=call, shape=tuple(out.shape), n=len(expected))
    expect(out.dtype == torch.float32, "{call} 的 dtype 是 {dtype}，期望 torch.float32",
           hint="三个函数都返回 float32 张量（mask 是 bool、int 还是 float 都一样），不要把中间结果换成别的 dtype。",
           call=call, dtype=str(out.dtype))
    got = [round(v, 4) + 0.0 for v in out.tolist()]
    close = all(abs(a - b) <= TOL for a, b in zip(out.tolist(), expected))
    expect(close, "{call} 得到 {got}，期望 {want}", hint=hint, call=call, got=got,
           want=[round(v, 4) + 0.0 for v in expected])
    return out


@visible_test(EX, "token_credit", "最后一个 token：原页面的例子")
def seed_last_token(assign_reward_last_token):
    mask, _ = _seed_inputs()
    out = _call(f"assign_reward_last_token(1.0, {MASK})", assign_reward_last_token, (1.0, mask),
                diagnose_last(assign_reward_last_token) or FIRST_HINT)
    print("  last:       ", out)
    return _expect_vector(f"assign_reward_last_token(1.0, {MASK})", out, [0, 0, 0, 0, 0, 0, 0, 1.0, 0],
                          hint=diagnose_last(assign_reward_last_token) or FIRST_HINT)


@visible_test(EX, "token_credit", "均摊：原页面的例子")
def seed_uniform(assign_reward_uniform):
    mask, _ = _seed_inputs()
    hint = diagnose_uniform(assign_reward_uniform) or N_HINT
    out = _call(f"assign_reward_uniform(1.0, {MASK})", assign_reward_uniform, (1.0, mask), hint)
    print("  uniform:    ", out)
    return _expect_vector(f"assign_reward_uniform(1.0, {MASK})", out, [0.2 * m for m in MASK], hint=hint)


@visible_test(EX, "token_credit", "按 KL 加权：原页面的例子")
def seed_kl_weighted(assign_reward_kl_weighted):
    mask, kl = _seed_inputs()
    hint = diagnose_kl(assign_reward_kl_weighted) or KL_HINT
    out = _call(f"assign_reward_kl_weighted(1.0, {MASK}, {KL})", assign_reward_kl_weighted, (1.0, mask, kl), hint)
    print("  kl_weighted:", out)
    total = sum(k * m for k, m in zip(KL, MASK))
    return _expect_vector(f"assign_reward_kl_weighted(1.0, {MASK}, {KL})", out,
                          [k * m / total for k, m in zip(KL, MASK)], hint=hint)


def _call(call: str, fn, args: tuple, hint: str):
    """fn(*args); an exception other than an unfilled blank becomes a failed check with the hint."""
    try:
        return fn(*args)
    except Exception as exc:
        if _is_blank(exc):
            raise
        expect(False, "{call} 抛出了 {error}", hint=hint, call=call, error=type(exc).__name__)


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
        hint = diagnose_last(assign_reward_last_token) or {"只有一个训练 token": SQUEEZE_HINT,
                                                           "mask 全为 0": EMPTY_HINT}.get(
            what, "TODO 1：mask 可以是 bool、int 或 float：先变成“哪些位置是 1”（loss_mask > 0）再找下标。")
        call = f"{what}：assign_reward_last_token(2.0, {mask.tolist()})"
        outs.append(_expect_vector(call, _call(call, assign_reward_last_token, (2.0, mask), hint), want, hint))
    return outs


@visible_test(EX, "token_credit", "均摊：mask 全为 0、bool 和 float 的 mask")
def uniform_masks(assign_reward_uniform):
    outs = []
    for what, mask, trained in _mask_cases()[1:]:
        n = sum(trained)
        want = [(-3.0 / n if t else 0.0) for t in trained] if n else [0.0] * len(trained)
        hint = diagnose_uniform(assign_reward_uniform) or (
            "TODO 2a：mask 全为 0 时没有 token 可分：结果全是 0（格子里写好的 if n == 0 会处理，n 要是 Python 的数）。"
            if not n else INDEX_HINT)
        call = f"{what}：assign_reward_uniform(-3.0, {mask.tolist()})"
        outs.append(_expect_vector(call, _call(call, assign_reward_uniform, (-3.0, mask), hint), want, hint))
    return outs


@visible_test(EX, "token_credit", "按 KL 加权：mask 为 0 的位置上的 KL 不算")
def kl_outside_mask(assign_reward_kl_weighted):
    import torch

    mask = torch.tensor([1, 0, 1, 1, 0])
    kl = torch.tensor([1.0, 7.0, 1.0, 2.0, 5.0])  # the 7.0 and 5.0 sit where nothing is trained
    want = [0.25, 0.0, 0.25, 0.5, 0.0]  # 1 / 4, 1 / 4, 2 / 4 of the reward 1.0
    hint = diagnose_kl(assign_reward_kl_weighted) or KL_HINT
    call = "assign_reward_kl_weighted(1.0, [1, 0, 1, 1, 0], [1, 7, 1, 2, 5])"
    out = _call(call, assign_reward_kl_weighted, (1.0, mask, kl), hint)
    print("  kl_weighted:", out)
    return _expect_vector(call, out, want, hint=hint)


@visible_test(EX, "token_credit", "奖励一分不差地分完，mask 为 0 的位置一律是 0（三种策略）")
def conservation(assign_reward_last_token, assign_reward_uniform, assign_reward_kl_weighted):
    import torch

    mask = torch.tensor([0, 1, 1, 0, 1, 1, 1, 0])
    kl = torch.tensor([0.3, 0.2, 0.9, 0.4, 0.1, 0.6, 0.2, 0.8])
    outs = []
    for name, fn, args, diagnose in (
            ("assign_reward_last_token", assign_reward_last_token, (-1.5, mask), diagnose_last),
            ("assign_reward_uniform", assign_reward_uniform, (-1.5, mask), diagnose_uniform),
            ("assign_reward_kl_weighted", assign_reward_kl_weighted, (-1.5, mask, kl), diagnose_kl)):
        hint = diagnose(fn) or "每个函数只在 mask 为 1 的位置上写奖励，写进去的合起来正好是 seq_reward。"
        out = _call(f"{name}(-1.5, {mask.tolist()}, …)", fn, args, hint)
        expect(isinstance(out, torch.Tensor) and tuple(out.shape) == (8,),
               "{name}(-1.5, {mask}, …) 返回了 {kind}，期望形状 (8,) 的张量", hint=hint, name=name,
               mask=mask.tolist(), kind=type(out).__name__)
        total, outside = float(out.sum()), [round(v, 4) + 0.0 for v, m in zip(out.tolist(), mask.tolist()) if not m]
        print(f"  {name:26s} 合计 {total:+.4f}（期望 -1.5）  mask 为 0 处 {outside}")
        expect(abs(total + 1.5) <= TOL, "{name}(-1.5, {mask}, …) 的合计是 {total:.4f}，期望 -1.5：奖励要一分不差地分完",
               hint=hint, name=name, mask=mask.tolist(), total=total)
        expect(all(v == 0 for v in outside), "{name}(-1.5, {mask}, …) 在 mask 为 0 的位置上是 {outside}，期望全是 0",
               hint=hint, name=name, mask=mask.tolist(), outside=outside)
        outs.append(out)
    return outs
