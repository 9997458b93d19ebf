// memtrail top --attach PID... : running processes watched live, refreshed every second: their
// memory as small curves, by meaning, the stacks that grew since attaching, fragmentation, OOMs,
// the events their streams carry. One column per process (the ranks of a job on one machine).
//
// [SECTION] one watched process: its connections and what each refresh reads
// [SECTION] the text view and the JSON lines
// [SECTION] the command

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <deque>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "detail/attach_target.hpp"
#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "detail/report_json.hpp"
#include "detail/text_table.hpp"
#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/analysis/stack_comparison.hpp"

namespace memtrail::cli {

namespace {

using analysis::format_bytes;
using clock_type = std::chrono::steady_clock;

// ==== [SECTION] one watched process: its connections and what each refresh reads ============

// Points each curve keeps: the last 24 refreshes.
constexpr size_t curve_points = 24;

struct reading {
    uint64_t reserved = 0;
    uint64_t allocated = 0;
    std::optional<uint64_t> outside;  // unknown when the device reports no total
    double fragmentation = 0.0;
    int64_t ooms = 0;
    std::string categories;  // "" when no block's meaning is known
    analysis::category_breakdown breakdown;
    bool categories_known = false;
    std::vector<analysis::matched_stack> growing;  // grew since attaching, most first
};

class watched_process {
  public:
    watched_process(pid_t pid, const parsed_arguments& args, size_t stack_count)
        : pid_(pid), args_(args), stack_count_(stack_count), state_(pid) {
        const live::frame first = state_.take_snapshot(live::client::contents::state);
        first_ = visible(first);
        device_ = chosen_device(*first_, "process " + std::to_string(pid_), args_);
        first_stacks_ = stacks_of(first_);
        events_ = std::make_unique<live::client>(pid);
        events_->subscribe(first.numbers("ends"));
        reader_ = std::thread([this] { count_events(); });
        last_rate_time_ = clock_type::now();
    }
    ~watched_process() {
        events_->detach();
        reader_.join();
    }
    watched_process(const watched_process&) = delete;
    watched_process& operator=(const watched_process&) = delete;

    pid_t pid() const { return pid_; }
    bool exited() const { return exited_; }
    const std::optional<reading>& latest() const { return latest_; }
    const std::deque<uint64_t>& curve(int which) const { return curves_[which]; }
    uint64_t events() const { return events_seen_.load(); }
    uint64_t resyncs() const { return resyncs_.load(); }
    double events_per_second() const { return events_per_second_; }
    // The snapshot whose stack ids a growing stack's `stack` is.
    const snapshot::snapshot& source_of(const analysis::matched_stack& stack) const {
        return stack.first_holder == 0 ? *first_ : *now_;
    }

    // Reads the process's state now; a process that exited keeps its last reading.
    void refresh() {
        const auto now = clock_type::now();
        const double seconds = std::chrono::duration<double>(now - last_rate_time_).count();
        const uint64_t seen = events_seen_.load();
        events_per_second_ = seconds > 0 ? static_cast<double>(seen - last_events_) / seconds : 0;
        last_events_ = seen;
        last_rate_time_ = now;
        if (exited_) {
            return;
        }
        try {
            read_state(state_.take_snapshot(live::client::contents::state));
        } catch (const live::attach_error&) {
            exited_ = true;  // the process ended: its connection is closed
        } catch (const live::protocol_error&) {
            exited_ = true;  // it ended while sending
        }
    }

  private:
    // The snapshot the endpoint sent, its stacks folded as `top` folds them.
    std::shared_ptr<const snapshot::snapshot> visible(const live::frame& received) {
        recorded_ = std::make_shared<const snapshot::snapshot>(snapshot_of(received, pid_));
        return analysis::with_frame_visibility(recorded_, frames_shown(args_));
    }

    std::vector<analysis::stack_bytes> stacks_of(std::shared_ptr<const snapshot::snapshot> source) {
        const auto model = analysis::device_model::build(std::move(source), device_);
        return analysis::bytes_by_stack(model.state_after(model.event_count()),
                                        analysis::live_measure::allocated);
    }

    void read_state(const live::frame& received) {
        now_ = visible(received);
        const auto model = analysis::device_model::build(now_, device_);
        const analysis::memory_state state = model.state_after(model.event_count());
        const analysis::memory_totals totals = analysis::totals_of(state);
        reading r;
        r.reserved = totals.reserved;
        r.allocated = totals.allocated;
        r.fragmentation = totals.fragmentation();
        if (received.fields.contains("outside")) {
            const std::vector<uint64_t> outside = received.numbers("outside");
            if (static_cast<size_t>(device_) < outside.size()) {
                r.outside = outside[static_cast<size_t>(device_)];
            }
        }
        if (const auto stats = now_->stats.find(device_); stats != now_->stats.end()) {
            if (const auto ooms = stats->second.find("num_ooms"); ooms != stats->second.end()) {
                r.ooms = ooms->second;
            }
        }
        // The categories read every frame of the live blocks' stacks.
        const auto every_frame = analysis::device_model::build(recorded_, device_);
        const auto map = analysis::category_map::build(every_frame);
        if (map.any_known()) {
            r.breakdown = analysis::categories_at(every_frame, map, every_frame.event_count());
            r.categories = analysis::categories_line(r.breakdown);
            r.categories_known = true;
        }
        const std::vector<analysis::stacks_in_snapshot> both = {
            {first_.get(), first_stacks_},
            {now_.get(), analysis::bytes_by_stack(state, analysis::live_measure::allocated)}};
        for (auto& stack : analysis::stacks_changed_most(both, stack_count_ * 4)) {
            if (stack.change_from_first(1) > 0 && r.growing.size() < stack_count_) {
                r.growing.push_back(std::move(stack));
            }
        }
        keep(0, r.reserved);
        keep(1, r.allocated);
        keep(2, r.outside.value_or(0));
        latest_ = std::move(r);
    }

    void keep(int which, uint64_t value) {
        curves_[which].push_back(value);
        if (curves_[which].size() > curve_points) {
            curves_[which].pop_front();
        }
    }

    // The subscription's frames, counted (their content is not decoded: top reads the state).
    void count_events() {
        try {
            while (const std::optional<live::frame> next = events_->next_frame()) {
                if (next->kind == "events") {
                    events_seen_ += next->number("count");
                } else if (next->kind == "behind") {
                    ++resyncs_;
                }
            }
        } catch (const std::exception&) {
            // The process exited mid-frame: the state connection says so at the next refresh.
        }
    }

    pid_t pid_;
    const parsed_arguments& args_;
    size_t stack_count_;
    int device_ = 0;
    live::client state_;
    std::unique_ptr<live::client> events_;
    std::thread reader_;
    std::atomic<uint64_t> events_seen_{0};
    std::atomic<uint64_t> resyncs_{0};
    uint64_t last_events_ = 0;
    clock_type::time_point last_rate_time_;
    double events_per_second_ = 0;
    std::shared_ptr<const snapshot::snapshot> recorded_;
    std::shared_ptr<const snapshot::snapshot> first_;
    std::shared_ptr<const snapshot::snapshot> now_;
    std::vector<analysis::stack_bytes> first_stacks_;
    std::optional<reading> latest_;
    std::array<std::deque<uint64_t>, 3> curves_;
    bool exited_ = false;
};

// ==== [SECTION] the text view and the JSON lines =============================================

// The values as a row of block characters, the largest the full block.
std::string sparkline(const std::deque<uint64_t>& values) {
    static constexpr std::array<const char*, 8> blocks = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    const uint64_t top = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
    std::string line;
    for (const uint64_t v : values) {
        const size_t level = top == 0 ? 0 : static_cast<size_t>(v * 7 / top);
        line += blocks[level];
    }
    return line;
}

std::string rate_text(double per_second) {
    std::ostringstream text;
    text.precision(per_second >= 100 ? 0 : 1);
    text << std::fixed << per_second << "/s";
    return text.str();
}

void print_view(std::ostream& out, const std::vector<std::unique_ptr<watched_process>>& watched,
                size_t depth) {
    std::vector<std::string> columns = {"<"};
    for (const auto& w : watched) {
        columns.push_back("<pid " + std::to_string(w->pid()) + (w->exited() ? " (exited)" : ""));
    }
    text_table table(columns);
    const auto row = [&](const std::string& name, const auto& cell) {
        std::vector<std::string> cells = {name};
        for (const auto& w : watched) {
            cells.push_back(w->latest() ? cell(*w, *w->latest()) : "-");
        }
        table.add_row(cells);
    };
    const auto curve = [](int which) {
        return [which](const watched_process& w, const reading&) {
            return sparkline(w.curve(which)) + " " +
                   format_bytes(w.curve(which).empty() ? 0 : w.curve(which).back());
        };
    };
    row("reserved", curve(0));
    row("allocated", curve(1));
    row("outside allocator", [](const watched_process& w, const reading& r) {
        return r.outside ? sparkline(w.curve(2)) + " " + format_bytes(*r.outside)
                         : std::string("unknown");
    });
    row("fragmentation",
        [](const watched_process&, const reading& r) { return percent(r.fragmentation); });
    row("OOMs so far",
        [](const watched_process&, const reading& r) { return std::to_string(r.ooms); });
    row("events", [](const watched_process& w, const reading&) {
        return rate_text(w.events_per_second()) +
               (w.resyncs() != 0 ? ", fell behind " + std::to_string(w.resyncs()) + "x" : "");
    });
    table.print(out);
    for (const auto& w : watched) {
        if (!w->latest()) {
            continue;
        }
        const reading& r = *w->latest();
        out << "\npid " << w->pid();
        if (w->exited()) {
            out << " has exited: its last state is shown";
        }
        out << "\n";
        if (r.categories_known) {
            out << "  by meaning: " << r.categories << "\n";
        }
        if (r.growing.empty()) {
            out << "  no stack grew since attaching\n";
            continue;
        }
        out << "  grew since attaching:\n";
        for (const auto& stack : r.growing) {
            out << "  " << analysis::format_bytes_delta(stack.change_from_first(1)) << "  now "
                << format_bytes(stack.bytes[1]) << "\n";
            for (const auto& line : stack_lines(w->source_of(stack), stack.stack, depth)) {
                out << "        " << line << "\n";
            }
        }
    }
}

void write_json_line(std::ostream& out,
                     const std::vector<std::unique_ptr<watched_process>>& watched, size_t update) {
    json_writer json(out);
    json.begin_object()
        .field("update", static_cast<uint64_t>(update))
        .key("processes")
        .begin_array();
    for (const auto& w : watched) {
        json.begin_object()
            .field("pid", static_cast<int64_t>(w->pid()))
            .field("exited", w->exited())
            .field("events", w->events())
            .field("events_per_second", w->events_per_second())
            .field("fell_behind", w->resyncs());
        if (const auto& r = w->latest()) {
            json.field("reserved", r->reserved).field("allocated", r->allocated).key("outside");
            if (r->outside) {
                json.value(*r->outside);
            } else {
                json.null();
            }
            json.field("fragmentation", r->fragmentation).field("ooms", r->ooms);
            json.key("categories").begin_object();
            if (r->categories_known) {
                for (size_t c = 0; c < analysis::memory_category_count; ++c) {
                    const auto category = static_cast<analysis::memory_category>(c);
                    json.field(analysis::category_name(category), r->breakdown.totals[c].bytes);
                }
            }
            json.end_object().key("growing").begin_array();
            for (const auto& stack : r->growing) {
                json.begin_object()
                    .field("grew", stack.change_from_first(1))
                    .field("bytes", stack.bytes[1])
                    .key("frames");
                write_stack(json, w->source_of(stack), stack.stack);
                json.end_object();
            }
            json.end_array();
        }
        json.end_object();
    }
    json.end_array().end_object();  // ends the line
    out << std::flush;
}

std::atomic<bool> interrupted{false};

}  // namespace

int run_top_attached(const parsed_arguments& args) {
    std::vector<pid_t> pids;
    for (const auto& text : args.positional) {
        pids.push_back(parse_pid("--attach", text));
    }
    std::optional<uint64_t> updates;
    if (args.has("--once")) {
        updates = 1;
    }
    if (const auto count = args.value("--updates")) {
        updates = parse_count_option("--updates", *count);
    }
    double interval = 1.0;
    if (const auto seconds = args.value("--interval")) {
        interval = parse_fraction_option("--interval", *seconds);
        if (interval < 0.05) {
            throw usage_error("--interval: '" + *seconds +
                              "' is too short (at least 0.05 seconds)");
        }
    }
    const size_t stack_count =
        args.value("--count") ? parse_count_option("--count", *args.value("--count")) : 5;
    const size_t depth = depth_of(args, 4);
    std::vector<std::unique_ptr<watched_process>> watched;
    for (const pid_t pid : pids) {
        watched.push_back(std::make_unique<watched_process>(pid, args, stack_count));
    }
    std::signal(SIGINT, [](int) { interrupted = true; });
    const bool terminal = ::isatty(STDOUT_FILENO) != 0;
    for (size_t update = 1; !interrupted; ++update) {
        const auto wake = clock_type::now() + std::chrono::duration<double>(interval);
        while (!interrupted && clock_type::now() < wake) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        bool all_exited = true;
        for (const auto& w : watched) {
            w->refresh();
            all_exited = all_exited && w->exited();
        }
        if (args.json) {
            write_json_line(std::cout, watched, update);
        } else {
            // A terminal is redrawn in place; anything else gets one plain view after another.
            std::cout << (terminal ? "\x1b[H\x1b[2J" : update > 1 ? "\n" : "");
            std::cout << "memtrail top --attach, update " << update << " (every " << interval
                      << " s" << (terminal ? "; Ctrl-C to stop" : "") << ")\n\n";
            print_view(std::cout, watched, depth);
            std::cout << std::flush;
        }
        if (all_exited || (updates && update >= *updates)) {
            break;
        }
    }
    return exit_ok;
}

}  // namespace memtrail::cli
