// The eh_frame walk and its table of rules by return address. The table is shared by every
// thread: a slot is written once, under a lock, rule first and address last, so readers probe
// without locking (and without a per-thread cache that could be gone when a thread's last frees
// run at exit). A full table still walks, reading the rules it cannot keep.

#include "detail/eh_frame_unwinder.hpp"

#include <array>
#include <atomic>
#include <mutex>
#include <optional>

#include "detail/eh_frame_rules.hpp"

namespace memtrail::recorder::detail {

namespace {

// A rule packed into one word so that a reader sees all of it or nothing.
constexpr uint64_t packed_present = 1;  // never 0, so a written slot is told apart from none
constexpr uint64_t packed_unsupported = 2;
constexpr uint64_t packed_outermost = 4;
constexpr uint64_t packed_cfa_from_rbp = 8;
constexpr uint64_t packed_rbp_saved = 16;

uint64_t pack(const std::optional<frame_rule>& rule) {
    if (!rule) {
        return packed_present | packed_unsupported;
    }
    return packed_present | (rule->outermost ? packed_outermost : 0) |
           (rule->cfa_from_rbp ? packed_cfa_from_rbp : 0) |
           (rule->rbp_saved ? packed_rbp_saved : 0) |
           (uint64_t{static_cast<uint16_t>(static_cast<int16_t>(rule->rbp_offset))} << 16) |
           (uint64_t{static_cast<uint32_t>(rule->cfa_offset)} << 32);
}

// Offsets that do not fit the packed fields are left to libunwind.
bool packable(const frame_rule& rule) {
    return rule.rbp_offset >= INT16_MIN && rule.rbp_offset <= INT16_MAX;
}

class rule_table {
  public:
    static constexpr size_t slot_count = size_t{1} << 16;
    static constexpr size_t probe_limit = 32;

    // The packed rule for return address `pc`.
    uint64_t lookup(uintptr_t pc) {
        const size_t home = hash(pc);
        for (size_t i = 0; i < probe_limit; ++i) {
            const slot& s = slots_[(home + i) & (slot_count - 1)];
            const uintptr_t key = s.pc.load(std::memory_order_acquire);
            if (key == pc) {
                return s.rule.load(std::memory_order_relaxed);
            }
            if (key == 0) {
                break;
            }
        }
        return learn(pc);
    }

  private:
    struct slot {
        std::atomic<uintptr_t> pc{0};
        std::atomic<uint64_t> rule{0};
    };

    static size_t hash(uintptr_t pc) {
        // Return addresses' low bits are spread well already: anything more would lengthen the
        // chain of dependent steps from one frame to the next.
        return static_cast<size_t>(pc) & (slot_count - 1);
    }

    [[gnu::noinline]] uint64_t learn(uintptr_t pc) {
        // The call instruction, not the one after it: a call can be a function's last.
        std::optional<frame_rule> rule = find_frame_rule(pc - 1);
        if (rule && !packable(*rule)) {
            rule.reset();
        }
        const uint64_t packed = pack(rule);
        std::lock_guard<std::mutex> lock(writers_);
        const size_t home = hash(pc);
        for (size_t i = 0; i < probe_limit; ++i) {
            slot& s = slots_[(home + i) & (slot_count - 1)];
            const uintptr_t key = s.pc.load(std::memory_order_relaxed);
            if (key == pc) {
                break;  // another thread learnt it meanwhile
            }
            if (key == 0) {
                s.rule.store(packed, std::memory_order_relaxed);
                s.pc.store(pc, std::memory_order_release);
                break;
            }
        }
        return packed;
    }

    std::array<slot, slot_count> slots_{};
    std::mutex writers_;
};

// Never destroyed: captures can run while the process exits.
rule_table& rules() {
    static rule_table* table = new rule_table;
    return *table;
}

bool read_stack_word(stack_range stack, uintptr_t sp, uintptr_t address, uintptr_t& value) {
    if (address < sp || address > stack.high - sizeof(uintptr_t) ||
        address % alignof(uintptr_t) != 0) {
        return false;
    }
    value = *reinterpret_cast<const uintptr_t*>(address);
    return true;
}

}  // namespace

bool walk_eh_frame(unwind_registers registers, stack_range stack, size_t skip,
                   std::span<uintptr_t> out, size_t& written) {
    written = 0;
    rule_table& table = rules();
    for (size_t frame = 0; written < out.size(); ++frame) {
        if (frame >= skip) {
            out[written++] = registers.pc;
        }
        const uint64_t rule = table.lookup(registers.pc);
        if (rule & packed_unsupported) {
            return false;
        }
        if (rule & packed_outermost) {
            return true;
        }
        const auto cfa_offset = static_cast<int32_t>(static_cast<uint32_t>(rule >> 32));
        const uintptr_t cfa = ((rule & packed_cfa_from_rbp) ? registers.bp : registers.sp) +
                              static_cast<uintptr_t>(int64_t{cfa_offset});
        uintptr_t return_address = 0;
        if (!read_stack_word(stack, registers.sp, cfa - sizeof(uintptr_t), return_address)) {
            return false;
        }
        if (rule & packed_rbp_saved) {
            const auto rbp_offset = static_cast<int16_t>(static_cast<uint16_t>(rule >> 16));
            if (!read_stack_word(stack, registers.sp,
                                 cfa + static_cast<uintptr_t>(int64_t{rbp_offset}), registers.bp)) {
                return false;
            }
        }
        registers.sp = cfa;
        registers.pc = return_address;
        if (return_address == 0) {
            return true;  // the outermost frame left no return address
        }
    }
    return true;
}

}  // namespace memtrail::recorder::detail
