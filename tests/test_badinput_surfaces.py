"""Hostile files given to the configuration readers, ``--prices`` and ``catalog update``.

Each refusal is one line on stderr and exit 2 (no traceback, no hang), and a hostile string
that is accepted as data reaches no output as a terminal escape or a spreadsheet formula. The
commands run in-process (`sizing.cli.main.main`); nothing here starts nginx or puts load
anywhere.
"""

from __future__ import annotations

import glob
import json
import os
import socket
import threading
from pathlib import Path

import pytest

from runners.deploy.userconf import read_user_conf
from sizing.catalog import prices as prices_module
from sizing.catalog.build import excluded_csv
from sizing.catalog.load import select_instances
from sizing.cli.main import main as sizing_main
from sizing.report.execute import to_html
from sizing.request import SizingRequest
from sizing.workload.conf import read
from tests.test_bad_input import one_line, sizing
from trialtable import nginxconf

PROG = "python -m sizing"
OFFER = Path(__file__).parent / "data/offer/aws-eu-central-1-excerpt.csv"
AWS_UPDATE = ["catalog", "update", "--provider", "aws", "--region", "eu-central-1"]
RETAIL = Path(__file__).parent / "data/retail/azure-westeurope-page2.json"
SKUS = Path(__file__).parent / "data/skus/gcp-europe-west3-skus.json"
#: Nine lists of nine, each the one before by alias: 9**9 strings once expanded.
ALIAS_BOMB = "".join(
    f"{k}: &{k} [{', '.join([f'*{p}' if p else '0'] * 9)}]\n"
    for k, p in zip("abcdefghi", ["", *"abcdefgh"], strict=True)
)


def _changed(path: Path, change) -> dict:
    """The JSON document at ``path`` after ``change`` (which edits it in place)."""
    doc = json.loads(path.read_text())
    change(doc)
    return doc


SERVER = "events {}\nhttp {\n server {\n  listen 8080;\n  %s\n  location / { return 200; }\n }\n}\n"


def refused(capfd, *argv: str) -> str:
    """The one line of a refusal with exit 2."""
    code, _, err = sizing(capfd, *argv)
    assert code == 2, err
    return one_line(err, PROG)


# ------------------------------------------------------------------------- nginx.conf (--from-conf)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("nan", "'nan': not a whole number"),
        ("inf", "'inf': not a whole number"),
        ("1.5", "'1.5': not a whole number"),
        ("on", "'on': not a whole number"),
        ("9" * 5000, "'" + "9" * 40 + "': not a whole number"),
        ("-5", "'-5': nginx takes no negative value here"),
    ],
)
def test_keepalive_requests_is_read_as_nginx_reads_it(capfd, tmp_path, value, why):
    conf = tmp_path / "nginx.conf"
    conf.write_text(SERVER % f"keepalive_requests {value};")
    line = refused(capfd, "workload", "--from-conf", str(conf))
    assert f"nginx.conf:5: keepalive_requests is {why}" in line


@pytest.mark.parametrize("text", ["<html><body>404</body></html>\n", "root:*:20228:0:99999:7:::\n"])
def test_a_file_that_is_not_a_config_says_so(capfd, tmp_path, text):
    conf = tmp_path / "nginx.conf"
    conf.write_text(text)
    line = refused(capfd, "workload", "--from-conf", str(conf))
    assert line.endswith("nginx.conf: does not parse as an nginx configuration"), line


def test_a_glob_that_walks_too_many_folders_is_refused(capfd, tmp_path, monkeypatch):
    """``include /*/*/*/*/*/*/x.conf`` would walk the whole file system to match nothing."""
    monkeypatch.setattr(nginxconf, "MAX_GLOB_SCANNED", 50)
    for i in range(10):
        for j in range(6):
            (tmp_path / f"d{i}" / f"e{j}").mkdir(parents=True)
    conf = tmp_path / "nginx.conf"
    conf.write_text("events {}\nhttp { include */*/nothing.conf; }\n")
    line = refused(capfd, "workload", "--from-conf", str(conf))
    assert "include */*/nothing.conf looks through more than 50 folder entries; refused" in line


def test_the_bounded_glob_matches_what_glob_matches(tmp_path):
    for name in ("a/x.conf", "a/.hidden.conf", "b/y.conf", "b/z.txt", ".c/w.conf", "a/sub/v.conf"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    include = nginxconf.Statement("include", ["x"], "nginx.conf", 1)
    for pattern in ("*/*.conf", "*/.*", ".*/*.conf", "[ab]/?.conf", "a/*", "*/sub/*.conf", "q*/*"):
        full = str(tmp_path / pattern)
        assert sorted(nginxconf._glob(full, include)) == sorted(glob.glob(full)), pattern


@pytest.mark.parametrize(
    ("option", "why"),
    [
        ("--server", "no server named '" + "s" * 40 + "'; the server names are: example"),
        ("--location", "no location '" + "s" * 40 + "' in the chosen server; its locations: /"),
    ],
)
def test_a_long_server_or_location_is_shown_cut(capfd, tmp_path, option, why):
    conf = tmp_path / "nginx.conf"
    conf.write_text(SERVER % "server_name example;")
    line = refused(capfd, "workload", "--from-conf", str(conf), option, "s" * 100_000)
    assert line.endswith(why), line[:300]


# ------------------------------------------------------------------ ingress-nginx (--ingress-nginx)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ("keep-alive: 1e308", "keep-alive is '1e308': not a whole number"),
        ("keep-alive-requests: 1e308", "keep-alive-requests is '1e308': not a whole number"),
        ("keep-alive: true", "keep-alive is 'true': not a whole number"),
        ("upstream-keepalive-connections: 1.5", "upstream-keepalive-connections is '1.5': not"),
        (f'upstream-keepalive-connections: "{"9" * 5000}"', "upstream-keepalive-connections is"),
        ('keep-alive: "\\e[31m75"', "keep-alive is '\\\\x1b[31m75': not a whole number"),
    ],
)
def test_configmap_counts_are_whole_numbers(capfd, tmp_path, data, why):
    cm = tmp_path / "cm.yaml"
    cm.write_text(f"kind: ConfigMap\ndata:\n  {data}\n")
    line = refused(capfd, "workload", "--ingress-nginx", str(cm))
    assert f"cm.yaml: {why}" in line and "int_max_str_digits" not in line, line


def test_no_upstream_keepalive_for_a_negative_count_as_the_template_renders_it(tmp_path):
    cm = tmp_path / "cm.yaml"
    cm.write_text('data:\n  upstream-keepalive-connections: "-5"\n')
    assert dict(read(ingress_nginx=str(cm)).workload.features).get("proxy_new_connection") == 1.0


def test_a_key_given_twice_is_refused_and_a_merge_key_may_override(capfd, tmp_path):
    cm = tmp_path / "cm.yaml"
    cm.write_text('data:\n  keep-alive: "10"\n  keep-alive: "0"\n')
    line = refused(capfd, "workload", "--ingress-nginx", str(cm))
    assert "cm.yaml:3: key 'keep-alive' given twice" in line, line
    cm.write_text('base: &b\n  keep-alive: "10"\ndata:\n  <<: *b\n  keep-alive: "0"\n')
    assert read(ingress_nginx=str(cm)).workload.requests_per_connection == 1.0


def test_chart_extra_args_that_are_not_a_mapping_are_refused(capfd, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text("controller:\n  extraArgs: [enable-metrics]\n")
    line = refused(capfd, "workload", "--ingress-nginx", str(values))
    assert "values.yaml: controller.extraArgs is a list, not a mapping" in line


def test_an_escape_in_a_file_name_reaches_no_output(capfd, tmp_path):
    cm = tmp_path / "\x1b]0;x\x07\x1b[31m<b>cm.yaml"
    cm.write_text('data:\n  enable-modsecurity: "true"\n')
    reading = read(ingress_nginx=str(cm))
    assert not any("\x1b" in u for u in reading.workload.uncosted), reading.workload.uncosted
    assert not any("\x1b" in p for p in reading.found.provenance.values())
    code, out, err = sizing(capfd, "workload", "--ingress-nginx", str(cm))
    assert code == 0 and "\x1b" not in out + err and "\\x1b[31m<b>cm.yaml" in err


# --------------------------------------------------------------------------------- --prices FILE

HEADER = "provider,region,instance_type,pricing,usd_per_hour,source\n"
ROW = "aws,us-east-1,c7g.large,on-demand,0.05,quote\n"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (HEADER, "prices.csv: no price lines under the header"),
        (
            HEADER.replace("source", "usd_per_hour") + ROW,
            "prices.csv:1: column(s) given twice: usd_per_hour",
        ),
        (HEADER + 'aws,us-east-1,c7g.large,on-demand,0.05,"quote\n', "malformed CSV"),
        ("<html>" + "x" * 5000 + "</html>\n", "unknown column(s) <html>" + "x" * 34 + "...;"),
    ],
)
def test_a_price_file_without_prices_or_with_a_doubled_column_is_refused(
    capfd, tmp_path, text, why
):
    prices = tmp_path / "prices.csv"
    prices.write_text(text)
    line = refused(capfd, "recommend", "--rps", "1e6", "--prices", str(prices))
    assert why in line and len(line) < 400, line


def test_a_price_file_over_its_bound_is_refused_before_it_is_read(capfd, tmp_path):
    prices = tmp_path / "prices.csv"
    with prices.open("w") as fh:
        fh.truncate(prices_module.MAX_BYTES + 1)  # sparse: nothing written
    line = refused(capfd, "recommend", "--rps", "1e6", "--prices", str(prices))
    assert "more than the 16 MB allowed" in line and "Errno" not in line, line


def test_a_spreadsheets_byte_order_mark_is_not_a_column(tmp_path):
    prices = tmp_path / "prices.csv"
    prices.write_bytes(("\ufeff" + HEADER + ROW).replace("\n", "\r\n").encode())
    assert prices_module.read_prices(prices) == {
        ("aws", "us-east-1", "c7g.large"): [("on-demand", 0.05, "quote")]
    }


# -------------------------------------------------------------- catalog update --provider aws


def _offer(tmp_path: Path, text: str) -> tuple[int, Path]:
    bad = tmp_path / "offer.csv"
    bad.write_text(text)
    out = tmp_path / "aws-eu-central-1.csv"
    out.write_text("the previous catalog\n")
    code = sizing_main([*AWS_UPDATE, "--offer", str(bad), "--out", str(out)])
    return code, out


@pytest.mark.parametrize("keep", [0.5, 0.75])
def test_an_offer_file_cut_inside_a_row_is_refused(capfd, tmp_path, keep):
    text = OFFER.read_text()
    code, out = _offer(tmp_path, text[: int(len(text) * keep)])
    err = capfd.readouterr().err
    assert code == 2 and "(a damaged or cut-off file)" in one_line(err, PROG)
    assert out.read_text() == "the previous catalog\n"


def test_an_offer_price_of_many_digits_is_shown_short(capfd, tmp_path):
    code, _ = _offer(tmp_path, OFFER.read_text().replace('"0.0456000000"', f'"{"9" * 100_000}"'))
    line = one_line(capfd.readouterr().err, PROG)
    assert code == 2 and line.endswith("bad price " + "9" * 40), line[:200]


class _CutServer(threading.Thread):
    """One HTTP answer on 127.0.0.1 whose body stops short of what its head promised."""

    def __init__(self, body: bytes, chunked: bool) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/index.csv"
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/csv\r\n"
        if chunked:
            self.answer = head + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n" % len(body) + body
        else:
            promised = b"Content-Length: %d\r\n\r\n" % (len(body) + 1000)
            self.answer = head + promised + body

    def run(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(self.answer)
        self.sock.close()


@pytest.mark.parametrize("chunked", [False, True])
def test_a_download_cut_at_a_line_end_is_refused(capfd, tmp_path, chunked):
    lines = OFFER.read_bytes().splitlines(keepends=True)
    server = _CutServer(b"".join(lines[: len(lines) - 2]), chunked)
    server.start()
    out = tmp_path / "aws-eu-central-1.csv"
    out.write_text("the previous catalog\n")
    code = sizing_main([*AWS_UPDATE, "--offer", server.url, "--out", str(out)])
    server.join(timeout=10)
    line = one_line(capfd.readouterr().err, PROG)
    assert code == 2 and "the download was cut off" in line, line
    assert out.read_text() == "the previous catalog\n"


def test_names_left_out_of_a_catalog_are_written_escaped():
    text = excluded_csv(
        [("aws", "c7g.\x1b]0;x\x07medium", "not in the catalog"), ("aws", "=1+2", "x")]
    )
    assert "\x1b" not in text and "\x07" not in text
    assert "c7g.\\x1b]0;x\\x07medium" in text and "'=1+2" in text


def test_a_price_files_source_and_name_are_kept_as_escaped_text(tmp_path):
    prices = tmp_path / "p\x1b[2J.csv"
    prices.write_text(
        HEADER + "aws,us-east-1,c7g.large,on-demand,0.05,\x1b]0;x\x07=cmd|' /C calc'!A0\n"
    )
    (inst,) = prices_module.apply_prices(
        [i for i in select_instances(region="us-east-1") if i.key[2] == "c7g.large"], prices
    )
    assert "\x1b" not in inst.source and "\x07" not in inst.source
    assert "from p\\x1b[2J.csv (\\x1b]0;x\\x07=cmd|" in inst.source


def test_a_reports_price_file_is_found_from_where_the_command_ran(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    request = SizingRequest(rps=1e6, prices="prices.csv").absolute()
    assert request.prices == str(tmp_path / "prices.csv")  # the notebook runs elsewhere


def test_a_report_page_shows_control_characters_escaped(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    shown = {"text/html": "<p>catalog: \x1b]0;x\x07\x1b[31mRED \u202eevil</p>"}
    nb.cells = [
        nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output("display_data", shown)])
    ]
    ipynb = tmp_path / "r.ipynb"
    nbformat.write(nb, str(ipynb))
    page = to_html(ipynb, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "\x1b" not in page and "\x07" not in page and "\u202e" not in page
    assert "catalog: \\x1b]0;x\\x07\\x1b[31mRED \\u202eevil" in page


# ------------------------------------------------------------------------------ command-line values


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["--region", "x" * 10_000], "unknown region " + "x" * 40 + "...;"),
        (
            ["--provider", "\x1b[31m" + "y" * 10_000],
            "unknown provider \\x1b[31m" + "y" * 35 + "...;",
        ),
        (["--confidence", "9" * 5000], "is 5000 characters long; a value has at most 1000"),
        (["--region", ",,,"], ",,,: a comma list that names nothing"),
        (["--provider", " , "], "a comma list that names nothing"),
    ],
)
def test_a_long_value_is_shown_cut_in_its_refusal(capfd, argv, why):
    line = refused(capfd, "recommend", "--rps", "1e6", *argv)
    assert why in line and len(line) < 2000, line[:300]


# ----------------------------------------- cases that already held: one line and exit 2 each


def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _special(tmp_path: Path, kind: str) -> str:
    """A path that is not a regular file: a folder, a named pipe, a device, a loop of links."""
    if kind == "folder":
        return str(tmp_path)
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")
        return str(tmp_path / "fifo")
    if kind == "loop":
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
        return str(tmp_path / "a")
    return "/dev/zero"


NESTED_YAML = "[" * 600 + "]" * 600  # past the recursion limit: refused, not a crash

CONFIGMAPS = {
    "bomb in data": ALIAS_BOMB.replace("i:", "data:"),
    "nested": NESTED_YAML,
    "binary": bytes(range(256)) * 4,
    "latin-1": "data:\n  use-gzip: caf\xe9\n".encode("latin-1"),
    "NUL": b'data:\n  use-gzip: "tr\x00ue"\n',
    "python tag": "data: !!python/object/apply:os.system ['true']\n",
    "number key": "data:\n  1: true\n",
    "list data": "kind: ConfigMap\ndata: [1, 2]\n",
    "set data": "data: !!set {a, b}\n",
    "two documents": "data:\n  a: 1\n---\ndata:\n  b: 2\n",
    "html": "<html><body>404</body></html>\n",
    "bytes value": "data:\n  keep-alive: !!binary AAAA\n",
}


@pytest.mark.parametrize("case", sorted(CONFIGMAPS))
def test_hostile_configmaps_are_one_line(capfd, tmp_path, case):
    cm = _write(tmp_path / "cm.yaml", CONFIGMAPS[case])
    line = refused(capfd, "workload", "--ingress-nginx", str(cm))
    assert "cm.yaml" in line and "\x1b" not in line


@pytest.mark.parametrize("option", ["--ingress-nginx", "--from-conf"])
@pytest.mark.parametrize("kind", ["folder", "fifo", "device", "loop"])
def test_a_configuration_that_is_not_a_file_is_one_line(capfd, tmp_path, option, kind):
    refused(capfd, "workload", option, _special(tmp_path, kind))


CONFS = {
    "binary": (bytes(range(256)) * 4, "nginx.conf"),
    "NUL": (b"events {}\nhttp { server { listen 80; server_name a\x00b; } }\n}\n", "nginx.conf:"),
    "nested": ("http { server { " + "location / { " * 5000 + "}" * 5000, "nginx.conf"),
    "escape": ("events {}\n\x1b[31mbad_directive 1;\n", '"\\x1b[31mbad_directive"'),
    "device": ("events {}\nhttp { include /dev/zero; }\n", "/dev/zero: is a device"),
    "proc": ("events {}\nhttp { include /proc/self/mem; }\n", "/proc/self/mem:"),
    "missing": ("events {}\nhttp { include /nonexistent/x.conf; }\n", "/nonexistent/x.conf:"),
    "empty": ("", "no http block"),
}


@pytest.mark.parametrize("case", sorted(CONFS))
def test_hostile_configs_are_one_line(capfd, tmp_path, case):
    text, why = CONFS[case]
    conf = _write(tmp_path / "nginx.conf", text)
    line = refused(capfd, "workload", "--from-conf", str(conf))
    assert why in line and "\x1b" not in line, line


PRICE_LINES = {
    "NaN": ("nan", "usd_per_hour must be a positive number"),
    "infinity": ("inf", "usd_per_hour must be a positive number"),
    "1e999": ("1e999", "usd_per_hour must be a positive number"),
    "digits": ("9" * 100_000, "usd_per_hour must be a positive number"),
    "zero": ("0", "usd_per_hour must be a positive number"),
    "NUL": ("0.0\x005", "usd_per_hour must be a positive number"),
}
PRICE_FILES = {
    "empty": ("", "missing provider, region"),
    "html": ("<!DOCTYPE html><html><body>Not found</body></html>\n", "unknown column(s)"),
    "latin-1": ((HEADER + ROW.replace("quote", "caf\xe9")).encode("latin-1"), "cannot be read"),
    "binary": (bytes(range(256)) * 4, "cannot be read"),
    "long field": (HEADER + ROW.replace("quote", "x" * 200_000), "malformed CSV"),
    "short row": (HEADER + "aws,us-east-1\n", "wrong number of fields"),
    "escape": (HEADER + ROW.replace("on-demand", "\x1b[2Jspot"), "pricing '\\\\x1b[2Jspot'"),
    "formula type": (HEADER + ROW.replace("c7g.large", "=cmd|' /C calc'!A0"), "not in the catalog"),
    "twice": (HEADER + ROW + ROW, ":3: aws/us-east-1/c7g.large on-demand given twice"),
}


@pytest.mark.parametrize("case", sorted(PRICE_LINES) + sorted(PRICE_FILES))
def test_hostile_price_files_are_one_line(capfd, tmp_path, case):
    if case in PRICE_LINES:
        price, why = PRICE_LINES[case]
        content: str | bytes = HEADER + ROW.replace("0.05", price)
    else:
        content, why = PRICE_FILES[case]
    prices = _write(tmp_path / "prices.csv", content)
    line = refused(capfd, "recommend", "--rps", "1e6", "--prices", str(prices))
    assert why in line and "prices.csv" in line and "\x1b" not in line, line


@pytest.mark.parametrize("kind", ["folder", "fifo", "device", "loop"])
def test_a_price_file_that_is_not_a_file_is_one_line(capfd, tmp_path, kind):
    refused(capfd, "recommend", "--rps", "1e6", "--prices", _special(tmp_path, kind))


def _retail(change) -> str:
    answer = json.loads(RETAIL.read_text())
    answer["NextPageLink"] = None
    change(answer)
    return json.dumps(answer)


def _sku_price(answer: dict, **unit: object) -> None:
    rate = answer["skus"][0]["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]
    rate["unitPrice"].update(unit)


UPDATES = {
    "aws NaN": ("aws", OFFER.read_text().replace('"0.0456000000"', '"NaN"'), "bad price NaN"),
    "aws 1e999": ("aws", OFFER.read_text().replace('"0.0456000000"', '"1e999"'), "bad price"),
    "aws latin-1": ("aws", OFFER.read_bytes().replace(b"Frankfurt", b"Frankf\xfcrt"), "not UTF-8"),
    "azure nested": ("azure", "[" * 100_000 + "]" * 100_000, "not complete JSON"),
    "azure digits": (
        "azure",
        _retail(lambda a: a["Items"][0].update(retailPrice=1)).replace(
            '"retailPrice": 1,', '"retailPrice": ' + "9" * 5000 + ",", 1
        ),
        "not complete JSON",
    ),
    "azure list price": (
        "azure",
        _retail(lambda a: a["Items"][0].update(retailPrice=[1])),
        "bad retailPrice [1]",
    ),
    "azure not a page": ("azure", "[1, 2, 3]", "no Items list"),
    "gcp units digits": (
        "gcp",
        json.dumps(_changed(SKUS, lambda a: _sku_price(a, units="9" * 5000))),
        "bad pricing",
    ),
    "gcp negative nanos": (
        "gcp",
        json.dumps(_changed(SKUS, lambda a: _sku_price(a, nanos=-5))),
        "bad price",
    ),
    "gcp nested": ("gcp", '{"skus": ' + "[" * 100_000 + "]" * 100_000 + "}", "not complete"),
}


@pytest.mark.parametrize("case", sorted(UPDATES))
def test_hostile_price_lists_leave_the_old_catalog(capfd, tmp_path, case):
    provider, content, why = UPDATES[case]
    given = _write(tmp_path / "answer", content)
    region = {"aws": "eu-central-1", "azure": "westeurope", "gcp": "europe-west3"}[provider]
    source = "--from" if provider == "gcp" else "--offer"
    out = _write(tmp_path / "catalog.csv", "the previous catalog\n")
    argv = ["catalog", "update", "--provider", provider, "--region", region]
    line = refused(capfd, *argv, source, str(given), "--out", str(out))
    assert why in line and len(line) < 300, line[:300]
    assert out.read_text() == "the previous catalog\n"


def test_an_include_of_a_name_with_a_nul_byte_is_one_line(capfd, tmp_path):
    conf = _write(tmp_path / "nginx.conf", 'events {}\nhttp { include "a\x00b.conf"; }\n')
    line = refused(capfd, "workload", "--from-conf", str(conf))
    assert 'nginx.conf:2: "include" of a name with a NUL byte' in line, line


def test_a_certificate_name_with_a_nul_byte_keeps_the_runs_key(tmp_path):
    conf = _write(
        tmp_path / "nginx.conf",
        'events {}\nhttp { server { listen 443 ssl; ssl_certificate "/tmp/a\x00.pem";\n'
        "ssl_certificate_key /tmp/k; location / { return 200; } } }\n",
    )
    key = read_user_conf(str(conf)).key
    assert key.name == "" and "a file name with a NUL byte" in key.note, key
