// parse_log_command.cc: see commands.h.
#include "daemon/ctl/commands.h"

namespace bounced::ctl {

void RegisterParseLogCommand(CLI::App& app, Context& ctx) {
  (void)app;
  (void)ctx;
}

}  // namespace bounced::ctl
