#pragma once
// Opens any snapshot file memtrail understands, recognised by its first bytes: a memtrail
// snapshot ("MEMTRAIL", or a zstd frame around one) or a PyTorch snapshot pickle (pickle
// protocol 2 or later starts with the PROTO opcode 0x80).

#include <cstdint>
#include <filesystem>
#include <span>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::snapshot {

enum class file_kind : uint8_t { memtrail, torch_pickle, unknown };

file_kind detect_file_kind(std::span<const uint8_t> bytes);

/// @throws format_error for unknown or damaged content.
snapshot load_snapshot(std::span<const uint8_t> bytes);

/// @throws format_error as above; std::system_error when the file cannot be read.
snapshot load_snapshot(const std::filesystem::path& path);

}  // namespace memtrail::snapshot
