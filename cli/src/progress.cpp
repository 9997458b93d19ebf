#include "detail/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace memtrail::cli {
namespace {

constexpr auto redraw_interval = std::chrono::milliseconds(100);

}  // namespace

progress_line::progress_line(std::string what) : what_(std::move(what)) {
    if (::isatty(STDERR_FILENO) == 0) {
        return;
    }
    const auto start = std::chrono::steady_clock::now();
    draw(std::chrono::steady_clock::duration::zero());
    drawer_ = std::thread([this, start] {
        std::unique_lock lock(mutex_);
        while (!stop_requested_.wait_for(lock, redraw_interval, [this] { return stopping_; })) {
            draw(std::chrono::steady_clock::now() - start);
        }
    });
}

progress_line::~progress_line() {
    if (!drawer_.joinable()) {
        return;
    }
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    stop_requested_.notify_one();
    drawer_.join();
    std::fputs("\r\033[K", stderr);  // erase the line: what follows starts at its beginning
    std::fflush(stderr);
}

void progress_line::draw(std::chrono::steady_clock::duration elapsed) const {
    const double seconds = std::chrono::duration<double>(elapsed).count();
    std::fprintf(stderr, "\r\033[Kmemtrail: %s... %.1f s", what_.c_str(), seconds);
    std::fflush(stderr);
}

}  // namespace memtrail::cli
