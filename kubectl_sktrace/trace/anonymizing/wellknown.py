"""Kubernetes' well-known label, annotation and taint keys, and the values of the node labels ``--anonymize`` keeps.
Pure data, no I/O.

``WELL_KNOWN_KEYS`` is the list of the Kubernetes documentation page "Well-Known Labels, Annotations and Taints"
(kubernetes.io/docs/reference/labels-annotations-taints), with the recommended ``app.kubernetes.io/`` labels. Only
these keys are kept as they are. Any other key under ``kubernetes.io/``, ``k8s.io/`` or a subdomain of theirs keeps
its prefix when the prefix is one of the prefixes of that page (``KUBERNETES_PREFIXES``: ``node-role.kubernetes.io``,
``node-restriction.kubernetes.io``, …), its name replaced; under any other prefix (``team.kubernetes.io``) the whole key
is replaced, as a key outside these prefixes is.

``OS_VALUES`` and ``ARCH_VALUES`` are Go's ``GOOS`` and ``GOARCH`` values, which the kubelet writes into
``kubernetes.io/os`` and ``kubernetes.io/arch``: only these values of those labels are kept.
"""

from __future__ import annotations

_RECOMMENDED = ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
                "app.kubernetes.io/component", "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by")
_AWS_LOAD_BALANCER = tuple(f"service.beta.kubernetes.io/aws-load-balancer-{name}" for name in (
    "access-log-emit-interval", "access-log-enabled", "access-log-s3-bucket-name", "access-log-s3-bucket-prefix",
    "additional-resource-tags", "alpn-policy", "attributes", "backend-protocol", "connection-draining-enabled",
    "connection-draining-timeout", "connection-idle-timeout", "cross-zone-load-balancing-enabled", "eip-allocations",
    "extra-security-groups", "healthcheck-healthy-threshold", "healthcheck-interval", "healthcheck-path", "healthcheck-port",
    "healthcheck-protocol", "healthcheck-timeout", "healthcheck-unhealthy-threshold", "internal", "ip-address-type",
    "manage-backend-security-group-rules", "name", "nlb-target-type", "private-ipv4-addresses", "proxy-protocol", "scheme",
    "security-groups", "ssl-cert", "ssl-negotiation-policy", "ssl-ports", "subnets", "target-group-attributes",
    "target-node-labels", "type"))
WELL_KNOWN_KEYS = frozenset({
    *_RECOMMENDED, "app.kubernetes.io/created-by", *_AWS_LOAD_BALANCER,
    "apf.kubernetes.io/autoupdate-spec", "applyset.kubernetes.io/additional-namespaces",
    "applyset.kubernetes.io/contains-group-kinds", "applyset.kubernetes.io/contains-group-resources", "applyset.kubernetes.io/id",
    "applyset.kubernetes.io/is-parent-type", "applyset.kubernetes.io/part-of", "applyset.kubernetes.io/tooling",
    "apps.kubernetes.io/pod-index", "autoscaling.alpha.kubernetes.io/behavior", "addonmanager.kubernetes.io/mode",
    "kubectl.kubernetes.io/restartedAt", "kubectl.kubernetes.io/default-container", "kubectl.kubernetes.io/default-logs-container",
    "kubectl.kubernetes.io/last-applied-configuration", "cluster-autoscaler.kubernetes.io/safe-to-evict",
    "cluster-autoscaler.kubernetes.io/enable-ds-eviction", "config.kubernetes.io/local-config", "internal.config.kubernetes.io/path",
    "internal.config.kubernetes.io/index", "kubernetes.io/arch", "kubernetes.io/os", "kubernetes.io/hostname",
    "kubernetes.io/metadata.name", "kubernetes.io/limit-ranger", "kubernetes.io/change-cause", "kubernetes.io/description",
    "kubernetes.io/enforce-mountable-secrets", "kubernetes.io/ingress-bandwidth", "kubernetes.io/egress-bandwidth",
    "kubernetes.io/service-name", "kubernetes.io/service-account.name", "kubernetes.io/service-account.uid",
    "kubernetes.io/legacy-token-last-used", "kubernetes.io/legacy-token-invalid-since", "kubernetes.io/ingress.class",
    "kubernetes.io/psp", "k8s.io/initial-events-end",
    "beta.kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/instance-type", "kube-aggregator.kubernetes.io/automanaged",
    "service.alpha.kubernetes.io/tolerate-unready-endpoints", "service.beta.kubernetes.io/azure-load-balancer-disable-tcp-reset",
    "service.kubernetes.io/headless", "service.kubernetes.io/service-proxy-name", "service.kubernetes.io/topology-mode",
    "service.kubernetes.io/topology-aware-hints", "node.kubernetes.io/exclude-from-external-load-balancers",
    "node.kubernetes.io/instance-type", "node.kubernetes.io/windows-build", "controller.kubernetes.io/pod-deletion-cost",
    "topology.kubernetes.io/region", "topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
    "pv.kubernetes.io/provisioned-by", "pv.kubernetes.io/migrated-to", "statefulset.kubernetes.io/pod-name",
    "scheduler.alpha.kubernetes.io/node-selector", "scheduler.alpha.kubernetes.io/defaultTolerations",
    "scheduler.alpha.kubernetes.io/tolerationsWhitelist", "scheduler.alpha.kubernetes.io/preferAvoidPods",
    "scheduler.alpha.kubernetes.io/critical-pod", "volume.beta.kubernetes.io/storage-provisioner",
    "volume.beta.kubernetes.io/storage-class", "volume.beta.kubernetes.io/mount-options", "volume.kubernetes.io/storage-provisioner",
    "volume.kubernetes.io/selected-node", "volumes.kubernetes.io/controller-managed-attach-detach",
    "storage.alpha.kubernetes.io/migrated-plugins", "endpointslice.kubernetes.io/managed-by", "endpointslice.kubernetes.io/skip-mirror",
    "endpoints.kubernetes.io/over-capacity", "endpoints.kubernetes.io/last-change-trigger-time",
    "experimental.windows.kubernetes.io/isolation-type", "ingressclass.kubernetes.io/is-default-class",
    "storageclass.kubernetes.io/is-default-class", "alpha.kubernetes.io/provided-node-ip", "batch.kubernetes.io/job-completion-index",
    "batch.kubernetes.io/job-tracking", "batch.kubernetes.io/job-name", "batch.kubernetes.io/controller-uid",
    "batch.kubernetes.io/cronjob-scheduled-timestamp", "resource.kubernetes.io/pod-claim-name",
    "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/memory-pressure", "node.kubernetes.io/disk-pressure", "node.kubernetes.io/network-unavailable",
    "node.kubernetes.io/pid-pressure", "node.kubernetes.io/out-of-service", "node.cloudprovider.kubernetes.io/uninitialized",
    "node.cloudprovider.kubernetes.io/shutdown", "pod-security.kubernetes.io/enforce", "pod-security.kubernetes.io/enforce-version",
    "pod-security.kubernetes.io/audit", "pod-security.kubernetes.io/audit-version", "pod-security.kubernetes.io/warn",
    "pod-security.kubernetes.io/warn-version", "pod-security.kubernetes.io/exempt", "pod-security.kubernetes.io/enforce-policy",
    "pod-security.kubernetes.io/audit-violations", "authorization.k8s.io/decision", "authorization.k8s.io/reason",
    "rbac.authorization.kubernetes.io/autoupdate", "seccomp.security.alpha.kubernetes.io/pod",
    "snapshot.storage.kubernetes.io/allow-volume-mode-change", "kubeadm.alpha.kubernetes.io/cri-socket",
    "kubeadm.kubernetes.io/etcd.advertise-client-urls", "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint",
    "kubeadm.kubernetes.io/component-config.hash", "node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master",
    "jobset.sigs.k8s.io/jobset-name",
    # set by Kubernetes' own controllers and kubelet, though the page does not list them
    "deployment.kubernetes.io/revision", "deployment.kubernetes.io/revision-history", "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas", "control-plane.alpha.kubernetes.io/leader", "kubernetes.io/config.hash",
    "kubernetes.io/config.mirror", "kubernetes.io/config.seen", "kubernetes.io/config.source",
})
# prefixes whose keys are an owner's choice by design (a container's name, a node's role or pool): kept, the name replaced
_RESERVED_PREFIXES = ("container.seccomp.security.alpha.kubernetes.io", "container.apparmor.security.beta.kubernetes.io",
                      "node-restriction.kubernetes.io", "internal.config.kubernetes.io")
KUBERNETES_PREFIXES = frozenset({key.partition("/")[0] for key in WELL_KNOWN_KEYS} | set(_RESERVED_PREFIXES))
WELL_KNOWN_DOMAINS = ("kubernetes.io", "k8s.io")  # with their subdomains: the prefixes Kubernetes reserves

# Go's GOOS and GOARCH values (go/build/syslist.go): the values the kubelet gives kubernetes.io/os and kubernetes.io/arch
OS_VALUES = frozenset({"aix", "android", "darwin", "dragonfly", "freebsd", "hurd", "illumos", "ios", "js", "linux", "nacl",
                       "netbsd", "openbsd", "plan9", "solaris", "wasip1", "windows", "zos"})
ARCH_VALUES = frozenset({"386", "amd64", "amd64p32", "arm", "armbe", "arm64", "arm64be", "loong64", "mips", "mipsle", "mips64",
                         "mips64le", "mips64p32", "mips64p32le", "ppc", "ppc64", "ppc64le", "riscv", "riscv64", "s390", "s390x",
                         "sparc", "sparc64", "wasm"})
# node labels the scheduler reads and simulated nodes carry: their values are kept when they are Go's
NODE_LABEL_VALUES = {"kubernetes.io/os": OS_VALUES, "beta.kubernetes.io/os": OS_VALUES,
                     "kubernetes.io/arch": ARCH_VALUES, "beta.kubernetes.io/arch": ARCH_VALUES}
# kept whatever they are, and reported for review: they say which cloud and region the source cluster runs in
REVIEWED_NODE_LABELS = frozenset({
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region", "node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type",
})
# finalizers Kubernetes' own controllers set: kept (any other finalizer is replaced as a label's key is)
FINALIZERS = ("foregroundDeletion", "orphan", "kubernetes", "kubernetes.io/pv-protection", "kubernetes.io/pvc-protection",
              "batch.kubernetes.io/job-tracking", "service.kubernetes.io/load-balancer-cleanup",
              "resource.kubernetes.io/delete-protection")
