#pragma once
// A pickle virtual machine for plain data: it turns the opcodes that dicts, lists, tuples,
// strings, numbers, booleans and None need into a tree of values, and rejects every opcode that
// would import or call something. Strings are views into the input, containers are chains of item
// chunks in one arena, so a million-entry trace costs a few allocations, not millions.
//
// Every allocation is bounded by the input's size: each value, item, memo slot and stack slot
// needs at least one input byte.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memtrail::snapshot::detail {

enum class pickle_kind : uint8_t {
    none,
    boolean,
    integer,       // fits int64
    big_unsigned,  // above INT64_MAX, fits uint64
    big_integer,   // beyond 64 bits either way; as_text gives its little-endian encoding
    floating,
    string,
    bytes,
    list,
    tuple,
    dict,
};

std::string_view pickle_kind_name(pickle_kind kind);

using value_index = uint32_t;

struct pickle_value {
    pickle_kind kind = pickle_kind::none;
    uint32_t offset = 0;   // byte offset of the opcode that made the value
    uint64_t payload = 0;  // the number's bits, (start << 32 | length) of text or of a
                           // big_integer's encoding, container index
};

class pickle_tree {
  public:
    // Runs the pickle in `bytes` to its STOP opcode. Throws format_error.
    explicit pickle_tree(std::span<const uint8_t> bytes);

    value_index root() const { return root_; }
    const pickle_value& at(value_index v) const { return values_[v]; }
    size_t value_count() const { return values_.size(); }

    int64_t as_int(value_index v) const { return static_cast<int64_t>(values_[v].payload); }
    bool is_any_integer(value_index v) const {
        const auto kind = values_[v].kind;
        return kind == pickle_kind::integer || kind == pickle_kind::big_unsigned ||
               kind == pickle_kind::big_integer;
    }
    uint64_t as_uint(value_index v) const { return values_[v].payload; }
    double as_double(value_index v) const;
    bool as_bool(value_index v) const { return values_[v].payload != 0; }
    std::string_view as_text(value_index v) const;  // string, bytes or big_integer's encoding
    uint32_t container_of(value_index v) const { return static_cast<uint32_t>(values_[v].payload); }

    // Items of a list or tuple, keys and values alternating for a dict.
    uint32_t item_count(value_index container) const;
    template <class F>
    void for_each_item(value_index container, F&& f) const {
        for (uint32_t c = containers_[container_of(container)].first_chunk; c != no_chunk;
             c = chunks_[c].next) {
            const chunk& ch = chunks_[c];
            for (uint32_t i = 0; i < ch.count; ++i) {
                f(items_[ch.begin + i]);
            }
        }
    }

  private:
    static constexpr uint32_t no_chunk = UINT32_MAX;
    struct chunk {
        uint32_t begin = 0;
        uint32_t count = 0;
        uint32_t next = no_chunk;
    };
    struct container_record {
        uint32_t first_chunk = no_chunk;
        uint32_t last_chunk = no_chunk;
        uint32_t size = 0;
    };

    class runner;
    friend class runner;

    std::span<const uint8_t> bytes_;
    std::vector<pickle_value> values_;
    std::vector<container_record> containers_;
    std::vector<chunk> chunks_;
    std::vector<value_index> items_;
    value_index root_ = 0;
};

}  // namespace memtrail::snapshot::detail
