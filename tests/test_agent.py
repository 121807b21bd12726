"""The capstone engine (agentrl_ref.agent): tokenizer, episodes and their loss mask, the environment loop,
the reward wiring, the clipped policy-gradient loss, the async trainer, determinism and one extra seed.

Fast by design (short runs); no timing assertions.
"""
from __future__ import annotations

import asyncio
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from agentrl_ref import cosine_length_reward
from agentrl_ref.agent import (
    VOCAB, GRPOConfig, Parts, Problem, SFTConfig, build_reward_fn, calculator, clipped_pg_loss, collate, demo_episode,
    grpo, make_task, pg_stats, replay, resolve_parts, run_grpo, run_sft, sample_episodes, train,
)
from agentrl_ref.teaching.ex7_agent_grpo import episode_html
# ex4's class, no max_staleness
from agentrl_ref.teaching.ex4_async_rollout.seed_rollout_buffer import SeedRolloutBuffer as StudentBuffer

ROOT = Path(__file__).resolve().parents[1]
TINY_SFT = SFTConfig(steps=30, batch_size=32)
TINY_GRPO = GRPOConfig(steps=3, prompts_per_step=8, group_size=4)


# --- vocabulary -------------------------------------------------------------------------------

def test_vocab_round_trip_on_random_ids_and_on_episode_text():
    rng = random.Random(0)
    for _ in range(200):
        ids = [rng.randrange(len(VOCAB)) for _ in range(rng.randrange(0, 40))]
        assert VOCAB.encode(VOCAB.decode(ids)) == ids
    text = "<|assistant|><think>12*34</think><answer>\\boxed{408}</answer><|im_end|>"
    assert VOCAB.decode(VOCAB.encode(text)) == text
    assert len(VOCAB.encode("\\boxed{")) == 1 and len(VOCAB.encode("<|tool|>")) == 1


def test_vocab_rejects_unknown_text():
    with pytest.raises(ValueError, match="cannot tokenize"):
        VOCAB.encode("12 * 34")  # no space token


def test_calculator_and_task():
    assert calculator("81*37") == "2997" and calculator("12+30") == "42"
    assert calculator("81*") == "" and calculator("<think>") == ""
    task = make_task(0, n_test=64)
    assert len(set(task.test)) == 64
    assert all(len(p.answer) == 4 for p in task.test)  # 32..99 squared: every product has 4 digits
    train_problems = task.sample(random.Random(1), 500)
    assert not set(train_problems) & set(task.test)


# --- episodes and the loss mask (ex3) ---------------------------------------------------------

def _roles_and_mask(episode, parts, train_tool_tokens=False):
    batch = collate([episode], parts, train_tool_tokens)
    shifted = batch.mask[0].tolist()
    return [episode.role_of(t) for t in range(len(episode))], [0.0] + shifted  # unshift: mask[t] for token t


def test_loss_mask_trains_the_assistant_and_its_end_of_turn_not_the_tool_result():
    parts = resolve_parts()
    episode = demo_episode(Problem(81, "*", 37), use_tool=True)
    tokens = [VOCAB.tokens[t] for t in episode.tokens]
    roles, mask = _roles_and_mask(episode, parts)
    assert [s[0] for s in episode.spans] == ["user", "assistant", "tool", "assistant"]
    for t, (tok, role, m) in enumerate(zip(tokens, roles, mask)):
        if role == "assistant":
            assert m == 1.0, (t, tok)
        else:  # <bos>, user turn, tool turn and the <|assistant|> headers the environment writes
            assert m == 0.0, (t, tok, role)
    tool = next(s for s in episode.spans if s[0] == "tool")
    assert "".join(tokens[tool[1]:tool[2]]) == "<|tool|>2997<|im_end|>"
    assert all(m == 0 for m in mask[tool[1]:tool[2]])
    ends = [t for t, tok in enumerate(tokens) if tok == "<|im_end|>"]
    assert [mask[t] for t in ends] == [0.0, 1.0, 0.0, 1.0]  # user, assistant (tool call), tool, assistant
    headers = [t for t, tok in enumerate(tokens) if tok == "<|assistant|>"]
    assert [mask[t] for t in headers] == [0.0, 0.0]
    # the ablation's mask trains the tool turn as well
    _, mask_tool = _roles_and_mask(episode, parts, train_tool_tokens=True)
    assert all(m == 1 for m in mask_tool[tool[1]:tool[2]])


def test_collate_shifts_the_mask_with_the_targets():
    parts = resolve_parts()
    episodes = [demo_episode(Problem(81, "*", 37), True), demo_episode(Problem(40, "*", 50), False, "40*50")]
    batch = collate(episodes, parts)
    assert batch.mask.shape == batch.targets.shape == (2, len(episodes[0]) - 1)
    for b, episode in enumerate(episodes):
        for t in range(len(episode) - 1):  # position t predicts token t + 1
            trained = episode.role_of(t + 1) == "assistant"
            assert batch.mask[b, t].item() == float(trained)
        assert batch.mask[b, len(episode) - 1:].sum() == 0  # padding


class ScriptedPolicy(torch.nn.Module):
    """A stand-in policy that writes scripted assistant turns (to test the environment loop, not learning)."""

    def __init__(self, scripts: list[list[str]], max_len: int = 48):
        super().__init__()
        self.max_len, self.scripts = max_len, [[VOCAB.encode(turn) + [VOCAB.eot] for turn in s] for s in scripts]
        self.history: list[list[int]] = []

    def new_cache(self, batch):
        self.history = [[] for _ in range(batch)]
        return None

    def extend(self, tokens, start, cache):
        logits = torch.full((tokens.shape[0], tokens.shape[1], len(VOCAB)), -30.0)
        for b in range(tokens.shape[0]):
            for i, tok in enumerate(tokens[b].tolist()):
                self.history[b].append(tok)
                turn = self.history[b].count(VOCAB.role["assistant"]) - 1
                since = len(self.history[b]) - 1 - max(
                    (k for k, x in enumerate(self.history[b]) if x == VOCAB.role["assistant"]), default=0)
                script = self.scripts[b]
                if 0 <= turn < len(script) and since < len(script[turn]):
                    logits[b, i, script[turn][since]] = 0.0
                else:
                    logits[b, i, VOCAB.eot] = 0.0
        return logits


def test_environment_runs_the_tool_and_records_spans():
    problems = [Problem(81, "*", 37), Problem(40, "*", 50), Problem(33, "*", 33)]
    scripts = [
        ["<tool>81*37</tool>", "<think></think><answer>\\boxed{2997}</answer>"],   # tool, then copies
        ["<think>40*50</think><answer>\\boxed{2000}</answer>"],                   # answers directly
        ["<tool>33*33</tool>", "<tool>33*33</tool>"],                             # a second call is not run
    ]
    episodes = sample_episodes(ScriptedPolicy(scripts), problems, generator=torch.Generator().manual_seed(0))
    first, second, third = episodes
    assert VOCAB.decode(first.tokens) == (
        "<bos><|user|>81*37<|im_end|><|assistant|><tool>81*37</tool><|im_end|><|tool|>2997<|im_end|>"
        "<|assistant|><think></think><answer>\\boxed{2997}</answer><|im_end|>")
    assert first.spans == demo_episode(problems[0], True).spans
    assert first.tool_calls == 1 and first.answer_text == "<think></think><answer>\\boxed{2997}</answer>"
    assert second.tool_calls == 0 and second.spans == demo_episode(problems[1], False, "40*50").spans
    assert third.tool_calls == 1 and third.answer_text == "<tool>33*33</tool>"  # ends the episode, scores 0
    assert all(len(e.logp) == len(e.tokens) and not e.truncated for e in episodes)
    # scripted tokens have probability ~1: their log-probs are ~0, forced ones are recorded too
    assert all(abs(first.logp[t]) < 1e-6 for t in range(1, len(first)) if first.role_of(t) == "assistant")


# --- rewards (ex1 + ex2 + ex5 through make_reward_fn) -----------------------------------------

def test_reward_wiring_on_hand_written_answers():
    reward = build_reward_fn(resolve_parts())
    right = "<think></think><answer>\\boxed{2997}</answer>"
    wrong = "<think>81*37</think><answer>\\boxed{2897}</answer>"
    unformatted = "\\boxed{2997}"

    def cos(text, correct):  # the cosine in L/64 between (1, 0) for correct and (-1, 0) for wrong answers
        short, long_ = (1.0, 0.0) if correct else (-1.0, 0.0)
        return long_ + 0.5 * (short - long_) * (1 + math.cos(math.pi * min(len(text) / 64, 1.0)))

    r = reward(right, "2997")
    assert (r["fmt"], r["acc"]) == (1.0, 1.0) and len(right) == 44
    assert r["cos_len"] == pytest.approx(cos(right, True))
    assert r["total"] == pytest.approx(0.1 + 1.0 + 0.2 * cos(right, True))
    r = reward(wrong, "2997")
    assert (r["fmt"], r["acc"]) == (1.0, 0.0)
    assert r["cos_len"] == pytest.approx(cos(wrong, False)) and r["cos_len"] < 0
    assert r["total"] == pytest.approx(0.1 + 0.2 * cos(wrong, False))
    r = reward(unformatted, "2997")
    assert (r["fmt"], r["acc"]) == (0.0, 1.0)  # ex2 reads the box even without the tags
    assert r["cos_len"] == pytest.approx(cosine_length_reward(unformatted, "2997", 64))


def test_student_parts_replace_the_references():
    calls = []

    def my_format_reward(completion):
        calls.append(completion)
        return 0.5

    reward = build_reward_fn(resolve_parts({"format_reward": my_format_reward}))
    assert reward("<think></think><answer>\\boxed{1}</answer>", "1")["fmt"] == 0.5 and calls
    with pytest.raises(ValueError, match="unknown part"):
        resolve_parts(format_rewards=my_format_reward)


# --- the clipped policy-gradient loss (the student's blank) -----------------------------------

def _loop_loss(logp_new, logp_old, adv, mask, eps):
    total, count = 0.0, 0.0
    for b in range(logp_new.shape[0]):
        for t in range(logp_new.shape[1]):
            if mask[b][t] == 0:
                continue
            ratio = math.exp(float(logp_new[b][t]) - float(logp_old[b][t]))
            a = float(adv[b][t])
            clipped_ratio = min(max(ratio, 1 - eps), 1 + eps)
            total += -min(ratio * a, clipped_ratio * a)
            count += 1
    return total / count if count else 0.0


def test_clipped_pg_loss_matches_a_per_token_loop():
    gen = torch.Generator().manual_seed(0)
    branches = set()
    for trial in range(20):
        B, T = 4, 9
        logp_old = -torch.rand(B, T, generator=gen, dtype=torch.float64) * 3
        # ratios in and out of [1 - eps, 1 + eps]
        logp_new = logp_old + torch.randn(B, T, generator=gen, dtype=torch.float64) * 0.4
        adv = torch.randn(B, T, generator=gen, dtype=torch.float64)
        mask = (torch.rand(B, T, generator=gen) < 0.6).long()
        mask[1] = 0  # an all-zero row
        eps = 0.2 if trial % 2 else 0.1
        got = clipped_pg_loss(logp_new, logp_old, adv, mask, eps)
        assert got.item() == pytest.approx(_loop_loss(logp_new, logp_old, adv, mask, eps), rel=1e-9, abs=1e-12)
        ratio, on = torch.exp(logp_new - logp_old), mask.bool()
        branches |= {("upper clipped" if a > 0 else "upper kept") if r > 1 + eps else
                     ("lower clipped" if a < 0 else "lower kept") if r < 1 - eps else "inside"
                     for r, a in zip(ratio[on].tolist(), adv[on].tolist())}
    assert branches == {"upper clipped", "upper kept", "lower clipped", "lower kept", "inside"}
    ratio = torch.tensor([[0.5, 0.5, 1.5, 1.5, 1.0]], dtype=torch.float64)
    adv = torch.tensor([[1.0, -1.0, 1.0, -1.0, 2.0]], dtype=torch.float64)
    logp_old = torch.zeros(1, 5, dtype=torch.float64)
    loss = clipped_pg_loss(ratio.log(), logp_old, adv, torch.ones(1, 5), 0.2)
    # -min(0.5*1, 0.8*1) = -0.5; -min(-0.5, -0.8) = 0.8; -min(1.5, 1.2) = -1.2; -min(-1.5, -1.2) = 1.5; -2
    assert loss.item() == pytest.approx((-0.5 + 0.8 - 1.2 + 1.5 - 2.0) / 5)


def test_clipped_pg_loss_is_a_token_mean_not_a_mean_over_t():
    logp = torch.zeros(2, 3)
    adv = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    assert clipped_pg_loss(logp, logp, adv, mask).item() == pytest.approx(-1.0)  # 3 trained tokens, each -1
    padded = clipped_pg_loss(torch.zeros(2, 30), torch.zeros(2, 30), torch.nn.functional.pad(adv, (0, 27)),
                             torch.nn.functional.pad(mask, (0, 27)))
    assert padded.item() == pytest.approx(-1.0)  # padding length does not change it
    assert clipped_pg_loss(logp, logp, adv, torch.zeros(2, 3)).item() == 0.0


def test_clipped_pg_loss_gradient_flows_only_through_masked_tokens():
    gen = torch.Generator().manual_seed(1)
    logp_new = (-torch.rand(3, 6, generator=gen)).requires_grad_()
    logp_old = logp_new.detach() + 0.05 * torch.randn(3, 6, generator=gen)
    mask = torch.tensor([[1, 1, 0, 0, 1, 0], [0, 0, 0, 0, 0, 0], [1, 0, 1, 0, 1, 1]])
    clipped_pg_loss(logp_new, logp_old, torch.randn(3, 6, generator=gen), mask).backward()
    assert torch.all(logp_new.grad[mask == 0] == 0)
    assert torch.all(logp_new.grad[mask == 1] != 0)


def test_clipped_pg_loss_rejects_mismatched_shapes():
    x = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="shape"):
        clipped_pg_loss(x, x, torch.zeros(2, 4), x)
    with pytest.raises(ValueError, match=r"\[B, T\]"):
        clipped_pg_loss(torch.zeros(6), torch.zeros(6), torch.zeros(6), torch.zeros(6))
    stats = pg_stats(torch.log(torch.tensor([[0.5, 1.0]])), torch.zeros(1, 2), torch.ones(1, 2), torch.ones(1, 2))
    assert stats["clip_frac"] == pytest.approx(0.0) and stats["approx_kl"] > 0


def test_no_other_file_holds_the_loss_formula():
    agent = ROOT / "agentrl_ref" / "agent"
    for path in agent.glob("*.py"):
        if path.name == "loss.py":
            continue
        text = path.read_text()
        assert "torch.minimum(" not in text and "1.0 - clip_eps" not in text and "1 - clip_eps" not in text, path


# --- the schedule replay (throughput, ex4) ----------------------------------------------------

def test_replay_serial_when_on_policy_and_overlapped_when_stale():
    chunks0 = [{"version": c, "seconds": 1.0} for c in range(4)]  # max_staleness 0: chunk c uses version c
    rep = replay(chunks0, [2.0] * 4, n_workers=1, chunks_per_step=1, trajectories_per_chunk=8)
    assert rep.total == rep.serial == 12.0 and rep.steps_waited == 4  # step 0 waits for the first batch too
    chunks1 = [{"version": max(0, c - 1), "seconds": 1.0} for c in range(4)]  # one step stale
    rep = replay(chunks1, [2.0] * 4, n_workers=1, chunks_per_step=1, trajectories_per_chunk=8)
    assert rep.total == 9.0 and rep.steps_waited == 1 and rep.throughput == pytest.approx(32 / 9)
    costed = [{"version": c["version"], "seconds": 5.0, "cost": 1.0} for c in chunks1]  # another duration key
    assert replay(costed, [2.0] * 4, 1, 1, 8, key="cost").total == 9.0


def test_the_ceiling_counts_the_rollout_devices_and_the_replay_reaches_it():
    """With n rollout devices a step's generation takes t_gen / n: the ceiling the page prints is the one the replay
    of a long, fully overlapped run approaches (two workers, two chunks per step)."""
    from agentrl_ref.agent import ceiling

    assert ceiling(1.0, 1.0) == 2.0 and ceiling(2.0, 1.0) == 1.5
    assert ceiling(0.1, 0.08, devices=2) == pytest.approx((0.05 + 0.08) / 0.08)
    assert ceiling(0.1, 0.08, steps=1, devices=2) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        ceiling(1.0, 1.0, devices=0)
    steps = 400
    sync = replay([{"version": c // 2, "seconds": 0.05} for c in range(2 * steps)], [0.08] * steps, n_workers=2,
                  chunks_per_step=2, trajectories_per_chunk=8)
    stale = replay([{"version": max(0, c // 2 - 2), "seconds": 0.05} for c in range(2 * steps)], [0.08] * steps,
                   n_workers=2, chunks_per_step=2, trajectories_per_chunk=8)
    assert sync.total / stale.total == pytest.approx(ceiling(0.1, 0.08, steps=steps, devices=2), rel=1e-3)


def test_the_simulated_clock_is_the_cost_model_of_the_work_not_a_timer(tiny_run):
    """Two runs on the same seed replay to the same simulated times whatever the machine's load did to the measured
    CPU seconds; the cost model charges every chunk and step for the rows and positions it computed."""
    from agentrl_ref.agent import COST_MODEL

    res = tiny_run.grpo_result
    again = grpo(tiny_run.sft_policy(), tiny_run.task, res.config)
    assert again.replay.publish == res.replay.publish and again.replay.intervals == res.replay.intervals
    for chunk in res.chunks:
        assert chunk["cost"] == COST_MODEL.chunk(chunk["rows"], chunk["positions"]) and chunk["seconds"] > 0
    for row in res.history:
        assert row["train_cost"] == COST_MODEL.step(row["rows"], row["length"], row["extra_forwards"])
    assert res.replay.serial == pytest.approx(sum(c["cost"] for c in res.chunks)
                                              + sum(r["train_cost"] for r in res.history))


# --- the trainer: wiring, determinism, the sandbox without loss.py ----------------------------

@pytest.fixture(scope="module")
def tiny_run():
    return train(7, sft_cfg=TINY_SFT, grpo_cfg=TINY_GRPO, n_test=32)


@pytest.fixture(scope="module")
def tiny_ablations(tiny_run):
    """Every arm of every ablation on two seeds, tiny (both cores, as on the page)."""
    from agentrl_ref.agent import run_ablations

    return run_ablations(tiny_run, seeds=(7, 8), base=TINY_GRPO, cliff_sft_steps=10)


def _curves_of(result):
    """The history of a GRPO run without its timings, as text (NaN-safe: copy_rate is NaN when no episode
    called the tool, and NaN != NaN)."""
    return json.dumps([{k: v for k, v in row.items() if k != "train_seconds"} for row in result.history])


def test_two_runs_give_identical_curves(tiny_run):
    again = train(7, sft_cfg=TINY_SFT, grpo_cfg=TINY_GRPO, n_test=32)
    assert _curves_of(again.grpo_result) == _curves_of(tiny_run.grpo_result)
    assert again.sft_log["loss"] == tiny_run.sft_log["loss"]
    assert repr(again.after["sampled"].as_dict()) == repr(tiny_run.after["sampled"].as_dict())  # NaN-safe


def test_the_pilots_that_say_how_long_a_cell_takes_change_nothing(tiny_run):
    """A cell says how long it will take before it runs: its first steps timed on throwaway copies. The estimates are
    positive seconds, and a run after them is the run without them (no timing is asserted on a busy machine)."""
    from agentrl_ref.agent import grpo_seconds, sft_seconds, throughput_seconds

    assert 0 < sft_seconds(7, TINY_SFT, n_test=32, pilot_steps=2) < math.inf
    assert 0 < grpo_seconds(tiny_run, TINY_GRPO) < math.inf
    assert 0 < throughput_seconds(tiny_run, (0, 1), TINY_GRPO, step_seconds=0.1) < math.inf
    with pytest.raises(ValueError):
        sft_seconds(7, TINY_SFT, pilot_steps=0)
    again = train(7, sft_cfg=TINY_SFT, grpo_cfg=TINY_GRPO, n_test=32)
    assert _curves_of(again.grpo_result) == _curves_of(tiny_run.grpo_result)


def test_a_run_in_another_process_gives_the_same_curves(tiny_run):
    code = ("import json; from agentrl_ref.agent import train, SFTConfig, GRPOConfig; "
            "r = train(7, sft_cfg=SFTConfig(steps=30, batch_size=32), "
            "grpo_cfg=GRPOConfig(steps=3, prompts_per_step=8, group_size=4), n_test=32); "
            "print(json.dumps([{k: v for k, v in row.items() if k != 'train_seconds'} "
            "for row in r.grpo_result.history]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == _curves_of(tiny_run.grpo_result)


def test_staleness_is_bounded_and_nothing_is_dropped(tiny_run):
    res = tiny_run.grpo_result
    assert res.dropped_stale == res.dropped_overflow == 0
    assert all(0 <= row["staleness"] <= res.config.max_staleness for row in res.history)
    assert [c["version"] for c in res.chunks] == [0, 0, 0, 0, 1, 1]  # max_staleness=1: one batch ahead
    assert set(res.history[0]) >= {"reward_total", "reward_fmt", "reward_acc", "reward_cos_len", "accuracy",
                                   "tool_rate", "response_tokens", "clip_frac", "approx_kl"}


def test_on_policy_run_never_trains_on_stale_data(tiny_run):
    res = grpo(tiny_run.sft_policy(), tiny_run.task, GRPOConfig(steps=2, prompts_per_step=4, group_size=4,
                                                                max_staleness=0))
    assert [row["staleness"] for row in res.history] == [0.0, 0.0]
    assert [c["version"] for c in res.chunks] == [0, 0, 1, 1]



def test_grpo_takes_the_students_loss_and_buffer_even_without_loss_py(tiny_run, monkeypatch):
    calls = []

    def my_loss(logp_new, logp_old, advantages, loss_mask, clip_eps=0.2):
        calls.append(tuple(logp_new.shape))
        return -(advantages * logp_new * loss_mask).sum() / loss_mask.sum()

    monkeypatch.setitem(sys.modules, "agentrl_ref.agent.loss", None)  # as in the grading sandbox: import fails
    res = grpo(tiny_run.sft_policy(), tiny_run.task, GRPOConfig(steps=2, prompts_per_step=4, group_size=4),
               parts={"loss": my_loss, "AsyncRolloutBuffer": StudentBuffer})
    assert len(calls) == 2 and len(res.history) == 2
    assert "clip_frac" not in res.history[0]


def test_advantage_fn_replaces_the_default_wiring_with_the_same_numbers(tiny_run):
    """Exercise 7's second blank: the notebook's own (rewards, group_size, mask) -> [B, T] wiring."""
    from agentrl_ref import broadcast_to_tokens, group_normalize

    calls = []

    def token_advantages(rewards, group_size, loss_mask):
        calls.append((tuple(rewards.shape), group_size, tuple(loss_mask.shape)))
        return broadcast_to_tokens(group_normalize(rewards, group_size), loss_mask)

    cfg = GRPOConfig(steps=2, prompts_per_step=4, group_size=4)
    own = grpo(tiny_run.sft_policy(), tiny_run.task, cfg, parts=Parts(advantages=token_advantages))
    assert [c[:2] for c in calls] == [((16,), 4)] * 2 and all(c[2][0] == 16 for c in calls)
    assert _curves_of(own) == _curves_of(grpo(tiny_run.sft_policy(), tiny_run.task, cfg))
    with pytest.raises(ValueError, match="advantage_fn"):
        grpo(tiny_run.sft_policy(), tiny_run.task, GRPOConfig(steps=1, prompts_per_step=4, group_size=4,
                                                              credit="last_token"),
             parts=Parts(advantages=token_advantages))


def test_a_wrong_student_part_changes_the_run_and_the_printout_names_it(tiny_run):
    """MY_PARTS reaches the trainer: a sign-flipped group_normalize (a realistic ex6 mistake) changes the curves, and
    the one-line summary printed beside the result names the student's function."""
    from agentrl_ref import group_normalize
    from agentrl_ref.teaching.ex7_agent_grpo import parts_summary

    def flipped(rewards, group_size):
        return -group_normalize(rewards, group_size)
    flipped.__module__ = "__main__"

    cfg = GRPOConfig(steps=2, prompts_per_step=4, group_size=4)
    mine = grpo(tiny_run.sft_policy(), tiny_run.task, cfg, parts={"group_normalize": flipped})
    reference = grpo(tiny_run.sft_policy(), tiny_run.task, cfg)
    assert [r["loss"] for r in mine.history] != [r["loss"] for r in reference.history]
    assert mine.history[0]["loss"] == pytest.approx(-reference.history[0]["loss"], abs=1e-6)  # same batch, sign flipped
    assert parts_summary({"group_normalize": flipped}) == "用到的零件：你的 group_normalize，其余是参考实现"


def test_with_a_students_part_the_reference_runs_beside_it_from_the_same_weights(tiny_run):
    from agentrl_ref.agent import run_grpo_compared

    def my_loss(logp_new, logp_old, advantages, loss_mask, clip_eps=0.2):  # a wrong sign
        return (advantages * logp_new * loss_mask).sum() / loss_mask.sum()
    my_loss.__module__ = "__main__"

    import copy

    cfg = GRPOConfig(steps=2, prompts_per_step=4, group_size=4)
    start = run_sft(7, TINY_SFT, n_test=32)
    run, reference = run_grpo_compared(copy.deepcopy(start), cfg, parts=Parts(loss=my_loss))
    again = run_grpo(copy.deepcopy(start), cfg)  # what the reference run must have been
    assert reference.correct == again.after["sampled"].correct
    assert run.after["sampled"].correct != reference.correct or run.grpo_result.history != again.grpo_result.history
    assert run_grpo_compared(copy.deepcopy(start), cfg)[1] is None  # references only: nothing beside


def test_grpo_works_inside_a_running_event_loop_with_the_same_numbers(tiny_run):
    cfg = GRPOConfig(steps=2, prompts_per_step=4, group_size=4)

    async def cell():  # a notebook cell: a loop is already running in this thread, grpo() uses another thread
        return grpo(tiny_run.sft_policy(), tiny_run.task, cfg)

    assert _curves_of(asyncio.run(cell())) == _curves_of(grpo(tiny_run.sft_policy(), tiny_run.task, cfg))


def test_last_token_credit_puts_the_advantage_on_one_token(tiny_run):
    res = grpo(tiny_run.sft_policy(), tiny_run.task, GRPOConfig(steps=1, prompts_per_step=4, group_size=4,
                                                                credit="last_token"))
    assert len(res.history) == 1
    with pytest.raises(ValueError, match="credit"):
        GRPOConfig(credit="uniform")


def test_sft_done_ahead_gives_the_same_ablations_and_is_dropped_when_the_parts_change(tiny_run):
    """prefetch_sft runs the other seeds' SFT in a background worker while the notebook trains its own seed."""
    from agentrl_ref.agent import prefetch_sft, run_ablations

    kw = dict(names=("cliff",), seeds=(7, 8), cliff_sft_steps=10)
    plain = run_ablations(tiny_run, base=TINY_GRPO, **kw)
    parts = {}
    ahead = prefetch_sft(7, parts=parts, n_test=32, sft_config=TINY_SFT, **kw)
    fast = run_ablations(tiny_run, base=TINY_GRPO, parts=parts, prefetched=ahead, **kw)
    assert fast.ahead_seconds > 0
    assert {k: r.after.correct for k, r in fast.runs.items()} == {k: r.after.correct for k, r in plain.runs.items()}
    stale = prefetch_sft(7, parts=parts, n_test=32, sft_config=TINY_SFT, **kw)
    again = run_ablations(tiny_run, base=TINY_GRPO, parts={}, prefetched=stale, **kw)  # a new MY_PARTS dict
    assert again.ahead_seconds == 0
    assert {k: r.after.correct for k, r in again.runs.items()} == {k: r.after.correct for k, r in plain.runs.items()}


def test_figures_are_in_chinese_without_a_missing_glyph_and_the_episode_renders(tiny_run, tiny_ablations, artifacts):
    """Every figure of the page drawn to PNG: its title, axes and legend in Chinese, and no glyph falling back to a
    box (matplotlib warns "Glyph ... missing from font(s)"; make deps installs fonts-noto-cjk)."""
    import io
    import warnings

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agentrl_ref.agent import ABLATIONS
    from agentrl_ref.teaching.ex7_agent_grpo import (
        plot_cliff, plot_differences, plot_schedule, plot_training_curves, plot_versions,
    )
    comparisons = [(n, m, a, b) for n, ab in ABLATIONS.items() for m, a, b in ab.comparisons if m == "accuracy"]
    arms = [tiny_ablations.runs["stale0", 7], tiny_ablations.runs["stale2", 7]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figs = [plot_training_curves(tiny_run.grpo_result), plot_differences(tiny_ablations, comparisons),
                plot_versions(tiny_ablations), plot_cliff(tiny_ablations), plot_schedule(arms)]
        for fig in figs:
            fig.savefig(io.BytesIO(), format="png")
    assert not [str(w.message) for w in caught if "missing" in str(w.message)]
    from agentrl_ref.teaching.shared.page_figure import page_problems

    for name, fig in zip(("curves", "differences", "versions", "cliff", "schedule"), figs):
        texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
        assert any(any("\u4e00" <= ch <= "\u9fff" for ch in text) for text in texts), texts
        assert not page_problems(fig), (name, page_problems(fig))  # drawn for the book's column
        fig.savefig(artifacts / f"figure-ex7-{name}.png", bbox_inches="tight")
        plt.close(fig)
    from agentrl_ref.teaching.ex7_agent_grpo import offpolicy_details

    details = offpolicy_details(tiny_ablations)
    assert details.count("\n- ") == 6  # the lag of every step and five counts under the table
    lags = tiny_ablations.runs["stale_behave", 7].lags
    assert "每一步训练批的平均版本差（三臂、2 个种子都一样）：" + "、".join(f"{x:g}" for x in lags) in details
    html = episode_html(demo_episode(Problem(81, "*", 37), True))
    assert html.count("<span title=") == len(demo_episode(Problem(81, "*", 37), True))
    assert "mask=1" in html and "role=tool mask=0" in html


# --- learning: one extra seed, a short budget -------------------------------------------------

def test_an_extra_seed_learns_to_use_the_tool_with_a_short_budget():
    run = run_sft(4, SFTConfig(steps=200), n_test=256)
    before = run.before["sampled"]
    assert before.tool_rate <= 0.4
    run_grpo(run, GRPOConfig(steps=10, prompts_per_step=16))
    after = run.after["sampled"]
    assert after.accuracy >= before.accuracy + 0.3, (before.accuracy, after.accuracy)
    assert after.tool_rate >= 0.7, after.tool_rate
