#pragma once
// The functions the interposer stands in for, as CUDA and glibc define them: the program's calls
// reach the interposer first, and the interposer reaches these.

namespace memtrail::interpose {

// glibc's dlsym.
void* real_dlsym(void* handle, const char* name);
// The CUDA runtime's `name` (shared libcudart), or nullptr when the program has none loaded.
void* real_runtime_symbol(const char* name);
// The CUDA driver's `name` (libcuda.so.1), or nullptr when there is no driver.
void* real_driver_symbol(const char* name);

// True when `code` lies in memtrail itself (this library or librecorder): memtrail's own CUDA
// calls must reach CUDA, not memtrail's hooks.
bool is_memtrail_code(const void* code);

// A typed, cached lookup: `static const auto f = runtime_function<decltype(&cudaMemcpy)>(...)`.
template <typename Function>
Function runtime_function(const char* name) {
    return reinterpret_cast<Function>(real_runtime_symbol(name));
}
template <typename Function>
Function driver_function(const char* name) {
    return reinterpret_cast<Function>(real_driver_symbol(name));
}

}  // namespace memtrail::interpose
