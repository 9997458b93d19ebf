#include "detail/remedies_job.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "memtrail/snapshot/json_value.hpp"

extern char** environ;

namespace memtrail::viewer {

namespace {

// The memtrail command beside the viewer (an install or a build puts both in one bin/), else
// the name for PATH to resolve.
std::string memtrail_command() {
    std::error_code error;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
    if (!error) {
        const auto beside = self.parent_path() / "memtrail";
        if (::access(beside.c_str(), X_OK) == 0) {
            return beside.string();
        }
    }
    return "memtrail";
}

// Reads both pipes to their ends (one may fill while the other is read).
void read_both(int out_fd, int err_fd, std::string& out, std::string& err) {
    std::array<pollfd, 2> fds{pollfd{out_fd, POLLIN, 0}, pollfd{err_fd, POLLIN, 0}};
    std::array<std::string*, 2> sinks{&out, &err};
    int open = 2;
    char buffer[65536];
    while (open > 0) {
        if (::poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            return;
        }
        for (size_t i = 0; i < fds.size(); ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) {
                continue;
            }
            const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
            if (n > 0) {
                sinks[i]->append(buffer, static_cast<size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                fds[i].fd = -1;
                --open;
            }
        }
    }
}

}  // namespace

std::map<size_t, entry_remedies> parse_oom_remedies(const std::string& json) {
    try {
        const snapshot::json_value report = snapshot::parse_json(json);
        std::map<size_t, entry_remedies> out;
        for (const snapshot::json_value& oom : report.at("ooms", "the report").as_array("ooms")) {
            const snapshot::json_value& found = oom.at("remedies", "an OOM");
            entry_remedies& remedies = out[oom.at("entry", "an OOM").as_uint("entry")];
            remedies.checked = found.at("checked", "remedies").as_bool("remedies.checked");
            for (const snapshot::json_value& tried :
                 found.at("tried", "remedies").as_array("remedies.tried")) {
                const std::string& key = tried.at("kind", "a remedy").as_string("kind");
                const auto kind = analysis::remedy_kind_from_key(key);
                if (!kind) {
                    throw snapshot::json_error("a remedy's kind: unknown '" + key + "'");
                }
                remedies.tried.push_back(
                    {tried.at("setting", "a remedy").as_string("setting"), *kind,
                     tried.at("avoids", "a remedy").as_bool("avoids"),
                     tried.at("peak_reserved", "a remedy").as_uint("peak_reserved")});
            }
        }
        return out;
    } catch (const snapshot::json_error& error) {
        throw std::runtime_error(std::string("memtrail oom --json: ") + error.what());
    }
}

remedies_job::remedies_job(std::string path, int device) : path_(std::move(path)), device_(device) {
    thread_ = std::thread([this] {
        try {
            run();
        } catch (const std::exception& e) {
            error_ = e.what();
        }
        done_ = true;  // publishes by_entry_ and error_ to the UI thread
    });
}

remedies_job::~remedies_job() {
    {
        std::lock_guard lock(child_mutex_);
        stopping_ = true;
        if (child_ > 0) {
            ::kill(child_, SIGKILL);
        }
    }
    thread_.join();
}

void remedies_job::run() {
    int out_pipe[2];
    int err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
        throw std::runtime_error(std::string("cannot make a pipe: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
    const std::string command = memtrail_command();
    const std::string device = std::to_string(device_);
    std::vector<std::string> args = {command,    "oom",  "--json", "--blockers", "0",
                                     "--device", device, "--",     path_};
    std::vector<char*> argv;
    for (std::string& arg : args) {
        argv.push_back(arg.data());
    }
    argv.push_back(nullptr);
    int spawned = 0;
    {
        std::lock_guard lock(child_mutex_);
        if (!stopping_) {
            spawned =
                ::posix_spawnp(&child_, command.c_str(), &actions, nullptr, argv.data(), environ);
        }
    }
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    std::string out, err;
    if (spawned == 0 && child_ > 0) {
        read_both(out_pipe[0], err_pipe[0], out, err);
    }
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    if (spawned != 0) {
        throw std::runtime_error("cannot run " + command + ": " + std::strerror(spawned));
    }
    int status = 0;
    {
        std::lock_guard lock(child_mutex_);
        if (child_ <= 0) {
            throw std::runtime_error("stopped");
        }
    }
    while (::waitpid(child_, &status, 0) < 0 && errno == EINTR) {
    }
    {
        std::lock_guard lock(child_mutex_);
        child_ = -1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const size_t last_line = err.find_last_not_of('\n');
        throw std::runtime_error(
            command + " oom failed" +
            (err.empty() ? std::string() : ": " + err.substr(0, last_line + 1)));
    }
    by_entry_ = parse_oom_remedies(out);
}

}  // namespace memtrail::viewer
