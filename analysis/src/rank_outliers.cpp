#include "memtrail/analysis/rank_outliers.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace memtrail::analysis {

namespace {

// The lower median: the value at (n - 1) / 2 of the sorted values, so it is some rank's value.
uint64_t lower_median(std::vector<uint64_t> values) {
    if (values.empty()) {
        return 0;
    }
    const size_t middle = (values.size() - 1) / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle),
                     values.end());
    return values[middle];
}

uint64_t distance_between(uint64_t a, uint64_t b) {
    return a > b ? a - b : b - a;
}

// With two ranks either could be the odd one: the center is the median rank's own value (the
// rank with the lower peak reserved), so the other rank carries the whole difference.
rank_measure measure_of(std::string name, std::vector<uint64_t> values, size_t median_member) {
    rank_measure m{std::move(name), std::move(values), 0, 0};
    m.median = m.values.size() == 2 ? m.values[median_member] : lower_median(m.values);
    std::vector<uint64_t> deviations;
    deviations.reserve(m.values.size());
    for (const uint64_t v : m.values) {
        deviations.push_back(distance_between(v, m.median));
    }
    const double mad = 1.4826 * static_cast<double>(lower_median(std::move(deviations)));
    const double least =
        std::max(least_deviation_share * static_cast<double>(m.median), double(1ull << 20));
    m.deviation = static_cast<uint64_t>(std::max(mad, least));
    return m;
}

std::vector<rank_measure> measures_of(const std::vector<rank_summary>& summaries,
                                      const summary_job& job, size_t median_member) {
    const auto values = [&](auto&& value_of) {
        std::vector<uint64_t> out;
        for (const size_t m : job.members) {
            out.push_back(value_of(summaries[m]));
        }
        return out;
    };
    std::vector<rank_measure> measures;
    measures.push_back(measure_of(
        "peak reserved", values([](const rank_summary& s) { return s.peak_reserved.bytes; }),
        median_member));
    measures.push_back(measure_of(
        "peak allocated", values([](const rank_summary& s) { return s.peak_allocated.bytes; }),
        median_member));
    for (size_t c = 0; c < memory_category_count; ++c) {
        measures.push_back(measure_of(
            std::string(category_name(memory_category(c))) + " at peak",
            values([c](const rank_summary& s) { return s.categories_at_peak[c]; }), median_member));
    }
    return measures;
}

std::vector<rank_standing> standings_of(const std::vector<rank_measure>& measures, size_t members) {
    std::vector<rank_standing> out(members);
    for (size_t m = 0; m < measures.size(); ++m) {
        const rank_measure& measure = measures[m];
        for (size_t i = 0; i < members; ++i) {
            const double d =
                static_cast<double>(distance_between(measure.values[i], measure.median)) /
                static_cast<double>(measure.deviation);
            if (d > out[i].distance) {
                out[i] = {d, m};
            }
        }
    }
    return out;
}

std::vector<same_sequence> sequences_of(const std::vector<rank_summary>& summaries,
                                        const summary_job& job) {
    std::map<uint64_t, size_t> index_of_hash;
    std::vector<same_sequence> out;
    for (size_t i = 0; i < job.members.size(); ++i) {
        const uint64_t hash = summaries[job.members[i]].sequence_hash;
        const auto [it, added] = index_of_hash.try_emplace(hash, out.size());
        if (added) {
            out.push_back({hash, {}});
        }
        out[it->second].ranks.push_back(job.ranks[i]);
    }
    std::stable_sort(out.begin(), out.end(), [](const same_sequence& a, const same_sequence& b) {
        return a.ranks.size() > b.ranks.size();
    });
    return out;
}

sequence_departure departure_of(const rank_summary& common, const rank_summary& other, int rank) {
    sequence_departure d;
    d.rank = rank;
    d.by_step = other.step_source != "none" && common.step_source != "none";
    const size_t shared = std::min(common.sequence.size(), other.sequence.size());
    size_t chunk = 0;
    while (chunk < shared && common.sequence[chunk].hash == other.sequence[chunk].hash &&
           common.sequence[chunk].first_entry == other.sequence[chunk].first_entry) {
        ++chunk;
    }
    const std::vector<sequence_chunk>& at =
        chunk < other.sequence.size() ? other.sequence : common.sequence;
    if (chunk < at.size()) {
        d.step = at[chunk].first_step;
        d.first_entry = at[chunk].first_entry;
    } else {
        d.first_entry = std::min(common.entries, other.entries);
    }
    return d;
}

std::vector<stack_difference> stacks_changed(const rank_summary& median, const rank_summary& rank) {
    std::map<uint64_t, stack_difference> by_hash;
    for (const summary_stack& s : median.top_stacks) {
        stack_difference& d = by_hash[s.hash];
        d.hash = s.hash;
        d.frames = s.frames;
        d.category = s.category;
        d.median_bytes += s.bytes;
    }
    for (const summary_stack& s : rank.top_stacks) {
        stack_difference& d = by_hash[s.hash];
        if (d.frames.empty()) {
            d.hash = s.hash;
            d.frames = s.frames;
        }
        d.category = s.category;  // where it is in the outlier
        d.rank_bytes += s.bytes;
    }
    std::vector<stack_difference> out;
    for (auto& [hash, d] : by_hash) {
        if (!about_equal(d.median_bytes, d.rank_bytes)) {
            out.push_back(std::move(d));
        }
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return std::llabs(a.change()) > std::llabs(b.change());
    });
    out.resize(std::min(out.size(), explained_stack_count));
    return out;
}

// The member compared with `member`: the median rank, or the next by peak reserved when the
// outlier is the median rank itself.
size_t reference_for(const std::vector<rank_summary>& summaries, const summary_job& job,
                     size_t median, size_t member) {
    if (median != member || job.members.size() < 2) {
        return median;
    }
    size_t best = member == 0 ? 1 : 0;
    const uint64_t own = summaries[job.members[member]].peak_reserved.bytes;
    for (size_t i = 0; i < job.members.size(); ++i) {
        const uint64_t d = distance_between(summaries[job.members[i]].peak_reserved.bytes, own);
        if (i != member &&
            d < distance_between(summaries[job.members[best]].peak_reserved.bytes, own)) {
            best = i;
        }
    }
    return best;
}

outlier_explanation explain(const std::vector<rank_summary>& summaries, const summary_job& job,
                            size_t reference, size_t member) {
    const rank_summary& median = summaries[job.members[reference]];
    const rank_summary& rank = summaries[job.members[member]];
    outlier_explanation e;
    e.member = member;
    e.median_member = reference;
    for (size_t c = 0; c < memory_category_count; ++c) {
        e.categories.push_back(
            {memory_category(c), {median.categories_at_peak[c], rank.categories_at_peak[c]}});
    }
    e.categories_text = category_changes_text(e.categories, 0, 1);
    e.stacks = stacks_changed(median, rank);
    return e;
}

job_ranking rank_job(const std::vector<rank_summary>& summaries, summary_job job) {
    job_ranking out;
    std::vector<uint64_t> reserved;
    for (const size_t m : job.members) {
        reserved.push_back(summaries[m].peak_reserved.bytes);
    }
    const size_t highest = static_cast<size_t>(
        std::distance(reserved.begin(), std::max_element(reserved.begin(), reserved.end())));
    out.median_member = median_rank(reserved, highest);
    out.measures = measures_of(summaries, job, out.median_member);
    out.standings = standings_of(out.measures, job.members.size());
    out.by_distance.resize(job.members.size());
    std::iota(out.by_distance.begin(), out.by_distance.end(), size_t{0});
    std::stable_sort(out.by_distance.begin(), out.by_distance.end(), [&](size_t a, size_t b) {
        return out.standings[a].distance > out.standings[b].distance;
    });
    out.sequences = sequences_of(summaries, job);
    if (out.sequences.size() > 1) {
        const uint64_t common_hash = out.sequences.front().sequence_hash;
        const auto common = std::find_if(job.members.begin(), job.members.end(), [&](size_t m) {
            return summaries[m].sequence_hash == common_hash;
        });
        for (size_t i = 0; i < job.members.size(); ++i) {
            if (summaries[job.members[i]].sequence_hash != common_hash) {
                out.departures.push_back(
                    departure_of(summaries[*common], summaries[job.members[i]], job.ranks[i]));
            }
        }
    }
    for (const size_t member : out.by_distance) {
        if (out.standings[member].distance <= outlier_cut || job.members.size() < 2) {
            break;
        }
        const size_t reference = reference_for(summaries, job, out.median_member, member);
        out.outliers.push_back(explain(summaries, job, reference, member));
    }
    out.job = std::move(job);
    return out;
}

}  // namespace

ranks_analysis analyze_ranks(const std::vector<rank_summary>& summaries) {
    ranks_analysis out;
    for (summary_job& job : group_summaries(summaries)) {
        out.jobs.push_back(rank_job(summaries, std::move(job)));
    }
    return out;
}

std::string rank_ranges(const std::vector<int>& ranks) {
    std::vector<std::string> ranges;
    for (size_t i = 0; i < ranks.size();) {
        size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) {
            ++j;
        }
        ranges.push_back(std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : ""));
        i = j + 1;
    }
    std::string text;
    for (size_t r = 0; r < ranges.size(); ++r) {
        text += (r == 0 ? "" : r + 1 == ranges.size() ? " and " : ", ") + ranges[r];
    }
    return text;
}

}  // namespace memtrail::analysis
