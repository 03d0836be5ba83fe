"""A claim's condition is reachable without a mouse (site/sentences.py): each sentence is numbered
and links to its condition, listed at the end of its section, which links back."""

from __future__ import annotations

import re

from perfpages.site.condition import Claim, Condition
from perfpages.site.page import CLAIM_MARK
from perfpages.site.sentences import annotate


def _claim(sentence: str, holds: bool = True) -> Claim:
    return Claim("docs/x.md", 1, sentence, Condition(holds, f"{sentence} checked", "data"))


def test_each_section_lists_what_its_claims_check() -> None:
    claims = [_claim("a"), _claim("b", holds=False), _claim("c")]
    text = ("# Page\n\nFirst \x010\x01 and \x011\x01.\n\n```\n# not a heading\n```\n\n"
            "## Next\n\n- \x012\x01\n")
    out = annotate(text, claims, CLAIM_MARK)
    assert "\x01" not in out
    numbers = re.findall(r'id="claim-(\d+)" title="checked: (\w) checked"', out)
    assert numbers == [("1", "a"), ("2", "b"), ("3", "c")]
    lists = re.findall(r'<details class="perfpages-conditions">.*?</details>', out)
    assert len(lists) == 2  # one per section with claims; a heading in code is none
    assert out.index(lists[0]) < out.index("## Next") < out.index(lists[1])
    assert "(2)</summary>" in lists[0] and "(1)</summary>" in lists[1]
    for n in ("1", "2", "3"):  # the sentence links to its condition, which links back
        assert f'href="#claim-{n}-checked"' in out and f'id="claim-{n}-checked"' in out
        assert f'href="#claim-{n}"' in out
    assert "b checked (does not hold)" in lists[0] and "does not hold" not in lists[1]
    assert out.count('!!! failure "This claim does not hold"') == 1
    # Each list is its own HTML block: blank lines around it, none inside.
    for block in lists:
        assert f"\n\n{block}\n\n" in out or out.endswith(f"\n\n{block}\n")


def test_a_page_without_claims_is_unchanged() -> None:
    text = "# Page\n\nNo claims.\n"
    assert annotate(text, [], CLAIM_MARK) == text
