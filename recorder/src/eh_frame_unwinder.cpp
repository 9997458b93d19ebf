// The eh_frame walk and its table of rules by return address. The table is shared by every
// thread: a slot is written once, under a lock, rule first and address last, so readers probe
// without locking (and without a per-thread cache that could be gone when a thread's last frees
// run at exit). A full table still walks, reading the rules it cannot keep.

#include "detail/eh_frame_unwinder.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <optional>

#include "detail/eh_frame_rules.hpp"
#include "memtrail/recorder/stack_capture.hpp"

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

// Reads a word of the thread's stack at or above the stack pointer; false outside it, and
// always when the thread's stack is unknown (both bounds 0).
bool read_stack_word(stack_range stack, uintptr_t sp, uintptr_t address, uintptr_t& value) {
    if (stack.high < sizeof(uintptr_t) || address < sp ||
        address > stack.high - sizeof(uintptr_t) || address % alignof(uintptr_t) != 0) {
        return false;
    }
    value = *reinterpret_cast<const uintptr_t*>(address);
    return true;
}

// One frame of a walk: the registers on entering it, and the stack words its step read (the
// return address, the caller's saved rbp; a slot of 0: not read). The walk is a function of the
// registers it starts from and of the words it reads, so a step whose words still hold the
// values it read then would give the same caller again.
struct frame_step {
    uintptr_t pc;
    uintptr_t sp;
    uintptr_t bp;
    uintptr_t return_address_slot;
    uintptr_t return_address;
    uintptr_t saved_bp_slot;
    uintptr_t saved_bp;

    bool still_holds() const {
        return (return_address_slot == 0 ||
                *reinterpret_cast<const uintptr_t*>(return_address_slot) == return_address) &&
               (saved_bp_slot == 0 ||
                *reinterpret_cast<const uintptr_t*>(saved_bp_slot) == saved_bp);
    }
};

enum class step_result { caller, outermost, unsupported };

// Steps from the frame `registers` describe to its caller, noting what it read in `step`.
step_result step_out(rule_table& table, stack_range stack, unwind_registers& registers,
                     frame_step& step) {
    step = {registers.pc, registers.sp, registers.bp, 0, 0, 0, 0};
    const uint64_t rule = table.lookup(registers.pc);
    if (rule & packed_unsupported) {
        return step_result::unsupported;
    }
    if (rule & packed_outermost) {
        return step_result::outermost;
    }
    const auto cfa_offset = static_cast<int32_t>(static_cast<uint32_t>(rule >> 32));
    const uintptr_t cfa = ((rule & packed_cfa_from_rbp) ? registers.bp : registers.sp) +
                          static_cast<uintptr_t>(int64_t{cfa_offset});
    step.return_address_slot = cfa - sizeof(uintptr_t);
    if (!read_stack_word(stack, registers.sp, step.return_address_slot, step.return_address)) {
        return step_result::unsupported;
    }
    if (rule & packed_rbp_saved) {
        const auto rbp_offset = static_cast<int16_t>(static_cast<uint16_t>(rule >> 16));
        step.saved_bp_slot = cfa + static_cast<uintptr_t>(int64_t{rbp_offset});
        if (!read_stack_word(stack, registers.sp, step.saved_bp_slot, step.saved_bp)) {
            return step_result::unsupported;
        }
        registers.bp = step.saved_bp;
    }
    registers.sp = cfa;
    registers.pc = step.return_address;
    // The outermost frame may also end the chain with a null return address.
    return step.return_address == 0 ? step_result::outermost : step_result::caller;
}

// The calling thread's last complete walk, outermost frame first, and room for the next one's
// new frames. Consecutive captures share most of their outer frames: where the new walk reaches
// a frame of the last one with the same registers, and every word the last walk read from there
// out still holds, the rest is the last walk's, checked with loads that do not wait on each
// other instead of a chain of table lookups. Trivially destructible, so it is there for captures
// made while the thread exits.
struct walk_memory {
    uint32_t count;                                     // steps[0, count): the last walk
    std::array<frame_step, 2 * max_stack_depth> steps;  // from max_stack_depth on: the new frames
};
thread_local walk_memory last_walk;

// The walk without the memory: for stacks deeper than it keeps.
bool walk_each_frame(unwind_registers registers, stack_range stack, size_t skip,
                     std::span<uintptr_t> out, size_t& written) {
    written = 0;
    rule_table& table = rules();
    frame_step step;
    for (size_t frame = 0; written < out.size(); ++frame) {
        if (frame >= skip) {
            out[written++] = registers.pc;
        }
        switch (step_out(table, stack, registers, step)) {
            case step_result::unsupported:
                return false;
            case step_result::outermost:
                return true;
            case step_result::caller:
                break;
        }
    }
    return true;
}

}  // namespace

bool walk_eh_frame(unwind_registers start, stack_range stack, size_t skip, std::span<uintptr_t> out,
                   size_t& written) {
    walk_memory& memory = last_walk;
    frame_step* fresh = memory.steps.data() + max_stack_depth;
    rule_table& table = rules();
    unwind_registers registers = start;
    size_t fresh_count = 0;
    size_t shared = 0;  // frames of the last walk that this one ends with
    // The last walk's frames [0, candidate) lie at or above the current stack pointer; only
    // those below `first_changed` can still match (a word that changed under a frame changes
    // every match above it).
    size_t candidate = memory.count;
    size_t first_changed = memory.count;
    for (;;) {
        while (candidate > 0 && memory.steps[candidate - 1].sp < registers.sp) {
            --candidate;
        }
        if (candidate > 0 && candidate <= first_changed) {
            const frame_step& known = memory.steps[candidate - 1];
            if (known.sp == registers.sp && known.pc == registers.pc && known.bp == registers.bp) {
                size_t checked = candidate;
                while (checked > 0 && memory.steps[checked - 1].still_holds()) {
                    --checked;
                }
                if (checked == 0) {
                    shared = candidate;
                    break;
                }
                first_changed = checked - 1;
            }
        }
        if (fresh_count == max_stack_depth) {
            return walk_each_frame(start, stack, skip, out, written);  // deeper than kept
        }
        const step_result result = step_out(table, stack, registers, fresh[fresh_count++]);
        if (result == step_result::unsupported) {
            return false;
        }
        if (result == step_result::outermost) {
            break;
        }
    }
    if (shared + fresh_count > max_stack_depth) {
        return walk_each_frame(start, stack, skip, out, written);
    }
    for (size_t i = 0; i < fresh_count; ++i) {
        memory.steps[shared + i] = fresh[fresh_count - 1 - i];
    }
    const size_t total = shared + fresh_count;
    memory.count = static_cast<uint32_t>(total);
    const size_t count = skip < total ? std::min(total - skip, out.size()) : 0;
    for (size_t i = 0; i < count; ++i) {
        out[i] = memory.steps[total - 1 - skip - i].pc;
    }
    written = count;
    return true;
}

}  // namespace memtrail::recorder::detail
