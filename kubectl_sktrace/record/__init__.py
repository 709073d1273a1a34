"""Recording: ``kubectl sktrace start``, from the cluster's list and watch streams into the store.

- ``session``: plans the kinds, runs one step per tick, finishes a run; ``signals``: SIGINT and SIGTERM as a clean stop;
- ``watching``: the list-then-watch loop of one kind (resourceVersions, 410, back-off, outages, quiet streams);
  ``listing``: one complete list; ``availability``: kinds refused or not served, asked again at a slow cadence;
- ``coverage``: a run's open gaps per kind, and the news of kinds that come and go;
- ``writer``: the one lock, the one open transaction, the commit cadence;
- ``ingest``: the rules' caller (SimKube's handler): messages -> rules -> store;
- ``changes``, ``owners``, ``initialsync``: the recording's own rules, pure;
- ``progress``, ``notices``, ``summary``, ``failures``: what a person sees while recording, and at its end;
- ``health``: ``--health-port``'s /healthz and /readyz from what the loop posts;
- ``status``: ``kubectl sktrace status``: what the cache holds and how its recorder is doing.

Imports the shared root modules and the wings below it: ``trace``, ``kube`` and ``store``; never ``export``
or ``cli``.
"""
