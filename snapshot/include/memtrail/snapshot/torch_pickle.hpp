#pragma once
// PyTorch's snapshot pickle: what torch.cuda.memory._dump_snapshot() writes (the dictionary of
// torch.cuda.memory._snapshot(): segments, device_traces, allocator_settings,
// external_annotations), read into and written from the snapshot model.
//
// The reader implements only the pickle opcodes plain data needs (protocols 2 to 5): it never
// imports or calls anything, so a hostile file can at worst be rejected.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::snapshot {

/// Reads a PyTorch snapshot pickle held in memory.
/// @throws format_error when the bytes are not such a pickle; the message names what was expected
///         and the byte offset.
snapshot read_torch_pickle(std::span<const uint8_t> bytes);

/// Reads a PyTorch snapshot pickle file (load_snapshot reads any format).
/// @throws format_error as above; std::system_error when the file cannot be read; load_error
///         (load.hpp) when it is not a regular file.
snapshot read_torch_pickle(const std::filesystem::path& path);

/// How the writer lays out the `frames` lists of trace entries, segments and blocks. Frame dicts
/// are always written once and shared.
enum class frames_lists : uint8_t {
    /// One list per stack, shared by every entry and block with that stack: the smallest file.
    shared,
    /// A list of its own for every entry, segment and block, as torch.cuda.memory._snapshot()
    /// builds them (a traceback per allocation, symbolized into its own list of shared frame
    /// dicts): the layout of a real PyTorch pickle, for measuring how fast one reads.
    one_per_entry,
};

/// Writes `s` as a protocol 4 pickle with PyTorch's schema, loadable by pickle.load() and
/// torch.cuda._memory_viz. memtrail's annotation trace entries are written with actions
/// "user_start", "user_end" and "user_marker" and a "name" key.
std::vector<uint8_t> write_torch_pickle(const snapshot& s,
                                        frames_lists lists = frames_lists::shared);

/// Writes the pickle to `path` as write_output_file does (output_file.hpp): atomically for a
/// file, through a symbolic link, directly to a device or FIFO.
/// @throws std::system_error when the file cannot be written.
void write_torch_pickle(const snapshot& s, const std::filesystem::path& path,
                        frames_lists lists = frames_lists::shared);

}  // namespace memtrail::snapshot
