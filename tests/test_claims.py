"""The claims of the site PERFPAGES_MKDOCS_YML names, as items of this file; nothing without it.

This repository's own claims and snapshots are collected by the pytest plugin
(perfpages.site.pytest_plugin; its tests are in tests/test_pytest_plugin.py). This file stays
only while tests/test_page.py runs it against a temporary site; delete both together.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perfpages.errors import PerfpagesError
from perfpages.site.claims import Claim
from perfpages.site.page import check_docs, site_paths

if os.environ.get("PERFPAGES_MKDOCS_YML"):
    MKDOCS_YML = Path(os.environ["PERFPAGES_MKDOCS_YML"])
    DOCS, RESULTS = site_paths(MKDOCS_YML)
    ITEMS = list(check_docs(DOCS, RESULTS, MKDOCS_YML.resolve().parent))

    @pytest.mark.parametrize("item", [item for _, item in ITEMS], ids=[key for key, _ in ITEMS])
    def test_claim(item: Claim | PerfpagesError) -> None:
        if isinstance(item, PerfpagesError):
            pytest.fail(str(item), pytrace=False)
        if not item.holds:
            pytest.fail(item.message, pytrace=False)
