"""A class graded as shards on several machines (shards.py), and the Slurm and Kubernetes files that start
them (slurm/, kubernetes/)."""
