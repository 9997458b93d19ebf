// memtrail check FILE... --max-peak-reserved SIZE ... : limits for CI; exit 1 when one is
// exceeded, with the allocation stacks responsible.

#include <iostream>
#include <optional>

#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "detail/report_json.hpp"
#include "memtrail/analysis/flame.hpp"
#include "memtrail/analysis/oom_report.hpp"
#include "memtrail/analysis/size_text.hpp"

namespace memtrail::cli {
namespace {

using analysis::format_bytes;

struct check_result {
    std::string name;
    std::string value_text;
    std::string limit_text;
    double value = 0.0;
    double limit = 0.0;
    bool passed = true;
    size_t position = 0;  // the moment the value was measured
    // Blocks to blame: all live ones, or only those pinning partly free segments.
    bool blame_fragmentation = false;
};

// Live bytes per stack at `position`; with `pinning_only`, only blocks in segments that also
// hold free blocks (they keep the free space from being released or merged).
std::vector<analysis::stack_bytes> responsible_stacks(const analysis::device_model& model,
                                                      size_t position, bool pinning_only) {
    analysis::memory_state state = model.state_after(position);
    if (pinning_only) {
        std::erase_if(state.segments, [](const snapshot::segment& seg) {
            return std::none_of(seg.blocks.begin(), seg.blocks.end(), [](const auto& b) {
                return b.state == snapshot::block_state::inactive;
            });
        });
    }
    return analysis::bytes_by_stack(state, analysis::live_measure::active);
}

}  // namespace

command_spec check_spec() {
    return {"check",
            "FILE... [--max-peak-reserved SIZE] [--max-peak-allocated SIZE] "
            "[--max-fragmentation F] [--no-oom] [-n N] [--depth D] [--device N] [--all-frames] "
            "[--json]",
            "Checks limits, for CI: exits 1 when one is exceeded and prints the allocation "
            "stacks responsible (the live blocks at the moment measured).",
            "Fragmentation (1 - largest free block / free bytes inside segments) is measured "
            "at the peak of reserved memory; the stacks blamed for it are those of blocks in "
            "partly free segments. At least one limit must be given.\n",
            1,
            SIZE_MAX,
            {device_option(),
             all_frames_option(),
             {"--max-peak-reserved", "", "SIZE", "limit on the peak of reserved memory", false},
             {"--max-peak-allocated", "", "SIZE", "limit on the peak of allocated memory", false},
             {"--max-fragmentation", "", "F", "limit between 0 and 1, at peak reserved", false},
             {"--no-oom", "", "", "fail when the trace has an out-of-memory entry", false},
             {"--count", "-n", "N", "stacks to print per failed check (default 5)", false},
             depth_option(6)}};
}

int run_check(const parsed_arguments& args) {
    const size_t depth = depth_of(args, 6);
    const auto max_reserved = args.value("--max-peak-reserved");
    const auto max_allocated = args.value("--max-peak-allocated");
    const auto max_fragmentation = args.value("--max-fragmentation");
    if (!max_reserved && !max_allocated && !max_fragmentation && !args.has("--no-oom")) {
        throw usage_error(
            "give at least one limit (--max-peak-reserved, --max-peak-allocated, "
            "--max-fragmentation, --no-oom)");
    }
    // Unset limits stay at their largest value and are not checked.
    const uint64_t reserved_limit =
        max_reserved ? parse_size_option("--max-peak-reserved", *max_reserved) : UINT64_MAX;
    const uint64_t allocated_limit =
        max_allocated ? parse_size_option("--max-peak-allocated", *max_allocated) : UINT64_MAX;
    const double fragmentation_limit =
        max_fragmentation ? parse_fraction_option("--max-fragmentation", *max_fragmentation) : 1.0;
    const size_t count =
        args.value("--count") ? parse_count_option("--count", *args.value("--count")) : 5;

    bool all_passed = true;
    std::optional<json_writer> json;
    if (args.json) {
        json.emplace(std::cout);
        json->begin_object().key("files").begin_array();
    }
    for (const auto& path : args.positional) {
        const opened_file file = open_file(path, args, frames_shown(args));
        const auto& model = file.model;
        std::vector<check_result> results;
        const size_t reserved_peak = model.peak_position(analysis::series::reserved);
        if (max_reserved) {
            const uint64_t value = peak_bytes(model, analysis::series::reserved);
            results.push_back({"peak reserved", format_bytes(value), format_bytes(reserved_limit),
                               static_cast<double>(value), static_cast<double>(reserved_limit),
                               value <= reserved_limit, reserved_peak, false});
        }
        if (max_allocated) {
            const uint64_t value = peak_bytes(model, analysis::series::allocated);
            results.push_back({"peak allocated", format_bytes(value), format_bytes(allocated_limit),
                               static_cast<double>(value), static_cast<double>(allocated_limit),
                               value <= allocated_limit,
                               model.peak_position(analysis::series::allocated), false});
        }
        if (max_fragmentation) {
            const double value =
                analysis::totals_of(model.state_after(reserved_peak)).fragmentation();
            results.push_back({"fragmentation at peak reserved", percent(value),
                               percent(fragmentation_limit), value, fragmentation_limit,
                               value <= fragmentation_limit, reserved_peak, true});
        }
        if (args.has("--no-oom")) {
            const auto ooms = analysis::oom_entries(model);
            results.push_back({"out-of-memory entries", std::to_string(ooms.size()), "0",
                               static_cast<double>(ooms.size()), 0.0, ooms.empty(),
                               ooms.empty() ? model.event_count() : ooms.front(), false});
        }

        if (json) {
            json->begin_object().field("path", path).field("device", model.device());
            json->key("checks").begin_array();
        } else {
            std::cout << path << ", device " << model.device() << ":\n";
        }
        for (const auto& r : results) {
            all_passed = all_passed && r.passed;
            const auto blamed = r.passed
                                    ? std::vector<analysis::stack_bytes>{}
                                    : responsible_stacks(model, r.position, r.blame_fragmentation);
            if (json) {
                json->begin_object()
                    .field("name", r.name)
                    .field("value", r.value)
                    .field("limit", r.limit)
                    .field("passed", r.passed)
                    .field("position", static_cast<uint64_t>(r.position))
                    .key("responsible")
                    .begin_array();
                for (size_t i = 0; i < std::min(count, blamed.size()); ++i) {
                    json->begin_object().field("bytes", blamed[i].bytes).key("frames");
                    write_stack(*json, model.source(), blamed[i].stack);
                    json->end_object();
                }
                json->end_array().end_object();
                continue;
            }
            std::cout << "  " << (r.passed ? "PASS" : "FAIL") << "  " << r.name << " "
                      << r.value_text << (r.passed ? " <= " : " > ") << r.limit_text;
            std::cout << " (" << position_label(r.position) << ")\n";
            if (!r.passed) {
                std::cout << "        stacks holding the most memory then:\n";
                for (size_t i = 0; i < std::min(count, blamed.size()); ++i) {
                    std::cout << "        " << format_bytes(blamed[i].bytes) << " in "
                              << blamed[i].blocks << " blocks:\n";
                    for (const auto& line : stack_lines(model.source(), blamed[i].stack, depth)) {
                        std::cout << "            " << line << "\n";
                    }
                }
            }
        }
        if (json) {
            json->end_array().end_object();
        }
    }
    if (json) {
        json->end_array().field("passed", all_passed).end_object();
    } else {
        std::cout << (all_passed ? "all checks passed\n" : "some checks failed\n");
    }
    return all_passed ? exit_ok : exit_check_failed;
}

}  // namespace memtrail::cli
