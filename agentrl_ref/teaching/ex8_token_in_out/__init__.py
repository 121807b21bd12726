"""Exercise 8's page (book/ex8_token_in_out.ipynb): what retokenizing costs on the tiny Qwen2 (drift_study), and a
template that strips earlier <think> blocks (templates)."""
