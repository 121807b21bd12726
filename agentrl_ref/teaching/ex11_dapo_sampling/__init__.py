"""Exercise 11's page (book/ex11_dapo_sampling.ipynb): the capstone's policy trained with symmetric clipping,
clip-higher and dynamic sampling on several seeds (agent/dapo_arms.py), its tables and verdicts (tables) and its
figures (plots)."""
