#pragma once
// Emits pickle protocol 4 opcodes for plain data, the way Python's pickler would: the smallest
// integer opcode that fits, SHORT_BINUNICODE for short strings, MEMOIZE / BINGET for shared
// values.

#include <cstdint>
#include <string_view>
#include <vector>

namespace memtrail::snapshot::detail {

class pickle_emitter {
  public:
    static constexpr uint32_t not_memoized = UINT32_MAX;

    pickle_emitter();

    void none();
    void boolean(bool value);
    void integer(int64_t value);
    void unsigned_integer(uint64_t value);
    void floating(double value);
    void string(std::string_view value);
    // A string written once and referred to by BINGET afterwards; `slot` remembers its memo index
    // and starts as not_memoized.
    void memo_string(std::string_view value, uint32_t& slot);

    void empty_dict() { op(0x7d); }
    void empty_list() { op(0x5d); }
    void mark() { op(0x28); }
    void setitems() { op(0x75); }
    void appends() { op(0x65); }
    void tuple2() { op(0x86); }
    // Memoizes the value on top of the stack and returns its memo index.
    uint32_t memoize();
    void get(uint32_t memo_index);
    // Ends the pickle and hands over the bytes.
    std::vector<uint8_t> finish();

  private:
    void op(uint8_t code) { out_.push_back(code); }
    void le(uint64_t value, int bytes);

    std::vector<uint8_t> out_;
    uint32_t memo_size_ = 0;
};

}  // namespace memtrail::snapshot::detail
