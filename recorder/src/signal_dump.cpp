// The handler posts a semaphore (sem_post is async-signal-safe); a helper thread waits on it and
// does the dump, with locks and files and allocations the handler could not use. Signals that
// arrive while a dump is written are served by one dump, not one each: a dump taken after them
// shows everything they asked to see.

#include <semaphore.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "memtrail/recorder/dump_triggers.hpp"

namespace memtrail::recorder {

struct signal_dump::state {
    int signal = 0;
    sem_t wake;
    std::atomic<bool> stopping{false};
    // Wake-ups the worker took on its way out, the destructor's own among them.
    uint64_t taken_when_stopping = 0;
    std::function<void()> dump;
    struct sigaction previous {};
    std::thread worker;
};

namespace {

std::atomic<sem_t*> active_wake{nullptr};

// Takes every wake-up posted so far; returns how many.
uint64_t take_pending(sem_t& wake) {
    uint64_t taken = 0;
    while (sem_trywait(&wake) == 0) {
        ++taken;
    }
    return taken;
}

void on_signal(int) {
    const int saved_errno = errno;
    if (sem_t* wake = active_wake.load()) {
        sem_post(wake);
    }
    errno = saved_errno;
}

}  // namespace

signal_dump::signal_dump(int signal, std::function<void()> dump)
    : state_(std::make_unique<state>()) {
    state_->signal = signal;
    state_->dump = std::move(dump);
    if (sem_init(&state_->wake, 0, 0) != 0) {
        throw std::system_error(errno, std::generic_category(), "memtrail: sem_init");
    }
    sem_t* expected = nullptr;
    if (!active_wake.compare_exchange_strong(expected, &state_->wake)) {
        sem_destroy(&state_->wake);
        throw std::logic_error("memtrail: a signal dump is installed already");
    }
    state_->worker = std::thread([s = state_.get()] {
        while (true) {
            if (sem_wait(&s->wake) != 0) {
                continue;  // EINTR
            }
            const uint64_t requests = 1 + take_pending(s->wake);
            if (s->stopping.load()) {
                s->taken_when_stopping = requests;
                return;
            }
            try {
                s->dump();
            } catch (const std::exception& error) {
                std::fprintf(stderr, "memtrail: signal dump failed: %s\n", error.what());
            }
            if (requests > 1) {
                std::fprintf(stderr,
                             "memtrail: %llu dump signals arrived before this dump started; it "
                             "served them all (%llu dumps skipped)\n",
                             static_cast<unsigned long long>(requests),
                             static_cast<unsigned long long>(requests - 1));
            }
        }
    });
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (sigaction(signal, &action, &state_->previous) != 0) {
        const int error = errno;
        state_->stopping.store(true);
        sem_post(&state_->wake);
        state_->worker.join();
        active_wake.store(nullptr);
        sem_destroy(&state_->wake);
        throw std::system_error(error, std::generic_category(), "memtrail: sigaction");
    }
}

signal_dump::~signal_dump() {
    sigaction(state_->signal, &state_->previous, nullptr);
    active_wake.store(nullptr);
    state_->stopping.store(true);
    sem_post(&state_->wake);
    state_->worker.join();
    // Every wake-up left, less the one posted just now, is a signal no dump served.
    const uint64_t unserved = state_->taken_when_stopping + take_pending(state_->wake) - 1;
    if (unserved != 0) {
        std::fprintf(stderr,
                     "memtrail: %llu dump signals arrived during the last dump and were not "
                     "served: the dump trigger was removed (at exit)\n",
                     static_cast<unsigned long long>(unserved));
    }
    sem_destroy(&state_->wake);
}

}  // namespace memtrail::recorder
