#include "detail/python_frame_reader.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>

namespace memtrail::recorder {

namespace {
// What choose_python_frames_source chose; read once, by the first python_frame_reader::find.
std::atomic<python_frames_source> chosen_source{python_frames_source::direct};
}  // namespace

void choose_python_frames_source(python_frames_source source) {
    chosen_source.store(source, std::memory_order_relaxed);
}

namespace detail {

namespace {

// Facts from CPython's Include/cpython/pystate.h, Include/internal/pycore_frame.h and
// Include/cpython/code.h at each version (x86-64 and aarch64 Linux: 8-byte pointers).
constexpr python_frame_layout python_3_11{
    .thread_cframe = 56,
    .cframe_current = 8,
    .frame_code = 32,
    .frame_previous = 48,
    .frame_instruction = 56,
    .frame_owner = 69,
    .owner_last = 2,
    .code_instructions = 184,
    .code_first_traceable = 168,
};
constexpr python_frame_layout python_3_12{
    .thread_cframe = 56,
    .cframe_current = 0,
    .frame_code = 0,
    .frame_previous = 8,
    .frame_instruction = 56,
    .frame_owner = 70,
    .owner_last = 3,
    .code_instructions = 192,
    .code_first_traceable = 176,
};

// PyObject_VAR_HEAD and PyTypeObject's head, the same in every release build.
constexpr size_t object_type = 8;
constexpr size_t object_size = 16;
constexpr size_t type_basic_size = 32;
constexpr size_t type_item_size = 40;
constexpr size_t code_unit_bytes = 2;  // _Py_CODEUNIT
constexpr unsigned char owned_by_generator = 1;
constexpr unsigned char owned_by_c_stack = 3;  // 3.12: the evaluation loop's entry (shim) frame
// Incomplete frames in a row that the public API would skip: more means a broken chain.
constexpr size_t most_skipped_frames = 1024;
// Frames a lookup's read follows, kept or not: more means a broken chain (a cycle).
constexpr size_t most_lookup_frames = 4096;

template <typename Value>
Value load(uintptr_t address, size_t offset) {
    Value value;
    std::memcpy(&value, reinterpret_cast<const void*>(address + offset), sizeof(value));
    return value;
}

// A user-space address that an object or frame could sit at.
bool plausible(uintptr_t address) {
    return address >= 4096 && address % alignof(void*) == 0 && address < (uintptr_t{1} << 56);
}

// The innermost frame of `thread` (0: none), or nullopt when its state does not look like
// CPython's.
std::optional<uintptr_t> innermost_frame(const python_frame_layout& layout, const void* thread) {
    const auto cframe = load<uintptr_t>(reinterpret_cast<uintptr_t>(thread), layout.thread_cframe);
    if (!plausible(cframe)) {
        return std::nullopt;
    }
    return load<uintptr_t>(cframe, layout.cframe_current);
}

// The location word of a frame whose last instruction is `last_instruction` code units in (-1:
// none yet): its byte offset, as PyFrame_GetLasti gives it.
uintptr_t location_of_instruction(ptrdiff_t last_instruction) {
    return instruction_location(
        last_instruction < 0
            ? -1
            : static_cast<int>(last_instruction * static_cast<ptrdiff_t>(code_unit_bytes)));
}

const python_frame_layout* layout_of(const python_interpreter& python) {
    if (python.version == nullptr || python.code_type == nullptr ||
        python.frame_last_instruction == nullptr) {
        return nullptr;
    }
    const unsigned long major_minor = *python.version >> 16;
    const python_frame_layout* layout = major_minor == 0x030b   ? &python_3_11
                                        : major_minor == 0x030c ? &python_3_12
                                                                : nullptr;
    // The code object's size pins the PyObject head and PyCodeObject of a release build: a
    // debug build (Py_TRACE_REFS) or a patched interpreter differs, and is read by the API.
    const auto code_type = reinterpret_cast<uintptr_t>(python.code_type);
    if (layout == nullptr ||
        load<ptrdiff_t>(code_type, type_basic_size) !=
            static_cast<ptrdiff_t>(layout->code_instructions) ||
        load<ptrdiff_t>(code_type, type_item_size) != static_cast<ptrdiff_t>(code_unit_bytes)) {
        return nullptr;
    }
    return layout;
}

}  // namespace

python_frame_reader* python_frame_reader::find(const python_interpreter& python) {
    static python_frame_reader* const reader = [&]() -> python_frame_reader* {
        const python_frames_source source = chosen_source.load(std::memory_order_relaxed);
        const python_frame_layout* layout = layout_of(python);
        if (source == python_frames_source::verify && layout == nullptr) {
            std::fprintf(stderr,
                         "memtrail: MEMTRAIL_PYTHON_FRAMES=verify, but this Python's frames "
                         "cannot be read directly (only CPython 3.11 and 3.12 release builds)\n");
            std::abort();
        }
        if (source == python_frames_source::api || layout == nullptr) {
            return nullptr;
        }
        static python_frame_reader found(*layout, reinterpret_cast<uintptr_t>(python.code_type),
                                         source);
        return &found;
    }();
    return reader != nullptr && reader->usable_.load(std::memory_order_relaxed) ? reader : nullptr;
}

void python_frame_reader::give_up(const std::string& what) {
    if (verifies()) {
        std::fprintf(stderr, "memtrail: MEMTRAIL_PYTHON_FRAMES=verify: %s\n", what.c_str());
        std::abort();
    }
    usable_.store(false, std::memory_order_relaxed);
}

std::optional<size_t> python_frame_reader::read(const void* thread,
                                                std::span<uintptr_t> out) const {
    const python_frame_layout& layout = layout_;
    const std::optional<uintptr_t> innermost = innermost_frame(layout, thread);
    if (!innermost) {
        return std::nullopt;
    }
    uintptr_t frame = *innermost;
    size_t written = 0;
    size_t skipped = 0;
    while (frame != 0 && written + 2 <= out.size()) {
        if (!plausible(frame)) {
            return std::nullopt;
        }
        const auto code = load<uintptr_t>(frame, layout.frame_code);
        if (!plausible(code) || load<uintptr_t>(code, object_type) != code_type_) {
            return std::nullopt;
        }
        const auto owner = load<unsigned char>(frame, layout.frame_owner);
        const auto units = load<ptrdiff_t>(code, object_size);
        const auto first_traceable = load<int>(code, layout.code_first_traceable);
        if (owner > layout.owner_last || units <= 0 || first_traceable < 0 ||
            first_traceable > units) {
            return std::nullopt;
        }
        // _PyInterpreterFrame_LASTI: code units from the first instruction to prev_instr.
        const auto distance = static_cast<ptrdiff_t>(
            load<uintptr_t>(frame, layout.frame_instruction) - (code + layout.code_instructions));
        if (distance % static_cast<ptrdiff_t>(code_unit_bytes) != 0) {
            return std::nullopt;
        }
        const ptrdiff_t last_instruction = distance / static_cast<ptrdiff_t>(code_unit_bytes);
        if (last_instruction < -1 || last_instruction >= units) {
            return std::nullopt;
        }
        // _PyFrame_IsIncomplete: a frame still setting itself up (before its first RESUME), or
        // 3.12's entry frame, which only marks where a C call entered the evaluation loop.
        const bool incomplete =
            (owner != owned_by_generator && last_instruction < first_traceable) ||
            (layout.owner_last >= owned_by_c_stack && owner == owned_by_c_stack);
        if (!incomplete) {
            out[written++] = code;
            out[written++] = location_of_instruction(last_instruction);
        } else if (++skipped > most_skipped_frames) {
            return std::nullopt;
        }
        frame = load<uintptr_t>(frame, layout.frame_previous);
    }
    return written;
}

std::optional<size_t> python_frame_reader::read_for_lookup(const void* thread,
                                                           std::span<uintptr_t> out) const {
    const python_frame_layout& layout = layout_;
    const std::optional<uintptr_t> innermost = innermost_frame(layout, thread);
    if (!innermost) {
        return std::nullopt;
    }
    uintptr_t frame = *innermost;
    size_t written = 0;
    size_t frames = 0;
    while (frame != 0 && written + 2 <= out.size()) {
        if (!plausible(frame) || ++frames > most_lookup_frames) {
            return std::nullopt;
        }
        const auto code = load<uintptr_t>(frame, layout.frame_code);
        const auto owner = load<unsigned char>(frame, layout.frame_owner);
        if (!plausible(code) || owner > layout.owner_last) {
            return std::nullopt;
        }
        const auto distance = static_cast<ptrdiff_t>(
            load<uintptr_t>(frame, layout.frame_instruction) - (code + layout.code_instructions));
        const ptrdiff_t last_instruction = distance / static_cast<ptrdiff_t>(code_unit_bytes);
        if (distance % static_cast<ptrdiff_t>(code_unit_bytes) != 0 || last_instruction < -1 ||
            last_instruction > std::numeric_limits<int>::max() / 2) {
            return std::nullopt;
        }
        // 3.12's entry frames are known by their owner alone; read() skips them too.
        if (layout.owner_last < owned_by_c_stack || owner != owned_by_c_stack) {
            out[written++] = code;
            out[written++] = location_of_instruction(last_instruction);
        }
        frame = load<uintptr_t>(frame, layout.frame_previous);
    }
    return written;
}

}  // namespace detail
}  // namespace memtrail::recorder
