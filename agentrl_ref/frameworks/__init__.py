"""The course's parts plugged into real trainers: TRL's GRPOTrainer and verl's reward interface.

    trl_rewards.py   TRL reward functions (format, accuracy, composite with its components logged)
    verl_score.py    a verl `compute_score` (the composite: "score" plus its components)

Each adapter is a few lines around a course function and says which framework version its
contract was checked against. Importing them imports neither torch nor the frameworks: a TRL
reward function is a plain Python function, and verl loads `compute_score` from a file path.
"""
from agentrl_ref.frameworks.trl_rewards import (  # noqa: F401
    completion_text,
    make_trl_composite_reward,
    trl_accuracy_reward,
    trl_composite_reward,
    trl_format_reward,
)
from agentrl_ref.frameworks.verl_score import compute_score, make_verl_compute_score  # noqa: F401

__all__ = ["completion_text", "compute_score", "make_trl_composite_reward", "make_verl_compute_score",
           "trl_accuracy_reward", "trl_composite_reward", "trl_format_reward"]
