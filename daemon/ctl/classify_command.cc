// classify_command.cc: bouncectl's classify command (see commands.h).
//
// `bouncectl classify [--recipient ADDR] [--remote-mta HOST] [--stage STAGE] [--status S]
//  [--reply-code C] [--dsn-action A] [--format=jsonl|text] [--rules FILE]... "REPLY TEXT"`
// classifies one remote reply with the rules (the embedded defaults, with --rules files on top)
// and prints one result: a JSON object (jsonl, the default) or a few readable lines (text).
// Exit 0 ok, 2 on usage or rules errors.
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "classifier/result_json.h"
#include "classifier/rules.h"
#include "daemon/ctl/commands.h"

namespace bounced::ctl {
namespace {

struct ClassifyOptions {
  std::string format = "jsonl";
  std::vector<std::string> rules_files;
  std::string recipient;
  std::string remote_mta;
  std::string stage;
  std::string status;
  std::string reply_code;
  std::string dsn_action;
  std::string reply;
};

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

bool AllDigits(std::string_view s) {
  return !s.empty() && s.size() <= 3 && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// --status and --reply-code as the classifier takes them (class 2, 4 or 5); anything else would
// be dropped without a word and the reply text's own code used instead, so it is refused.
const CLI::Validator kEnhancedStatus(
    [](std::string& v) -> std::string {
      std::string_view s = v;
      size_t a = s.find('.'), b = a == std::string_view::npos ? a : s.find('.', a + 1);
      if (s.size() >= 5 && (s[0] == '2' || s[0] == '4' || s[0] == '5') && a == 1 &&
          b != std::string_view::npos && AllDigits(s.substr(2, b - 2)) &&
          AllDigits(s.substr(b + 1))) {
        return {};
      }
      return "'" + v + "' is not an enhanced status code (CLASS.SUBJECT.DETAIL, class 2, 4 or 5)";
    },
    "X.Y.Z");
const CLI::Validator kReplyCode(
    [](std::string& v) -> std::string {
      if (v.size() == 3 && (v[0] == '2' || v[0] == '4' || v[0] == '5') && AllDigits(v)) return {};
      return "'" + v + "' is not an SMTP reply code (three digits, 2xx, 4xx or 5xx)";
    },
    "NNN");

std::string TextForm(const Result& r) {
  const CategoryInfo& info = Describe(r.category);
  std::string out;
  out += "category:      " + std::string(info.name) + "\n";
  out += "fault:         " + std::string(ToString(info.fault)) + " (" + std::string(info.cause) +
         ")\n";
  out += "action:        " + std::string(ToString(r.action())) + "\n";
  out += "hard_bounce:   " + std::string(info.hard_bounce ? "yes" : "no") + "\n";
  out += "status:        " + OrDash(r.status) + "\n";
  out += "reply_code:    " + OrDash(r.reply_code) + "\n";
  out += "stage:         " + OrDash(r.stage) + "\n";
  out += "provider:      " + OrDash(r.provider) + "\n";
  out += "provider_code: " + OrDash(r.provider_code) + "\n";
  out += "rule:          " + OrDash(r.rule) + "\n";
  if (!r.recipient.empty()) out += "recipient:     " + r.recipient + "\n";
  if (!r.remote_mta.empty()) out += "remote_mta:    " + r.remote_mta + "\n";
  out += "diagnostic:    " + OrDash(r.diagnostic) + "\n";
  return out;
}

int RunClassify(const ClassifyOptions& opt) {
  auto loaded = LoadCommandRules(opt.rules_files);
  if (!loaded) {
    std::cerr << "bouncectl classify: " << loaded.error() << '\n';
    return kExitUsage;
  }
  const std::shared_ptr<const RuleSet>& rules = *loaded;
  ReplyInput in;
  in.diagnostic = opt.reply;
  in.recipient = opt.recipient;
  in.remote_mta = opt.remote_mta;
  in.stage = opt.stage;
  in.status = opt.status;
  in.reply_code = opt.reply_code;
  in.dsn_action = opt.dsn_action;
  Result r = rules->Classify(in);
  if (opt.format == "text") {
    std::cout << TextForm(r);
  } else {
    std::cout << ToJson(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  }
  std::cout.flush();
  return kExitOk;
}

}  // namespace

void RegisterClassifyCommand(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<ClassifyOptions>();
  CLI::App* cmd =
      app.add_subcommand("classify", "classify one remote reply text; prints one result");
  cmd->add_option("--recipient", opt->recipient, "recipient address (for the provider)");
  cmd->add_option("--remote-mta", opt->remote_mta, "remote MTA host name (for the provider)");
  cmd->add_option("--stage", opt->stage, "SMTP stage of the reply")
      ->check(CLI::IsMember({"connect", "helo", "mail", "rcpt", "data", "eom"}));
  cmd->add_option("--status", opt->status, "enhanced status code, e.g. 5.1.1")
      ->check(kEnhancedStatus);
  cmd->add_option("--reply-code", opt->reply_code, "SMTP reply code, e.g. 550")->check(kReplyCode);
  cmd->add_option("--dsn-action", opt->dsn_action, "DSN action")
      ->check(CLI::IsMember({"failed", "delayed", "delivered", "relayed", "expanded", "expired"}));
  cmd->add_option("--format", opt->format, "output format")
      ->check(CLI::IsMember({"jsonl", "text"}));
  cmd->add_option("--rules", opt->rules_files,
                  "extra rules file merged on top of the defaults (repeatable)");
  cmd->add_option("reply", opt->reply, "the remote reply text")->required();
  cmd->callback([opt, &ctx] { ctx.exit_code = RunClassify(*opt); });
}

}  // namespace bounced::ctl
