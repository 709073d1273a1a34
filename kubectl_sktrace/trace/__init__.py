"""SimKube trace files: the format, its rules, reading, writing and transforming them.

- ``format``: SimKube v2 decode, encode and stream (the only importer of ``msgpack``);
- ``shape``: the shape SimKube's deserializer requires of a decoded trace, and the messages saying what is wrong;
- ``hashing``: the spec hash and the stable pod spec, bit for bit SimKube's (§8.3, §8.4);
- ``sanitize``: what SimKube's tracer keeps of an object, and the metadata reads every wing shares (§4);
- ``lifecycle``: pods' lifecycles and their partial order (§4);
- ``references``: what a pod template refers to (SimKube's E0001-E0005);
- ``rules``, ``selectors``: ordered allow/deny rules and kubectl label selectors (export's and transform's filters);
  ``filtering``: the rules over a trace's events;
- ``skel``: SKEL, SimKube's transformation language; ``anonymize`` and ``pseudonyms``: keyed anonymization, keeping
  by allow-list (``allowlist``) Kubernetes' vocabulary (``apischema``: the built-in types' fields, ``apifields.json``);
- ``transform``: both applied to a trace read event by event (``transform``, and ``export``'s flags);
- ``inspection``, ``validation``, ``timeline``: reports on a trace file, for people and programs (§9);
- ``textformat``: a trace as JSON or YAML, for people;
- ``output`` and ``objectstore``: where ``-O`` writes, and traces as s3://, gs:// or az:// URLs.

The lowest wing but the shared root modules (``model``, ``errors``, ``timeparse``, ``plural``, ``tracerconfig``,
``render``): the recording, the store and export build on it, and it imports none of them.
"""
