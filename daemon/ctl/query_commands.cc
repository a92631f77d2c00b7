// query_commands.cc: bouncectl's query command group (see commands.h).
#include "daemon/ctl/commands.h"

namespace bounced::ctl {

void RegisterQueryCommands(CLI::App& app, Context& ctx) {
  (void)app;
  (void)ctx;
}

}  // namespace bounced::ctl
