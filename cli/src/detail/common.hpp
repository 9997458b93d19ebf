#pragma once
// What the subcommands share: exit codes, opening files (and "-" for standard input and output),
// the --at and --device options, stack and number formatting.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arguments.hpp"
#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/frame_filter.hpp"
#include "memtrail/analysis/frame_text.hpp"
#include "memtrail/snapshot/load.hpp"

namespace memtrail::cli {

inline constexpr int exit_ok = 0;
inline constexpr int exit_check_failed = 1;
inline constexpr int exit_bad_input = 2;  // bad usage or a file that cannot be used

option_spec at_option();
option_spec device_option();
// --depth D, frames printed per stack, and its value (`default_depth` when not given).
option_spec depth_option(size_t default_depth);
size_t depth_of(const parsed_arguments& args, size_t default_depth);
// --all-frames, for the commands that print or export stacks.
option_spec all_frames_option();
// The frames their stacks show: every frame with --all-frames, else folded to the innermost frame
// of interest and the user's own (analysis::with_frame_visibility).
analysis::frame_visibility frames_shown(const parsed_arguments& args);

// The path that stands for standard input (a snapshot read from it) and for standard output
// (-o -).
inline constexpr const char* standard_stream_path = "-";

// Loads the snapshot at `path`, or from standard input when it is "-" (once per run, never from
// a terminal, at most snapshot::stream_read_limit bytes), showing progress on a terminal.
// Throws snapshot::load_error or usage_error.
snapshot::loaded_snapshot load_input(const std::string& path);

// The name messages and reports give `path`: "standard input" for "-".
std::string input_name(const std::string& path);

// Writes what `write` puts on the stream to `path`, or to standard output when it is "-";
// progress on a terminal. Binary content (a snapshot, a pickle) is refused on a terminal with a
// usage_error. A path is written as snapshot::write_output_file writes it (a file replaced
// atomically, a symbolic link written through, a device or FIFO directly). Throws
// std::system_error ("PATH: cannot write: No space left on device").
enum class output_content { text, binary };
void write_output(const std::string& path, output_content content,
                  const std::function<void(std::ostream&)>& write);

struct opened_file {
    std::string path;
    snapshot::file_kind kind = snapshot::file_kind::memtrail;
    analysis::device_model model;
    // The snapshot as loaded, every frame kept: what the categories read (the model's stacks are
    // folded as `frames` said).
    std::shared_ptr<const snapshot::snapshot> recorded;
};

// Every device of the file at `path` (those with a trace or segments), each its own model of the
// one loaded snapshot; only the one --device names when it is given.
std::vector<opened_file> open_every_device(
    const std::string& path, const parsed_arguments& args,
    analysis::frame_visibility frames = analysis::frame_visibility::all_frames);

// The device --device names (default: the first device with a trace, else the first with
// segments, else 0). Throws snapshot::load_error when `source` has nothing for the one named.
int chosen_device(const snapshot::snapshot& source, const std::string& path,
                  const parsed_arguments& args);

// The model of `file` over its recorded stacks, for the categories: nn.Module._apply, the
// optimizer and autograd, which folded stacks leave out, are their evidence.
analysis::device_model model_with_every_frame(const opened_file& file);

// The categories of `model` (analysis::category_map::build); while loads are kept
// (kept_loads.hpp), built once per model.
std::shared_ptr<const analysis::category_map> categories_of(const analysis::device_model& model);

// Loads `path` and builds the model of --device (default: the first device with a trace, else
// the first with segments, else 0), its stacks as `frames` says. Throws snapshot::load_error or
// usage_error.
opened_file open_file(const std::string& path, const parsed_arguments& args,
                      analysis::frame_visibility frames = analysis::frame_visibility::all_frames);

// A moment chosen with --at: EVENT (the state after that trace entry), start, end, peak (most
// allocated) or peak-reserved.
struct moment {
    size_t position = 0;
    std::string label;  // "end", "peak (entry 123)", "entry 42"
};
// `option` names the option in errors (--at, or export's --from and --to, which take the same).
moment resolve_at(const analysis::device_model& model, const std::optional<std::string>& at,
                  std::string_view option = "--at");

// "entry N" for position N + 1, "start" for position 0.
std::string position_label(size_t position);

// The stack's frame labels, innermost first, at most `depth` (then "... N more").
std::vector<std::string> stack_lines(const snapshot::snapshot& source, snapshot::stack_id stack,
                                     size_t depth);
// The innermost frame's label, or unknown_stack_label.
std::string innermost_frame(const snapshot::snapshot& source, snapshot::stack_id stack);

using analysis::printable;

std::string percent(double fraction);       // "12.5%"
std::string hex_address(uint64_t address);  // "0x7f00..."

// The highest value of a curve.
uint64_t peak_bytes(const analysis::device_model& model, analysis::series s);
// Index of the model whose reserved memory peaks highest (the first on a tie).
size_t highest_reserved_peak(const std::vector<const analysis::device_model*>& models);
std::string file_kind_name(snapshot::file_kind kind);

}  // namespace memtrail::cli
