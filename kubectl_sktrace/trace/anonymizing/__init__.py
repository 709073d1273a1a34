"""Keyed anonymization: the walk that keeps Kubernetes' vocabulary by allow-list (the built-in types' fields,
``apifields.json``) and replaces every other string with a pseudonym.
"""
