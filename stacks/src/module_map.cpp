#include "detail/module_map.hpp"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace memtrail::recorder::detail {

namespace {

// dl_iterate_phdr names the main program "".
std::string executable_path() {
    std::array<char, 4096> buffer{};
    const ssize_t length = readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
    return length > 0 ? std::string(buffer.data(), static_cast<size_t>(length)) : std::string();
}

std::string to_hex(const unsigned char* bytes, size_t count) {
    constexpr std::string_view digits = "0123456789abcdef";
    std::string hex;
    hex.reserve(count * 2);
    for (size_t i = 0; i < count; ++i) {
        hex += digits[bytes[i] >> 4];
        hex += digits[bytes[i] & 0xf];
    }
    return hex;
}

size_t align_up(size_t value, size_t alignment) {
    return (value + alignment - 1) / alignment * alignment;
}

// Scans a loaded PT_NOTE segment for the NT_GNU_BUILD_ID note (owner "GNU").
std::string find_build_id(const unsigned char* notes, size_t size, size_t alignment) {
    size_t offset = 0;
    while (offset + sizeof(ElfW(Nhdr)) <= size) {
        ElfW(Nhdr) header;
        std::memcpy(&header, notes + offset, sizeof(header));
        const size_t name_offset = offset + sizeof(header);
        const size_t description_offset = name_offset + align_up(header.n_namesz, alignment);
        const size_t next = description_offset + align_up(header.n_descsz, alignment);
        if (next > size || next <= offset) {
            break;
        }
        if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 &&
            std::memcmp(notes + name_offset, "GNU", 4) == 0) {
            return to_hex(notes + description_offset, header.n_descsz);
        }
        offset = next;
    }
    return {};
}

}  // namespace

int collect_module(dl_phdr_info* info, size_t, void* data) {
    auto& map = *static_cast<module_map*>(data);
    loaded_module module;
    module.path = (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') ? info->dlpi_name
                                                                             : executable_path();
    module.load_base = info->dlpi_addr;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& header = info->dlpi_phdr[i];
        const uintptr_t begin = info->dlpi_addr + header.p_vaddr;
        if (header.p_type == PT_LOAD) {
            map.ranges_.push_back({begin, begin + header.p_memsz, map.modules_.size()});
        } else if (header.p_type == PT_NOTE && module.build_id.empty()) {
            module.build_id = find_build_id(reinterpret_cast<const unsigned char*>(begin),
                                            header.p_memsz, header.p_align == 8 ? 8 : 4);
        }
    }
    map.modules_.push_back(std::move(module));
    return 0;
}

module_map::module_map() {
    dl_iterate_phdr(collect_module, this);
    std::sort(ranges_.begin(), ranges_.end(),
              [](const module_range& a, const module_range& b) { return a.begin < b.begin; });
}

const loaded_module* module_map::find(uintptr_t address) const {
    auto it = std::upper_bound(
        ranges_.begin(), ranges_.end(), address,
        [](uintptr_t value, const module_range& range) { return value < range.begin; });
    if (it == ranges_.begin()) {
        return nullptr;
    }
    --it;
    return address < it->end ? &modules_[it->module] : nullptr;
}

}  // namespace memtrail::recorder::detail
