// memtrail categories FILE : what the allocated memory is for at one moment (parameters,
// optimizer state, gradients, activations, ...), and what evidence decided it.

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "detail/report_json.hpp"
#include "detail/text_table.hpp"
#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/size_text.hpp"

namespace memtrail::cli {
namespace {

using analysis::category_rule;
using analysis::format_bytes;
using analysis::memory_category;
using analysis::memory_category_count;

std::string confidence_text(double confidence) {
    char text[16];
    std::snprintf(text, sizeof text, "%.2f", confidence);
    return text;
}

// The rules that decided something at this moment, most bytes first.
std::vector<size_t> rules_in_use(const analysis::category_breakdown& at) {
    std::vector<size_t> order;
    for (size_t r = 0; r < analysis::category_rule_count; ++r) {
        if (at.rules[r].blocks != 0) {
            order.push_back(r);
        }
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return at.rules[x].bytes > at.rules[y].bytes; });
    return order;
}

std::string generation_text(const analysis::generation_phases& g) {
    std::string text = "generate(): ";
    if (g.prefill_end > g.prefill_begin) {
        text += "prefill at entries " + std::to_string(g.prefill_begin) + "-" +
                std::to_string(g.prefill_end - 1) + ", ";
    }
    return text + std::to_string(g.decode_starts.size()) + " decode steps";
}

std::string steps_text(const analysis::category_map& map) {
    const analysis::training_steps& steps = map.steps();
    std::string text;
    if (map.kind() == analysis::job_kind::inference) {
        text = "inference (no backward, no optimizer): no training steps";
    } else if (steps.source == analysis::step_source::none) {
        text = "no training steps found";
    } else {
        text = "training steps end at " + std::to_string(steps.boundaries.size()) +
               " points (from " + std::string(analysis::step_source_name(steps.source)) + ")";
    }
    if (map.generation().found()) {
        text += "; " + generation_text(map.generation());
    }
    return text;
}

void write_category_bytes(json_writer& json, const analysis::category_breakdown& breakdown) {
    json.begin_object();
    for (size_t c = 0; c < memory_category_count; ++c) {
        json.field(analysis::category_name(memory_category(c)), breakdown.totals[c].bytes);
    }
    json.end_object();
}

void print_json(const opened_file& file, const moment& at, const analysis::category_map& map,
                const analysis::category_breakdown& breakdown) {
    json_writer json(std::cout);
    json.begin_object().field("path", file.path).field("device", file.model.device());
    json.key("at");
    write_moment(json, file.model, at);
    json.key("steps")
        .begin_object()
        .field("source", analysis::step_source_name(map.steps().source))
        .key("boundaries")
        .begin_array();
    for (const size_t b : map.steps().boundaries) {
        json.value(static_cast<uint64_t>(b));
    }
    json.end_array().end_object();
    json.field("kind", analysis::job_kind_name(map.kind()));
    if (const auto& g = map.generation(); g.found()) {
        json.key("generation")
            .begin_object()
            .field("prefill_begin", static_cast<uint64_t>(g.prefill_begin))
            .field("prefill_end", static_cast<uint64_t>(g.prefill_end))
            .key("decode_starts")
            .begin_array();
        for (const size_t d : g.decode_starts) {
            json.value(static_cast<uint64_t>(d));
        }
        json.end_array().end_object();
    }
    json.key("contradictions").begin_array();
    for (const auto& c : analysis::find_contradictions(breakdown, map.kind())) {
        json.value(c.text);
    }
    json.end_array();
    json.field("allocated", breakdown.total_bytes());
    json.key("categories");
    write_category_bytes(json, breakdown);
    json.key("details").begin_object();
    for (size_t c = 0; c < memory_category_count; ++c) {
        const auto& t = breakdown.totals[c];
        json.key(analysis::category_name(memory_category(c)))
            .begin_object()
            .field("bytes", t.bytes)
            .field("requested", t.requested)
            .field("blocks", static_cast<uint64_t>(t.blocks))
            .field("confidence", t.confidence)
            .end_object();
    }
    json.end_object().key("rules").begin_array();
    for (const size_t r : rules_in_use(breakdown)) {
        const auto rule = category_rule(r);
        json.begin_object()
            .field("category", analysis::category_name(analysis::rule_category(rule)))
            .field("evidence", analysis::rule_description(rule))
            .field("confidence", static_cast<double>(analysis::rule_confidence(rule)))
            .field("bytes", breakdown.rules[r].bytes)
            .field("blocks", static_cast<uint64_t>(breakdown.rules[r].blocks))
            .end_object();
    }
    json.end_array().end_object();
}

void print_text(const opened_file& file, const moment& at, const analysis::category_map& map,
                const analysis::category_breakdown& breakdown) {
    const uint64_t total = breakdown.total_bytes();
    std::cout << file.path << ", device " << file.model.device() << ", at " << at.label << ": "
              << format_bytes(total) << " allocated; " << steps_text(map) << "\n\n";
    std::vector<size_t> order(memory_category_count);
    for (size_t c = 0; c < memory_category_count; ++c) {
        order[c] = c;
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
        return breakdown.totals[x].bytes > breakdown.totals[y].bytes;
    });
    text_table table({"<category", "bytes", "share", "blocks", "requested", "confidence"});
    for (const size_t c : order) {
        const auto& t = breakdown.totals[c];
        table.add_row(
            {std::string(analysis::category_name(memory_category(c))), format_bytes(t.bytes),
             percent(total == 0 ? 0.0 : static_cast<double>(t.bytes) / static_cast<double>(total)),
             std::to_string(t.blocks), format_bytes(t.requested),
             t.blocks == 0 ? "-" : confidence_text(t.confidence)});
    }
    table.print(std::cout, "  ");
    const auto contradictions = analysis::find_contradictions(breakdown, map.kind());
    if (!contradictions.empty()) {
        std::cout << "\ncontradictions (a rule may have misread the trace):\n";
        for (const auto& c : contradictions) {
            std::cout << "  " << c.text << "\n";
        }
    }
    const auto rules = rules_in_use(breakdown);
    if (rules.empty()) {
        return;
    }
    std::cout << "\nthe evidence:\n";
    text_table evidence({"bytes", "blocks", "<category", "confidence", "<because"});
    for (const size_t r : rules) {
        const auto rule = category_rule(r);
        evidence.add_row({format_bytes(breakdown.rules[r].bytes),
                          std::to_string(breakdown.rules[r].blocks),
                          std::string(analysis::category_name(analysis::rule_category(rule))),
                          confidence_text(analysis::rule_confidence(rule)),
                          std::string(analysis::rule_description(rule))});
    }
    evidence.print(std::cout, "  ");
}

}  // namespace

command_spec categories_spec() {
    return {"categories",
            "FILE [--at EVENT|peak|end] [--device N] [--json]",
            "What the allocated memory is for, in the categories of PyTorch's memory profiler "
            "(parameter, optimizer_state, gradient, activation, temporary, input, "
            "autograd_detail) and three more: kv_cache (a generation's), workspace (cuBLAS's, "
            "cuDNN's) and collective (FSDP's unsharded parameters, all-gather and "
            "reduce-scatter buffers); unknown where nothing says. Decided from the frames each "
            "block was allocated and freed under, its thread, its lifetime and the training "
            "steps of the trace, or the phases of a generation.",
            "Each category's confidence is the byte-weighted mean of its blocks' (0 to 1); "
            "'the evidence' lists the rules that decided them. Blocks no rule explains are "
            "unknown, never guessed. Categories that cannot all be true (optimizer state "
            "without parameters, say) are listed as contradictions.\n",
            1,
            1,
            {at_option(), device_option()}};
}

int run_categories(const parsed_arguments& args) {
    // The categories read every recorded frame; stacks folded for showing would hide evidence.
    const opened_file file =
        open_file(args.positional[0], args, analysis::frame_visibility::all_frames);
    const moment at = resolve_at(file.model, args.value("--at"));
    const auto map = categories_of(file.model);
    const auto breakdown = analysis::categories_at(file.model, *map, at.position);
    if (args.json) {
        print_json(file, at, *map, breakdown);
    } else {
        print_text(file, at, *map, breakdown);
    }
    return exit_ok;
}

void print_categories_line(const analysis::device_model& model, const moment& at,
                           std::string_view lead) {
    const auto map = categories_of(model);
    if (!map->any_known()) {
        return;
    }
    std::cout << lead << "by meaning, at " << at.label << ": "
              << analysis::categories_line(analysis::categories_at(model, *map, at.position))
              << "\n";
}

void write_categories(json_writer& json, const analysis::device_model& model, const moment& at) {
    write_category_bytes(json, analysis::categories_at(model, *categories_of(model), at.position));
}

}  // namespace memtrail::cli
