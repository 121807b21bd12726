"""Exercise 10's page (book/ex10_partial_rollout.ipynb): the capstone's engine with the three answers to a weight
update that lands in a chunk (wait, abort, continue), on the simulated clock and in the real two processes
(interrupt_study), its figures and tables (plots, tables)."""
