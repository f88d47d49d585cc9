#include "opencl/opencl_candidate.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>

#include "mblast/error.hpp"

namespace mblast::opencl {

namespace {

using nlohmann::json;

constexpr const char* kPlanHint =
    "see the @launch format: {\"buffers\": [{\"name\", \"bytes\"}], \"launches\": [{\"kernel\", "
    "\"global\", \"local\", \"args\"}]}";

[[noreturn]] void plan_error(const std::string& where, const std::string& what) {
  throw input_error("launch plan: " + where + ": " + what, kPlanHint);
}

struct PlanBlock {
  std::size_t comment_begin = 0;  // the "/*"
  std::size_t json_begin = 0;
  std::size_t json_end = 0;     // the "*/"
  std::size_t comment_end = 0;  // just past the "*/"
};

// The `/* @launch ... */` comment, if there is exactly one.
std::optional<PlanBlock> find_plan_block(const std::string& text) {
  std::optional<PlanBlock> found;
  for (std::size_t open = text.find("/*"); open != std::string::npos;
       open = text.find("/*", open + 2)) {
    std::size_t tag = open + 2;
    while (tag < text.size() && std::isspace(static_cast<unsigned char>(text[tag]))) ++tag;
    if (text.compare(tag, 7, "@launch") != 0) continue;
    if (found) {
      throw input_error("the candidate has more than one /* @launch ... */ comment",
                        "keep one launch plan per file");
    }
    const std::size_t close = text.find("*/", tag);
    if (close == std::string::npos) {
      throw input_error("the /* @launch comment is not closed with */",
                        "end the launch plan with */");
    }
    found = PlanBlock{open, tag + 7, close, close + 2};
  }
  return found;
}

std::size_t line_of(const std::string& text, std::size_t pos) {
  return 1 + static_cast<std::size_t>(
                 std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));
}

json parse_json(const std::string& text, const std::string& what) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    std::string message = e.what();
    if (const auto bracket = message.find("] "); message.starts_with("[json.exception")) {
      message = message.substr(bracket + 2);
    }
    throw input_error(what + " is not valid JSON: " + message, kPlanHint);
  }
}

void check_keys(const json& object, const std::string& where,
                const std::set<std::string>& allowed) {
  if (!object.is_object()) plan_error(where, "must be a JSON object, not " + object.dump());
  for (const auto& [key, value] : object.items()) {
    if (allowed.count(key) == 0) {
      std::string names;
      for (const auto& name : allowed) names += (names.empty() ? "" : ", ") + name;
      plan_error(where, "unknown key \"" + key + "\" (allowed: " + names + ")");
    }
  }
}

const json& required(const json& object, const std::string& key, const std::string& where) {
  if (!object.contains(key)) plan_error(where, "\"" + key + "\" is missing");
  return object.at(key);
}

std::size_t positive_size(const json& value, const std::string& where) {
  if (!value.is_number_integer() || value.get<std::int64_t>() <= 0) {
    plan_error(where, "must be a positive integer, not " + value.dump());
  }
  return value.get<std::size_t>();
}

std::vector<std::size_t> sizes(const json& value, const std::string& where) {
  if (!value.is_array() || value.empty() || value.size() > 3) {
    plan_error(where, "must be a list of 1 to 3 positive integers, not " + value.dump());
  }
  std::vector<std::size_t> out;
  for (std::size_t d = 0; d < value.size(); ++d) {
    out.push_back(positive_size(value[d], where + "[" + std::to_string(d) + "]"));
  }
  return out;
}

LaunchArg parse_arg(const json& arg, const std::string& where) {
  check_keys(arg, where, {"buffer", "int", "float", "local_bytes"});
  if (arg.size() != 1) {
    plan_error(where,
               "must have exactly one key (buffer, int, float or local_bytes), not " + arg.dump());
  }
  const auto first = arg.begin();  // an object with exactly one key
  const std::string key = first.key();
  const json& value = first.value();
  if (key == "buffer") {
    if (!value.is_string() || value.get<std::string>().empty()) {
      plan_error(where, "\"buffer\" must be a buffer name, not " + value.dump());
    }
    return BufferArg{value.get<std::string>()};
  }
  if (key == "int") {
    constexpr auto lowest = std::numeric_limits<std::int32_t>::min();
    constexpr auto highest = std::numeric_limits<std::int32_t>::max();
    if (!value.is_number_integer() || value.get<std::int64_t>() < lowest ||
        value.get<std::int64_t>() > highest) {
      plan_error(where, "\"int\" must be a 32-bit integer, not " + value.dump());
    }
    return IntArg{value.get<std::int32_t>()};
  }
  if (key == "float") {
    if (!value.is_number()) plan_error(where, "\"float\" must be a number, not " + value.dump());
    return FloatArg{value.get<float>()};
  }
  return LocalBytesArg{positive_size(value, where + ".local_bytes")};
}

Launch parse_launch(const json& launch, const std::string& where) {
  check_keys(launch, where, {"kernel", "global", "local", "args"});
  Launch out;
  const json& kernel = required(launch, "kernel", where);
  if (!kernel.is_string() || kernel.get<std::string>().empty()) {
    plan_error(where + ".kernel", "must be a kernel name, not " + kernel.dump());
  }
  out.kernel = kernel.get<std::string>();
  out.global = sizes(required(launch, "global", where), where + ".global");
  if (launch.contains("local") && !launch["local"].is_null()) {
    out.local = sizes(launch["local"], where + ".local");
    if (out.local->size() != out.global.size()) {
      plan_error(where + ".local", "has " + std::to_string(out.local->size()) +
                                       " dimensions but global has " +
                                       std::to_string(out.global.size()));
    }
    for (std::size_t d = 0; d < out.global.size(); ++d) {
      if (out.global[d] % (*out.local)[d] != 0) {
        plan_error(where + ".local",
                   "local size " + std::to_string((*out.local)[d]) + " does not divide global " +
                       std::to_string(out.global[d]) + " in dimension " + std::to_string(d) +
                       " (OpenCL 1.2 needs whole work-groups: round global up and guard the "
                       "tail in the kernel, or use null)");
      }
    }
  }
  const json& args = launch.contains("args") ? launch["args"] : json::array();
  if (!args.is_array()) plan_error(where + ".args", "must be a list, not " + args.dump());
  for (std::size_t i = 0; i < args.size(); ++i) {
    out.args.push_back(parse_arg(args[i], where + ".args[" + std::to_string(i) + "]"));
  }
  return out;
}

using Fields = std::vector<std::pair<std::string, json>>;

// A JSON object on one line with ", " and ": " separators, keys in the order given.
std::string one_line(const Fields& fields) {
  std::string out;
  for (const auto& [key, value] : fields) {
    out += (out.empty() ? "{" : ", ") + json(key).dump() + ": " + value.dump();
  }
  return out + "}";
}

std::string one_line_args(const json& args) {
  std::string out = "[";
  for (const auto& arg : args) {
    const auto field = arg.begin();
    out += (out.size() > 1 ? ", " : "") + one_line({{field.key(), field.value()}});
  }
  return out + "]";
}

// One buffer or launch per line, keys in the documented order: easy to read and to diff.
std::string render_plan(const json& plan) {
  std::string out = "{";
  const json buffers = plan.value("buffers", json::array());
  if (!buffers.empty()) {
    out += "\"buffers\": [";
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      out += (i ? ",\n  " : "") +
             one_line({{"name", buffers[i]["name"]}, {"bytes", buffers[i]["bytes"]}});
    }
    out += "],\n ";
  }
  out += "\"launches\": [";
  const json& launches = plan["launches"];
  for (std::size_t i = 0; i < launches.size(); ++i) {
    std::string line = one_line({{"kernel", launches[i]["kernel"]},
                                 {"global", launches[i]["global"]},
                                 {"local", launches[i].value("local", json())}});
    line.pop_back();  // reopen the object for the args, which have their own layout
    line += ", \"args\": " + one_line_args(launches[i].value("args", json::array())) + "}";
    out += "\n  " + line + (i + 1 < launches.size() ? "," : "");
  }
  return out + "]}";
}

bool reserved_name(const std::string& name) {
  for (const char* prefix : {"input", "output"}) {
    const std::string p(prefix);
    if (name.size() > p.size() && name.starts_with(p) &&
        std::all_of(name.begin() + static_cast<long>(p.size()), name.end(),
                    [](unsigned char c) { return std::isdigit(c) != 0; })) {
      return true;
    }
  }
  return false;
}

}  // namespace

LaunchPlan parse_launch_plan(const json& plan) {
  check_keys(plan, "the plan", {"buffers", "launches"});
  LaunchPlan out;
  const json& buffers = plan.contains("buffers") ? plan["buffers"] : json::array();
  if (!buffers.is_array()) plan_error("buffers", "must be a list, not " + buffers.dump());
  std::set<std::string> names;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const std::string where = "buffers[" + std::to_string(i) + "]";
    check_keys(buffers[i], where, {"name", "bytes"});
    const json& name = required(buffers[i], "name", where);
    if (!name.is_string() || name.get<std::string>().empty()) {
      plan_error(where + ".name", "must be a non-empty string, not " + name.dump());
    }
    ScratchBuffer buffer{name.get<std::string>(),
                         positive_size(required(buffers[i], "bytes", where), where + ".bytes")};
    if (reserved_name(buffer.name)) {
      plan_error(where + ".name", "\"" + buffer.name +
                                      "\" is reserved for the problem's inputs and outputs; "
                                      "pick another name for a scratch buffer");
    }
    if (!names.insert(buffer.name).second) {
      plan_error(where + ".name", "\"" + buffer.name + "\" is declared twice");
    }
    out.buffers.push_back(std::move(buffer));
  }
  const json& launches = required(plan, "launches", "the plan");
  if (!launches.is_array() || launches.empty()) {
    plan_error("launches", "must be a non-empty list of kernel launches");
  }
  for (std::size_t i = 0; i < launches.size(); ++i) {
    out.launches.push_back(parse_launch(launches[i], "launches[" + std::to_string(i) + "]"));
  }
  return out;
}

Candidate parse_candidate(const std::string& text) {
  const auto block = find_plan_block(text);
  if (!block) {
    throw input_error("the candidate has no launch plan",
                      "add a /* @launch {\"launches\": [...]} */ comment to the .cl file");
  }
  Candidate candidate;
  candidate.source = text;
  candidate.plan_json =
      parse_json(text.substr(block->json_begin, block->json_end - block->json_begin),
                 "the @launch plan (line " + std::to_string(line_of(text, block->json_begin)) +
                     " of the file)");
  candidate.plan = parse_launch_plan(candidate.plan_json);
  return candidate;
}

std::string combine_candidate_files(const std::string& kernels_cl, const std::string& launch_json) {
  if (find_plan_block(kernels_cl)) {
    throw input_error("kernels.cl already has a /* @launch */ plan",
                      "put the plan in launch.json only");
  }
  const json plan = parse_json(launch_json, "launch.json");
  parse_launch_plan(plan);
  // The plan goes last so that the compiler's line numbers are those of kernels.cl.
  std::string text = kernels_cl;
  if (!text.empty() && text.back() != '\n') text += '\n';
  return with_launch_plan(text + "/* @launch {} */\n", plan);
}

std::string with_launch_plan(const std::string& text, const json& plan) {
  const auto block = find_plan_block(text);
  if (!block) throw input_error("the candidate has no /* @launch */ plan to replace");
  parse_launch_plan(plan);
  const std::string rendered = render_plan(plan);
  if (rendered.find("*/") != std::string::npos) {
    throw input_error("the launch plan contains \"*/\", which would end its comment",
                      "rename the buffer or kernel that contains */");
  }
  return text.substr(0, block->comment_begin) + "/* @launch\n" + rendered + "\n*/" +
         text.substr(block->comment_end);
}

}  // namespace mblast::opencl
