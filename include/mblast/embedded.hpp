#pragma once
// Files compiled into the binary (schema migrations, seed catalogue, prompts, the Python worker),
// so that an installed `mblast` needs nothing from the source tree.
#include <string_view>
#include <vector>

namespace mblast {

struct EmbeddedFile {
  std::string_view path;  // relative to the embedded folder, e.g. "migrations/0001_init.sql"
  std::string_view contents;
};

namespace embedded::schema {
const std::vector<EmbeddedFile>& files();  // kb_schema/
}  // namespace embedded::schema

namespace embedded::worker {
const std::vector<EmbeddedFile>& files();  // worker/ (Python sources)
}  // namespace embedded::worker

namespace embedded::prompts {
const std::vector<EmbeddedFile>& files();  // prompts/ (templates)
}  // namespace embedded::prompts

}  // namespace mblast
