"""TRL's GRPOTrainer on the tiny model, and the three places where it meets the course's parts.

    cpu_grpo_args(...)      a GRPOConfig for a CPU: use_cpu, no bf16, no saving, no reporting, logs every step
    run_grpo(...)           GRPOTrainer.train() that keeps every batch TRL trained on (ids, masks, advantages)
    completions_of(run, k)  the completions of step k, decoded as TRL decodes them for its reward functions
    reward_rows(...)        per step: what TRL logged next to what the course's functions give on those completions
    advantage_rows(...)     TRL's advantages next to exercise 6's group_normalize on the course's totals
    loss_type_rows(...)     TRL's loss for each loss_type on one batch next to the three aggregations
    mask_rows(...)          apply_chat_template's assistant mask next to exercise 3's mask, per conversation

Checked against trl 1.16.0 and transformers 5.24.0 (requirements.txt). One hook reaches inside TRL:
run_grpo wraps the trainer's _generate_and_score_completions to keep the batch it returns, the very
tensors the loss is computed on; everything else goes through public calls.
"""
from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Sequence

from agentrl_ref.teaching.shared.tiny_qwen import Problem, hf_offline

AGGREGATIONS = ("seq-mean-token-mean", "token-mean", "seq-mean-token-sum-norm")
# TRL 1.16 loss_type -> the aggregation it uses (names as verl's loss_agg_mode); one process, no accumulation
TRL_LOSS_TYPES = {"grpo": "seq-mean-token-mean", "bnpo": "token-mean", "dapo": "token-mean",
                  "dr_grpo": "seq-mean-token-sum-norm"}
TRL_EPS = 1e-4  # TRL adds this to the group std; verl and group_normalize's default add 1e-6


@contextmanager
def quiet_transformers():
    """Silence the FutureWarnings that trl 1.16 triggers inside transformers 5.24 (deprecated names that TRL
    itself still calls, e.g. gradient_checkpointing); nothing the reader could act on."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*is deprecated and will be removed in v6", category=FutureWarning)
        yield


def cpu_grpo_args(output_dir: str, steps: int = 4, seed: int = 0, **overrides):
    """GRPOConfig for this page: 2 prompts x 8 completions per step, short completions, CPU, float32.

    TRL's defaults that matter are kept and printed by the page (loss_type "dapo", beta 0, scale_rewards
    "group"); the learning rate is raised from TRL's 1e-6 so that a few steps change the policy at all.
    """
    with hf_offline():
        from trl import GRPOConfig

    settings = dict(output_dir=output_dir, use_cpu=True, bf16=False, per_device_train_batch_size=16,
                    num_generations=8, max_completion_length=24, max_steps=steps, learning_rate=5e-4,
                    temperature=1.0, logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True,
                    seed=seed, dataloader_num_workers=0)
    settings.update(overrides)
    with quiet_transformers():
        return GRPOConfig(**settings)


@dataclass
class TRLRun:
    trainer: object
    batches: list[dict] = field(default_factory=list)   # what _generate_and_score_completions returned, per step
    log_history: list[dict] = field(default_factory=list)

    @property
    def steps(self) -> list[dict]:
        """trainer.state.log_history without the final summary: one dict per step."""
        return [row for row in self.log_history if "loss" in row]


def dataset_of(problems: Sequence[Problem], conversational: bool = True):
    """datasets.Dataset with columns prompt (messages, or the ChatML text up to the generation prompt) and answer."""
    with hf_offline():
        from datasets import Dataset

    from agentrl_ref.teaching.shared.chat_template import render_chatml

    def prompt(p: Problem):
        return p.prompt if conversational else render_chatml(p.prompt)[0] + "<|im_start|>assistant\n"

    return Dataset.from_list([{"prompt": prompt(p), "answer": p.answer} for p in problems])


def run_grpo(model, tokenizer, problems: Sequence[Problem], reward_funcs: list[Callable], args,
             conversational: bool = True) -> TRLRun:
    """Train with GRPOTrainer for args.max_steps steps on CPU; keep each step's batch. One torch thread."""
    import torch

    with hf_offline():
        from transformers import PrinterCallback
        from trl import GRPOTrainer

    from agentrl_ref.agent.concurrency import torch_threads

    # the model's special ids are the tokenizer's (else transformers rewrites them and says so on stderr)
    for config in (model.config, model.generation_config):
        config.eos_token_id, config.pad_token_id = tokenizer.eos_token_id, tokenizer.pad_token_id
        config.bos_token_id = None
    with torch_threads(), hf_offline():  # one thread: tiny tensors, the same numbers on every machine; no usage ping
        with quiet_transformers():
            trainer = GRPOTrainer(model=model, reward_funcs=reward_funcs, args=args,
                                  train_dataset=dataset_of(problems, conversational), processing_class=tokenizer)
            trainer.remove_callback(PrinterCallback)  # the page prints its own tables; the logs stay in state
            run = TRLRun(trainer)
            score = trainer._generate_and_score_completions  # TRL internal: returns the batch the loss is computed on

            def keep(inputs):
                batch = score(inputs)
                run.batches.append({k: v.detach().clone() if isinstance(v, torch.Tensor) else v
                                    for k, v in batch.items()})
                return batch

            trainer._generate_and_score_completions = keep
            trainer.train()
    run.log_history = list(trainer.state.log_history)
    return run


def completions_of(run: TRLRun, step: int) -> list[str]:
    """The completions of step `step` (0-based) as text, decoded the way TRL decodes them for reward functions."""
    tokenizer = run.trainer.processing_class
    return tokenizer.batch_decode(run.batches[step]["completion_ids"], skip_special_tokens=True)


def prompts_of(run: TRLRun, step: int) -> list[str]:
    tokenizer = run.trainer.processing_class
    return tokenizer.batch_decode(run.batches[step]["prompt_ids"], skip_special_tokens=True)


def answers_of(run: TRLRun, step: int, problems: Sequence[Problem]) -> list[str]:
    """The gold answer of every completion of step `step`, found from its prompt's user message."""
    gold = {p.prompt[-1]["content"]: p.answer for p in problems}
    answers = []
    for prompt in prompts_of(run, step):
        question = next((q for q in gold if q in prompt), None)
        if question is None:
            raise ValueError(f"no problem matches the prompt {prompt!r}")
        answers.append(gold[question])
    return answers


def reward_rows(run: TRLRun, problems: Sequence[Problem], reward_fn: Callable, name: str = "composite_reward"
                ) -> list[dict]:
    """Per step: TRL's logged means (rewards/<name>/mean and each <name>/<component>) and the same means of
    reward_fn (a course composite) recomputed on the decoded completions."""
    rows = []
    for k, logged in enumerate(run.steps):
        scores = [reward_fn(c, a) for c, a in zip(completions_of(run, k), answers_of(run, k, problems))]
        course = {key: sum(s[key] for s in scores) / len(scores) for key in scores[0]}
        trl = {key: logged[f"{name}/{key}"] for key in scores[0] if key != "total"}
        trl["total"] = logged[f"rewards/{name}/mean"]
        rows.append({"step": k + 1, "trl": trl, "course": course})
    return rows


def advantage_rows(run: TRLRun, problems: Sequence[Problem], reward_fn: Callable, group_size: int) -> list[dict]:
    """Per step: max |TRL advantage - group_normalize(course totals)| with TRL's eps and with the default eps."""
    import torch

    from agentrl_ref.token_credit import group_normalize

    rows = []
    for k, batch in enumerate(run.batches):
        prompts = prompts_of(run, k)
        if any(len(set(prompts[i:i + group_size])) != 1 for i in range(0, len(prompts), group_size)):
            raise ValueError("the completions of one prompt are not contiguous")
        totals = torch.tensor([reward_fn(c, a)["total"]
                               for c, a in zip(completions_of(run, k), answers_of(run, k, problems))])
        trl = batch["advantages"].float()
        rows.append({"step": k + 1, "trl": trl, "totals": totals,
                     "diff_trl_eps": float((trl - group_normalize(totals, group_size, eps=TRL_EPS)).abs().max()),
                     "diff_default_eps": float((trl - group_normalize(totals, group_size)).abs().max())})
    return rows


def flattest_group(rows: list[dict], group_size: int) -> tuple[int, int]:
    """(step index, group index) of the group whose total rewards have the smallest std above 0 (of advantage_rows);
    a group of equal rewards has advantage 0 whatever the eps, so it is skipped."""
    candidates = [(float(r["totals"].view(-1, group_size)[g].std()), k, g)
                  for k, r in enumerate(rows) for g in range(len(r["totals"]) // group_size)]
    positive = [c for c in candidates if c[0] > 0]
    if not positive:
        raise ValueError("every group has equal rewards")
    _, step, group = min(positive)
    return step, group


def aggregate(per_token, mask, mode: str, max_len: int | None = None):
    """One scalar from a [B, T] per-token loss and its 0/1 mask; mode is one of AGGREGATIONS (verl's names).

    seq-mean-token-mean      mean over each sequence's tokens, then over sequences (DeepSeekMath's GRPO)
    token-mean               sum over every token of the batch / number of tokens (DAPO; exercise 7's loss)
    seq-mean-token-sum-norm  sum over every token / (B * max_len), a constant (Dr. GRPO)
    """
    mask = mask.to(per_token.dtype)
    if mode == "seq-mean-token-mean":
        return ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    if mode == "token-mean":
        return (per_token * mask).sum() / mask.sum().clamp(min=1.0)
    if mode == "seq-mean-token-sum-norm":
        if max_len is None:
            raise ValueError("seq-mean-token-sum-norm needs max_len (the constant)")
        return (per_token * mask).sum() / (per_token.shape[0] * max_len)
    raise ValueError(f"unknown aggregation {mode!r}; one of {AGGREGATIONS}")


def loss_type_rows(run: TRLRun, step: int = 0, advantages=None) -> list[dict]:
    """TRL's compute_loss on the batch of `step` for every loss_type, next to `aggregate` of the same per-token loss.

    On that batch the policy has not moved yet (TRL's default num_iterations=1), so the ratio is 1 and the
    per-token loss is -advantage on every completion token: the loss types differ only in the divisor.
    advantages (a [B] tensor) replaces the batch's own, e.g. to check with values that do not sum to 0 per group.
    """
    import torch

    trainer, batch = run.trainer, dict(run.batches[step])
    if advantages is not None:
        batch["advantages"] = advantages.to(batch["advantages"].dtype)
    mask = batch["completion_mask"].float()
    per_token = -batch["advantages"].float().unsqueeze(1).expand_as(mask)
    before = trainer.loss_type
    rows = []
    try:
        with quiet_transformers(), torch.no_grad():
            for loss_type, mode in TRL_LOSS_TYPES.items():
                trainer.loss_type = loss_type
                trl = float(trainer.compute_loss(trainer.model, batch))
                course = float(aggregate(per_token, mask, mode, trainer.max_completion_length))
                rows.append({"loss_type": loss_type, "mode": mode, "trl": trl, "course": course})
    finally:
        trainer.loss_type = before
    return rows


def token_weights(mask, mode: str, max_len: int | None = None) -> list[float]:
    """The weight `aggregate` gives each token of each row (the gradient of the loss by that token's loss)."""
    import torch

    x = torch.zeros(mask.shape, dtype=torch.float32, requires_grad=True)
    aggregate(x, mask, mode, max_len).backward()
    return [float(w) for w in (x.grad * mask).amax(-1)]


def mask_rows(tokenizer, conversations: dict[str, list[dict]], model=None) -> list[dict]:
    """Per conversation: transformers' assistant mask vs exercise 3's build_loss_mask (token for token), and,
    given a model, transformers' own masked loss (labels -100 outside the mask) vs the loss with
    shift_mask_for_clm. A token straddling two parts of a message is an error for the course: then
    "course" holds the ValueError's message."""
    import torch
    import torch.nn.functional as F

    from agentrl_ref.loss_mask import build_loss_mask, shift_mask_for_clm
    from agentrl_ref.teaching.shared.chat_template import role_spans_from_tokens, tokenize_chat

    rows = []
    for name, messages in conversations.items():
        out = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True)
        ids, hf_mask = list(out["input_ids"]), list(out["assistant_masks"])
        row = {"name": name, "tokens": len(ids), "hf": hf_mask, "course": None, "same_ids": None,
               "hf_loss": None, "course_loss": None}
        try:
            chat = tokenize_chat(messages, tokenizer.backend_tokenizer)
        except ValueError as error:
            row["course"] = str(error)
            rows.append(row)
            continue
        row["same_ids"] = list(chat.ids) == ids
        row["course"] = build_loss_mask(list(chat.ids), role_spans_from_tokens(chat))
        if model is not None:
            x = torch.tensor([ids])
            with torch.no_grad():
                labels = torch.where(torch.tensor([hf_mask]) == 1, x, torch.full_like(x, -100))
                row["hf_loss"] = float(model(input_ids=x, labels=labels).loss)   # transformers shifts inside
                logits = model(input_ids=x).logits[0, :-1]
                weights = torch.tensor(shift_mask_for_clm(row["course"]), dtype=torch.float32)
                token_loss = F.cross_entropy(logits, x[0, 1:], reduction="none")
                row["course_loss"] = float((token_loss * weights).sum() / weights.sum())
        rows.append(row)
    return rows
