// memtrail ranks FILE... : the snapshots of a distributed job's ranks side by side, one row per
// rank: peaks and when, the end, allocations, device allocations and OOMs; and why the rank
// that peaks highest peaks higher than the median rank, by category and by stack. Files of
// different jobs are reported job by job, with a warning.

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "commands.hpp"
#include "common.hpp"
#include "memtrail/analysis/peak_comparison.hpp"
#include "memtrail/analysis/rank_jobs.hpp"
#include "memtrail/analysis/rank_overview.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "peak_report.hpp"
#include "report_json.hpp"
#include "text_table.hpp"

namespace memtrail::cli {
namespace {

using analysis::format_bytes;

struct rank_row {
    int rank = 0;
    opened_file file;
    analysis::rank_overview overview;
};

// One job's rows, listed by rank, and why its highest rank peaks higher than its median rank.
struct job_report {
    std::string name;
    std::vector<rank_row> rows;
    analysis::rank_explanation explanation;  // indexes into rows
};

constexpr size_t explained_stacks = 5;

// "entry 102, +1.250s": the time counts from the rank's first entry, and is left out when the
// trace has no times.
std::string when(const analysis::rank_overview& o, const analysis::curve_peak& peak) {
    std::string text = position_label(peak.position);
    if (o.entries > 0 && o.first_time_ns != 0) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, ", +%.3fs",
                      static_cast<double>(peak.time_ns - o.first_time_ns) / 1e9);
        text += seconds;
    }
    return text;
}

analysis::rank_totals totals_of(const std::vector<rank_row>& rows) {
    analysis::rank_totals t;
    for (const auto& r : rows) {
        analysis::add_to(t, r.overview);
    }
    return t;
}

std::string name_of(const rank_row& r) {
    return analysis::file_name_of(r.file.path);
}

std::string median_meaning(const job_report& job) {
    return analysis::median_rank_meaning(job.rows.size());
}

// "rank 1: activation +851MiB, ...; optimizer_state and input equal".
std::string explanation_line(const job_report& job) {
    const analysis::rank_explanation& e = job.explanation;
    return "rank " + std::to_string(job.rows[e.highest].rank) + ": " +
           analysis::category_changes_text(e.categories, e.median, e.highest);
}

compared_sides explained_sides(const job_report& job) {
    const analysis::rank_explanation& e = job.explanation;
    return {{e.median, e.highest},
            {"rank " + std::to_string(job.rows[e.median].rank),
             "rank " + std::to_string(job.rows[e.highest].rank)}};
}

void print_explanation(const job_report& job) {
    const analysis::rank_explanation& e = job.explanation;
    const rank_row& highest = job.rows[e.highest];
    const rank_row& median = job.rows[e.median];
    std::cout << "\nrank " << highest.rank << " against rank " << median.rank << " ("
              << median_meaning(job) << "), each at its own peak allocated ("
              << format_bytes(highest.overview.peak_allocated.bytes) << " at "
              << position_label(e.peaks[e.highest].position) << ", "
              << format_bytes(median.overview.peak_allocated.bytes) << " at "
              << position_label(e.peaks[e.median].position) << "):\n";
    const compared_sides sides = explained_sides(job);
    print_peak_table(std::cout, e.peaks, e.categories, e.stacks, sides, true);
    std::cout << explanation_line(job) << "\n";
    const std::string note = unstacked_note(e.peaks, sides);
    if (!note.empty()) {
        std::cout << wrap_text(note, 100, "  ") << "\n";
    }
}

void print_table(const job_report& job) {
    const std::vector<rank_row>& rows = job.rows;
    text_table table({"rank", "<file", "<device", "peak allocated", "<when", "peak reserved",
                      "<when", "end allocated", "end reserved", "allocs", "segment allocs",
                      "OOMs"});
    for (const auto& r : rows) {
        const analysis::rank_overview& o = r.overview;
        table.add_row({std::to_string(r.rank), name_of(r), analysis::devices_text(o),
                       format_bytes(o.peak_allocated.bytes), when(o, o.peak_allocated),
                       format_bytes(o.peak_reserved.bytes), when(o, o.peak_reserved),
                       format_bytes(o.end_allocated), format_bytes(o.end_reserved),
                       std::to_string(o.allocations), std::to_string(o.device_allocations),
                       std::to_string(o.ooms)});
    }
    if (rows.size() > 1) {
        const analysis::rank_totals t = totals_of(rows);
        table.add_row({"total", std::to_string(rows.size()) + " ranks", "",
                       format_bytes(t.peak_allocated), "", format_bytes(t.peak_reserved), "",
                       format_bytes(t.end_allocated), format_bytes(t.end_reserved),
                       std::to_string(t.allocations), std::to_string(t.device_allocations),
                       std::to_string(t.ooms)});
    }
    table.print(std::cout);
    const rank_row& best = rows[job.explanation.highest];
    const analysis::rank_overview& o = best.overview;
    const bool alike = std::all_of(rows.begin(), rows.end(), [&](const rank_row& r) {
        return r.overview.peak_reserved.bytes == o.peak_reserved.bytes;
    });
    if (alike && rows.size() > 1) {
        std::cout << "\nevery rank peaks at " << format_bytes(o.peak_reserved.bytes)
                  << " reserved\n";
    } else {
        std::cout << "\nrank " << best.rank << " (" << name_of(best)
                  << ") peaks highest: " << format_bytes(o.peak_reserved.bytes) << " reserved at "
                  << when(o, o.peak_reserved) << "\n";
    }
    const auto most = std::max_element(rows.begin(), rows.end(), [](const auto& x, const auto& y) {
        return x.overview.peak_allocated.bytes < y.overview.peak_allocated.bytes;
    });
    if (most->overview.peak_allocated.bytes > o.peak_allocated.bytes) {
        std::cout << "rank " << most->rank << " (" << name_of(*most)
                  << ") has the largest allocated peak: "
                  << format_bytes(most->overview.peak_allocated.bytes) << " at "
                  << when(most->overview, most->overview.peak_allocated) << "\n";
    }
    if (rows.size() > 1) {
        print_explanation(job);
    }
}

void write_peak(json_writer& json, const analysis::rank_overview& o,
                const analysis::curve_peak& peak) {
    json.begin_object()
        .field("bytes", peak.bytes)
        .field("position", static_cast<uint64_t>(peak.position))
        .field("label", position_label(peak.position))
        .field("time_ns", peak.time_ns)
        .field("since_first_entry_ns", o.entries > 0 ? peak.time_ns - o.first_time_ns : 0)
        .end_object();
}

void write_row(json_writer& json, const rank_row& r) {
    const analysis::rank_overview& o = r.overview;
    json.begin_object()
        .field("rank", r.rank)
        .field("path", r.file.path)
        .field("file", name_of(r))
        .field("kind", file_kind_name(r.file.kind))
        .field("device", o.device);
    json.key("devices").begin_array();
    for (const int d : o.devices) {
        json.value(d);
    }
    json.end_array().field("entries", static_cast<uint64_t>(o.entries));
    json.key("peak_allocated");
    write_peak(json, o, o.peak_allocated);
    json.key("peak_reserved");
    write_peak(json, o, o.peak_reserved);
    json.field("end_allocated", o.end_allocated)
        .field("end_reserved", o.end_reserved)
        .field("allocations", o.allocations)
        .field("device_allocations", o.device_allocations)
        .field("ooms", o.ooms);
    json.key("reconstruction");
    write_reconstruction(json, r.file.model);
    json.end_object();
}

void write_explanation(json_writer& json, const job_report& job) {
    const analysis::rank_explanation& e = job.explanation;
    const compared_sides sides = explained_sides(job);
    json.begin_object()
        .field("highest_rank", job.rows[e.highest].rank)
        .field("median_rank", job.rows[e.median].rank)
        .field("median_meaning", median_meaning(job))
        .field("measured_at", "each rank's own peak allocated");
    json.key("peak_positions").begin_array();
    for (const size_t i : sides.indexes) {
        json.value(static_cast<uint64_t>(e.peaks[i].position));
    }
    json.end_array().key("categories");
    write_category_comparison(json, e.categories, sides);
    json.key("stacks").begin_array();
    for (const analysis::stack_change& s : e.stacks) {
        json.begin_object()
            .field("category", analysis::category_name(s.category))
            .field("bytes_median", s.stack.bytes[e.median])
            .field("bytes_highest", s.stack.bytes[e.highest])
            .field("change", static_cast<int64_t>(s.stack.bytes[e.highest]) -
                                 static_cast<int64_t>(s.stack.bytes[e.median]));
        json.key("frames");
        write_stack(json, *e.peaks[s.stack.first_holder].source, s.stack.stack);
        json.end_object();
    }
    json.end_array()
        .key("unstacked")
        .begin_object()
        .field("bytes_median", e.peaks[e.median].unstacked_bytes())
        .field("bytes_highest", e.peaks[e.highest].unstacked_bytes())
        .field("why", analysis::why_unstacked(*e.peaks[e.highest].source))
        .end_object()
        .field("summary", explanation_line(job))
        .end_object();
}

void write_job(json_writer& json, const job_report& job) {
    json.begin_object().field("name", job.name).key("ranks").begin_array();
    for (const auto& r : job.rows) {
        write_row(json, r);
    }
    json.end_array();
    const analysis::rank_totals t = totals_of(job.rows);
    json.key("total")
        .begin_object()
        .field("peak_allocated", t.peak_allocated)
        .field("peak_reserved", t.peak_reserved)
        .field("end_allocated", t.end_allocated)
        .field("end_reserved", t.end_reserved)
        .field("allocations", t.allocations)
        .field("device_allocations", t.device_allocations)
        .field("ooms", t.ooms)
        .end_object();
    const rank_row& best = job.rows[job.explanation.highest];
    json.key("highest_peak")
        .begin_object()
        .field("rank", best.rank)
        .field("path", best.file.path)
        .field("peak_reserved", best.overview.peak_reserved.bytes)
        .end_object();
    json.key("explanation");
    if (job.rows.size() > 1) {
        write_explanation(json, job);
    } else {
        json.null();
    }
    json.end_object();
}

void print_json(const std::vector<job_report>& jobs, const std::vector<std::string>& warnings) {
    json_writer json(std::cout);
    json.begin_object().key("jobs").begin_array();
    for (const job_report& job : jobs) {
        write_job(json, job);
    }
    json.end_array().key("warnings").begin_array();
    for (const std::string& w : warnings) {
        json.value(w);
    }
    json.end_array().end_object();
}

// "ddp__rank0.pickle, ddp__rank1.pickle".
std::string file_names(const job_report& job) {
    std::string names;
    for (const auto& r : job.rows) {
        names += (names.empty() ? "" : ", ") + name_of(r);
    }
    return names;
}

// The files split into jobs, each job's rows by rank; a warning for every job after the first.
std::vector<job_report> jobs_of(std::vector<opened_file> files,
                                std::vector<std::string>& warnings) {
    std::vector<std::vector<uint64_t>> stacks;
    for (const opened_file& f : files) {
        stacks.push_back(analysis::stack_fingerprints(f.model.source()));
    }
    std::vector<analysis::job_file> placed;
    for (size_t i = 0; i < files.size(); ++i) {
        placed.push_back({files[i].path, &files[i].model.source(), &stacks[i]});
    }
    const std::vector<analysis::rank_job> grouped = analysis::group_into_jobs(placed);
    std::vector<job_report> jobs;
    for (const analysis::rank_job& g : grouped) {
        job_report job;
        job.name = g.name;
        for (size_t i = 0; i < g.files.size(); ++i) {
            rank_row r{g.ranks[i], std::move(files[g.files[i]]), {}};
            r.overview = analysis::overview_of(r.file.model);
            job.rows.push_back(std::move(r));
        }
        std::stable_sort(job.rows.begin(), job.rows.end(),
                         [](const rank_row& a, const rank_row& b) { return a.rank < b.rank; });
        std::vector<const analysis::device_model*> models;
        std::vector<analysis::device_model> every_frame;
        every_frame.reserve(job.rows.size());
        for (const auto& r : job.rows) {
            models.push_back(&r.file.model);
            every_frame.push_back(model_with_every_frame(r.file));
        }
        std::vector<const analysis::device_model*> categorized;
        for (const auto& m : every_frame) {
            categorized.push_back(&m);
        }
        job.explanation = analysis::explain_highest_rank(models, categorized, explained_stacks);
        if (!jobs.empty()) {
            warnings.push_back(file_names(job) +
                               (job.rows.size() == 1 ? " is not a rank" : " are not ranks") +
                               " of the job of " + file_names(jobs.front()) + ": " +
                               g.why_not_first + "; reported apart, as job " +
                               std::to_string(jobs.size() + 1) + " (" + job.name + ")");
        }
        jobs.push_back(std::move(job));
    }
    return jobs;
}

}  // namespace

command_spec ranks_spec() {
    return {"ranks",
            "FILE... [--device N] [--all-frames] [--json]",
            "The snapshots of a distributed job's ranks side by side, one row per rank: peak "
            "allocated and reserved memory and when, allocated and reserved at the end, "
            "allocations, device allocations (segments allocated or mapped) and OOMs in the "
            "trace, with their totals and the rank that peaks highest; then why it peaks higher "
            "than the median rank, by category and by stack, each rank at its own peak "
            "allocated.",
            "Files are grouped into jobs by their names (job__rank3.pickle and job__rank4.pickle "
            "are one job's), their producer, devices, allocator settings, process and times, and "
            "the stacks they recorded; files of different jobs are reported job by job, with a "
            "warning. A file's rank is the number its name names (rank3.memtrail, "
            "job__rank_3.pickle, snap-r3, trace_3.pickle, run/rank3/snapshot.pickle) when every "
            "file of its job names a different one; otherwise the job's files are ranks 0, 1, "
            "2, ... in the order given. Rows are listed by rank. Times count from each rank's "
            "first trace entry; counts cover the trace.\n",
            1,
            SIZE_MAX,
            {device_option(), all_frames_option()}};
}

int run_ranks(const parsed_arguments& args) {
    std::vector<opened_file> files;
    for (const std::string& path : args.positional) {
        files.push_back(open_file(path, args, frames_shown(args)));
    }
    std::vector<std::string> warnings;
    const std::vector<job_report> jobs = jobs_of(std::move(files), warnings);
    for (const std::string& w : warnings) {
        std::cerr << "memtrail ranks: warning: " << w << "\n";
    }
    if (args.json) {
        print_json(jobs, warnings);
        return exit_ok;
    }
    for (size_t j = 0; j < jobs.size(); ++j) {
        if (jobs.size() > 1) {
            std::cout << (j == 0 ? "" : "\n") << "job " << j + 1 << " of " << jobs.size() << ": "
                      << jobs[j].name << ", " << jobs[j].rows.size()
                      << (jobs[j].rows.size() == 1 ? " rank\n" : " ranks\n");
        }
        print_table(jobs[j]);
    }
    return exit_ok;
}

}  // namespace memtrail::cli
