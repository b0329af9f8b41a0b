"""The inputs the fuzzers (tests/fuzzing.py, bench/fuzz.py) found breaking a parser, each
kept as it was found: refused in one line of the right class, or read right."""

import json
from pathlib import Path

import pytest

from netassay.config import load_config, to_toml
from netassay.errors import InputError, UsageError
from netassay.imix import parse_imix
from netassay.methods.rtt import ping_import
from netassay.shared.sizes import parse_sizes
from netassay.units import parse_duration, parse_pause

DATA = Path(__file__).resolve().parents[1] / "data" / "iperf3"


@pytest.mark.parametrize("text", ["9" * 400, "\xa0" + "5" * 320 + "s", "1" * 309 + "h"])
def test_a_duration_beyond_a_float_is_refused(text):
    # found by the 'duration' and 'pause' targets: read as inf seconds and accepted
    for parse in (parse_duration, parse_pause):
        with pytest.raises(UsageError, match="not a finite number"):
            parse(text)


@pytest.mark.parametrize("text", ["²", "64,²", "٣", "６４"])
def test_sizes_in_other_digits_are_refused(text):
    # found by the 'sizes' target: '²' passed str.isdigit and int() raised ValueError
    with pytest.raises(UsageError, match="is not a frame size"):
        parse_sizes(text, 4)


@pytest.mark.parametrize("text", ["²:1", "64:²", "٣:1", "６４:7"])
def test_an_imix_in_other_digits_is_refused(text):
    # '64:²' (found with the sizes target's input): int() raised ValueError
    with pytest.raises(UsageError, match="SIZE:WEIGHT"):
        parse_imix(text, 4)


@pytest.mark.parametrize(
    "time, why",
    [("1.2.3", "not iputils ping output"), ("..", "not iputils ping output"),
     ("9" * 400, "beyond any ping's time"), ("99999999999", "beyond any ping's time")],
)  # fmt: skip
def test_a_ping_reply_time_that_is_no_time_is_refused_naming_its_line(time, why):
    # found by the 'ping' target: time=.. raised ValueError, time=9...9 OverflowError
    text = (
        "PING h (198.18.0.2) 56(84) bytes of data.\n"
        f"64 bytes from h: icmp_seq=1 ttl=64 time={time} ms\n"
    )
    with pytest.raises(InputError, match=f"ping.txt:2: .*{why}"):
        ping_import.parse(text, "ping.txt")


@pytest.mark.parametrize(
    "text",
    ['[cluster]\ntls_dir = "a\\"b"\n', '[sweep]\nlabel = "x\\\\y\\u007f"\n',
     '[search]\nlabel = []\n', '[rtt]\n"two words" = 1\n', '[sweep]\nx = {a = 1}\n',
     "[accept]\nwhen = 2024-01-02T03:04:05Z\n"],
)  # fmt: skip
def test_config_show_prints_a_file_that_reads_back_the_same(tmp_path, text):
    # found by the 'config_toml' target: a quote in a string, a quoted key, an inline
    # table or a date printed as no TOML; a file's [] printed as unset
    (tmp_path / "a.toml").write_text(text)
    cfg = load_config(tmp_path / "a.toml", resolve=False)
    shown = to_toml(cfg)
    (tmp_path / "b.toml").write_text(shown)
    again = load_config(tmp_path / "b.toml", resolve=False)
    assert to_toml(again) == shown
    assert again.methods == cfg.methods and again.cluster == cfg.cluster


@pytest.mark.parametrize(
    "key, value", [("pdr", "0.0"), ("eta", "1.5"), ("entry_factor", "0.97"), ("mode", '"x"')]
)
def test_a_config_files_analysis_value_out_of_range_names_its_line(tmp_path, key, value):
    # found by the 'config_toml' target: '[analysis] pdr = 0.0' was a UsageError (exit 2)
    # naming no file, where every other bad value of a config file names its line
    f = tmp_path / "a.toml"
    f.write_text(f"[testbed]\nsize = 128\n\n[analysis]\n{key} = {value}\n")
    with pytest.raises(InputError, match=rf"a.toml:5: \[analysis\] {key} = "):
        load_config(f)


def _udp_server(**change):
    from netassay.shared.iperf3_json import find_json

    text = (DATA / "udp-50M-server.json").read_text()
    doc = find_json(text, "x")[0][1]
    for path, value in change.items():
        *parents, key = path.split("__")
        node = doc
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        node[key] = value
    return json.dumps(doc)


@pytest.mark.parametrize(
    "change, said",
    [
        ({"start": 279152}, "start is 279152, not an object"),
        ({"start__test_start__num_streams": "TCP"}, 'num_streams is "TCP", not a count'),
        ({"intervals__0__sum": None}, r"intervals\[0\].sum is missing"),
        ({"intervals__0__sum__bytes": [1]}, r"intervals\[0\].sum.bytes is \[1\], not a count"),
        ({"start__connected": [None]}, r"start.connected\[0\] is null, not an object"),
        ({"start__cookie": ["x"]}, r"start.cookie is \[\"x\"\], not a string"),
        ({"end__sum_received__packets": 1e999}, "packets is Infinity, not a count"),
        ({"end__sum_received__seconds": -1}, "seconds is -1, not a number"),
    ],
)
def test_an_iperf3_json_of_another_shape_is_refused_naming_the_value(change, said):
    # found by the 'iperf3' target: each raised TypeError, KeyError, AttributeError,
    # ValueError or OverflowError (a traceback) where a value had another type
    from netassay.methods.accept import import_iperf3 as accept_import_iperf3

    with pytest.raises(InputError, match=f"s.json: not the iperf3 JSON netassay reads: .*{said}"):
        accept_import_iperf3.parse_all(_udp_server(**change), "s.json")


def test_an_iperf3_version_of_blanks_and_a_null_count_read_as_unknown():
    # found by the 'iperf3' target: version "  " raised IndexError; a sum_sent with
    # "packets": null, TypeError
    from netassay.methods.accept import import_iperf3 as accept_import_iperf3

    (res,) = accept_import_iperf3.parse_all(_udp_server(start__version="  "), "s.json")
    client = (
        (DATA / "udp-50M-client.json").read_text().replace('"packets":', '"packets": null, "x":', 1)
    )
    (sent,) = accept_import_iperf3.parse_all(client, "c.json")
    run = accept_import_iperf3.to_run(1, res, sent)
    assert run.tool_version is None and run.received_bytes > 0


def test_a_tcp_client_json_with_null_parts_is_read_or_refused_in_one_line(tmp_path):
    # found by the 'iperf3' target: "sum_received": null raised AttributeError
    from netassay.methods.tcp import import_iperf3 as tcp_import_iperf3

    f = tmp_path / "t.json"
    text = (DATA / "tcp-reno-20ms-loss1e-3-client.json").read_text()
    f.write_text(text.replace('"sum_received": {', '"sum_received": null, "x": {', 1))
    cell = tcp_import_iperf3.read_cell(f)
    assert cell["runs"][0]["throughput_bps"] is None
    f.write_text(text.replace('"streams": [', '"streams": 7, "x": [', 1))
    with pytest.raises(InputError, match=r"t.json: not the iperf3 JSON netassay reads"):
        tcp_import_iperf3.read_cell(f)


_SERVER = "total_bytes_transferidos,taxa_de_bits_por_segundo,jitter,total_pacotes_perdidos,porcentagem_pacotes_perdidos\n"  # noqa: E501


@pytest.mark.parametrize(
    "row, said",
    [
        ("1000,8000,0,nan,0", "column total_pacotes_perdidos is 'nan'"),
        ("1e999,8000,0,0,0", "column total_bytes_transferidos is '1e999'"),
        ("-5,8000,0,0,0", "column total_bytes_transferidos is '-5'"),
        ("1000,2e-311,0,0,0", "1000 bytes at 2e-311 bit/s: no interval lasts that"),
    ],
)
def test_a_monipe_csv_value_that_is_no_count_is_refused_naming_its_line(tmp_path, row, said):
    # found by the 'monipe' target: nan raised ValueError and 1e999 OverflowError in
    # int(); a negative byte count and a denormal rate (infinite seconds) were stored
    from netassay.methods.accept.import_monipe import read_tests

    r = tmp_path / "teste_1" / "rodada_1"
    r.mkdir(parents=True)
    (r / "rodada_1-teste_1-iperf3_server.csv").write_text(_SERVER + "1000,8000,0,0,0\n" + row)
    with pytest.raises(InputError, match=f"iperf3_server.csv:3: {said}"):
        read_tests(tmp_path, None, "ethernet")


def test_a_short_mpstat_row_is_refused_naming_its_line(tmp_path):
    # found by the 'monipe' target: a row shorter than the header raised TypeError
    from netassay.methods.accept.import_monipe import read_tests

    r = tmp_path / "teste_1" / "rodada_1"
    r.mkdir(parents=True)
    (r / "rodada_1-teste_1-iperf3_server.csv").write_text(_SERVER + "1000,8000,0,0,0\n")
    (r / "rodada_1-teste_1-mpstat.csv").write_text("CPU_0,CPU_1\n10,20\n80\n")
    with pytest.raises(InputError, match=r"mpstat.csv:3: column CPU_1 is ''"):
        read_tests(tmp_path, None, "ethernet")


def test_an_imix_weight_after_a_unit_separator_is_read():
    # found by the 'imix' target: str.strip() removes '\x1f' and int() does not, so
    # '104:\x1f2' passed the check and int() raised ValueError
    assert parse_imix("359:130,146:121,104:\x1f2,202:539", 4)[2] == (104, 2)


@pytest.mark.parametrize("t", ["0", "0.0", "9" * 400])
def test_a_pastrami_name_of_runs_of_no_length_is_refused(t):
    # found by the 'pastrami' target: site_exp_t_0.0 raised ZeroDivisionError; 400
    # nines gave runs of infinite length
    from netassay.store.pastrami import parse_data

    data = b"[[150, 0], [1500, 1500, 0]]\n"
    with pytest.raises(InputError, match=r"site_exp_t_.*: the name says runs of (0|inf) s"):
        parse_data(Path(f"site_exp_t_{t}.txt"), data)


@pytest.mark.parametrize(
    "text, said",
    [
        ('[campaign]\nname = "x"\nmethod = {}\nrepetition = 1\n', "unknown key 'repetition'"),
        ('[campaign]\nname = "x"\n[[fixed]]\nruns = 3\n[factors]\nruns = [1, 2]\n',
         r"\[fixed\] is not a table"),
    ],
)  # fmt: skip
def test_a_campaign_of_odd_tables_is_refused_line_by_line(text, said):
    # found by the 'campaign_toml' target (mutations of examples/): 'method = {}' beside
    # an unknown key, and [[fixed]] beside [factors], raised TypeError (unhashable)
    from netassay.campaign import spec

    with pytest.raises(InputError, match=said):
        spec.parse(text, "c.toml")


def test_json_and_toml_nested_beyond_the_recursion_limit_are_refused(tmp_path):
    # found by the pastrami, iperf3, config_toml and campaign_toml targets once their
    # mutations could insert 3000 '[': RecursionError, an internal error (exit 70)
    from netassay.campaign import spec
    from netassay.methods.accept import import_iperf3 as accept_import_iperf3
    from netassay.store.pastrami import parse_data

    with pytest.raises(InputError, match=r"x_raw_1.txt:1: not a PASTRAMI line"):
        parse_data(Path("x_raw_1.txt"), b"[" * 100_000)
    with pytest.raises(InputError, match=r"i.json: not the iperf3 JSON netassay reads"):
        accept_import_iperf3.parse_all('{"a":' * 100_000, "i.json")
    f = tmp_path / "c.toml"
    f.write_text("[sweep]\nrates = " + "[" * 100_000)
    with pytest.raises(InputError, match="nested too deep"):
        load_config(f)
    with pytest.raises(InputError, match="nested too deep"):
        spec.parse(f.read_text(), "c.toml")


@pytest.mark.parametrize("text", ["20k:100k:1e-320k", "20Mbps:100Mbps:1e-320bps", "1%:2%:0.0"])
def test_a_range_of_a_step_near_zero_is_refused(text):
    # found by the 'campaign_toml' target: rates = "20k:100k:1e-320k" raised
    # OverflowError (the count of loads was infinite), a traceback
    from netassay.loads import tokens
    from netassay.units import parse_rates

    with pytest.raises(UsageError):
        tokens(text, "--rates")
    if "%" not in text and "bps" not in text:
        with pytest.raises(UsageError, match="loads; use a larger STEP"):
            parse_rates(text)


def test_a_tcp_client_json_with_a_null_host_is_read(tmp_path):
    # found by bench/fuzz.py's iperf3 target (one input in 100,000): a TCP client's
    # "connecting_to": {"host": null} raised TypeError in ':' in host
    from netassay.methods.tcp import import_iperf3 as tcp_import_iperf3

    doc = json.loads((DATA / "tcp-reno-20ms-loss1e-3-client.json").read_text())
    doc["start"]["connecting_to"]["host"] = None
    f = tmp_path / "t.json"
    f.write_text(json.dumps(doc))
    cell = tcp_import_iperf3.read_cell(f)
    assert cell["config"]["ip_version"] == 4 and cell["label"] == "iperf3 TCP reno"


def test_a_pastrami_line_with_a_lone_cr_is_read_as_the_line_parse_reads_it():
    # found by bench/fuzz.py's pastrami target (2 inputs in 100,000): the bulk parse read
    # '[[100, 0],\r[1000, 1000, 0]]' as one line where the line-by-line parse, which
    # names a bad line, ends the line at the CR and refuses it: now both refuse it
    from netassay.store.pastrami import parse_data

    with pytest.raises(InputError, match=r"x.txt:1: not a JSON array"):
        parse_data(Path("x.txt"), b"[[100, 0],\r[1000, 1000, 0]]\n")
    assert len(parse_data(Path("x.txt"), b"[[100, 0], [1000, 1000, 0]]\r\n").trials) == 1


def test_a_range_whose_step_a_float_cannot_add_is_refused():
    # found by bench/fuzz.py's rates target: '2.6487232117561504e+16pps:...:1pps' gave
    # loads that repeat (START + STEP rounds back to START)
    from netassay.loads import tokens
    from netassay.units import parse_rates

    with pytest.raises(UsageError, match="STEP is below what START can be told from"):
        parse_rates("2.6487232117561504e+10:2.6487232117561516e+10:1e-6")
    # frames a second that many are now refused before (above units.MAX_RATE)
    with pytest.raises(UsageError, match="more than any link carries"):
        parse_rates("2.6487232117561504e+16:2.6487232117561516e+16:1")
    with pytest.raises(UsageError, match="STEP is below what START can be told from"):
        tokens("2.6487232117561504e+16bps:2.6487232117561516e+16bps:1bps", "--rates")


def test_a_pastrami_number_outside_its_brackets_is_refused():
    # found by bench/fuzz.py's pastrami target in a third run (2 inputs in 100,000):
    # '[140,254,]29481]' has the brackets and commas of a run, so the bulk parse read it
    # where JSON (the line-by-line parse) refuses it
    from netassay.store.pastrami import parse_data

    data = b"[[15076,86],[41938,1913,602],[140,254,]29481]\n"
    with pytest.raises(InputError, match=r"x.txt:1: not a JSON array"):
        parse_data(Path("x.txt"), data)
