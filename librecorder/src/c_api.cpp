// The C API of memtrail.h. Every function catches everything: an exception must never cross
// into C, Python or R. Errors become return codes and the thread's last error (its code, from
// the exception's class, and its text).
//
// Index of this file:
// [SECTION] errors and the runtime
// [SECTION] allocation
// [SECTION] history and annotations
// [SECTION] the allocator's settings
// [SECTION] private pools
// [SECTION] statistics
// [SECTION] dump triggers and the collector
// [SECTION] device count, last error, version

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "detail/fork_gate.hpp"
#include "detail/runtime.hpp"
#include "memtrail/core/allocator_config.hpp"
#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/memtrail.h"
#include "memtrail/snapshot/outside_memory.hpp"

using memtrail::recorder::librecorder::fork_gate_scope;
using memtrail::recorder::librecorder::runtime;

//-------------------------------------------------------------------------------------------------
// [SECTION] errors and the runtime
//-------------------------------------------------------------------------------------------------

namespace {

// A fixed buffer and a plain int, not a std::string: a free that fails during a thread's
// teardown, after its thread_local objects are destroyed, still reports safely. One object, so
// that clearing it on every call looks the thread's storage up once.
constexpr size_t last_error_capacity = 1024;
struct thread_error {
    int code = MEMTRAIL_OK;
    char text[last_error_capacity] = {};
};
constinit thread_local thread_error last_error;

void clear_error() noexcept {
    thread_error& error = last_error;
    error.text[0] = '\0';
    error.code = MEMTRAIL_OK;
}

void set_error(memtrail_error_code code, const char* message) noexcept {
    last_error.code = code;
    std::snprintf(last_error.text, last_error_capacity, "%s", message);
}

// The runtime could not be made: why, as the code a caller acts on.
class start_error : public std::runtime_error {
  public:
    start_error(memtrail_error_code why, const char* message)
        : std::runtime_error(message), code(why) {}
    memtrail_error_code code;
};

// The runtime, started on first use. A bad environment is a configuration error; any other
// failure to start (no device) leaves memtrail not started until a later call succeeds.
runtime& started() {
    try {
        return runtime::get();
    } catch (const std::invalid_argument& error) {
        throw start_error(MEMTRAIL_ERROR_BAD_CONFIG, error.what());
    } catch (const std::bad_alloc&) {
        throw;
    } catch (const std::exception& error) {
        throw start_error(MEMTRAIL_ERROR_NOT_STARTED, error.what());
    }
}

// Called in a catch block: records what was thrown as the thread's error, the most specific
// classes first.
int report_current_exception() noexcept {
    try {
        throw;
    } catch (const start_error& error) {
        set_error(error.code, error.what());
    } catch (const memtrail::recorder::librecorder::forked_child_error& error) {
        set_error(MEMTRAIL_ERROR_NOT_STARTED, error.what());
    } catch (const memtrail::out_of_memory_error& error) {
        set_error(MEMTRAIL_ERROR_OUT_OF_MEMORY, error.what());
    } catch (const std::bad_alloc&) {
        set_error(MEMTRAIL_ERROR_OUT_OF_MEMORY, "memtrail: out of host memory");
    } catch (const memtrail::unknown_pointer_error& error) {
        set_error(MEMTRAIL_ERROR_UNKNOWN_POINTER, error.what());
    } catch (const memtrail::config_error& error) {
        set_error(MEMTRAIL_ERROR_BAD_CONFIG, error.what());
    } catch (const std::invalid_argument& error) {
        set_error(MEMTRAIL_ERROR_BAD_ARGUMENT, error.what());
    } catch (const memtrail::device_error& error) {
        set_error(MEMTRAIL_ERROR_DEVICE, error.what());
    } catch (const std::system_error& error) {
        set_error(MEMTRAIL_ERROR_IO, error.what());
    } catch (const std::exception& error) {
        set_error(MEMTRAIL_ERROR_INTERNAL, error.what());
    } catch (...) {
        set_error(MEMTRAIL_ERROR_INTERNAL, "memtrail: unknown error");
    }
    return -1;
}

// Runs `body` with the thread's error cleared; 0 on success, -1 with the error set on failure.
template <typename Body>
int guarded(Body&& body) noexcept {
    clear_error();
    try {
        const fork_gate_scope gate;
        body(started());
        return 0;
    } catch (...) {
        return report_current_exception();
    }
}

// The calls that record stacks call the recorder from their own frame (no lambda that might stay
// out of line), so that exactly one frame, theirs, is left out of every stack.
constexpr size_t c_api_frames = 1;

memtrail::device_address address_of(const void* pointer) {
    return reinterpret_cast<uintptr_t>(pointer);
}

memtrail::stream_handle stream_of(const void* stream) {
    return reinterpret_cast<uintptr_t>(stream);
}

}  // namespace

// Under `memtrail run --device sim`, the interposer keeps host memory behind every allocation so
// that the program's copies and sets (cudaMemsetAsync, cudaMemcpyAsync) reach real bytes, the C
// API's allocations included. Weak: defined only when the interposer is loaded; on a GPU, or on
// the simulated device without it, they do nothing.
extern "C" [[gnu::weak]] int memtrail_interpose_back_simulated(void* pointer, size_t size);
extern "C" [[gnu::weak]] void memtrail_interpose_release_simulated(void* pointer);

namespace {

void* backed_by_host_memory(void* pointer, size_t size, int device, void* stream) {
    if (memtrail_interpose_back_simulated == nullptr ||
        memtrail_interpose_back_simulated(pointer, size) == 0) {
        return pointer;
    }
    const fork_gate_scope gate;
    started().recorder().free(reinterpret_cast<uint64_t>(pointer), device, c_api_frames,
                              stream_of(stream));
    throw std::bad_alloc();  // reported as "out of host memory"
}

// A pool of the C API; the default pools (0, 0) are not one.
memtrail::pool_id private_pool(unsigned long long first, unsigned long long second) {
    const memtrail::pool_id pool{first, second};
    if (pool.is_default()) {
        throw std::invalid_argument(
            "memtrail: pool (0, 0) is the default pools, not a private pool; name pools (0, N) "
            "or (N, 0) with N > 0");
    }
    return pool;
}

std::string_view text_or(const char* text, std::string_view fallback) {
    return text != nullptr ? std::string_view(text) : fallback;
}

// Runs `body` on `device`'s allocator, or on every device's for -1.
template <typename Body>
void for_devices(runtime& r, int device, Body&& body) {
    if (device != memtrail::recorder::all_devices) {
        body(r.allocator().on(device));
        return;
    }
    for (int d = 0; d < r.allocator().device_count(); ++d) {
        body(r.allocator().on(d));
    }
}

// Whether this process has had a device allocation (memtrail_has_allocated): set once, so that
// an allocation pays one load of a line that stays shared.
std::atomic<bool> allocated_here{false};

void note_allocated() {
    if (!allocated_here.load(std::memory_order_relaxed)) {
        allocated_here.store(true, std::memory_order_relaxed);
    }
}

}  // namespace

extern "C" {

//-------------------------------------------------------------------------------------------------
// [SECTION] allocation
//-------------------------------------------------------------------------------------------------

[[gnu::noinline]] void* memtrail_malloc(ssize_t size, int device, void* stream) {
    clear_error();
    try {
        memtrail::device_address address = 0;
        {
            const fork_gate_scope gate;
            if (size < 0) {
                throw std::invalid_argument("memtrail_malloc: negative size " +
                                            std::to_string(size));
            }
            if (size == 0) {
                return nullptr;
            }
            // The host's garbage collector (set_collector) gets its last chance inside the
            // allocator, before the allocation fails and is counted.
            runtime& r = started();
            r.note_device_in_use(device);
            address = r.recorder().allocate(static_cast<uint64_t>(size), device, stream_of(stream),
                                            c_api_frames);
        }
        note_allocated();
        // Outside the gate: the interposer's host memory has a lock of its own, which a fork
        // takes before the gate waits for the threads inside it.
        return backed_by_host_memory(reinterpret_cast<void*>(address), static_cast<size_t>(size),
                                     device, stream);
    } catch (...) {
        report_current_exception();
        return nullptr;
    }
}

[[gnu::noinline]] void memtrail_free(void* ptr, ssize_t, int device, void* stream) {
    clear_error();
    if (ptr == nullptr) {
        return;
    }
    // Before the free (once freed, another thread may be handed the same address), and outside
    // the gate, as in memtrail_malloc.
    if (memtrail_interpose_release_simulated != nullptr) {
        memtrail_interpose_release_simulated(ptr);
    }
    try {
        const fork_gate_scope gate;
        started().recorder().free(address_of(ptr), device, c_api_frames, stream_of(stream));
    } catch (...) {
        report_current_exception();
    }
}

[[gnu::noinline]] int memtrail_observe_malloc(void* ptr, size_t size, int device, void* stream) {
    last_error.text[0] = '\0';
    try {
        const fork_gate_scope gate;
        runtime::get().recorder().observe_allocation(address_of(ptr), size, device,
                                                     stream_of(stream), c_api_frames);
        note_allocated();
        return 0;
    } catch (...) {
        return report_current_exception();
    }
}

[[gnu::noinline]] int memtrail_observe_free(void* ptr, int device) {
    last_error.text[0] = '\0';
    try {
        const fork_gate_scope gate;
        if (!runtime::get().recorder().observe_free(address_of(ptr), device, c_api_frames)) {
            throw std::invalid_argument(
                "memtrail_observe_free: " + std::to_string(address_of(ptr)) +
                " is not an observed allocation of device " + std::to_string(device));
        }
        return 0;
    } catch (...) {
        return report_current_exception();
    }
}

[[gnu::noinline]] int memtrail_outside_malloc(void* ptr, size_t size, int kind, int device,
                                              void* stream, const char* call,
                                              const char* caller_module) {
    clear_error();
    try {
        const fork_gate_scope gate;
        if (kind < 0 || kind >= memtrail::snapshot::outside_kind_count) {
            throw std::invalid_argument("memtrail_outside_malloc: kind " + std::to_string(kind) +
                                        " is not one of MEMTRAIL_OUTSIDE_DEVICE, _MANAGED or "
                                        "_PINNED_HOST");
        }
        const auto outside = static_cast<memtrail::snapshot::outside_kind>(kind);
        runtime& r = started();
        r.note_device_in_use(device);
        const bool on_device = outside != memtrail::snapshot::outside_kind::pinned_host;
        if (on_device && !r.take_outside_memory(device, size)) {
            throw memtrail::out_of_memory_error(
                "memtrail: out of memory: the simulated device has no room for " +
                    std::to_string(size) + " bytes outside the allocator",
                device, size, 0, 0);
        }
        try {
            r.recorder().record_outside_allocation({.kind = outside,
                                                    .address = address_of(ptr),
                                                    .size = size,
                                                    .device = device,
                                                    .stream = stream_of(stream),
                                                    .call = text_or(call, "unknown"),
                                                    .caller_module = text_or(caller_module, "")},
                                                   c_api_frames);
        } catch (...) {
            if (on_device) {
                r.give_back_outside_memory(device, size);
            }
            throw;
        }
        return 0;
    } catch (...) {
        return report_current_exception();
    }
}

[[gnu::noinline]] int memtrail_outside_free(void* ptr, int kind, int device, void* stream) {
    clear_error();
    try {
        const fork_gate_scope gate;
        if (kind < 0 || kind >= memtrail::snapshot::outside_kind_count) {
            throw std::invalid_argument("memtrail_outside_free: kind " + std::to_string(kind) +
                                        " is not one of MEMTRAIL_OUTSIDE_DEVICE, _MANAGED or "
                                        "_PINNED_HOST");
        }
        const auto outside = static_cast<memtrail::snapshot::outside_kind>(kind);
        runtime& r = started();
        const auto freed = r.recorder().record_outside_free(outside, address_of(ptr), device,
                                                            stream_of(stream), c_api_frames);
        if (!freed) {
            throw memtrail::unknown_pointer_error(
                "memtrail_outside_free: " + std::to_string(address_of(ptr)) +
                " is not a live outside allocation");
        }
        if (outside != memtrail::snapshot::outside_kind::pinned_host) {
            r.give_back_outside_memory(freed->first, freed->second);
        }
        return 0;
    } catch (...) {
        return report_current_exception();
    }
}

int memtrail_account_outside_memory(void) {
    clear_error();
    runtime::account_outside_memory();  // starts nothing: CUDA starts when it would have
    return 0;
}

int memtrail_memory_info(int device, size_t* free_bytes, size_t* total_bytes) {
    return guarded([&](runtime& r) {
        if (free_bytes == nullptr || total_bytes == nullptr) {
            throw std::invalid_argument("memtrail_memory_info: a result pointer is NULL");
        }
        memtrail::device_allocator& allocator = r.allocator().on(device);
        const memtrail::memory_info info = allocator.get_device().get_memory_info();
        const memtrail::device_stats stats = allocator.stats();
        const auto aggregate = static_cast<size_t>(memtrail::stat_type::aggregate);
        const int64_t cached =
            stats.reserved_bytes[aggregate].current - stats.allocated_bytes[aggregate].current;
        *free_bytes = info.free + static_cast<uint64_t>(cached > 0 ? cached : 0);
        *total_bytes = info.total;
    });
}

//-------------------------------------------------------------------------------------------------
// [SECTION] history and annotations
//-------------------------------------------------------------------------------------------------

int memtrail_record_memory_history(const char* enabled, const char* context, const char* stacks,
                                   size_t max_entries) {
    return guarded([&](runtime& r) {
        using namespace memtrail::recorder;
        history_options options;
        const std::string_view enabled_name = text_or(enabled, "off");
        const std::string_view context_name = text_or(context, "none");
        const std::string_view stacks_name = text_or(stacks, "native");
        if (!parse_record_mode(enabled_name, options.enabled)) {
            throw std::invalid_argument("memtrail: enabled must be off, state or all, not \"" +
                                        std::string(enabled_name) + "\"");
        }
        if (!parse_context_mode(context_name, options.context)) {
            throw std::invalid_argument(
                "memtrail: context must be none, state, alloc or all, not \"" +
                std::string(context_name) + "\"");
        }
        if (!parse_stack_source(stacks_name, options.stacks)) {
            throw std::invalid_argument("memtrail: stacks must be native, python or all, not \"" +
                                        std::string(stacks_name) + "\"");
        }
        options.max_entries = max_entries != 0 ? max_entries : r.default_max_entries();
        options.stack_unwinder = r.recorder().options(0).stack_unwinder;
        r.recorder().record_memory_history(options);
    });
}

int memtrail_clear_memory_history(void) {
    return guarded([](runtime& r) {
        for (int d = 0; d < r.allocator().device_count(); ++d) {
            memtrail::recorder::history_options options = r.recorder().options(d);
            options.clear_history = true;
            r.recorder().record_memory_history(options, d);
        }
    });
}

int memtrail_dump_snapshot(const char* path) {
    return guarded([&](runtime& r) {
        if (path == nullptr || *path == '\0') {
            throw std::invalid_argument("memtrail_dump_snapshot: no path");
        }
        r.dump_snapshot(path);
    });
}

int memtrail_range_start(const char* name) {
    return guarded([&](runtime& r) { r.recorder().range_start(text_or(name, "")); });
}

int memtrail_range_end(const char* name) {
    return guarded([&](runtime& r) { r.recorder().range_end(text_or(name, "")); });
}

int memtrail_marker(const char* name) {
    return guarded([&](runtime& r) { r.recorder().marker(text_or(name, "")); });
}

int memtrail_set_thread_metadata(const char* metadata) {
    return guarded([&](runtime&) {
        memtrail::recorder::recorder::set_thread_metadata(text_or(metadata, ""));
    });
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the allocator's settings
//-------------------------------------------------------------------------------------------------

[[gnu::noinline]] int memtrail_empty_cache(int device) {
    clear_error();
    try {
        const fork_gate_scope gate;
        started().recorder().empty_cache(device < 0 ? memtrail::recorder::all_devices : device,
                                         c_api_frames);
        return 0;
    } catch (...) {
        return report_current_exception();
    }
}

int memtrail_record_stream(void* ptr, void* stream) {
    return guarded(
        [&](runtime& r) { r.allocator().record_stream(address_of(ptr), stream_of(stream)); });
}

int memtrail_set_memory_fraction(double fraction, int device) {
    return guarded([&](runtime& r) { r.allocator().on(device).set_memory_fraction(fraction); });
}

int memtrail_set_allocator_config(const char* config) {
    return guarded([&](runtime& r) {
        const memtrail::allocator_config parsed =
            memtrail::allocator_config::parse(text_or(config, ""));
        for (int d = 0; d < r.allocator().device_count(); ++d) {
            r.allocator().on(d).set_config(parsed);
        }
    });
}

//-------------------------------------------------------------------------------------------------
// [SECTION] private pools
//-------------------------------------------------------------------------------------------------

int memtrail_create_pool(int device, unsigned long long pool_first, unsigned long long pool_second,
                         unsigned int flags) {
    return guarded([&](runtime& r) {
        constexpr unsigned int known = MEMTRAIL_POOL_NO_SPLIT | MEMTRAIL_POOL_USE_ON_OOM;
        if ((flags & ~known) != 0) {
            throw std::invalid_argument("memtrail_create_pool: unknown flags " +
                                        std::to_string(flags & ~known) +
                                        "; accepted: MEMTRAIL_POOL_NO_SPLIT (1), "
                                        "MEMTRAIL_POOL_USE_ON_OOM (2)");
        }
        memtrail::pool_options options;
        options.no_split = (flags & MEMTRAIL_POOL_NO_SPLIT) != 0;
        options.use_on_oom = (flags & MEMTRAIL_POOL_USE_ON_OOM) != 0;
        r.recorder().create_pool(device, private_pool(pool_first, pool_second), options);
    });
}

int memtrail_begin_allocate_to_pool(int device, unsigned long long pool_first,
                                    unsigned long long pool_second) {
    return guarded([&](runtime& r) {
        // The filter runs in the allocating thread: it accepts the calls of this one.
        r.recorder().begin_allocate_to_pool(
            device, private_pool(pool_first, pool_second),
            [caller = std::this_thread::get_id()](memtrail::stream_handle) {
                return std::this_thread::get_id() == caller;
            });
    });
}

int memtrail_begin_allocate_to_pool_on_stream(int device, unsigned long long pool_first,
                                              unsigned long long pool_second, void* stream) {
    return guarded([&](runtime& r) {
        r.recorder().begin_allocate_to_pool(
            device, private_pool(pool_first, pool_second),
            [only = stream_of(stream)](memtrail::stream_handle s) { return s == only; });
    });
}

int memtrail_begin_allocate_to_pool_with_filter(int device, unsigned long long pool_first,
                                                unsigned long long pool_second,
                                                memtrail_stream_filter filter,
                                                void* filter_context) {
    return guarded([&](runtime& r) {
        if (filter == nullptr) {
            throw std::invalid_argument("memtrail_begin_allocate_to_pool_with_filter: no filter");
        }
        r.recorder().begin_allocate_to_pool(device, private_pool(pool_first, pool_second),
                                            [filter, filter_context](memtrail::stream_handle s) {
                                                return filter(reinterpret_cast<void*>(s),
                                                              filter_context) != 0;
                                            });
    });
}

int memtrail_end_allocate_to_pool(int device, unsigned long long pool_first,
                                  unsigned long long pool_second) {
    return guarded([&](runtime& r) {
        r.recorder().end_allocate_to_pool(device, private_pool(pool_first, pool_second));
    });
}

int memtrail_release_pool(int device, unsigned long long pool_first,
                          unsigned long long pool_second) {
    return guarded([&](runtime& r) {
        r.recorder().release_pool(device, private_pool(pool_first, pool_second));
    });
}

int memtrail_pool_use_count(int device, unsigned long long pool_first,
                            unsigned long long pool_second) {
    int count = -1;
    guarded([&](runtime& r) {
        count = r.recorder().pool_use_count(device, private_pool(pool_first, pool_second));
    });
    return count;
}

[[gnu::noinline]] int memtrail_empty_pool_cache(int device, unsigned long long pool_first,
                                                unsigned long long pool_second) {
    clear_error();
    try {
        const fork_gate_scope gate;
        started().recorder().empty_pool_cache(device, private_pool(pool_first, pool_second),
                                              c_api_frames);
        return 0;
    } catch (...) {
        return report_current_exception();
    }
}

//-------------------------------------------------------------------------------------------------
// [SECTION] statistics
//-------------------------------------------------------------------------------------------------

const char* memtrail_memory_summary(int device) {
    thread_local std::string summary;
    const int status =
        guarded([&](runtime& r) { summary = r.allocator().on(device).memory_summary(); });
    return status == 0 ? summary.c_str() : nullptr;
}

const char* memtrail_memory_stats_json(int device) {
    thread_local std::string json;
    const int status = guarded([&](runtime& r) {
        json = "{";
        for (const auto& [name, value] : r.allocator().on(device).memory_stats()) {
            if (json.size() > 1) {
                json += ", ";
            }
            // PyTorch's names are plain ASCII: no escaping needed.
            json += '"' + name + "\": " + std::to_string(value);
        }
        json += "}";
    });
    return status == 0 ? json.c_str() : nullptr;
}

int memtrail_reset_peak_memory_stats(int device) {
    return guarded([&](runtime& r) {
        for_devices(r, device, [](memtrail::device_allocator& a) { a.reset_peak_stats(); });
    });
}

int memtrail_reset_accumulated_memory_stats(int device) {
    return guarded([&](runtime& r) {
        for_devices(r, device, [](memtrail::device_allocator& a) { a.reset_accumulated_stats(); });
    });
}

//-------------------------------------------------------------------------------------------------
// [SECTION] dump triggers and the collector
//-------------------------------------------------------------------------------------------------

int memtrail_set_oom_dump(const char* pattern) {
    return guarded([&](runtime& r) { r.set_oom_dump_pattern(std::string(text_or(pattern, ""))); });
}

int memtrail_set_signal_dump(int signal, const char* pattern) {
    return guarded([&](runtime& r) {
        // The signals a program can spare: the user signals and the real-time ones.
        const bool spare =
            signal == SIGUSR1 || signal == SIGUSR2 || (signal >= SIGRTMIN && signal <= SIGRTMAX);
        if (signal != 0 && !spare) {
            throw std::invalid_argument("memtrail_set_signal_dump: signal " +
                                        std::to_string(signal) +
                                        " is not SIGUSR1, SIGUSR2 or a real-time signal");
        }
        r.set_signal_dump(signal, std::string(text_or(pattern, "")));
    });
}

int memtrail_set_collect_callback(memtrail_collect_callback callback, void* user_data) {
    return guarded([&](runtime& r) {
        if (callback == nullptr) {
            r.set_collector({});
            return;
        }
        r.set_collector([callback, user_data](int device, memtrail::memory_pressure pressure) {
            const int level = pressure == memtrail::memory_pressure::full ? MEMTRAIL_PRESSURE_FULL
                                                                          : MEMTRAIL_PRESSURE_LIGHT;
            return callback(device, level, user_data) != 0;
        });
    });
}

//-------------------------------------------------------------------------------------------------
// [SECTION] device count, last error, version
//-------------------------------------------------------------------------------------------------

int memtrail_device_count(void) {
    int count = -1;
    guarded([&](runtime& r) { count = r.allocator().device_count(); });
    return count;
}

const char* memtrail_last_error(void) {
    return last_error.text;
}

int memtrail_has_allocated(void) {
    return allocated_here.load(std::memory_order_relaxed) ? 1 : 0;
}

int memtrail_last_error_code(void) {
    return last_error.code;
}

int memtrail_version(void) {
    return MEMTRAIL_VERSION_NUMBER;
}

}  // extern "C"
