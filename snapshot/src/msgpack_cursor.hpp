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

    // Each reader names `what` in its error ("trace column 'size'").
    uint64_t read_uint(std::string_view what);
    int64_t read_int(std::string_view what);  // any msgpack integer that fits int64
    double read_double(std::string_view what);
    bool read_bool(std::string_view what);
    std::string_view read_string(std::string_view what);
    // Element count, checked against the bytes left.
    uint32_t read_array(std::string_view what);
    uint32_t read_map(std::string_view what);
    void skip(std::string_view what);  // any value, up to a fixed nesting depth

    [[noreturn]] void fail(size_t offset, std::string_view what, const std::string& detail) const;

  private:
    uint8_t peek(std::string_view what) const;
    uint64_t take_be(size_t n, std::string_view what);
    [[noreturn]] void fail_type(std::string_view what, std::string_view expected) const;
    void skip_at_depth(std::string_view what, int depth);

    std::span<const uint8_t> bytes_;
    size_t pos_;
};

}  // namespace memtrail::snapshot::detail
