"""External tools perfpages runs from venvs of their own, so that their dependencies never meet
perfpages' (apache-otava pins a numpy that pandas' does not accept). A tool is installed once
into the cache from its pinned requirement and called over JSON on stdin and stdout."""
