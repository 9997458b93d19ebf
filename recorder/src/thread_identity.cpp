#include "detail/thread_identity.hpp"

#include <atomic>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace memtrail::recorder::detail {

namespace {

std::atomic<uint32_t> next_thread_number{1};

// Few distinct labels exist (range names, phases), so one lock is enough; a deque keeps the
// strings in place so that the index can point into them.
struct label_table {
    std::mutex mutex;
    std::deque<std::string> texts{std::string()};
    std::unordered_map<std::string_view, uint32_t> ids{{std::string_view(), 0}};
};

label_table& labels() {
    static label_table* table = new label_table;  // never destroyed: threads may outlive main
    return *table;
}

}  // namespace

constinit thread_local thread_identity current_thread_identity;

uint32_t assign_this_thread_number() {
    current_thread_identity.number = next_thread_number.fetch_add(1, std::memory_order_relaxed);
    return current_thread_identity.number;
}

void set_this_thread_metadata(std::string_view metadata) {
    current_thread_identity.metadata = intern_label(metadata);
}

uint32_t intern_label(std::string_view text) {
    label_table& table = labels();
    std::lock_guard lock(table.mutex);
    const auto it = table.ids.find(text);
    if (it != table.ids.end()) {
        return it->second;
    }
    const auto id = static_cast<uint32_t>(table.texts.size());
    const std::string& stored = table.texts.emplace_back(text);
    table.ids.emplace(stored, id);
    return id;
}

std::string label_text(uint32_t id) {
    label_table& table = labels();
    std::lock_guard lock(table.mutex);
    return id < table.texts.size() ? table.texts[id] : std::string();
}

}  // namespace memtrail::recorder::detail
