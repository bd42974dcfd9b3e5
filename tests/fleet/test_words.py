"""fleet.words: money and numbers in words, one set of formatters (issue 22)."""

from __future__ import annotations

import math

import pytest

from fleet.words import amount_span, figure, precise, rate_usd, usd, usd_span


def test_money() -> None:
    assert usd(196224.0) == "$196,224" and usd(None) == "unpriced"
    assert usd(None, unpriced="-") == "-"
    assert usd(4.2, cents_below=10) == "$4.20" and usd(42.0, cents_below=10) == "$42"
    assert usd(100.0, sign=True) == "+$100" and usd(-2500.4, sign=True) == "-$2,500"
    assert rate_usd(0.1) == "$0.10"


@pytest.mark.parametrize(("low", "high", "plain", "estimate", "amount"), [
    (0.0, 3284.2, "$0..$3,284", "~$0..$3,284", "0..3,284"),
    (73.0, 73.4, "$73", "~$73", "73"),
    (None, 5.0, "unpriced", "unpriced", "unpriced"),
])
def test_spans_carry_one_tilde_in_front_of_an_estimate(
        low: float | None, high: float | None, plain: str, estimate: str, amount: str) -> None:
    assert usd_span(low, high) == plain
    assert usd_span(low, high, estimate=True) == estimate
    assert amount_span(low, high) == amount


def test_figures() -> None:
    assert [figure(v) for v in (None, 801.24, 1234.5, 0.001, 0.0, math.inf)] == [
        "-", "801", "1,234", "1.0e-03", "0", "inf"]
    assert [precise(v) for v in (None, 642.17, 12345.0)] == ["-", "642.2", "1.234e+04"]


def test_every_team_cost_is_an_estimate_with_its_tilde() -> None:
    """`fleet validate` printed `team vision: $11,243..$14,528/month` where `plan` printed
    `~$...`: the same estimate, one of them without its `~`."""
    from cli._costs import control_plane_words, team_words
    team = {"min_monthly_usd": 11243.0, "max_monthly_usd": 14528.0,
            "monthly_budget_usd": 150000.0, "unpriced": []}
    assert team_words(team) == "~$11,243..$14,528/month, budget $150,000"
    plane = {"cluster": "eks", "kubernetes_version": "1.35", "support": "standard",
             "support_ends": "2027-03-27", "usd_per_hour": 0.1, "monthly_usd": 73.0}
    assert control_plane_words(plane) == ("control plane eks: EKS 1.35, standard support until "
                                          "2027-03-27, $0.10/hour, ~$73/month (platform)")
