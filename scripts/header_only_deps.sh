# Sourced by the cross builds (test_windows.sh, test_macos.sh). Debian's nlohmann_json and Catch2 configs
# add /usr/include, whose glibc headers must not meet the target's own C headers: these configs of our
# own point at the two header-only libraries alone.
#   header_only_deps DEPS_DIR   -> DEPS_DIR/{include,nlohmann_json,Catch2}; pass
#   -Dnlohmann_json_DIR=DEPS_DIR/nlohmann_json -DCatch2_DIR=DEPS_DIR/Catch2 to CMake
header_only_deps() {
  local deps=$1 pkg target version
  mkdir -p "$deps/include"
  ln -sfn /usr/include/nlohmann "$deps/include/nlohmann"
  ln -sfn /usr/include/catch2 "$deps/include/catch2"
  for pkg in nlohmann_json Catch2; do
    target=$([ "$pkg" = Catch2 ] && echo Catch2::Catch2 || echo nlohmann_json::nlohmann_json)
    mkdir -p "$deps/$pkg"
    cat > "$deps/$pkg/${pkg}Config.cmake" <<CM
add_library($target INTERFACE IMPORTED)
set_target_properties($target PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "$deps/include")
CM
    # Debian 12 ships nlohmann_json 3.11.2 and Catch2 2.13 (scripts/deps.sh installs both).
    version=$([ "$pkg" = Catch2 ] && echo 2.13.10 || echo 3.11.2)
    printf 'set(PACKAGE_VERSION "%s")\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n' "$version" > "$deps/$pkg/${pkg}ConfigVersion.cmake"
  done
}
