"""What the course pages show, built on the components: one room per page, and one shared room.

    shared/                 what several pages use: cjk (Chinese in figures), md_table (executed tables), progress
                            (live lines, measured times), chat_template (ChatML and the course's tokenizer: exercise 3
                            and the frameworks page), tiny_qwen (a tiny Qwen2 chat model with a trained byte-level BPE)
    ex1_format_reward/      exercise 1's page: other format checks, how long they take to reject
    ex2_verifiable_reward/  exercise 2's page: the answer-forms table, the reference verifier vs math-verify
    ex3_loss_mask/          exercise 3's page: the loss mask over real tokens (figure and table)
    ex4_async_rollout/      exercise 4's page: the simulated rollout clock, its plots and playground, the queue
                            measurement, the seed page's buffer
    ex5_composite_reward/   exercise 5's page: length-shaped rewards side by side
    ex6_token_credit/       exercise 6's page: one sequence reward becomes per-token credit
    ex7_agent_grpo/         the capstone's page, in one import (its __init__): tables, verdicts, plots, an episode as
                            HTML; the engine itself is agentrl_ref.agent, which never imports this
    ex8_token_in_out/       exercise 8's page: retokenizing on the tiny Qwen2, a template that strips <think>
    ex9_rollout_correction/ exercise 9's page: a bf16 (and an fp8) sampler against the float32 trainer, measured and
                            trained on with TIS and MIS (verdicts as the capstone's page computes them)
    ex10_partial_rollout/   exercise 10's page: wait, abort and continue when an update lands mid-chunk, on the
                            simulated clock (verdicts) and in the real two processes (measured)
    ex11_dapo_sampling/     exercise 11's page: symmetric clip, clip-higher and dynamic sampling on the capstone's
                            policy (agent/dapo_arms.py runs them): tables, computed verdicts and figures
    cloze/                  the random-cloze practice (book/cloze.md and the JupyterLab widget) and its cards, which
                            `make release` cuts from the exercises' answers (cloze/cloze_snippets.json)
    frameworks/             the frameworks page (book/frameworks.md): TRL's GRPOTrainer on the tiny model

A page's room imports the shared room, the components and the engine, and another page's room only where that page
reuses what it shows (the capstone colours tokens with exercise 3's colours). Nothing here is imported by a component.
Plotting and widget libraries are imported by the modules that need them, when they are used.
"""
