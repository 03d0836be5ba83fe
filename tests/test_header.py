"""What a reader sees first: a run's warnings (decided once), the box and the machine under a
page's title, the note above a superseded version, and the runs index's columns."""

from __future__ import annotations

from math import nan
from pathlib import Path

import pytest

from perfpages.analysis import warnings
from perfpages.analysis.certification import Certificate
from perfpages.analysis.decision import V21
from perfpages.analysis.warnings import Item
from perfpages.site import cards, header
from perfpages.site import store as store_module
from perfpages.site import versions as version
from perfpages.site.page import render
from perfpages.site.store import RunStore
from sites import DEMO, Failed, build_site, make_results
from v2runs import write_v2

NOISY = "2026-12-01-synthetic-noisy"  # busy windows, a drifted floor, a noisy A/A pair
CALM = "2026-12-01-synthetic-calm"  # quiet, steady floors, a quiet A/A pair
ALONE = "2026-12-01-synthetic-alone"  # no A/A pair
XEON = {"cpu": "Intel Xeon (synthetic)", "cores": 4, "memory_gib": 16.0, "kernel": "synthetic",
        "python": "3.11.7", "postgresql": "18.6", "pg_settings": {}}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_results(tmp_path_factory.mktemp("results"))  # v1 runs: the demo and others
    write_v2(root, NOISY, aa_shift=0.08, floors=(1000.0, 400.0), again=3,
             blocks=("callers", "pages"))
    write_v2(root, CALM, floors=(1000.0, 1010.0))
    write_v2(root, ALONE, aa=False, machine=XEON)
    return root


def test_the_words_of_each_warning() -> None:
    """Each fact worded once, whatever renders it; ranked by kind, most fundamental first."""
    load = [{"block": "a", "label": "base", "windows": 480, "busy": 7, "again": 7,
             "busy_again": 1, "others_max": 60.0, "steal_max": 0.0}]  # machine_load.windows
    items = warnings.ranked(
        warnings.uncertified(True, True, [Certificate("b", 6, 2, nan, ""),
                                          Certificate("c", 0, 0, nan, "")])
        + warnings.busy([{"block": "b", "busy": True, "reasons": ["load 3.0"], "load1": 3.0,
                          "busy_pct": 90, "others_pct": 60, "steal_pct": 0}], load)
        + warnings.drift([{"block": "a", "floor": "pgbench", "metric": "tps", "before": 14723,
                           "after": 5150, "drift_percent": -65.0, "flagged": True}], 0.10,
                         exact=False)
        + warnings.scope("quick", None))
    assert [(i.kind, i.block) for i in items] == [
        ("scope", None), ("drift", "a"), ("busy", "b"), ("windows", "a"), ("uncertified", "b"),
        ("uncertified", "c")]
    assert [i.severity for i in items][:3] == ["caution", "caution", "warning"]
    assert items[0].text == "quick run: the suite's reduced sizes, not its full measurement"
    assert items[1].text == ("a: the tps floor drifted −65 % (14,723/s before the block, "
                             "5,150/s after), beyond the ±10 % threshold")
    assert items[2].text == "preflight b: the machine was busy (load 3.0)"
    assert items[3].text == ("a: the machine was busy in 7 of 480 windows (base 7; other "
                             "processes up to 60 % of a core, steal up to 0.0 %; busy: above "
                             "10 % or 2 %); 7 measured again, 1 of them busy again")
    assert items[4].text == "b: not certified: 2 of 6 A/A cells clear"
    assert items[5].text == "c: not certified: no A/A pair"
    assert warnings.summary(items) == "drift −65 %; 2 busy blocks; 2 not certified"
    assert warnings.summary([]) == "—"
    assert warnings.drift([{"flagged": True}], 0.10, exact=True) == []  # a fact, not a gate
    v1 = warnings.uncertified(False, True, [])
    assert [i.text for i in v1] == ["decided by the v1 ranges rule: no block is certified"]
    assert warnings.summary(v1) == "v1 rule"
    assert Item.from_json(items[1].to_json()) == items[1]


def test_the_warnings_of_archived_runs(results: Path, tmp_path: Path) -> None:
    store = RunStore(results, tmp_path / "cache")
    noisy = header.items(store.get(NOISY))
    kinds = [(i.kind, i.block) for i in noisy]
    assert kinds.count(("windows", "callers")) == 1 and kinds.count(("windows", "pages")) == 1
    assert not any(k == "drift" for k, _ in kinds)  # method v2: drift is a fact, not a gate
    assert not any(k == "noisy" for k, _ in kinds)  # v2: the certification says it, once
    assert ("uncertified", "callers") in kinds and ("uncertified", "pages") in kinds
    assert next(i.text for i in noisy if i.block == "callers") == (
        "callers: the machine was busy in 3 of 120 windows (base 2, base-again 1; other processes "
        "up to 35 % of a core, steal up to 0.2 %; busy: above 10 % or 2 %); 3 measured again")
    floors = store_module.reading(store.get(NOISY)).drift  # the drift itself stays a fact
    assert floors[0]["flagged"] and floors[0]["drift_percent"] == pytest.approx(-59.9, abs=0.2)
    assert header.items(store.get(CALM)) == []  # quiet, steady, certified
    assert [i.text for i in header.items(store.get(ALONE))] == [
        "no A/A pair: no block is certified"]
    demo = header.items(store.get(DEMO))
    assert demo[-1].text == "decided by the v1 ranges rule: no block is certified"
    cached = list((tmp_path / "cache" / "reading").glob(f"{NOISY}.*.json"))
    assert len(cached) == 1
    again = RunStore(results, tmp_path / "cache")  # a new build reads them from the cache
    assert header.items(again.get(NOISY)) == noisy


def test_the_page_text_keeps_no_header(results: Path) -> None:
    page = ("# Perf\n\n{{ figure('throughput', label='base', block='callers', "
            "where={'call': 'page'}) }}\n")
    done = render(page, {"runs": {"new": NOISY}}, path="p.md", offset=0,
                  store=RunStore(results))
    assert "Before the figures" not in done.markdown and "Measured on" not in done.markdown
    shown = header.under_title(done.markdown, header.markdown(done.runs, "perf/p.md", "runs"))
    assert shown.startswith('# Perf\n\n!!! warning "Before the figures"\n')
    assert f"(../runs/{NOISY}.md): callers: the machine was busy in 3 of 120 windows" in shown


PAGE = ("---\nruns:\n{runs}---\n\n# Perf {n}\n\n"
        "{{{{ figure('throughput', label='base', run='new', block='callers', "
        "where={{'call': 'page'}}) }}}}\n")


def _runs(**aliases: str) -> str:
    return "".join(f"  {a}: {r}\n" for a, r in aliases.items())


def test_the_header_through_a_build(results: Path, tmp_path: Path) -> None:
    pages = {"index.md": "# Home\n",
             "perf/noisy.md": PAGE.format(runs=_runs(new=NOISY), n=1),
             "perf/calm.md": PAGE.format(runs=_runs(new=CALM), n=2),
             "perf/both.md": PAGE.format(runs=_runs(new=CALM, old=ALONE), n=3)}
    site, logged = build_site(tmp_path, pages, results)
    assert logged == []
    noisy = (site / "perf/noisy/index.html").read_text(encoding="utf-8")
    box = noisy.split('<p class="admonition-title">Before the figures</p>')[1].split(
        "</div>")[0]
    # First what changes a conclusion (nothing here) and which blocks are certified; the rest
    # (per block: busy windows and measured again, not certified) folded with its count.
    shown, folded = box.split("<details", 1)
    assert shown.count("<li>") == 1 and "Certified by their A/A pair:</strong> none" in shown
    assert "4 more about these runs; where they ran" in folded and folded.count("<li>") == 4
    # the four items link the run's page, and so does the line saying which run each section
    # reads: it and the machine are in the fold, so the short answer comes sooner
    assert box.count(f'href="../../runs/{NOISY}/"') == 5
    assert folded.index("Measured on") < folded.index("Every section reads") < len(folded)
    assert "busy in 3 of 120 windows" in box and "; 3 measured again" in box
    assert "not certified: " in box and "A/A cells clear" in box
    assert noisy.index("Perf 1") < noisy.index("Before the figures") < noisy.index("Measured on")
    # the machine named with its kernel release (`comparable.machine_name`): VM builds told apart
    assert "Measured on Synthetic CPU (generated values), 2 cores, 24 GiB, kernel synthetic (run" \
        in noisy
    calm = (site / "perf/calm/index.html").read_text(encoding="utf-8")
    assert "Before the figures" not in calm and "Measured on Synthetic CPU" in calm
    assert "Different machines" not in calm
    both = (site / "perf/both/index.html").read_text(encoding="utf-8")
    assert "Different machines" in both
    assert "on Intel Xeon (synthetic), 4 cores, 16 GiB" in both
    assert "Figures from different runs are not comparable as numbers." in both
    assert "no A/A pair: no block is certified" in both
    # mixed machines is a conclusive line of the box's open part, not a box of its own
    opened = both.split("Before the figures")[1].split("<details")[0]
    assert "<strong>Different machines:</strong>" in opened and "Measured on" not in both


def test_the_box_ranks_claims_on_uncertified_blocks_first(results: Path) -> None:
    """A claim resting on a block its A/A pair does not certify comes first, with its line;
    the certified blocks are one line; the rest is folded with its count. A run with nothing
    to say (every block certified, a quiet machine) has no box."""
    body = ("# Perf\n\n{{ claim('Changed is faster.', faster('base', 'changed', "
            "block='callers')) }}\n")
    store = RunStore(results)
    done = render(body, {"runs": {"new": NOISY}}, path="p.md", offset=4, store=store)
    box = header.box(done.runs, "perf/p.md", "runs", done.claims)
    first, folded = box.split("??? note")
    assert first.count("    - ") == 2
    assert f"[<code>new</code>](../runs/{NOISY}.md): 1 claim (line 7) rests on block callers, " \
        "which no A/A pair certifies: read it as unconfirmed" in first
    assert "Certified by their A/A pair:** none." in first
    assert '"4 more about these runs"' in folded and folded.count("        - ") == 4
    done = render(body, {"runs": {"new": CALM}}, path="p.md", offset=4, store=store)
    assert header.box(done.runs, "perf/p.md", "runs", done.claims) == ""


def test_runs_index_has_machine_and_warnings(results: Path, tmp_path: Path) -> None:
    site, _ = build_site(tmp_path, {"index.md": "# Home\n"}, results)
    index = (site / "runs/index.html").read_text(encoding="utf-8")
    assert "<th>machine</th>" in index and "<th>warnings</th>" in index
    rows = {r.split("</td>")[0]: r for r in index.split("<tr>")[2:]}

    def row(run: str) -> str:
        return next(r for k, r in rows.items() if f">{run}<" in k)

    machine = "Intel Xeon (synthetic), 4 cores, 16 GiB, kernel synthetic"
    assert f'<td data-label="machine">{machine}</td>' in row(ALONE)
    assert '<td data-label="warnings">none certified</td>' in row(ALONE)
    # v2: no drift
    assert '<td data-label="warnings">2 busy blocks; 2 not certified</td>' in row(NOISY)
    assert '<td data-label="warnings">—</td>' in row(CALM)
    assert "v1 rule" in row(DEMO)


def test_a_superseded_version_says_what_it_got_wrong(results: Path, tmp_path: Path) -> None:
    old = PAGE.format(runs=_runs(new=CALM), n=1).replace(
        "---\n\n", 'superseded: "v1 pooled the **floors** of two kinds."\n---\n\n', 1)
    pages = {"perf/v1.md": old, "perf/v2.md": PAGE.format(runs=_runs(new=CALM), n=2)}
    site, logged = build_site(tmp_path, pages, results)
    assert logged == []
    v1 = (site / "perf/v1/index.html").read_text(encoding="utf-8")
    assert '<p class="admonition-title">Superseded by v2</p>' in v1
    assert "v1 pooled the <strong>floors</strong> of two kinds." in v1
    assert 'href="../v2/"' in v1 and "kept as published" not in v1
    assert "Superseded" not in (site / "perf/v2/index.html").read_text(encoding="utf-8")
    pages["perf/v1.md"] = old.replace('"v1 pooled the **floors** of two kinds."', "[1, 2]")
    with pytest.raises(Failed) as failed:
        build_site(tmp_path, pages, results)
    message = "\n".join(failed.value.messages)
    assert "docs/perf/v1.md" in message and "superseded" in message
    assert "Traceback" not in message


def test_a_block_resolves_one_figure_on_the_page_and_its_run_page(results: Path) -> None:
    """The resolution a page's certification table states for a block is its run page's (every
    comparison of the block), whatever the page's claims or tables happen to show."""
    body = ("# Perf\n\n{{ claim('Changed is faster.', faster('base', 'changed', "
            "block='callers', where={'call': 'page'})) }}\n\n{{ certification() }}\n")
    done = render(body, {"runs": {"new": CALM}}, path="p.md", offset=0,
                  store=RunStore(results))
    loaded = done.runs["new"]
    lines = {c["block"]: str(c["line"]) for c in store_module.reading(loaded).certification or []}
    rows = [r for r in done.markdown.splitlines() if r.startswith("| callers")]
    assert lines and len(rows) == 1
    stated = lines["callers"].split("resolves ")[1]
    assert f"| {stated} |" in rows[0].replace("&#95;", "_")


SECTIONS = ("# Perf\n\nIntro without a figure.\n\n## The short answer {#short}\n\n"
            "{{ figure('throughput', label='base', run='new', block='callers', "
            "where={'call': 'page'}) }}\n\n```\n## not a section\n```\n\n"
            "{{ figure('throughput', label='base', run='new', block='callers', "
            "where={'call': 'page'}) }}\n\n## Calls\n\n### A subsection\n\n"
            "{{ figure('throughput', label='base', run='new', block='callers', "
            "where={'call': 'page'}) }}\n\n## Network\n\n"
            "{{ figure('throughput', label='base', run='old', block='callers', "
            "where={'call': 'page'}) }}\n\n## Limits\n\nNo figure.\n")


def test_the_header_names_the_run_each_section_reads(results: Path) -> None:
    """Generated from the macros each `## ` section calls (never typed): sections grouped by
    the runs they read, one line when they all read one, pinned runs no section reads named."""
    done = render(SECTIONS, {"runs": {"new": CALM, "old": NOISY, "spare": ALONE}}, path="p.md",
                  offset=0, store=RunStore(results))
    by = header.sections(SECTIONS, done.read)
    assert by == {"The short answer": ["new"], "Calls": ["new"], "Network": ["old"]}
    line = header.reads(done.runs, by)
    assert line == (f"Runs by section: The short answer, Calls: <code>{CALM}</code> · Network: "
                    f"<code>{NOISY}</code>. Pinned, read by no section: <code>{ALONE}</code>."
                    "\n\n")
    one = SECTIONS.replace("run='old'", "run='new'")
    done = render(one, {"runs": {"new": CALM}}, path="p.md", offset=0, store=RunStore(results))
    assert header.reads(done.runs, header.sections(one, done.read), "perf/p.md", "runs") == (
        f"Every section reads [<code>{CALM}</code>](../runs/{CALM}.md).\n\n")
    shown = header.markdown(done.runs, by_section=header.sections(one, done.read))
    assert shown.index("Measured on") < shown.index("Every section reads")


def test_claims_that_failed_on_the_replay_come_first(tmp_path: Path) -> None:
    """The page's reproduction already judged its claims on the replay: those that did not
    hold are the box's first line, ranked above everything a run's reading says."""
    from perfpages.site.reproduction import Docs
    from test_bad_input import edit_manifest, reseal
    results = tmp_path / "results"
    results.mkdir()
    write_v2(results, NOISY, aa_shift=0.08, floors=(1000.0, 400.0), again=3,
             blocks=("callers", "pages"))
    again = write_v2(results, "2026-12-02-synthetic-replay", shift=-0.10, seed=5,
                     blocks=("callers", "pages"))
    edit_manifest(results / again, lambda d: d.__setitem__("replay_of", NOISY))
    reseal(results / again)
    body = ("# Perf\n\n{{ claim('Changed is faster.', faster('base', 'changed', "
            "block='callers'), uncertified_ok='a test') }}\n\n## Reproduced\n\n"
            "{{ reproduction('new', 'again') }}\n")
    source = f"---\nruns:\n  new: {NOISY}\n  again: {again}\n---\n\n{body}"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "p.md").write_text(source, encoding="utf-8")
    docs = Docs(tmp_path, tmp_path / "docs")
    done = render(body, {"runs": {"new": NOISY, "again": again}}, path="docs/p.md", offset=6,
                  store=RunStore(results), source=source, docs=docs)
    assert done.replays == [("new", again, [9])]
    box = header.box(done.runs, "perf/p.md", "runs", done.claims, done.replays)
    lines = box.split("??? note")[0].split("\n    - ")[1:]
    assert lines[0] == (f"[<code>new</code>](../runs/{NOISY}.md): 1 claim (line 9) did not "
                        f"hold on its replay {again}: read it as unconfirmed")
    assert len(lines) <= header.FIRST


def test_a_run_that_predates_a_build_key_is_not_told_apart_by_it() -> None:
    """One decision (`comparable.same_machine`) for comparability and the header's machine:
    2026-12-05-queryapigate recorded no CPU flags, its instructions run did; they are not
    called different machines, and the name says whose record is the fuller one."""
    from perfpages.analysis.comparable import same_machine
    from perfpages.site.store import RunStore

    store = RunStore(Path(__file__).resolve().parent.parent / "results")
    runs = {"qag": store.get("2026-12-05-queryapigate"),
            "instr": store.get("2026-12-05-queryapigate-instructions")}
    a, b = (r.manifest.machine for r in runs.values())
    assert "cpu_flags" not in a and "cpu_flags" in b and same_machine(a, b)
    shown = header.machine(runs)
    assert "Different machines" not in shown
    assert shown.startswith("Measured on AMD EPYC") and "CPU flags " in shown
    assert "(<code>qag</code>: no CPU flags recorded) (runs <code>qag</code>, <code>instr</code>)" \
        in shown
    # both recorded, and different: two machines
    assert not same_machine({**b, "cpu_flags": "99 flags, sha256 000000"}, b)
    assert same_machine({**b, "floor_tps": 1.0}, b)  # a measurement, not the machine
RULE_21 = {"test": "wilcoxon", "alpha": 0.01, "version": "2.1", "certify_alpha": 0.01}


@pytest.mark.parametrize(("rounds", "vacuous"), [(8, True), (20, False)])
def test_a_certification_that_could_not_fail_says_so(tmp_path: Path, rounds: int,
                                                     vacuous: bool) -> None:
    """Method 2.1 at 8 rounds: no paired p-value goes below 2/2^8 ≈ 0.008, above 1 % ÷ 4 A/A
    cells, so the block's certificate is vacuous and the header says its A/A test could not
    fail; at 20 rounds the same block is certified plainly."""
    run = f"2026-12-01-synthetic-{rounds}-rounds"
    write_v2(tmp_path, run, rounds=rounds, rule=RULE_21)
    done = render("# Perf\n", {"runs": {"new": run}}, path="p.md", offset=4,
                  store=RunStore(tmp_path))
    [cert] = store_module.reading(done.runs["new"]).certification or []
    assert cert["certified"] and cert["vacuous"] is vacuous
    line, status = header._certified(done.runs)
    assert status == {("new", "callers"): True}
    words = f"callers at 1 % (but no A/A cell could fail at {rounds} rounds)"
    assert (words in line) is vacuous and "<code>new</code> callers at 1 %" in line
    box = header.box(done.runs)
    assert (line in box) is vacuous  # a vacuous certificate is worth the box on its own


def test_the_sky_run_s_network_block_could_not_fail() -> None:
    """results/2026-12-05-sky: its network block's 25 A/A cells at 10 rounds cannot reach
    1 % ÷ 25, so its certificate is vacuous; its other blocks' are not."""
    done = render("# Sky\n", {"runs": {"sky": "2026-12-05-sky"}}, path="p.md", offset=4,
                  store=RunStore(Path(__file__).resolve().parent.parent / "results"))
    certs = {c["block"]: c for c in store_module.reading(done.runs["sky"]).certification or []}
    assert certs["network"]["aa_cells"] == 25 and certs["network"]["rounds"] == 10
    assert certs["network"]["vacuous"] and certs["network"]["certified"]
    line, _ = header._certified(done.runs)
    assert "network at 1 % (but no A/A cell could fail at 10 rounds)" in line
    assert [b for b, c in certs.items() if c.get("vacuous")] == ["network"]


def test_claims_on_several_uncertified_blocks_are_one_line(results: Path) -> None:
    """Claims resting on two blocks no A/A pair certifies: one line with each block's claim
    lines, not a line per block, so that the box's open part stays within the first screen."""
    body = ("# Perf\n\n{{ claim('Changed is faster.', faster('base', 'changed', "
            "block='callers')) }}\n{{ claim('And here.', faster('base', 'changed', "
            "block='pages')) }}\n")
    done = render(body, {"runs": {"new": NOISY}}, path="p.md", offset=4,
                  store=RunStore(results))
    first = header.box(done.runs, "perf/p.md", "runs", done.claims).split("??? note")[0]
    assert first.count("    - ") == 2  # the claims' line and the certification line
    assert (f"    - 2 claims rest on blocks no A/A pair certifies, read them as unconfirmed: "
            f"[<code>new</code>](../runs/{NOISY}.md) callers (line 7), pages (line 8)\n") in first


def test_the_note_above_a_superseded_version_is_short() -> None:
    """The warning is its title and one fold: its summary links the newest version, and
    inside is what the old one got wrong; a link inside the paragraph alone stays open."""
    note = version.banner(2, 3, "perf/v3.md", "perf/v2.md", "v2 pooled the floors.\nBadly.")
    assert note == ('!!! warning "Superseded by v3"\n\n'
                    '    ??? note "Read the newest, [v3](v3.md); what v2 got wrong"\n\n'
                    "        This version v2 renders exactly what it said, from its own pinned "
                    "runs. What it got wrong:\n\n        v2 pooled the floors.\n        Badly.\n\n")
    meta = {"superseded": {"by": "v3.md", "why": "It read the wrong run."}}
    side = version.notice(meta, "perf/side.md") or ""
    assert '??? note "No longer current: read [v3](v3.md); what this page got wrong"' in side
    assert side.endswith("What it got wrong:\n\n        It read the wrong run.\n\n")
    linked = version.notice({"superseded": "Read [v3](v3.md) instead."}, "perf/side.md") or ""
    assert "???" not in linked and "    Read [v3](v3.md) instead." in linked  # its link open


def test_a_verdict_card_says_its_block_could_not_fail() -> None:
    """The card beside a comparison names its block's certification from the same
    certificate: "certified, but no A/A cell could fail" over 6 A/A cells at 10 rounds, plain
    "certified" over 4 (where a cell could have failed)."""
    card = cards.Card("0.42.0", "0.43.0", (("qag", "calls"),), ())

    def cert(cells: int) -> Certificate:
        return Certificate("calls", cells, 0, 8.0, "throughput", rule=V21,
                           aa_p=tuple((f"c{i}", 0.5) for i in range(cells)), headline=8.0,
                           headline_metric="throughput", rounds=10)

    assert cert(6).vacuous and cert(6).certified and not cert(4).vacuous
    assert "block calls: certified, but no A/A cell could fail at 10 rounds" in cards.render(
        card, lambda alias, block: cert(6))
    shown = cards.render(card, lambda alias, block: cert(4))
    assert "block calls: certified" in shown and "could fail" not in shown
