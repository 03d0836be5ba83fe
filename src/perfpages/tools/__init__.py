"""External tools perfpages runs from venvs of their own, so that their dependencies never meet
perfpages' (Locust's pins would otherwise decide perfpages' own). A tool is installed once
into the cache from its pinned requirement and called over JSON on stdin and stdout."""
