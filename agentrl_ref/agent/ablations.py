"""Ablations on several seeds: short GRPO runs that change one thing, each paired with its reference arm.

    abl = run_ablations(run)                          # every ablation below, seeds PAGE_SEEDS, both cores
    abl.compare("baseline", "tool_trained")           # per seed: accuracy of both arms, paired SE (verdicts.py)
    abl.runs_of("cliff_acc")                          # the ArmRun of every seed

Arms are data (ARMS); an ablation names the arms it compares (ABLATIONS; the first is the reference).
Seed s means: the task, the policy's initialisation, SFT and GRPO all use seed s, and both arms of a
comparison start from the same SFT weights of seed s and are evaluated on the same held-out problems.
Arms marked "short_sft" start from CLIFF_SFT_STEPS steps of SFT instead (the cliff). The arms of all
seeds run in worker processes (concurrency.py), one torch thread each.
"""
from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass, field, replace

from agentrl_ref.agent.concurrency import default_processes, run_jobs, start_jobs
from agentrl_ref.agent.evaluation import EvalResult, evaluate
from agentrl_ref.agent.grpo_config import GRPOConfig
from agentrl_ref.agent.grpo_trainer import grpo
from agentrl_ref.agent.parts import REWARD_WEIGHTS, resolve_parts
from agentrl_ref.agent.pipeline import fresh_policy, run_sft
from agentrl_ref.agent.schedule import COST_MODEL, Replay
from agentrl_ref.agent.sft_trainer import SFTConfig
from agentrl_ref.agent.task import make_task
from agentrl_ref.agent.verdicts import SeedDiff, paired, unpaired

# the page's seeds; bench/capstone.py runs more. AGENTRL_CAPSTONE_SEEDS="0" (a comma-separated list) runs fewer, e.g.
# on a slow machine or in a smoke test: the tables and verdicts are then computed from those seeds only.
PAGE_SEEDS = tuple(int(s) for s in os.environ.get("AGENTRL_CAPSTONE_SEEDS", "0,1,2").split(","))
ABLATION_GRPO = GRPOConfig(steps=16)  # every arm: the main run's settings, fewer steps
CLIFF_SFT_STEPS = 60             # too short: the policy calls the tool but rarely copies its result
VERSION_EVAL_PROBLEMS = 128      # held-out problems on which every published version of a tracked arm is evaluated
ACCURACY_ONLY = {"fmt": 0.0, "acc": 1.0, "cos_len": 0.0}
# the off-policy arms: data up to 8 versions old (the single-process trainer lets its workers run as far ahead as the
# admission rule allows, so the lag grows step by step and reaches 8 only at the end: off_policy_lags), four minibatch
# updates per batch as AReaL's default ppo_n_minibatches (so a proximal policy exists between them), 12 steps (the
# page's budget; the lag is the point), and how far each batch moved the policy measured (one or two extra forwards)
OFF_POLICY = {"max_staleness": 8, "minibatches": 4, "steps": 12, "measure_steps": True}


@dataclass(frozen=True)
class ArmSpec:
    """label: Chinese, as tables, verdicts and figures show it; overrides: GRPOConfig fields (steps: at most that
    many); start: "sft" or "short_sft"; versions: evaluate every published policy version on VERSION_EVAL_PROBLEMS
    held-out problems."""

    label: str
    overrides: dict = field(default_factory=dict)
    start: str = "sft"
    versions: bool = False


ARMS: dict[str, ArmSpec] = {
    "baseline": ArmSpec("默认"),
    "tool_trained": ArmSpec("也训练 tool 结果", {"train_tool_tokens": True}),
    "stale0": ArmSpec("max_staleness=0", {"max_staleness": 0}, versions=True),
    "stale2": ArmSpec("max_staleness=2", {"max_staleness": 2}, versions=True),
    "cos_off": ArmSpec("关掉 cosine 项", {"reward_weights": {**REWARD_WEIGHTS, "cos_len": 0.0}}),
    "last_token": ArmSpec("只给最后一个训练 token", {"credit": "last_token"}),
    "seq_mean": ArmSpec("先每条平均（GRPO 论文）", {"loss_agg": "seq_mean"}),
    "constant": ArmSpec("除以常数（Dr. GRPO）", {"loss_agg": "constant"}),
    "cliff_full": ArmSpec("短 SFT，完整奖励", start="short_sft"),
    "cliff_acc": ArmSpec("短 SFT，只看正确性", {"reward_weights": ACCURACY_ONLY}, start="short_sft"),
    "cliff_no_std": ArmSpec("短 SFT，不除以标准差", {"scale_rewards": "none"}, start="short_sft"),
    "stale_behave": ArmSpec("对行为策略取比值（PPO 原样）", {**OFF_POLICY, "correction": "behave"}),
    "stale_decoupled": ArmSpec("解耦 PPO（AReaL）", {**OFF_POLICY, "correction": "decoupled"}),
    "stale_recompute": ArmSpec("不修正", {**OFF_POLICY, "correction": "recompute"}),
    # the page's hypothesis about the decoupled arm, tested by bench/capstone.py (not on the page: its time budget)
    "stale_behave_slow": ArmSpec("对行为策略取比值，学习率 1/4",
                                 {**OFF_POLICY, "correction": "behave", "lr": ABLATION_GRPO.lr / 4}),
    "stale_decoupled_slow": ArmSpec("解耦 PPO，学习率 1/4",
                                    {**OFF_POLICY, "correction": "decoupled", "lr": ABLATION_GRPO.lr / 4}),
}

@dataclass(frozen=True)
class Ablation:
    """question (English); arms (the first is the reference arm); comparisons: (metric, arm A, arm B) judged per seed
    (metrics: see Ablations.compare)."""

    question: str
    arms: tuple[str, ...]
    comparisons: tuple[tuple[str, str, str], ...]


ABLATIONS: dict[str, Ablation] = {
    "tool_mask": Ablation("Is the tool's result in the loss mask (ex3)?", ("baseline", "tool_trained"),
                          (("accuracy", "baseline", "tool_trained"),)),
    "staleness": Ablation("How stale may a batch be (ex4)?", ("stale0", "stale2"),
                          (("sim_seconds", "stale0", "stale2"), ("accuracy", "stale0", "stale2"),
                           ("time_accuracy", "stale0", "stale2"))),
    "cosine": Ablation("Cosine length term in the reward (ex5)?", ("baseline", "cos_off"),
                       (("accuracy", "baseline", "cos_off"), ("answer_chars", "baseline", "cos_off"))),
    "credit": Ablation("Advantage on every trained token or only on the last one (ex6)?", ("baseline", "last_token"),
                       (("accuracy", "baseline", "last_token"),)),
    "loss_agg": Ablation("How are the per-token losses averaged?", ("baseline", "seq_mean", "constant"),
                         (("accuracy", "baseline", "seq_mean"), ("response_tokens", "baseline", "seq_mean"),
                          ("accuracy", "baseline", "constant"))),
    "cliff": Ablation("What drives the tool calls down after a too short SFT?",
                      ("cliff_full", "cliff_acc", "cliff_no_std"),
                      (("start_tool_rate", "cliff_full", "cliff_full"), ("start_tool_rate", "cliff_acc", "cliff_acc"),
                       ("start_tool_rate", "cliff_no_std", "cliff_no_std"), ("tool_rate", "cliff_full", "cliff_acc"),
                       ("tool_rate", "cliff_full", "cliff_no_std"))),
    "offpolicy": Ablation("Data up to 8 versions old: against which policy is the ratio taken?",
                          ("stale_behave", "stale_decoupled", "stale_recompute"),
                          (("accuracy", "stale_behave", "stale_decoupled"),
                           ("accuracy", "stale_behave", "stale_recompute"),
                           ("accuracy", "stale_recompute", "stale_decoupled"))),
}
ALL_ABLATIONS = tuple(ABLATIONS)  # what the page runs
# ablations bench/capstone.py runs beside the page's (too long for the page's budget)
BENCH_ABLATIONS: dict[str, Ablation] = {
    "offpolicy_slow": Ablation("The same two objectives at a quarter of the learning rate",
                               ("stale_behave_slow", "stale_decoupled_slow"),
                               (("accuracy", "stale_behave_slow", "stale_decoupled_slow"),)),
}
ABLATION_SPECS: dict[str, Ablation] = {**ABLATIONS, **BENCH_ABLATIONS}  # every ablation run_ablations knows by name


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
        (one number per seed, no SE: teaching/capstone_verdicts.seed_verdict gives no verdict for it).
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
    """Start the SFT runs run_ablations() will need (all but the notebook's own seed's full SFT) in one background
    worker, so that they run while the notebook trains its own seed on the other core. run_ablations(...,
    prefetched=...) takes them if the seeds, steps and parts are the same (the same MY_PARTS object: re-running that
    cell makes a new one, and then the ablations train again)."""
    sft_config = sft_config or SFTConfig()
    jobs = _sft_jobs(own_seed, names, tuple(seeds))
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
    arm_jobs = [(arm, seed) for seed in seeds for arm in arms]
    out, arm_stats = run_jobs(_arm_job, arm_jobs, context={**context, "states": states, "starts": starts},
                             processes=processes, on_done=lambda i, n, value: report(value.arm))
    runs = {(r.arm, r.seed): r for r in out}
    return Ablations(seeds, runs, starts, time.perf_counter() - t0,
                     ahead + sft_stats.cpu_seconds + arm_stats.cpu_seconds,
                     sft_stats.busiest_worker + arm_stats.busiest_worker, processes, ahead)


def estimate_seconds(run, names=ALL_ABLATIONS, seeds=PAGE_SEEDS, *, base: GRPOConfig = ABLATION_GRPO,
                     processes: int | None = None) -> float:
    """About how many wall seconds run_ablations(run, names, seeds) takes on this machine as busy as it was during
    run's GRPO (a CapstoneRun after GRPO): its wall seconds per GRPO step, scaled for each arm by the cost model (the
    off-policy arms' extra forward passes), and per held-out evaluation (each arm's, and its versions'), spread over
    the worker processes. The SFT done ahead (prefetch_sft) is not counted: it ran beside the main run."""
    processes = default_processes() if processes is None else processes
    main = run.grpo_result
    steps = len(main.history)
    per_step = run.seconds["grpo"] / steps
    per_eval = run.seconds["eval"] / 4  # after SFT and after GRPO, sampled and greedy
    n_test = len(run.task.test)
    rows = sum(r["rows"] for r in main.history) / steps
    length = sum(r["length"] for r in main.history) / steps
    generate = sum(c["cost"] for c in main.chunks) / steps
    plain = generate + COST_MODEL.step(rows, length)
    total = 0.0
    for arm in dict.fromkeys(arm for name in names for arm in ABLATION_SPECS[name].arms):
        cfg = replace(base, **{k: v for k, v in ARMS[arm].overrides.items() if k != "steps"})
        arm_steps = min(ARMS[arm].overrides.get("steps", base.steps), base.steps)
        extra = float(cfg.minibatches > 1 and cfg.correction != "behave") + cfg.measure_steps / cfg.minibatches
        cost = arm_steps * per_step * (generate + COST_MODEL.step(rows, length, extra)) / plain + per_eval
        if ARMS[arm].versions:
            cost += (arm_steps + 1) * per_eval * VERSION_EVAL_PROBLEMS / n_test
        total += cost * len(seeds)
    return total / processes
