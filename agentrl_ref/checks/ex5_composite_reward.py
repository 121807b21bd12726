"""Visible tests of exercise 5 (composite reward): cosine endpoints, the seed's example with its true values, key
checks. Each test returns what it observed (the student's outputs), which run_test records for grading.

Every failing test gives the hint of the mistake its function's diagnosis finds (diagnose_cosine, diagnose_fn);
the seed example, which needs both functions, says to fix cosine_length_reward first when that one is wrong.

The seed page's expected output is wrong: for its 62-character completion cos_len is 0.964 and total
1.293, not "≈ 0" and "≈ 1.1". The test checks those true values as constants.
"""
from agentrl_ref.checks import expect, visible_test

EX = "ex5_composite_reward"

SEED_COMPLETION = "<think>23*17 = 23*17 = 391</think><answer>\\boxed{391}</answer>"  # 62 characters
SEED_WEIGHTS = {"fmt": 0.1, "acc": 1.0, "cos_len": 0.2}
SEED_COS_LEN = 0.964   # 0.5 * (1 + cos(pi * 62 / 512)) = 0.96425...
SEED_TOTAL = 1.293     # 0.1 * 1 + 1.0 * 1 + 0.2 * 0.96425 = 1.29285...
TOLERANCE = 1e-3

LONG_IS_BEST_HINT = ("TODO 1：答对的一支是 1.0 - cos_factor：越短越好，L=0 得 1.0，L=max_len 得 0.0"
                     "（cos_factor 在这两点分别是 0 和 1）。原页面 docstring 写的方向是反的。")
SWAPPED_HINT = ("TODO 1：两支写反了：acc > 0.5（答对）走 1.0 - cos_factor，从 1.0 滑到 0.0；答错走 -1.0 + cos_factor，"
                "从 -1.0 爬到 0.0。")
CORRECT_HINT = "TODO 1：答对的一支是 1.0 - cos_factor：L=0 得 1.0，沿半个余弦降到 L=max_len 的 0.0。"
WRONG_HINT = ("TODO 1：答错的一支是 -1.0 + cos_factor：L=0 时 -1（又短又错罚得最重），随长度升到 0；"
              "它和答对的一支 1.0 - cos_factor 正好互为相反数。")
CLAMP_HINT = ("TODO 1：两支都只用 cos_factor：它由截断到 1 的 ratio 算出。"
              "自己用 len(completion) / max_len 再算一遍就丢了截断，"
              "过了 max_len，cos 会掉头往回走。")
KEYS_HINT = ("TODO 2：两张表的 key 要完全一样：set(weights) == set(funcs)。只比个数、只查一边是另一边的子集，"
             "都会漏掉一种错。")
SUM_HINT = ("TODO 3：total 是每个分量乘以它自己的权重再相加：sum(weights[k] * scores[k] for k in weights)，"
            "不是分量的直接求和或平均。")
ZIP_HINT = "TODO 3：按名字配对：weights[k] * scores[k]。两张表的书写顺序可以不同，按位置 zip 会配错。"
COSINE_FIRST = ("先修好 TODO 1（cosine_length_reward）：这个例子的 cos_len 就是它算的。"
                "上面 check(\"cosine_length_reward\") 全部通过以后，再看这里。")


def _close(got, want: float, tol: float = 1e-6) -> bool:
    return isinstance(got, (int, float)) and abs(got - want) <= tol


def _show(value) -> str:
    return f"{value:+.3f}" if isinstance(value, (int, float)) else repr(value)


def diagnose_cosine(cosine_length_reward) -> str | None:
    """The mistake in TODO 1, from the two branches at L/max_len = 0, 1/2 and past 1 (None: none found)."""
    n = len(SEED_COMPLETION)
    try:
        right0 = cosine_length_reward(SEED_COMPLETION, "391", max_len=10**9)
        wrong0 = cosine_length_reward(SEED_COMPLETION, "392", max_len=10**9)
        right_half = cosine_length_reward(SEED_COMPLETION, "391", max_len=2 * n)
        wrong_half = cosine_length_reward(SEED_COMPLETION, "392", max_len=2 * n)
        right_past = cosine_length_reward(SEED_COMPLETION, "391", max_len=n // 2)
        wrong_past = cosine_length_reward(SEED_COMPLETION, "392", max_len=n // 2)
    except Exception:  # the failing test reports what the student's code raised
        return None
    if not all(isinstance(v, (int, float)) for v in (right0, wrong0, right_half, wrong_half, right_past, wrong_past)):
        return None
    if _close(right0, -1.0, 1e-3) and _close(wrong0, 1.0, 1e-3):
        return SWAPPED_HINT
    if _close(right0, 0.0, 1e-3):
        return LONG_IS_BEST_HINT
    if not (_close(right0, 1.0, 1e-3) and _close(right_half, 0.5)):
        return CORRECT_HINT
    if not (_close(wrong0, -1.0, 1e-3) and _close(wrong_half, -0.5)):
        return WRONG_HINT
    if not (_close(right_past, 0.0) and _close(wrong_past, 0.0)):
        return CLAMP_HINT
    return None


def diagnose_fn(make_reward_fn) -> str | None:
    """The mistake in TODO 2 (a key mismatch not refused) or TODO 3 (the total), None if neither shows."""
    one, quarter = (lambda c, g: 1.0), (lambda c, g: 0.25)
    for weights in ({"fmt": 1.0}, {"fmt": 1.0, "len": 0.5}, {"fmt": 0.1, "acc": 1.0, "rep": -0.5}):
        try:
            make_reward_fn(weights, {"fmt": one, "acc": one})
        except ValueError:
            continue
        except Exception:
            return None
        return KEYS_HINT
    try:
        total = make_reward_fn({"b": 2.0, "a": -1.0}, {"a": one, "b": quarter})("x", "y")["total"]
    except Exception:
        return None
    if _close(total, 1.25) or _close(total, 0.625):
        return SUM_HINT
    if _close(total, 1.75):
        return ZIP_HINT
    return None if _close(total, -0.5) else SUM_HINT


@visible_test(EX, "cosine_length_reward", "长度两端与中点的取值（答对、答错各 3 个点）")
def cosine_endpoints(cosine_length_reward):
    n = len(SEED_COMPLETION)
    # max_len chosen so that L / max_len is (almost) 0, exactly 0.5 and exactly 1
    points = [("≈0", 10**9, 1.0, -1.0), ("0.5", 2 * n, 0.5, -0.5), ("1", n, 0.0, 0.0)]
    rows = []
    for label, max_len, want_correct, want_wrong in points:
        got_correct = cosine_length_reward(SEED_COMPLETION, "391", max_len=max_len)
        got_wrong = cosine_length_reward(SEED_COMPLETION, "392", max_len=max_len)
        rows.append((label, max_len, got_correct, want_correct, got_wrong, want_wrong))
        print(f"  L/max_len = {label:>3}   答对 {_show(got_correct)}（期望 {want_correct:+.1f}）"
              f"   答错 {_show(got_wrong)}（期望 {want_wrong:+.1f}）")
    for label, max_len, got_correct, want_correct, got_wrong, want_wrong in rows:
        expect(_close(got_correct, want_correct),
               "原页面的回答（{n} 个字符）答对、L/max_len = {label}（max_len={max_len}）：得到 {got!r}，期望 {want}",
               hint=diagnose_cosine(cosine_length_reward) or CORRECT_HINT, n=n, label=label, max_len=max_len,
               got=got_correct, want=want_correct)
        expect(_close(got_wrong, want_wrong),
               "原页面的回答（{n} 个字符）答错、L/max_len = {label}（max_len={max_len}）：得到 {got!r}，期望 {want}",
               hint=diagnose_cosine(cosine_length_reward) or WRONG_HINT, n=n, label=label, max_len=max_len,
               got=got_wrong, want=want_wrong)
    return [[got_correct, got_wrong] for _, _, got_correct, _, got_wrong, _ in rows]


@visible_test(EX, "make_reward_fn", "原页面的例子：fmt、acc、cos_len 与加权 total")
def seed_example(make_reward_fn, cosine_length_reward, format_reward, accuracy_reward):
    funcs = {
        "fmt": lambda c, g: format_reward(c),
        "acc": lambda c, g: accuracy_reward(c, g),
        "cos_len": cosine_length_reward,
    }
    R = make_reward_fn(SEED_WEIGHTS, funcs)
    scores = R(SEED_COMPLETION, "391")
    print(f"  R(c, '391') = {scores}")
    hint = (COSINE_FIRST if diagnose_cosine(cosine_length_reward) else None) or diagnose_fn(make_reward_fn)
    expect(isinstance(scores, dict), "R 应返回 dict，得到 {kind}",
           hint=hint or "TODO 3：composite 返回 scores 字典，里面有每个分量和 \"total\"。", kind=type(scores).__name__)
    expect(set(scores) == {"fmt", "acc", "cos_len", "total"}, "返回的键是 {keys}，期望 fmt、acc、cos_len 和 total",
           hint=hint or "TODO 3：scores 里每个分量一项，再加一项 \"total\"。", keys=sorted(scores))
    expect(scores["fmt"] == 1.0 and scores["acc"] == 1.0, "fmt = {fmt!r}、acc = {acc!r}，两项都应为 1.0",
           hint=hint or "每个分量的原始分数原样留在 dict 里。", fmt=scores["fmt"], acc=scores["acc"])
    expect(_close(scores["cos_len"], SEED_COS_LEN, TOLERANCE),
           "原页面的回答：cos_len = {got!r}，期望 ≈ {want}（{n} 个字符，max_len 512）",
           hint=hint or "原页面写的 \"cos_len≈0\" 是错的：62/512 很小，答对又短，应当接近 1。",
           got=scores["cos_len"], want=SEED_COS_LEN, n=len(SEED_COMPLETION))
    expect(_close(scores["total"], SEED_TOTAL, TOLERANCE),
           "原页面的例子：total = {got!r}，期望 ≈ {want}（= 0.1·fmt + 1.0·acc + 0.2·cos_len）",
           hint=hint or SUM_HINT, got=scores["total"], want=SEED_TOTAL)
    return scores


@visible_test(EX, "make_reward_fn", "weights 里有、funcs 里没有的 key 要报 ValueError")
def key_mismatch(make_reward_fn):
    funcs = {"fmt": lambda c, g: 1.0, "acc": lambda c, g: 1.0}
    weights = {"fmt": 0.1, "acc": 1.0, "rep": -0.5}  # "rep" has no function
    try:
        make_reward_fn(weights, funcs)
    except ValueError as exc:
        print(f"  ValueError: {exc}")
        expect("rep" in str(exc), "weights 多了 'rep'：报错信息 {message!r} 没有提到缺函数的 key 'rep'",
               hint="格子里写好的 raise 会列出缺的和多的名字：TODO 2 只写条件。", message=str(exc))
        return type(exc).__name__
    except AssertionError:
        expect(False, "weights 多了 'rep'：make_reward_fn 抛出了 AssertionError，期望 ValueError",
               hint="assert 在 python -O 下会被整条删掉；配置错误要用 raise ValueError。")
    expect(False, "weights 多了 'rep'（{weights}），make_reward_fn 却没有报错",
           hint=diagnose_fn(make_reward_fn) or KEYS_HINT, weights=sorted(weights))


def _padded(length: int, box: str = "\\boxed{4}") -> str:
    """A completion of exactly `length` characters that ends in `box`."""
    return " " * (length - len(box)) + box


@visible_test(EX, "cosine_length_reward", "答错的一支：在 −1 和 0 之间，随长度上升，和答对的一支互为相反数")
def wrong_branch(cosine_length_reward):
    lengths = (16, 64, 128, 192, 256)  # max_len 256: L / max_len from 1/16 to 1
    wrong = [cosine_length_reward(_padded(n), "5", max_len=256) for n in lengths]
    right = [cosine_length_reward(_padded(n), "4", max_len=256) for n in lengths]
    print("  长度        " + "".join(f"{n:>8}" for n in lengths))
    print("  答错        " + "".join(f"{_show(w):>8}" for w in wrong))
    print("  答对        " + "".join(f"{_show(r):>8}" for r in right))
    hint = diagnose_cosine(cosine_length_reward) or WRONG_HINT
    numbers = all(isinstance(v, (int, float)) for v in wrong + right)
    expect(numbers, "长度 {lengths}（max_len 256）：返回值不全是数", hint=hint, lengths=lengths)
    expect(all(-1.0 <= w <= 0.0 for w in wrong), "长度 {lengths}（max_len 256）答错时得到 {got}，应当都在 -1 和 0 之间",
           hint=hint, lengths=lengths, got=[_show(w) for w in wrong])
    expect(all(a < b for a, b in zip(wrong, wrong[1:])),
           "长度 {lengths}（max_len 256）答错时得到 {got}，应当随长度上升",
           hint=hint, lengths=lengths, got=[_show(w) for w in wrong])
    expect(all(abs(w + r) <= 1e-9 for w, r in zip(wrong, right)),
           "同样长的回答，答错 {wrong}、答对 {right}，应当互为相反数",
           hint=hint, wrong=[_show(w) for w in wrong], right=[_show(r) for r in right])
    return [wrong, right]


@visible_test(EX, "cosine_length_reward", "超过 max_len 的回答按 max_len 算：两支都是 0，余弦不掉头")
def past_max_len(cosine_length_reward):
    cases = [(_padded(600), "4", {}), (_padded(600), "5", {}), (_padded(150), "4", {"max_len": 100}),
             (_padded(150), "5", {"max_len": 100})]
    got = [cosine_length_reward(text, gold, **kw) for text, gold, kw in cases]
    print(f"  600 个字符（max_len 512）：答对 {_show(got[0])}、答错 {_show(got[1])}；"
          f"150 个字符（max_len 100）：答对 {_show(got[2])}、答错 {_show(got[3])}（期望都是 0）")
    for (text, gold, kw), g in zip(cases, got):
        expect(_close(g, 0.0), "{n} 个字符、max_len={max_len}、{branch}：得到 {got!r}，期望 0.0",
               hint=diagnose_cosine(cosine_length_reward) or CLAMP_HINT, n=len(text),
               max_len=kw.get("max_len", 512), branch="答对" if gold == "4" else "答错", got=g)
    return got


@visible_test(EX, "make_reward_fn", "分量名的其他几种对不上：有函数没权重、个数相同名字不同；书写顺序不同不算错")
def key_mismatch_other_ways(make_reward_fn):
    funcs = {"fmt": lambda c, g: 1.0, "acc": lambda c, g: 0.0}
    observed = []
    for weights, what in (({"fmt": 1.0}, "funcs 多了 'acc'（有函数、没权重）"),
                          ({"fmt": 1.0, "len": 0.5}, "个数相同，但 weights 里是 'len'、funcs 里是 'acc'")):
        try:
            make_reward_fn(weights, funcs)
        except ValueError as exc:
            print(f"  {what}：ValueError: {exc}")
            observed.append(type(exc).__name__)
            continue
        expect(False, "{what}，make_reward_fn 却没有报错", hint=diagnose_fn(make_reward_fn) or KEYS_HINT, what=what)
    try:
        R = make_reward_fn({"acc": 2.0, "fmt": 0.5}, funcs)
    except Exception as exc:
        expect(False, "两张表的 key 相同、只是书写顺序不同，却抛出了 {error}",
               hint="TODO 2：书写顺序不算数：比较 key 的集合。", error=type(exc).__name__)
    observed.append(sorted(R("x", "y")))
    return observed


@visible_test(EX, "make_reward_fn", "total 按名字加权：负权重、两张表的书写顺序不同")
def total_by_name(make_reward_fn):
    funcs = {"a": lambda c, g: 1.0, "b": lambda c, g: 0.25}
    R = make_reward_fn({"b": 2.0, "a": -1.0}, funcs)
    scores = R("any completion", "gold")
    print(f"  R = {scores}")
    want = -1.0 * 1.0 + 2.0 * 0.25  # -0.5
    hint = diagnose_fn(make_reward_fn)
    expect(isinstance(scores, dict) and set(scores) == {"a", "b", "total"},
           "weights {{'b': 2.0, 'a': -1.0}}：R 返回 {got!r}，期望一个 dict：a、b 两个分量和 total",
           hint=hint or "TODO 3：scores 里每个分量一项，再加一项 \"total\"。", got=scores)
    expect(scores["a"] == 1.0 and scores["b"] == 0.25,
           "分量 a = {a!r}、b = {b!r}，期望 1.0 和 0.25",
           hint=hint or "每个分量的原始分数原样留在 dict 里，只有 total 是加权的。", a=scores["a"], b=scores["b"])
    expect(_close(scores["total"], want),
           "weights {{'b': 2.0, 'a': -1.0}}、分量 a = 1.0、b = 0.25：total = {got!r}，期望 {want}（= -1.0·a + 2.0·b）",
           hint=hint or ZIP_HINT, got=scores["total"], want=want)
    return scores
