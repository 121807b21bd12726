"""What exercise 7's page shows, in one import: tables, verdicts, details, plots, an episode as HTML, the live
progress line and where each plug-in comes from. The engine (training, ablations, measurements) is agentrl_ref.agent;
nothing there imports this.

    from agentrl_ref.teaching.ex7_agent_grpo import before_after_table, plot_training_curves, verdicts_markdown
"""
from __future__ import annotations

from agentrl_ref.teaching.ex7_agent_grpo.details import (
    against_the_paper, cliff_components, cosine_details, cost_model_line, credit_details, decoupled_check, largest_gap,
    length_details, offpolicy_details, staleness_details,
)
from agentrl_ref.teaching.ex7_agent_grpo.parts import describe_parts, origin, parts_summary, sft_parts_summary
from agentrl_ref.teaching.ex7_agent_grpo.plots import (
    plot_cliff, plot_differences, plot_schedule, plot_timeline, plot_training_curves, plot_versions, plot_wall_versions,
)
from agentrl_ref.teaching.ex7_agent_grpo.render import episode_html
from agentrl_ref.teaching.ex7_agent_grpo.tables import (
    ABLATION_ZH, ARM_ZH, arm_zh, before_after_table, cliff_table, fmt, reference_line, seed_table, throughput_table,
    timing_table,
)
from agentrl_ref.teaching.ex7_agent_grpo.verdicts import (
    SeedVerdict, comparison_verdicts, seed_verdict, verdicts_markdown,
)
from agentrl_ref.teaching.shared.progress import MEASURED, LiveLine, measured

__all__ = [
    "ABLATION_ZH", "ARM_ZH", "LiveLine", "MEASURED", "SeedVerdict", "against_the_paper", "arm_zh", "before_after_table",
    "cliff_components", "cliff_table", "comparison_verdicts", "cosine_details", "cost_model_line", "credit_details",
    "decoupled_check", "describe_parts", "episode_html", "fmt", "largest_gap", "length_details", "measured",
    "offpolicy_details", "origin", "parts_summary", "plot_cliff", "plot_differences", "plot_schedule", "plot_timeline",
    "plot_training_curves", "plot_versions", "plot_wall_versions", "reference_line", "seed_table", "seed_verdict",
    "sft_parts_summary", "staleness_details", "throughput_table", "timing_table", "verdicts_markdown",
]
