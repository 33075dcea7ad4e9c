"""``--prices FILE``: the user's own prices over the catalog's, and its bad inputs."""

import pytest

from sizing.catalog.load import select_instances
from sizing.catalog.prices import apply_prices
from sizing.cli.main import main
from sizing.errors import InputError

HEAD = "provider,region,instance_type,pricing,usd_per_hour,source\n"


def test_a_price_replaces_the_catalogs_and_says_where_it_comes_from(tmp_path):
    p = tmp_path / "mine.csv"
    p.write_text(HEAD + "aws,us-east-1,c7g.2xlarge,on-demand,0.05,EDP quote 2026\n")
    items = {i.key: i for i in apply_prices(select_instances(region="us-east-1"), p)}
    c7g = items["aws", "us-east-1", "c7g.2xlarge"]
    assert c7g.price_usd_hour == 0.05 and "EDP quote 2026" in c7g.source
    assert items["aws", "us-east-1", "c7g.xlarge"].price_usd_hour != 0.05


def test_the_answer_uses_the_users_price(tmp_path, capsys):
    p = tmp_path / "mine.csv"
    p.write_text(HEAD + "aws,us-east-1,c7g.2xlarge,on-demand,0.05,EDP quote 2026\n")
    assert main(["recommend", "--rps", "1e6", "--prices", str(p)]) == 0
    assert "c7g.2xlarge (aws us-east-1, on-demand)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("provider,region,instance_type,pricing,usd_per_hour,colour\n", "unknown column"),
        (HEAD + "aws,us-east-1,c7g.large,on-demand,-1,\n", "positive number"),
        (HEAD + "aws,us-east-1,c7g.large,on-demand,cheap,\n", "positive number"),
        (HEAD + "aws,us-east-1,c7g.large,lease,0.1,\n", "pricing 'lease'"),
        (HEAD + "aws,us-east-1,c7g.large,spot,0.1,\n" * 2, ":3: .*given twice"),
        (HEAD + "aws,us-east-1,c7g.lrge,on-demand,0.1,\n", "c7g.lrge is not in the catalog"),
    ],
)
def test_a_bad_price_file_is_one_line_naming_it(tmp_path, capsys, body, problem):
    p = tmp_path / "mine.csv"
    p.write_text(body)
    with pytest.raises(InputError, match=problem):
        apply_prices(select_instances(region="us-east-1"), p)
    assert main(["recommend", "--rps", "1e6", "--prices", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") <= 1 and "mine.csv" in err
