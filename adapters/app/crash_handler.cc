#include "adapters/app/crash_handler.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace stsresize::crash {

namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

void write_text(const char* text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

// Only async-signal-safe calls: write(2), backtrace_symbols_fd (writes, no malloc once
// backtrace() has been called before, see install_handler) and raise.
void on_fatal_signal(int signal_number) {
  write_text("\nstsresize: fatal signal ");
  write_text(sigabbrev_np(signal_number) != nullptr ? sigabbrev_np(signal_number) : "?");
  write_text(" (");
  write_text(sigdescr_np(signal_number) != nullptr ? sigdescr_np(signal_number) : "?");
  write_text("); backtrace (addr2line -Cfpe BINARY +OFFSET resolves a frame):\n");
  void* frames[64];
  const int depth = backtrace(frames, 64);
  backtrace_symbols_fd(frames, depth, STDERR_FILENO);
  // SA_RESETHAND restored the default action: the process ends with this signal (and a core
  // dump where enabled), exactly as without the handler.
  raise(signal_number);
}

}  // namespace

void install_handler() {
  // backtrace() loads libgcc on its first call, which allocates: do that now, not in a handler.
  void* warm_up[1];
  backtrace(warm_up, 1);

  static char alternate_stack[64 * 1024];
  stack_t stack{};
  stack.ss_sp = alternate_stack;
  stack.ss_size = sizeof alternate_stack;
  sigaltstack(&stack, nullptr);

  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_ONSTACK;
  for (const int signal_number : kFatalSignals) sigaction(signal_number, &action, nullptr);
}

}  // namespace stsresize::crash
