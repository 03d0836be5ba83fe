"""`perfpages guide [PAGE]`: the guide as installed with the package (docs/guide/ of this
repository, shipped as package data), so that every message's "see …" opens wherever perfpages
is installed — an adopter's repository has no docs/guide/ of its own."""

from __future__ import annotations

from importlib import resources

from perfpages.errors import PerfpagesError


def pages() -> dict[str, str]:
    """Page name -> its first heading, for every page shipped."""
    root = resources.files("perfpages") / "guide"
    found = {}
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".md"):
            first = next((line for line in entry.read_text(encoding="utf-8").splitlines()
                          if line.startswith("# ")), "# ")
            found[entry.name.removesuffix(".md")] = first[2:].strip()
    return found


def text(page: str) -> str:
    """The page's Markdown; an unknown page names the ones there are."""
    name = page.split("#")[0].removesuffix(".md")  # `pages.md#versions` names pages
    shipped = pages()
    if name not in shipped:  # looked up among the pages, never as a path (too long, a link)
        shown = page if len(page) <= 60 else page[:57] + "…"
        raise PerfpagesError(f"no guide page {shown!r}", key="guide",
                             fix=f"choose among: {', '.join(shipped)}")
    return (resources.files("perfpages") / "guide" / f"{name}.md").read_text(encoding="utf-8")


def listing() -> str:
    shown = pages()
    width = max(map(len, shown), default=0)
    return "".join(f"{name:<{width}}  {title}\n" for name, title in shown.items()) + (
        "read one: perfpages guide PAGE\n")
