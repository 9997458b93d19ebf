#pragma once
// The recorder: allocation history of a caching_allocator, as PyTorch's _record_memory_history
// keeps it. It is the allocator's front door for recorded calls (stacks are captured there,
// before the allocator's lock) and the allocator's observer (a trace entry per event, under the
// lock). take_snapshot() turns state and history into a memtrail::snapshot::snapshot.
//
//   memtrail::simulated_device gpu;
//   memtrail::caching_allocator allocator({&gpu});
//   memtrail::recorder::recorder history(allocator);
//   history.record_memory_history({});          // enabled="all", context="all", native stacks
//   auto p = history.allocate(1 << 20, 0);
//   history.free(p);
//   history.dump_snapshot("run.memtrail");

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/recorder/history_options.hpp"
#include "memtrail/snapshot/model.hpp"
#include "memtrail/stacks/stack_table.hpp"

namespace memtrail::recorder {

namespace detail {
class observed_allocations;
class outside_allocations;
}  // namespace detail

// An allocation a process made outside the caching allocator (memtrail run on a PyTorch process).
struct outside_call {
    snapshot::outside_kind kind = snapshot::outside_kind::device;
    device_address address = 0;
    uint64_t size = 0;
    int device = 0;  // pinned host memory: the device current when it was made
    stream_handle stream = 0;
    std::string_view call;           // the CUDA call: "cuMemAlloc"
    std::string_view caller_module;  // path of the module that asked: named by library_of_module
};

// A device's memory as the device and the driver report it, for record_accounting.
struct device_usage {
    uint64_t total = 0;
    uint64_t used = 0;  // total - free (cudaMemGetInfo)
    // This process's own use of the device (NVML), or nullopt with the reason in `unsplit`.
    std::optional<uint64_t> this_process;
    std::string unsplit;
};

inline constexpr int all_devices = -1;

namespace detail {
class capture_pools;
class symbol_cache;
}  // namespace detail

class recorder final : public allocator_observer {
  public:
    // Observes every device of `allocator`, which must outlive the recorder. Records nothing
    // until record_memory_history() switches recording on.
    explicit recorder(caching_allocator& allocator);
    ~recorder() override;
    recorder(const recorder&) = delete;
    recorder& operator=(const recorder&) = delete;

    /// Switches recording for one device or all of them (PyTorch's _record_memory_history).
    /// @throws std::invalid_argument for a device that does not exist or a stack depth over
    ///         max_stack_depth; std::runtime_error when native stacks are asked for and libunwind
    ///         cannot be loaded.
    void record_memory_history(const history_options& options, int device = all_devices);
    history_options options(int device) const;

    // --- the allocator, with the calling stack recorded ----------------------------------------
    // As caching_allocator's; they throw what it throws (out_of_memory_error, usage_error).
    // `wrapper_frames`: how many frames of the caller's own to leave out of the stack, so that
    // an API layer (memtrail_malloc) does not appear in every stack it records.
    device_address allocate(uint64_t size, int device, stream_handle stream = 0,
                            size_t wrapper_frames = 0);
    // `stream`: the block's stream, when the caller knows it (PyTorch passes it); a free on a
    // stream that is capturing a CUDA graph first begins that capture's pool (see below).
    void free(device_address address, int expected_device = unknown_device,
              size_t wrapper_frames = 0, stream_handle stream = 0);
    void empty_cache(int device = all_devices, size_t wrapper_frames = 0);
    caching_allocator& allocator() { return allocator_; }

    // --- allocations the program makes itself (memtrail run --mode observe) -------------------
    // Recorded, with the calling stack, as a segment holding one allocated block: the snapshot's
    // state and trace show them as the allocator's own would be. The allocator is not involved.
    /// @throws std::invalid_argument for a device that does not exist, a NULL address, a size
    ///         that ends past the address space (SIZE_MAX), or an allocation that overlaps one
    ///         observed and not freed (the same pointer twice).
    void observe_allocation(device_address address, uint64_t size, int device,
                            stream_handle stream = 0, size_t wrapper_frames = 0);
    // False (and nothing recorded) when `address` is not an observed allocation of `device`.
    bool observe_free(device_address address, int device, size_t wrapper_frames = 0);

    // --- memory outside the allocator (memtrail run on a PyTorch process) ---------------------
    // Recorded with the calling stack and the library that asked, apart from the allocator's
    // trace: the snapshot's outside_memory section, not its segments, peaks or counters.
    /// @throws std::invalid_argument for a device that does not exist, a NULL address, or an
    ///         allocation of that kind already live at that address.
    void record_outside_allocation(const outside_call& call, size_t wrapper_frames = 0);
    // The freed allocation's device and size; nullopt (and nothing recorded) when no outside
    // allocation of `kind` starts at `address`. `device`: the caller's current device.
    std::optional<std::pair<int, uint64_t>> record_outside_free(snapshot::outside_kind kind,
                                                                device_address address, int device,
                                                                stream_handle stream = 0,
                                                                size_t wrapper_frames = 0);
    // Live device bytes of `device` outside the allocator.
    uint64_t outside_device_bytes(int device) const;
    // Divides `device`'s used memory now (`moment`: "start", "oom", "snapshot") into the
    // allocator's reserved bytes, the outside allocations by library, this process's context and
    // other processes; kept for the snapshot. @throws std::invalid_argument for a bad device.
    void record_accounting(std::string_view moment, int device, const device_usage& usage);
    // Called by take_snapshot for each device, to add a "snapshot" accounting row; none when
    // unset (a simulated recorder without a device to ask).
    void set_usage_source(std::function<std::optional<device_usage>(int device)> source);

    // --- private pools (CUDA graphs, torch.cuda.MemPool) on the allocator of `device` ----------
    // As device_allocator's. They throw usage_error for a device that does not exist or a pool
    // used wrongly (released twice, ended without a begin). An allocation on a stream that is
    // capturing a CUDA graph, made while no pool being allocated to takes it, goes to a pool of
    // that capture, (capture id, 0), which is never released (detail/capture_pools.hpp).
    void create_pool(int device, pool_id pool, pool_options options = {});
    void begin_allocate_to_pool(int device, pool_id pool, stream_filter filter);
    void end_allocate_to_pool(int device, pool_id pool);
    void release_pool(int device, pool_id pool);
    int pool_use_count(int device, pool_id pool);
    // Gives the cached blocks of released pools back to the device (device_allocator's
    // empty_cache(pool)).
    void empty_pool_cache(int device, pool_id pool, size_t wrapper_frames = 0);

    // --- annotations, shown in every recording device's trace ----------------------------------
    void range_start(std::string_view name);
    void range_end(std::string_view name);
    void marker(std::string_view name);
    // Copied into every entry the calling thread records from now on ("" = none): a training
    // step, a phase.
    static void set_thread_metadata(std::string_view metadata);

    // --- output -----------------------------------------------------------------------------
    // Which rank of which job this process is, for every snapshot's header. Set before the
    // first snapshot (librecorder does at start-up, from the launcher's environment).
    void set_job_identity(snapshot::job_identity job) { job_ = std::move(job); }
    // What take_snapshot copies: the state and the history, or the state alone (segments, blocks
    // with their stacks, statistics: what a live view reads every second, at a cost that grows
    // with the live blocks, not with the history).
    enum class snapshot_contents { full, state };
    // The allocator's state and the recorded history, with every stack symbolized.
    // `trace_ends`, when given, receives each device's trace end at the cut: the sequence number
    // a live subscriber goes on from (take_events). `symbols`: as take_events's, for a live client
    // that asks again and again (each time's Python frames would otherwise take the GIL anew).
    snapshot::snapshot take_snapshot(snapshot_contents contents = snapshot_contents::full,
                                     std::vector<uint64_t>* trace_ends = nullptr,
                                     detail::symbol_cache* symbols = nullptr);

    // The trace entries of `device` from sequence number `from` on, at most `most`: what a live
    // subscriber receives (docs/live.md). Copied from the ring in short holds of the device's
    // lock, as take_snapshot copies it.
    struct trace_events {
        // The entries and their stacks, as the trace of `device`; nothing else.
        snapshot::snapshot events;
        uint64_t next = 0;    // the sequence number after the last entry copied
        uint64_t missed = 0;  // entries from `from` on that the ring no longer holds
    };
    // `symbols`: what a subscriber keeps across calls (memtrail/stacks/symbol_cache.hpp), so that
    // each batch symbolizes only what is new to it; nullptr symbolizes afresh.
    /// @throws std::invalid_argument for a device that does not exist.
    trace_events take_events(int device, uint64_t from, size_t most,
                             detail::symbol_cache* symbols = nullptr);
    /// Writes take_snapshot() to `path`: a PyTorch pickle when the name ends in ".pickle", else
    /// memtrail's msgpack format. @throws std::system_error when the file cannot be written.
    void dump_snapshot(const std::filesystem::path& path);

    const stack_table& stacks() const { return stacks_; }

    void on_event(const allocator_event& event) override;
    // The calling thread's number and metadata, for events the device lock's holder records
    // for this thread.
    uint64_t caller() const override;

  private:
    struct device_history;

    // Whether `device` records now: an allocation or free captures its context only then (the
    // call costs a few ns on every one that does not).
    bool recording(int device) const;
    context_handle capture_context(int device, bool is_free, size_t wrapper_frames);
    // take_snapshot's part for the outside_memory section; `stack_of` converts a context.
    void add_outside_memory(snapshot::snapshot& out,
                            const std::function<snapshot::stack_id(uint64_t)>& stack_of);
    void annotate(uint8_t action, std::string_view name);
    device_history& history(int device) const;

    caching_allocator& allocator_;
    const int64_t epoch_ns_;
    stack_table stacks_;
    std::vector<std::unique_ptr<device_history>> devices_;
    std::unique_ptr<detail::observed_allocations> observed_;
    std::unique_ptr<detail::outside_allocations> outside_;
    mutable std::mutex accounting_mutex_;  // guards the two below
    std::vector<snapshot::memory_accounting> accounting_;
    std::function<std::optional<device_usage>(int device)> usage_source_;

    std::vector<std::unique_ptr<detail::capture_pools>> captures_;
    snapshot::job_identity job_;
};

}  // namespace memtrail::recorder
