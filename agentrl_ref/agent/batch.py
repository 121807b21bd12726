"""Episodes -> padded tensors for training: tokens, the shifted loss mask (ex3), old log-probs."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from agentrl_ref.agent.episode import Episode
from agentrl_ref.agent.vocab import VOCAB


@dataclass
class Batch:
    """tokens [B, T]; inputs = tokens[:, :-1]; targets = tokens[:, 1:]; mask, logp_old: [B, T-1] like targets."""

    tokens: torch.Tensor
    mask: torch.Tensor      # float 0/1: shift_mask_for_clm(build_loss_mask(...)), padded with 0
    logp_old: torch.Tensor  # log-prob of each target under the sampling policy (0 where unknown)

    @property
    def inputs(self) -> torch.Tensor:
        return self.tokens[:, :-1]

    @property
    def targets(self) -> torch.Tensor:
        return self.tokens[:, 1:]


def trained_spans(episode: Episode, train_tool_tokens: bool = False) -> list[tuple[str, int, int]]:
    """The episode's role spans; with train_tool_tokens, tool spans are passed on as assistant spans (an ablation)."""
    if not train_tool_tokens:
        return episode.spans
    return [("assistant" if role == "tool" else role, start, end) for role, start, end in episode.spans]


def collate(episodes: list[Episode], parts, train_tool_tokens: bool = False, pad_id: int = VOCAB.pad) -> Batch:
    """Pad episodes to the longest; mask = parts.shift_mask_for_clm(parts.build_loss_mask(...)) per episode (lists)."""
    T = max(len(e) for e in episodes)
    tokens = torch.full((len(episodes), T), pad_id, dtype=torch.long)
    mask = torch.zeros(len(episodes), T - 1)
    logp_old = torch.zeros(len(episodes), T - 1)
    for b, e in enumerate(episodes):
        n = len(e)
        tokens[b, :n] = torch.tensor(e.tokens)
        shifted = parts.shift_mask_for_clm(list(parts.build_loss_mask(e.tokens, trained_spans(e, train_tool_tokens))))
        if len(shifted) != n - 1:
            raise ValueError(f"shift_mask_for_clm returned {len(shifted)} values for {n} tokens (want {n - 1})")
        mask[b, : n - 1] = torch.tensor([float(v) for v in shifted])
        if e.logp is not None:
            logp_old[b, : n - 1] = torch.tensor(e.logp[1:n])
    return Batch(tokens, mask, logp_old)


def token_logp(policy, batch: Batch) -> torch.Tensor:
    """[B, T-1] log pi(target_t | inputs[:t+1]) under the policy's current weights (with grad)."""
    logits = policy(batch.inputs)
    return torch.log_softmax(logits, -1).gather(2, batch.targets[..., None])[..., 0]
