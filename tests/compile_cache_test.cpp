#include "cuda/compile_cache.hpp"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;

void write_text(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(CompileCache, CopiesOnlyMissingFilesAndLeavesNoStagingBehind) {
  testing::TempDir from;
  testing::TempDir to;
  write_text(from / "inductor" / "fx" / "graph", "new graph");
  write_text(from / "triton" / "abc" / "k.cubin", "new kernel");
  write_text(to / "triton" / "abc" / "k.cubin", "old kernel");

  EXPECT_EQ(copy_missing_files(from.path(), to.path(), kCompileCacheMaxBytes), 9u);
  EXPECT_EQ(read_text(to / "inductor" / "fx" / "graph"), "new graph");
  EXPECT_EQ(read_text(to / "triton" / "abc" / "k.cubin"), "old kernel");
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(to.path()))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 2);
}

// A link in a worker's cache could point anywhere (the user's keys): never followed into the
// shared folder.
TEST(CompileCache, SkipsLinksAndStopsAtTheSizeLimit) {
  testing::TempDir from;
  testing::TempDir to;
  testing::TempDir elsewhere;
  write_text(elsewhere / "secret", "key");
  fs::create_symlink(elsewhere / "secret", from / "link");
  write_text(from / "small", "12345");
  write_text(from / "large", std::string(100, 'x'));

  EXPECT_EQ(copy_missing_files(from.path(), to.path(), 50), 5u);
  EXPECT_FALSE(fs::exists(to / "link"));
  EXPECT_TRUE(fs::exists(to / "small"));
  EXPECT_FALSE(fs::exists(to / "large"));
  EXPECT_EQ(copy_missing_files(to / "missing", from.path(), 50), 0u);
}

TEST(CompileCache, OneFolderPerProblemText) {
  testing::TempDir dir;
  write_text(dir / "a.py", "class Model: pass\n");
  write_text(dir / "b.py", "class Model: pass\n");
  write_text(dir / "c.py", "class Model: x = 1\n");
  const fs::path cache = dir / "cache";
  EXPECT_EQ(problem_compile_cache(cache, dir / "a.py"), problem_compile_cache(cache, dir / "b.py"));
  EXPECT_NE(problem_compile_cache(cache, dir / "a.py"), problem_compile_cache(cache, dir / "c.py"));
  // "v2": folders from before the workers saw their caches at one path are not read.
  EXPECT_EQ(problem_compile_cache(cache, dir / "a.py").parent_path(), cache / "compile" / "v2");
}

TEST(CompileCache, TheMountPointIsAnEmptyFolderOfThisUserAndNeverALink) {
  testing::TempDir dir;
  EXPECT_TRUE(prepare_compile_cache_mount_point(dir / "fresh"));
  EXPECT_TRUE(fs::is_directory(dir / "fresh"));
  fs::create_directory_symlink(dir / "fresh", dir / "link");
  EXPECT_FALSE(prepare_compile_cache_mount_point(dir / "link"));
  write_text(dir / "file", "x");
  EXPECT_FALSE(prepare_compile_cache_mount_point(dir / "file"));
  EXPECT_EQ(compile_cache_mount_point().parent_path(), fs::temp_directory_path());
}

}  // namespace
}  // namespace mblast
