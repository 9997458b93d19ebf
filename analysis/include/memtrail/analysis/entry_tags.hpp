#pragma once
// PyTorch's own tags on trace entries: the user's metadata (torch.cuda.memory.
// _set_memory_metadata) and the compiled region an entry ran in (_record_memory_history(...,
// compile_context=True): "Torch-Compiled Region: 0/0"). Both are per thread, so a tag's range
// is a run of one thread's entries that carry the same value; another thread's entries in
// between neither extend nor end it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memtrail/analysis/device_model.hpp"

namespace memtrail::analysis {

enum class tag_kind : uint8_t {
    user_metadata,    // _set_memory_metadata's string
    compile_context,  // torch.compile's region
};
// "metadata", "compiled": how reports and the viewer's lanes prefix a tag's value.
std::string_view tag_kind_name(tag_kind kind);

struct tag_range {
    tag_kind kind = tag_kind::user_metadata;
    snapshot::string_id value = snapshot::no_id;
    uint32_t thread = 0;
    size_t first = 0;        // the run's first entry
    size_t last = 0;         // its last entry (inclusive)
    size_t entries = 0;      // entries of the thread in the run
    uint64_t allocated = 0;  // bytes its alloc entries asked for
};

// Every run of one tag, ordered by first entry. Entries without a value ("" for metadata, "N/A"
// for the compile context) carry none.
std::vector<tag_range> tag_ranges(const device_model& model);

// One line per distinct value: how many runs, entries and bytes allocated it had, the value's
// first and last entry, ordered by first entry.
struct tag_summary {
    tag_kind kind = tag_kind::user_metadata;
    std::string value;
    size_t runs = 0;
    size_t entries = 0;
    uint64_t allocated = 0;
    size_t first = 0;
    size_t last = 0;
};
std::vector<tag_summary> summarize_tags(const device_model& model,
                                        const std::vector<tag_range>& ranges);

}  // namespace memtrail::analysis
