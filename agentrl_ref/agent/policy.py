"""The policy: a tiny decoder-only transformer (pre-LayerNorm, learned positions), plain torch.

    model = TinyPolicy(vocab_size=len(VOCAB))          # 2 layers, d_model 64, 4 heads: ~72k parameters
    logits = model(tokens)                              # [B, T] -> [B, T, V], causal
    cache = model.new_cache(B); logits = model.extend(tokens[:, t:t+n], t, cache)   # incremental decoding
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    """x + attn(ln(x)), then x + mlp(ln(x)); attention optionally over a key/value cache."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int):
        super().__init__()
        self.n_heads = n_heads
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, x: torch.Tensor, start: int = 0, cache: tuple[torch.Tensor, torch.Tensor] | None = None):
        B, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, n, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        if cache is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # write this block's keys/values at [start, start + n), attend to everything up to there
            k_all, v_all = cache
            k_all[:, :, start:start + n], v_all[:, :, start:start + n] = k, v
            k, v = k_all[:, :, :start + n], v_all[:, :, :start + n]
            if n == 1:
                y = F.scaled_dot_product_attention(q, k, v)
            else:
                allowed = torch.ones(n, start + n, dtype=torch.bool).tril(diagonal=start)
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        x = x + self.proj(y.transpose(1, 2).reshape(B, n, d))
        return x + self.mlp(self.ln2(x))


class TinyPolicy(nn.Module):
    """Token + position embeddings, n_layers Blocks, final LayerNorm, a linear head to vocabulary logits."""

    def __init__(self, vocab_size: int, max_len: int = 48, d_model: int = 64, n_layers: int = 2,
                 n_heads: int = 4, d_ff: int = 128):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.max_len, self.d_model, self.n_heads = max_len, d_model, n_heads
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                residual = name.endswith(("proj.weight", "2.weight"))  # scaled as in GPT-2
                nn.init.normal_(p, std=0.02 / (math.sqrt(2 * n_layers) if residual else 1))
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """[B, T] token ids -> [B, T, vocab] logits; position t sees tokens[:, :t+1]."""
        if tokens.shape[1] > self.max_len:
            raise ValueError(f"sequence of {tokens.shape[1]} tokens is longer than max_len={self.max_len}")
        x = self.tok(tokens) + self.pos.weight[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def new_cache(self, batch: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Empty key/value buffers for incremental decoding of `batch` sequences up to max_len."""
        shape = (batch, self.n_heads, self.max_len, self.d_model // self.n_heads)
        return [(torch.zeros(shape), torch.zeros(shape)) for _ in self.blocks]

    def extend(self, tokens: torch.Tensor, start: int, cache) -> torch.Tensor:
        """Logits [B, n, vocab] for tokens [B, n] at positions start..start+n-1; the cache holds positions < start."""
        n = tokens.shape[1]
        if start + n > self.max_len:
            raise ValueError(f"positions up to {start + n} exceed max_len={self.max_len}")
        x = self.tok(tokens) + self.pos.weight[start:start + n]
        for block, layer_cache in zip(self.blocks, cache):
            x = block(x, start, layer_cache)
        return self.head(self.ln_f(x))


def make_policy(vocab_size: int, seed: int, **kwargs) -> TinyPolicy:
    """TinyPolicy initialised from torch.manual_seed(seed) inside fork_rng (the global RNG is left as it was)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TinyPolicy(vocab_size, **kwargs)
