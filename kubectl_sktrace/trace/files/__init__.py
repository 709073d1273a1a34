"""Trace files: SimKube's v2 format and the shape its deserializer requires, the same as JSON or YAML for people,
and where ``-O`` writes (a local file replaced whole, or an object storage URL).
"""
