"""A tiny Qwen2 chat model made on the spot, so TRL can be run on a CPU with nothing downloaded.

    with hf_offline():      the Hugging Face offline variables, set while transformers is imported (and only then)
    addition_task()         prompts "What is 3+5?" with gold answers, and demonstrations in exercise 1's format
    train_tokenizer()       a byte-level BPE trained here (tokenizers) with ChatML's two special tokens,
                            the four format tags as ordinary tokens, and a pad token
    hf_tokenizer(tok)       the same tokenizer as a transformers tokenizer, with a ChatML chat template
                            whose {% generation %} markers mark what the assistant writes
    tiny_qwen(vocab_size)   Qwen2ForCausalLM from a config (hidden 64, 2 layers), seeded
    sft_warmup(...)         supervised warm-up on the demonstrations, its loss masked with exercise 3's
                            build_loss_mask + shift_mask_for_clm

The chat template renders exactly what agentrl_ref.teaching.shared.chat_template.render_chatml renders, so the
course's tokenize_chat and transformers' apply_chat_template see the same text and the same tokens.
The format tags are ordinary tokens on purpose: TRL decodes completions with skip_special_tokens=True,
which would delete special ones before any reward function saw them.
"""
from __future__ import annotations

import os
import random
import sys
from contextlib import contextmanager
from dataclasses import dataclass

from agentrl_ref.teaching.shared.chat_template import IM_END, IM_START

HF_OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
              "HF_HUB_DISABLE_TELEMETRY": "1"}
PAD = "<|endoftext|>"
FORMAT_TAGS = ("<think>", "</think>", "<answer>", "</answer>")
VOCAB_SIZE = 384

# ChatML, as render_chatml writes it; the assistant's content and its <|im_end|> are inside
# {% generation %}, so return_assistant_tokens_mask marks them (verl's rule, exercise 3).
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['role'] == 'assistant' -%}"
    "{%- generation -%}{{- message['content'] + '<|im_end|>' -}}{%- endgeneration -%}"
    "{%- else -%}"
    "{{- message['content'] + '<|im_end|>' -}}"
    "{%- endif -%}"
    "{{- '\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

# Extra text the tokenizer learns from, besides the task: the conversations the page tokenizes, a
# little Chinese, and blank lines (so that "\n\n" becomes one token, as in real tokenizers).
EXTRA_CORPUS = [
    "system", "user", "assistant", "tool",
    "You are a math agent. Use the calculator tool for arithmetic.",
    "Let me use the calculator.\n\nThe calculator says 391.",
    '<tool_call>{"name": "mul", "arguments": {"a": 23, "b": 17}}</tool_call>',
    "我来用计算器算一下。\n\n结果是 391。",
    "Let me think.\n\n\nSo the answer is 8.\n\n",
]


@contextmanager
def hf_offline():
    """Inside the block the Hugging Face offline variables are set; afterwards they are as they were.

        with hf_offline():
            import transformers, trl     # they read the variables now, and stay offline in this process

    Nothing here needs the network: the tokenizer is trained and the model built in this process. The variables
    make the libraries fail fast instead of trying a download if that ever changes. huggingface_hub reads them
    once, when it is imported: libraries imported inside the block stay offline in this process, and a process
    started after the block (the GPU script of book/frameworks.md, run from the page's kernel) inherits none of
    them. What reaches the network from libraries imported earlier, online, is telemetry: trl 1.16's trainers send
    a usage ping when they are created (unless offline, HF_HUB_DISABLE_TELEMETRY or CI is set), and huggingface_hub
    checks its telemetry switch at every call, so that switch is off inside the block too (and back after it).
    """
    saved = {key: os.environ.get(key) for key in HF_OFFLINE}
    for key, value in HF_OFFLINE.items():
        os.environ.setdefault(key, value)
    constants = sys.modules.get("huggingface_hub.constants")
    telemetry = constants.HF_HUB_DISABLE_TELEMETRY if constants is not None else None
    if constants is not None:
        constants.HF_HUB_DISABLE_TELEMETRY = True
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if constants is not None:
            constants.HF_HUB_DISABLE_TELEMETRY = telemetry


@dataclass(frozen=True)
class Problem:
    prompt: list[dict]   # one user message
    answer: str          # the gold answer, a str as in the dataset column `answer`
    solution: str        # a demonstration in exercise 1's format


def addition_task(seed: int = 0) -> list[Problem]:
    """Every a+b with single digits a, b (100 problems), shuffled with seed."""
    problems = []
    for a in range(10):
        for b in range(10):
            solution = f"<think>{a}+{b}={a + b}</think><answer>\\boxed{{{a + b}}}</answer>"
            problems.append(Problem([{"role": "user", "content": f"What is {a}+{b}?"}], str(a + b), solution))
    random.Random(seed).shuffle(problems)
    return problems


def corpus(problems: list[Problem]) -> list[str]:
    """The tokenizer's training documents: every prompt and demonstration, and EXTRA_CORPUS ten times."""
    return [p.prompt[0]["content"] for p in problems] + [p.solution for p in problems] + EXTRA_CORPUS * 10


def train_tokenizer(documents: list[str], vocab_size: int = VOCAB_SIZE, tags_special: bool = False):
    """A tokenizers.Tokenizer: byte-level BPE on documents; <|im_start|>, <|im_end|>, <|endoftext|> special;
    the four format tags added as ordinary tokens (as special ones with tags_special, to show what goes
    wrong). Deterministic; milliseconds."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[IM_START, IM_END, PAD],
                                  show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(documents, trainer)
    if tags_special:
        tokenizer.add_special_tokens(list(FORMAT_TAGS))
    else:
        tokenizer.add_tokens(list(FORMAT_TAGS))
    return tokenizer


def hf_tokenizer(tokenizer):
    """transformers' PreTrainedTokenizerFast around tokenizer, with CHAT_TEMPLATE, eos <|im_end|>, pad <|endoftext|>."""
    with hf_offline():
        from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token=IM_END, pad_token=PAD,
                                   chat_template=CHAT_TEMPLATE, padding_side="left")


def tiny_qwen(vocab_size: int, seed: int = 0, hidden: int = 64, layers: int = 2):
    """Qwen2ForCausalLM from a config: 4 heads (2 key/value heads), tied embeddings, float32."""
    import torch

    with hf_offline():
        from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(vocab_size=vocab_size, hidden_size=hidden, intermediate_size=4 * hidden,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=128, tie_word_embeddings=True)
    torch.manual_seed(seed)
    return Qwen2ForCausalLM(config)


@dataclass(frozen=True)
class SFTStats:
    steps: int
    batch_size: int
    first_loss: float
    last_loss: float
    trained_tokens: int   # tokens with mask 1 in one pass over the demonstrations


def sft_warmup(model, tokenizer, problems: list[Problem], steps: int = 150, batch_size: int = 20, lr: float = 3e-3,
               seed: int = 0) -> SFTStats:
    """Supervised warm-up on the demonstrations; only what the assistant writes is trained.

    Each chat [user, assistant] is tokenized with the course's tokenize_chat; the mask is exercise 3's
    build_loss_mask over role_spans_from_tokens (assistant content and <|im_end|>), shifted with
    shift_mask_for_clm together with the labels. Without this warm-up a random model never writes the
    format, every reward is 0, every advantage is 0, and GRPO has no gradient at all.
    """
    import torch
    import torch.nn.functional as F

    from agentrl_ref.agent.concurrency import torch_threads
    from agentrl_ref.loss_mask import build_loss_mask, shift_mask_for_clm
    from agentrl_ref.teaching.shared.chat_template import role_spans_from_tokens, tokenize_chat

    pad_id = tokenizer.token_to_id(PAD)
    rows = []
    for p in problems:
        chat = tokenize_chat(p.prompt + [{"role": "assistant", "content": p.solution}], tokenizer)
        rows.append((list(chat.ids), build_loss_mask(list(chat.ids), role_spans_from_tokens(chat))))
    width = max(len(ids) for ids, _ in rows)
    ids = torch.tensor([r + [pad_id] * (width - len(r)) for r, _ in rows])
    mask = torch.tensor([m + [0] * (width - len(m)) for _, m in rows], dtype=torch.float32)
    attention = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r, _ in rows])
    labels, weights = ids[:, 1:], shift_mask_for_clm(mask)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    losses = []
    with torch_threads():  # one thread: the tensors are tiny, and the result is the same on every machine
        for _ in range(steps):
            pick = torch.randperm(len(rows), generator=generator)[:batch_size]
            logits = model(input_ids=ids[pick], attention_mask=attention[pick]).logits[:, :-1]
            token_loss = F.cross_entropy(logits.transpose(1, 2), labels[pick], reduction="none")
            loss = (token_loss * weights[pick]).sum() / weights[pick].sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    model.eval()
    return SFTStats(steps, batch_size, losses[0], losses[-1], int(mask.sum()))


def sample(model, tokenizer, problems: list[Problem], max_new_tokens: int = 24, seed: int = 0) -> list[str]:
    """One completion per problem, sampled at temperature 1 and decoded as TRL decodes (skip_special_tokens)."""
    import torch

    from agentrl_ref.agent.concurrency import torch_threads

    batch = tokenizer.apply_chat_template([p.prompt for p in problems], add_generation_prompt=True, padding=True,
                                          return_tensors="pt", return_dict=True)
    torch.manual_seed(seed)
    with torch_threads(), torch.no_grad():
        out = model.generate(**batch, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                             max_new_tokens=max_new_tokens, eos_token_id=tokenizer.eos_token_id,
                             pad_token_id=tokenizer.pad_token_id)
    return tokenizer.batch_decode(out[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
