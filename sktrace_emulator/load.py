"""The load generator's actions (``Workload.generate``): what a busy cluster does, one at random each time: bare pods
that run and finish, scaling, rollouts, Jobs, pod deletions (controllers replace them), ConfigMap updates."""

from __future__ import annotations

import random

from sktrace_emulator.builders import RUN_SECONDS, sample_containers, sample_pod_template
from sktrace_emulator.selectors import Filter
from sktrace_emulator.state import Store


def random_action(store: Store, rng: random.Random, namespace: str, deployments: list[str]) -> None:
    roll = rng.random()
    pod_type, deploy_type = store.type_of("v1", "Pod"), store.type_of("apps/v1", "Deployment")
    job_type, cm_type = store.type_of("batch/v1", "Job"), store.type_of("v1", "ConfigMap")
    if roll < 0.3:
        pod = {"metadata": {"generateName": "task-", "namespace": namespace, "annotations": {RUN_SECONDS: str(round(rng.uniform(0.5, 3), 2))}, "labels": {"app": "task"}}, "spec": {"containers": sample_containers(rng, app="task", count=1), "restartPolicy": "Never"}}
        store.create(pod_type, pod)
    elif roll < 0.5:
        store.patch(deploy_type, namespace, rng.choice(deployments), {"spec": {"replicas": rng.randint(1, 4)}})
    elif roll < 0.6:
        name = rng.choice(deployments)
        deploy = store.get(deploy_type, namespace, name)
        if deploy is not None:
            obj = deploy.obj()
            obj["spec"]["template"]["spec"]["containers"][0]["image"] = f"registry.example.com/team/app:2.{rng.randint(0, 99)}"
            store.update(deploy_type, obj)
    elif roll < 0.7:
        job = {"metadata": {"generateName": "batch-", "namespace": namespace}, "spec": {"completions": rng.randint(1, 2), "parallelism": 1, "template": {**sample_pod_template(rng, app="batch"), "spec": {**sample_pod_template(rng, app="batch")["spec"], "restartPolicy": "Never"}}}}
        store.create(job_type, job)
    elif roll < 0.85:
        pods = [s for s in store.current(pod_type, Filter(namespace=namespace))[1] if not s.deleting]
        if pods:
            victim = rng.choice(pods)
            store.delete(pod_type, victim.namespace, victim.name)
    else:
        name = f"settings-{rng.randint(0, 4)}"
        data = {"version": str(rng.randint(0, 10**6))}
        if store.get(cm_type, namespace, name) is None:
            store.create(cm_type, {"metadata": {"name": name, "namespace": namespace}, "data": data})
        else:
            store.patch(cm_type, namespace, name, {"data": data})
