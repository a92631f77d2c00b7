// parse_commands.cc: bouncectl's parse command group (see commands.h).
#include "daemon/ctl/commands.h"

namespace bounced::ctl {

void RegisterParseCommands(CLI::App& app, Context& ctx) {
  (void)app;
  (void)ctx;
}

}  // namespace bounced::ctl
