// `memtrail ranks --json`: every job with every rank's row and standing, the measures' medians,
// the groups of identical ranks, the departures and every outlier's explanation.

#include <cstdio>

#include "detail/common.hpp"
#include "detail/json_writer.hpp"
#include "detail/ranks_output.hpp"
#include "memtrail/analysis/rank_jobs.hpp"

namespace memtrail::cli {

namespace {

using analysis::job_ranking;
using analysis::rank_summary;

std::string hex(uint64_t value) {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
    return text;
}

void write_peak(json_writer& json, const rank_summary& s, const analysis::summary_peak& p) {
    json.begin_object()
        .field("bytes", p.bytes)
        .field("position", static_cast<uint64_t>(p.position))
        .field("label", position_label(p.position))
        .field("time_ns", p.time_ns)
        .field("since_first_entry_ns",
               s.entries > 0 && p.time_ns != 0 ? p.time_ns - s.identity.first_time_ns : 0)
        .field("step", static_cast<uint64_t>(p.step))
        .field("annotation", p.annotation)
        .end_object();
}

void write_row(json_writer& json, const job_ranking& job, const rank_summary& s, size_t i) {
    json.begin_object()
        .field("rank", job.job.ranks[i])
        .field("path", s.path)
        .field("file", analysis::file_name_of(s.path))
        .field("kind", s.file_kind)
        .field("device", s.identity.device)
        .field("job_id", s.identity.job_id)
        .field("identity_source", analysis::identity_source_name(s.identity.source))
        .field("host", s.identity.host)
        .field("entries", static_cast<uint64_t>(s.entries));
    json.key("peak_allocated");
    write_peak(json, s, s.peak_allocated);
    json.key("peak_reserved");
    write_peak(json, s, s.peak_reserved);
    json.field("end_allocated", s.end_allocated)
        .field("end_reserved", s.end_reserved)
        .field("allocations", s.allocations)
        .field("device_allocations", s.device_allocations)
        .field("ooms", s.oom_count)
        .field("distance", job.standings[i].distance)
        .field("farthest_measure", job.measures[job.standings[i].measure].name)
        .field("sequence_hash", hex(s.sequence_hash))
        .end_object();
}

void write_explanation(json_writer& json, const job_ranking& job,
                       const std::vector<rank_summary>& summaries,
                       const analysis::outlier_explanation& e) {
    const auto& standing = job.standings[e.member];
    json.begin_object()
        .field("rank", job.job.ranks[e.member])
        .field("median_rank", job.job.ranks[e.median_member])
        .field("distance", standing.distance)
        .field("measure", job.measures[standing.measure].name)
        .field("measured_at", "each rank's own peak allocated");
    json.key("categories").begin_array();
    for (const auto& c : e.categories) {
        json.begin_object()
            .field("category", analysis::category_name(c.category))
            .field("bytes_median", c.bytes[0])
            .field("bytes_rank", c.bytes[1])
            .field("change", c.change(0, 1))
            .field("equal", analysis::about_equal(c.bytes[0], c.bytes[1]))
            .end_object();
    }
    json.end_array().key("stacks").begin_array();
    for (const auto& s : e.stacks) {
        json.begin_object()
            .field("hash", hex(s.hash))
            .field("category", analysis::category_name(s.category))
            .field("bytes_median", s.median_bytes)
            .field("bytes_rank", s.rank_bytes)
            .field("change", s.change());
        json.key("frames").begin_array();
        for (const std::string& f : s.frames) {
            json.value(f);
        }
        json.end_array().end_object();
    }
    const rank_summary& median = summaries[job.job.members[e.median_member]];
    const rank_summary& rank = summaries[job.job.members[e.member]];
    json.end_array()
        .key("unstacked")
        .begin_object()
        .field("bytes_median", median.unstacked_at_peak)
        .field("bytes_rank", rank.unstacked_at_peak)
        .end_object()
        .field("summary",
               "rank " + std::to_string(job.job.ranks[e.member]) + ": " + e.categories_text)
        .end_object();
}

void write_sequences(json_writer& json, const job_ranking& job) {
    json.key("sequences").begin_array();
    for (const auto& group : job.sequences) {
        json.begin_object()
            .field("sequence_hash", hex(group.sequence_hash))
            .field("ranks", analysis::rank_ranges(group.ranks))
            .field("count", static_cast<uint64_t>(group.ranks.size()))
            .end_object();
    }
    json.end_array().key("departures").begin_array();
    for (const auto& d : job.departures) {
        json.begin_object().field("rank", d.rank).field("by_step", d.by_step);
        json.key("step");
        if (d.by_step) {
            json.value(static_cast<uint64_t>(d.step));
        } else {
            json.null();
        }
        json.field("first_entry", static_cast<uint64_t>(d.first_entry)).end_object();
    }
    json.end_array();
}

void write_job(json_writer& json, const job_ranking& job,
               const std::vector<rank_summary>& summaries) {
    json.begin_object().field("name", job.job.name).field("job_id", job.job.job_id);
    json.key("ranks").begin_array();
    for (size_t i = 0; i < job.job.members.size(); ++i) {
        write_row(json, job, summaries[job.job.members[i]], i);
    }
    const analysis::rank_totals total = job_totals_of(job, summaries);
    json.end_array()
        .key("total")
        .begin_object()
        .field("peak_allocated", total.peak_allocated)
        .field("peak_reserved", total.peak_reserved)
        .field("end_allocated", total.end_allocated)
        .field("end_reserved", total.end_reserved)
        .field("allocations", total.allocations)
        .field("device_allocations", total.device_allocations)
        .field("ooms", total.ooms)
        .end_object();
    const size_t highest = highest_reserved_member(job, summaries);
    const rank_summary& best = summaries[job.job.members[highest]];
    json.key("highest_peak")
        .begin_object()
        .field("rank", job.job.ranks[highest])
        .field("path", best.path)
        .field("peak_reserved", best.peak_reserved.bytes)
        .end_object()
        .field("median_rank", job.job.ranks[job.median_member])
        .field("median_meaning", analysis::median_rank_meaning(job.job.members.size()));
    json.key("measures").begin_array();
    for (const auto& m : job.measures) {
        json.begin_object()
            .field("name", m.name)
            .field("median", m.median)
            .field("deviation", m.deviation)
            .end_object();
    }
    json.end_array();
    write_sequences(json, job);
    json.key("outliers").begin_array();
    for (const auto& e : job.outliers) {
        write_explanation(json, job, summaries, e);
    }
    // The farthest outlier's explanation again, under the name it had when `ranks` explained
    // the highest rank only (the report page reads it); null without outliers.
    json.end_array().key("explanation");
    if (job.outliers.empty()) {
        json.null();
    } else {
        write_explanation(json, job, summaries, job.outliers.front());
    }
    json.end_object();
}

}  // namespace

void print_ranks_json(std::ostream& out, const analysis::ranks_analysis& ranks,
                      const std::vector<rank_summary>& summaries,
                      const std::vector<std::string>& warnings) {
    json_writer json(out);
    json.begin_object().field("outlier_cut", analysis::outlier_cut).key("jobs").begin_array();
    for (const job_ranking& job : ranks.jobs) {
        write_job(json, job, summaries);
    }
    json.end_array().key("warnings").begin_array();
    for (const std::string& w : warnings) {
        json.value(w);
    }
    json.end_array().end_object();
    out << "\n";
}

}  // namespace memtrail::cli
