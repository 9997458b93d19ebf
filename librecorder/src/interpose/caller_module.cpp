#include "detail/caller_module.hpp"

#include <dlfcn.h>
#include <unwind.h>

#include <array>
#include <cstring>
#include <string_view>

namespace memtrail::interpose {

namespace {

constexpr size_t frames_looked_at = 48;

struct walk {
    std::array<void*, frames_looked_at> addresses{};
    size_t count = 0;
};

_Unwind_Reason_Code collect(_Unwind_Context* context, void* data) {
    auto* w = static_cast<walk*>(data);
    if (w->count == w->addresses.size()) {
        return _URC_END_OF_STACK;
    }
    w->addresses[w->count++] = reinterpret_cast<void*>(_Unwind_GetIP(context));
    return _URC_NO_REASON;
}

// CUDA's own layers and memtrail's: the library that asked lies beyond them.
bool is_cuda_or_memtrail(std::string_view path) {
    const size_t slash = path.rfind('/');
    const std::string_view file = slash == std::string_view::npos ? path : path.substr(slash + 1);
    return file.starts_with("libcudart") || file.starts_with("libcuda.so") ||
           file.starts_with("libmemtrail") || file.starts_with("librecorder");
}

}  // namespace

const char* caller_module() {
    walk w;
    _Unwind_Backtrace(collect, &w);
    for (size_t i = 0; i < w.count; ++i) {
        Dl_info info{};
        // A return address points past the call: one byte back is inside it.
        const auto* inside = static_cast<const char*>(w.addresses[i]) - 1;
        if (dladdr(inside, &info) == 0 || info.dli_fname == nullptr) {
            continue;
        }
        if (!is_cuda_or_memtrail(info.dli_fname)) {
            return info.dli_fname;
        }
    }
    return "";
}

}  // namespace memtrail::interpose
