// memtrail snapshot PID -o FILE : a snapshot of a running process, taken now through its attach
// endpoint (docs/live.md) and written where asked.

#include <iostream>
#include <string>

#include "detail/attach_target.hpp"
#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace memtrail::cli {

namespace {

enum class snapshot_format { memtrail, pickle };

snapshot_format chosen_format(const parsed_arguments& args, const std::string& path) {
    if (const auto format = args.value("--format")) {
        if (*format == "memtrail") {
            return snapshot_format::memtrail;
        }
        if (*format == "pickle" || *format == "torch-pickle") {
            return snapshot_format::pickle;
        }
        throw usage_error("--format: '" + *format + "' is not a format (memtrail or pickle)");
    }
    return path.ends_with(".pickle") ? snapshot_format::pickle : snapshot_format::memtrail;
}

uint64_t active_bytes(const snapshot::snapshot& s) {
    uint64_t bytes = 0;
    for (const auto& segment : s.segments) {
        bytes += segment.allocated_size;
    }
    return bytes;
}

uint64_t reserved_bytes(const snapshot::snapshot& s) {
    uint64_t bytes = 0;
    for (const auto& segment : s.segments) {
        bytes += segment.total_size;
    }
    return bytes;
}

}  // namespace

command_spec snapshot_spec() {
    return {"snapshot",
            "PID -o FILE [--format memtrail|pickle]",
            "A snapshot of a running process that records with memtrail, taken now: its "
            "allocator's state and history, written to FILE.",
            "The process is found by its pid through its attach endpoint (docs/live.md): it must "
            "run as the same user and record with librecorder (memtrail run, the Python package "
            "or a program linked with it). The format follows FILE's name (.pickle: a PyTorch "
            "pickle; else memtrail's, zstd-compressed when it ends in .zst) unless --format "
            "says.",
            1,
            1,
            {{"--output", "-o", "FILE", "where the snapshot goes ('-': standard output)", false},
             {"--format", "", "FORMAT", "memtrail or pickle (default: by FILE's name)", false}},
            false};
}

int run_snapshot(const parsed_arguments& args) {
    const pid_t pid = parse_pid("PID", args.positional[0]);
    const auto output = args.value("--output");
    if (!output) {
        throw usage_error("-o FILE is required: where the snapshot goes");
    }
    const snapshot_format format = chosen_format(args, *output);
    live::client attached(pid);
    const live::frame received = attached.take_snapshot(live::client::contents::full);
    const snapshot::snapshot taken = snapshot_of(received, pid);
    std::vector<uint8_t> bytes;
    if (format == snapshot_format::pickle) {
        bytes = snapshot::write_torch_pickle(taken);
    } else if (output->ends_with(".zst")) {
        bytes = snapshot::write_snapshot(taken, {.compress = snapshot::compression::zstd});
    } else {
        bytes = received.payload;
    }
    write_output(*output, output_content::binary, [&](std::ostream& out) {
        out.write(reinterpret_cast<const char*>(bytes.data()),
                  static_cast<std::streamsize>(bytes.size()));
    });
    size_t entries = 0;
    for (const auto& trace : taken.traces) {
        entries += trace.entries.size();
    }
    std::cerr << "memtrail: snapshot of process " << pid << " ("
              << analysis::format_bytes(active_bytes(taken)) << " allocated, "
              << analysis::format_bytes(reserved_bytes(taken)) << " reserved, " << entries
              << " trace entries) written to " << input_name(*output) << "\n";
    return exit_ok;
}

}  // namespace memtrail::cli
