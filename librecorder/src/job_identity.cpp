#include "detail/job_identity.hpp"

namespace memtrail::recorder::librecorder {

namespace {
std::string text_of(int32_t rank) {
    return rank >= 0 ? std::to_string(rank) : std::string();
}
}  // namespace

std::string expand_job_placeholders(std::string_view pattern, const job_identity& job) {
    std::string path;
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '%' || i + 1 == pattern.size()) {
            path += pattern[i];
            continue;
        }
        switch (pattern[++i]) {
            case 'r':
                path += text_of(job.rank);
                break;
            case 'l':
                path += text_of(job.local_rank);
                break;
            case 'j':
                path += job.job_id;
                break;
            default:  // expand_dump_path's (%% too, so that "%%r" stays a literal "%r")
                path += '%';
                path += pattern[i];
        }
    }
    return path;
}

}  // namespace memtrail::recorder::librecorder
