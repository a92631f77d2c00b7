// report_commands.cc: bouncectl's report command group (see commands.h).
#include "daemon/ctl/commands.h"

namespace bounced::ctl {

void RegisterReportCommands(CLI::App& app, Context& ctx) {
  (void)app;
  (void)ctx;
}

}  // namespace bounced::ctl
