#include "memtrail/snapshot/outside_memory.hpp"

#include <algorithm>
#include <array>

namespace memtrail::snapshot {

std::string_view outside_kind_name(outside_kind kind) {
    switch (kind) {
        case outside_kind::device:
            return "device";
        case outside_kind::managed:
            return "managed";
        case outside_kind::pinned_host:
            return "pinned host";
    }
    return "device";
}

uint64_t memory_accounting::outside() const {
    uint64_t sum = 0;
    for (const auto& [library, bytes] : outside_by_library) {
        sum += bytes;
    }
    return sum;
}

std::string library_of_module(std::string_view module_path) {
    const size_t slash = module_path.rfind('/');
    const std::string_view file =
        slash == std::string_view::npos ? module_path : module_path.substr(slash + 1);
    // By the file name's start: libcublasLt.so.12 is cuBLAS's too.
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> known = {{
        {"libcublas", "cuBLAS"},
        {"libnccl", "NCCL"},
        {"libcudnn", "cuDNN"},
        {"libtorch_cuda", "PyTorch (outside its allocator)"},
        {"libcufft", "cuFFT"},
        {"libcusparse", "cuSPARSE"},
    }};
    for (const auto& [prefix, name] : known) {
        if (file.starts_with(prefix)) {
            return std::string(name);
        }
    }
    // Triton's own library and the launchers it compiles into its cache (~/.triton/cache).
    if (module_path.find("triton") != std::string_view::npos) {
        return "Triton";
    }
    return std::string(file);
}

}  // namespace memtrail::snapshot
