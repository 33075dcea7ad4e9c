"""The words of a fleet question that several modules check, each declared once.

Lowest layer: imports nothing of the package, so the flags (`sizing.request`), the catalog
and the fleet read the same tuples.
"""

#: Pricing models (`sizing.catalog.load.PRICING_COLUMNS` holds each one's price column).
PRICINGS = ("on-demand", "spot", "1y", "3y")
#: Which bandwidth an instance is held to: the sustained baseline or the "up to" burst.
NETWORKS = ("baseline", "burst")
#: Where clients are: on the internet (egress priced) or in the same VPC.
CLIENTS = ("internet", "vpc")
#: How options are ranked: by cost at the confidence, by the point estimate's cost, or by the
#: point estimate's grams of CO2e per request (`sizing.model.carbon`).
SORTS = ("cost-at-confidence", "cost", "carbon")
