#pragma once
// The report's one HTML page: the template, styles and scripts embedded in the binary at build
// time (cli/report_web), with the report's data as JSON in a script element. Nothing in it is
// fetched when it opens.

#include <ostream>
#include <string_view>

namespace memtrail::cli {

// Writes the page with `data_json` (a JSON object) as its data. The JSON is embedded with every
// '<' escaped, so no text in it (a frame's name, a path) can end its script element.
void write_report_page(std::ostream& out, std::string_view data_json);

}  // namespace memtrail::cli
