// Learning a return address's rule (eh_frame_rule_table.hpp): read from its module's .eh_frame,
// packed into one word, and added to the table, grown when half full.

#include "detail/eh_frame_rule_table.hpp"

#include <optional>

#include "detail/eh_frame_rules.hpp"

namespace memtrail::recorder::detail {

namespace {

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

}  // namespace

uint64_t rule_table::learn(uintptr_t pc) {
    // The call instruction, not the one after it: a call can be a function's last.
    std::optional<frame_rule> rule = find_frame_rule(pc - 1);
    if (rule && !packable(*rule)) {
        rule.reset();
    }
    const uint64_t packed = pack(rule);
    std::lock_guard<std::mutex> lock(writers_);
    slot_array* table = current_.load(std::memory_order_relaxed);
    if (2 * (table->used + 1) > table->mask + 1) {
        auto grown = std::make_unique<slot_array>(2 * (table->mask + 1));
        for (size_t i = 0; i <= table->mask; ++i) {
            const slot& s = table->slots[i];
            if (const uintptr_t key = s.pc.load(std::memory_order_relaxed)) {
                grown->insert(key, s.rule.load(std::memory_order_relaxed));
            }
        }
        grown->previous.reset(table);
        table = grown.release();
        current_.store(table, std::memory_order_release);
    }
    table->insert(pc, packed);
    return packed;
}

}  // namespace memtrail::recorder::detail
