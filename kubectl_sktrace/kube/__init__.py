"""The cluster client wing: access to one cluster's API server, and what a kubeconfig and RBAC say about it.

- ``kubeconfig``: kubectl's loading rules, contexts, in-cluster credentials (§10), without the ``kubernetes`` package;
- ``client``: kubeconfig credentials, the 401 reload and the requests (the only importer of ``kubernetes``);
- ``tls``: the TLS context built in memory, so that no certificate or key of the user's is left in a file;
- ``lazy``: the ``kubernetes`` package loaded without its typed API (its models and API classes);
- ``cluster``: ``ClusterClient``, the surface the recorder is typed against;
- ``stream`` and ``chunked``: reading responses and watch streams, the watchdog that stops a blocked read;
- ``errors``: what an HTTP status or a network failure means, as one-line errors with the fix;
- ``discovery``: which kinds the server serves and where their URLs are;
- ``serviceaccount``: a pod's token, re-read when rotated;
- ``rbac`` and ``permissions``: the RBAC a config needs, and the one wording of its fix.

This wing imports only the shared root modules (``model``, ``errors``, ``tracerconfig``). Importing it loads
nothing: ``kubernetes`` is loaded only by ``client``, so the offline commands never pay for it.
"""
