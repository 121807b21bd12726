"""Graded on arrival: a service that grades each submission in nbgrader's exchange as it comes in.

    python -m grader serve --exchange /srv/nbgrader/exchange --course /srv/course --db-url-file F

The parts, one file each:
    layout.py    the hub's folders as the service needs them: checked before it starts (and by doctor)
    identity.py  who handed a folder in: one OS account per student, per-user inbound folders, or names
    inbound.py   the exchange's inbound folder: names parsed strictly, folders and files read by descriptors
    scanner.py   the incremental scanner: each folder judged once, bounded work per pass and per account
    queue.py     the queue: a table in the gradebook's database, timed by arrival, claimed from one index
    worker.py    one claimed submission through make grade's own steps (grade/pipeline.py), recorded
    render.py    its feedback page, in a child process with a size and a time limit
    showing.py   what the feedback shows before the deadline (the instructor's choice)
    deliver.py   the feedback page where nbgrader's "Fetch Feedback" finds it
    health.py    threads started again if they die; the status line and status.json
    service.py   the process: scanner, workers and heartbeat threads; `python -m grader serve`
"""
