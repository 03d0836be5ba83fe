"""Performance pages: front matter pins, macros, claims, the lint, charts, versions and run pages
(a pure core), and the MkDocs plugin, a thin adapter over it.
"""
