"""The capstone engine (exercise 7): a tiny tool-using policy trained with SFT then GRPO, built from the six parts.

    from agentrl_ref.agent import Parts, train, run_ablations
    MY_PARTS = Parts(loss=my_clipped_pg_loss,          # the student's blanks ...
                     advantages=my_token_advantages,   # (rewards [B], group_size, mask [B, T]) -> [B, T]
                     format_reward=my_format_reward)   # ... and their ex1-ex6 functions
    run = train(seed=0, parts=MY_PARTS)                # SFT, evaluation, GRPO, evaluation

What the page shows (tables, verdict sentences, plots, progress lines) is agentrl_ref.teaching.ex7_agent_grpo.
One small file per idea, each below the ones that use it:
    vocab.py      the fixed vocabulary (one token per role marker, tag, digit, operator)
    task.py       the multiplication task, the calculator tool, held-out problems
    episode.py    an episode as tokens + (role, start, end) spans; demonstrations
    policy.py     TinyPolicy, a 2-layer decoder-only transformer with a key/value cache
    rollout.py    the environment loop: sampling multi-turn episodes, running tool calls
    parts.py      Parts, the one plug-in point: the loss, the advantage wiring and the six course parts
    batch.py      episodes -> tokens, the shifted loss mask, old log-probs
    loss.py       clipped_pg_loss: the student's blank (hidden when grading; nothing else has the formula)
    aggregation.py   token mean, sequence mean, constant: how the per-token losses become one number
    concurrency.py   torch threads, independent jobs on both cores, a coroutine run from a notebook, child processes
    sft_trainer.py   supervised warm-up on demonstrations that use the tool only sometimes
    grpo_config.py   GRPOConfig: the settings of a GRPO run
    trainer.py       the GRPO trainer (and in-process rollout workers) both runners use
    grpo_trainer.py  runner 1: rollout workers + trainer around AsyncRolloutBuffer on one asyncio loop
    two_process.py   runner 2: the same trainer with the rollout worker in a second process (weights in shared memory)
    schedule.py   the simulated two-device timeline and its deterministic cost model (max_staleness 0 vs 2)
    interrupt_sim.py the two-process engine's interrupts (wait, abort, continue) on that simulated clock (ex10)
    throughput.py    two-process runs for several max_staleness side by side: wall clock, ceiling, accuracy per second
    evaluation.py held-out accuracy, tool-call rate, copy rate (sampled and greedy)
    pipeline.py   train(): the whole capstone for one seed
    arms.py       the ablations as data: each arm's settings, each ablation's arms and metrics
    ablations.py  short GRPO runs that change one thing, on several seeds, paired with a reference arm
    verdicts.py   what per-seed differences support: a paired t-test across seeds
    estimates.py  how long a long cell will take here, said before it runs (its first steps timed, then scaled)
    dapo_trainer.py  exercise 11: a synchronous GRPO loop with clip-higher and dynamic sampling (bounded)
    dapo_arms.py  exercise 11's arms as data, run on several seeds in the worker processes, evaluated held-out

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
    "parts": ["COS_MAX_LEN", "EXERCISE_OF", "PLUG_INS", "Parts", "REWARD_WEIGHTS", "SFT_PARTS", "build_reward_fn",
              "chosen", "default_loss_fn", "is_reference", "reference_part", "resolve_parts", "uses_own_parts"],
    "batch": ["Batch", "collate", "token_logp"],
    "loss": ["clipped_pg_loss", "pg_stats"],
    "concurrency": ["JobStats", "Jobs", "TORCH_THREADS", "default_processes", "run_coroutine", "run_jobs", "start_jobs",
                    "stop_process", "torch_threads"],
    "sft_trainer": ["SFTConfig", "demonstrations", "sft"],
    "grpo_config": ["ADAM_BETAS", "CORRECTIONS", "DECOUPLED_WEIGHT_CAP", "GRPOConfig"],
    "trainer": ["Trainer", "group_center", "make_buffer", "needed_version", "off_policy_inputs", "sample_chunk"],
    "grpo_trainer": ["GRPOResult", "grpo", "grpo_async"],
    "two_process": ["INTERRUPTS", "TwoProcessResult", "WeightBoard", "grpo_two_process", "measure_weight_transfer"],
    "throughput": ["ASYNC_STALENESS", "THROUGHPUT_GRPO", "Throughput", "ceiling", "measure_throughput"],
    "aggregation": ["LOSS_AGGS", "aggregated"],
    "schedule": ["COST_MODEL", "CostModel", "Replay", "replay"],
    "evaluation": ["EvalResult", "evaluate", "summarize"],
    "pipeline": ["CapstoneRun", "EXTRA_SEEDS", "NOTEBOOK_SEED", "fresh_policy", "run_grpo", "run_grpo_compared",
                 "run_sft", "train"],
    "arms": ["ABLATIONS", "ABLATION_SPECS", "Ablation", "ABLATION_GRPO", "ACCURACY_ONLY", "ALL_ABLATIONS", "ARMS",
             "BENCH_ABLATIONS", "ArmSpec", "CLIFF_SFT_STEPS", "OFF_POLICY", "PAGE_SEEDS", "VERSION_EVAL_PROBLEMS"],
    "ablations": ["Ablations", "ArmRun", "Prefetch", "estimate_seconds", "prefetch_sft", "run_ablations",
                  "time_averaged"],
    "estimates": ["grpo_seconds", "sft_seconds", "throughput_seconds"],
    "dapo_trainer": ["DAPOConfig", "DAPORun", "train_dapo"],
    "dapo_arms": ["ARM_LABELS", "DAPO_ARMS", "DAPO_BASE", "DAPO_COMPARISONS", "DAPO_EVAL_PROBLEMS", "DAPO_SEEDS",
                  "DAPO_SFT_STEPS", "DAPOArm", "DAPOArmRun", "DAPOStudy", "EQUAL_COST", "HeldOut", "held_out",
                  "run_dapo_study"],
    "verdicts": ["ALPHA", "AcrossSeeds", "SeedDiff", "across_seeds", "paired", "paired_se", "sign_chance", "t_critical",
                 "unpaired", "unpaired_se"],
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
