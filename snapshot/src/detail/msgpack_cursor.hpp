#pragma once
// A pull decoder for msgpack that reads a value at a time straight into the model. Every length
// is checked against the bytes left before anything is reserved (an element needs at least one
// byte), every read is bounds-checked, and errors are format_errors naming what was expected and
// the byte offset.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace memtrail::snapshot::detail {

class msgpack_cursor {
  public:
    explicit msgpack_cursor(std::span<const uint8_t> bytes, size_t offset = 0)
        : bytes_(bytes), pos_(offset) {}

    size_t offset() const { return pos_; }
    size_t left() const { return bytes_.size() - pos_; }
    bool at_end() const { return pos_ == bytes_.size(); }

    bool next_is_array() const;

    // Each reader names `what` in its error ("trace column 'size'"). The common encodings,
    // nearly every value of a trace column, decode inline; the rest and every error out of line.
    uint64_t read_uint(std::string_view what) {
        if (pos_ < bytes_.size()) {
            const uint8_t tag = bytes_[pos_];
            if (tag <= 0x7f) {
                ++pos_;
                return tag;
            }
            if (tag >= 0xcc && tag <= 0xcf && (size_t{1} << (tag - 0xcc)) < left()) {
                ++pos_;
                return take_big_endian(size_t{1} << (tag - 0xcc));
            }
        }
        return read_encoded_uint(what);
    }
    int64_t read_int(std::string_view what) {  // any msgpack integer that fits int64
        if (pos_ < bytes_.size()) {
            const uint8_t tag = bytes_[pos_];
            if (tag <= 0x7f || tag >= 0xe0) {
                ++pos_;
                return static_cast<int8_t>(tag);
            }
            if (tag >= 0xd0 && tag <= 0xd3 && (size_t{1} << (tag - 0xd0)) < left()) {
                const size_t n = size_t{1} << (tag - 0xd0);
                ++pos_;
                // Sign-extends the n-byte value.
                const int shift = static_cast<int>(64 - 8 * n);
                return static_cast<int64_t>(take_big_endian(n) << shift) >> shift;
            }
            if (tag >= 0xcc && tag <= 0xcf && (size_t{1} << (tag - 0xcc)) < left()) {
                const size_t start = pos_++;
                const uint64_t v = take_big_endian(size_t{1} << (tag - 0xcc));
                if (v <= static_cast<uint64_t>(INT64_MAX)) {
                    return static_cast<int64_t>(v);
                }
                pos_ = start;  // too large: the error comes from the full decoder
            }
        }
        return read_encoded_int(what);
    }
    double read_double(std::string_view what);
    bool read_bool(std::string_view what);
    std::string_view read_string(std::string_view what);
    // Element count, checked against the bytes left.
    uint32_t read_array(std::string_view what);
    uint32_t read_map(std::string_view what);
    void skip(std::string_view what);  // any value, up to a fixed nesting depth

    [[noreturn]] void fail(size_t offset, std::string_view what, const std::string& detail) const;

  private:
    // n bytes, big-endian, known to be there.
    uint64_t take_big_endian(size_t n) {
        uint64_t v = 0;
        for (size_t i = 0; i < n; ++i) {
            v = (v << 8) | bytes_[pos_ + i];
        }
        pos_ += n;
        return v;
    }
    uint64_t read_encoded_uint(std::string_view what);
    int64_t read_encoded_int(std::string_view what);
    uint8_t peek(std::string_view what) const;
    uint64_t take_be(size_t n, std::string_view what);
    [[noreturn]] void fail_type(std::string_view what, std::string_view expected) const;
    void skip_at_depth(std::string_view what, int depth);

    std::span<const uint8_t> bytes_;
    size_t pos_;
};

}  // namespace memtrail::snapshot::detail
