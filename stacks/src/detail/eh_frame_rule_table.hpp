#pragma once
// The eh_frame walk's table of rules by return address. The table is shared by every thread: a
// slot is written once, under a lock, rule first and address last, so readers probe without
// locking (and without a per-thread cache that could be gone when a thread's last frees run at
// exit). An address whose probe run is full is not kept: its rule is read again on each walk
// that meets it. The probe is inlined into the walk; learning a new address is out of line.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>

#include "memtrail/stacks/huge_pages.hpp"

namespace memtrail::recorder::detail {

// A rule packed into one word so that a reader sees all of it or nothing.
inline constexpr uint64_t packed_present = 1;  // never 0, so a written slot is told apart from none
inline constexpr uint64_t packed_unsupported = 2;
inline constexpr uint64_t packed_outermost = 4;
inline constexpr uint64_t packed_cfa_from_rbp = 8;
inline constexpr uint64_t packed_rbp_saved = 16;

// Slots are sized to the return addresses a program has shown, not to the most it could: a
// fixed table of 64K slots spread PyTorch training's 584 addresses over 1 MiB, a line each, and
// the steps of a walk missing on them took about 9% of its time there (docs/performance.md). The
// table starts at 4,096 slots (64 KiB) and doubles at half full; a grown table is published
// whole, and the ones before it stay allocated for readers still probing them.
class rule_table {
  private:
    struct slot {
        std::atomic<uintptr_t> pc{0};
        std::atomic<uint64_t> rule{0};
    };

    struct slot_array {
        // The slots are never given back: walks may still probe a table that has grown.
        explicit slot_array(size_t count)
            : mask(count - 1),
              slots(new (permanent_huge_page_memory(count * sizeof(slot), alignof(slot)))
                        slot[count]) {}

        // Adds `pc` unless it is there; false when its probe run is full (its rule is then read
        // again on each walk). Only under the writers' lock.
        bool insert(uintptr_t pc, uint64_t packed) {
            for (size_t i = 0; i < probe_limit; ++i) {
                slot& s = slots[(pc + i) & mask];  // as view::lookup probes
                const uintptr_t key = s.pc.load(std::memory_order_relaxed);
                if (key == pc) {
                    return true;  // another thread learnt it meanwhile
                }
                if (key == 0) {
                    s.rule.store(packed, std::memory_order_relaxed);
                    s.pc.store(pc, std::memory_order_release);
                    ++used;
                    return true;
                }
            }
            return false;
        }

        const size_t mask;
        size_t used = 0;
        slot* slots;
        std::unique_ptr<slot_array> previous;  // still read by walks that loaded it before
    };

  public:
    static constexpr size_t first_slot_count = size_t{1} << 12;
    static constexpr size_t probe_limit = 32;

    rule_table() : current_(new slot_array(first_slot_count)) {}

    // The table as one walk reads it: taken once per walk, so that a step's probe waits on no
    // load but the slot's. A table grown meanwhile is seen by the next walk (an address learnt
    // into it alone meanwhile is learnt again, and found kept).
    class view {
      public:
        explicit view(rule_table& table)
            : view(table, *table.current_.load(std::memory_order_acquire)) {}

        // The packed rule for return address `pc`.
        uint64_t lookup(uintptr_t pc) const {
            // Return addresses' low bits are spread well already: anything more would lengthen
            // the chain of dependent steps from one frame to the next.
            for (size_t i = 0; i < probe_limit; ++i) {
                const slot& s = slots_[(pc + i) & mask_];
                const uintptr_t key = s.pc.load(std::memory_order_acquire);
                if (key == pc) {
                    return s.rule.load(std::memory_order_relaxed);
                }
                if (key == 0) {
                    break;
                }
            }
            return table_.learn(pc);
        }

      private:
        view(rule_table& table, const slot_array& current)
            : table_(table), slots_(current.slots), mask_(current.mask) {}

        rule_table& table_;
        const slot* slots_;
        size_t mask_;
    };

  private:
    // Reads the rule of `pc` from its module, keeps it, and returns it packed.
    [[gnu::noinline]] uint64_t learn(uintptr_t pc);

    std::atomic<slot_array*> current_;
    std::mutex writers_;
};

// Never destroyed: captures can run while the process exits.
inline rule_table& rules() {
    static rule_table* table = new rule_table;
    return *table;
}

}  // namespace memtrail::recorder::detail
