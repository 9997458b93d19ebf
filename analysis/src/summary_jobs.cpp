#include "memtrail/analysis/summary_jobs.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "memtrail/analysis/rank_jobs.hpp"

namespace memtrail::analysis {

namespace {

struct named_file {
    rank_name name;
    const rank_summary* summary = nullptr;
};

struct open_job {
    summary_job job;
    std::set<int> named_ranks;  // ranks the members' names give
};

std::optional<std::string> why_not_in(const open_job& job, const std::vector<named_file>& files,
                                      size_t file) {
    const named_file& first = files[job.job.members.front()];
    const named_file& candidate = files[file];
    if (candidate.name.rank && first.name.rank && candidate.name.pattern != first.name.pattern) {
        return "named as another job (" + candidate.name.pattern + ", not " + first.name.pattern +
               ")";
    }
    if (candidate.name.rank && job.named_ranks.contains(*candidate.name.rank)) {
        return "the job has a rank " + std::to_string(*candidate.name.rank) + " already";
    }
    if (auto reason = why_not_same_job(first.summary->identity, candidate.summary->identity)) {
        return reason;
    }
    const auto shared =
        shared_sketch_fraction(first.summary->stack_sketch, candidate.summary->stack_sketch);
    if (shared && *shared < same_code_stack_fraction) {
        return "other code: " + std::to_string(static_cast<int>(*shared * 100.0 + 0.5)) +
               "% of their allocation stacks are shared";
    }
    return std::nullopt;
}

// Ranks as the identities give them when each member has one and no two share one; else as
// the paths name them; else 0, 1, 2, ... in the order given.
std::vector<int> ranks_of(const std::vector<rank_summary>& summaries,
                          const std::vector<size_t>& members) {
    std::vector<int> ranks;
    std::set<int> seen;
    for (const size_t m : members) {
        const int rank = summaries[m].identity.rank;
        if (rank < 0 || !seen.insert(rank).second) {
            ranks.clear();
            break;
        }
        ranks.push_back(rank);
    }
    if (ranks.empty()) {
        ranks.resize(members.size());
        std::iota(ranks.begin(), ranks.end(), 0);
    }
    return ranks;
}

void order_by_rank(const std::vector<rank_summary>& summaries, summary_job& job) {
    job.ranks = ranks_of(summaries, job.members);
    std::vector<size_t> order(job.members.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return job.ranks[a] < job.ranks[b]; });
    std::vector<size_t> members;
    std::vector<int> ranks;
    for (const size_t i : order) {
        members.push_back(job.members[i]);
        ranks.push_back(job.ranks[i]);
    }
    job.members = std::move(members);
    job.ranks = std::move(ranks);
}

}  // namespace

std::optional<std::string> why_not_same_job(const summary_identity& a, const summary_identity& b) {
    if (a.producer != b.producer) {
        return "written by '" + a.producer + "', not '" + b.producer + "'";
    }
    if (a.device_kinds != b.device_kinds) {
        return "other devices (" + std::to_string(a.device_kinds.size()) + " against " +
               std::to_string(b.device_kinds.size()) + ", or of other names or memory)";
    }
    if (a.settings_hash != b.settings_hash) {
        return "other allocator settings ('" + a.allocator_conf + "' against '" + b.allocator_conf +
               "')";
    }
    if (a.pid != 0 && a.pid == b.pid && a.host == b.host) {
        return "the same process (" + a.host + ", pid " + std::to_string(a.pid) +
               "): two moments of one rank";
    }
    const bool timed = (a.first_time_ns != 0 || a.last_time_ns != 0) &&
                       (b.first_time_ns != 0 || b.last_time_ns != 0);
    if (timed) {
        const int64_t gap =
            std::max(a.first_time_ns, b.first_time_ns) - std::min(a.last_time_ns, b.last_time_ns);
        if (gap > job_time_gap_ns) {
            return "recorded " + std::to_string(gap / 60'000'000'000) +
                   " minutes apart, more than an hour";
        }
    }
    return std::nullopt;
}

std::optional<double> shared_sketch_fraction(const std::vector<uint64_t>& a,
                                             const std::vector<uint64_t>& b) {
    if (a.empty() || b.empty()) {
        return std::nullopt;
    }
    // The k smallest hashes of the union, k the larger sketch: a uniform sample of it.
    const size_t k = std::max(a.size(), b.size());
    size_t taken = 0;
    size_t both = 0;
    for (size_t i = 0, j = 0; taken < k && (i < a.size() || j < b.size()); ++taken) {
        if (i < a.size() && j < b.size() && a[i] == b[j]) {
            ++both;
            ++i;
            ++j;
        } else if (j >= b.size() || (i < a.size() && a[i] < b[j])) {
            ++i;
        } else {
            ++j;
        }
    }
    return static_cast<double>(both) / static_cast<double>(taken);
}

std::vector<summary_job> group_summaries(const std::vector<rank_summary>& summaries) {
    std::vector<named_file> files;
    for (const rank_summary& s : summaries) {
        files.push_back({rank_in_file_name(file_name_of(s.path)), &s});
    }
    std::vector<open_job> jobs;
    std::map<std::string, size_t> job_of_id;
    for (size_t f = 0; f < files.size(); ++f) {
        const std::string& id = summaries[f].identity.job_id;
        open_job* joined = nullptr;
        std::string why_not_first;
        if (!id.empty()) {
            if (const auto it = job_of_id.find(id); it != job_of_id.end()) {
                joined = &jobs[it->second];
            } else if (!jobs.empty()) {
                why_not_first =
                    jobs.front().job.job_id.empty()
                        ? "its snapshots name job " + id + ", the first job's none"
                        : "another job id (" + id + ", not " + jobs.front().job.job_id + ")";
            }
        } else {
            for (open_job& job : jobs) {
                if (!job.job.job_id.empty()) {
                    continue;
                }
                const auto reason = why_not_in(job, files, f);
                if (!reason) {
                    joined = &job;
                    break;
                }
                if (&job == &jobs.front()) {
                    why_not_first = *reason;
                }
            }
            if (!joined && !jobs.empty() && why_not_first.empty()) {
                why_not_first = "its snapshot names no job id, the first job's do";
            }
        }
        if (!joined) {
            open_job job;
            job.job.job_id = id;
            job.job.name = id.empty() ? files[f].name.pattern : id;
            job.job.why_not_first = why_not_first;
            if (!id.empty()) {
                job_of_id[id] = jobs.size();
            }
            jobs.push_back(std::move(job));
            joined = &jobs.back();
        }
        joined->job.members.push_back(f);
        if (files[f].name.rank) {
            joined->named_ranks.insert(*files[f].name.rank);
        }
    }
    std::vector<summary_job> out;
    for (open_job& job : jobs) {
        order_by_rank(summaries, job.job);
        out.push_back(std::move(job.job));
    }
    return out;
}

}  // namespace memtrail::analysis
