"""Every command block of the manual says how it is tested (tests/manual.py)."""

from tests.manual import blocks, expected_exit


def test_every_console_block_is_run_by_a_tier_or_says_why_not():
    found = blocks()
    assert len(found) > 40  # README.md and docs/ are read
    unmarked = [
        f"{b.page}:{b.line}" for b in found if b.tier not in ("integration", "system", "none")
    ]
    assert not unmarked, f"console blocks without '<!-- run: TIER -->': {unmarked}"
    unsaid = [f"{b.page}:{b.line}" for b in found if b.tier == "none" and len(b.why) < 15]
    assert not unsaid, f"'none' blocks that do not say why: {unsaid}"
    assert all(b.commands for b in found)


def test_the_parser_reads_continuations_output_and_exit_codes(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(
        "text\n<!-- run: integration -->\n```console\n$ netassay a \\\n    --b c\noutput line\n"
        "$ netassay d   # exits 11\n```\n\n```console\n$ x\n```\n"
    )
    a, b = _read(page)
    assert a.tier == "integration" and a.commands == ("netassay a --b c", "netassay d   # exits 11")
    assert expected_exit(a.commands[1]) == 11 and expected_exit(a.commands[0]) == 0
    assert b.tier == "" and b.commands == ("x",)


def _read(page):
    from tests import manual

    root = manual.ROOT
    try:
        manual.ROOT = page.parent
        return manual.blocks([page])
    finally:
        manual.ROOT = root
