#pragma once
// An allocator_observer that keeps every event, for tests that check the exact sequence.

#include <string>
#include <vector>

#include "memtrail/core/caching_allocator.hpp"

namespace memtrail::testing {

class event_log : public allocator_observer {
  public:
    void on_event(const allocator_event& e) override { events.push_back(e); }
    std::vector<allocator_action> actions() const {
        std::vector<allocator_action> out;
        for (const auto& e : events) {
            out.push_back(e.action);
        }
        return out;
    }
    size_t count(allocator_action a) const {
        size_t n = 0;
        for (const auto& e : events) {
            n += e.action == a;
        }
        return n;
    }
    std::vector<allocator_event> events;
};

}  // namespace memtrail::testing
