#include "detail/text_table.hpp"

#include <algorithm>
#include <sstream>

namespace memtrail::cli {

text_table::text_table(std::vector<std::string> columns) {
    for (auto& column : columns) {
        const bool left = !column.empty() && column.front() == '<';
        left_.push_back(left);
        header_.push_back(left ? column.substr(1) : column);
    }
}

void text_table::add_row(std::vector<std::string> cells) {
    cells.resize(header_.size());
    rows_.push_back(std::move(cells));
}

void text_table::print(std::ostream& out, const std::string& indent) const {
    std::vector<size_t> widths(header_.size(), 0);
    for (size_t c = 0; c < header_.size(); ++c) {
        widths[c] = header_[c].size();
        for (const auto& row : rows_) {
            widths[c] = std::max(widths[c], row[c].size());
        }
    }
    auto print_row = [&](const std::vector<std::string>& cells) {
        std::string line = indent;
        for (size_t c = 0; c < cells.size(); ++c) {
            const std::string padding(widths[c] - cells[c].size(), ' ');
            line += c == 0 ? "" : "  ";
            line +=
                left_[c] ? cells[c] + (c + 1 == cells.size() ? "" : padding) : padding + cells[c];
        }
        // An empty last cell leaves only the separator: no trailing blanks.
        line.erase(line.find_last_not_of(' ') + 1);
        out << line << "\n";
    };
    if (std::any_of(header_.begin(), header_.end(), [](const auto& h) { return !h.empty(); })) {
        print_row(header_);
    }
    for (const auto& row : rows_) {
        print_row(row);
    }
}

std::string wrap_text(const std::string& text, size_t width, const std::string& indent) {
    std::string out;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::string word;
        std::string current;
        while (words >> word) {
            if (!current.empty() && current.size() + 1 + word.size() > width) {
                out += current + "\n" + indent;
                current.clear();
            }
            current += (current.empty() ? "" : " ") + word;
        }
        out += current + "\n";
    }
    return out;
}

}  // namespace memtrail::cli
