"""``catalog update --provider azure``: the Azure Retail Prices API, paged, on 127.0.0.1."""

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sizing.catalog import retail
from sizing.catalog.load import read_catalog
from sizing.cli.main import main
from sizing.errors import InputError

DATA = Path(__file__).parent / "data/retail"
PAGE1 = (DATA / "azure-westeurope-page1.json").read_bytes()
PAGE2 = (DATA / "azure-westeurope-page2.json").read_bytes()
UPDATE = ["catalog", "update", "--provider", "azure", "--region", "westeurope"]


class _Pages(http.server.BaseHTTPRequestHandler):
    """Page 1 (its next link moved to this server), page 2 on ``$skip``; or a bad answer."""

    bad = ""

    def do_GET(self) -> None:
        host = f"http://127.0.0.1:{self.server.server_address[1]}"
        body = PAGE1.replace(b"https://prices.azure.com:443", host.encode())
        kind, length = "application/json", None
        if "skip" in self.path:
            body = PAGE2
            if self.bad == "html":
                body, kind = b"<!DOCTYPE html><html><body>Sign in</body></html>", "text/html"
            elif self.bad == "cut":
                length, body = len(body), body[: len(body) // 2]
        elif self.bad == "elsewhere":
            body = PAGE1
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(length or len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        del args


@pytest.fixture
def api(request) -> Iterator[str]:
    """The first page's URL on a local server (``request.param``: how it answers badly)."""
    handler = type("Pages", (_Pages,), {"bad": getattr(request, "param", "")})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/retail/prices?$filter=x"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_pages_are_followed_and_only_linux_consumption_kept(api):
    prices, date = retail.read_retail(api, "westeurope")
    assert prices["on-demand"] == {
        "Standard_D2as_v5": 0.104,
        "Standard_D4ps_v5": 0.184,
        "Standard_F2s_v2": 0.097,
        "Standard_ZZ9_v9": 0.5,
    }
    assert prices["spot"] == {"Standard_D2as_v5": 0.0208}
    assert date == "2024-09-01"


def test_the_region_url_filters_virtual_machine_consumption():
    url = retail.region_url("westeurope")
    assert url.startswith("https://prices.azure.com/api/retail/prices?$filter=")
    assert "armRegionName+eq+'westeurope'" in url and "priceType+eq+'Consumption'" in url


def test_catalog_update_azure_writes_a_checked_catalog(api, tmp_path, capsys):
    out = tmp_path / "azure-westeurope.csv"
    assert main([*UPDATE, "--offer", api, "--out", str(out)]) == 0
    rows = {i.instance_type: i for i in read_catalog(out)}
    assert set(rows) == {"Standard_D2as_v5", "Standard_D4ps_v5", "Standard_F2s_v2"}
    d2 = rows["Standard_D2as_v5"]
    assert (d2.provider, d2.region, d2.vcpus) == ("azure", "westeurope", 2)
    assert d2.price_usd_hour == pytest.approx(0.104)
    assert d2.spot_usd_hour == pytest.approx(0.0208)
    assert rows["Standard_F2s_v2"].spot_usd_hour is None
    assert "Azure Retail Prices API" in d2.source and "(shape)" in d2.source
    assert "Standard_ZZ9_v9" in (tmp_path / "azure-westeurope.excluded.csv").read_text()


def test_a_saved_whole_answer_is_read_and_a_saved_first_page_refused(tmp_path):
    page = json.loads(PAGE1)
    page["Items"] += json.loads(PAGE2)["Items"]
    first_only = tmp_path / "first.json"
    first_only.write_text(json.dumps(page))
    with pytest.raises(InputError, match="a saved first page only"):
        retail.read_retail(str(first_only), "westeurope")
    page["NextPageLink"] = None
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(page))
    prices, _ = retail.read_retail(str(whole), "westeurope")
    assert len(prices["on-demand"]) == 4


@pytest.mark.parametrize(
    ("api", "problem"),
    [
        ("html", "not JSON"),
        ("cut", "cut off"),
        ("elsewhere", "NextPageLink leaves 127.0.0.1"),
    ],
    indirect=["api"],
)
def test_a_bad_answer_is_one_line_and_the_old_catalog_stays(api, problem, tmp_path, capsys):
    out = tmp_path / "azure-westeurope.csv"
    out.write_text("the previous catalog\n")
    assert main([*UPDATE, "--offer", api, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert problem in err and "\n" not in err and "Traceback" not in err
    assert out.read_text() == "the previous catalog\n"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<html><body>Access denied</body></html>", "an HTML page"),
        ('{"Items": [', "not complete JSON"),
        ('{"Count": 0}', "no Items list"),
        ('{"Items": [], "NextPageLink": null}', "no Linux on-demand price"),
        ("negative", "bad retailPrice"),
        ("twice", "two on-demand prices"),
    ],
)
def test_a_bad_file_is_one_line_and_the_old_catalog_stays(text, problem, tmp_path):
    page = json.loads(PAGE2)
    if text == "negative":
        page["Items"][0]["retailPrice"] = -1
    elif text == "twice":
        page["Items"][1].update(isPrimaryMeterRegion=True, retailPrice=0.2)
    bad = tmp_path / "answer.json"
    bad.write_text(json.dumps(page) if text in ("negative", "twice") else text)
    out = tmp_path / "azure-westeurope.csv"
    out.write_text("the previous catalog\n")
    with pytest.raises(InputError, match=problem):
        retail.read_retail(str(bad), "westeurope")
    assert main([*UPDATE, "--offer", str(bad), "--out", str(out)]) == 2
    assert out.read_text() == "the previous catalog\n"


def test_a_region_not_named_as_azure_names_it_is_refused(capsys):
    assert main(["catalog", "update", "--provider", "azure", "--region", "West Europe"]) == 2
    assert "as Azure names it" in capsys.readouterr().err


def test_a_size_listed_again_is_one_row_by_the_stated_rule(tmp_path):
    """Another meter or product name at the same price, a free meter, the dropped kinds."""
    page = json.loads(PAGE2)
    first = next(i for i in page["Items"] if i["meterName"] == "F2s v2")
    again = {**first, "meterId": "00000000-0000-0000-0000-0000000000aa"}
    renamed = {**first, "productName": "Virtual Machines FSv2 Series Linux", "meterId": "ab"}
    free = {**first, "retailPrice": 0.0, "unitPrice": 0.0, "meterId": "ac"}
    low = {**first, "meterName": "F2s v2 Low Priority", "retailPrice": 0.02}
    windows = {**first, "productName": "Virtual Machines FSv2 Series Windows", "retailPrice": 0.2}
    devtest = {**first, "type": "DevTestConsumption", "retailPrice": 0.05}
    page["Items"] += [again, renamed, free, low, windows, devtest]
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(page))
    prices, _ = retail.read_retail(str(answer), "westeurope")
    assert prices["on-demand"]["Standard_F2s_v2"] == first["retailPrice"]
    page["Items"].append({**first, "meterId": "ad", "retailPrice": 0.1})
    answer.write_text(json.dumps(page))
    with pytest.raises(InputError, match="Standard_F2s_v2 has two on-demand prices"):
        retail.read_retail(str(answer), "westeurope")
