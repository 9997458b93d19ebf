#include "detail/report_page.hpp"

#include <stdexcept>
#include <string>

#include "detail/report_assets.hpp"

namespace memtrail::cli {
namespace {

// The template's markers in the order they appear, each replaced once by an embedded file or
// the data.
struct page_part {
    std::string_view marker;
    std::string_view content;
};

void write_escaped_json(std::ostream& out, std::string_view json) {
    size_t from = 0;
    for (size_t at = json.find('<'); at != std::string_view::npos; at = json.find('<', from)) {
        out << json.substr(from, at - from) << "\\u003c";  // '<' only occurs inside strings
        from = at + 1;
    }
    out << json.substr(from);
}

}  // namespace

void write_report_page(std::ostream& out, std::string_view data_json) {
    const std::string_view page = report_assets::page_template;
    const page_part parts[] = {
        {"/*memtrail:licences*/", report_assets::licences},
        {"/*memtrail:library-css*/", report_assets::library_css},
        {"/*memtrail:report-css*/", report_assets::report_css},
        {"/*memtrail:data*/", {}},
        {"/*memtrail:library-js*/", report_assets::library_js},
        {"/*memtrail:report-js*/", report_assets::report_js},
    };
    size_t from = 0;
    for (const page_part& part : parts) {
        const size_t at = page.find(part.marker, from);
        if (at == std::string_view::npos) {
            throw std::logic_error("the report template lacks " + std::string(part.marker));
        }
        out << page.substr(from, at - from);
        if (part.marker == "/*memtrail:data*/") {
            write_escaped_json(out, data_json);
        } else {
            out << part.content;
        }
        from = at + part.marker.size();
    }
    out << page.substr(from);
}

}  // namespace memtrail::cli
