"""What retokenizing costs, measured on the TRL page's tiny Qwen2 and its trained byte-level BPE (exercise 8's page).

    study = drift_study()          the model warmed up on the addition task (tiny_qwen.sft_warmup), one completion
                                   per problem sampled at temperature 1 with the sampler's log-prob of every sampled
                                   id; for each completion the first position where encode(decode(ids)) != ids
                                   (token_in_out.first_drift), and for the drifted ones the trainer's log-probs
                                   of the retokenized ids under the same weights (the first update: old = new)
    drift_table(study)             Markdown: how many completions drift, and the importance ratios
    drift_examples(study, k)       Markdown: a few drifted completions, the sampled and re-encoded ids side by side

The ratio a trainer that retokenizes computes at position t is exp(log p_train(retok[t]) - log p_sampler(ids[t])):
its new log-prob belongs to a token the sampler never sampled, the old one to the token it did. With token in,
token out the trainer scores the sampled ids themselves, and at the first update every ratio is 1 up to float
rounding (the table prints that too).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from agentrl_ref.teaching.shared.md_table import markdown_table


@dataclass(frozen=True)
class Completion:
    prompt_ids: tuple[int, ...]
    ids: tuple[int, ...]                 # as sampled, up to and including <|im_end|> (or the length limit)
    sampler_logprobs: tuple[float, ...]  # the sampler's log-prob of each sampled id
    again: tuple[int, ...]               # encode(decode(ids))
    drift: int | None                    # token_in_out.first_drift
    kept_logprobs: tuple[float, ...]     # the trainer's log-probs of ids (token in, token out)
    retok_logprobs: tuple[float, ...]    # the trainer's log-probs of again (empty when no drift)


@dataclass(frozen=True)
class DriftStudy:
    completions: tuple[Completion, ...]
    sft_steps: int
    vocab_size: int
    tokenizer: object        # the tokenizers.Tokenizer
    chat_tokenizer: object   # the same as a transformers tokenizer with the TRL page's chat template

    @property
    def drifted(self) -> list[Completion]:
        return [c for c in self.completions if c.drift is not None]


def _logprobs(model, prompt_ids, ids) -> list[float]:
    """log p(ids[t] | prompt, ids[:t]) under model, one forward pass, no padding."""
    import torch

    full = torch.tensor([list(prompt_ids) + list(ids)])
    with torch.no_grad():
        logits = model(input_ids=full).logits[0, len(prompt_ids) - 1:-1].float()
    lp = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(list(ids)).unsqueeze(1)).squeeze(1)
    return [float(x) for x in lp]


def drift_study(sft_steps: int = 150, max_new_tokens: int = 24, seed: int = 0) -> DriftStudy:
    """One completion per addition problem from the warmed-up tiny Qwen2, sampled one at a time (no padding)."""
    import torch

    from agentrl_ref.agent.concurrency import torch_threads
    from agentrl_ref.teaching.shared.tiny_qwen import (addition_task, corpus, hf_tokenizer, sft_warmup, tiny_qwen,
                                                       train_tokenizer)
    from agentrl_ref.token_in_out import first_drift

    problems = addition_task(seed)
    tokenizer = train_tokenizer(corpus(problems))
    chat = hf_tokenizer(tokenizer)
    model = tiny_qwen(tokenizer.get_vocab_size(), seed=seed)
    if sft_steps:
        sft_warmup(model, tokenizer, problems, steps=sft_steps, seed=seed)
    model.eval()
    eos = chat.eos_token_id

    def encode(text):
        return tokenizer.encode(text).ids

    def decode(ids):
        return tokenizer.decode(ids, skip_special_tokens=False)

    completions = []
    torch.manual_seed(seed)
    with torch_threads(), torch.no_grad():
        for p in problems:
            prompt = chat.apply_chat_template(p.prompt, add_generation_prompt=True, tokenize=True, return_dict=False)
            prompt = list(prompt["input_ids"] if isinstance(prompt, dict) else prompt)
            out = model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                                 do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=max_new_tokens,
                                 eos_token_id=eos, pad_token_id=chat.pad_token_id, output_logits=True,
                                 return_dict_in_generate=True)
            ids = out.sequences[0, len(prompt):].tolist()
            if eos in ids:
                ids = ids[:ids.index(eos) + 1]
            steps = torch.stack(out.logits[:len(ids)], dim=1)[0].float()
            lp = torch.log_softmax(steps, dim=-1).gather(1, torch.tensor(ids).unsqueeze(1)).squeeze(1).tolist()
            drift = first_drift(ids, encode, decode)
            again = encode(decode(ids))
            kept = _logprobs(model, prompt, ids)
            retok = _logprobs(model, prompt, again) if drift is not None and again else []
            completions.append(Completion(tuple(prompt), tuple(ids), tuple(lp), tuple(again), drift, tuple(kept),
                                          tuple(retok)))
    return DriftStudy(tuple(completions), sft_steps, tokenizer.get_vocab_size(), tokenizer, chat)


def ratio_at_drift(c: Completion) -> float:
    """exp(new - old) at the first drifted position: the retokenized id's log-prob over the sampled id's."""
    t = c.drift
    if t is None or t >= len(c.again) or t >= len(c.ids):
        return float("nan")
    return math.exp(c.retok_logprobs[t] - c.sampler_logprobs[t])


def sequence_ratio(c: Completion) -> float:
    """p(retokenized ids) / p(sampled ids) under the same weights: the same text, another tokenization."""
    return math.exp(sum(c.retok_logprobs) - sum(c.sampler_logprobs))


def kept_max_deviation(study: DriftStudy) -> float:
    """max |exp(trainer - sampler) - 1| over every sampled id, token in, token out."""
    return max(abs(math.exp(k - s) - 1) for c in study.completions for k, s in zip(c.kept_logprobs,
                                                                                   c.sampler_logprobs))


def drift_table(study: DriftStudy, clip: float = 0.2) -> str:
    """The measurement as a Markdown table (Chinese)."""
    n, drifted = len(study.completions), study.drifted
    at = [ratio_at_drift(c) for c in drifted]
    at = [r for r in at if math.isfinite(r)]
    seq = [sequence_ratio(c) for c in drifted if c.retok_logprobs]
    outside = sum(1 for r in at if not 1 - clip <= r <= 1 + clip)
    n_tokens = sum(len(c.ids) for c in study.completions)
    rows = [
        ("采样的回答", f"{n} 条（{n_tokens} 个 token）"),
        ("不是 canonical 分词的（encode(decode(ids)) != ids）", f"{len(drifted)} 条（{len(drifted) / n:.0%}）"),
        ("token in, token out：全部采样 id 上 max \\|ratio − 1\\|", f"{kept_max_deviation(study):.1e}"),
    ]
    if at:
        rows += [
            ("重新分词：第一个不同位置的 ratio（最小 / 中位数 / 最大）",
             f"{min(at):.3g} / {statistics.median(at):.3g} / {max(at):.3g}"),
            (f"其中落在 PPO 裁剪区间 [{1 - clip:g}, {1 + clip:g}] 之外的", f"{outside} / {len(at)}"),
        ]
    if seq:
        rows.append(("重新分词：整条序列的 ratio p(retok) / p(sampled)（最小 / 最大）",
                     f"{min(seq):.3g} / {max(seq):.3g}"))
    return markdown_table(("量", "值"), rows)


def _show(tokenizer, ids) -> str:
    pieces = [tokenizer.id_to_token(i) for i in ids]
    return " ".join(f"`{p}`" for p in pieces)


def drift_examples(study: DriftStudy, k: int = 3) -> str:
    """A few drifted completions around their first drifted position: the sampled ids, the re-encoded ones, the
    two log-probs there."""
    rows = []
    for c in study.drifted[:k]:
        t = c.drift
        lo = max(0, t - 2)
        sampled = _show(study.tokenizer, c.ids[lo:t + 3])
        again = _show(study.tokenizer, c.again[lo:t + 2])
        old = f"{c.sampler_logprobs[t]:.2f}" if t < len(c.ids) else "—"
        new = f"{c.retok_logprobs[t]:.2f}" if t < len(c.retok_logprobs) else "—"
        rows.append((str(t), sampled, again, old, new))
    header = ("位置 t", "采样的 id（t−2 起）", "往返后的 id", "log p_采样(ids[t])", "log p_训练(retok[t])")
    return markdown_table(header, rows)
