"""Exercise 11's arms as data, and the study that trains them on several seeds in the two worker processes.

    study = run_dapo_study()                              # SFT per seed, every arm from it, held-out evaluations
    study.compare("symmetric", "clip_higher", "entropy")   # per seed: SeedDiffs for verdicts.py's paired t-test

Seed s means: the task, the policy's initialisation, SFT, the problems drawn and the sampling all use seed s; every
arm of a seed starts from the same SFT weights and is evaluated on the same held-out problems (sampled at
temperature 1), so a comparison pairs problem by problem. The SFT runs first (one job per seed), then every
(arm, seed) job, the longest first, on default_processes() workers (concurrency.run_jobs); a job's result depends
only on its arm and seed.

The arm "dynamic_equal" is not trained: it is the "dynamic" arm's weights after its last step whose samples drawn so
far were no more than what the plain arms draw in all their steps (the same generation cost, fewer updates).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace

import torch

from agentrl_ref.agent.batch import collate
from agentrl_ref.agent.concurrency import default_processes, run_jobs, torch_threads
from agentrl_ref.agent.dapo_trainer import DAPOConfig, train_dapo
from agentrl_ref.agent.evaluation import evaluate
from agentrl_ref.agent.parts import resolve_parts
from agentrl_ref.agent.pipeline import fresh_policy
from agentrl_ref.agent.sft_trainer import SFTConfig, sft
from agentrl_ref.agent.task import make_task
from agentrl_ref.agent.verdicts import SeedDiff, paired
from agentrl_ref.dapo_sampling import mean_token_entropy

# the page's seeds; AGENTRL_DAPO_SEEDS="0" (comma-separated) runs fewer (a smoke test): tables and verdicts then use
# only those
DAPO_SEEDS = tuple(int(s) for s in os.environ.get("AGENTRL_DAPO_SEEDS", "0,1,2").split(","))
DAPO_SFT_STEPS = 150        # exercise 9's short SFT: the policy calls the tool on about a quarter of the problems
DAPO_EVAL_PROBLEMS = 256    # held-out problems per evaluation
DAPO_BASE = DAPOConfig()    # 20 steps of 8 groups x 8; 8 minibatches x 2 epochs = 16 updates per batch (DAPO: 16)


@dataclass(frozen=True)
class DAPOArm:
    """label: Chinese, as tables, verdicts and figures show it; overrides: DAPOConfig fields."""

    label: str
    overrides: dict = field(default_factory=dict)


DAPO_ARMS: dict[str, DAPOArm] = {
    "symmetric": DAPOArm("对称裁剪 0.2/0.2"),
    "clip_higher": DAPOArm("clip-higher 0.2/0.28", {"eps_high": 0.28}),
    "dynamic": DAPOArm("clip-higher + 动态采样", {"eps_high": 0.28, "dynamic": True}),
}
EQUAL_COST = "dynamic_equal"
ARM_LABELS = {**{name: arm.label for name, arm in DAPO_ARMS.items()}, EQUAL_COST: "动态采样，抽样数相同时"}
# (metric, arm A, arm B): B against A per seed, paired over the held-out problems
DAPO_COMPARISONS: tuple[tuple[str, str, str], ...] = (
    ("entropy", "symmetric", "clip_higher"),
    ("accuracy", "symmetric", "clip_higher"),
    ("accuracy", "clip_higher", "dynamic"),
    ("accuracy", "clip_higher", EQUAL_COST),
)


@dataclass
class HeldOut:
    """Per held-out problem (in the task's order): correct (0/1) at temperature 1, and the policy's mean token entropy
    on the trained tokens of its own episode."""

    correct: list[int] = field(repr=False)
    entropy: list[float] = field(repr=False)

    @property
    def accuracy(self) -> float:
        return sum(self.correct) / len(self.correct)

    @property
    def mean_entropy(self) -> float:
        return sum(self.entropy) / len(self.entropy)


def held_out(policy, task, seed: int) -> HeldOut:
    """One sampled episode per held-out problem (evaluation.evaluate), and the entropy on each episode's trained
    tokens from one forward pass."""
    result = evaluate(policy, task.test, 1.0, seed=seed)
    b = collate(result.episodes, resolve_parts())
    with torch.no_grad(), torch_threads():
        logits = policy(b.inputs)
        entropy = [float(mean_token_entropy(logits[i:i + 1], b.mask[i:i + 1])) for i in range(len(result.episodes))]
    return HeldOut(list(result.correct), entropy)


@dataclass
class DAPOArmRun:
    arm: str
    seed: int
    history: list[dict] = field(repr=False)
    after: HeldOut = field(repr=False)
    cpu_seconds: float = 0.0

    @property
    def label(self) -> str:
        return ARM_LABELS[self.arm]

    @property
    def samples(self) -> int:
        return self.history[-1]["samples_so_far"]


@dataclass
class DAPOStudy:
    seeds: tuple[int, ...]
    base: DAPOConfig
    runs: dict[tuple[str, int], DAPOArmRun]
    before: dict[int, HeldOut] = field(repr=False)
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0       # every job, every worker
    idle_seconds: float = 0.0      # the busiest worker's CPU seconds, phase by phase: the wall clock on idle cores
    processes: int = 1

    def runs_of(self, arm: str) -> list[DAPOArmRun]:
        return [self.runs[arm, seed] for seed in self.seeds]

    def compare(self, a: str, b: str, metric: str = "accuracy") -> list[SeedDiff]:
        """Per seed: arm b against arm a on the held-out problems ("accuracy" or "entropy"), paired by problem."""
        if metric not in ("accuracy", "entropy"):
            raise ValueError(f"metric must be 'accuracy' or 'entropy', got {metric!r}")
        values = {"accuracy": lambda r: r.after.correct, "entropy": lambda r: r.after.entropy}[metric]
        return paired(self.seeds, [values(r) for r in self.runs_of(a)], [values(r) for r in self.runs_of(b)])


# --- the jobs (in worker processes) -------------------------------------------------------------------------------

def _sft_job(seed: int, *, sft_steps: int, n_eval: int, **_):
    task = make_task(seed, n_test=n_eval)
    policy = fresh_policy(seed)
    sft(policy, task, replace(SFTConfig(), steps=sft_steps, seed=seed))
    return policy.state_dict(), held_out(policy, task, seed)


def _arm_job(arm: str, seed: int, *, states, base: DAPOConfig, n_eval: int, **_) -> list[DAPOArmRun]:
    """The arm trained from seed's SFT weights and evaluated; the dynamic arm also gives EQUAL_COST."""
    t0 = time.process_time()
    task = make_task(seed, n_test=n_eval)
    policy = fresh_policy(seed, states[seed])
    cfg = replace(base, seed=seed, **DAPO_ARMS[arm].overrides)
    equal = base.steps * base.plain_samples if cfg.dynamic else None
    run = train_dapo(policy, task, cfg, keep_at_samples=equal)
    out = [DAPOArmRun(arm, seed, run.history, held_out(policy, task, seed))]
    if equal is not None and run.kept_state is not None:
        policy.load_state_dict(run.kept_state)
        out.append(DAPOArmRun(EQUAL_COST, seed, run.history[:run.kept_step + 1], held_out(policy, task, seed)))
    out[0].cpu_seconds = time.process_time() - t0
    return out


def run_dapo_study(seeds=DAPO_SEEDS, *, base: DAPOConfig = DAPO_BASE, sft_steps: int = DAPO_SFT_STEPS,
                   n_eval: int = DAPO_EVAL_PROBLEMS, processes: int | None = None, progress=None) -> DAPOStudy:
    """SFT for every seed, then every arm of DAPO_ARMS on every seed. progress(done, total, what) as jobs finish."""
    processes = default_processes() if processes is None else processes
    seeds = tuple(seeds)
    t0 = time.perf_counter()
    total, done = len(seeds) * (1 + len(DAPO_ARMS)), [0]

    def report(what: str) -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total, what)

    context = {"sft_steps": sft_steps, "n_eval": n_eval, "base": base}
    sft_out, sft_stats = run_jobs(_sft_job, [(s,) for s in seeds], context=context, processes=processes,
                                  on_done=lambda i, n, value: report("SFT"))
    states = {s: state for s, (state, _) in zip(seeds, sft_out)}
    before = {s: ev for s, (_, ev) in zip(seeds, sft_out)}
    # the dynamic arm draws the most, so it starts first (a job's result does not depend on where it runs)
    jobs = [(arm, s) for arm in sorted(DAPO_ARMS, key=lambda a: not DAPO_ARMS[a].overrides.get("dynamic"))
            for s in seeds]
    out, arm_stats = run_jobs(_arm_job, jobs, context={**context, "states": states}, processes=processes,
                              on_done=lambda i, n, value: report(value[0].label))
    runs = {(r.arm, r.seed): r for runs in out for r in runs}
    return DAPOStudy(seeds, base, runs, before, time.perf_counter() - t0, sft_stats.cpu_seconds + arm_stats.cpu_seconds,
                     sft_stats.busiest_worker + arm_stats.busiest_worker, processes)
