#include "run_dumps.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <sstream>

#include "arguments.hpp"
#include "common.hpp"
#include "rank_inputs.hpp"
#include "summary_json.hpp"

namespace memtrail::cli {

namespace fs = std::filesystem;

namespace {

// Whether `name` is `pattern` with each %p, %d, %t standing for any text ("%%" for '%').
bool matches(std::string_view pattern, std::string_view name) {
    if (pattern.empty()) {
        return name.empty();
    }
    if (pattern.size() >= 2 && pattern[0] == '%' &&
        (pattern[1] == 'p' || pattern[1] == 'd' || pattern[1] == 't')) {
        for (size_t skip = 0; skip <= name.size(); ++skip) {
            if (matches(pattern.substr(2), name.substr(skip))) {
                return true;
            }
        }
        return false;
    }
    const size_t literal = pattern.size() >= 2 && pattern[0] == '%' && pattern[1] == '%' ? 2 : 1;
    return !name.empty() && name[0] == pattern[literal - 1] &&
           matches(pattern.substr(literal), name.substr(1));
}

}  // namespace

std::vector<std::string> dumps_written(const std::vector<std::string>& patterns,
                                       fs::file_time_type since) {
    since -= std::chrono::seconds(2);
    std::vector<std::string> out;
    for (const std::string& pattern : patterns) {
        const fs::path path(pattern);
        const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
        const std::string name = path.filename().string();
        std::error_code error;
        for (const auto& entry : fs::directory_iterator(folder, error)) {
            const std::string file = entry.path().filename().string();
            if (file.ends_with(summary_extension) || !matches(name, file) ||
                !entry.is_regular_file(error) || entry.last_write_time(error) < since) {
                continue;
            }
            out.push_back((path.has_parent_path() ? entry.path() : fs::path(file)).string());
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

void summarize_dumps(const std::vector<std::string>& dumps) {
    for (const std::string& dump : dumps) {
        try {
            const analysis::rank_summary summary = summarize_snapshot(dump, parsed_arguments{});
            std::ostringstream text;
            write_summary_json(text, summary);
            const std::string target = summary_path_for(dump, std::nullopt);
            write_output(target, output_content::text,
                         [&](std::ostream& out) { out << text.str(); });
            std::cerr << "memtrail: summary written to " << target << "\n";
        } catch (const std::exception& error) {
            std::cerr << "memtrail: no summary of " << dump << ": " << error.what() << "\n";
        }
    }
}

}  // namespace memtrail::cli
