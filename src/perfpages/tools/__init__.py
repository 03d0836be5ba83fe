"""External tools perfpages runs from venvs of their own, so that they never share a process or
its dependencies with perfpages (Locust's gevent monkeypatches the standard library of whatever
imports it). A tool is installed once into the cache from its pinned requirement."""
