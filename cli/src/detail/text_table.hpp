#pragma once
// Aligned text columns and wrapped paragraphs for the plain-text reports.

#include <ostream>
#include <string>
#include <vector>

namespace memtrail::cli {

class text_table {
  public:
    // Columns whose name starts with '<' are left-aligned (the '<' is not printed); the others
    // are right-aligned, as numbers are. A header of empty names is not printed.
    explicit text_table(std::vector<std::string> columns);
    void add_row(std::vector<std::string> cells);
    void print(std::ostream& out, const std::string& indent = "") const;

  private:
    std::vector<std::string> header_;
    std::vector<bool> left_;
    std::vector<std::vector<std::string>> rows_;
};

// Wraps each line of `text` at `width` columns; continuation lines start with `indent`.
std::string wrap_text(const std::string& text, size_t width, const std::string& indent = "");

}  // namespace memtrail::cli
