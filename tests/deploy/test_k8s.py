"""Kubernetes manifests: schema-valid, and wired the way docs/operations.md says they are.

The manifests are rendered with the real kustomize (``kubectl kustomize``) when kubectl is on
the PATH, and read file by file from kustomization.yaml's resources otherwise; each object is
validated against the Kubernetes JSON schemas shipped by ``kubernetes-validate`` (strict: an
unknown or misspelt field fails).
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from bot.settings import ENV_NAMES, Settings

yaml = pytest.importorskip("yaml", reason="pyyaml (test extra) parses the manifests")
kubernetes_validate = pytest.importorskip(
    "kubernetes_validate", reason="kubernetes-validate (test extra) ships the Kubernetes schemas"
)

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
#: The oldest Kubernetes minor the manifests promise to work on (autoscaling/v2, policy/v1).
KUBERNETES_VERSION = "1.29.0"
SECRET_VARIABLES = {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "REDIS_URL"}

Object = dict[str, Any]


def _load_all(text: str) -> list[Object]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _kustomization() -> Object:
    doc: Object = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return doc


@cache
def _rendered_text() -> str:
    kubectl = shutil.which("kubectl")
    if kubectl is not None:
        return subprocess.run(
            [kubectl, "kustomize", str(K8S)], check=True, capture_output=True, text=True
        ).stdout
    return "\n---\n".join((K8S / name).read_text() for name in _kustomization()["resources"])


def _objects() -> list[Object]:
    return _load_all(_rendered_text())


def _one(kind: str, name: str) -> Object:
    matches = [o for o in _objects() if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind}/{name}, found {len(matches)}"
    return matches[0]


def _secret_template() -> Object:
    (secret,) = _load_all((K8S / "secret.example.yaml").read_text())
    return secret


def _pod_spec(workload: Object) -> Object:
    spec: Object = workload["spec"]["template"]["spec"]
    return spec


def _labels_match(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def _validate(obj: Object) -> None:
    kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


WORKLOADS = [
    ("Deployment", "gpufit-bot"),
    ("Deployment", "gpufit-worker"),
    ("StatefulSet", "redis"),
]


class TestSchemas:
    def test_every_rendered_object_is_valid_against_the_kubernetes_schema(self) -> None:
        """Each object of the kustomize output validates strictly (unknown fields fail)."""
        objects = _objects()
        assert len(objects) >= 10
        for obj in objects:
            _validate(obj)

    def test_the_secret_template_is_valid_too(self) -> None:
        """The Secret kept out of the kustomization still validates."""
        _validate(_secret_template())

    def test_the_validator_rejects_a_misspelt_field(self) -> None:
        """The schema check has teeth: a typo in a probe is caught, not ignored."""
        broken = copy.deepcopy(_one("Deployment", "gpufit-bot"))
        container = _pod_spec(broken)["containers"][0]
        container["readinessProbe"]["httpGett"] = container["readinessProbe"].pop("httpGet")
        with pytest.raises(kubernetes_validate.ValidationError):
            _validate(broken)

    def test_the_kustomization_lists_every_manifest_but_the_secret_template(self) -> None:
        """No manifest is forgotten; the Secret template is left out so apply never resets it."""
        files = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
        assert set(_kustomization()["resources"]) == files - {"secret.example.yaml"}

    def test_everything_lands_in_the_gpufit_namespace(self) -> None:
        """kustomize puts every namespaced object into the gpufit namespace."""
        assert _kustomization()["namespace"] == "gpufit"
        if shutil.which("kubectl") is None:
            pytest.skip("kubectl not installed: the namespace transform is kustomize's")
        for obj in _objects():
            if obj["kind"] != "Namespace":
                assert obj["metadata"]["namespace"] == "gpufit", obj["metadata"]["name"]


class TestBot:
    def test_it_runs_several_replicas_that_roll_without_losing_capacity(self) -> None:
        """At least 2 replicas, and a rollout never takes one away before its successor is up."""
        bot = _one("Deployment", "gpufit-bot")
        assert bot["spec"]["replicas"] >= 2
        assert bot["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0

    def test_it_serves_with_readiness_on_readyz_and_liveness_on_healthz(self) -> None:
        """Readiness gates traffic on Redis and prices; liveness only on the process."""
        (container,) = _pod_spec(_one("Deployment", "gpufit-bot"))["containers"]
        assert container["args"] == ["serve"]
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports["http"] == Settings().port

    def test_every_probe_asks_the_probe_listener_not_the_public_port(self) -> None:
        """Idle or slow clients on the public port cannot starve the kubelet's probes: they
        ask GPUFIT_HEALTH_PORT, a listener with its own connection count (issue #34)."""
        (container,) = _pod_spec(_one("Deployment", "gpufit-bot"))["containers"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports["health"] == Settings().health_port != ports["http"]
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            assert container[probe]["httpGet"]["port"] == "health", probe

    def test_a_disruption_budget_and_an_autoscaler_cover_it(self) -> None:
        """The PDB selects the bot pods; the HPA scales the bot Deployment from >= 2 replicas."""
        bot = _one("Deployment", "gpufit-bot")
        pod_labels = bot["spec"]["template"]["metadata"]["labels"]
        pdb = _one("PodDisruptionBudget", "gpufit-bot")
        assert _labels_match(pdb["spec"]["selector"]["matchLabels"], pod_labels)
        hpa = _one("HorizontalPodAutoscaler", "gpufit-bot")
        assert hpa["spec"]["scaleTargetRef"] == {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "gpufit-bot",
        }
        assert 2 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]

    def test_the_service_and_ingress_reach_the_bot_and_expose_only_slack_paths(self) -> None:
        """Service → bot pods' http port; Ingress → Service, with TLS, on /slack only."""
        bot = _one("Deployment", "gpufit-bot")
        service = _one("Service", "gpufit-bot")
        assert _labels_match(
            service["spec"]["selector"], bot["spec"]["template"]["metadata"]["labels"]
        )
        (port,) = service["spec"]["ports"]
        assert port["targetPort"] == "http"
        ingress = _one("Ingress", "gpufit-bot")
        assert ingress["spec"]["tls"]
        paths = [p for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]]
        assert [p["path"] for p in paths] == ["/slack"]
        backend = paths[0]["backend"]["service"]
        assert backend == {"name": "gpufit-bot", "port": {"name": port["name"]}}


class TestBotMetrics:
    def test_prometheus_scrapes_the_metrics_port_not_the_public_one(self) -> None:
        """`gpufit serve` answers /metrics on GPUFIT_METRICS_PORT only; the pod names that port
        and the scrape annotation points at it, not at Slack's port."""
        bot = _one("Deployment", "gpufit-bot")
        annotations = bot["spec"]["template"]["metadata"]["annotations"]
        (container,) = _pod_spec(bot)["containers"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports["metrics"] == Settings().metrics_port != ports["http"]
        assert annotations["prometheus.io/port"] == str(ports["metrics"])


class TestWorker:
    def test_it_is_its_own_deployment_with_a_liveness_probe_on_its_listener(self) -> None:
        """`gpufit worker` runs apart from the bot; its /healthz is on GPUFIT_METRICS_PORT."""
        worker = _one("Deployment", "gpufit-worker")
        assert 1 <= worker["spec"]["replicas"] <= 2
        (container,) = _pod_spec(worker)["containers"]
        assert container["args"] == ["worker"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports["metrics"] == Settings().metrics_port
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}


class TestRedis:
    def test_it_is_a_statefulset_with_a_persistent_volume_and_aof(self) -> None:
        """One Redis pod whose /data is a PVC and whose append-only file is on."""
        redis = _one("StatefulSet", "redis")
        assert redis["spec"]["serviceName"] == "redis"
        (claim,) = redis["spec"]["volumeClaimTemplates"]
        (container,) = _pod_spec(redis)["containers"]
        args = container["args"]
        assert args[args.index("--appendonly") + 1] == "yes"
        assert args[args.index("--dir") + 1] == "/data"
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert mounts[claim["metadata"]["name"]] == "/data"

    def test_a_headless_service_names_the_pod_the_default_redis_url_uses(self) -> None:
        """clusterIP None gives redis-0.redis, which the Secret template's REDIS_URL points at."""
        service = _one("Service", "redis")
        assert service["spec"]["clusterIP"] == "None"
        redis_pods = _one("StatefulSet", "redis")["spec"]["template"]["metadata"]["labels"]
        assert _labels_match(service["spec"]["selector"], redis_pods)
        assert _secret_template()["stringData"]["REDIS_URL"].startswith("redis://redis-0.redis:")

    def test_the_manifest_explains_the_managed_redis_and_sentinel_alternative(self) -> None:
        """The small-install Redis says what to use in production instead."""
        text = (K8S / "redis.yaml").read_text()
        assert "managed Redis" in text
        assert "Sentinel" in text


class TestPodHardening:
    @pytest.mark.parametrize(("kind", "name"), WORKLOADS)
    def test_every_container_has_requests_and_limits(self, kind: str, name: str) -> None:
        """CPU and memory requests and limits on every container, for scheduling and the HPA."""
        for container in _pod_spec(_one(kind, name))["containers"]:
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(container["resources"][bound]), container["name"]

    @pytest.mark.parametrize(("kind", "name"), WORKLOADS)
    def test_pods_run_non_root_with_a_read_only_root_filesystem(self, kind: str, name: str) -> None:
        """The restricted Pod Security Standard: non-root, no escalation, no caps, seccomp."""
        pod = _pod_spec(_one(kind, name))
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        assert pod["automountServiceAccountToken"] is False
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"]["drop"] == ["ALL"]

    def test_the_namespace_enforces_the_restricted_pod_security_standard(self) -> None:
        """Admission refuses any pod that would loosen the contexts above."""
        labels = _one("Namespace", "gpufit")["metadata"]["labels"]
        assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


class TestConfiguration:
    @pytest.mark.parametrize("name", ["gpufit-bot", "gpufit-worker"])
    def test_bot_and_worker_read_the_configmap_and_the_secret(self, name: str) -> None:
        """Settings arrive as environment variables from gpufit-config and gpufit-secrets."""
        (container,) = _pod_spec(_one("Deployment", name))["containers"]
        sources = {next(iter(ref)): ref[next(iter(ref))]["name"] for ref in container["envFrom"]}
        assert sources == {"configMapRef": "gpufit-config", "secretRef": "gpufit-secrets"}

    def test_configmap_keys_are_known_non_secret_settings(self) -> None:
        """A typo in a key would be silently ignored by gpufit; a secret does not belong here."""
        data = _one("ConfigMap", "gpufit-config")["data"]
        assert set(data) <= set(ENV_NAMES.values())
        assert not set(data) & SECRET_VARIABLES

    def test_configmap_values_are_valid_settings(self) -> None:
        """The shipped configuration passes Settings validation."""
        Settings.from_env(_one("ConfigMap", "gpufit-config")["data"])

    def test_the_secret_template_holds_every_secret_and_only_placeholders(self) -> None:
        """All Slack secrets and REDIS_URL are keyed; no value is a real-looking token."""
        secret = _secret_template()
        assert secret["metadata"]["name"] == "gpufit-secrets"
        data = secret["stringData"]
        assert set(data) == SECRET_VARIABLES
        for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"):
            assert data[name].startswith("REPLACE_WITH_"), name
        text = (K8S / "secret.example.yaml").read_text()
        assert not re.search(r"xox[abprse]-[A-Za-z0-9]|xapp-[A-Za-z0-9]", text)

    def test_no_manifest_carries_a_secret_value(self) -> None:
        """Nothing token-shaped anywhere in deploy/k8s."""
        for path in K8S.glob("*.yaml"):
            assert not re.search(r"xox[abprse]-[A-Za-z0-9]|xapp-[A-Za-z0-9]", path.read_text()), (
                path
            )
