"""SimKube trace files: the format, its rules, reading, writing and transforming them, grouped by concern.

- ``hashing``: the spec hash and the stable pod spec, bit for bit SimKube's (§8.3, §8.4);
- ``sanitize``: what SimKube's tracer keeps of an object, and the metadata reads every wing shares (§4);
- ``lifecycle``: pods' lifecycles and their partial order (§4);
- ``references``: what a pod template refers to (SimKube's E0001-E0005);
- ``revisions``: what a change is besides the spec (labels, annotations, owners, data; the churned annotations left out);
- ``transform``: a SKEL program, rules and anonymization applied to a trace read event by event;
- ``files/``: ``format`` (SimKube v2 decode, encode and stream; the only importer of ``msgpack``), ``shape`` (what
  SimKube's deserializer requires of a decoded trace), ``textformat`` (a trace as JSON or YAML, for people),
  ``output`` and ``objectstore`` (where ``-O`` writes, and traces as s3://, gs:// or az:// URLs);
- ``selection/``: ``rules`` and ``selectors`` (ordered allow/deny rules, kubectl label selectors: export's and
  transform's filters), ``filtering`` (the rules over a trace's events);
- ``reports/``: ``validation``, ``inspection``, ``timeline``: reports on a trace file, for people and programs (§9);
- ``anonymizing/``: ``anonymize`` and ``pseudonyms`` (keyed anonymization), keeping by allow-list (``allowlist``)
  Kubernetes' vocabulary (``apischema``: the built-in types' fields, ``apifields.json``);
- ``skel/``: SKEL, SimKube's transformation language, and the mistakes it accepts silently, warned of (``checks``).

The lowest wing but the shared root modules (``model``, ``errors``, ``timeparse``, ``plural``, ``tracerconfig``,
``render``): the recording, the store and export build on it, and it imports none of them.
"""
