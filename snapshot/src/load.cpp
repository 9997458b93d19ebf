#include "memtrail/snapshot/load.hpp"

#include <system_error>

#include "detail/file_io.hpp"
#include "detail/zstd_codec.hpp"
#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace memtrail::snapshot {

namespace {

file_kind plain_kind(std::span<const uint8_t> bytes) {
    if (looks_like_snapshot(bytes) && !detail::has_zstd_magic(bytes)) {
        return file_kind::memtrail;
    }
    if (!bytes.empty() && bytes[0] == 0x80) {
        return file_kind::torch_pickle;
    }
    return file_kind::unknown;
}

}  // namespace

file_kind detect_file_kind(std::span<const uint8_t> bytes) {
    if (detail::has_zstd_magic(bytes)) {
        // `zstd run.pickle` compresses PyTorch's pickles too: what the frame holds decides.
        const std::vector<uint8_t> start = detail::zstd_decompress_start(bytes, 8);
        return plain_kind(start);
    }
    return plain_kind(bytes);
}

snapshot load_snapshot(std::span<const uint8_t> bytes) {
    switch (detect_file_kind(bytes)) {
        case file_kind::memtrail:
            return read_snapshot(bytes);
        case file_kind::torch_pickle:
            if (detail::has_zstd_magic(bytes)) {
                const std::vector<uint8_t> plain = detail::zstd_decompress_bounded(bytes);
                return read_torch_pickle(plain);
            }
            return read_torch_pickle(bytes);
        case file_kind::unknown:
            break;
    }
    throw format_error(
        "snapshot: unknown content at byte 0: neither a memtrail snapshot nor a PyTorch pickle "
        "(protocol 2 or later), plain or zstd-compressed");
}

namespace {

// The snapshot in `bytes`, read from what `name` names; format errors name it too.
loaded_snapshot load_named(std::span<const uint8_t> bytes, const std::string& name) {
    if (bytes.empty()) {
        throw load_error(name + ": the file is empty");
    }
    loaded_snapshot loaded;
    loaded.kind = detect_file_kind(bytes);
    if (loaded.kind == file_kind::unknown) {
        throw load_error(name +
                         (detail::has_zstd_magic(bytes) ? ": zstd-compressed, but holds" : ": is") +
                         " neither a memtrail snapshot nor a PyTorch snapshot pickle (protocol 2 "
                         "or later); both are read plain or zstd-compressed");
    }
    try {
        loaded.snapshot = std::make_shared<snapshot>(load_snapshot(bytes));
    } catch (const format_error& e) {
        throw load_error(name + ": " + e.what());
    }
    return loaded;
}

}  // namespace

loaded_snapshot load_snapshot(const std::filesystem::path& path) {
    try {
        const detail::file_bytes file(path);
        return load_named(std::span<const uint8_t>(file), path.string());
    } catch (const std::system_error& e) {
        throw load_error(e.what());  // already "PATH: what: reason"
    }
}

loaded_snapshot load_snapshot_from_stream(int fd, const std::string& name, size_t limit) {
    try {
        const std::vector<uint8_t> bytes = detail::read_stream(fd, name, limit);
        if (bytes.empty()) {
            throw load_error(name + ": is empty (nothing came before its end)");
        }
        return load_named(bytes, name);
    } catch (const std::system_error& e) {
        throw load_error(e.what());
    }
}

}  // namespace memtrail::snapshot
