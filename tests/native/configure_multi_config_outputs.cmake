# A multi-configuration generator (Visual Studio, which install.py falls back to on Windows without Ninja)
# must still put the core library in build/capi and the CLI in build/, where the nodes and the README look,
# not in a Release/ folder beneath. Ninja Multi-Config places outputs the same way Visual Studio does.
#   cmake -DSOURCE=... -DWORK=... -P configure_multi_config_outputs.cmake
file(REMOVE_RECURSE "${WORK}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -S "${SOURCE}" -B "${WORK}" -G "Ninja Multi-Config" -DHEADROOM_TORCH=OFF
          -DHEADROOM_CUDA=OFF -DHEADROOM_TESTS=OFF
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure with Ninja Multi-Config failed (${rc}):\n${err}")
endif()
file(READ "${WORK}/CMakeFiles/impl-Release.ninja" text)  # where the build statements are
foreach(output "capi/libheadroom_core.so" "capi/headroom_core.dll" "capi/libheadroom_core.dylib")
  if(text MATCHES "\nbuild ${output}:")
    set(core_output "${output}")
  endif()
endforeach()
if(NOT core_output)
  string(REGEX MATCH "\nbuild [^:\n]*headroom_core[.](so|dll|dylib):" found "${text}")
  string(STRIP "${found}" found)
  message(FATAL_ERROR "the core library is not built as capi/<library> in the Release configuration; found '${found}'")
endif()
if(NOT text MATCHES "\nbuild headroom:")
  string(REGEX MATCH "\nbuild [^:\n]*headroom(.exe)?:" found "${text}")
  string(STRIP "${found}" found)
  message(FATAL_ERROR "the CLI is not built as ./headroom in the Release configuration; found '${found}'")
endif()
file(REMOVE_RECURSE "${WORK}")
message(STATUS "multi-config outputs: ${core_output} and headroom, no per-configuration folder")
