// The handler posts a semaphore (sem_post is async-signal-safe); a helper thread waits on it and
// does the dump, with locks and files and allocations the handler could not use.

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
    std::function<void()> dump;
    struct sigaction previous {};
    std::thread worker;
};

namespace {

std::atomic<sem_t*> active_wake{nullptr};

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
            if (s->stopping.load()) {
                return;
            }
            try {
                s->dump();
            } catch (const std::exception& error) {
                std::fprintf(stderr, "memtrail: signal dump failed: %s\n", error.what());
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
    sem_destroy(&state_->wake);
}

}  // namespace memtrail::recorder
