#pragma once
// Who is calling: a small number per thread, and the thread's metadata label. Shared by every
// recorder in the process, like the threads themselves. Read for every recorded event, so both
// live in one constant-initialized thread_local: one TLS access, no initialization guard.

#include <cstdint>
#include <string>
#include <string_view>

namespace memtrail::recorder::detail {

struct thread_identity {
    uint32_t number = 0;    // 0 until the thread first asks
    uint32_t metadata = 0;  // label id (0: none)
};

// As one word, never 0 for a numbered thread (allocator_observer::caller), and back.
inline uint64_t to_word(thread_identity identity) {
    return (uint64_t{identity.number} << 32) | identity.metadata;
}
inline thread_identity from_word(uint64_t word) {
    return {static_cast<uint32_t>(word >> 32), static_cast<uint32_t>(word)};
}

extern constinit thread_local thread_identity current_thread_identity;

// Gives the calling thread its number: 1 for the first thread that asks, then 2, 3, ...
uint32_t assign_this_thread_number();

inline thread_identity this_thread_identity() {
    thread_identity identity = current_thread_identity;
    if (identity.number == 0) [[unlikely]] {
        identity.number = assign_this_thread_number();
    }
    return identity;
}

void set_this_thread_metadata(std::string_view metadata);

// Labels: annotation names and metadata strings, interned process-wide (id 0 = "").
uint32_t intern_label(std::string_view text);
std::string label_text(uint32_t id);

}  // namespace memtrail::recorder::detail
