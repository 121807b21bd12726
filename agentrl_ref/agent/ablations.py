"""Ablations on several seeds: short GRPO runs that change one thing, each paired with its reference arm.

    abl = run_ablations(run)                          # every ablation of arms.py, seeds PAGE_SEEDS, both cores
    abl.compare("baseline", "tool_trained")           # per seed: accuracy of both arms, paired SE (verdicts.py)
    abl.runs_of("cliff_acc")                          # the ArmRun of every seed

Arms are data (arms.py: ARMS); an ablation names the arms it compares (ABLATIONS; the first is the reference).
Seed s means: the task, the policy's initialisation, SFT and GRPO all use seed s, and both arms of a
comparison start from the same SFT weights of seed s and are evaluated on the same held-out problems.
Arms marked "short_sft" start from CLIFF_SFT_STEPS steps of SFT instead (the cliff). The arms of all
seeds run in worker processes (concurrency.py), one torch thread each.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field, replace

from agentrl_ref.agent.arms import (
    ABLATION_GRPO, ABLATION_SPECS, ALL_ABLATIONS, ARMS, CLIFF_SFT_STEPS, PAGE_SEEDS, VERSION_EVAL_PROBLEMS,
)
from agentrl_ref.agent.concurrency import default_processes, run_jobs, start_jobs
from agentrl_ref.agent.evaluation import EvalResult, evaluate
from agentrl_ref.agent.grpo_config import GRPOConfig
from agentrl_ref.agent.grpo_trainer import grpo
from agentrl_ref.agent.parts import resolve_parts
from agentrl_ref.agent.pipeline import fresh_policy, run_sft
from agentrl_ref.agent.schedule import COST_MODEL, Replay
from agentrl_ref.agent.sft_trainer import SFTConfig
from agentrl_ref.agent.task import make_task
from agentrl_ref.agent.verdicts import SeedDiff, paired, unpaired

@dataclass
class VersionEval:
    """Held-out accuracy of one published policy version and when the simulated clock published it."""

    version: int
    published: float            # simulated seconds (schedule.replay)
    correct: list[int] = field(repr=False)

    @property
    def accuracy(self) -> float:
        return sum(self.correct) / len(self.correct)


@dataclass
class ArmRun:
    """One arm on one seed: the GRPO history, the simulated schedule, the held-out evaluations (sampled, T=1)."""

    arm: str
    seed: int
    config: GRPOConfig
    history: list[dict] = field(repr=False)
    replay: Replay = field(repr=False)
    before: EvalResult = field(repr=False)        # the weights GRPO started from
    after: EvalResult = field(repr=False)
    versions: list[VersionEval] = field(default_factory=list, repr=False)
    own_advantages: bool = True                   # False: the arm computes its own advantages (parts.advantages unused)
    cpu_seconds: float = 0.0
    # the cost model's simulated seconds of generation and training, and the CPU seconds the same work measured
    work: dict = field(default_factory=dict)      # gen_cost, gen_seconds, train_cost, train_seconds

    @property
    def label(self) -> str:
        return ARMS[self.arm].label

    @property
    def summary(self) -> dict:
        h, rep = self.history, self.replay
        return {"accuracy": self.after.accuracy, "tool_rate": self.after.tool_rate,
                "copy_rate": self.after.copy_rate, "format_rate": self.after.format_rate,
                "correct_answer_chars": self.after.mean_correct_answer_chars,
                "response_tokens": self.after.mean_response_tokens,
                "mean_staleness": sum(r["staleness"] for r in h) / len(h),
                "sim_seconds": rep.total, "serial_seconds": rep.serial, "steps_waited": rep.steps_waited,
                "throughput": rep.throughput}

    @property
    def lags(self) -> list[float]:
        """The mean version lag of every training step's batch, in step order."""
        return [row["staleness"] for row in self.history]


PER_PROBLEM = {"accuracy": lambda ev: ev.correct, "tool_rate": lambda ev: ev.tool,
               "response_tokens": lambda ev: [e.assistant_tokens() for e in ev.episodes]}
# one independent sample per arm (not per problem): the final answers' lengths of the correct episodes
PER_ANSWER = {"answer_chars": lambda ev: [len(e.answer_text) for e, c in zip(ev.episodes, ev.correct) if c]}
# computed from the work a run did (schedule.COST_MODEL), not sampled: no evaluation noise, standard error 0
COMPUTED = {"sim_seconds"}


@dataclass
class Ablations:
    """ArmRuns keyed by (arm, seed), the seeds, and what the run cost (wall and CPU seconds of all processes)."""

    seeds: tuple[int, ...]
    runs: dict[tuple[str, int], ArmRun]
    starts: dict[tuple[str, int], EvalResult] = field(repr=False)  # ("sft" | "short_sft", seed) -> before
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0       # all jobs, all processes (the SFT done ahead included)
    idle_seconds: float = 0.0      # the busiest worker's CPU seconds, phase by phase: the wall clock on idle cores
    processes: int = 1
    ahead_seconds: float = 0.0     # CPU seconds of the SFT done ahead (prefetch_sft), beside the notebook's own work

    def runs_of(self, arm: str) -> list[ArmRun]:
        return [self.runs[arm, seed] for seed in self.seeds]

    def compare(self, a: str, b: str, metric: str = "accuracy") -> list[SeedDiff]:
        """Per seed: arm b against arm a on `metric`, paired over the same held-out problems where it can be.

        accuracy, tool_rate, response_tokens: after GRPO, per held-out problem (paired SE);
        answer_chars: the correct answers of each arm (unpaired SE: the arms get different problems right);
        time_accuracy: per problem, the newest published version's correctness averaged over the simulated time
        both arms trained (time_averaged); start_tool_rate: arm b's own tool-call rate before against after GRPO;
        sim_seconds: computed by the cost model (SE 0: nothing sampled); anything else: ArmRun.summary[metric]
        (one number per seed, no SE: teaching/ex7_agent_grpo/verdicts.seed_verdict gives no verdict for it).
        """
        if metric in PER_PROBLEM:
            return paired(self.seeds, [PER_PROBLEM[metric](r.after) for r in self.runs_of(a)],
                          [PER_PROBLEM[metric](r.after) for r in self.runs_of(b)])
        if metric in PER_ANSWER:
            return unpaired(self.seeds, [PER_ANSWER[metric](r.after) for r in self.runs_of(a)],
                            [PER_ANSWER[metric](r.after) for r in self.runs_of(b)])
        if metric == "time_accuracy":
            pairs = [time_averaged(self.runs[a, s], self.runs[b, s]) for s in self.seeds]
            return paired(self.seeds, [p[0] for p in pairs], [p[1] for p in pairs])
        if metric == "start_tool_rate":
            return paired(self.seeds, [r.before.tool for r in self.runs_of(b)], [r.after.tool for r in self.runs_of(b)])
        diffs = paired(self.seeds, [r.summary[metric] for r in self.runs_of(a)],
                       [r.summary[metric] for r in self.runs_of(b)])
        if metric in COMPUTED:
            diffs = [replace(d, se=0.0) for d in diffs]
        return diffs


def time_averaged(a: ArmRun, b: ArmRun) -> tuple[list[float], list[float]]:
    """Per held-out problem: how often the newest published version of each arm got it right, averaged over the
    simulated time both arms were training ([0, the earlier of their last publications])."""
    horizon = min(a.versions[-1].published, b.versions[-1].published)
    return _time_weights(a.versions, horizon), _time_weights(b.versions, horizon)


def _time_weights(versions: list[VersionEval], horizon: float) -> list[float]:
    out = [0.0] * len(versions[0].correct)
    for v, nxt in zip(versions, versions[1:] + [None]):
        end = horizon if nxt is None else min(nxt.published, horizon)
        weight = max(0.0, end - v.published) / horizon
        if weight:
            out = [o + weight * c for o, c in zip(out, v.correct)]
    return out


# --- the jobs (run in worker processes) -----------------------------------------------------------

def _sft_job(seed: int, steps: int | None, *, sft_config, n_test, parts, **_):
    """SFT for one seed (steps=None: the full SFT); returns the weights and the sampled held-out evaluation."""
    cfg = sft_config if steps is None else replace(sft_config, steps=steps)
    run = run_sft(seed, cfg, parts, n_test, greedy=False)
    return run.sft_state, run.before["sampled"]


def _arm_job(arm: str, seed: int, *, states, starts, base, n_test, parts, **_):
    c0 = time.process_time()
    spec = ARMS[arm]
    task = make_task(seed, n_test=n_test)
    policy = fresh_policy(seed, states[spec.start, seed])
    overrides = dict(spec.overrides)
    if "steps" in overrides:  # an arm's own length is a cap: a shorter base (a smoke test) stays shorter
        overrides["steps"] = min(overrides["steps"], base.steps)
    cfg = replace(base, **overrides, seed=seed)
    own = cfg.default_advantages
    snapshots = [copy.deepcopy(policy.state_dict())] if spec.versions else None

    def keep(version, pol):
        snapshots.append(copy.deepcopy(pol.state_dict()))

    if not own:  # the arm computes its advantages itself (its credit or scaling is what it changes)
        parts = replace(resolve_parts(parts), advantages=None)
    result = grpo(policy, task, cfg, parts=parts, on_update=keep if spec.versions else None)
    after = evaluate(policy, task.test, 1.0, seed=seed)
    versions = []
    if spec.versions:
        subset = task.test[:VERSION_EVAL_PROBLEMS]
        for v, state in enumerate(snapshots):
            policy.load_state_dict(state)
            ev = evaluate(policy, subset, 1.0, seed=seed)
            versions.append(VersionEval(v, result.replay.publish[v], ev.correct))
    work = {"gen_cost": sum(c["cost"] for c in result.chunks), "gen_seconds": sum(c["seconds"] for c in result.chunks),
            "train_cost": sum(r["train_cost"] for r in result.history),
            "train_seconds": sum(r["train_seconds"] for r in result.history)}
    return ArmRun(arm, seed, cfg, result.history, result.replay, starts[spec.start, seed], after, versions,
                  own, time.process_time() - c0, work)


def _sft_jobs(own_seed: int, names, seeds) -> list[tuple[str, int]]:
    """(start kind, seed) of every SFT the ablations need except the notebook's own full SFT (of own_seed)."""
    kinds = sorted({ARMS[arm].start for name in names for arm in ABLATION_SPECS[name].arms}, key=lambda k: k != "sft")
    return [(kind, seed) for kind in kinds for seed in seeds if not (kind == "sft" and seed == own_seed)]


def _prefetch_key(own_seed, seeds, parts, cliff_sft_steps, sft_config) -> tuple:
    return own_seed, tuple(seeds), id(parts), cliff_sft_steps, replace(sft_config, seed=0)


@dataclass
class Prefetch:
    """SFT runs for the ablations started early in a background worker (prefetch_sft); used only if nothing changed."""

    key: tuple
    jobs: list[tuple[str, int]]
    handle: object = field(repr=False)


def prefetch_sft(own_seed: int, names=ALL_ABLATIONS, seeds=PAGE_SEEDS, *, parts=None, n_test: int = 512,
                 sft_config=None, cliff_sft_steps: int = CLIFF_SFT_STEPS) -> Prefetch:
    """Start SFT runs run_ablations() will need (not the notebook's own seed's full SFT) in one background worker,
    so that they run while the notebook trains its own seed on the other core: as many as fit in that time (its SFT
    and GRPO take about two full SFTs), the full ones first; run_ablations trains the rest on both workers.
    run_ablations(..., prefetched=...) takes them if the seeds, steps and parts are the same (the same MY_PARTS
    object: re-running that cell makes a new one, and then the ablations train again)."""
    sft_config = sft_config or SFTConfig()
    jobs, budget = [], 2.0   # in full SFTs
    for kind, seed in _sft_jobs(own_seed, names, tuple(seeds)):
        cost = 1.0 if kind == "sft" else cliff_sft_steps / sft_config.steps
        if cost <= budget:
            jobs.append((kind, seed))
            budget -= cost
    context = dict(sft_config=sft_config, n_test=n_test, parts=parts)
    handle = start_jobs(_sft_job, [(s, None if k == "sft" else cliff_sft_steps) for k, s in jobs], context=context)
    return Prefetch(_prefetch_key(own_seed, seeds, parts, cliff_sft_steps, sft_config), jobs, handle)


def run_ablations(run, names=ALL_ABLATIONS, seeds=PAGE_SEEDS, *, base: GRPOConfig = ABLATION_GRPO, parts=None,
                  processes: int | None = None, progress=None,
                  cliff_sft_steps: int = CLIFF_SFT_STEPS, prefetched: Prefetch | None = None) -> Ablations:
    """Every arm of the named ablations on every seed; run (a CapstoneRun) lends its full SFT for its own seed.

    parts go to every arm (parts.advantages only to arms that keep exercise 6's advantages: ArmRun.own_advantages).
    progress(done, total, what) is called in this process as jobs finish.
    """
    unknown = sorted(set(names) - set(ABLATION_SPECS))
    if unknown:
        raise ValueError(f"unknown ablation(s) {unknown}; choose from {sorted(ABLATION_SPECS)}")
    processes = default_processes() if processes is None else processes
    seeds = tuple(seeds)
    arms = list(dict.fromkeys(arm for name in names for arm in ABLATION_SPECS[name].arms))
    n_test = len(run.task.test)
    context = dict(sft_config=run.sft_config, n_test=n_test, base=base, parts=parts)
    t0 = time.perf_counter()
    states, starts = {}, {}
    if run.seed in seeds:
        states["sft", run.seed], starts["sft", run.seed] = run.sft_state, run.before["sampled"]
    sft_jobs = _sft_jobs(run.seed, names, seeds)
    ahead = 0.0
    if prefetched is not None:
        if prefetched.key == _prefetch_key(run.seed, seeds, parts, cliff_sft_steps, run.sft_config):
            values, stats = prefetched.handle.get()
            ahead = stats.cpu_seconds
            for job, (state, before) in zip(prefetched.jobs, values):
                states[job], starts[job] = state, before
        else:
            prefetched.handle.cancel()
        sft_jobs = [job for job in sft_jobs if job not in states]
    total = len(sft_jobs) + len(arms) * len(seeds)
    done = [0]

    def report(what):
        done[0] += 1
        if progress is not None:
            progress(done[0], total, what)

    sft_out, sft_stats = run_jobs(_sft_job, [(s, None if k == "sft" else cliff_sft_steps) for k, s in sft_jobs],
                                context=context, processes=processes,
                                on_done=lambda i, n, value: report("SFT"))
    for (kind, seed), (state, before) in zip(sft_jobs, sft_out):
        states[kind, seed], starts[kind, seed] = state, before
    # the longest arms first, so that no long arm is left for the end while the other worker idles (a job's result
    # depends only on its arm and seed, not on where or when it runs)
    cost = _arm_costs(arms, base, run.grpo_result, n_test, per_eval=1.0)
    arm_jobs = sorted(((arm, seed) for seed in seeds for arm in arms), key=lambda job: -cost[job[0]])
    out, arm_stats = run_jobs(_arm_job, arm_jobs, context={**context, "states": states, "starts": starts},
                             processes=processes, on_done=lambda i, n, value: report(value.arm))
    runs = {(r.arm, r.seed): r for r in out}
    return Ablations(seeds, runs, starts, time.perf_counter() - t0,
                     ahead + sft_stats.cpu_seconds + arm_stats.cpu_seconds,
                     sft_stats.busiest_worker + arm_stats.busiest_worker, processes, ahead)


def _arm_costs(arms, base: GRPOConfig, main=None, n_test: int = 512, per_step: float = 1.0,
               per_eval: float = 0.0) -> dict[str, float]:
    """Each arm's seconds at the main run's speed (per_step: one of its GRPO steps; per_eval: one held-out evaluation):
    its steps scaled by its batch and by the cost model for its extra forward passes, its evaluation and its versions'.
    Without the main run (main=None): its steps only."""
    if main is None:
        return {arm: float(min(ARMS[arm].overrides.get("steps", base.steps), base.steps)) for arm in arms}
    h, n = main.history, len(main.history)
    rows, length = sum(r["rows"] for r in h) / n, sum(r["length"] for r in h) / n
    generate = sum(c["cost"] for c in main.chunks) / n
    plain = generate + COST_MODEL.step(rows, length)
    costs = {}
    for arm in arms:
        cfg = replace(base, **{k: v for k, v in ARMS[arm].overrides.items() if k != "steps"})
        steps = min(ARMS[arm].overrides.get("steps", base.steps), base.steps)
        extra = float(cfg.minibatches > 1 and cfg.correction != "behave") + cfg.measure_steps / cfg.minibatches
        scale = cfg.batch_size / main.config.batch_size * (generate + COST_MODEL.step(rows, length, extra)) / plain
        costs[arm] = steps * per_step * scale + per_eval * (1 + ARMS[arm].versions * (steps + 1)
                                                            * VERSION_EVAL_PROBLEMS / n_test)
    return costs


def estimate_seconds(run, names=ALL_ABLATIONS, seeds=PAGE_SEEDS, *, base: GRPOConfig = ABLATION_GRPO,
                     processes: int | None = None) -> float:
    """About how many wall seconds run_ablations(run, names, seeds) takes here, as busy as during run's GRPO (a
    CapstoneRun after GRPO): every arm's _arm_costs at its speed, spread over the worker processes. The SFT done ahead
    (prefetch_sft) is not counted: it ran beside the main run."""
    processes = default_processes() if processes is None else processes
    arms = dict.fromkeys(arm for name in names for arm in ABLATION_SPECS[name].arms)
    costs = _arm_costs(arms, base, run.grpo_result, len(run.task.test), per_eval=run.seconds["eval"] / 4,
                       per_step=run.seconds["grpo"] / len(run.grpo_result.history))  # eval: 4 after SFT and GRPO
    return sum(costs.values()) * len(seeds) / processes
