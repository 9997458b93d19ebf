#pragma once
// The names and layouts that docs/snapshot-format.md specifies, shared by the writer and the
// reader so the two cannot drift apart.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace memtrail::snapshot::detail {

inline constexpr std::string_view file_magic = "MEMTRAIL";

// Sections of the body map, in the order the writer puts them; tables come before their users.
namespace section {
inline constexpr std::string_view header = "header";
inline constexpr std::string_view settings = "settings";
inline constexpr std::string_view stats = "stats";
inline constexpr std::string_view strings = "strings";
inline constexpr std::string_view frames = "frames";
inline constexpr std::string_view stacks = "stacks";
inline constexpr std::string_view segments = "segments";
inline constexpr std::string_view traces = "traces";
inline constexpr std::string_view annotations = "annotations";
}  // namespace section

// Trace columns. "kind" is always first and always an array: its length is the entry count.
namespace column {
inline constexpr std::string_view kind = "kind";
inline constexpr std::string_view device = "device";
inline constexpr std::string_view address = "address";  // delta from the previous entry
inline constexpr std::string_view size = "size";
inline constexpr std::string_view requested_size = "requested_size";  // minus the expected value
inline constexpr std::string_view stream = "stream";                  // index into "streams"
inline constexpr std::string_view thread = "thread";
inline constexpr std::string_view time_ns = "time_ns";  // delta from the previous entry
inline constexpr std::string_view stack = "stack";
inline constexpr std::string_view user_metadata = "user_metadata";
inline constexpr std::string_view compile_context = "compile_context";
inline constexpr std::string_view name = "name";
}  // namespace column

// Row layouts (msgpack arrays); readers skip extra trailing fields of a newer minor layout.
inline constexpr size_t frame_row_fields = 7;     // kind, function, filename, line, module,
                                                  // module_offset, build_id
inline constexpr size_t segment_row_fields = 13;  // device, address, total_size, allocated_size,
                                                  // active_size, requested_size, stream, flags,
                                                  // pool_id_first, pool_id_second, stack,
                                                  // time_ns, blocks
inline constexpr size_t block_row_fields = 6;  // address - segment address, size, requested_size,
                                               // state, stack, time_ns
inline constexpr size_t annotation_row_fields = 4;  // is_start, name, device, time_ns

inline constexpr uint64_t segment_flag_large = 1;
inline constexpr uint64_t segment_flag_expandable = 2;

// The requested_size column stores the difference from what the kind implies, so the common
// cases (requested == size for alloc/free, 0 otherwise) cost one byte.
inline bool kind_requests_size(uint8_t kind) {
    return kind <= 2;
}  // alloc, free_requested,
   // free_completed

}  // namespace memtrail::snapshot::detail
