"""stats.py: small statistics helpers for lists of numbers."""


def mean(xs):
    """The arithmetic mean of a non-empty list of numbers."""
    if not xs:
        raise ValueError("mean() of an empty list")
    return sum(xs) / len(xs)
