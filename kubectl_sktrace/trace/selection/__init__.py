"""Choosing objects: ordered allow/deny rules, kubectl label selectors, and the rules applied over a trace's events.
"""
