"""``serve --at T``: a read-only Kubernetes API server over the cache as it was at T (``server``), answering from the
state the history layer reads (``past``) held in memory (``state``), with the protocol every server of the distribution
shares (``sktrace_apiserver``): the handler (``handler``) and discovery of the recorded kinds (``catalog``)."""
