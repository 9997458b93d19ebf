#include "memtrail/viewer/rank_heatmap.hpp"

#include <algorithm>

namespace memtrail::viewer {

namespace {

// The positions a rank's curve spans: its entries and the state before the first.
size_t positions_of(const analysis::rank_summary& s) {
    return s.entries + 1;
}

int level_of(uint64_t bytes, uint64_t largest) {
    if (bytes == 0 || largest == 0) {
        return 0;
    }
    const auto scaled = static_cast<int>(
        (static_cast<double>(bytes) / static_cast<double>(largest)) * (heatmap_levels - 1) + 0.999);
    return std::clamp(scaled, 1, heatmap_levels - 1);
}

}  // namespace

rank_heatmap build_rank_heatmap(const rank_summary_set& set) {
    rank_heatmap out;
    for (const analysis::rank_summary& s : set.summaries) {
        out.longest = std::max(out.longest, positions_of(s));
        for (const analysis::curve_point& p : s.curve) {
            out.largest_allocated = std::max(out.largest_allocated, p.allocated);
        }
    }
    for (size_t j = 0; j < set.ranking.jobs.size(); ++j) {
        const analysis::job_ranking& job = set.ranking.jobs[j];
        heatmap_section section{j, {}};
        const auto row_of = [&](size_t member) {
            return heatmap_row{job.job.members[member], member, job.job.ranks[member],
                               job.standings[member].distance, std::nullopt};
        };
        std::vector<bool> listed(job.job.members.size(), false);
        for (size_t o = 0; o < job.outliers.size(); ++o) {
            heatmap_row row = row_of(job.outliers[o].member);
            row.outlier = o;
            section.rows.push_back(row);
            listed[row.member] = true;
        }
        // The members are in rank order already.
        for (size_t m = 0; m < job.job.members.size(); ++m) {
            if (!listed[m]) {
                section.rows.push_back(row_of(m));
            }
        }
        out.sections.push_back(std::move(section));
    }
    return out;
}

std::vector<heatmap_run> heatmap_row_runs(const analysis::rank_summary& summary,
                                          uint64_t largest_allocated, size_t longest,
                                          size_t columns) {
    std::vector<heatmap_run> runs;
    const std::vector<analysis::curve_point>& curve = summary.curve;
    if (curve.empty() || columns == 0 || longest == 0) {
        return runs;
    }
    const auto column_of = [&](size_t position) {
        return static_cast<uint32_t>(std::min<size_t>(
            columns - 1,
            static_cast<size_t>(static_cast<double>(position) / static_cast<double>(longest) *
                                static_cast<double>(columns))));
    };
    // Each column the most of the buckets it overlaps.
    const uint32_t end_column = column_of(positions_of(summary) - 1) + 1;
    std::vector<uint64_t> most(end_column, 0);
    for (size_t b = 0; b < curve.size(); ++b) {
        const size_t last = b + 1 < curve.size()
                                ? std::max(curve[b + 1].position, curve[b].position + 1) - 1
                                : positions_of(summary) - 1;
        for (uint32_t c = column_of(curve[b].position); c <= column_of(last) && c < end_column;
             ++c) {
            most[c] = std::max(most[c], curve[b].allocated);
        }
    }
    for (uint32_t c = 0; c < end_column; ++c) {
        const int level = level_of(most[c], largest_allocated);
        if (!runs.empty() && runs.back().level == level && runs.back().end_column == c) {
            runs.back().end_column = c + 1;
        } else {
            runs.push_back({c, c + 1, level});
        }
    }
    return runs;
}

std::optional<size_t> curve_point_at(const analysis::rank_summary& summary, size_t position) {
    const std::vector<analysis::curve_point>& curve = summary.curve;
    if (curve.empty() || position >= positions_of(summary) || position < curve.front().position) {
        return std::nullopt;
    }
    const auto after = std::upper_bound(
        curve.begin(), curve.end(), position,
        [](size_t p, const analysis::curve_point& point) { return p < point.position; });
    return static_cast<size_t>(after - curve.begin()) - 1;
}

}  // namespace memtrail::viewer
