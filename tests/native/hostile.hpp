#pragma once
// Helpers of the hostile-input tests (issue 13): every case runs with a time limit and an
// address-space limit, so a regression fails fast instead of hanging or swapping CI.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"

namespace hostile {

// The CLI under `ulimit -t` (CPU seconds), `timeout` and `ulimit -v` (kB). `seconds` limits the CPU
// time the run spends, which is what a quadratic regression grows; wall time on a loaded 2-core CI
// machine is several times that, so the wall clock only catches a hang (a run that waits without
// computing), at six times the limit. A run past either limit dies on a signal (152 or 137); one that
// runs out of address space dies on bad_alloc (3) or a signal (-1): all fail the exit-code checks.
inline CliRun run_limited(const std::string& args, int seconds = 10, int memory_mb = 512) {
  std::string cmd = "ulimit -v " + std::to_string(memory_mb * 1024) + "; ulimit -t " + std::to_string(seconds) +
                    "; exec timeout -s KILL " + std::to_string(6 * seconds) + " '" + HEADROOM_CLI + "' " + args +
                    " 2>&1";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

struct ChildResult {
  bool finished = false;   // exited by itself (not killed by the alarm or a signal)
  int code = -1;           // its exit code: 0 when `body` returned true
  double seconds = 0;
};

// Runs `body` in a forked child under alarm(seconds) and RLIMIT_AS: for in-process core calls.
inline ChildResult run_in_child(const std::function<bool()>& body, int seconds = 10, int memory_mb = 1024) {
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    struct rlimit lim {};
    lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(memory_mb) * 1024 * 1024;
    setrlimit(RLIMIT_AS, &lim);
    alarm(static_cast<unsigned>(seconds));
    int code = 3;
    try {
      code = body() ? 0 : 1;
    } catch (...) {
      code = 2;
    }
    _exit(code);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ChildResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.finished = WIFEXITED(status);
  r.code = r.finished ? WEXITSTATUS(status) : -1;
  return r;
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  REQUIRE(out);
  out << text;
  REQUIRE(out.good());
}

// A private temporary folder, removed afterwards.
class Dir {
 public:
  Dir() {
    char tmpl[] = "/tmp/headroom-hostile-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path_ = tmpl;
  }
  ~Dir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace hostile
