import math

import pytest

from trialtable.features import FEATURE_NAMES, FEATURES, check_features


def test_names_are_unique_and_ordered():
    assert len(set(FEATURE_NAMES)) == len(FEATURES)
    assert check_features({"lua_log": 1, "access_log": 0.5}) == {"access_log": 0.5, "lua_log": 1.0}


def test_zero_counts_are_left_out():
    assert check_features({"limit_req": 0}) == {}


@pytest.mark.parametrize(
    ("features", "message"),
    [
        ({"ssl": 1}, "unknown feature 'ssl'"),
        ({"access_log": -1}, "outside [0, 100]"),
        ({"access_log": math.nan}, "outside [0, 100]"),
        ({"access_log": math.inf}, "outside [0, 100]"),
    ],
)
def test_bad_features_are_one_line(features, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")) as err:
        check_features(features)
    assert "\n" not in str(err.value)
