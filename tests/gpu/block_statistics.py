"""Recording's (or attaching's) cost from blocks of steps on and off inside processes, pooled
over every process: each "on" block's median step against the "off" blocks beside it is one
ratio; the cost is the median of all ratios, with a 95% bootstrap interval over the blocks.

One process gives 8 to 15 such ratios; inside one H200 process, step times wander between 38 and
58 ms (docs/performance-log/29-noise-and-costs.md), so the median of each process's median moves by several
percent, while the pooled median of 50 or more ratios, resampled, says how far it can be trusted.
"""
import random
import statistics

RESAMPLES = 2000


def pooled(ratio_lists):
    """{median_pct, low_pct, high_pct, blocks} over every ratio of every process."""
    ratios = [r for ratios in ratio_lists for r in ratios]
    if not ratios:
        return None
    draw = random.Random(20261128)  # the same interval for the same blocks
    medians = sorted(statistics.median(draw.choices(ratios, k=len(ratios)))
                     for _ in range(RESAMPLES))
    low, high = medians[int(0.025 * RESAMPLES)], medians[int(0.975 * RESAMPLES) - 1]
    return {"median_pct": round(100 * (statistics.median(ratios) - 1), 2),
            "low_pct": round(100 * (low - 1), 2), "high_pct": round(100 * (high - 1), 2),
            "blocks": len(ratios)}


def describe(result):
    return (f"{result['median_pct']:+.2f}% (95% interval {result['low_pct']:+.2f}% to "
            f"{result['high_pct']:+.2f}%, {result['blocks']} blocks pooled)")
