"""Synchronous against asynchronous on the wall clock: grpo_two_process for several max_staleness, side by side.

    real = measure_throughput(run)             # max_staleness 0, 1, 2, 4 from run's SFT weights, one after another
    real.ratio(2), real.bound                  # measured speed-up over max_staleness=0, and its ceiling
    real.versions[2]                           # held-out accuracy of every published version, with its wall time

Every setting starts from the same SFT weights and trains the same number of steps on the same chunks' seeds; only how
far the rollout worker may run ahead differs. Every published version is kept and evaluated afterwards (on
VERSION_EVAL_PROBLEMS held-out problems, in the pool's worker processes) against the wall-clock time it was published.

The ceiling: with one process generating (t_gen CPU seconds per step) and one training (t_train, the weights'
publication included), a synchronous step takes t_gen + t_train and an overlapped one at least max(t_gen, t_train), so
no max_staleness is faster than (t_gen + t_train) / max(t_gen, t_train) times the synchronous run: the limit of many
steps. A run of n steps also fills the pipeline once (the first batch is generated before anything trains, the last
step trains after everything is generated): n (t_gen + t_train) / (t_gen + t_train + (n - 1) max(t_gen, t_train)).
t_gen and t_train are measured in the synchronous run.
"""
from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass, field, replace

from agentrl_ref.agent.ablations import VERSION_EVAL_PROBLEMS, VersionEval, _time_weights
from agentrl_ref.agent.concurrency import run_jobs
from agentrl_ref.agent.grpo_config import GRPOConfig
from agentrl_ref.agent.schedule import replay
from agentrl_ref.agent.two_process import TwoProcessResult, grpo_two_process

ASYNC_STALENESS = (0, 1, 2, 4)
THROUGHPUT_GRPO = GRPOConfig(steps=12)  # the main run's batches; a few steps past the pipeline's filling


@dataclass
class Throughput:
    """The runs of measure_throughput by max_staleness, the evaluations of their versions, what it all cost."""

    seed: int
    results: dict[int, TwoProcessResult]
    versions: dict[int, list[VersionEval]] = field(repr=False)
    loadavg_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    eval_cpu_seconds: float = 0.0       # evaluating the versions, all processes
    eval_idle_seconds: float = 0.0      # the busiest of those processes
    wall_seconds: float = 0.0           # the whole measurement (runs and evaluation)

    @property
    def sync(self) -> TwoProcessResult:
        return self.results[0]

    @property
    def bound(self) -> float:
        """(t_gen + t_train) / max(t_gen, t_train) from the synchronous run's measured CPU seconds per step: the
        ceiling of a long run."""
        return ceiling(self.sync.generate_seconds, self.sync.train_seconds)

    def bound_steps(self, steps: int | None = None) -> float:
        """The ceiling of a run of `steps` steps (default: as many as these runs), pipeline filling included."""
        return ceiling(self.sync.generate_seconds, self.sync.train_seconds, steps or len(self.sync.history))

    def ratio(self, max_staleness: int) -> float:
        """Throughput of max_staleness over the synchronous run's (the same steps: the ratio of their wall clocks)."""
        return self.sync.seconds / self.results[max_staleness].seconds

    def replayed_seconds(self, max_staleness: int) -> float:
        """What the run would take on two idle cores: its measured CPU seconds per chunk and per step, and the
        versions its chunks really used, on the simulated clock of schedule.replay (one rollout device)."""
        r = self.results[max_staleness]
        chunks = sorted(r.chunks, key=lambda c: c["chunk"])
        train = [row["train_seconds"] + pub for row, pub in zip(r.history, r.publish_seconds)]
        cfg = r.config
        return replay(chunks, train, 1, cfg.n_workers, cfg.batch_size // cfg.n_workers).total

    def time_accuracy(self) -> dict[int, float]:
        """Per max_staleness: the accuracy of the newest published version, averaged over the wall-clock time all
        runs were training ([0, the earliest last publication])."""
        horizon = self.horizon
        return {ms: sum(w) / len(w) for ms, w in
                ((ms, _time_weights(versions, horizon)) for ms, versions in self.versions.items())}

    @property
    def horizon(self) -> float:
        return min(versions[-1].published for versions in self.versions.values())


def ceiling(t_gen: float, t_train: float, steps: int | None = None, devices: int = 1) -> float:
    """How many times faster than synchronous generation and training can be when they overlap: t_gen is one step's
    generation work, shared by `devices` rollout devices (g = t_gen / devices per step), t_train the trainer's on a
    device of its own. Synchronous, a step takes g + t_train; overlapped, n steps take at least
    g + t_train + (n - 1) max(g, t_train); steps None: the limit (g + t_train) / max(g, t_train)."""
    if not (isinstance(devices, int) and devices >= 1):
        raise ValueError(f"devices must be an int >= 1, got {devices!r}")
    g = t_gen / devices
    if steps is None:
        return (g + t_train) / max(g, t_train)
    return steps * (g + t_train) / (g + t_train + (steps - 1) * max(g, t_train))


def _eval_job(max_staleness: int, version: int, *, snapshots, problems, seed):
    from agentrl_ref.agent.evaluation import evaluate
    from agentrl_ref.agent.pipeline import fresh_policy

    return evaluate(fresh_policy(seed, snapshots[max_staleness][version]), problems, 1.0, seed=seed).correct


def measure_throughput(run, staleness=ASYNC_STALENESS, base: GRPOConfig = THROUGHPUT_GRPO, *, parts=None,
                       progress=None, processes: int | None = None) -> Throughput:
    """grpo_two_process from run's SFT weights for each max_staleness (0 first: the synchronous baseline), one after
    another, then every published version evaluated. progress(done, total, text) after every trainer step."""
    staleness = tuple(staleness)
    if 0 not in staleness:
        raise ValueError("staleness must include 0, the synchronous baseline every ratio is taken against")
    t0, loadavg = time.perf_counter(), os.getloadavg()
    results, snapshots = {}, {}
    total = len(staleness) * base.steps
    for i, ms in enumerate(sorted(staleness)):
        policy = run.sft_policy()
        states = [copy.deepcopy(policy.state_dict())]

        def keep(version, pol, states=states):
            states.append(copy.deepcopy(pol.state_dict()))

        def step_done(step, steps, text, i=i, ms=ms):
            if progress is not None:
                progress(i * steps + step, total, f"max_staleness={ms}：{text}")

        cfg = replace(base, max_staleness=ms, seed=run.seed)
        results[ms] = grpo_two_process(policy, run.task, cfg, parts=parts, on_update=keep, progress=step_done)
        snapshots[ms] = states
    problems = list(run.task.test[:VERSION_EVAL_PROBLEMS])
    jobs = [(ms, v) for ms in results for v in range(len(snapshots[ms]))]
    correct, stats = run_jobs(_eval_job, jobs, context=dict(snapshots=snapshots, problems=problems, seed=run.seed),
                              processes=processes)
    versions: dict[int, list[VersionEval]] = {ms: [] for ms in results}
    for (ms, v), right in zip(jobs, correct):
        versions[ms].append(VersionEval(v, results[ms].publish[v], right))
    return Throughput(run.seed, results, versions, loadavg, stats.cpu_seconds, stats.busiest_worker,
                      time.perf_counter() - t0)
