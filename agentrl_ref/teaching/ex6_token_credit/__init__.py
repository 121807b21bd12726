"""Exercise 6's page (book/ex6_token_credit.ipynb): how one sequence reward becomes per-token credit."""
