#pragma once
// Opens any snapshot file the tools accept, recognised by its content rather than its name:
// memtrail's own format (plain or zstd-compressed) or a PyTorch snapshot pickle. A thin layer on
// snapshot::load_snapshot that puts the path in every error, as the CLI and viewer print them.

#include <filesystem>
#include <memory>
#include <stdexcept>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis {

enum class file_kind { memtrail_snapshot, torch_pickle };

// A file that cannot be read or is not a snapshot; the message starts with the path.
class load_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct loaded_snapshot {
    std::shared_ptr<const snapshot::snapshot> snapshot;
    file_kind kind = file_kind::memtrail_snapshot;
};

/// @throws load_error "PATH: reason" when the file cannot be read or parsed.
loaded_snapshot load_snapshot(const std::filesystem::path& path);

}  // namespace memtrail::analysis
