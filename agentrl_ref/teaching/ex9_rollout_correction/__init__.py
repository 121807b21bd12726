"""Exercise 9's page (book/ex9_rollout_correction.ipynb): a real bf16-sampler / fp32-trainer mismatch on the
capstone's policy, measured and trained on (mismatch_study), its figures and tables (plots, tables)."""
