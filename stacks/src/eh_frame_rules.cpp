// Reads a frame's unwind rule from its module's .eh_frame: the binary-search table of
// .eh_frame_hdr finds the FDE that covers the address, and its CIE's and its own call-frame
// instructions run up to the address. The formats are those of the Linux Standard Base
// (Core, "Exception Frames") and DWARF's "Call Frame Information".
//
// Index of this file:
// [SECTION] reading .eh_frame
// [SECTION] records and CIEs
// [SECTION] call-frame instructions
// [SECTION] finding the FDE
// [SECTION] the rule

#include <dlfcn.h>
#include <link.h>

#include <array>
#include <cstring>

#include "detail/eh_frame_rules.hpp"

namespace memtrail::recorder::detail {

namespace {

//-------------------------------------------------------------------------------------------------
// [SECTION] reading .eh_frame
//-------------------------------------------------------------------------------------------------

// DWARF register numbers on x86-64.
constexpr uint64_t register_rbp = 6;
constexpr uint64_t register_rsp = 7;
constexpr uint64_t register_return_address = 16;

// Pointer encodings (DW_EH_PE_*): the low nibble is the format, the next three bits what it is
// relative to, the top bit an indirection.
constexpr uint8_t encoding_omit = 0xff;
constexpr uint8_t encoding_pc_relative = 0x10;
constexpr uint8_t encoding_data_relative = 0x30;
constexpr uint8_t encoding_indirect = 0x80;
constexpr uint8_t table_encoding_expected = 0x3b;  // data-relative, signed 4 bytes

// A reader over memory that a loaded module maps; every read is bounded by `end`.
class byte_reader {
  public:
    byte_reader(const uint8_t* at, const uint8_t* end) : at_(at), end_(end) {}
    bool ok() const { return ok_; }
    const uint8_t* position() const { return at_; }
    bool at_end() const { return at_ >= end_; }
    void skip(uint64_t bytes) {
        if (bytes > static_cast<uint64_t>(end_ - at_)) {
            ok_ = false;
            at_ = end_;
            return;
        }
        at_ += bytes;
    }
    template <typename T>
    T fixed() {
        T value{};
        if (sizeof(T) > static_cast<size_t>(end_ - at_)) {
            ok_ = false;
            at_ = end_;
            return value;
        }
        std::memcpy(&value, at_, sizeof(T));
        at_ += sizeof(T);
        return value;
    }
    uint64_t uleb128() {
        uint64_t value = 0;
        for (unsigned shift = 0; shift < 64; shift += 7) {
            const auto byte = fixed<uint8_t>();
            value |= static_cast<uint64_t>(byte & 0x7f) << shift;
            if (!(byte & 0x80) || !ok_) {
                return value;
            }
        }
        ok_ = false;
        return value;
    }
    int64_t sleb128() {
        int64_t value = 0;
        unsigned shift = 0;
        uint8_t byte = 0;
        do {
            byte = fixed<uint8_t>();
            value |= static_cast<int64_t>(static_cast<uint64_t>(byte & 0x7f) << shift);
            shift += 7;
        } while ((byte & 0x80) && ok_ && shift < 64);
        if (shift < 64 && (byte & 0x40)) {
            value |= -(int64_t{1} << shift);
        }
        return value;
    }
    // A pointer in `encoding`; `data_base` is what data-relative values are relative to.
    uintptr_t pointer(uint8_t encoding, uintptr_t data_base = 0) {
        const auto field = reinterpret_cast<uintptr_t>(at_);
        uintptr_t value = 0;
        switch (encoding & 0x0f) {
            case 0x00:
                value = fixed<uint64_t>();
                break;
            case 0x01:
                value = uleb128();
                break;
            case 0x02:
                value = fixed<uint16_t>();
                break;
            case 0x03:
                value = fixed<uint32_t>();
                break;
            case 0x04:
                value = fixed<uint64_t>();
                break;
            case 0x09:
                value = static_cast<uintptr_t>(sleb128());
                break;
            case 0x0a:
                value = static_cast<uintptr_t>(int64_t{fixed<int16_t>()});
                break;
            case 0x0b:
                value = static_cast<uintptr_t>(int64_t{fixed<int32_t>()});
                break;
            case 0x0c:
                value = fixed<uint64_t>();
                break;
            default:
                ok_ = false;
                return 0;
        }
        switch (encoding & 0x70) {
            case 0x00:
                break;
            case encoding_pc_relative:
                value += field;
                break;
            case encoding_data_relative:
                value += data_base;
                break;
            default:
                ok_ = false;
                return 0;
        }
        if (encoding & encoding_indirect) {
            value = *reinterpret_cast<const uintptr_t*>(value);
        }
        return value;
    }

  private:
    const uint8_t* at_;
    const uint8_t* end_;
    bool ok_ = true;
};

//-------------------------------------------------------------------------------------------------
// [SECTION] records and CIEs
//-------------------------------------------------------------------------------------------------

// One register's rule as far as the walk cares.
struct register_rule {
    enum kind : uint8_t { same, undefined, offset, unsupported } how = same;
    int64_t offset_from_cfa = 0;
};

struct row {
    uint64_t cfa_register = register_rsp;
    int64_t cfa_offset = 8;
    bool cfa_unsupported = false;
    register_rule rbp;
    register_rule return_address{register_rule::offset, -8};
};

struct cie_facts {
    uint64_t code_alignment = 1;
    int64_t data_alignment = -8;
    uint64_t return_address_register = register_return_address;
    uint8_t fde_encoding = 0;
    bool has_augmentation_data = false;
    bool signal_frame = false;
    const uint8_t* instructions = nullptr;
    const uint8_t* end = nullptr;
};

// A CIE or an FDE: its length field, with the 64-bit form, and where the record ends.
bool read_record_bounds(const uint8_t* record, const uint8_t*& body, const uint8_t*& end) {
    uint32_t length32 = 0;
    std::memcpy(&length32, record, sizeof(length32));
    if (length32 == 0) {
        return false;  // the terminator
    }
    if (length32 == 0xffffffffu) {
        uint64_t length64 = 0;
        std::memcpy(&length64, record + 4, sizeof(length64));
        body = record + 12;
        end = body + length64;
    } else {
        body = record + 4;
        end = body + length32;
    }
    return true;
}

bool read_cie(const uint8_t* record, cie_facts& cie) {
    const uint8_t* body = nullptr;
    if (!read_record_bounds(record, body, cie.end)) {
        return false;
    }
    byte_reader in(body, cie.end);
    if (in.fixed<uint32_t>() != 0) {
        return false;  // not a CIE
    }
    const auto version = in.fixed<uint8_t>();
    const char* augmentation = reinterpret_cast<const char*>(in.position());
    const auto room = static_cast<size_t>(cie.end - in.position());
    const size_t augmentation_length = strnlen(augmentation, room);
    if (augmentation_length == room) {
        return false;  // not terminated inside the record
    }
    in.skip(augmentation_length + 1);
    if (std::strncmp(augmentation, "eh", 2) == 0) {
        in.skip(sizeof(uintptr_t));  // an old GCC's exception-table pointer
    }
    cie.code_alignment = in.uleb128();
    cie.data_alignment = in.sleb128();
    cie.return_address_register = version == 1 ? in.fixed<uint8_t>() : in.uleb128();
    if (augmentation[0] == 'z') {
        cie.has_augmentation_data = true;
        const uint64_t data_length = in.uleb128();
        const uint8_t* data_end = in.position() + data_length;
        for (const char* c = augmentation + 1; *c && in.ok(); ++c) {
            switch (*c) {
                case 'R':
                    cie.fde_encoding = in.fixed<uint8_t>();
                    break;
                case 'L':
                    in.fixed<uint8_t>();
                    break;
                case 'P':
                    in.pointer(in.fixed<uint8_t>() & ~encoding_indirect);
                    break;
                case 'S':
                    cie.signal_frame = true;
                    break;
                default:
                    break;  // unknown letters: their data is skipped below
            }
        }
        in.skip(static_cast<uint64_t>(data_end - in.position()));
    }
    cie.instructions = in.position();
    return in.ok();
}

//-------------------------------------------------------------------------------------------------
// [SECTION] call-frame instructions
//-------------------------------------------------------------------------------------------------

// Runs call-frame instructions until the row that covers `target`; false on an instruction the
// walk cannot follow (the rule is then libunwind's to apply).
class cfa_program {
  public:
    cfa_program(const cie_facts& cie, uintptr_t location) : cie_(cie), location_(location) {}

    bool run(const uint8_t* begin, const uint8_t* end, uintptr_t target) {
        byte_reader in(begin, end);
        while (!in.at_end() && in.ok()) {
            switch (step(in, in.fixed<uint8_t>(), target)) {
                case outcome::next:
                    continue;
                case outcome::reached_target:
                    return true;
                case outcome::unsupported:
                    return false;
            }
        }
        return in.ok();
    }

    const row& current() const { return row_; }
    void keep_as_initial() { initial_ = row_; }

  private:
    // What one instruction leaves the run to do: go on, stop at the row that covers the target,
    // or give the frame up to libunwind.
    enum class outcome : uint8_t { next, reached_target, unsupported };

    // One instruction, by what it changes: the location, the CFA's rule, a register's rule, or
    // the remembered rows.
    outcome step(byte_reader& in, uint8_t opcode, uintptr_t target) {
        switch (opcode & 0xc0) {  // the primary opcodes carry their operand in the low 6 bits
            case 0x40:
                return advance(opcode & 0x3f, target) ? outcome::next : outcome::reached_target;
            case 0x80:
                set_offset(opcode & 0x3f, static_cast<int64_t>(in.uleb128()));
                return outcome::next;
            case 0xc0:
                restore(opcode & 0x3f);
                return outcome::next;
            default:
                break;
        }
        switch (opcode) {
            case 0x00:
                return outcome::next;  // nop
            case 0x01:                 // set_loc, advance_loc1, advance_loc2, advance_loc4
            case 0x02:
            case 0x03:
            case 0x04:
                return move_location(in, opcode, target);
            case 0x0a:  // remember_state, restore_state
            case 0x0b:
                return change_remembered_rows(opcode);
            case 0x0c:  // def_cfa, def_cfa_register, def_cfa_offset, def_cfa_expression
            case 0x0d:
            case 0x0e:
            case 0x0f:
            case 0x12:  // def_cfa_sf, def_cfa_offset_sf
            case 0x13:
                define_cfa(in, opcode);
                return outcome::next;
            default:
                return set_register_rule(in, opcode);
        }
    }

    outcome move_location(byte_reader& in, uint8_t opcode, uintptr_t target) {
        if (opcode == 0x01) {  // set_loc
            location_ = in.pointer(cie_.fde_encoding);
            return location_ > target ? outcome::reached_target : outcome::next;
        }
        const uint64_t delta = opcode == 0x02   ? in.fixed<uint8_t>()
                               : opcode == 0x03 ? in.fixed<uint16_t>()
                                                : in.fixed<uint32_t>();
        return advance(delta, target) ? outcome::next : outcome::reached_target;
    }

    outcome change_remembered_rows(uint8_t opcode) {
        if (opcode == 0x0a) {  // remember_state
            if (saved_count_ == saved_.size()) {
                return outcome::unsupported;
            }
            saved_[saved_count_++] = row_;
            return outcome::next;
        }
        if (saved_count_ == 0) {  // restore_state
            return outcome::unsupported;
        }
        row_ = saved_[--saved_count_];
        return outcome::next;
    }

    void define_cfa(byte_reader& in, uint8_t opcode) {
        switch (opcode) {
            case 0x0c:  // def_cfa
                row_.cfa_register = in.uleb128();
                row_.cfa_offset = static_cast<int64_t>(in.uleb128());
                row_.cfa_unsupported = false;
                break;
            case 0x0d:
                row_.cfa_register = in.uleb128();
                break;
            case 0x0e:
                row_.cfa_offset = static_cast<int64_t>(in.uleb128());
                break;
            case 0x0f:  // def_cfa_expression
                in.skip(in.uleb128());
                row_.cfa_unsupported = true;
                break;
            case 0x12:  // def_cfa_sf
                row_.cfa_register = in.uleb128();
                row_.cfa_offset = in.sleb128() * cie_.data_alignment;
                row_.cfa_unsupported = false;
                break;
            default:  // 0x13, def_cfa_offset_sf
                row_.cfa_offset = in.sleb128() * cie_.data_alignment;
                break;
        }
    }

    // The extended instructions that set one register's rule, and GNU_args_size.
    outcome set_register_rule(byte_reader& in, uint8_t opcode) {
        switch (opcode) {
            case 0x05: {  // offset_extended
                const uint64_t reg = in.uleb128();
                set_offset(reg, static_cast<int64_t>(in.uleb128()));
                return outcome::next;
            }
            case 0x06:
                restore(in.uleb128());
                return outcome::next;
            case 0x07:
                set_rule(in.uleb128(), {register_rule::undefined, 0});
                return outcome::next;
            case 0x08:
                set_rule(in.uleb128(), {register_rule::same, 0});
                return outcome::next;
            case 0x09: {  // register: a value in another register
                const uint64_t reg = in.uleb128();
                in.uleb128();
                set_rule(reg, {register_rule::unsupported, 0});
                return outcome::next;
            }
            case 0x10:    // expression
            case 0x16: {  // val_expression
                const uint64_t reg = in.uleb128();
                in.skip(in.uleb128());
                set_rule(reg, {register_rule::unsupported, 0});
                return outcome::next;
            }
            case 0x11: {  // offset_extended_sf
                const uint64_t reg = in.uleb128();
                set_rule(reg, {register_rule::offset, in.sleb128() * cie_.data_alignment});
                return outcome::next;
            }
            case 0x14:    // val_offset
            case 0x15: {  // val_offset_sf
                const uint64_t reg = in.uleb128();
                if (opcode == 0x14) {
                    in.uleb128();
                } else {
                    in.sleb128();
                }
                set_rule(reg, {register_rule::unsupported, 0});
                return outcome::next;
            }
            case 0x2e:  // GNU_args_size
                in.uleb128();
                return outcome::next;
            case 0x2f: {  // GNU_negative_offset_extended
                const uint64_t reg = in.uleb128();
                set_offset(reg, -static_cast<int64_t>(in.uleb128()));
                return outcome::next;
            }
            default:
                return outcome::unsupported;
        }
    }

    // False once the location passes the target: the current row is the answer.
    bool advance(uint64_t delta, uintptr_t target) {
        location_ += delta * cie_.code_alignment;
        return location_ <= target;
    }
    void set_offset(uint64_t reg, int64_t factored) {
        set_rule(reg, {register_rule::offset, factored * cie_.data_alignment});
    }
    void set_rule(uint64_t reg, register_rule rule) {
        if (reg == register_rbp) {
            row_.rbp = rule;
        } else if (reg == cie_.return_address_register) {
            row_.return_address = rule;
        }
    }
    void restore(uint64_t reg) {
        if (reg == register_rbp) {
            row_.rbp = initial_.rbp;
        } else if (reg == cie_.return_address_register) {
            row_.return_address = initial_.return_address;
        }
    }

    const cie_facts& cie_;
    uintptr_t location_;
    row row_;
    row initial_;
    std::array<row, 8> saved_{};
    size_t saved_count_ = 0;
};

//-------------------------------------------------------------------------------------------------
// [SECTION] finding the FDE
//-------------------------------------------------------------------------------------------------

// The .eh_frame_hdr of the module that maps `pc`, found through the dynamic linker.
const uint8_t* find_eh_frame_hdr(uintptr_t pc) {
    struct search {
        uintptr_t pc;
        const uint8_t* hdr = nullptr;
    } state{pc};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            auto& s = *static_cast<search*>(data);
            const ElfW(Phdr)* eh_frame_hdr = nullptr;
            bool maps_pc = false;
            for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr)& header = info->dlpi_phdr[i];
                const uintptr_t start = info->dlpi_addr + header.p_vaddr;
                if (header.p_type == PT_LOAD && s.pc >= start && s.pc < start + header.p_memsz) {
                    maps_pc = true;
                } else if (header.p_type == PT_GNU_EH_FRAME) {
                    eh_frame_hdr = &header;
                }
            }
            if (!maps_pc) {
                return 0;
            }
            if (eh_frame_hdr) {
                s.hdr = reinterpret_cast<const uint8_t*>(info->dlpi_addr + eh_frame_hdr->p_vaddr);
            }
            return 1;
        },
        &state);
    return state.hdr;
}

// The FDE whose range holds `pc`, from the header's sorted table of (start, FDE) pairs.
const uint8_t* find_fde(const uint8_t* hdr, uintptr_t pc) {
    byte_reader in(hdr, hdr + 4 + 2 * sizeof(uint64_t));
    const auto version = in.fixed<uint8_t>();
    const auto eh_frame_pointer_encoding = in.fixed<uint8_t>();
    const auto count_encoding = in.fixed<uint8_t>();
    const auto table_encoding = in.fixed<uint8_t>();
    if (version != 1 || count_encoding == encoding_omit ||
        table_encoding != table_encoding_expected) {
        return nullptr;
    }
    const auto base = reinterpret_cast<uintptr_t>(hdr);
    in.pointer(eh_frame_pointer_encoding, base);
    const uintptr_t count = in.pointer(count_encoding, base);
    if (!in.ok() || count == 0) {
        return nullptr;
    }
    struct entry {
        int32_t start;
        int32_t fde;
    };
    const auto* table = reinterpret_cast<const entry*>(in.position());
    size_t low = 0;
    size_t high = count;  // the answer is the last entry whose start is at most pc
    while (high - low > 1) {
        const size_t middle = low + (high - low) / 2;
        if (base + static_cast<uintptr_t>(int64_t{table[middle].start}) <= pc) {
            low = middle;
        } else {
            high = middle;
        }
    }
    if (base + static_cast<uintptr_t>(int64_t{table[low].start}) > pc) {
        return nullptr;
    }
    return reinterpret_cast<const uint8_t*>(base + static_cast<uintptr_t>(int64_t{table[low].fde}));
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the rule
//-------------------------------------------------------------------------------------------------

std::optional<frame_rule> rule_from_row(const row& r) {
    if (r.cfa_unsupported || (r.cfa_register != register_rsp && r.cfa_register != register_rbp) ||
        r.rbp.how == register_rule::unsupported || r.rbp.how == register_rule::undefined) {
        return std::nullopt;
    }
    frame_rule rule;
    if (r.return_address.how == register_rule::undefined) {
        rule.outermost = true;
        return rule;
    }
    if (r.return_address.how != register_rule::offset || r.return_address.offset_from_cfa != -8) {
        return std::nullopt;
    }
    rule.cfa_from_rbp = r.cfa_register == register_rbp;
    rule.cfa_offset = static_cast<int32_t>(r.cfa_offset);
    rule.rbp_saved = r.rbp.how == register_rule::offset;
    rule.rbp_offset = static_cast<int32_t>(r.rbp.offset_from_cfa);
    return rule;
}

}  // namespace

std::optional<frame_rule> find_frame_rule(uintptr_t pc) {
    const uint8_t* hdr = find_eh_frame_hdr(pc);
    const uint8_t* fde = hdr ? find_fde(hdr, pc) : nullptr;
    if (!fde) {
        return std::nullopt;
    }
    const uint8_t* body = nullptr;
    const uint8_t* fde_end = nullptr;
    if (!read_record_bounds(fde, body, fde_end)) {
        return std::nullopt;
    }
    byte_reader in(body, fde_end);
    const auto cie_pointer = in.fixed<uint32_t>();
    cie_facts cie;
    if (cie_pointer == 0 || !read_cie(body - cie_pointer, cie) || cie.signal_frame) {
        return std::nullopt;
    }
    const uintptr_t start = in.pointer(cie.fde_encoding);
    const uintptr_t range = in.pointer(cie.fde_encoding & 0x0f);
    if (!in.ok() || pc < start || pc >= start + range) {
        return std::nullopt;
    }
    if (cie.has_augmentation_data) {
        in.skip(in.uleb128());
    }
    cfa_program program(cie, start);
    if (!program.run(cie.instructions, cie.end, ~uintptr_t{0})) {
        return std::nullopt;
    }
    program.keep_as_initial();
    if (!in.ok() || !program.run(in.position(), fde_end, pc)) {
        return std::nullopt;
    }
    return rule_from_row(program.current());
}

}  // namespace memtrail::recorder::detail
