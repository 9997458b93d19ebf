#pragma once
// The "outside_memory" section of docs/snapshot-format.md: memory outside the caching allocator
// and the accounting of the device's used memory. Versioned on its own ("version" key), so that
// readers of format 1 that predate it skip it, and this reader skips keys of a later version.

#include <cstdint>
#include <vector>

#include "memtrail/snapshot/model.hpp"
#include "msgpack_cursor.hpp"

namespace memtrail::snapshot::detail {

inline constexpr uint32_t outside_memory_version = 1;

// The section's value, msgpack-encoded.
std::vector<uint8_t> encode_outside_memory(const outside_memory& outside);

// Reads the section's value at `in` into `out.outside`; string and stack ids are checked against
// the tables already read into `out`.
void read_outside_memory(msgpack_cursor& in, snapshot& out);

}  // namespace memtrail::snapshot::detail
