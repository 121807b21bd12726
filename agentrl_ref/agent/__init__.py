"""The capstone (exercise 7): a tiny tool-using policy trained with SFT then GRPO, built from the six parts.

    from agentrl_ref.agent import train, before_after_table, plot_training_curves, run_ablations
    run = train(seed=0)                               # SFT, evaluation, GRPO, evaluation
    run = train(seed=0, loss_fn=my_clipped_pg_loss,   # the student's blanks ...
                advantage_fn=my_token_advantages,     # (rewards [B], group_size, mask [B, T]) -> [B, T]
                parts={"format_reward": my_format_reward})   # ... and their ex1-ex6 functions

One small file per idea:
    vocab.py      the fixed vocabulary (one token per role marker, tag, digit, operator)
    task.py       the multiplication task, the calculator tool, held-out problems
    episode.py    an episode as tokens + (role, start, end) spans; demonstrations
    policy.py     TinyPolicy, a 2-layer decoder-only transformer with a key/value cache
    rollout.py    the environment loop: sampling multi-turn episodes, running tool calls
    parts.py      the six course parts (overridable) and the composite reward
    batch.py      episodes -> tokens, the shifted loss mask, old log-probs
    loss.py       clipped_pg_loss: the student's blank (hidden when grading; nothing else has the formula)
    sft_trainer.py   supervised warm-up on demonstrations that use the tool only sometimes
    grpo_trainer.py  rollout workers + trainer around AsyncRolloutBuffer on one asyncio loop
    two_process.py   the same trainer with the rollout worker in a second process (weights in shared memory)
    throughput.py    two-process runs for several max_staleness side by side: wall clock, ceiling, accuracy per second
    aggregation.py   token mean, sequence mean, constant: how the per-token losses become one number
    schedule.py   the simulated two-device timeline and its deterministic cost model (max_staleness 0 vs 2)
    evaluation.py held-out accuracy, tool-call rate, copy rate (sampled and greedy)
    pipeline.py   train(): the whole capstone for one seed
    pool.py       independent jobs (seeds, arms) on both cores: forked workers, one torch thread each
    ablations.py  short GRPO runs that change one thing, on several seeds, paired with a reference arm
    verdicts.py   what per-seed differences support (a paired t-test across seeds), as a computed sentence
    tables.py, details.py, plots.py, render.py   what the notebook shows
    progress.py   a live progress line for long cells, and lines of measured time marked as such

Names load lazily: importing this package imports neither torch nor loss.py. No module is named
like a public name (a submodule import would otherwise replace the function on the package).
"""
from importlib import import_module

_EXPORTS = {
    "vocab": ["TOKENS", "VOCAB", "Vocab"],
    "task": ["Problem", "Task", "calculator", "make_task"],
    "episode": ["Episode", "EpisodeBuilder", "answer_text", "demo_episode", "tool_call_text"],
    "policy": ["TinyPolicy", "make_policy"],
    "rollout": ["sample_episodes"],
    "parts": ["COS_MAX_LEN", "EXERCISE_OF", "Parts", "REWARD_WEIGHTS", "build_reward_fn", "describe_parts", "origin",
              "parts_summary", "reference_part", "resolve_parts", "sft_parts_summary", "uses_own_parts"],
    "batch": ["Batch", "collate", "token_logp"],
    "loss": ["clipped_pg_loss", "pg_stats"],
    "sft_trainer": ["SFTConfig", "demonstrations", "sft"],
    "grpo_trainer": ["CORRECTIONS", "DECOUPLED_WEIGHT_CAP", "GRPOConfig", "GRPOResult", "grpo", "grpo_async",
                     "group_center", "make_buffer", "needed_version", "off_policy_inputs", "sample_chunk"],
    "two_process": ["TwoProcessResult", "WeightBoard", "grpo_two_process", "measure_weight_transfer"],
    "throughput": ["ASYNC_STALENESS", "THROUGHPUT_GRPO", "Throughput", "ceiling", "measure_throughput"],
    "aggregation": ["LOSS_AGGS", "aggregated"],
    "schedule": ["COST_MODEL", "CostModel", "Replay", "replay"],
    "evaluation": ["EvalResult", "evaluate", "summarize"],
    "pipeline": ["CapstoneRun", "EXTRA_SEEDS", "NOTEBOOK_SEED", "fresh_policy", "run_grpo", "run_grpo_compared",
                 "run_sft", "train"],
    "ablations": ["ABLATIONS", "ABLATION_SPECS", "Ablation", "ABLATION_GRPO", "ACCURACY_ONLY", "ALL_ABLATIONS", "ARMS",
                  "Ablations", "BENCH_ABLATIONS",
                  "ArmRun",
                  "ArmSpec", "CLIFF_SFT_STEPS", "OFF_POLICY", "PAGE_SEEDS", "Prefetch", "VERSION_EVAL_PROBLEMS",
                  "estimate_seconds", "prefetch_sft",
                  "run_ablations",
                  "time_averaged"],
    "verdicts": ["ALPHA", "AcrossSeeds", "SeedDiff", "Verdict", "across_seeds", "judge", "paired", "paired_se",
                 "sign_chance", "t_critical", "unpaired", "unpaired_se"],
    "pool": ["JobStats", "Jobs", "default_processes", "run_jobs", "start_jobs"],
    "progress": ["LiveLine", "MEASURED", "measured"],
    "tables": ["ABLATION_ZH", "ARM_ZH", "arm_zh", "before_after_table", "cliff_table", "comparison_verdicts",
               "reference_line", "seed_table", "throughput_table", "timing_table"],
    "details": ["against_the_paper", "cliff_components", "cost_model_line", "cosine_details", "credit_details",
                "decoupled_check",
                "largest_gap", "length_details", "offpolicy_details", "staleness_details", "verdicts_markdown"],
    "plots": ["plot_cliff", "plot_differences", "plot_schedule", "plot_timeline", "plot_training_curves",
              "plot_versions", "plot_wall_versions"],
    "render": ["episode_html"],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
assert not set(_MODULE_OF) & set(_EXPORTS), "a public name equal to a module name would be shadowed by the module"
__all__ = list(_MODULE_OF)


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'agentrl_ref.agent' has no attribute {name!r}")
    value = getattr(import_module(f"agentrl_ref.agent.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
