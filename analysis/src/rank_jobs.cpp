#include "memtrail/analysis/rank_jobs.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "memtrail/analysis/stack_comparison.hpp"

namespace memtrail::analysis {

namespace {

char lower(char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}
bool is_letter(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) != 0;
}
bool is_digit(char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
}
bool is_separator(char c) {
    return !is_letter(c) && !is_digit(c);
}

// A rank's digits in a name: where they start and how many.
struct digits_at {
    size_t begin = 0;
    size_t length = 0;
    int rank = 0;
};

std::optional<digits_at> number_at(std::string_view text, size_t begin) {
    size_t end = begin;
    while (end < text.size() && is_digit(text[end])) {
        ++end;
    }
    int rank = 0;
    if (end == begin ||
        std::from_chars(text.data() + begin, text.data() + end, rank).ec != std::errc()) {
        return std::nullopt;
    }
    return digits_at{begin, end - begin, rank};
}

// The last "rank<N>" whose "rank" does not continue a word.
std::optional<digits_at> last_rank_word(std::string_view text) {
    std::optional<digits_at> found;
    for (size_t i = 0; i + 4 < text.size(); ++i) {
        const bool word = lower(text[i]) == 'r' && lower(text[i + 1]) == 'a' &&
                          lower(text[i + 2]) == 'n' && lower(text[i + 3]) == 'k' &&
                          (i == 0 || !is_letter(text[i - 1]));
        if (!word) {
            continue;
        }
        size_t digits = i + 4;
        if (text[digits] == '_' || text[digits] == '-' || text[digits] == '.') {
            ++digits;
        }
        if (const auto number = number_at(text, digits)) {
            found = number;
        }
    }
    return found;
}

// The last "r<N>" between separators (or the ends of `text`).
std::optional<digits_at> last_r_token(std::string_view text) {
    std::optional<digits_at> found;
    for (size_t i = 0; i + 1 < text.size(); ++i) {
        if (lower(text[i]) != 'r' || (i > 0 && !is_separator(text[i - 1]))) {
            continue;
        }
        const auto number = number_at(text, i + 1);
        if (number && (number->begin + number->length == text.size() ||
                       is_separator(text[number->begin + number->length]))) {
            found = number;
        }
    }
    return found;
}

// A number ending `stem` after '_' or '-'.
std::optional<digits_at> trailing_number(std::string_view stem) {
    size_t begin = stem.size();
    while (begin > 0 && is_digit(stem[begin - 1])) {
        --begin;
    }
    if (begin < 2 || begin == stem.size() || (stem[begin - 1] != '_' && stem[begin - 1] != '-')) {
        return std::nullopt;
    }
    return number_at(stem, begin);
}

}  // namespace

std::string file_name_of(std::string_view path) {
    const size_t slash = path.find_last_of('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

rank_name rank_in_file_name(std::string_view file_name) {
    // The extension (".pickle", ".memtrail.zst") holds no rank.
    const std::string_view stem = file_name.substr(0, file_name.find('.', 1));
    std::optional<digits_at> digits = last_rank_word(stem);
    if (!digits) {
        digits = last_r_token(stem);
    }
    if (!digits) {
        digits = trailing_number(stem);
    }
    rank_name name{std::nullopt, std::string(file_name)};
    if (digits) {
        name.rank = digits->rank;
        name.pattern.replace(digits->begin, digits->length, "*");
    }
    return name;
}

std::optional<int> rank_in_path(std::string_view path) {
    const size_t slash = path.find_last_of('/');
    if (slash == std::string_view::npos) {
        return rank_in_file_name(path).rank;
    }
    if (const auto rank = rank_in_file_name(path.substr(slash + 1)).rank) {
        return rank;
    }
    const auto in_directories = last_rank_word(path.substr(0, slash));
    return in_directories ? std::optional<int>(in_directories->rank) : std::nullopt;
}

std::vector<int> ranks_of_paths(const std::vector<std::string>& paths) {
    std::vector<int> ranks;
    std::set<int> seen;
    for (const std::string& path : paths) {
        const std::optional<int> rank = rank_in_path(path);
        if (!rank || !seen.insert(*rank).second) {
            ranks.clear();
            break;
        }
        ranks.push_back(*rank);
    }
    if (ranks.empty()) {
        for (size_t i = 0; i < paths.size(); ++i) {
            ranks.push_back(static_cast<int>(i));
        }
    }
    return ranks;
}

namespace {

// The devices a snapshot lists, by what they are rather than their numbers.
std::vector<std::pair<std::string, uint64_t>> device_kinds(const snapshot::snapshot& s) {
    std::vector<std::pair<std::string, uint64_t>> kinds;
    for (const auto& d : s.info.devices) {
        kinds.emplace_back(d.name, d.total_memory);
    }
    std::sort(kinds.begin(), kinds.end());
    return kinds;
}

// From the first trace entry (or the snapshot's time without one) to when it was taken; nullopt
// when the snapshot holds no times. Entries are oldest first, so only the ends are looked at
// (the Ranks view asks every frame).
std::optional<std::pair<int64_t, int64_t>> time_span(const snapshot::snapshot& s) {
    int64_t first = s.info.time_ns;
    int64_t last = s.info.time_ns;
    const auto timed = [](const snapshot::trace_entry& e) { return e.time_ns != 0; };
    for (const auto& trace : s.traces) {
        const auto oldest = std::find_if(trace.entries.begin(), trace.entries.end(), timed);
        if (oldest == trace.entries.end()) {
            continue;
        }
        const auto newest = std::find_if(trace.entries.rbegin(), trace.entries.rend(), timed);
        first = first == 0 ? oldest->time_ns : std::min(first, oldest->time_ns);
        last = std::max(last, newest->time_ns);
    }
    if (first == 0 && last == 0) {
        return std::nullopt;
    }
    return std::pair{first, last};
}

}  // namespace

std::optional<std::string> why_not_one_job(const snapshot::snapshot& a,
                                           const snapshot::snapshot& b) {
    if (a.info.producer != b.info.producer) {
        return "written by '" + a.info.producer + "', not '" + b.info.producer + "'";
    }
    if (device_kinds(a) != device_kinds(b)) {
        return "other devices (" + std::to_string(a.info.devices.size()) + " against " +
               std::to_string(b.info.devices.size()) + ", or of other names or memory)";
    }
    if (a.settings != b.settings) {
        return "other allocator settings ('" + a.settings.conf + "' against '" + b.settings.conf +
               "')";
    }
    if (a.info.pid != 0 && a.info.pid == b.info.pid && a.info.host == b.info.host) {
        return "the same process (" + a.info.host + ", pid " + std::to_string(a.info.pid) +
               "): two moments of one rank";
    }
    const auto span_a = time_span(a);
    const auto span_b = time_span(b);
    if (span_a && span_b) {
        const int64_t gap =
            std::max(span_a->first, span_b->first) - std::min(span_a->second, span_b->second);
        if (gap > job_time_gap_ns) {
            return "recorded " + std::to_string(gap / 60'000'000'000) +
                   " minutes apart, more than an hour";
        }
    }
    return std::nullopt;
}

std::vector<uint64_t> stack_fingerprints(const snapshot::snapshot& source) {
    std::vector<uint64_t> hashes;
    for (snapshot::stack_id id = 1; id < source.stacks().size(); ++id) {
        // FNV-1a: the same text gives the same hash in every snapshot.
        uint64_t hash = 0xcbf29ce484222325ull;
        for (const char c : stack_text(source, id)) {
            hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
        }
        hashes.push_back(hash);
    }
    std::sort(hashes.begin(), hashes.end());
    hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
    return hashes;
}

std::optional<double> shared_stack_fraction(const std::vector<uint64_t>& a,
                                            const std::vector<uint64_t>& b) {
    if (a.empty() || b.empty()) {
        return std::nullopt;
    }
    size_t both = 0;
    for (size_t i = 0, k = 0; i < a.size() && k < b.size();) {
        if (a[i] == b[k]) {
            ++both;
            ++i;
            ++k;
        } else if (a[i] < b[k]) {
            ++i;
        } else {
            ++k;
        }
    }
    const size_t all = a.size() + b.size() - both;
    return static_cast<double>(both) / static_cast<double>(all);
}

std::optional<std::string> why_not_in_job(const std::vector<job_file>& files,
                                          const std::vector<size_t>& members, size_t file) {
    const job_file& first = files[members.front()];
    const rank_name name = rank_in_file_name(file_name_of(files[file].path));
    const rank_name first_name = rank_in_file_name(file_name_of(first.path));
    if (name.rank && first_name.rank && name.pattern != first_name.pattern) {
        return "named as another job (" + name.pattern + ", not " + first_name.pattern + ")";
    }
    for (const size_t m : members) {
        const rank_name member = rank_in_file_name(file_name_of(files[m].path));
        if (name.rank && member.rank == name.rank && member.pattern == name.pattern) {
            return "the job has a rank " + std::to_string(*name.rank) + " already (" +
                   file_name_of(files[m].path) + ")";
        }
    }
    if (auto reason = why_not_one_job(*first.source, *files[file].source)) {
        return reason;
    }
    const auto shared = shared_stack_fraction(*first.stacks, *files[file].stacks);
    if (shared && *shared < same_code_stack_fraction) {
        return "other code: " + std::to_string(static_cast<int>(*shared * 100.0 + 0.5)) +
               "% of their allocation stacks are shared";
    }
    return std::nullopt;
}

std::vector<rank_job> group_into_jobs(const std::vector<job_file>& files) {
    std::vector<rank_job> jobs;
    for (size_t f = 0; f < files.size(); ++f) {
        std::string why_not_first;
        rank_job* joined = nullptr;
        for (rank_job& job : jobs) {
            const auto reason = why_not_in_job(files, job.files, f);
            if (!reason) {
                joined = &job;
                break;
            }
            if (&job == &jobs.front()) {
                why_not_first = *reason;
            }
        }
        if (joined) {
            joined->files.push_back(f);
            continue;
        }
        rank_job job;
        job.name = rank_in_file_name(file_name_of(files[f].path)).pattern;
        job.files.push_back(f);
        job.why_not_first = why_not_first;
        jobs.push_back(std::move(job));
    }
    for (rank_job& job : jobs) {
        std::vector<std::string> paths;
        for (const size_t f : job.files) {
            paths.push_back(files[f].path);
        }
        job.ranks = ranks_of_paths(paths);
    }
    return jobs;
}

}  // namespace memtrail::analysis
