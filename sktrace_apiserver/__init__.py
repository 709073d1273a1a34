"""What every Kubernetes API server of this distribution says the same way, written once: the error ``Status``
(``status``), label and field selectors as the server parses them (``selectors``), the discovery documents
(``discovery``), the Table form ``kubectl get`` asks for (``tables``), the framing of a watch stream (``watch``), and
TLS made in memory (``tls``: a self-signed certificate whose key never touches a file, loaded through memory files).

Two servers speak through it: the emulator (``sktrace_emulator``, the local API server of the tests, the benchmarks
and the demo) and ``kubectl sktrace serve --at`` (``kubectl_sktrace/apiserver``, the read-only server over the cache's
history). It is the lowest package of the distribution: it imports neither of them, nor anything of the product, so
that both may import it without an arrow pointing up (``tests/test_layers.py``). Standard library only.
"""
