#pragma once
// A temporary HEADROOM_DATA_DIR for tests that run the CLI on changed data files: writes the files,
// sets the variable for the child processes run_cli starts, and removes both when it goes out of
// scope. The test process's own catalog is never reloaded (it is parsed once), so such tests check
// the data through the CLI, as a user adding a model without a rebuild would.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

namespace support {

// native/data/<name> of this source tree, parsed.
inline nlohmann::json source_data(const std::string& name) {
  std::ifstream in(std::string(HEADROOM_SOURCE_DIR) + "/native/data/" + name);
  return nlohmann::json::parse(in);
}

class DataOverride {
 public:
  DataOverride() {
    std::random_device rd;
    dir_ = std::filesystem::temp_directory_path() / ("headroom-data-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(dir_);
    setenv("HEADROOM_DATA_DIR", dir_.string().c_str(), 1);
  }
  ~DataOverride() {
    unsetenv("HEADROOM_DATA_DIR");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  DataOverride(const DataOverride&) = delete;
  DataOverride& operator=(const DataOverride&) = delete;

  // Writes `name` (a data file the folder then supplies instead of the embedded copy), or any other file.
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir_ / name) << text; }
  void write(const std::string& name, const nlohmann::json& j) const { write(name, j.dump(1)); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

}  // namespace support
