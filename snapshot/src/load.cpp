#include "memtrail/snapshot/load.hpp"

#include <system_error>

#include "file_io.hpp"
#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace memtrail::snapshot {

file_kind detect_file_kind(std::span<const uint8_t> bytes) {
    if (looks_like_snapshot(bytes)) {
        return file_kind::memtrail;
    }
    if (!bytes.empty() && bytes[0] == 0x80) {
        return file_kind::torch_pickle;
    }
    return file_kind::unknown;
}

snapshot load_snapshot(std::span<const uint8_t> bytes) {
    switch (detect_file_kind(bytes)) {
        case file_kind::memtrail:
            return read_snapshot(bytes);
        case file_kind::torch_pickle:
            return read_torch_pickle(bytes);
        case file_kind::unknown:
            break;
    }
    throw format_error(
        "snapshot: unknown content at byte 0: neither a memtrail snapshot (\"MEMTRAIL\" or "
        "zstd) nor a PyTorch pickle (protocol 2 or later)");
}

loaded_snapshot load_snapshot(const std::filesystem::path& path) {
    try {
        const detail::file_bytes file(path);
        const std::span<const uint8_t> bytes(file);
        if (bytes.empty()) {
            throw load_error(path.string() + ": the file is empty");
        }
        loaded_snapshot loaded;
        loaded.kind = detect_file_kind(bytes);
        if (loaded.kind == file_kind::unknown) {
            throw load_error(path.string() +
                             ": not a memtrail snapshot (plain or zstd) nor a PyTorch snapshot "
                             "pickle (protocol 2 or later)");
        }
        loaded.snapshot = std::make_shared<snapshot>(load_snapshot(bytes));
        return loaded;
    } catch (const format_error& e) {
        throw load_error(path.string() + ": " + e.what());
    } catch (const std::system_error& e) {
        throw load_error(e.what());  // already "PATH: what: reason"
    }
}

}  // namespace memtrail::snapshot
