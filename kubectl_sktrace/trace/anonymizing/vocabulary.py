"""Kubernetes' vocabulary by field, for ``--anonymize``'s allow-list (``allowlist``). Pure data, no I/O.

``ENUMS``: the values Kubernetes defines for a field, by the field's name (the models do not say which strings are
enums); any other value of the field is replaced. ``TYPED``: the string fields whose type says they hold a number (a
quantity, an int-or-string), by model without its version; a number there is kept, anything else replaced.
"""

from __future__ import annotations

from kubectl_sktrace.trace.anonymizing.wellknown import FINALIZERS

_CAPABILITIES = ("ALL", "AUDIT_CONTROL", "AUDIT_READ", "AUDIT_WRITE", "BLOCK_SUSPEND", "BPF", "CHECKPOINT_RESTORE", "CHOWN",
                 "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "IPC_LOCK", "IPC_OWNER", "KILL", "LEASE", "LINUX_IMMUTABLE",
                 "MAC_ADMIN", "MAC_OVERRIDE", "MKNOD", "NET_ADMIN", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_RAW", "PERFMON",
                 "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYSLOG", "SYS_ADMIN", "SYS_BOOT", "SYS_CHROOT", "SYS_MODULE", "SYS_NICE",
                 "SYS_PACCT", "SYS_PTRACE", "SYS_RAWIO", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "WAKE_ALARM")
# the values Kubernetes defines, by field name
ENUMS: dict[str, frozenset[str]] = {field: frozenset(values) for field, values in {
    "restartPolicy": ("Always", "OnFailure", "Never", "NotRequired", "RestartContainer"),
    "imagePullPolicy": ("Always", "Never", "IfNotPresent"),
    "protocol": ("TCP", "UDP", "SCTP"),
    "operator": ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Equal"),
    "effect": ("NoSchedule", "PreferNoSchedule", "NoExecute"),
    "dnsPolicy": ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"),
    "concurrencyPolicy": ("Allow", "Forbid", "Replace"),
    "type": ("RollingUpdate", "Recreate", "OnDelete", "ClusterIP", "NodePort", "LoadBalancer", "ExternalName", "Opaque",
             "kubernetes.io/service-account-token", "kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson",
             "kubernetes.io/basic-auth", "kubernetes.io/ssh-auth", "kubernetes.io/tls", "bootstrap.kubernetes.io/token",
             "RuntimeDefault", "Localhost", "Unconfined", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket",
             "CharDevice", "BlockDevice", "Resource", "Pods", "Object", "External", "ContainerResource", "Utilization", "Value",
             "AverageValue", "Percent"),
    "scheme": ("HTTP", "HTTPS"),
    "terminationMessagePolicy": ("File", "FallbackToLogsOnError"),
    "preemptionPolicy": ("PreemptLowerPriority", "Never"),
    "podManagementPolicy": ("OrderedReady", "Parallel"),
    "whenUnsatisfiable": ("DoNotSchedule", "ScheduleAnyway"),
    "nodeAffinityPolicy": ("Honor", "Ignore"), "nodeTaintsPolicy": ("Honor", "Ignore"),
    "externalTrafficPolicy": ("Cluster", "Local"), "internalTrafficPolicy": ("Cluster", "Local"),
    "sessionAffinity": ("ClientIP", "None"),
    "ipFamilyPolicy": ("SingleStack", "PreferDualStack", "RequireDualStack"), "ipFamilies": ("IPv4", "IPv6"),
    "completionMode": ("NonIndexed", "Indexed"), "podReplacementPolicy": ("TerminatingOrFailed", "Failed"),
    "fsGroupChangePolicy": ("OnRootMismatch", "Always"), "mountPropagation": ("None", "HostToContainer", "Bidirectional"),
    "recursiveReadOnly": ("Disabled", "IfPossible", "Enabled"), "pathType": ("Exact", "Prefix", "ImplementationSpecific"),
    "policyTypes": ("Ingress", "Egress"), "accessModes": ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"),
    "volumeMode": ("Filesystem", "Block"), "persistentVolumeReclaimPolicy": ("Retain", "Delete", "Recycle"),
    "whenDeleted": ("Retain", "Delete"), "whenScaled": ("Retain", "Delete"), "selectPolicy": ("Max", "Min", "Disabled"),
    "unhealthyPodEvictionPolicy": ("IfHealthyBudget", "AlwaysAllow"), "action": ("FailJob", "Ignore", "Count", "FailIndex"),
    "medium": ("", "Memory", "HugePages"), "procMount": ("Default", "Unmasked"), "resourceName": ("cpu", "memory"),
    "schedulerName": ("default-scheduler",), "priorityClassName": ("system-cluster-critical", "system-node-critical"),
    "finalizers": FINALIZERS, "add": _CAPABILITIES, "drop": _CAPABILITIES,
    "appProtocol": ("http", "https", "h2c", "grpc", "tcp", "udp", "ws", "wss", "kubernetes.io/h2c", "kubernetes.io/ws",
                    "kubernetes.io/wss"),
    "supplementalGroupsPolicy": ("Merge", "Strict"), "signal": ("SIGTERM", "SIGKILL", "SIGINT", "SIGQUIT", "SIGHUP"),
}.items()}
# the string fields whose type says they hold a number (a quantity, an int-or-string), by model without its version
# (``V2MetricTarget`` as ``MetricTarget``): kept when they hold one. Every other string field is replaced whatever it holds.
TYPED = {
    **dict.fromkeys((("EmptyDirVolumeSource", "sizeLimit"), ("ResourceFieldSelector", "divisor"), ("MetricTarget", "value"),
                     ("MetricTarget", "averageValue"), ("MetricValueStatus", "value"), ("MetricValueStatus", "averageValue"),
                     ("CSIStorageCapacity", "capacity"), ("CSIStorageCapacity", "maximumVolumeSize"),
                     ("CapacityRequestPolicy", "default"), ("CapacityRequestPolicy", "validValues"),
                     ("CapacityRequestPolicyRange", "min"), ("CapacityRequestPolicyRange", "max"),
                     ("CapacityRequestPolicyRange", "step"), ("Counter", "value"), ("DeviceCapacity", "value"),
                     ("RollingUpdateDeployment", "maxSurge"), ("RollingUpdateDeployment", "maxUnavailable"),
                     ("RollingUpdateDaemonSet", "maxSurge"), ("RollingUpdateDaemonSet", "maxUnavailable"),
                     ("RollingUpdateStatefulSetStrategy", "maxUnavailable"), ("PodDisruptionBudgetSpec", "minAvailable"),
                     ("PodDisruptionBudgetSpec", "maxUnavailable")), "quantity"),
    **dict.fromkeys((("HTTPGetAction", "port"), ("TCPSocketAction", "port"), ("NetworkPolicyPort", "port"),
                     ("ServicePort", "targetPort")), "port"),
    ("SuccessPolicyRule", "succeededIndexes"): "indexes",
}
