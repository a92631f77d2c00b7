// classify_command.cc: see commands.h.
#include "daemon/ctl/commands.h"

namespace bounced::ctl {

void RegisterClassifyCommand(CLI::App& app, Context& ctx) {
  (void)app;
  (void)ctx;
}

}  // namespace bounced::ctl
