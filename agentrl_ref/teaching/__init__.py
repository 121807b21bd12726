"""What the course pages show, built on the six components: plots, tables, simulations, the playground and
cloze widgets, reproductions of the original page's answers (to show where they go wrong), the answer-forms
data, the cloze snippets `make release` cuts from the exercises' answers (cloze_snippets.json), and what the
capstone's page shows of the engine in agentrl_ref.agent (capstone.py: tables, verdicts, plots, progress lines).

Nothing here is imported by a component. Plotting and widget libraries are imported by the modules that
need them, when they are used.
"""
