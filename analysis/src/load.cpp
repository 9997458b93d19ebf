#include "memtrail/analysis/load.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/load.hpp"

namespace memtrail::analysis {
namespace {

std::vector<uint8_t> read_file(const std::filesystem::path& path) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
        throw load_error(path.string() + ": is a directory, not a snapshot file");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw load_error(path.string() + ": cannot open: " + std::strerror(errno));
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    if (in.bad()) {
        throw load_error(path.string() + ": read failed");
    }
    return bytes;
}

}  // namespace

loaded_snapshot load_snapshot(const std::filesystem::path& path) {
    const std::vector<uint8_t> bytes = read_file(path);
    if (bytes.empty()) {
        throw load_error(path.string() + ": the file is empty");
    }
    loaded_snapshot loaded;
    switch (snapshot::detect_file_kind(bytes)) {
        case snapshot::file_kind::memtrail:
            loaded.kind = file_kind::memtrail_snapshot;
            break;
        case snapshot::file_kind::torch_pickle:
            loaded.kind = file_kind::torch_pickle;
            break;
        case snapshot::file_kind::unknown:
            throw load_error(path.string() +
                             ": not a memtrail snapshot (plain or zstd) nor a PyTorch snapshot "
                             "pickle (protocol 2 or later)");
    }
    try {
        loaded.snapshot = std::make_shared<snapshot::snapshot>(snapshot::load_snapshot(bytes));
    } catch (const snapshot::format_error& e) {
        throw load_error(path.string() + ": " + e.what());
    }
    return loaded;
}

}  // namespace memtrail::analysis
