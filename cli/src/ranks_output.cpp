// The table `memtrail ranks` prints: per job, the ranks (farthest from the median first past
// listed_ranks), the highest peaks, which ranks did the same, and each outlier explained.

#include "detail/ranks_output.hpp"

#include <algorithm>
#include <cstdio>

#include "detail/common.hpp"
#include "detail/peak_report.hpp"
#include "detail/text_table.hpp"
#include "memtrail/analysis/rank_jobs.hpp"
#include "memtrail/analysis/size_text.hpp"

namespace memtrail::cli {

namespace {

using analysis::format_bytes;
using analysis::job_ranking;
using analysis::rank_summary;

const rank_summary& member(const std::vector<rank_summary>& summaries, const job_ranking& job,
                           size_t i) {
    return summaries[job.job.members[i]];
}

std::string name_of(const rank_summary& s) {
    return analysis::file_name_of(s.path);
}

std::string distance_text(double distance) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", distance);
    return text;
}

std::string step_text(const rank_summary& s, const analysis::summary_peak& peak) {
    std::string text = position_label(peak.position);
    if (s.step_source != "none") {
        text += ", step " + std::to_string(peak.step);
    }
    return text;
}

void print_rows(std::ostream& out, const job_ranking& job,
                const std::vector<rank_summary>& summaries) {
    text_table table({"rank", "<file", "<device", "peak allocated", "<when", "peak reserved",
                      "<when", "end allocated", "end reserved", "allocs", "segment allocs", "OOMs",
                      "distance"});
    std::vector<size_t> shown;
    const size_t count = job.job.members.size();
    if (count <= listed_ranks) {
        for (size_t i = 0; i < count; ++i) {
            shown.push_back(i);
        }
    } else {
        shown.assign(job.by_distance.begin(), job.by_distance.begin() + listed_ranks);
    }
    for (const size_t i : shown) {
        const rank_summary& s = member(summaries, job, i);
        table.add_row({std::to_string(job.job.ranks[i]), name_of(s),
                       std::to_string(s.identity.device), format_bytes(s.peak_allocated.bytes),
                       peak_when(s, s.peak_allocated), format_bytes(s.peak_reserved.bytes),
                       peak_when(s, s.peak_reserved), format_bytes(s.end_allocated),
                       format_bytes(s.end_reserved), std::to_string(s.allocations),
                       std::to_string(s.device_allocations), std::to_string(s.oom_count),
                       distance_text(job.standings[i].distance)});
    }
    if (count > 1) {
        const analysis::rank_totals total = job_totals_of(job, summaries);
        table.add_row({"total", std::to_string(count) + " ranks", "",
                       format_bytes(total.peak_allocated), "", format_bytes(total.peak_reserved),
                       "", format_bytes(total.end_allocated), format_bytes(total.end_reserved),
                       std::to_string(total.allocations), std::to_string(total.device_allocations),
                       std::to_string(total.ooms), ""});
    }
    table.print(out);
    if (count > shown.size()) {
        const size_t last = job.by_distance[listed_ranks];
        out << "... " << count - shown.size() << " more ranks, each within "
            << distance_text(job.standings[last].distance) << " of the median\n";
    }
}

void print_peaks(std::ostream& out, const job_ranking& job,
                 const std::vector<rank_summary>& summaries) {
    const size_t count = job.job.members.size();
    const size_t highest = highest_reserved_member(job, summaries);
    size_t most = 0;
    for (size_t i = 1; i < count; ++i) {
        if (member(summaries, job, i).peak_allocated.bytes >
            member(summaries, job, most).peak_allocated.bytes) {
            most = i;
        }
    }
    const rank_summary& best = member(summaries, job, highest);
    bool alike = true;
    for (size_t i = 0; i < count; ++i) {
        alike = alike && member(summaries, job, i).peak_reserved.bytes == best.peak_reserved.bytes;
    }
    if (alike && count > 1) {
        out << "\nevery rank peaks at " << format_bytes(best.peak_reserved.bytes) << " reserved\n";
    } else {
        out << "\nrank " << job.job.ranks[highest] << " (" << name_of(best)
            << ") peaks highest: " << format_bytes(best.peak_reserved.bytes) << " reserved at "
            << peak_when(best, best.peak_reserved) << "\n";
    }
    const rank_summary& largest = member(summaries, job, most);
    if (largest.peak_allocated.bytes > best.peak_allocated.bytes) {
        out << "rank " << job.job.ranks[most] << " (" << name_of(largest)
            << ") has the largest allocated peak: " << format_bytes(largest.peak_allocated.bytes)
            << " at " << peak_when(largest, largest.peak_allocated) << "\n";
    }
}

std::string departure_text(const analysis::sequence_departure& d) {
    return "rank " + std::to_string(d.rank) + " differs from " +
           (d.by_step ? "step " + std::to_string(d.step) + " (entry " +
                            std::to_string(d.first_entry) + ")"
                      : "entry " + std::to_string(d.first_entry));
}

void print_sequences(std::ostream& out, const job_ranking& job) {
    constexpr size_t shown = 5;
    if (job.job.members.size() < 2) {
        return;
    }
    if (job.sequences.size() == 1) {
        out << "every rank did the same: one sequence of allocations (actions and sizes)\n";
        return;
    }
    std::string text;
    for (size_t g = 0; g < std::min(shown, job.sequences.size()); ++g) {
        const auto& group = job.sequences[g];
        if (group.ranks.size() < 2) {
            continue;
        }
        text += (text.empty() ? "" : "; ") + std::string("ranks ") +
                analysis::rank_ranges(group.ranks) + " did the same";
    }
    out << (text.empty() ? "no two ranks did the same" : text);
    for (size_t d = 0; d < std::min(shown, job.departures.size()); ++d) {
        out << "; " << departure_text(job.departures[d]);
    }
    if (job.departures.size() > shown) {
        out << "; ... " << job.departures.size() - shown << " more ranks differ";
    }
    out << " (from the most common sequence, of rank " << job.sequences.front().ranks.front()
        << ")\n";
}

// "forward (train.py:27) <- main (train.py:80)": the innermost frame and the user's, short.
std::string stack_label(const std::vector<std::string>& frames) {
    if (frames.empty()) {
        return "[no frames]";
    }
    std::string label = short_frame_label(frames.front());
    for (size_t i = 1; i < frames.size(); ++i) {
        if (!frames[i].starts_with("... ")) {
            return label + " <- " + short_frame_label(frames[i]);
        }
    }
    return label;
}

void print_outlier(std::ostream& out, const job_ranking& job,
                   const std::vector<rank_summary>& summaries,
                   const analysis::outlier_explanation& e) {
    const rank_summary& median = member(summaries, job, e.median_member);
    const rank_summary& rank = member(summaries, job, e.member);
    const int median_rank = job.job.ranks[e.median_member];
    const int outlier_rank = job.job.ranks[e.member];
    const auto& standing = job.standings[e.member];
    out << "\nrank " << outlier_rank << " against rank " << median_rank << " ("
        << (e.median_member == job.median_member
                ? analysis::median_rank_meaning(job.job.members.size())
                : std::string("the rank nearest it, as it is the median rank"))
        << "): " << distance_text(standing.distance) << " robust deviations on "
        << job.measures[standing.measure].name << "; each at its own peak allocated ("
        << format_bytes(rank.peak_allocated.bytes) << " at " << step_text(rank, rank.peak_allocated)
        << ", " << format_bytes(median.peak_allocated.bytes) << " at "
        << step_text(median, median.peak_allocated) << "):\n";
    text_table table({"<", "<", "rank " + std::to_string(median_rank),
                      "rank " + std::to_string(outlier_rank), "change", "<in"});
    std::vector<const analysis::category_comparison*> held;
    for (const auto& c : e.categories) {
        if (c.bytes[0] != 0 || c.bytes[1] != 0) {
            held.push_back(&c);
        }
    }
    std::stable_sort(held.begin(), held.end(), [](const auto* a, const auto* b) {
        return std::llabs(a->change(0, 1)) > std::llabs(b->change(0, 1));
    });
    for (const auto* c : held) {
        table.add_row({"category", std::string(analysis::category_name(c->category)),
                       format_bytes(c->bytes[0]), format_bytes(c->bytes[1]),
                       analysis::format_bytes_delta(c->change(0, 1)), ""});
    }
    for (const auto& s : e.stacks) {
        table.add_row({"stack", stack_label(s.frames), format_bytes(s.median_bytes),
                       format_bytes(s.rank_bytes), analysis::format_bytes_delta(s.change()),
                       std::string(analysis::category_name(s.category))});
    }
    if (median.unstacked_at_peak != 0 || rank.unstacked_at_peak != 0) {
        table.add_row({"no stack", "(blocks without a recorded stack)",
                       format_bytes(median.unstacked_at_peak), format_bytes(rank.unstacked_at_peak),
                       analysis::format_bytes_delta(static_cast<int64_t>(rank.unstacked_at_peak) -
                                                    static_cast<int64_t>(median.unstacked_at_peak)),
                       ""});
    }
    table.print(out, "  ");
    out << "rank " << outlier_rank << ": " << e.categories_text << "\n";
}

void print_outliers(std::ostream& out, const job_ranking& job,
                    const std::vector<rank_summary>& summaries) {
    if (job.job.members.size() < 2) {
        return;
    }
    if (job.outliers.empty()) {
        const size_t farthest = job.by_distance.front();
        out << "no outlier: every rank stands within " << distance_text(analysis::outlier_cut)
            << " robust deviations of the median (farthest: rank " << job.job.ranks[farthest]
            << ", " << distance_text(job.standings[farthest].distance) << " on "
            << job.measures[job.standings[farthest].measure].name << ")\n";
        return;
    }
    std::string names;
    for (const auto& e : job.outliers) {
        names += (names.empty() ? "" : ", ") + std::to_string(job.job.ranks[e.member]);
    }
    out << job.outliers.size() << (job.outliers.size() == 1 ? " outlier" : " outliers")
        << " (more than " << distance_text(analysis::outlier_cut)
        << " robust deviations from the median): rank" << (job.outliers.size() == 1 ? " " : "s ")
        << names << "\n";
    for (size_t i = 0; i < std::min(explained_outliers, job.outliers.size()); ++i) {
        print_outlier(out, job, summaries, job.outliers[i]);
    }
    if (job.outliers.size() > explained_outliers) {
        out << "\n... " << job.outliers.size() - explained_outliers
            << " more outliers explained in --json\n";
    }
}

// "ddp__rank0.pickle, ddp__rank1.pickle", at most a few names.
std::string file_names(const job_ranking& job, const std::vector<rank_summary>& summaries) {
    constexpr size_t named = 4;
    std::string names;
    for (size_t i = 0; i < std::min(named, job.job.members.size()); ++i) {
        names += (names.empty() ? "" : ", ") + name_of(member(summaries, job, i));
    }
    if (job.job.members.size() > named) {
        names += " and " + std::to_string(job.job.members.size() - named) + " more";
    }
    return names;
}

}  // namespace

analysis::rank_totals job_totals_of(const job_ranking& job,
                                    const std::vector<rank_summary>& summaries) {
    analysis::rank_totals total;
    for (size_t i = 0; i < job.job.members.size(); ++i) {
        analysis::add_to(total, member(summaries, job, i));
    }
    return total;
}

size_t highest_reserved_member(const job_ranking& job, const std::vector<rank_summary>& summaries) {
    size_t highest = 0;
    for (size_t i = 1; i < job.job.members.size(); ++i) {
        if (member(summaries, job, i).peak_reserved.bytes >
            member(summaries, job, highest).peak_reserved.bytes) {
            highest = i;
        }
    }
    return highest;
}

std::string peak_when(const rank_summary& s, const analysis::summary_peak& peak) {
    std::string text = position_label(peak.position);
    if (s.entries > 0 && s.identity.first_time_ns != 0 && peak.time_ns != 0) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, ", +%.3fs",
                      static_cast<double>(peak.time_ns - s.identity.first_time_ns) / 1e9);
        text += seconds;
    }
    return text;
}

std::vector<std::string> job_warnings(const analysis::ranks_analysis& ranks,
                                      const std::vector<rank_summary>& summaries) {
    std::vector<std::string> warnings;
    for (size_t j = 1; j < ranks.jobs.size(); ++j) {
        const job_ranking& job = ranks.jobs[j];
        warnings.push_back(file_names(job, summaries) +
                           (job.job.members.size() == 1 ? " is not a rank" : " are not ranks") +
                           " of the job of " + file_names(ranks.jobs.front(), summaries) + ": " +
                           job.job.why_not_first + "; reported apart, as job " +
                           std::to_string(j + 1) + " (" + job.job.name + ")");
    }
    return warnings;
}

void print_ranks_text(std::ostream& out, const analysis::ranks_analysis& ranks,
                      const std::vector<rank_summary>& summaries) {
    for (size_t j = 0; j < ranks.jobs.size(); ++j) {
        const job_ranking& job = ranks.jobs[j];
        if (ranks.jobs.size() > 1) {
            out << (j == 0 ? "" : "\n") << "job " << j + 1 << " of " << ranks.jobs.size() << ": "
                << job.job.name << ", " << job.job.members.size()
                << (job.job.members.size() == 1 ? " rank\n" : " ranks\n");
        }
        print_rows(out, job, summaries);
        print_peaks(out, job, summaries);
        print_sequences(out, job);
        print_outliers(out, job, summaries);
    }
}

}  // namespace memtrail::cli
