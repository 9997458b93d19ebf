#pragma once
// libdw's view of this process: function names, files and lines, inlined calls included.

#include <cstdint>
#include <string>
#include <vector>

struct Dwfl;

namespace memtrail::recorder::detail {

struct source_location {
    std::string function;  // as found: mangled (linkage or ELF symbol name) or plain
    std::string filename;
    uint32_t line = 0;
};

class dwarf_session {
  public:
    // Reports this process's modules to libdw; a failure leaves the session empty (every
    // lookup then finds nothing) rather than failing the dump.
    dwarf_session();
    ~dwarf_session();
    dwarf_session(const dwarf_session&) = delete;
    dwarf_session& operator=(const dwarf_session&) = delete;

    // The source locations of the instruction at `pc`, innermost inlined call first; empty when
    // libdw knows nothing about it. An entry may lack a file or a function name.
    std::vector<source_location> locate(uintptr_t pc) const;

  private:
    Dwfl* dwfl_ = nullptr;
};

}  // namespace memtrail::recorder::detail
