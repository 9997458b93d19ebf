#include "memtrail/viewer/live_session.hpp"

#include <algorithm>
#include <exception>

#include "memtrail/live/client.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/output_file.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"
#include "memtrail/viewer/attachable_processes.hpp"

namespace memtrail::viewer {

namespace {

std::string with_commas(uint64_t value) {
    std::string digits = std::to_string(value);
    for (size_t at = digits.size(); at > 3; at -= 3) {
        digits.insert(at - 3, ",");
    }
    return digits;
}

snapshot::snapshot read_payload(const live::frame& received, pid_t pid) {
    try {
        return snapshot::read_snapshot(received.payload);
    } catch (const std::exception& error) {
        throw live::protocol_error("process " + std::to_string(pid) + " sent a " + received.kind +
                                   " frame that cannot be read: " + error.what());
    }
}

}  // namespace

std::string live_status_line(const live_status& s) {
    const std::string process = "process " + std::to_string(s.pid);
    const std::string received = with_commas(s.events_received) + " events received";
    std::string behind;
    if (s.restarts != 0) {
        behind = "; fell behind " + std::to_string(s.restarts) + "x, " +
                 with_commas(s.events_missed) +
                 " events missed, the state they led to sent instead";
    }
    switch (s.now) {
        case live_status::phase::attaching:
            return "attaching to " + process + "...";
        case live_status::phase::attached:
            return "attached to " + process + ": " + received + behind;
        case live_status::phase::exited:
            return process + " exited: showing the last state received (" + received + behind +
                   (s.events_after_shown != 0 ? "; the last " + with_commas(s.events_after_shown) +
                                                    " came after it, before the process ended"
                                              : std::string()) +
                   ")";
        case live_status::phase::detached:
            return "detached from " + process + ": showing the last state received (" + received +
                   behind + ")";
        case live_status::phase::failed:
            return "cannot follow " + process + ": " + s.error;
    }
    return {};
}

live_session::live_session(pid_t pid, options how) : pid_(pid), how_(std::move(how)) {
    status_.pid = pid;
    const std::string command = command_line_of(pid);
    const std::string program = command.substr(0, command.find(' '));
    name_ =
        std::filesystem::path(program).filename().string() + " (pid " + std::to_string(pid) + ")";
    session_thread_ = std::thread([this] { follow(); });
}

live_session::~live_session() {
    detach();
    session_thread_.join();
    if (events_thread_.joinable()) {
        events_thread_.join();
    }
}

live_status live_session::status() const {
    const std::lock_guard lock(mutex_);
    live_status copy = status_;
    copy.events_received = events_arrived_;
    if (arrived_ends_.size() == shown_ends_.size()) {
        for (size_t d = 0; d < arrived_ends_.size(); ++d) {
            copy.events_after_shown +=
                arrived_ends_[d] - std::min(arrived_ends_[d], shown_ends_[d]);
        }
    }
    return copy;
}

bool live_session::following() const {
    const std::lock_guard lock(mutex_);
    return status_.now == live_status::phase::attaching ||
           status_.now == live_status::phase::attached;
}

live_session::latest_state live_session::latest() const {
    const std::lock_guard lock(mutex_);
    return {document_, recording_, generation_};
}

void live_session::detach() {
    const std::lock_guard lock(mutex_);
    stop_ = true;
    // Shutting the sockets down wakes a thread waiting on them; the process sees a client leave.
    if (state_connection_) {
        state_connection_->detach();
    }
    if (event_connection_) {
        event_connection_->detach();
    }
    changed_.notify_all();
}

void live_session::finish(live_status::phase phase, std::string error) {
    const std::lock_guard lock(mutex_);
    finish_locked(phase, std::move(error));
}

void live_session::finish_locked(live_status::phase phase, std::string error) {
    if (status_.now == live_status::phase::attaching ||
        status_.now == live_status::phase::attached) {
        status_.now = stop_ ? live_status::phase::detached : phase;
        status_.error = std::move(error);
    }
    stop_ = true;
    if (event_connection_) {
        event_connection_->detach();
    }
    changed_.notify_all();
}

void live_session::publish(snapshot::snapshot recording, std::vector<uint64_t> ends) {
    auto recorded = std::make_shared<const snapshot::snapshot>(std::move(recording));
    load_progress progress;
    std::shared_ptr<const document> doc = make_document(recorded, name_, progress, how_.frames);
    const std::lock_guard lock(mutex_);
    document_ = std::move(doc);
    recording_ = std::move(recorded);
    shown_ends_ = std::move(ends);
    ++generation_;
    ++status_.states_shown;
}

void live_session::receive_events() {
    try {
        while (std::optional<live::frame> next = event_connection_->next_frame()) {
            if (next->kind != "events" && next->kind != "behind" && next->kind != "snapshot") {
                throw live::protocol_error("process " + std::to_string(pid_) +
                                           " sent an unexpected '" + next->kind + "' frame");
            }
            arrived_frame frame;
            if (next->kind != "behind") {
                frame.events = read_payload(*next, pid_);
            }
            next->payload.clear();
            frame.header = std::move(*next);
            const live::frame& h = frame.header;
            const std::lock_guard lock(mutex_);
            if (h.kind == "events") {
                const size_t device = static_cast<size_t>(h.number("device"));
                if (device < arrived_ends_.size()) {
                    arrived_ends_[device] = h.number("next");
                }
                events_arrived_ += h.number("count");
            } else if (h.kind == "behind") {
                status_.events_missed += h.number("missed");
                ++status_.restarts;
            } else {
                arrived_ends_ = h.numbers("ends");
            }
            arrived_.push_back(std::move(frame));
            changed_.notify_all();
        }
    } catch (const std::exception& error) {
        const std::lock_guard lock(mutex_);
        stream_error_ = error.what();
    }
    const std::lock_guard lock(mutex_);
    stream_ended_ = true;
    changed_.notify_all();
}

bool live_session::take_arrived(const std::vector<uint64_t>& ends) {
    const auto reached = [&] {
        for (size_t d = 0; d < ends.size(); ++d) {
            if (d < arrived_ends_.size() ? arrived_ends_[d] < ends[d] : ends[d] != 0) {
                return false;
            }
        }
        return true;
    };
    std::deque<arrived_frame> frames;
    bool complete = false;
    {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stop_ || stream_ended_ || reached(); });
        complete = reached();
        frames.swap(arrived_);
    }
    for (arrived_frame& frame : frames) {
        const live::frame& h = frame.header;
        if (h.kind == "events") {
            trace_.append(*frame.events, static_cast<int>(h.number("device")), h.number("from"),
                          h.number("next"));
        } else if (h.kind == "snapshot") {
            trace_.start(std::move(*frame.events), h.numbers("ends"));
        }
    }
    return complete;
}

void live_session::follow() {
    try {
        auto state = std::make_unique<live::client>(pid_, how_.folder);
        auto events = std::make_unique<live::client>(pid_, how_.folder);
        const live::frame first = state->take_snapshot(live::client::contents::full);
        const std::vector<uint64_t> first_ends = first.numbers("ends");
        snapshot::snapshot start = read_payload(first, pid_);
        events->subscribe(first_ends);
        {
            const std::lock_guard lock(mutex_);
            if (stop_) {
                status_.now = live_status::phase::detached;
                return;
            }
            arrived_ends_ = first_ends;
            status_.now = live_status::phase::attached;
            state_connection_ = std::move(state);
            event_connection_ = std::move(events);
        }
        trace_.start(start, first_ends);
        events_thread_ = std::thread([this] { receive_events(); });
        publish(std::move(start), first_ends);
    } catch (const std::exception& error) {
        finish(live_status::phase::failed, error.what());
        return;
    }
    // Set when the event stream ended before the entries a state needs: the process exited (the
    // next state cannot be taken either) or the stream broke while it runs.
    bool stream_short = false;
    for (;;) {
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, how_.refresh, [this] { return stop_; });
        if (stop_) {
            break;
        }
        lock.unlock();
        live::frame taken;
        try {
            taken = state_connection_->take_snapshot(live::client::contents::state);
        } catch (const std::exception&) {
            break;  // the process exited (or the connection was shut by detach())
        }
        if (stream_short) {
            const std::lock_guard relock(mutex_);
            finish_locked(live_status::phase::failed,
                          "the event stream ended while the process runs" +
                              (stream_error_.empty() ? std::string() : ": " + stream_error_));
            return;
        }
        std::optional<snapshot::snapshot> cut;
        std::vector<uint64_t> ends;
        try {
            ends = taken.numbers("ends");
            const snapshot::snapshot state = read_payload(taken, pid_);
            stream_short = !take_arrived(ends);
            cut = trace_.cut(state, ends);  // none after falling behind past `ends`
        } catch (const std::exception& error) {
            finish(live_status::phase::failed, error.what());
            return;
        }
        if (cut) {
            publish(std::move(*cut), std::move(ends));
        }
    }
    finish(live_status::phase::exited);
}

void save_received(const snapshot::snapshot& recording, const std::filesystem::path& path) {
    const std::string name = path.filename().string();
    std::vector<uint8_t> bytes;
    if (name.ends_with(".pickle")) {
        bytes = snapshot::write_torch_pickle(recording);
    } else {
        bytes = snapshot::write_snapshot(
            recording, {.compress = name.ends_with(".zst") ? snapshot::compression::zstd
                                                           : snapshot::compression::none});
    }
    snapshot::write_output_file(path, bytes);
}

}  // namespace memtrail::viewer
