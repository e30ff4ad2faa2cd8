"""Shared by the perf harnesses: sizing a parameter space to a given number of workpackages."""

from __future__ import annotations


def factors(n: int) -> tuple[int, int, int]:
    """Three sizes whose product is n, as close to a cube as divisors allow."""
    best = (n, 1, 1)
    for a in range(1, n + 1):
        if n % a:
            continue
        for b in range(1, n // a + 1):
            if (n // a) % b == 0 and max(a, b, n // a // b) < max(best):
                best = (a, b, n // a // b)
    return best
