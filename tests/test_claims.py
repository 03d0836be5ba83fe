"""Every claim on every page under docs/ is its own test item, with the build's message.

The site is the one mkdocs.yml describes (PERFPAGES_MKDOCS_YML overrides it, for the test of
this collector itself).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perfpages.errors import PerfpagesError
from perfpages.site.claims import Claim
from perfpages.site.page import check_docs, site_paths

MKDOCS_YML = Path(os.environ.get("PERFPAGES_MKDOCS_YML",
                                 Path(__file__).resolve().parent.parent / "mkdocs.yml"))
DOCS, RESULTS = site_paths(MKDOCS_YML)
ITEMS = list(check_docs(DOCS, RESULTS, MKDOCS_YML.resolve().parent))


@pytest.mark.parametrize("item", [item for _, item in ITEMS], ids=[key for key, _ in ITEMS])
def test_claim(item: Claim | PerfpagesError) -> None:
    if isinstance(item, PerfpagesError):
        pytest.fail(str(item), pytrace=False)
    if not item.holds:
        pytest.fail(item.message, pytrace=False)
