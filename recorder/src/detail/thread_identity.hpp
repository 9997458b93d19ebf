#pragma once
// Who is calling: a small number per thread, and the thread's metadata label. Shared by every
// recorder in the process, like the threads themselves.

#include <cstdint>
#include <string>
#include <string_view>

namespace memtrail::recorder::detail {

// 1 for the first thread that asks, then 2, 3, ...
uint32_t this_thread_number();

// The label id of this thread's metadata (0: none).
uint32_t this_thread_metadata();
void set_this_thread_metadata(std::string_view metadata);

// Labels: annotation names and metadata strings, interned process-wide (id 0 = "").
uint32_t intern_label(std::string_view text);
std::string label_text(uint32_t id);

}  // namespace memtrail::recorder::detail
