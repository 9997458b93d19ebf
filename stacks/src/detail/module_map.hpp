#pragma once
// The executable and shared objects loaded in this process, from dl_iterate_phdr.

#include <cstdint>
#include <string>
#include <vector>

struct dl_phdr_info;  // <link.h>

namespace memtrail::recorder::detail {

struct loaded_module {
    std::string path;
    uintptr_t load_base = 0;  // dlpi_addr: link-time address + load_base = run-time address
    std::string build_id;     // lower-case hex, empty when the image has no GNU build-id note
};

// One loaded segment of a module.
struct module_range {
    uintptr_t begin = 0;
    uintptr_t end = 0;
    size_t module = 0;  // index into the module list
};

class module_map {
  public:
    // Reads the list of loaded images now.
    module_map();

    // The module whose loaded segments contain `address`, or nullptr.
    const loaded_module* find(uintptr_t address) const;

  private:
    // dl_iterate_phdr's callback, filling the lists.
    friend int collect_module(::dl_phdr_info* info, size_t size, void* data);

    std::vector<loaded_module> modules_;
    std::vector<module_range> ranges_;  // sorted by begin, not overlapping
};

}  // namespace memtrail::recorder::detail
