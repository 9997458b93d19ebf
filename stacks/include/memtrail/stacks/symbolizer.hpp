#pragma once
// Turns return addresses into source-level frames. Done only when a snapshot is written, once
// per distinct address: module, offset and build id from the loaded images (dl_iterate_phdr);
// function, file and line, inlined calls included, from DWARF (libdw) where debug info exists;
// dladdr's dynamic symbol as a fallback; unresolved frames keep their module and offset.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace memtrail::recorder {

struct native_frame {
    std::string function;  // demangled; empty when unknown
    std::string filename;  // empty without debug info
    uint32_t line = 0;     // 0: unknown
    std::string module;    // path of the executable or shared object; empty outside every module
    uint64_t module_offset = 0;  // address relative to the module's load base
    std::string build_id;        // lower-case hex GNU build id of the module, where present
};

namespace detail {
class module_map;
class dwarf_session;
}  // namespace detail

class symbolizer {
  public:
    // Takes a view of the modules loaded now: make a new one after dlopen/dlclose.
    symbolizer();
    ~symbolizer();
    symbolizer(const symbolizer&) = delete;
    symbolizer& operator=(const symbolizer&) = delete;

    // The frames at `return_address`, innermost first: the functions inlined at that point, then
    // the function that holds it. Never empty. All of them share module, offset and build id.
    std::vector<native_frame> symbolize(uintptr_t return_address);

  private:
    std::unique_ptr<detail::module_map> modules_;
    std::unique_ptr<detail::dwarf_session> dwarf_;
};

}  // namespace memtrail::recorder
