"""Reports on a trace file, for people and programs: its findings (``validate``), its summary (``inspect``), its
pods over time (``inspect --timeline``).
"""
