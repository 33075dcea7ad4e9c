"""The percentile bootstrap's resample count and seed, shared by `compare` and `interleave`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads only when a bootstrap runs
    import numpy as np
    from numpy.typing import NDArray

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

#: Most indexes one step of a bootstrap draws at once [1]: 2**20 int64 values, 8 MB. The
#: resamples are drawn in chunks of rows under this bound, in the order one draw of all
#: of them would take (the same numbers for the same seed), so memory stays bounded for
#: any table a reader accepts (60,000 repeats would otherwise need 1.9 GB per side).
CHUNK_VALUES = 1 << 20


def resampled_means(
    rng: np.random.Generator, values: NDArray[np.float64], resamples: int = BOOTSTRAP_RESAMPLES
) -> NDArray[np.float64]:
    """Means of ``resamples`` resamples (with replacement) of ``values``, drawn in chunks.

    Parameters
    ----------
    rng : numpy.random.Generator
        The draws' source (seeded by the caller).
    values : numpy.ndarray
        One-dimensional values, any unit; the means are in the same unit.
    """
    import numpy as np

    n = len(values)
    rows = max(1, CHUNK_VALUES // max(n, 1))
    out = np.empty(resamples, dtype=float)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        out[start:stop] = values[rng.integers(0, n, (stop - start, n))].mean(axis=1)
    return out
