"""Graded on arrival: a service that grades each submission in nbgrader's exchange as it comes in.

    python -m grader serve --exchange /srv/nbgrader/exchange --course /srv/course --db-url-file F

The parts, one file each:
    inbound.py   the exchange's inbound folder: complete submissions, their names parsed, files read safely
    queue.py     the queue: a table in the gradebook's database, claimed with FOR UPDATE SKIP LOCKED, leases
    worker.py    one claimed submission through make grade's own steps (grade/pipeline.py), recorded
    showing.py   what the feedback shows before the deadline (the instructor's choice)
    deliver.py   the feedback page where nbgrader's "Fetch Feedback" finds it
    service.py   the process: scanner, workers and heartbeat threads; `python -m grader serve`
"""
