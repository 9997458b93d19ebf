#include "detail/kept_python_code.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <new>

#include "memtrail/stacks/huge_pages.hpp"

namespace memtrail::recorder::detail {

namespace {

// An open-addressed set of addresses (0: empty) that only grows. A full table is copied into one
// twice its size and the new one published; the old one stays allocated, owned by the new one, as
// a reader may still be probing it (at most as much memory again as the newest table).
struct code_table {
    // The slots are never given back: readers may still probe a table that has grown.
    explicit code_table(size_t capacity)
        : mask(capacity - 1),
          slots(new (permanent_huge_page_memory(capacity * sizeof(std::atomic<uintptr_t>),
                                                alignof(std::atomic<uintptr_t>)))
                    std::atomic<uintptr_t>[capacity]) {}

    size_t slot_of(uintptr_t code) const {
        // Code objects are 16-byte aligned: the low bits say nothing.
        return static_cast<size_t>((code >> 4) * 0x9E3779B97F4A7C15ull >> 20) & mask;
    }

    bool contains(uintptr_t code) const {
        for (size_t i = slot_of(code);; i = (i + 1) & mask) {
            const uintptr_t held = slots[i].load(std::memory_order_acquire);
            if (held == code) {
                return true;
            }
            if (held == 0) {
                return false;
            }
        }
    }

    void insert(uintptr_t code) {
        size_t i = slot_of(code);
        while (slots[i].load(std::memory_order_relaxed) != 0) {
            i = (i + 1) & mask;
        }
        slots[i].store(code, std::memory_order_release);
        ++count;
    }

    size_t mask;
    size_t count = 0;
    std::atomic<uintptr_t>* slots;
    std::unique_ptr<code_table> previous;
};

constexpr size_t first_capacity = 4096;

std::mutex table_mutex;  // serialises writers; readers never take it
std::atomic<code_table*> current_table{nullptr};

// Per thread: the kept code objects seen last, one per slot, so that a repeated stack is checked
// without probing the shared table.
constexpr size_t recent_slots = 256;
thread_local uintptr_t recently_kept[recent_slots] = {};

size_t recent_slot_of(uintptr_t code) {
    return static_cast<size_t>(code >> 4) % recent_slots;
}

bool is_kept(uintptr_t code, uintptr_t* recent) {
    uintptr_t& slot = recent[recent_slot_of(code)];
    if (slot == code) {
        return true;
    }
    const code_table* table = current_table.load(std::memory_order_acquire);
    if (table == nullptr || !table->contains(code)) {
        return false;
    }
    slot = code;
    return true;
}

}  // namespace

bool is_kept_python_code(uintptr_t code) {
    return is_kept(code, recently_kept);
}

bool all_python_code_kept(std::span<const uintptr_t> pairs) {
    uintptr_t* recent = recently_kept;  // one look-up of the thread's copy for the whole stack
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
        if (!is_kept(pairs[i], recent)) {
            return false;
        }
    }
    return true;
}

void add_kept_python_code(uintptr_t code) {
    std::lock_guard lock(table_mutex);
    code_table* table = current_table.load(std::memory_order_relaxed);
    if (table == nullptr || 2 * (table->count + 1) > table->mask + 1) {
        // Never freed: the process's code objects stay kept until it ends.
        auto* grown = new code_table(table == nullptr ? first_capacity : 2 * (table->mask + 1));
        if (table != nullptr) {
            for (size_t i = 0; i <= table->mask; ++i) {
                if (const uintptr_t held = table->slots[i].load(std::memory_order_relaxed)) {
                    grown->insert(held);
                }
            }
            grown->previous.reset(table);
        }
        current_table.store(grown, std::memory_order_release);
        table = grown;
    }
    table->insert(code);
}

}  // namespace memtrail::recorder::detail
