"""The cluster files, checked without a cluster: the Kubernetes Jobs against Kubernetes' own schemas
(kubernetes-validate --strict, offline) and against what the grader needs, which the schemas do not know;
the grading image's build file; the Slurm scripts' syntax (test_shards.py runs them on a real Slurm)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from grader.course import ROOT

CLUSTER = ROOT / "grader" / "cluster"
MANIFESTS = sorted((CLUSTER / "kubernetes").glob("*.yaml"))
JOBS = [p for p in MANIFESTS if yaml.safe_load(p.read_text())["kind"] == "Job"]


def _validate(path: Path) -> subprocess.CompletedProcess:
    tool = Path(sys.executable).parent / "kubernetes-validate"
    return subprocess.run([str(tool), "--strict", "--quiet", str(path)], capture_output=True, text=True)


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_kubernetes_validate_strict_accepts_the_job(path):
    result = _validate(path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_kubernetes_validate_rejects_a_broken_job(tmp_path):
    """The validator is not a formality: a misspelt field or a wrong type fails it."""
    job = yaml.safe_load((CLUSTER / "kubernetes" / "grade-job.yaml").read_text())
    job["spec"]["completion"] = job["spec"].pop("completions")
    job["spec"]["parallelism"] = "four"
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(job))
    assert _validate(broken).returncode != 0


def _container(job: dict) -> dict:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return container


def test_the_grading_job_is_indexed_and_grades_its_own_shard():
    job = yaml.safe_load((CLUSTER / "kubernetes" / "grade-job.yaml").read_text())
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"          # the validator does not check enum values
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    container = _container(job)
    env = {e["name"]: e for e in container["env"]}
    assert env["SHARDS"]["value"] == str(spec["completions"])
    command = " ".join(container["command"] + container["args"])
    assert '--shard "$JOB_COMPLETION_INDEX/$SHARDS"' in command and "python -m grader grade" in command
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert all(any(arg.startswith(m) for m in mounts) for arg in re.findall(r"/data/\S+", command))


@pytest.mark.parametrize("path", JOBS, ids=lambda p: p.name)
def test_the_gradebook_url_comes_from_a_secret_and_resources_are_bounded(path):
    container = _container(yaml.safe_load(path.read_text()))
    url = next(e for e in container["env"] if e["name"] == "AGENTRL_DB_URL")
    assert "value" not in url and url["valueFrom"]["secretKeyRef"]["key"]
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(container["resources"][kind]), kind
    assert not container["image"].endswith(":latest") and ":" in container["image"]


@pytest.mark.parametrize("path", JOBS, ids=lambda p: p.name)
def test_the_pods_are_unprivileged_with_no_token_and_a_read_only_root(path):
    job = yaml.safe_load(path.read_text())
    pod = job["spec"]["template"]["spec"]
    container = _container(job)
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    sc = container["securityContext"]
    assert not sc.get("privileged") and sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True and sc["capabilities"]["drop"] == ["ALL"]
    # a read-only root: every folder the grader writes is a volume
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert "/data" in mounts and ("/tmp" in mounts)


def test_the_shard_pods_grade_at_the_job_level_with_what_bubblewrap_needs_and_say_why():
    text = (CLUSTER / "kubernetes" / "grade-job.yaml").read_text()
    job = yaml.safe_load(text)
    pod, container = job["spec"]["template"]["spec"], _container(job)
    command = " ".join(container["command"] + container["args"])
    assert "--isolation=job" in command and "--jobs 1" in command
    assert pod["hostUsers"] is False                        # procMount Unmasked is allowed only with it
    sc = container["securityContext"]
    assert sc["procMount"] == "Unmasked"
    assert sc["seccompProfile"]["type"] == "Unconfined" and sc["appArmorProfile"]["type"] == "Unconfined"
    for why in ("hostUsers: false", "unshare()", "procMount: Unmasked", "python -m grader doctor"):
        assert why in text, why
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/var/tmp", "/tmp", "/home/grader"} <= mounts     # the state folders, HOME


def test_the_network_policy_lets_the_graders_reach_only_the_gradebook():
    policy = yaml.safe_load((CLUSTER / "kubernetes" / "network-policy.yaml").read_text())
    job = yaml.safe_load((CLUSTER / "kubernetes" / "grade-job.yaml").read_text())
    labels = job["spec"]["template"]["metadata"]["labels"]
    spec = policy["spec"]
    assert all(labels.get(k) == v for k, v in spec["podSelector"]["matchLabels"].items())
    assert set(spec["policyTypes"]) == {"Ingress", "Egress"} and spec["ingress"] == []
    ports = sorted((p["protocol"], p["port"]) for rule in spec["egress"] for p in rule["ports"])
    assert ports == [("TCP", 53), ("TCP", 5432), ("UDP", 53)]


def test_the_grading_image_installs_what_the_grader_needs():
    text = (CLUSTER / "kubernetes" / "Containerfile").read_text()
    pins = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert re.search(r"^FROM python:3\.11\.\d+-slim-bookworm$", text, re.M)
    assert "bubblewrap" in text and "-r requirements.txt" in text and "-e grader" in text
    assert re.search(r"^USER 1000$", text, re.M)            # the pods' runAsUser, runAsNonRoot
    assert f"torch=={pins['torch'].split()[0]}" in text and "download.pytorch.org/whl/cpu" in text


@pytest.mark.parametrize("script", sorted((CLUSTER / "slurm").iterdir()), ids=lambda p: p.name)
def test_the_slurm_scripts_parse(script):
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
