"""What of the course package a grading kernel sees: agentrl_ref without the assignment's answer.

    grading_package(assignment, dest)     # dest/agentrl_ref: __init__.py, checks/ and GIVEN_MODULES

The copy is what the sandbox mounts at /opt/agentrl (execute.py runs every kernel of an assignment on it);
the reference notebook runs on the same copy (reference.py), so what the grader expects is what a student
can reach.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import agentrl_ref

PACKAGE = Path(agentrl_ref.__file__).resolve().parent

# What of agentrl_ref an assignment's grading kernel may import, besides agentrl_ref/__init__.py and
# agentrl_ref/checks/ (the visible tests and probes). Never the assignment's own answer: no component
# module it asks for, nothing that contains a copy of it (teaching/cloze/cloze_snippets.json holds every
# answer, agent/loss.py is exercise 7's). What an assignment is given as input may be there (exercise 5
# combines exercise 1's and 2's rewards; exercise 7 trains with all six components).
SIX = ["format_reward.py", "verifiable_reward.py", "loss_mask.py", "rollout_buffer.py", "composite_reward.py",
       "token_credit.py"]
CHAT = ["teaching/__init__.py", "teaching/shared/chat_template.py", "teaching/ex3_loss_mask/mask_plots.py",
        "teaching/shared/md_table.py"]
GIVEN_MODULES: dict[str, list[str]] = {
    "ex1_format_reward": [],
    "ex2_verifiable_reward": [],
    "ex3_loss_mask": CHAT,   # the tokenizer and the real conversation the visible test masks
    "ex4_async_rollout": [],
    "ex5_composite_reward": ["format_reward.py", "verifiable_reward.py"],
    "ex6_token_credit": [],
    "ex7_agent_grpo": SIX + CHAT + ["agent/*.py", "!agent/loss.py"],
    "ex8_token_in_out": [],   # the visible and hidden tests run on the toy tokenizer of checks/ex8_token_in_out.py
    "ex9_rollout_correction": [],   # the expected weights are written out in checks/ex9_rollout_correction.py
    "ex10_partial_rollout": [],     # the expected versions are written out in checks/ex10_partial_rollout.py
    "ex11_dapo_sampling": [],   # the expected values are written out in checks/ex11_dapo_sampling.py
}
NEVER = {"teaching/cloze/cloze_snippets.json"}


def grading_package(assignment: str, dest: Path, package: Path = PACKAGE) -> Path:
    """dest/agentrl_ref: __init__.py, checks/ and the assignment's GIVEN_MODULES; return dest."""
    wanted = GIVEN_MODULES.get(assignment, [])
    include = [p for p in wanted if not p.startswith("!")]
    exclude = {p[1:] for p in wanted if p.startswith("!")} | NEVER
    files = {"__init__.py"} | {str(p.relative_to(package)) for p in (package / "checks").rglob("*.py")}
    for pattern in include:
        files |= {str(p.relative_to(package)) for p in package.glob(pattern)}
    files -= {f for pattern in exclude for f in (str(p.relative_to(package)) for p in package.glob(pattern))}
    root = dest / "agentrl_ref"
    if root.exists():
        shutil.rmtree(root)
    for rel in sorted(files):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(package / rel, root / rel)
    for folder in {(root / rel).parent for rel in files}:  # every sub-package is a package
        (folder / "__init__.py").touch(exist_ok=True)
    return dest
