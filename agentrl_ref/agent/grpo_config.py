"""GRPOConfig: the settings of a GRPO run, shared by the trainer and both runners (in one process, in two)."""
from __future__ import annotations

from dataclasses import dataclass, field

from agentrl_ref.agent.aggregation import LOSS_AGGS
from agentrl_ref.agent.parts import COS_MAX_LEN, REWARD_WEIGHTS

CREDITS = ("broadcast", "last_token")
SCALE_REWARDS = ("group", "none")  # "none": centre within the group, no division by its std (Dr. GRPO)
# What the ratio of the loss is taken against when a trajectory is older than the weights being trained (see
# off_policy_inputs): the behaviour policy's log-probs (PPO as written), AReaL's decoupled objective, or nothing.
CORRECTIONS = ("behave", "decoupled", "recompute")
# AReaL's default for the decoupled objective up to v1.0.3 (behave_imp_weight_cap=5.0 with behave_imp_weight_mode=
# "token_mask"; behav_imp_weight_cap before v1.0.1); v1.0.4 replaced both by rejection_sampling={level: token,
# action: mask, metric: ratio, upper: 5.0}: tokens whose pi_prox / pi_behave exceeds it are left out
DECOUPLED_WEIGHT_CAP = 5.0
# The GRPO trainer's Adam: its first moment averages about the last 1/(1-0.9) = 10 steps, its second about 100
ADAM_BETAS = (0.9, 0.99)


@dataclass(frozen=True)
class GRPOConfig:
    steps: int = 40
    prompts_per_step: int = 32
    group_size: int = 8
    lr: float = 1e-3
    clip_eps: float = 0.2
    max_staleness: int = 1             # 0 = on-policy: a batch is generated only after the previous update
    n_workers: int = 2
    reward_weights: dict = field(default_factory=lambda: dict(REWARD_WEIGHTS))
    cos_max_len: int = COS_MAX_LEN
    credit: str = "broadcast"          # ex6: advantage on every trained token, or only on the last one (ablation)
    train_tool_tokens: bool = False    # ablation: put the tool result into the loss mask
    scale_rewards: str = "group"       # "none": advantage = reward - group mean (Dr. GRPO; TRL scale_rewards)
    loss_agg: str = "token_mean"       # or "seq_mean" (GRPO paper), "constant" (Dr. GRPO): see aggregation.py
    correction: str = "behave"         # off-policy data: "behave", "decoupled" (AReaL), "recompute" (none)
    minibatches: int = 1               # optimizer steps per batch, on consecutive slices (AReaL's ppo_n_minibatches)
    measure_steps: bool = False        # log how far each batch's updates moved the policy (extra forward passes)
    seed: int = 0
    batch_timeout: float = 60.0        # seconds the trainer waits for one batch before it gives up (a stuck buffer)

    def __post_init__(self):
        if self.prompts_per_step % self.n_workers:
            raise ValueError(f"prompts_per_step ({self.prompts_per_step}) must be a multiple of "
                             f"n_workers ({self.n_workers})")
        if self.credit not in CREDITS:
            raise ValueError(f"credit must be one of {CREDITS}, got {self.credit!r}")
        if self.group_size < 2:
            raise ValueError("group_size must be >= 2 (GRPO normalises within a group)")
        if self.scale_rewards not in SCALE_REWARDS:
            raise ValueError(f"scale_rewards must be one of {SCALE_REWARDS}, got {self.scale_rewards!r}")
        if self.loss_agg not in LOSS_AGGS:
            raise ValueError(f"loss_agg must be one of {LOSS_AGGS}, got {self.loss_agg!r}")
        if not (isinstance(self.minibatches, int) and 1 <= self.minibatches <= self.batch_size):
            raise ValueError(f"minibatches must be an int in [1, batch_size], got {self.minibatches!r}")
        if self.correction not in CORRECTIONS:
            raise ValueError(f"correction must be one of {CORRECTIONS}, got {self.correction!r}")

    @property
    def default_advantages(self) -> bool:
        """True when the advantages are exercise 6's group_normalize + broadcast_to_tokens (parts.advantages may
        replace them); an arm that changes the credit or the scaling computes its own."""
        return self.credit == "broadcast" and self.scale_rewards == "group"

    @property
    def batch_size(self) -> int:
        return self.prompts_per_step * self.group_size
