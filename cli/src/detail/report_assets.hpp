#pragma once
// The files of cli/report_web, embedded at build time (cli/report_web/CMakeLists.txt generates
// their definitions): our template, script and styles, and the npm libraries' bundles installed
// from package-lock.json with their licences.

#include <string_view>

namespace memtrail::cli::report_assets {

extern const std::string_view page_template;  // report.html
extern const std::string_view report_js;      // report.js
extern const std::string_view report_css;     // report.css
extern const std::string_view library_js;     // uPlot's bundle
extern const std::string_view library_css;    // uPlot's styles
extern const std::string_view licences;       // uPlot's LICENSE

}  // namespace memtrail::cli::report_assets
