#pragma once
// The allocator's actions, settings and segments in the snapshot model's terms. The recorder and
// the replay both turn what the allocator did into snapshots, through these and nothing else.

#include <cstdint>
#include <type_traits>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/snapshot/model.hpp"

namespace memtrail::bridge {

// Inline: the recorder maps every allocator event on the allocation path.
constexpr snapshot::action to_snapshot_action(allocator_action action) {
    switch (action) {
        case allocator_action::alloc:
            return snapshot::action::alloc;
        case allocator_action::free_requested:
            return snapshot::action::free_requested;
        case allocator_action::free_completed:
            return snapshot::action::free_completed;
        case allocator_action::segment_alloc:
            return snapshot::action::segment_alloc;
        case allocator_action::segment_free:
            return snapshot::action::segment_free;
        case allocator_action::segment_map:
            return snapshot::action::segment_map;
        case allocator_action::segment_unmap:
            return snapshot::action::segment_unmap;
        case allocator_action::snapshot:
            return snapshot::action::snapshot;
        case allocator_action::oom:
            return snapshot::action::oom;
    }
    return snapshot::action::alloc;
}

// The allocator's actions are the snapshot's first ones, of the same type, in the same order and
// with the same values, so an entry's action reads the same in both: an action added to one side
// must be added to the other at the same place (and to to_snapshot_action), or this fails.
constexpr bool allocator_actions_match_snapshot_actions() {
    constexpr auto last = static_cast<uint8_t>(allocator_action::oom);
    for (uint8_t a = 0; a <= last; ++a) {
        if (static_cast<uint8_t>(to_snapshot_action(static_cast<allocator_action>(a))) != a) {
            return false;
        }
    }
    // oom is the allocator's last action and the snapshot's last one before its own annotations.
    return last + 1 == static_cast<uint8_t>(snapshot::action::annotation_start);
}
static_assert(std::is_same_v<std::underlying_type_t<allocator_action>,
                             std::underlying_type_t<snapshot::action>>);
static_assert(allocator_actions_match_snapshot_actions(),
              "allocator_action and snapshot::action must list the same actions in one order");

// A trace entry's requested_size: the size the allocator reports with an alloc or a free is the
// caller's request; other entries have none.
constexpr uint64_t requested_size_of(snapshot::action kind, uint64_t size) {
    const bool has_request = kind == snapshot::action::alloc ||
                             kind == snapshot::action::free_requested ||
                             kind == snapshot::action::free_completed;
    return has_request ? size : 0;
}

snapshot::allocator_settings to_snapshot_settings(const allocator_config& config);

// A segment of the allocator's snapshot() on `device`, its blocks in the same order. Stacks and
// times stay unset: the allocator keeps only opaque contexts, which their owner decodes.
snapshot::segment to_snapshot_segment(const segment_info& info, int device);

}  // namespace memtrail::bridge
