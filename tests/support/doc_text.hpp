#pragma once
// Reading the docs from the tests that check them against the code's tables of options.

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace memtrail::test {

// A file of the source tree (MEMTRAIL_SOURCE_DIR comes from the test's CMakeLists), whole.
inline std::string source_file(const std::string& relative) {
    const std::filesystem::path path = std::filesystem::path(MEMTRAIL_SOURCE_DIR) / relative;
    std::ifstream in(path);
    if (!in) {
        throw std::runtime_error("cannot read " + path.string());
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The text from the first `start` to the next `end` after it ("" when `start` is absent).
inline std::string between(const std::string& text, const std::string& start,
                           const std::string& end) {
    const size_t from = text.find(start);
    if (from == std::string::npos) {
        return "";
    }
    const size_t to = text.find(end, from + start.size());
    return text.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

// Every name of the form MEMTRAIL_XYZ in `text`.
inline std::set<std::string> variable_names(const std::string& text) {
    static const std::regex name("MEMTRAIL_[A-Z][A-Z0-9_]*");
    std::set<std::string> names;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), name);
         it != std::sregex_iterator(); ++it) {
        names.insert(it->str());
    }
    return names;
}

// The body rows of the first Markdown table whose header's first cell is `first_header`: cells
// trimmed, backticks dropped.
inline std::vector<std::vector<std::string>> markdown_table(const std::string& text,
                                                            const std::string& first_header) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream lines(text);
    std::string line;
    bool inside = false;
    while (std::getline(lines, line)) {
        if (line.empty() || line[0] != '|') {
            if (inside) {
                break;
            }
            continue;
        }
        std::vector<std::string> cells;
        std::string cell;
        for (size_t i = 1; i < line.size(); ++i) {
            if (line[i] == '|') {
                const size_t first = cell.find_first_not_of(' ');
                const size_t last = cell.find_last_not_of(' ');
                cells.push_back(first == std::string::npos ? ""
                                                           : cell.substr(first, last - first + 1));
                cell.clear();
            } else if (line[i] != '`') {
                cell.push_back(line[i]);
            }
        }
        if (!inside) {
            inside = !cells.empty() && cells[0] == first_header;
        } else if (!cells.empty() && cells[0].find_first_not_of('-') != std::string::npos) {
            rows.push_back(cells);
        }
    }
    return rows;
}

}  // namespace memtrail::test
