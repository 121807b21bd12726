"""Exercise 1's page (book/ex1_format_reward.ipynb): how other format checks judge and how long they take."""
