"""Exercise 5's page (book/ex5_composite_reward.ipynb): length-shaped rewards and the composite reward's log."""
