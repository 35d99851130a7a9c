#pragma once
// A fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) writes the signal and a backtrace to
// stderr before the process dies of it as it would have: a controller that crashes in a cluster
// leaves in its log where it crashed, not only "Segmentation fault" in its parent's.
namespace stsresize::crash {

// Installs the handlers (once; an alternate stack, so a stack overflow is reported too).
void install_handler();

}  // namespace stsresize::crash
