// `command:CMD`: any program that reads the prompt on stdin and answers on stdout.
#include "llm/common.hpp"
#include "mblast/process.hpp"

namespace mblast::llm_detail {

namespace {

std::string render_prompt(const std::vector<LlmMessage>& messages) {
  std::string prompt;
  for (const LlmMessage& message : messages) {
    if (!prompt.empty()) prompt += "\n";
    prompt += "=== " + message.role + " ===\n" + message.content + "\n";
  }
  return prompt;
}

std::string tail(const std::string& text, std::size_t limit) {
  const std::size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  const std::string trimmed = text.substr(0, end + 1);
  return trimmed.size() <= limit ? trimmed : "..." + trimmed.substr(trimmed.size() - limit);
}

class CommandClient final : public LlmClient {
 public:
  CommandClient(std::string command, const LlmSettings& settings)
      : command_(std::move(command)), settings_(settings) {}

  LlmResponse complete(const LlmRequest& request) override {
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", command_};
    // The user's own agent, not candidate code: it may well need its provider's key.
    spec.scrub_secrets = false;
    spec.stdin_data = render_prompt(request.messages);
    spec.timeout = settings_.total_timeout;
    spec.max_output_bytes = settings_.max_response_bytes;
    const ProcessResult result = run_process(spec);

    const std::string who = "LLM " + name() + ": ";
    if (result.timed_out) {
      throw llm_job_error(who + "the command " + result.describe(),
                          "make the command answer faster, or raise [llm] timeout_s");
    }
    if (result.exit_code == 127 && result.term_signal == 0) {
      throw llm_input_error(who + "command not found: " + tail(result.err, 500),
                            "check the command after `command:`; it runs under sh -c");
    }
    if (!result.ok()) {
      throw llm_job_error(who + "the command failed (" + result.describe() + ")" +
                          (result.err.empty() ? "" : ": " + tail(result.err, 1000)));
    }
    if (result.output_truncated) {
      throw llm_job_error(who + "response larger than " +
                          std::to_string(settings_.max_response_bytes) + " bytes");
    }
    LlmResponse response;
    response.text = result.out;
    response.input_tokens = estimate_tokens(spec.stdin_data.size());
    response.output_tokens = estimate_tokens(result.out.size());
    response.tokens_estimated = true;
    response.finish_reason = "stop";
    response.latency_s = result.wall_seconds;
    response.provider = "command";
    response.model = command_;
    return response;
  }

  std::string name() const override { return "command:" + command_; }

 private:
  std::string command_;
  LlmSettings settings_;
};

}  // namespace

std::unique_ptr<LlmClient> make_command_client(const std::string& command,
                                               const LlmSettings& settings) {
  return std::make_unique<CommandClient>(command, settings);
}

}  // namespace mblast::llm_detail
