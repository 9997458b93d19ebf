#include "detail/run_dumps.hpp"

#include <iostream>
#include <sstream>

#include "detail/arguments.hpp"
#include "detail/common.hpp"
#include "detail/rank_inputs.hpp"
#include "detail/summary_json.hpp"

namespace memtrail::cli {

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
