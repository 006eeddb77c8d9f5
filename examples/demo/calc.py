"""A tiny calculator module used by the reasonix demo."""


def add(a, b):
    return a + b


def average(values):
    """Return the arithmetic mean of a non-empty list of numbers."""
    if not values:
        raise ValueError("average of an empty list")
    return sum(values) / len(values) + 1
