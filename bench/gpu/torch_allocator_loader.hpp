#pragma once
// libmemtrail_torch_allocator.so (torch_allocator.hpp), loaded at run time so that the benchmarks
// build and run without libtorch: looked for in $MEMTRAIL_TORCH_ALLOCATOR, then in lib/ beside
// the executable's bin/.

#include "torch_allocator.hpp"

namespace memtrail::bench {

// The library's functions.
struct torch_functions {
    decltype(&memtrail_torch_allocate) allocate = nullptr;
    decltype(&memtrail_torch_free) free = nullptr;
    decltype(&memtrail_torch_empty_cache) empty_cache = nullptr;
    decltype(&memtrail_torch_record_history) record_history = nullptr;
};

// Loaded on the first call; nullptr when the library is not there (built without libtorch) or
// lacks a function, which the first call says on stderr, as `program`.
const torch_functions* load_torch(const char* program);

}  // namespace memtrail::bench
