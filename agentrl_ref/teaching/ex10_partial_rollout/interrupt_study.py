"""Exercise 10's page: what a weight update that lands in the middle of a chunk should do (wait, abort, continue), on
the capstone's engine and several seeds.

    study = run_study(StudyConfig(), progress=line)   # per seed: SFT, then every interrupt on the simulated clock,
                                                      # every published version evaluated (deterministic)
    study.compare("wait", "continue", "time_accuracy")  # per seed: the two arms' values (agent/verdicts.py)
    real = measure_real(study, progress=line)         # the same runs in the real two processes (measured, not
                                                      # deterministic: wall clock, trajectories per second)

Every arm of a seed starts from the same SFT weights and trains the same number of steps on the same chunks' seeds
(the problems and the sampler's random numbers of chunk c are the same in every arm); only what happens to a chunk
caught by an update differs. On the simulated clock (agent/interrupt_sim.py) the arms are deterministic and so are
their verdicts; the real runs (agent/two_process.py) measure what the same three answers cost on this machine.

The fair question is exercise 7's: held-out accuracy at the same simulated moment. Every published version is
evaluated on the same n_eval held-out problems (temperature 1, the seed's generator); time_accuracy is, per problem,
how often the newest version published by then got it right, averaged over the simulated time all three arms of the
seed were training (from 0 to the earliest of their last publications).
"""
from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass, field, replace

from agentrl_ref.agent.ablations import VersionEval, _time_weights
from agentrl_ref.agent.arms import PAGE_SEEDS
from agentrl_ref.agent.concurrency import run_jobs, torch_threads
from agentrl_ref.agent.grpo_config import GRPOConfig
from agentrl_ref.agent.two_process import INTERRUPTS
from agentrl_ref.agent.verdicts import SeedDiff, paired

LABELS = {"wait": "wait（等旧权重生成完）", "abort": "abort（丢掉重来）", "continue": "continue（换上新权重接着生成）"}
SHORT = {"wait": "wait", "abort": "abort", "continue": "continue"}


@dataclass(frozen=True)
class StudyConfig:
    seeds: tuple[int, ...] = PAGE_SEEDS   # AGENTRL_CAPSTONE_SEEDS=0 runs one seed (a smoke test, a slow machine)
    sft_steps: int = 150
    steps: int = 16
    prompts_per_step: int = 4             # x group_size = 32 trajectories per step, one chunk: generation dominates
    group_size: int = 8
    max_staleness: int = 1
    correction: str = "decoupled"         # AReaL's objective: per-token weights pi_prox / pi_behave
    n_eval: int = 128
    interrupts: tuple[str, ...] = INTERRUPTS

    def grpo(self, seed: int) -> GRPOConfig:
        """The arms' GRPO settings: one chunk per step (the whole batch in flight at once, as one engine holds it)."""
        return GRPOConfig(steps=self.steps, prompts_per_step=self.prompts_per_step, group_size=self.group_size,
                          n_workers=1, max_staleness=self.max_staleness, correction=self.correction, seed=seed)


@dataclass
class Arm:
    """One interrupt on one seed, on the simulated clock: the run and every published version's evaluation."""

    interrupt: str
    seed: int
    sim: object = field(repr=False)              # agent.interrupt_sim.SimRun
    versions: list[VersionEval] = field(repr=False)
    cpu_seconds: float = 0.0


@dataclass
class Study:
    config: StudyConfig
    before: dict[int, list[int]]                             # seed -> SFT policy's correctness per held-out problem
    states: dict[int, dict] = field(repr=False)              # seed -> SFT weights (the real runs start from them)
    arms: dict[tuple[str, int], Arm] = field(default_factory=dict)
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0      # every job, every process
    idle_seconds: float = 0.0     # the busiest worker's CPU seconds, phase by phase: the wall clock on idle cores

    def horizon(self, seed: int) -> float:
        """The earliest last publication of the seed's arms: the simulated time all of them were training."""
        return min(self.arms[i, seed].sim.seconds for i in self.config.interrupts)

    def time_accuracy(self, interrupt: str, seed: int) -> list[float]:
        """Per held-out problem: how often the newest version published by then got it right, over [0, horizon]."""
        return _time_weights(self.arms[interrupt, seed].versions, self.horizon(seed))

    def final_correct(self, interrupt: str, seed: int) -> list[int]:
        """Per held-out problem, the last version (after all the steps)."""
        return self.arms[interrupt, seed].versions[-1].correct

    def value(self, interrupt: str, seed: int, metric: str) -> float:
        """One number per arm and seed: METRICS' means, or a computed quantity of the simulated run."""
        arm = self.arms[interrupt, seed]
        if metric == "time_accuracy":
            values = self.time_accuracy(interrupt, seed)
            return sum(values) / len(values)
        if metric == "final_accuracy":
            values = self.final_correct(interrupt, seed)
            return sum(values) / len(values)
        if metric == "staleness":
            return arm.sim.mean_token_staleness
        if metric == "throughput":
            return arm.sim.throughput
        if metric == "wasted":
            return arm.sim.generated / arm.sim.kept - 1.0
        raise ValueError(f"unknown metric {metric!r}")

    def compare(self, a: str, b: str, metric: str) -> list[SeedDiff]:
        """Per seed: interrupt b against interrupt a. Accuracies are paired over the same held-out problems; the
        computed quantities (staleness, throughput, wasted) sample nothing, so their standard error is 0 and only
        the spread across seeds can make them uncertain."""
        seeds = list(self.config.seeds)
        if metric == "time_accuracy":
            return paired(seeds, [self.time_accuracy(a, s) for s in seeds], [self.time_accuracy(b, s) for s in seeds])
        if metric == "final_accuracy":
            return paired(seeds, [self.final_correct(a, s) for s in seeds], [self.final_correct(b, s) for s in seeds])
        return [SeedDiff(s, self.value(a, s, metric), self.value(b, s, metric), 0.0) for s in seeds]


# --- the jobs (run in worker processes, fork) -----------------------------------------------------------------

def _task(seed: int, cfg: StudyConfig):
    from agentrl_ref.agent.task import make_task

    return make_task(seed, n_test=cfg.n_eval)


def _sft_job(seed: int, *, cfg: StudyConfig, **_):
    from agentrl_ref.agent.evaluation import evaluate
    from agentrl_ref.agent.pipeline import fresh_policy
    from agentrl_ref.agent.sft_trainer import SFTConfig, sft

    task = _task(seed, cfg)
    with torch_threads():
        policy = fresh_policy(seed)
        sft(policy, task, replace(SFTConfig(), steps=cfg.sft_steps, seed=seed))
        before = evaluate(policy, task.test, 1.0, seed=seed).correct
    return copy.deepcopy(policy.state_dict()), list(before)


def _arm_job(interrupt: str, seed: int, *, cfg: StudyConfig, states: dict, **_) -> Arm:
    from agentrl_ref.agent.evaluation import evaluate
    from agentrl_ref.agent.interrupt_sim import simulate_interrupts
    from agentrl_ref.agent.pipeline import fresh_policy

    c0 = time.process_time()
    task = _task(seed, cfg)
    policy = fresh_policy(seed, states[seed])
    snapshots = [copy.deepcopy(policy.state_dict())]
    sim = simulate_interrupts(policy, task, cfg.grpo(seed), interrupt,
                              on_update=lambda version, pol: snapshots.append(copy.deepcopy(pol.state_dict())))
    versions = []
    with torch_threads():
        for v, state in enumerate(snapshots):
            policy.load_state_dict(state)
            versions.append(VersionEval(v, sim.publish[v], list(evaluate(policy, task.test, 1.0, seed=seed).correct)))
    return Arm(interrupt, seed, sim, versions, time.process_time() - c0)


def run_study(cfg: StudyConfig = StudyConfig(), *, progress=None, processes: int | None = None) -> Study:
    """SFT for every seed, then every interrupt on every seed on the simulated clock, in worker processes (both
    cores). progress(done, total, what) as jobs finish."""
    t0 = time.perf_counter()
    total = len(cfg.seeds) * (1 + len(cfg.interrupts))
    done = [0]

    def report(what):
        done[0] += 1
        if progress is not None:
            progress(done[0], total, what)

    sft_out, sft_stats = run_jobs(_sft_job, [(s,) for s in cfg.seeds], context={"cfg": cfg}, processes=processes,
                                  on_done=lambda i, n, value: report("SFT"))
    states = {s: state for s, (state, _) in zip(cfg.seeds, sft_out)}
    before = {s: correct for s, (_, correct) in zip(cfg.seeds, sft_out)}
    jobs = [(i, s) for s in cfg.seeds for i in cfg.interrupts]
    arms, arm_stats = run_jobs(_arm_job, jobs, context={"cfg": cfg, "states": states}, processes=processes,
                               on_done=lambda i, n, arm: report(f"种子 {arm.seed}：{SHORT[arm.interrupt]}"))
    return Study(cfg, before, states, {(a.interrupt, a.seed): a for a in arms}, time.perf_counter() - t0,
                 sft_stats.cpu_seconds + arm_stats.cpu_seconds, sft_stats.busiest_worker + arm_stats.busiest_worker)


# --- the real two processes (measured) -------------------------------------------------------------------------

@dataclass
class RealRun:
    """One interrupt on one seed in the real two processes (agent/two_process.py), what its clocks measured."""

    interrupt: str
    seed: int
    seconds: float            # wall clock until the last version was published
    throughput: float         # trajectories trained on per wall-clock second
    generated: int
    kept: int
    token_staleness: dict[int, int]
    aborts: int
    switches: int
    trainer_cpu: float
    worker_cpu: float
    trainer_idle: float
    loadavg: float

    @property
    def mean_token_staleness(self) -> float:
        tokens = sum(self.token_staleness.values())
        return sum(s * n for s, n in self.token_staleness.items()) / tokens


@dataclass
class RealStudy:
    config: StudyConfig
    runs: dict[tuple[str, int], RealRun]
    loadavg_before: float
    wall_seconds: float

    def compare(self, a: str, b: str, metric: str = "throughput") -> list[SeedDiff]:
        """Per seed: interrupt b against a on a measured number. One wall-clock run per arm and seed has no standard
        error of its own (0 here): the machine's noise shows as the spread across seeds, which the t-test takes."""
        return [SeedDiff(s, getattr(self.runs[a, s], metric), getattr(self.runs[b, s], metric), 0.0)
                for s in self.config.seeds]

    @property
    def idle_seconds(self) -> float:
        """What the runs take on two idle cores: each run's busier process."""
        return sum(max(r.trainer_cpu, r.worker_cpu) for r in self.runs.values())


def measure_real(study: Study, *, progress=None) -> RealStudy:
    """Every interrupt on every seed with the rollout worker in a second process (grpo_two_process), from the seed's SFT
    weights, one run after another (each uses both cores): seed by seed, the arms in an order rotated from one seed to
    the next, so that neither a drift of the machine's load nor the first run's warm-up favours one arm."""
    from agentrl_ref.agent.pipeline import fresh_policy
    from agentrl_ref.agent.two_process import grpo_two_process

    cfg = study.config
    t0, load = time.perf_counter(), os.getloadavg()[0]
    runs = {}
    total = len(cfg.seeds) * len(cfg.interrupts)
    for k, s in enumerate(cfg.seeds):
        task = _task(s, cfg)
        shift = k % len(cfg.interrupts)
        for interrupt in cfg.interrupts[shift:] + cfg.interrupts[:shift]:
            r = grpo_two_process(fresh_policy(s, study.states[s]), task, cfg.grpo(s), interrupt=interrupt)
            runs[interrupt, s] = RealRun(interrupt, s, r.seconds, r.throughput, r.generated_tokens, r.kept_tokens,
                                         r.token_staleness, sum(c["aborts"] for c in r.chunks),
                                         sum(len(c["switches"]) for c in r.chunks), r.trainer_cpu, r.worker_cpu,
                                         r.trainer_idle, r.loadavg[0])
            if progress is not None:
                progress(len(runs), total, f"种子 {s}：{SHORT[interrupt]}")
    return RealStudy(cfg, runs, load, time.perf_counter() - t0)
