"""python -m grader: the instructor's commands (the Makefile's grade, grade-report and release targets).

    python -m grader grade SUBMISSIONS [--out DIR] [--jobs N] [--shard K/N] [--db-url URL | --db-url-file F]
                                       [--cell-timeout S] [--notebook-timeout S] [--memory-mb MB]
                                       [--isolation LEVEL] [--no-feedback] [--new]
    python -m grader report --out DIR [--db-url URL | --db-url-file F]   # after every shard
    python -m grader serve --exchange DIR --course DIR [--jobs N] [--lease S] [--min-interval S]
                           [--show all|total|visible] [--deadline TIME] [--db-url-file F]
                           [--identity accounts|per-user|names] [--inbound-per-user DIR] [--instructor NAME]
    python -m grader release [--out DIR] [--exchange DIR [--course DIR]] [assignment ...]
    python -m grader doctor [--exchange DIR --course DIR]   # the isolation level here, each guarantee at it,
                                        # what fixes the rest; and the hub's layout and grading service
    python -m grader sandbox (--check | --sweep)

As a normal user, `grade`, `doctor` and `sandbox` first re-enter themselves as root of a user namespace of
their own (grader/sandbox/userns.py): that is where the capped folders of the sandbox can be mounted.

The gradebook URL (it holds a password) is never needed on a command line: AGENTRL_DB_URL in the
environment, or --db-url-file naming a file only its owner can read.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from grader.course import ROOT


def _db_url(args) -> str | None:
    if getattr(args, "db_url_file", None):
        return Path(args.db_url_file).read_text(encoding="utf-8").strip()
    return args.db_url or os.environ.get("AGENTRL_DB_URL") or None


def _gradebook_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db-url", default=None, help="gradebook URL (default: AGENTRL_DB_URL, else SQLite in OUT)")
    parser.add_argument("--db-url-file", default=None, help="a file holding the gradebook URL")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    grade = commands.add_parser("grade", help="autograde a folder of hand-ins (see grader/grade/pipeline.py)")
    grade.add_argument("submissions", type=Path)
    grade.add_argument("--out", type=Path, default=Path("grading-output"))
    grade.add_argument("--jobs", type=int, default=None, help="notebooks executed at a time (default: 2)")
    grade.add_argument("--shard", default=None, help="K/N: grade shard K (0-based) of N; needs PostgreSQL")
    grade.add_argument("--cell-timeout", type=int, default=60, help="seconds per cell")
    grade.add_argument("--notebook-timeout", type=int, default=600, help="seconds per notebook")
    grade.add_argument("--memory-mb", type=int, default=None,
                       help="memory per notebook (default 2048; grader/sandbox/limits.py has the other limits)")
    grade.add_argument("--isolation", default="auto", choices=["auto", "cgroup", "job", "none"],
                       help="auto: the best level here, at least one cgroup per notebook (default); job: one "
                            "notebook at a time in the job's own limits (pods, Slurm steps); none: no sandbox")
    grade.add_argument("--no-feedback", action="store_true",
                       help="write no HTML feedback pages (grades and reports unchanged; faster)")
    grade.add_argument("--unsafe-no-sandbox", action="store_true", help="the same as --isolation=none")
    grade.add_argument("--new", action="store_true",
                       help="grade every hand-in again into a new dated folder beside OUT (by default, graded "
                            "again into an earlier output, only new or changed hand-ins are graded)")
    _gradebook_options(grade)

    merge = commands.add_parser("report", help="the class's reports after every shard has run")
    merge.add_argument("--out", type=Path, default=Path("grading-output"))
    _gradebook_options(merge)

    service = commands.add_parser("serve", help="grade each submission as it arrives in nbgrader's exchange "
                                                "(see grader/serve/service.py)")
    service.add_argument("--exchange", type=Path, required=True, help="nbgrader's Exchange.root")
    service.add_argument("--course", type=Path, required=True,
                         help="the nbgrader course folder graded into (copied from grader/ if it has no config)")
    service.add_argument("--state", type=Path, default=None, help="the service's private folder")
    service.add_argument("--jobs", type=int, default=1, help="submissions graded at a time (default 1)")
    service.add_argument("--lease", type=float, default=30.0, help="seconds before a silent worker's job is "
                                                                   "graded by another (default 30)")
    service.add_argument("--min-interval", type=float, default=0.0,
                         help="seconds between the starts of one student's gradings (rate limit; default 0)")
    service.add_argument("--poll", type=float, default=0.5, help="seconds between looks at inbound")
    service.add_argument("--show", default="all", choices=["all", "total", "visible"],
                         help="what feedback shows before the deadline (default all)")
    service.add_argument("--deadline", default=None, help="after it every page shows everything "
                                                          "(nbgrader's time format, e.g. '2027-01-15 23:59:00 UTC')")
    service.add_argument("--identity", default="accounts", choices=["accounts", "per-user", "names"],
                         help="who handed a folder in (grader/serve/identity.py): accounts (default: one OS account "
                              "per student; folder and files must be the student's), per-user (the hub mounts "
                              "each user's own inbound folder, --inbound-per-user), names (believe the folder name)")
    service.add_argument("--inbound-per-user", type=Path, default=None,
                         help="with --identity per-user: the folder holding one inbound folder per hub user")
    service.add_argument("--check-owner", action="store_true", help="the same as --identity accounts (the default)")
    service.add_argument("--instructor", default=None,
                         help="an OS account besides root and the service's own that may own the exchange and course")
    service.add_argument("--status-every", type=float, default=60.0, help="seconds between status lines in the log")
    service.add_argument("--isolation", default="auto", choices=["auto", "cgroup", "job", "none"])
    service.add_argument("--cell-timeout", type=int, default=60, help="seconds per cell")
    service.add_argument("--notebook-timeout", type=int, default=600, help="seconds per notebook")
    service.add_argument("--memory-mb", type=int, default=None, help="memory per notebook (default 2048)")
    _gradebook_options(service)

    publish = commands.add_parser("release", help="instructor notebooks -> notebooks/ and book/")
    publish.add_argument("names", nargs="*", help="assignments (default: all in grader/source)")
    publish.add_argument("--out", type=Path, default=ROOT, help="where notebooks/ and book/ go")
    publish.add_argument("--exchange", type=Path, default=None,
                         help="also release into nbgrader's exchange at this root (nbgrader release_assignment)")
    publish.add_argument("--course", type=Path, default=Path("hub-course"),
                         help="with --exchange: the instructor's nbgrader course folder (copied if empty)")

    doctor = commands.add_parser("doctor", help="the isolation level here, each guarantee at it, and what fixes the "
                                                "rest; with --exchange and --course, the hub's grading service too")
    doctor.add_argument("--exchange", type=Path, default=None, help="nbgrader's Exchange.root (the hub section)")
    doctor.add_argument("--course", type=Path, default=None, help="the course folder the service grades into")
    doctor.add_argument("--identity", default="accounts", choices=["accounts", "per-user", "names"])
    doctor.add_argument("--inbound-per-user", type=Path, default=None)
    doctor.add_argument("--instructor", default=None)
    doctor.add_argument("--state", type=Path, default=None)
    _gradebook_options(doctor)
    sandbox = commands.add_parser("sandbox", help="check or clean up the grading sandbox on this machine")
    sandbox.add_argument("--check", action="store_true", help="say whether the sandbox can run here")
    sandbox.add_argument("--sweep", action="store_true", help="remove stale cgroups, folders and mounts")

    args = parser.parse_args(argv)
    if args.command == "serve":
        _refuse_unsafe_layout(args)      # as the machine sees owners: before entering a user namespace
    if args.command == "doctor" and (args.exchange is not None or args.course is not None):
        _hub_section(args, parser)
    if argv is None and args.command in ("grade", "serve", "doctor", "sandbox"):
        from grader.sandbox import userns

        userns.enter(["-m", "grader", *sys.argv[1:]])
    if args.command == "grade":
        from grader.sandbox import SandboxLimits
        from grader.cluster.shards import Shard

        try:
            shard = Shard.parse(args.shard) if args.shard else None
            limits = SandboxLimits(memory_mb=args.memory_mb) if args.memory_mb else None
        except ValueError as exc:
            parser.error(str(exc))
        isolation = "none" if args.unsafe_no_sandbox else args.isolation
        _refuse_early(isolation)
        from grader.grade.pipeline import grade as run

        run(args.submissions, args.out, args.cell_timeout, args.notebook_timeout, _db_url(args), args.jobs,
            isolation=isolation, limits=limits, shard=shard, feedback=not args.no_feedback, new=args.new)
    elif args.command == "serve":
        return _serve(args, parser)
    elif args.command == "report":
        from grader.grade.pipeline import report

        url = _db_url(args)
        if not url:
            parser.error("the shards' PostgreSQL gradebook is needed: --db-url-file, --db-url or AGENTRL_DB_URL")
        report(args.out, url)
    elif args.command == "release":
        from grader.publish import release

        release.main(args)
    elif args.command == "doctor":
        from grader.sandbox import doctor_report

        text, ok = doctor_report()
        print(text)
        hub = os.environ.get(HUB_REPORT)
        if hub:
            safe, hub = hub.split("\n", 1)
            print(hub)
            ok = ok and safe == "safe"
        return 0 if ok else 2
    elif args.command == "sandbox":
        from grader.sandbox import SandboxUnavailable, choose, probe, sweep_stale

        if args.sweep:
            print(f"removed {sweep_stale(probe().best)} stale folders and mounts")
        try:
            print(f"sandbox available, isolation level {choose('auto')} / 沙箱可用")
        except SandboxUnavailable as exc:
            print(exc, file=sys.stderr)
            return 2
    return 0


def _refuse_early(isolation: str) -> None:
    """SystemExit with the ways forward if this machine cannot give `isolation`, before the grading machinery is
    even imported (pipeline.isolation_level says the same again, with the level's table, once it runs)."""
    from grader.sandbox import SandboxUnavailable, choose, refusal

    try:
        choose(isolation)
    except SandboxUnavailable as exc:
        raise SystemExit(refusal(exc)) from None


def _serve(args, parser) -> int:
    from grader.sandbox import SandboxLimits

    _refuse_early(args.isolation)
    from nbgrader.utils import parse_utc

    from grader.serve.identity import Identity
    from grader.serve.service import Settings, serve
    from grader.serve.showing import Showing

    url = _db_url(args)
    if not url:
        parser.error("the gradebook (which holds the queue) is needed: --db-url-file, --db-url or AGENTRL_DB_URL")
    try:
        deadline = parse_utc(args.deadline).timestamp() if args.deadline else None
    except ValueError as exc:
        parser.error(f"--deadline: {exc}")
    if args.check_owner and args.identity != "accounts":
        parser.error("--check-owner is --identity accounts")
    try:
        identity = Identity(args.identity, args.inbound_per_user)
    except ValueError as exc:
        parser.error(str(exc))
    serve(Settings(exchange=args.exchange, course=args.course, db_url=url, state=args.state, jobs=args.jobs,
                   lease=args.lease, min_interval=args.min_interval, poll=args.poll, isolation=args.isolation,
                   limits=SandboxLimits(memory_mb=args.memory_mb) if args.memory_mb else None,
                   cell_timeout=args.cell_timeout, notebook_timeout=args.notebook_timeout,
                   showing=Showing(args.show, deadline), identity=identity.mode, per_user=identity.per_user,
                   instructor=args.instructor, db_url_file=_path(args.db_url_file), status_every=args.status_every))
    return 0


HUB_REPORT = "AGENTRL_HUB_REPORT"   # the doctor's hub section, made before a user namespace (owners look wrong in it)


def _hub_section(args, parser) -> None:
    if os.environ.get(HUB_REPORT) is not None:
        return                                # made by this command before it re-entered itself
    if args.exchange is None or args.course is None:
        parser.error("the hub section needs both --exchange and --course")
    from grader.serve.layout import Layout, hub_report

    text, safe = hub_report(Layout(args.exchange, args.course, args.state, _path(args.db_url_file),
                                   args.inbound_per_user, args.instructor), args.identity, _db_url(args))
    os.environ[HUB_REPORT] = ("safe" if safe else "unsafe") + "\n" + text


def _refuse_unsafe_layout(args) -> None:
    from grader.serve.layout import Layout, refuse_unsafe

    refuse_unsafe(Layout(args.exchange, args.course, args.state, _path(args.db_url_file), args.inbound_per_user,
                         args.instructor), "accounts" if args.check_owner else args.identity)


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


if __name__ == "__main__":
    sys.exit(main())
