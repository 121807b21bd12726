"""Visible tests of exercise 10 (interruptible generation): a trajectory extended segment by segment by several
policy versions, per-token staleness against the trainer's version, and admission by the oldest token. Each test
returns what it observed, normalised to plain lists and numbers (so that a list-based and a tensor-based trajectory
give the same record), which run_test records for grading.

The expected values are written out here (agentrl_ref.partial_rollout, the answer, is not in exercise 10's grading
sandbox). Every failing test gives the hint of the mistake its part's diagnosis finds first (diagnose_extend,
diagnose_staleness, diagnose_oldest, diagnose_admit).
"""
from __future__ import annotations

import torch

from agentrl_ref.checks import expect, visible_test

EX = "ex10_partial_rollout"

# a trajectory caught by two weight updates: versions 3, 3 (two segments of one version), 4, then 6
PROMPT = [1, 2, 3]
SEGMENTS = [([10, 11], [-0.5, -1.25], 3), ([12], [-0.75], 3), ([13, 14, 15], [-2.0, -0.125, -0.5], 4),
            ([16], [-1.5], 6)]
IDS = [i for ids, _, _ in SEGMENTS for i in ids]
LOGPS = [x for _, logps, _ in SEGMENTS for x in logps]
VERSIONS = [v for ids, _, v in SEGMENTS for _ in ids]


def _ints(values) -> list[int]:
    return [int(v) for v in torch.as_tensor(values).reshape(-1).tolist()]


def _floats(values) -> list[float]:
    return [round(float(v), 6) for v in torch.as_tensor(values, dtype=torch.float64).reshape(-1).tolist()]


def _record(traj) -> dict:
    """What the trajectory holds, as plain lists (its attributes and its two tensors)."""
    return {"ids": _ints(traj.ids), "logps": _floats(traj.logps), "versions": _ints(traj.versions),
            "token_versions": _ints(traj.token_versions), "behaviour_logp": _floats(traj.behaviour_logp),
            "versions_dtype": str(traj.token_versions.dtype).replace("torch.", "")}


def _built(PartialTrajectory, segments=SEGMENTS):
    traj = PartialTrajectory(PROMPT)
    for ids, logps, version in segments:
        traj.extend(ids, logps, version)
    return traj


FIRST_HINT = ("TODO 4：每个 token 记下**生成它的**版本：这一段的 token 都是 version 生成的，记 [version] * len(ids)，"
              "接在前面的后面。整条轨迹只记开始时的那个版本，换了权重以后的 token 就算错了出处。")
LAST_HINT = ("TODO 4：只给这一段的新 token 记 version，前面的 token 保持原来的版本：它们是旧权重生成的。"
             "整条轨迹都改记最新的版本，等于假装它从头到尾都是新策略的样本。")
LOGP_HINT = ("TODO 3：前面几段的行为 log-prob 要原样留着，这一段的接在后面：self.logps + logps。"
             "前面 token 的 log-prob 出自当时采样它们的旧版本，那才是行为策略的 log-prob；只留最新一段"
             "（或者拿最新的权重重算一遍）就不再是采样它们的那个分布了。")
LENGTH_HINT = ("TODO 1：每个 id 都要有它的 log-prob：len(ids) != len(logps) 时报 ValueError，"
               "不然后面 token 和 log-prob 就错位了。")
BACKWARDS_HINT = ("TODO 2：和这条轨迹**最后一个** token 的版本比：self.versions[-1]。worker 只会换上更新的权重，"
                  "版本号比它还小，说明调用的人把段的顺序弄乱了（比第一个 token 的版本大还不够）。")


EXTEND_FIRST = ("先修好上一格测的 TODO 3、TODO 4（每个 token 的版本和行为 log-prob）：版本记错了，"
                "\"比最后一个 token 还旧\"也就跟着判断错了。")


def diagnose_extend(PartialTrajectory) -> str | None:
    """The first mistake found on the course's segments: versions (first or last only), log-probs, then misuse."""
    try:
        traj = _built(PartialTrajectory)
        versions, logps = _ints(traj.versions), _floats(traj.logps)
    except Exception:
        return None
    if versions != VERSIONS:
        if versions == [VERSIONS[0]] * len(VERSIONS):
            return FIRST_HINT
        if versions == [VERSIONS[-1]] * len(VERSIONS):
            return LAST_HINT
        return FIRST_HINT
    if logps != _floats(LOGPS):
        return LOGP_HINT
    return None


@visible_test(EX, "PartialTrajectory", "三段生成（版本 3、3、4、6）：每个 token 记下生成它的版本和它的行为 log-prob")
def segments_in_order(PartialTrajectory):
    traj = _built(PartialTrajectory)
    got = _record(traj)
    print(f"  版本    得到 {got['versions']}")
    print(f"          期望 {VERSIONS}")
    expect(got["versions"] == VERSIONS, "每个 token 的版本得到 {got}，期望 {want}",
           hint=diagnose_extend(PartialTrajectory) or FIRST_HINT, got=got["versions"], want=VERSIONS)
    expect(got["logps"] == _floats(LOGPS), "行为 log-prob 得到 {got}，期望 {want}",
           hint=diagnose_extend(PartialTrajectory) or LOGP_HINT, got=got["logps"], want=_floats(LOGPS))
    expect(got["ids"] == IDS, "生成的 id 得到 {got}，期望 {want}", hint=LOGP_HINT, got=got["ids"], want=IDS)
    expect(got["token_versions"] == VERSIONS and got["versions_dtype"] == "int64",
           "token_versions 得到 {got}（{dtype}），期望 int64 的 {want}", hint=FIRST_HINT, got=got["token_versions"],
           dtype=got["versions_dtype"], want=VERSIONS)
    return got


def _raises(fn) -> str:
    """'ValueError', another exception's name, or 'ok' when fn returned."""
    try:
        fn()
    except ValueError:
        return "ValueError"
    except Exception as exc:  # noqa: BLE001 - a wrong kind of exception is an observation
        return type(exc).__name__
    return "ok"


@visible_test(EX, "PartialTrajectory", "用错的时候报 ValueError：长度不一样、版本往回走；同一个版本接着写可以")
def misuse(PartialTrajectory):
    cases = [
        ("3 个 id、2 个 log-prob", [5, 6, 7], [-0.1, -0.2], 6, "ValueError", LENGTH_HINT),
        ("1 个 id、2 个 log-prob", [5], [-0.1, -0.2], 6, "ValueError", LENGTH_HINT),
        ("版本 5，最后一个 token 是版本 6", [5], [-0.1], 5, "ValueError", BACKWARDS_HINT),
        ("版本 2，比第一个 token 的版本 3 还旧", [5], [-0.1], 2, "ValueError", BACKWARDS_HINT),
        ("版本 6 接着写（同一个版本）", [5], [-0.1], 6, "ok", BACKWARDS_HINT),
        ("空的一段，版本 7", [], [], 7, "ok", LENGTH_HINT),
    ]
    first = EXTEND_FIRST if diagnose_extend(PartialTrajectory) else None
    observed = []
    for what, ids, logps, version, want, hint in cases:
        traj = _built(PartialTrajectory)
        before = _ints(traj.versions)
        got = _raises(lambda: traj.extend(ids, logps, version))
        after = _ints(traj.versions)
        observed.append([got, after])
        print(f"  {what}：{got}")
        expect(got == want, "{what}：得到 {got}，期望 {want}", hint=first or hint, what=what, got=got, want=want)
        if want == "ValueError":
            expect(after == before, "{what}：报错以后轨迹变成了 {after}，期望不变（{want}）", hint=first or hint,
                   what=what, after=after, want=before)
    return observed


# ---- staleness ----------------------------------------------------------------------------------------------

STALE_VERSIONS = [3, 3, 4, 4, 4, 6]

START_HINT = ("TODO 5：版本差是和 **trainer 现在的版本** current_version 比：current_version - versions。"
              "和这条轨迹自己开始时的版本比（versions - versions[0]），量的是它生成了多久，不是它训练时有多旧。")
OWN_NEWEST_HINT = ("TODO 5：版本差是和 **trainer 现在的版本** current_version 比，不是和这条轨迹自己最新的 token 比："
                   "轨迹生成完以后 trainer 还在往前走。")
SIGN_HINT = "TODO 5：方向是 trainer 的版本减 token 的版本：current_version - versions，落后的 token 版本差是正数。"
FUTURE_HINT = ("TODO 6：版本比 trainer 还新的 token 不可能存在（trainer 还没发布那个版本）：版本差有负数时报 "
               "ValueError，不要悄悄算下去。")
OLDEST_HINT = ("TODO 7：最旧的 token 版本号最小、版本差最大：取 max，不是 min。min 是最新那个 token 的版本差。")


def diagnose_staleness(token_staleness) -> str | None:
    try:
        got = _ints(token_staleness(STALE_VERSIONS, 7))
    except ValueError:  # a trajectory no newer than the trainer taken for one from the future
        return SIGN_HINT
    except Exception:
        return None
    if got == [7 - v for v in STALE_VERSIONS]:
        return None
    if got == [v - STALE_VERSIONS[0] for v in STALE_VERSIONS]:
        return START_HINT
    if got == [max(STALE_VERSIONS) - v for v in STALE_VERSIONS]:
        return OWN_NEWEST_HINT
    if got == [v - 7 for v in STALE_VERSIONS]:
        return SIGN_HINT
    return START_HINT


@visible_test(EX, "staleness", "每个 token 落后 trainer 几个版本（列表和张量都可以传进来）")
def per_token(token_staleness):
    observed = []
    for versions, current in ((STALE_VERSIONS, 7), (torch.tensor(STALE_VERSIONS), 6), ([0], 0), ([], 5)):
        got = _ints(token_staleness(versions, current))
        want = [current - v for v in _ints(versions)]
        observed.append(got)
        print(f"  版本 {_ints(versions)}，trainer 在版本 {current}：得到 {got}，期望 {want}")
        expect(got == want, "版本 {versions}、trainer 在版本 {current}：得到 {got}，期望 {want}",
               hint=diagnose_staleness(token_staleness) or START_HINT, versions=_ints(versions), current=current,
               got=got, want=want)
    return observed


@visible_test(EX, "staleness", "版本比 trainer 还新的 token：ValueError")
def from_the_future(token_staleness):
    observed = []
    for versions, current in (([5, 6], 5), ([3, 3, 9], 8)):
        got = _raises(lambda: token_staleness(versions, current))
        observed.append(got)
        print(f"  版本 {versions}，trainer 在版本 {current}：{got}")
        expect(got == "ValueError", "版本 {versions}、trainer 在版本 {current}：得到 {got}，期望 ValueError",
               hint=diagnose_staleness(token_staleness) or FUTURE_HINT, versions=versions, current=current, got=got)
    return observed


def diagnose_oldest(oldest_staleness) -> str | None:
    try:
        got = int(oldest_staleness(STALE_VERSIONS, 7))
    except Exception:
        return None
    if got == 7 - max(STALE_VERSIONS):
        return OLDEST_HINT
    return None


STALENESS_FIRST = "先修好 TODO 5、TODO 6（token_staleness，上一格的测试）：oldest_staleness 用的就是它。"


@visible_test(EX, "staleness", "整条轨迹最旧的 token 落后几个版本；还没有生成的 token 时是 0")
def oldest(oldest_staleness, token_staleness):
    first = STALENESS_FIRST if diagnose_staleness(token_staleness) else None
    observed = []
    for versions, current in ((STALE_VERSIONS, 7), ([6], 6), (torch.tensor([2, 2, 5]), 5), ([], 4)):
        got = oldest_staleness(versions, current)
        value = int(got) if isinstance(got, (int, torch.Tensor)) else got
        want = current - min(_ints(versions)) if _ints(versions) else 0
        observed.append(value)
        print(f"  版本 {_ints(versions)}，trainer 在版本 {current}：得到 {value}，期望 {want}")
        expect(value == want, "版本 {versions}、trainer 在版本 {current}：最旧的 token 落后 {got} 个版本，期望 {want}",
               hint=first or diagnose_oldest(oldest_staleness) or OLDEST_HINT, versions=_ints(versions),
               current=current, got=value, want=want)
    return observed


# ---- admission --------------------------------------------------------------------------------------------

ADMISSION = [  # (versions, current_version, max_staleness) -> admitted?
    ([2, 2, 5], 5, 2, False),     # the newest token is fresh, the oldest 3 versions old
    ([3, 4, 5], 5, 2, True),      # the oldest exactly max_staleness old: admitted
    ([5], 5, 0, True),
    ([4, 5], 5, 0, False),
    ([0, 0, 1], 3, 3, True),
    ([], 7, 0, True),             # nothing generated yet
]

NEWEST_HINT = ("TODO 8：准入看**最旧**的 token：oldest_staleness(...) <= max_staleness。只看最新的 token，"
               "一条很早就开始、最后几个 token 刚换了新权重的轨迹就混进来了，它大部分 token 还是一样旧。")
BOUNDARY_HINT = ("TODO 8：恰好落后 max_staleness 个版本的还可以用（练习 4：v - traj_version > k 才丢）："
                 "用 <=，不是 <。")


def diagnose_admit(admit) -> str | None:
    try:
        got = [bool(admit(v, c, k)) for v, c, k, _ in ADMISSION]
    except Exception:
        return None
    if got == [want for *_, want in ADMISSION]:
        return None
    by_newest = [(c - max(v) if v else 0) <= k for v, c, k, _ in ADMISSION]
    if got == by_newest:
        return NEWEST_HINT
    strict = [(c - min(v) if v else 0) < k for v, c, k, _ in ADMISSION]
    if got == strict:
        return BOUNDARY_HINT
    return NEWEST_HINT


OLDEST_FIRST = "先修好 TODO 5–7（token_staleness、oldest_staleness，上面两格的测试）：准入用的就是它们。"


def _oldest_right(oldest_staleness) -> bool:
    try:
        return [int(oldest_staleness(v, c)) for v, c, _, _ in ADMISSION] == \
            [c - min(v) if v else 0 for v, c, _, _ in ADMISSION]
    except Exception:
        return False


@visible_test(EX, "admit", "准入看最旧的 token：恰好落后 max_staleness 个版本的可以用，再旧一个就不行")
def admission_table(admit, oldest_staleness, token_staleness):
    first = OLDEST_FIRST if diagnose_staleness(token_staleness) or not _oldest_right(oldest_staleness) else None
    observed = []
    for versions, current, k, want in ADMISSION:
        got = admit(versions, current, k)
        if isinstance(got, torch.Tensor) and got.numel() == 1 and got.dtype == torch.bool:
            got = bool(got)  # a one-element bool tensor says True or False as well
        observed.append(got if isinstance(got, bool) else repr(got))
        print(f"  版本 {versions}，trainer 在版本 {current}，max_staleness={k}：得到 {got}，期望 {want}")
        expect(isinstance(got, bool) and got == want,
               "版本 {versions}、trainer 在版本 {current}、max_staleness={k}：得到 {got!r}，期望 {want}",
               hint=first or diagnose_admit(admit) or NEWEST_HINT, versions=versions, current=current, k=k, got=got,
               want=want)
    return observed


EXCEPTION_HINTS = {
    ("TODO 2", "RuntimeError"): "TODO 2：张量不能直接当 if 的条件（多于一个元素时不知道取真还是假）：先判断长度，"
                                "再取最后一个元素 self.versions[-1]。",
    ("TODO 5", "TypeError"): "TODO 5：versions 已经转成 int64 的张量，current_version - versions 对每个元素做减法。",
    ("TODO 5", "IndexError"): "TODO 5：versions 可能是空的（还没有生成的 token），versions[0] 不存在。"
                              "版本差是和 trainer 现在的版本 current_version 比；"
                              "和这条轨迹自己开始时的版本比，量的是它生成了多久。",
    ("TODO 5", "RuntimeError"): "TODO 5：versions 可能是空的（还没有生成的 token），空张量没有最大值。"
                                "版本差是和 trainer 现在的版本 current_version 比，"
                                "不是和这条轨迹自己最新的 token 比。",
    ("TODO 6", "ValueError"): "TODO 5、TODO 6：版本都不比 trainer 新的轨迹也报错了："
                              "方向是 trainer 的版本减 token 的版本（current_version - versions），"
                              "落后的 token 版本差是正数；只有出现负数才报错。",
    ("TODO 7", "RuntimeError"): "TODO 7：空张量没有最大值：没有生成的 token 时直接返回 0（这一格已经写好了）。",
}
