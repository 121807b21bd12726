"""The GRPO trainer both runners use (grpo_trainer.grpo in one process, two_process.grpo_two_process in two).

    trainer = Trainer(policy, task, cfg, resolve_parts(MY_PARTS))
    buffer, versioned = trainer.new_buffer()       # exercise 4's buffer (or the student's)
    await trainer.trainer(buffer, versioned, admit) # takes batches, trains, publishes versions

Rollout workers claim *chunks* (prompts_per_step / n_workers prompts x group_size samples), generate them with
the current weights and put each trajectory {"policy_version", "group", "episode"} into the buffer.
Staleness is bounded on the producer side, by AReaL's admission rule: a chunk may start only while
trajectories started so far <= (max_staleness + version + 1) * batch_size; the buffer's own
get_batch(current_version=...) (ex4) then drops anything older than max_staleness (it never has to).
The trainer takes batch_size trajectories, scores them with the composite reward (ex1 + ex2 + ex5),
normalises per group and broadcasts to tokens (ex6; or the student's parts.advantages), builds the loss
mask (ex3), and steps on parts.loss (the exercise's clipped_pg_loss by default), once per batch or on
cfg.minibatches slices. Trajectories older than the weights being trained go into the loss as cfg.correction
says (off_policy_inputs: PPO against the behaviour policy, AReaL's decoupled objective, or no correction).
"""
from __future__ import annotations

import asyncio
import random
import time

import torch

from agentrl_ref.agent.aggregation import aggregated
from agentrl_ref.agent.batch import Batch, collate, token_logp
from agentrl_ref.agent.concurrency import torch_threads
from agentrl_ref.agent.episode import Episode
from agentrl_ref.agent.grpo_config import ADAM_BETAS, CORRECTIONS, DECOUPLED_WEIGHT_CAP, GRPOConfig
from agentrl_ref.agent.parts import build_reward_fn, default_loss_fn, reference_part, resolve_parts
from agentrl_ref.agent.rollout import sample_episodes
from agentrl_ref.agent.schedule import COST_MODEL
from agentrl_ref.agent.task import Task


def _stats_fn():
    try:
        from agentrl_ref.agent.loss import pg_stats
    except ImportError:  # the grading sandbox hides loss.py
        return None
    return pg_stats


def make_buffer(cls, batch_size: int, capacity: int, max_staleness: int):
    """(buffer, versioned): ex4's reference takes max_staleness; a student's class may not."""
    try:
        return cls(batch_size, capacity, max_staleness=max_staleness), True
    except TypeError:
        return cls(batch_size, capacity), False


def _groups(batch: list[dict], group_size: int) -> list[dict]:
    """The batch with every group's samples contiguous (stable order); ValueError if a group is incomplete."""
    order: dict = {}
    for traj in batch:
        order.setdefault(traj["group"], []).append(traj)
    if any(len(members) != group_size for members in order.values()):
        raise ValueError("the buffer returned a batch that splits a group: "
                         "batch_size must be a multiple of group_size and get_batch must return the oldest first")
    return [traj for members in order.values() for traj in members]


def _group_diagnostics(correct, totals, tool, token_adv, mask, group_size) -> dict[str, float]:
    """Where the advantages come from: the share of groups whose answers differ in correctness, the share whose
    total rewards differ at all, and the mean advantage of the episodes that called the tool (NaN if none did)."""
    groups = range(0, len(correct), group_size)
    acc_differ = sum(len(set(correct[g:g + group_size])) > 1 for g in groups)
    total_differ = sum(max(totals[g:g + group_size]) - min(totals[g:g + group_size]) > 1e-9 for g in groups)
    per_seq = (token_adv * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
    with_tool = [float(a) for a, t in zip(per_seq.tolist(), tool) if t]
    return {"groups_acc_differ": acc_differ / len(groups), "groups_reward_differ": total_differ / len(groups),
            "tool_advantage": sum(with_tool) / len(with_tool) if with_tool else float("nan")}


def off_policy_inputs(correction: str, logp_prox: torch.Tensor, logp_behave: torch.Tensor, token_adv: torch.Tensor,
                      cap: float = DECOUPLED_WEIGHT_CAP) -> tuple[torch.Tensor, torch.Tensor]:
    """(logp_old, advantages) to hand to the loss, for trajectories sampled by a behaviour policy pi_behave that may be
    older than the weights pi_theta being trained. The loss itself (exercise 7's blank) is never changed:

    behave     ratio pi_theta / pi_behave, clipped: PPO as written, what the page trains with.
    decoupled  AReaL's decoupled PPO (arXiv 2505.24298): the ratio is taken against the proximal policy pi_prox (the
               weights before this batch's first update; with one update per batch, the weights being trained, so
               the ratio is 1 and the clip never acts) and each token's term is weighted by pi_prox / pi_behave
               (no gradient). A weight > 0 can go into the advantage: -w min(rA, clip(r)A) = -min(r wA, clip(r) wA).
               Tokens whose weight exceeds `cap` get weight 0 (AReaL's token mask, DECOUPLED_WEIGHT_CAP); they still
               count in the token mean's denominator, as in AReaL.
    recompute  no correction: the old log-probs are recomputed with the proximal weights, as if the data had been
               sampled by them (AReaL with recompute_logprob and without the decoupled loss).
    logp_prox carries no gradient. Every input is per token: a trajectory whose generation was interrupted by a
    weight update (exercise 10, Episode.versions) carries each token's log-prob under the version that sampled it.
    """
    if correction == "behave":
        return logp_behave, token_adv
    if correction == "recompute":
        return logp_prox, token_adv
    if correction != "decoupled":
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    weight = torch.exp(logp_prox - logp_behave)
    weight = torch.where(weight <= cap, weight, torch.zeros_like(weight))
    return logp_prox, token_adv * weight


def _weight_stats(logp_prox: torch.Tensor, logp_behave: torch.Tensor, mask: torch.Tensor,
                  cap: float = DECOUPLED_WEIGHT_CAP) -> dict[str, float]:
    """Over the trained tokens: the share whose weight pi_prox / pi_behave exceeds the cap (left out), and the
    effective share of the kept weights, (sum w)^2 / (n sum w^2) (1 when all are equal, small when a few dominate)."""
    keep = mask > 0
    weight = torch.exp(logp_prox - logp_behave)[keep].double()
    if weight.numel() == 0:
        return {"capped_share": float("nan"), "weight_ess": float("nan")}
    kept = weight[weight <= cap]
    ess = float(kept.sum() ** 2 / (kept.numel() * (kept ** 2).sum())) if kept.numel() else float("nan")
    return {"capped_share": float((weight > cap).double().mean()), "weight_ess": ess}


def group_center(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """[B] rewards minus the mean of their group, not divided by its std (Dr. GRPO's advantage)."""
    groups = rewards.to(torch.float64).view(-1, group_size)
    return (groups - groups.mean(dim=1, keepdim=True)).view(-1).to(torch.float32)


def sample_chunk(policy, task: Task, cfg: GRPOConfig, c: int, watch=None) -> list[Episode]:
    """Chunk c of a run: prompts_per_step / n_workers problems x group_size samples, from the chunk's own seeds (so the
    same chunk with the same weights gives the same episodes in any process). watch: interruptible generation
    (rollout.py): the weights may change between decode steps, or the chunk be aborted."""
    problems = task.sample(random.Random(f"grpo-{cfg.seed}-chunk-{c}"), cfg.prompts_per_step // cfg.n_workers)
    generator = torch.Generator().manual_seed(cfg.seed * 1_000_003 + c)
    return sample_episodes(policy, problems, group_size=cfg.group_size, generator=generator, watch=watch)


def chunk_work(episodes: list[Episode]) -> dict:
    """What generating a chunk computed: rows, decoded positions (from the shortest prompt to the longest episode's
    end: the sampler advances every row until the last one finishes) and their simulated seconds (COST_MODEL)."""
    prompt = min(next(start for role, start, _ in e.spans if role == "assistant") for e in episodes)
    positions = max(len(e) for e in episodes) - prompt
    return {"rows": len(episodes), "positions": positions, "cost": COST_MODEL.chunk(len(episodes), positions)}


def _k3(logp_from: torch.Tensor, logp_to: torch.Tensor, mask: torch.Tensor) -> float:
    """k3 estimate of KL(pi_from || pi_to) per trained token (samples drawn where pi_from's log-probs were taken)."""
    log_ratio = (logp_to - logp_from).float()
    n = mask.sum().clamp(min=1.0)
    return float((((torch.exp(log_ratio) - 1) - log_ratio) * mask).sum() / n)


def needed_version(c: int, chunk_size: int, batch_size: int, max_staleness: int) -> int:
    """The oldest policy version chunk c may be generated with: AReaL's admission rule
    (c + 1) * chunk_size <= (max_staleness + version + 1) * batch_size, solved for version."""
    return max(0, -(-(c + 1) * chunk_size // batch_size) - max_staleness - 1)


class Trainer:
    """The trainer's side of a run (and the in-process rollout workers); `parts` as resolve_parts() takes them."""

    def __init__(self, policy, task: Task, cfg: GRPOConfig, parts=None, on_update=None, progress=None):
        parts = resolve_parts(parts)
        if parts.advantages is not None and not cfg.default_advantages:
            raise ValueError("parts.advantages (an advantage_fn) replaces group_normalize + broadcast_to_tokens: use "
                             f"it with credit='broadcast' and scale_rewards='group', not {cfg.credit!r}, "
                             f"{cfg.scale_rewards!r}")
        self.policy, self.task, self.cfg, self.parts = policy, task, cfg, parts
        self.loss_fn = aggregated(parts.loss or default_loss_fn(), cfg.loss_agg, policy.max_len)
        self.on_update = on_update
        self.on_batch = None  # on_batch(batch, version) before each step trains: e.g. per-token staleness (ex10)
        self.progress = progress
        self.stats_fn = _stats_fn()
        self.reference_accuracy = reference_part("accuracy_reward")
        self.reward_fn = build_reward_fn(parts, cfg.reward_weights, cfg.cos_max_len)
        self.opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr, betas=ADAM_BETAS)
        self.chunk_prompts = cfg.prompts_per_step // cfg.n_workers
        self.chunk_size = self.chunk_prompts * cfg.group_size
        self.n_chunks = cfg.steps * cfg.n_workers
        self.version = 0
        self.next_chunk = 0
        self.history: list[dict] = []
        self.step_times: list[tuple[float, float]] = []  # perf_counter() at the start and end of each train_step
        self.chunks: list[dict | None] = [None] * self.n_chunks
        self.last_batch: list[Episode] = []

    # --- rollout side ---------------------------------------------------------------------
    def _admitted(self) -> bool:
        """AReaL's rule: started + this chunk <= (max_staleness + version + 1) * batch_size (or nothing left)."""
        c = self.next_chunk
        return c >= self.n_chunks or self.version >= needed_version(c, self.chunk_size, self.cfg.batch_size,
                                                                    self.cfg.max_staleness)

    def generate_chunk(self, c: int) -> tuple[int, list[Episode], float]:
        t0 = time.thread_time()
        episodes = sample_chunk(self.policy, self.task, self.cfg, c)
        return self.version, episodes, time.thread_time() - t0

    async def worker(self, w: int, buffer, admit: asyncio.Condition) -> None:
        while True:
            async with admit:
                await admit.wait_for(self._admitted)
                if self.next_chunk >= self.n_chunks:
                    return
                c, self.next_chunk = self.next_chunk, self.next_chunk + 1
            version, episodes, seconds = self.generate_chunk(c)  # no await inside: one version per chunk
            self.chunks[c] = {"chunk": c, "worker": w, "version": version, "seconds": seconds, **chunk_work(episodes)}
            for i, episode in enumerate(episodes):
                await buffer.put({"policy_version": version, "group": (c, i // self.cfg.group_size),
                                  "episode": episode})
            await asyncio.sleep(0)  # let the other workers and the trainer run

    # --- trainer side ---------------------------------------------------------------------
    def token_advantages(self, advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.cfg.credit == "broadcast":
            return self.parts.broadcast_to_tokens(advantages, mask)
        return torch.stack([torch.as_tensor(self.parts.assign_reward_last_token(float(a), m), dtype=torch.float32)
                            for a, m in zip(advantages, mask)])

    def update(self, b, token_adv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, float, dict]:
        """cfg.minibatches optimizer steps on consecutive slices of the batch (PPO's minibatches; one by default).

        The proximal policy of the decoupled objective (and the recomputed old log-probs) are the weights before the
        first of them: with one minibatch, the same forward pass that gives logp_new; with more, one extra forward
        pass without gradient, as AReaL recomputes them. With cfg.measure_steps, how far this batch moved the policy
        is measured on the first minibatch's rows (a sample of the batch): their log-probs before the first update
        (the first minibatch's own forward pass) against one more forward pass after the last. Returns logp_new,
        logp_old and advantages as the losses saw them (rows in batch order, no gradient), the mean loss, and
        {"extra_forwards": full forward passes added, in fractions of the batch; with measure_steps "step_kl"}."""
        cfg = self.cfg
        rows = torch.arange(b.tokens.shape[0]).chunk(cfg.minibatches)
        proximal, extra = None, {"extra_forwards": 0.0}
        if cfg.minibatches > 1 and cfg.correction != "behave":
            with torch.no_grad():
                proximal = token_logp(self.policy, b)
            extra["extra_forwards"] += 1.0
        seen_new, seen_old, seen_adv, losses = [], [], [], []
        for part in rows:
            sub = Batch(b.tokens[part], b.mask[part], b.logp_old[part])
            logp_new = token_logp(self.policy, sub)
            prox = logp_new.detach() if proximal is None else proximal[part]
            logp_old, adv = off_policy_inputs(cfg.correction, prox, sub.logp_old, token_adv[part])
            loss = self.loss_fn(logp_new, logp_old, adv, sub.mask, cfg.clip_eps)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), 1.0)
            self.opt.step()
            seen_new.append(logp_new.detach())
            seen_old.append(logp_old)
            seen_adv.append(adv)
            losses.append(float(loss.detach()))
        if cfg.measure_steps:  # KL(before this batch || after it) on the first minibatch's trained tokens
            first = Batch(b.tokens[rows[0]], b.mask[rows[0]], b.logp_old[rows[0]])
            with torch.no_grad():
                after = token_logp(self.policy, first)
            extra["extra_forwards"] += len(rows[0]) / b.tokens.shape[0]
            extra["step_kl"] = _k3(seen_new[0], after, first.mask)
        return (torch.cat(seen_new), torch.cat(seen_old), torch.cat(seen_adv), sum(losses) / len(losses), extra)

    def train_step(self, batch: list[dict]) -> dict:
        cfg = self.cfg
        t0 = time.thread_time()
        batch = _groups(batch, cfg.group_size)
        episodes = [traj["episode"] for traj in batch]
        scores = [self.reward_fn(e.answer_text, e.problem.answer) for e in episodes]
        total = torch.tensor([float(s["total"]) for s in scores])
        b = collate(episodes, self.parts, cfg.train_tool_tokens)
        if self.parts.advantages is not None:  # the student's own wiring: [B] rewards -> [B, T] token advantages
            token_adv = self.parts.advantages(total, cfg.group_size, b.mask)
        elif cfg.scale_rewards == "group":
            token_adv = self.token_advantages(self.parts.group_normalize(total, cfg.group_size), b.mask)
        else:
            token_adv = self.token_advantages(group_center(total, cfg.group_size), b.mask)
        logp_new, logp_old, adv, loss, extra = self.update(b, token_adv)
        rows, length = b.tokens.shape
        row = {"step": len(self.history), "loss": loss,
               "staleness": sum(self.version - t["policy_version"] for t in batch) / len(batch),
               "rows": rows, "length": length, "extra_forwards": extra["extra_forwards"],
               "train_cost": COST_MODEL.step(rows, length, extra["extra_forwards"])}
        if "step_kl" in extra:
            row["step_kl"] = extra["step_kl"]
        if cfg.correction == "decoupled":  # how the importance weights pi_prox / pi_behave were spread
            row.update(_weight_stats(logp_old, b.logp_old, b.mask))
        for key in scores[0]:
            row[f"reward_{key}"] = sum(float(s[key]) for s in scores) / len(scores)
        # measured apart from the reward, with the reference accuracy_reward: the weights, the wiring or a student's
        # reward change what is learnt, never the metric
        correct = [self.reference_accuracy(e.answer_text, e.problem.answer) == 1.0 for e in episodes]
        tool = [e.tool_calls > 0 for e in episodes]
        row["accuracy"] = sum(correct) / len(correct)
        row["tool_rate"] = sum(tool) / len(tool)
        row["copy_rate"] = (sum(c for c, t in zip(correct, tool) if t) / sum(tool)) if any(tool) else float("nan")
        row["response_tokens"] = sum(e.assistant_tokens() for e in episodes) / len(episodes)
        row.update(_group_diagnostics(correct, total.tolist(), tool, token_adv.detach(), b.mask, cfg.group_size))
        if self.stats_fn is not None:  # clip_frac and approx_kl of what the loss saw; behave_kl: how old the data is
            row.update(self.stats_fn(logp_new.detach(), logp_old, adv, b.mask, cfg.clip_eps))
            if cfg.correction == "behave":  # the loss saw the behaviour log-probs already
                row["behave_kl"] = row["approx_kl"]
            else:
                behave = self.stats_fn(logp_new.detach(), b.logp_old, token_adv, b.mask, cfg.clip_eps)
                row["behave_kl"] = behave["approx_kl"]
        row["train_seconds"] = time.thread_time() - t0
        self.last_batch = episodes
        return row

    async def trainer(self, buffer, versioned: bool, admit: asyncio.Condition) -> None:
        for step in range(self.cfg.steps):
            wait = buffer.get_batch(current_version=self.version) if versioned else buffer.get_batch()
            try:
                batch = await asyncio.wait_for(wait, timeout=self.cfg.batch_timeout)
            except asyncio.TimeoutError:
                raise RuntimeError(
                    f"step {step}: no batch of {self.cfg.batch_size} trajectories after {self.cfg.batch_timeout} s "
                    f"(buffer holds {len(getattr(buffer, 'buf', ()))}); does put() wake get_batch, and does the "
                    "buffer keep at least batch_size trajectories?") from None
            stale = max(self.version - t["policy_version"] for t in batch)
            if stale > self.cfg.max_staleness:
                raise RuntimeError(f"step {step}: got a trajectory {stale} versions old (max_staleness "
                                   f"{self.cfg.max_staleness}); the buffer must return the oldest first")
            if self.on_batch is not None:
                self.on_batch(batch, self.version)
            start = time.perf_counter()
            self.history.append(self.train_step(batch))  # one torch thread: run() holds torch_threads()
            self.step_times.append((start, time.perf_counter()))
            async with admit:
                self.version += 1
                admit.notify_all()
            if self.on_update is not None:  # e.g. keep a copy of every published version (evaluated later)
                self.on_update(self.version, self.policy)
            if self.progress is not None:
                row = self.history[-1]
                self.progress(step + 1, self.cfg.steps,
                              f"训练批准确率 {row['accuracy']:.0%}，工具调用率 {row['tool_rate']:.0%}")
            await asyncio.sleep(0)  # hand over to the workers the new version admitted

    def new_buffer(self) -> tuple:
        """(exercise 4's buffer, or the student's, whether its get_batch takes current_version)."""
        cfg = self.cfg
        capacity = (cfg.max_staleness + 1) * cfg.batch_size  # the admission rule never has more in flight
        return make_buffer(self.parts.AsyncRolloutBuffer, cfg.batch_size, capacity, cfg.max_staleness)

    @staticmethod
    def dropped(buffer) -> tuple[int, int]:
        """(stale, overflow) trajectories the buffer dropped, 0 where it does not count them."""
        return getattr(buffer, "dropped_stale", 0), getattr(buffer, "dropped_overflow", 0)

    async def run(self) -> tuple:
        cfg = self.cfg
        buffer, versioned = self.new_buffer()
        admit = asyncio.Condition()
        workers = [asyncio.ensure_future(self.worker(w, buffer, admit)) for w in range(cfg.n_workers)]
        try:
            with torch_threads():
                await self.trainer(buffer, versioned, admit)
            await asyncio.gather(*workers)
        finally:
            for task in workers:
                task.cancel()
        return self.dropped(buffer)
