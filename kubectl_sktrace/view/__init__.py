"""The history as a local web page (``kubectl sktrace view``): a server on this machine, its JSON answers, the page.

It reads the cache only through ``store`` (read-only, a snapshot per request) and writes windows only through
``export``'s own code; the page (``static/``: HTML, CSS and plain JavaScript drawing SVG, no library, nothing fetched
from the internet) is package data. May import ``store``, ``export`` and ``trace``.
"""
