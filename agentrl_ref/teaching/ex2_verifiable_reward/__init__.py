"""Exercise 2's page (book/ex2_verifiable_reward.ipynb): the answer forms, the verifier vs math-verify."""
