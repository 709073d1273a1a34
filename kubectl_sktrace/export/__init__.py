"""Export: a time window of the cache as a SimKube trace (§7), without the cluster.

- ``window``: the export itself: the state at the window's start, its events, the index and the lifecycles;
- ``events``: rows grouped and written as events, SimKube's reference rules checked on them;
- ``options``: the window and the filters from the command line, as rules (``trace/selection/rules``);
- ``plan``: which objects a window exports, and what each rule decided;
- ``advice``: the notes and the coverage block an export says about itself;
- ``transforms``: ``--transform`` and ``--anonymize``, as SimKube's export applies a program.

Imports the shared root modules, ``trace`` and ``store``; never ``record``, ``kube`` or ``cli``.
"""
