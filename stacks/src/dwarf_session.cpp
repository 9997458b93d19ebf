#include "detail/dwarf_session.hpp"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstdlib>

namespace memtrail::recorder::detail {

namespace {

// The enclosing namespaces and classes of a declaration, "a::b::" (anonymous namespaces as
// "(anonymous namespace)", as the demangler spells them).
std::string qualifier(Dwarf_Die* declaration) {
    Dwarf_Die* scopes = nullptr;
    const int count = dwarf_getscopes_die(declaration, &scopes);
    std::string prefix;
    for (int i = 1; i < count; ++i) {
        const int tag = dwarf_tag(&scopes[i]);
        if (tag != DW_TAG_namespace && tag != DW_TAG_class_type && tag != DW_TAG_structure_type &&
            tag != DW_TAG_union_type) {
            continue;
        }
        const char* name = dwarf_diename(&scopes[i]);
        prefix.insert(0, std::string(name != nullptr ? name : "(anonymous namespace)") + "::");
    }
    std::free(scopes);
    return prefix;
}

std::string die_name(Dwarf_Die* die) {
    // The linkage name carries the scope and parameters once demangled; dwarf_attr_integrate
    // follows abstract origins (inlined copies) and specifications (out-of-class definitions).
    Dwarf_Attribute attribute;
    for (const int name : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
        if (dwarf_attr_integrate(die, name, &attribute) != nullptr) {
            if (const char* text = dwarf_formstring(&attribute)) {
                return text;
            }
        }
    }
    // Functions with internal linkage have no linkage name: qualify the plain name by hand,
    // from the declaration the inlined copy points to.
    Dwarf_Die declaration = *die;
    for (const int link : {DW_AT_abstract_origin, DW_AT_specification}) {
        Dwarf_Die target;
        if (dwarf_attr(&declaration, link, &attribute) != nullptr &&
            dwarf_formref_die(&attribute, &target) != nullptr) {
            declaration = target;
        }
    }
    const char* plain = dwarf_diename(&declaration);
    return plain != nullptr ? qualifier(&declaration) + plain : std::string();
}

// Where an inlined call was made: DW_AT_call_file indexes the line table's file list.
void call_site(Dwarf_Die* inlined, std::string& filename, uint32_t& line) {
    filename.clear();
    line = 0;
    Dwarf_Attribute attribute;
    Dwarf_Word value = 0;
    if (dwarf_attr(inlined, DW_AT_call_line, &attribute) != nullptr &&
        dwarf_formudata(&attribute, &value) == 0) {
        line = static_cast<uint32_t>(value);
    }
    Dwarf_Die unit;
    Dwarf_Files* files = nullptr;
    size_t file_count = 0;
    if (dwarf_attr(inlined, DW_AT_call_file, &attribute) != nullptr &&
        dwarf_formudata(&attribute, &value) == 0 &&
        dwarf_diecu(inlined, &unit, nullptr, nullptr) != nullptr &&
        dwarf_getsrcfiles(&unit, &files, &file_count) == 0 && value < file_count) {
        if (const char* name = dwarf_filesrc(files, value, nullptr, nullptr)) {
            filename = name;
        }
    }
}

}  // namespace

dwarf_session::dwarf_session() {
    static char* debuginfo_path = nullptr;
    static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = nullptr,
        .debuginfo_path = &debuginfo_path,
    };
    dwfl_ = dwfl_begin(&callbacks);
    if (dwfl_ == nullptr) {
        return;
    }
    if (dwfl_linux_proc_report(dwfl_, getpid()) != 0 ||
        dwfl_report_end(dwfl_, nullptr, nullptr) != 0) {
        dwfl_end(dwfl_);
        dwfl_ = nullptr;
    }
}

dwarf_session::~dwarf_session() {
    if (dwfl_ != nullptr) {
        dwfl_end(dwfl_);
    }
}

std::vector<source_location> dwarf_session::locate(uintptr_t pc) const {
    std::vector<source_location> locations;
    if (dwfl_ == nullptr) {
        return locations;
    }
    Dwfl_Module* module = dwfl_addrmodule(dwfl_, pc);
    if (module == nullptr) {
        return locations;
    }
    // The innermost location comes from the line table; each inlined scope then says where it
    // was called from, which is the location in the next scope out.
    Dwarf_Addr bias = 0;
    Dwarf_Die* unit = dwfl_module_addrdie(module, pc, &bias);
    Dwarf_Die* scopes = nullptr;
    const int scope_count = unit != nullptr ? dwarf_getscopes(unit, pc - bias, &scopes) : 0;
    source_location current;
    // The line table answers with the nearest line below pc even where no compile unit covers
    // pc (startup code built without debug info), which would name a wrong file: only trust it
    // inside a described scope.
    if (Dwfl_Line* line = scope_count > 0 ? dwfl_module_getsrc(module, pc) : nullptr) {
        int line_number = 0;
        if (const char* file =
                dwfl_lineinfo(line, nullptr, &line_number, nullptr, nullptr, nullptr)) {
            current.filename = file;
            current.line = static_cast<uint32_t>(line_number);
        }
    }
    const char* symbol = dwfl_module_addrname(module, pc);

    bool reached_function = false;
    for (int i = 0; i < scope_count && !reached_function; ++i) {
        Dwarf_Die* scope = &scopes[i];
        const int tag = dwarf_tag(scope);
        if (tag == DW_TAG_inlined_subroutine) {
            current.function = die_name(scope);
            locations.push_back(current);
            call_site(scope, current.filename, current.line);
        } else if (tag == DW_TAG_subprogram) {
            // The ELF symbol names the outermost function best (it exists without DWARF too).
            current.function = symbol != nullptr ? symbol : die_name(scope);
            locations.push_back(current);
            reached_function = true;
        }
    }
    std::free(scopes);
    // Without DWARF scopes the symbol table and line table may still know something.
    if (!reached_function && (symbol != nullptr || !current.filename.empty())) {
        current.function = symbol != nullptr ? symbol : "";
        locations.push_back(current);
    }
    return locations;
}

}  // namespace memtrail::recorder::detail
