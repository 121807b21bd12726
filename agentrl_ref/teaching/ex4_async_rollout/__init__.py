"""Exercise 4's page (book/ex4_async_rollout.ipynb): the simulated rollout clock, its plots and playground, the
queue measurement and the seed page's buffer."""
