"""The percentile bootstrap's resample count and seed, shared by `compare` and `interleave`."""

from __future__ import annotations

#: Resamples of every percentile bootstrap interval the runners print (`compare`'s ratio of
#: means, `interleave`'s median ratio). A bound at the 2.5% point is an order statistic of the
#: resamples; the fraction of the bootstrap distribution below it varies from seed to seed with
#: a standard deviation of sqrt(0.025 * 0.975 / B), 0.0025 at B = 4000: a tenth of the tail, so
#: a 95% interval's coverage varies by about 0.35 percentage points (both tails), and a verdict
#: at the bound rarely flips with the seed. 2000 would double that variance; the cost of 4000
#: is some tens of milliseconds for the tens of trials or pairs one comparison holds.
BOOTSTRAP_RESAMPLES = 4000
#: Seed of the bootstrap's random draws: the same trials always give the same interval.
BOOTSTRAP_SEED = 20261124
