// The pickle machine: runs the opcodes of a PyTorch snapshot pickle (protocol 2 to 5, the subset
// pickle.dumps writes for dicts, lists, strings and numbers) into a tree of values, refusing every
// opcode that would import or call something, and checking every length against the bytes left.
//
// Index of this file:
// [SECTION] opcodes
// [SECTION] the value tree
// [SECTION] the machine: reading the input
// [SECTION] the machine: values, containers and the memo
// [SECTION] the machine: one opcode
// [SECTION] running it

#include "detail/pickle_vm.hpp"

#include <bit>
#include <cstring>
#include <optional>
#include <string>

#include "detail/pages_ahead.hpp"
#include "memtrail/snapshot/format_error.hpp"

namespace memtrail::snapshot::detail {

namespace {

// Deeper than any snapshot (dict > list > dict > list > dict) needs, shallow enough to stop a
// file made of nothing but MARKs early.
constexpr size_t max_mark_depth = 512;

//-------------------------------------------------------------------------------------------------
// [SECTION] opcodes
//-------------------------------------------------------------------------------------------------

// The opcodes a file may hold, as pickletools names them. Everything else is refused.
enum opcode : uint8_t {
    op_mark = '(',
    op_stop = '.',
    op_binint = 'J',
    op_binint1 = 'K',
    op_binint2 = 'M',
    op_none = 'N',
    op_binunicode = 'X',
    op_binbytes = 'B',
    op_short_binbytes = 'C',
    op_append = 'a',
    op_appends = 'e',
    op_dict = 'd',
    op_empty_dict = '}',
    op_empty_list = ']',
    op_empty_tuple = ')',
    op_binfloat = 'G',
    op_binget = 'h',
    op_long_binget = 'j',
    op_list = 'l',
    op_binput = 'q',
    op_long_binput = 'r',
    op_setitem = 's',
    op_setitems = 'u',
    op_tuple = 't',
    op_proto = 0x80,
    op_tuple1 = 0x85,
    op_tuple2 = 0x86,
    op_tuple3 = 0x87,
    op_newtrue = 0x88,
    op_newfalse = 0x89,
    op_long1 = 0x8a,
    op_long4 = 0x8b,
    op_short_binunicode = 0x8c,
    op_binunicode8 = 0x8d,
    op_binbytes8 = 0x8e,
    op_memoize = 0x94,
    op_frame = 0x95,
    op_bytearray8 = 0x96,
};

// Names of refused opcodes that code-executing pickles use, so the error says why.
std::string refused_opcode_name(uint8_t op) {
    switch (op) {
        case 'c':
            return "GLOBAL";
        case 0x93:
            return "STACK_GLOBAL";
        case 'R':
            return "REDUCE";
        case 'b':
            return "BUILD";
        case 'i':
            return "INST";
        case 'o':
            return "OBJ";
        case 0x81:
            return "NEWOBJ";
        case 0x92:
            return "NEWOBJ_EX";
        case 'P':
            return "PERSID";
        case 'Q':
            return "BINPERSID";
        case 0x82:
        case 0x83:
        case 0x84:
            return "EXT";
        case 0x97:
            return "NEXT_BUFFER";
        case 0x98:
            return "READONLY_BUFFER";
        case 'V':
            return "UNICODE";
        case 'S':
            return "STRING";
        case 'I':
            return "INT";
        case 'L':
            return "LONG";
        case 'F':
            return "FLOAT";
        case '0':
            return "POP";
        case '1':
            return "POP_MARK";
        case '2':
            return "DUP";
        case 'g':
            return "GET";
        case 'p':
            return "PUT";
        default:
            return "unknown";
    }
}

std::string hex_byte(uint8_t b) {
    static constexpr char digits[] = "0123456789abcdef";
    return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

}  // namespace

//-------------------------------------------------------------------------------------------------
// [SECTION] the value tree
//-------------------------------------------------------------------------------------------------

std::string_view pickle_kind_name(pickle_kind kind) {
    switch (kind) {
        case pickle_kind::none:
            return "None";
        case pickle_kind::boolean:
            return "a bool";
        case pickle_kind::integer:
            return "an integer";
        case pickle_kind::big_unsigned:
            return "an integer above INT64_MAX";
        case pickle_kind::big_integer:
            return "an integer beyond 64 bits";
        case pickle_kind::floating:
            return "a float";
        case pickle_kind::string:
            return "a string";
        case pickle_kind::bytes:
            return "bytes";
        case pickle_kind::list:
            return "a list";
        case pickle_kind::tuple:
            return "a tuple";
        case pickle_kind::dict:
            return "a dict";
    }
    return "an unknown value";
}

double pickle_tree::as_double(value_index v) const {
    return std::bit_cast<double>(values_[v].payload);
}

std::string_view pickle_tree::as_text(value_index v) const {
    const uint64_t payload = values_[v].payload;
    const auto* start = bytes_.data() + (payload >> 32);
    return {reinterpret_cast<const char*>(start), static_cast<size_t>(payload & 0xffffffffu)};
}

uint32_t pickle_tree::item_count(value_index container) const {
    return containers_[container_of(container)].size;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the machine: reading the input
//-------------------------------------------------------------------------------------------------

class pickle_tree::runner {
  public:
    runner(pickle_tree& tree, std::span<const uint8_t> bytes) : tree_(tree), bytes_(bytes) {}

    value_index run() {
        // Offsets and lengths are kept in 32 bits; a 4 GiB snapshot pickle is not a real case.
        if (bytes_.size() >= UINT32_MAX) {
            fail(0, "input of " + std::to_string(bytes_.size()) + " bytes is too large");
        }
        // Reserving takes address space, not memory, until used: enough that a snapshot's
        // tree is never copied as it grows (a copy touches the whole array again). PyTorch's
        // pickles make a value per 13 to 16 bytes (integers are not memoized), an item per 3 to
        // 5 (keys and frames lists are memo references), a container per 50 or more and a memo
        // slot per 30 or more.
        tree_.values_.reserve(bytes_.size() / 8);
        tree_.items_.reserve(bytes_.size() / 2);
        tree_.containers_.reserve(bytes_.size() / 16);
        tree_.chunks_.reserve(bytes_.size() / 16);
        memo_.reserve(bytes_.size() / 8);
        if (bytes_.size() >= pages_ahead_thread::ahead) {
            values_ahead_.emplace(tree_.values_);
            items_ahead_.emplace(tree_.items_);
        }
        while (pos_ < bytes_.size()) {
            op_offset_ = pos_;
            const uint8_t op = bytes_[pos_++];
            if (op == op_stop) {
                require_available(1, "STOP");
                return stack_.back();
            }
            step(op);
        }
        fail(bytes_.size(), "missing STOP opcode (end of input)");
    }

  private:
    [[noreturn, gnu::cold, gnu::noinline]] void fail(size_t offset, const std::string& what,
                                                     const std::string& detail = {}) const {
        std::string message = "pickle: " + what + " at byte " + std::to_string(offset);
        if (!detail.empty()) {
            message += ": " + detail;
        }
        throw format_error(message);
    }

    [[noreturn, gnu::cold, gnu::noinline]] void fail_truncated(size_t n, const char* what) const {
        fail(op_offset_, std::string("truncated ") + what,
             "needs " + std::to_string(n) + " bytes, " + std::to_string(bytes_.size() - pos_) +
                 " left");
    }

    const uint8_t* take(size_t n, const char* what) {
        if (n > bytes_.size() - pos_) {
            fail_truncated(n, what);
        }
        const uint8_t* p = bytes_.data() + pos_;
        pos_ += n;
        return p;
    }

    // An n-byte little-endian unsigned number (every opcode's argument has a fixed width).
    template <size_t n>
    uint64_t read_le(const char* what) {
        const uint8_t* p = take(n, what);
        if constexpr (std::endian::native == std::endian::little) {
            uint64_t v = 0;
            std::memcpy(&v, p, n);
            return v;
        } else {
            uint64_t v = 0;
            for (size_t i = 0; i < n; ++i) {
                v |= uint64_t{p[i]} << (8 * i);
            }
            return v;
        }
    }

    size_t fence() const { return marks_.empty() ? 0 : marks_.back(); }

    void require_available(size_t n, const char* op) const {
        if (stack_.size() - fence() < n) {
            fail(op_offset_, std::string(op) + " needs " + std::to_string(n) +
                                 " value(s) on the stack, has " +
                                 std::to_string(stack_.size() - fence()));
        }
    }

    //----------------------------------------------------------------------------------------------
    // [SECTION] the machine: values, containers and the memo
    //----------------------------------------------------------------------------------------------

    value_index make(pickle_kind kind, uint64_t payload) {
        const auto index = static_cast<value_index>(tree_.values_.size());
        if (values_ahead_) {
            values_ahead_->keep_ahead();
        }
        tree_.values_.push_back({kind, static_cast<uint32_t>(op_offset_), payload});
        return index;
    }
    void push(pickle_kind kind, uint64_t payload) { stack_.push_back(make(kind, payload)); }

    void push_container(pickle_kind kind) {
        const auto index = tree_.containers_.size();
        tree_.containers_.emplace_back();
        push(kind, index);
    }

    // Appends stack_[from, stack_.size()) to the container value `target` and pops them.
    void move_items(value_index target, size_t from) {
        const size_t count = stack_.size() - from;
        if (count != 0) {
            auto& c = tree_.containers_[tree_.container_of(target)];
            const auto chunk_index = static_cast<uint32_t>(tree_.chunks_.size());
            tree_.chunks_.push_back({static_cast<uint32_t>(tree_.items_.size()),
                                     static_cast<uint32_t>(count), no_chunk});
            if (items_ahead_) {
                items_ahead_->keep_ahead();
            }
            tree_.items_.insert(tree_.items_.end(), stack_.begin() + static_cast<ptrdiff_t>(from),
                                stack_.end());
            if (c.last_chunk == no_chunk) {
                c.first_chunk = chunk_index;
            } else {
                tree_.chunks_[c.last_chunk].next = chunk_index;
            }
            c.last_chunk = chunk_index;
            c.size += static_cast<uint32_t>(count);
        }
        stack_.resize(from);
    }

    size_t pop_mark(const char* op) {
        if (marks_.empty()) {
            fail(op_offset_, std::string(op) + " without a MARK");
        }
        const size_t mark = marks_.back();
        marks_.pop_back();
        return mark;
    }

    // The container a mark-based APPENDS/SETITEMS extends: the value just below the mark.
    value_index target_below(size_t mark, pickle_kind kind, const char* op) {
        if (mark == 0 || mark - 1 < fence()) {
            fail(op_offset_, std::string(op) + " has no container below its MARK");
        }
        const value_index target = stack_[mark - 1];
        check_kind(target, kind, op);
        return target;
    }

    void check_kind(value_index v, pickle_kind kind, const char* op) const {
        const auto actual = tree_.values_[v].kind;
        if (actual != kind) {
            fail(op_offset_, std::string(op) + " expects " + std::string(pickle_kind_name(kind)),
                 "got " + std::string(pickle_kind_name(actual)) + " made at byte " +
                     std::to_string(tree_.values_[v].offset));
        }
    }

    template <size_t length_bytes>
    void push_text(pickle_kind kind, const char* what) {
        const uint64_t length = read_le<length_bytes>(what);
        const size_t start = pos_;
        take(length, what);
        push(kind, (uint64_t{start} << 32) | length);
    }

    // LONG1/LONG4: little-endian two's complement of any length. Values that fit 64 bits are
    // kept; wider ones become big_integer, so only a field that needs the number rejects it.
    template <size_t length_bytes>
    void push_long(const char* what) {
        const uint64_t length = read_le<length_bytes>(what);
        if (length_bytes == 4 && length > INT32_MAX) {
            fail(op_offset_, std::string(what) + " with a negative length");
        }
        const size_t start = pos_;
        const uint8_t* p = take(length, what);
        if (length == 0) {
            push(pickle_kind::integer, 0);
            return;
        }
        const bool negative = (p[length - 1] & 0x80) != 0;
        uint64_t low = negative ? ~uint64_t{0} : 0;
        for (size_t i = 0; i < length && i < 8; ++i) {
            low &= ~(uint64_t{0xff} << (8 * i));
            low |= uint64_t{p[i]} << (8 * i);
        }
        bool fits = true;
        for (size_t i = 8; i < length; ++i) {
            fits = fits && p[i] == (negative ? 0xff : 0x00);
        }
        const bool high_bit = (low >> 63) != 0;
        if (!fits || (negative && !high_bit)) {
            push(pickle_kind::big_integer, (uint64_t{start} << 32) | length);
            return;
        }
        if (!negative && high_bit) {
            // Only a 9-byte (or longer, zero-padded) encoding can be positive with bit 63 set.
            push(pickle_kind::big_unsigned, low);
            return;
        }
        push(pickle_kind::integer, low);
    }

    void memo_put(uint64_t index) {
        require_available(1, "PUT");
        // Every memo entry a real pickle makes costs an input byte; larger indexes are hostile.
        if (index > bytes_.size()) {
            fail(op_offset_, "memo index " + std::to_string(index) + " is out of range");
        }
        if (index >= memo_.size()) {
            memo_.resize(index + 1, unset);
        }
        memo_[index] = stack_.back();
    }

    void memo_get(uint64_t index) {
        if (index >= memo_.size() || memo_[index] == unset) {
            fail(op_offset_, "memo index " + std::to_string(index) + " was never stored");
        }
        stack_.push_back(memo_[index]);
    }

    void make_tuple(size_t from) {
        const value_index tuple = make(pickle_kind::tuple, tree_.containers_.size());
        tree_.containers_.emplace_back();
        move_items(tuple, from);
        stack_.push_back(tuple);
    }

    //----------------------------------------------------------------------------------------------
    // [SECTION] the machine: one opcode
    //----------------------------------------------------------------------------------------------

    void step(uint8_t op) {
        switch (op) {
            case op_proto: {
                const auto version = read_le<1>("PROTO");
                if (version < 2 || version > 5) {
                    fail(op_offset_, "unsupported pickle protocol " + std::to_string(version),
                         "memtrail reads protocols 2 to 5");
                }
                return;
            }
            case op_frame: {
                const uint64_t length = read_le<8>("FRAME");
                if (length > bytes_.size() - pos_) {
                    fail(op_offset_, "truncated FRAME",
                         "needs " + std::to_string(length) + " bytes, " +
                             std::to_string(bytes_.size() - pos_) + " left");
                }
                return;
            }
            case op_mark:
                if (marks_.size() >= max_mark_depth) {
                    fail(op_offset_, "nesting deeper than " + std::to_string(max_mark_depth));
                }
                marks_.push_back(stack_.size());
                return;
            case op_empty_dict:
                push_container(pickle_kind::dict);
                return;
            case op_empty_list:
                push_container(pickle_kind::list);
                return;
            case op_empty_tuple:
                push_container(pickle_kind::tuple);
                return;
            case op_dict: {
                const size_t mark = pop_mark("DICT");
                if ((stack_.size() - mark) % 2 != 0) {
                    fail(op_offset_, "DICT with an odd number of keys and values");
                }
                const value_index dict = make(pickle_kind::dict, tree_.containers_.size());
                tree_.containers_.emplace_back();
                move_items(dict, mark);
                stack_.push_back(dict);
                return;
            }
            case op_list: {
                const size_t mark = pop_mark("LIST");
                const value_index list = make(pickle_kind::list, tree_.containers_.size());
                tree_.containers_.emplace_back();
                move_items(list, mark);
                stack_.push_back(list);
                return;
            }
            case op_tuple:
                make_tuple(pop_mark("TUPLE"));
                return;
            case op_tuple1:
            case op_tuple2:
            case op_tuple3: {
                const size_t n = op - op_tuple1 + 1u;
                require_available(n, "TUPLE1-3");
                make_tuple(stack_.size() - n);
                return;
            }
            case op_append: {
                require_available(2, "APPEND");
                const value_index list = stack_[stack_.size() - 2];
                check_kind(list, pickle_kind::list, "APPEND");
                move_items(list, stack_.size() - 1);
                return;
            }
            case op_appends: {
                const size_t mark = pop_mark("APPENDS");
                move_items(target_below(mark, pickle_kind::list, "APPENDS"), mark);
                return;
            }
            case op_setitem: {
                require_available(3, "SETITEM");
                const value_index dict = stack_[stack_.size() - 3];
                check_kind(dict, pickle_kind::dict, "SETITEM");
                move_items(dict, stack_.size() - 2);
                return;
            }
            case op_setitems: {
                const size_t mark = pop_mark("SETITEMS");
                if ((stack_.size() - mark) % 2 != 0) {
                    fail(op_offset_, "SETITEMS with an odd number of keys and values");
                }
                move_items(target_below(mark, pickle_kind::dict, "SETITEMS"), mark);
                return;
            }
            case op_short_binunicode:
                push_text<1>(pickle_kind::string, "SHORT_BINUNICODE string");
                return;
            case op_binunicode:
                push_text<4>(pickle_kind::string, "BINUNICODE string");
                return;
            case op_binunicode8:
                push_text<8>(pickle_kind::string, "BINUNICODE8 string");
                return;
            case op_short_binbytes:
                push_text<1>(pickle_kind::bytes, "SHORT_BINBYTES");
                return;
            case op_binbytes:
                push_text<4>(pickle_kind::bytes, "BINBYTES");
                return;
            case op_binbytes8:
                push_text<8>(pickle_kind::bytes, "BINBYTES8");
                return;
            case op_bytearray8:
                push_text<8>(pickle_kind::bytes, "BYTEARRAY8");
                return;
            case op_binint: {
                const auto v = static_cast<int32_t>(static_cast<uint32_t>(read_le<4>("BININT")));
                push(pickle_kind::integer, static_cast<uint64_t>(int64_t{v}));
                return;
            }
            case op_binint1:
                push(pickle_kind::integer, read_le<1>("BININT1"));
                return;
            case op_binint2:
                push(pickle_kind::integer, read_le<2>("BININT2"));
                return;
            case op_long1:
                push_long<1>("LONG1");
                return;
            case op_long4:
                push_long<4>("LONG4");
                return;
            case op_binfloat: {
                // The only big-endian field in the format.
                const uint8_t* p = take(8, "BINFLOAT");
                uint64_t bits = 0;
                for (int i = 0; i < 8; ++i) {
                    bits = (bits << 8) | p[i];
                }
                push(pickle_kind::floating, bits);
                return;
            }
            case op_newtrue:
                push(pickle_kind::boolean, 1);
                return;
            case op_newfalse:
                push(pickle_kind::boolean, 0);
                return;
            case op_none:
                push(pickle_kind::none, 0);
                return;
            case op_memoize:
                require_available(1, "MEMOIZE");
                memo_.push_back(stack_.back());
                return;
            case op_binput:
                memo_put(read_le<1>("BINPUT"));
                return;
            case op_long_binput:
                memo_put(read_le<4>("LONG_BINPUT"));
                return;
            case op_binget:
                memo_get(read_le<1>("BINGET"));
                return;
            case op_long_binget:
                memo_get(read_le<4>("LONG_BINGET"));
                return;
            case 0x97:
            case 0x98:
                // Protocol 5's out-of-band buffers live outside the file: a pickle.dump()ed
                // snapshot never has them.
                fail(op_offset_,
                     "refused opcode " + hex_byte(op) + " (" + refused_opcode_name(op) + ")",
                     "out-of-band buffers are not part of a snapshot file");
            default:
                fail(op_offset_,
                     "refused opcode " + hex_byte(op) + " (" + refused_opcode_name(op) + ")",
                     "memtrail reads plain data only and never imports or calls anything");
        }
    }

    static constexpr value_index unset = UINT32_MAX;

    pickle_tree& tree_;
    std::span<const uint8_t> bytes_;
    size_t pos_ = 0;
    size_t op_offset_ = 0;
    std::vector<value_index> stack_;
    std::vector<size_t> marks_;
    std::vector<value_index> memo_;
    // The tree's two large arrays, their pages made present ahead of the machine on a large input.
    std::optional<pages_ahead<pickle_value>> values_ahead_;
    std::optional<pages_ahead<value_index>> items_ahead_;
};

//-------------------------------------------------------------------------------------------------
// [SECTION] running it
//-------------------------------------------------------------------------------------------------

pickle_tree::pickle_tree(std::span<const uint8_t> bytes) : bytes_(bytes) {
    root_ = runner(*this, bytes).run();
}

}  // namespace memtrail::snapshot::detail
