"""A real rollout-training mismatch on CPU: the capstone's policy samples from a bfloat16 copy of its weights (every
operation in bf16, as a bf16 inference engine runs) and trains in float32 (exercise 9's page).

    sampler = Bf16Sampler(policy)                 # sample_episodes(sampler, ...) works as with the policy itself
    gap = measure_gap(policy, task, seed)          # GapMeasurement: per-token |delta log p|, the report, per length
                                                   # (sampler="fp8": a copy with float8 weights, a quantized engine)
    study = train_arms(StudyConfig())              # every arm on every seed, held-out accuracy per problem

The arms (ARMS) share everything but the sampler and the weight on each token's loss. As TRL does with vLLM, the old
log-probs of the PPO ratio are the trainer's own (recomputed in float32 before the update, so the ratio starts at 1);
the sampler's log-probs enter only through the importance weight pi_train / pi_sampler:
    matched        sampled in float32 by the trainer's weights: no mismatch, weight 1
    mismatched     sampled in bfloat16, weight 1 (no correction)
    token_tis      sampled in bfloat16, token-level TIS: min(w_t, cap)
    sequence_mis   sampled in bfloat16, sequence-level MIS: w_seq where low <= w_seq <= high, else 0 (TRL 1.16's
                   default mode, sequence_mask with clip_max 3)
"""
from __future__ import annotations

import copy
import random
import time
from dataclasses import dataclass, field, replace

import torch

ARMS = ("matched", "mismatched", "token_tis", "sequence_mis")


class Bf16Sampler:
    """A bfloat16 copy of a TinyPolicy that sample_episodes can drive: weights rounded to bf16, bf16 activations and
    key/value cache, logits handed back in float32 (sample_episodes' softmax and log-probs then run in float32)."""

    def __init__(self, policy):
        self.model = copy.deepcopy(policy).to(torch.bfloat16).eval()
        self.max_len, self.training = policy.max_len, False

    def sync(self, policy) -> None:
        """Load the trainer's current weights (rounded to bf16), as a trainer pushes weights to its engine."""
        self.model.load_state_dict(policy.state_dict())

    def eval(self):
        return self

    def train(self, mode: bool = True):
        return self

    def new_cache(self, batch: int):
        return [(k.to(torch.bfloat16), v.to(torch.bfloat16)) for k, v in self.model.new_cache(batch)]

    def extend(self, tokens, start, cache):
        return self.model.extend(tokens, start, cache).float()


class Fp8Sampler(Bf16Sampler):
    """Bf16Sampler with every weight matrix rounded to float8 (e4m3) first: a quantized copy of the policy, as an FP8
    rollout engine holds it (activations still in bf16)."""

    def __init__(self, policy):
        super().__init__(policy)
        self.sync(policy)

    def sync(self, policy) -> None:
        self.model.load_state_dict({name: value.to(torch.float8_e4m3fn).to(torch.float32) if value.dim() == 2 else value
                                    for name, value in policy.state_dict().items()})


SAMPLERS = {"bf16": Bf16Sampler, "fp8": Fp8Sampler}


@dataclass
class GapMeasurement:
    report: dict                  # mismatch_report on every trained token of the episodes
    abs_diffs: list[float]        # |log pi_fp32 - log pi_bf16| of every trained token
    lengths: list[int]            # k = 1 .. the median number of trained tokens of an episode
    seq_log_ratio: list[float]    # mean |sum of the first k token log-ratios| over the episodes at least that long
    geo_log_ratio: list[float]    # the same divided by k (geometric level)
    counts: list[int]             # how many episodes are averaged at each k (one population: the same number)
    longest: int                  # the most trained tokens of an episode
    episodes: int
    seconds: float


def _trained(batch, policy):
    """(trainer log-probs in float32, sampler log-probs, mask) of a collated batch, no gradient."""
    from agentrl_ref.agent.batch import token_logp

    with torch.no_grad():
        return token_logp(policy, batch), batch.logp_old, batch.mask


def measure_gap(policy, task, seed: int = 0, n: int = 256, low: float = 0.5, high: float = 2.0,
                sampler: str = "bf16") -> GapMeasurement:
    """Sample n held-out problems with the low-precision copy of policy (SAMPLERS[sampler], temperature 1), recompute
    every trained token's log-prob in float32 and compare."""
    from agentrl_ref.agent.batch import collate
    from agentrl_ref.agent.concurrency import torch_threads
    from agentrl_ref.agent.parts import resolve_parts
    from agentrl_ref.agent.rollout import sample_episodes
    from agentrl_ref.rollout_correction import mismatch_report

    t0 = time.perf_counter()
    with torch_threads():
        episodes = sample_episodes(SAMPLERS[sampler](policy), list(task.test[:n]),
                                   generator=torch.Generator().manual_seed(seed))
        trainer, sampler, mask = _trained(collate(episodes, resolve_parts()), policy)
    report = mismatch_report(trainer, sampler, mask, low, high)
    keep = mask.bool()
    diff = (trainer - sampler).double()
    abs_diffs = diff[keep].abs().tolist()
    per_row = [diff[b][keep[b]] for b in range(diff.shape[0])]
    # one population for every k: the episodes with at least the median number of trained tokens, over k = 1 .. that
    # median (longer and rarer episodes would change who is averaged as k grows)
    horizon = sorted(len(r) for r in per_row)[len(per_row) // 2]
    rows = [r for r in per_row if len(r) >= horizon]
    lengths, seq, geo, counts = [], [], [], []
    for k in range(1, horizon + 1):
        sums = [float(r[:k].sum()) for r in rows]
        lengths.append(k)
        counts.append(len(sums))
        seq.append(sum(abs(x) for x in sums) / len(sums))
        geo.append(sum(abs(x) / k for x in sums) / len(sums))
    return GapMeasurement(report, abs_diffs, lengths, seq, geo, counts, max(len(r) for r in per_row), len(episodes),
                          time.perf_counter() - t0)


@dataclass(frozen=True)
class StudyConfig:
    seeds: tuple[int, ...] = (0, 1, 2)
    arms: tuple[str, ...] = ARMS
    sft_steps: int = 150
    steps: int = 15
    prompts_per_step: int = 8
    group_size: int = 8
    lr: float = 1e-3
    clip_eps: float = 0.2
    cap: float = 3.0              # TIS cap (TRL's vllm_importance_sampling_clip_max)
    low: float = 0.0              # sequence MIS keeps w_seq in [low, high] (TRL: clip_min None, clip_max 3.0)
    high: float = 3.0
    n_eval: int = 256


@dataclass
class ArmRun:
    arm: str
    seed: int
    correct: list[int]            # held-out accuracy per problem (temperature 1), after training
    reward: list[float]           # mean training reward per step
    weight_zero: float            # share of trained tokens whose weight was 0 (MIS) over the run
    weight_mean: float            # mean weight on trained tokens over the run
    k3: float                     # mean k3 KL(sampler || trainer) of the training batches


@dataclass
class Study:
    config: StudyConfig
    before: dict[int, list[int]]                      # seed -> accuracy per problem after SFT, before GRPO
    runs: dict[tuple[str, int], ArmRun] = field(default_factory=dict)
    gaps: dict[str, GapMeasurement] = field(default_factory=dict)   # per sampler, on the first seed's SFT policy
    seconds: float = 0.0


def _weights(arm: str, trainer, sampler, mask, cfg: StudyConfig) -> torch.Tensor:
    from agentrl_ref.rollout_correction import log_importance_weights, masked_weights, truncated_weights

    if arm in ("matched", "mismatched"):
        return mask.clone()
    if arm == "token_tis":
        return truncated_weights(log_importance_weights(trainer, sampler, mask, "token"), mask, cfg.cap)
    if arm == "sequence_mis":
        return masked_weights(log_importance_weights(trainer, sampler, mask, "sequence"), mask, cfg.low, cfg.high)
    raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")


def train_arm(arm: str, seed: int, state: dict, task, cfg: StudyConfig) -> ArmRun:
    """GRPO from the SFT weights `state` with the arm's sampler and weights; the held-out evaluation after it."""
    from agentrl_ref.agent.batch import collate, token_logp
    from agentrl_ref.agent.evaluation import evaluate
    from agentrl_ref.agent.grpo_config import ADAM_BETAS
    from agentrl_ref.agent.loss import clipped_pg_loss
    from agentrl_ref.agent.parts import build_reward_fn, resolve_parts
    from agentrl_ref.agent.pipeline import fresh_policy
    from agentrl_ref.agent.rollout import sample_episodes
    from agentrl_ref.rollout_correction import mismatch_report

    parts = resolve_parts()
    reward_fn = build_reward_fn(parts)
    policy = fresh_policy(seed, state)
    policy.train()
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr, betas=ADAM_BETAS)
    sampler = Bf16Sampler(policy) if arm != "matched" else policy
    rng, gen = random.Random(f"ex9-{seed}"), torch.Generator().manual_seed(seed)
    rewards, zero, total, weight_sum, k3s = [], 0.0, 0.0, 0.0, []
    for _ in range(cfg.steps):
        if arm != "matched":
            sampler.sync(policy)
        episodes = sample_episodes(sampler, task.sample(rng, cfg.prompts_per_step), group_size=cfg.group_size,
                                   generator=gen)
        scores = torch.tensor([float(reward_fn(e.answer_text, e.problem.answer)["total"]) for e in episodes])
        b = collate(episodes, parts)
        adv = parts.broadcast_to_tokens(parts.group_normalize(scores, cfg.group_size), b.mask)
        logp_new = token_logp(policy, b)
        trainer = logp_new.detach()
        weights = _weights(arm, trainer, b.logp_old, b.mask, cfg)
        loss = clipped_pg_loss(logp_new, trainer, adv * weights, b.mask, cfg.clip_eps)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        opt.step()
        keep = b.mask.bool()
        rewards.append(float(scores.mean()))
        zero += float((weights[keep] == 0).sum())
        weight_sum += float(weights[keep].sum())
        total += float(keep.sum())
        k3s.append(mismatch_report(trainer, b.logp_old, b.mask)["k3_kl"])
    after = evaluate(policy, task.test[:cfg.n_eval], 1.0, seed=seed)
    return ArmRun(arm, seed, list(after.correct), rewards, zero / max(total, 1.0), weight_sum / max(total, 1.0),
                  sum(k3s) / len(k3s))


def train_arms(cfg: StudyConfig = StudyConfig(), progress=None) -> Study:
    """SFT each seed once (cfg.sft_steps), measure the gap on the first, then train every arm from the same SFT
    weights. progress(done, total, text) after each run."""
    from agentrl_ref.agent.concurrency import torch_threads
    from agentrl_ref.agent.evaluation import evaluate
    from agentrl_ref.agent.pipeline import fresh_policy
    from agentrl_ref.agent.sft_trainer import SFTConfig, sft
    from agentrl_ref.agent.task import make_task

    t0 = time.perf_counter()
    study = Study(cfg, {})
    done, todo = 0, len(cfg.seeds) * (len(cfg.arms) + 1)
    with torch_threads():
        for seed in cfg.seeds:
            task = make_task(seed, n_test=cfg.n_eval)
            policy = fresh_policy(seed)
            sft(policy, task, replace(SFTConfig(), steps=cfg.sft_steps, seed=seed))
            state = copy.deepcopy(policy.state_dict())
            study.before[seed] = list(evaluate(policy, task.test, 1.0, seed=seed).correct)
            if not study.gaps:
                study.gaps = {name: measure_gap(policy, task, seed, n=cfg.n_eval, sampler=name) for name in SAMPLERS}
            done += 1
            if progress:
                progress(done, todo, f"种子 {seed}：SFT")
            for arm in cfg.arms:
                study.runs[(arm, seed)] = train_arm(arm, seed, state, task, cfg)
                done += 1
                if progress:
                    progress(done, todo, f"种子 {seed}：{arm}")
    study.seconds = time.perf_counter() - t0
    return study
