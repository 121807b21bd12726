"""A real single-node Slurm cluster for tests and benchmarks: munge, slurmctld and slurmd from Debian's
packages, started in a private folder in about a second, stopped and removed afterwards.

    with local_slurm(cpus=2) as env:          # env: the environment sbatch/squeue need (SLURM_CONF)
    with local_slurm(cpus=3, cores=[0, 1]):   # 3 one-CPU tasks at once on the machine's cores 0 and 1
        subprocess.run(["sbatch", ...], env=env)
        wait_for_jobs(env)

    array, report = submit_shards(env, 3, submissions, out, db_url, folder)   # grader/cluster/slurm/submit.sh

Nothing is simulated: jobs are real processes started by slurmd. Needs root (slurmd runs jobs as the
submitting user; munged's key and socket live in the private folder). The facts behind the settings are
in ../shared/TOOLCHAIN.md ("A real Slurm cluster on one machine").
"""
from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from ports import free_port

ROOT = Path(__file__).resolve().parents[1]
SUBMIT = ROOT / "grader" / "cluster" / "slurm" / "submit.sh"
DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd")


def available() -> str | None:
    """None if a local cluster can start here, else why not."""
    missing = [d for d in DAEMONS if not os.access(d, os.X_OK)]
    if missing:
        return f"not installed: {', '.join(missing)} (make deps)"
    if os.geteuid() != 0:
        return "a local Slurm cluster needs root"
    return None


def _wait(check, what: str, seconds: float = 30.0) -> None:
    end = time.monotonic() + seconds
    while not check():
        if time.monotonic() > end:
            raise RuntimeError(f"local Slurm: {what} did not come up in {seconds:.0f} s")
        time.sleep(0.05)


@contextlib.contextmanager
def local_slurm(cpus: int = 2, cores: list[int] | None = None):
    """A cluster of one node that Slurm believes has `cpus` CPUs; with `cores`, slurmd (and so every job, with
    task/none) runs on those cores of the machine only: more CPUs than cores makes tasks share cores, as
    shards on a loaded or oversubscribed node do."""
    base = Path(tempfile.mkdtemp(prefix="agentrl-slurm-"))
    base.chmod(0o755)   # munged wants its socket's folder open to every user (jobs run as the submitter)
    host = socket.gethostname()
    memory = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20) - 100
    for sub in ("state", "spool", "log", "run"):
        (base / sub).mkdir()
    key = base / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o600)
    sock = base / "munge.socket.2"
    conf = base / "slurm.conf"
    conf.write_text(f"""ClusterName=agentrl
SlurmctldHost={host}
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool
SlurmctldPidFile={base}/run/slurmctld.pid
SlurmdPidFile={base}/run/slurmd.pid
SlurmctldLogFile={base}/log/slurmctld.log
SlurmdLogFile={base}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
NodeName={host} CPUs={cpus} RealMemory={memory} State=UNKNOWN
PartitionName=grading Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
    env = {**os.environ, "SLURM_CONF": str(conf)}
    procs = []
    try:
        procs.append(subprocess.Popen(
            [DAEMONS[0], "-F", f"--socket={sock}", f"--key-file={key}", f"--pid-file={base}/run/munged.pid",
             f"--log-file={base}/log/munged.log", f"--seed-file={base}/munge.seed"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        _wait(sock.exists, "munged")
        for daemon in DAEMONS[1:]:
            pin = ["taskset", "-c", ",".join(map(str, cores))] if cores and daemon.endswith("slurmd") else []
            procs.append(subprocess.Popen([*pin, daemon, "-D", "-f", str(conf)], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

        def idle() -> bool:
            out = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], env=env, capture_output=True, text=True)
            return out.stdout.strip() == "idle"

        _wait(idle, "the node")
        yield env
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in reversed(procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(base, ignore_errors=True)


def submit_shards(env: dict, shards: int, submissions: Path, out: Path, db_url: str, folder: Path) -> tuple[str, str]:
    """A class graded as `shards` Slurm tasks of one core each, then its report, as an instructor submits
    them (grader/cluster/slurm/submit.sh) with this checkout as the course: the gradebook's URL in a file
    only its owner reads, the jobs' logs in folder. Returns the job ids of the shards' array and the report."""
    url_file = folder / "db-url"
    url_file.write_text(db_url)
    url_file.chmod(0o600)
    env = {**env, "AGENTRL_COURSE": str(ROOT), "SUBMISSIONS": str(submissions), "OUT": str(out),
           "AGENTRL_DB_URL_FILE": str(url_file)}
    submitted = subprocess.run([str(SUBMIT), str(shards), "--cpus-per-task=1", f"--chdir={folder}"], env=env,
                               capture_output=True, text=True, check=True)
    array, report = submitted.stdout.split()
    return array, report


def sbatch(env: dict, *args: str) -> str:
    out = subprocess.run(["sbatch", "--parsable", *args], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip().split(";")[0]


def wait_for_jobs(env: dict, seconds: float = 600.0, every: float = 0.2) -> None:
    """Poll squeue until no job is left (sbatch --wait backs off to long sleeps)."""
    def empty() -> bool:
        out = subprocess.run(["squeue", "-h", "-o", "%i"], env=env, capture_output=True, text=True)
        return out.returncode == 0 and not out.stdout.strip()

    _wait(empty, "the jobs' end", seconds)


def job_states(env: dict, job: str) -> list[str]:
    """The final states of a job (and its array tasks), from scontrol (no accounting database here)."""
    out = subprocess.run(["scontrol", "-o", "show", "job", job], env=env, capture_output=True, text=True)
    return [field.split("=", 1)[1] for line in out.stdout.splitlines() for field in line.split()
            if field.startswith("JobState=")]
